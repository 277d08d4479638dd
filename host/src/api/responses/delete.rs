//! DELETE a response uploaded through the API, by its external id.

use axum::Extension;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::api::extract::{DossierPath, PathParams};
use crate::api::rules;
use crate::auth::guard::PendingAccess;
use crate::error::{ApiError, ErrorBody};

/// Delete a response
///
/// Only by external id, so only responses uploaded through the API can be
/// deleted. Its alarms are resolved with reason `response_deleted`
/// (docs/api/alarms.md).
#[utoipa::path(
    delete,
    path = "/dossiers/{dossier_id}/responses/{external_id}",
    tag = "responses",
    params(
        ("dossier_id" = rules::DossierId, Path, description = "The EPD's identifier of the patient"),
        ("external_id" = rules::Id, Path, description = "The external id given on POST"),
    ),
    responses(
        (status = 204, description = "Deleted; no body"),
        (status = 404, description = "`{\"errors\":{\"external_id\":[\"not_found\"]}}`", body = ErrorBody),
        (status = 422, description = "`{\"errors\":{\"dossier_id\":[\"invalid\"]}}`: a dossier id over 255 characters or with control characters", body = ErrorBody),
    )
)]
pub async fn delete_response(
    State(app): State<AppState>,
    DossierPath(dossier): DossierPath,
    params: PathParams,
    access: Option<Extension<PendingAccess>>,
) -> Result<Response, ApiError> {
    let external_id = params
        .get("external_id")
        .filter(|s| rules::ID.check(s).is_ok())
        .ok_or(ApiError::NotFound("external_id"))?
        .to_owned();
    let by = access.map(|Extension(PendingAccess(entry))| entry);
    if app
        .store()
        .delete_response(dossier, external_id, app.now(), by)
        .await?
    {
        // No body, but the same cache rule as every answer
        // (docs/api/conventions.md#answers).
        Ok((
            StatusCode::NO_CONTENT,
            [(header::CACHE_CONTROL, "no-store")],
        )
            .into_response())
    } else {
        Err(ApiError::NotFound("external_id"))
    }
}
