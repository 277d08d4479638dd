//! POST a completed response. Idempotent: a retry with the same external id,
//! questionnaire and answers answers 200 with what was stored.

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::body::NewResponseBody;
use super::view::ResponseView;
use crate::AppState;
use crate::api::extract::{DossierPath, JsonObject};
use crate::auth::guard::{AccessLogged, PendingAccess};
use crate::error::{ApiError, ErrorBody, Errors, json};
use crate::store::CreateResult;

/// Store a response
///
/// Stores a completed response and makes the dossier (with its patient) on
/// first write. `answer_data` maps question keys (`v_` form) to option keys;
/// null is unanswered. `respondent` is `patient` (default) or `profess`
/// (`respondent_type` is accepted as an alias). `started_at` and
/// `filled_out_at` are Unix seconds, at least 946598400 (1999-12-31), at most
/// an hour ahead of the service's clock; `filled_out_at` defaults to now.
/// External ids may be strings or integers, 1-255 characters. `flags` and
/// `textvars` (optional) record the variant of the questionnaire that was
/// filled out: a question a flag hides is not scored.
/// A 201 means the response is on disk.
#[utoipa::path(
    post,
    path = "/dossiers/{dossier_id}/responses",
    tag = "responses",
    params(("dossier_id" = String, Path, description = "The EPD's identifier of the patient")),
    request_body(content = NewResponseBody, content_type = "application/json"),
    responses(
        (status = 201, description = "Stored", body = ResponseView),
        (status = 200, description = "A retry: same external_id, questionnaire_key and answer_data as a stored response, which is returned unchanged", body = ResponseView),
        (status = 404, description = "`{\"errors\":{\"questionnaire_key\":[\"not_found\"]}}`", body = ErrorBody),
        (status = 422, description = "Field errors: `blank`, `invalid`, `too_early`, `taken` (external_id used for other data), under `answer_data` per question `unknown_question` / `invalid_option`, or under `base` `flag_does_not_exist` / `flag_value_invalid` / `textvar_does_not_exist` / `invalid` for flags and textvars", body = ErrorBody),
    )
)]
pub async fn create_response(
    State(app): State<AppState>,
    access: Option<Extension<PendingAccess>>,
    DossierPath(dossier): DossierPath,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let now = app.now();
    let mut new = NewResponseBody::parse(&body, &app.catalog(), now)?;
    app.score(&mut new.completion, new.professional).await;
    // The request's access-log row is stored with the response, in one
    // commit; the guard appends it only for answers given before this.
    let access = access.map(|Extension(PendingAccess(entry))| entry);
    let logged = access.is_some();
    let created = app
        .store()
        .create_response(
            dossier,
            new.external_id,
            new.professional,
            new.entered_by,
            new.completion,
            now,
            access,
        )
        .await?;
    let status = StatusCode::from_u16(created.status()).unwrap_or(StatusCode::OK);
    let zone = app.config().time_zone;
    let mut response = match created {
        CreateResult::Created(r) | CreateResult::Retry(r) => {
            json(status, &ResponseView::new(&r, zone, now, app.links()))
        }
        CreateResult::Taken => {
            ApiError::Invalid(Errors::one("external_id", "taken")).into_response()
        }
    };
    if logged {
        response.extensions_mut().insert(AccessLogged);
    }
    Ok(response)
}
