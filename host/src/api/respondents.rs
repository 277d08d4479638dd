//! `/api/v1/dossier/:epd_id/respondents`: who fills out a dossier's
//! questionnaires, and revoking a respondent's links. The professional
//! respondent is never listed.

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::api::extract::{DossierPath, PathParams};
use crate::api::rules;
use crate::auth::guard::{AccessLogged, PendingAccess};
use crate::domain::ids::RespondentId;
use crate::domain::respondent::Respondent;
use crate::error::{ApiError, ErrorBody, json};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_respondents))
        .routes(routes!(get_respondent))
        .routes(routes!(revoke_links))
}

/// A respondent.
#[derive(Debug, Serialize, ToSchema)]
pub struct RespondentView {
    pub id: i64,
    /// Non-identifying name.
    pub label: String,
    /// `patient`, `parent`, `second_parent`, `teacher` or `caregiver`.
    pub respondent_type: String,
}

impl From<&Respondent> for RespondentView {
    fn from(r: &Respondent) -> Self {
        RespondentView {
            id: r.id.0,
            label: r.label.clone(),
            respondent_type: r.respondent_type.clone(),
        }
    }
}

/// List respondents
///
/// The respondents of a dossier by id; an unknown dossier has none. Also at
/// `/api/v1/dossier/{dossier_id}/respondents`.
#[utoipa::path(
    get,
    path = "/dossiers/{dossier_id}/respondents",
    tag = "respondents",
    params(("dossier_id" = rules::DossierId, Path, description = "The EPD's identifier of the patient")),
    responses(
        (status = 200, description = "The respondents", body = [RespondentView]),
        (status = 422, description = "`{\"errors\":{\"dossier_id\":[\"invalid\"]}}`: a dossier id over 255 characters or with control characters", body = ErrorBody),
    )
)]
pub async fn list_respondents(
    State(app): State<AppState>,
    DossierPath(dossier): DossierPath,
) -> Result<Response, ApiError> {
    let respondents = app.store().respondents(&dossier).await?;
    Ok(json(
        StatusCode::OK,
        &respondents
            .iter()
            .map(RespondentView::from)
            .collect::<Vec<_>>(),
    ))
}

/// Get a respondent
///
/// A respondent of another dossier is not found.
#[utoipa::path(
    get,
    path = "/dossiers/{dossier_id}/respondents/{id}",
    tag = "respondents",
    params(
        ("dossier_id" = rules::DossierId, Path, description = "The EPD's identifier of the patient"),
        ("id" = rules::PositiveId, Path, description = "Respondent id"),
    ),
    responses(
        (status = 200, body = RespondentView),
        (status = 404, description = "`{\"errors\":{\"respondent\":[\"not_found\"]}}`", body = ErrorBody),
        (status = 422, description = "`{\"errors\":{\"dossier_id\":[\"invalid\"]}}`: a dossier id over 255 characters or with control characters", body = ErrorBody),
    )
)]
pub async fn get_respondent(
    State(app): State<AppState>,
    DossierPath(dossier): DossierPath,
    params: PathParams,
) -> Result<Response, ApiError> {
    let id = params.id("id", "respondent")?;
    let respondent = app
        .store()
        .respondent(&dossier, RespondentId(id))
        .await?
        .ok_or(ApiError::NotFound("respondent"))?;
    Ok(json(StatusCode::OK, &RespondentView::from(&respondent)))
}

/// Revoke a respondent's links
///
/// Every `completing_url` handed out for the respondent so far stops
/// working (the respondent's link generation moves on; responses read
/// from now on carry a new one), and their fill-out sessions end: ones
/// logged in, and ones whose one-time `fill_out_url` was not used yet.
/// Their responses are untouched. For a link that may have reached the
/// wrong person.
#[utoipa::path(
    post,
    path = "/dossiers/{dossier_id}/respondents/{id}/revoke_links",
    tag = "respondents",
    params(
        ("dossier_id" = rules::DossierId, Path, description = "The EPD's identifier of the patient"),
        ("id" = rules::PositiveId, Path, description = "Respondent id"),
    ),
    responses(
        (status = 204, description = "Revoked"),
        (status = 404, description = "`{\"errors\":{\"respondent\":[\"not_found\"]}}`: no such respondent in this dossier", body = ErrorBody),
        (status = 422, description = "`{\"errors\":{\"dossier_id\":[\"invalid\"]}}`: a dossier id over 255 characters or with control characters", body = ErrorBody),
    )
)]
pub async fn revoke_links(
    State(app): State<AppState>,
    access: Option<Extension<PendingAccess>>,
    DossierPath(dossier): DossierPath,
    params: PathParams,
) -> Result<Response, ApiError> {
    let id = params.id("id", "respondent")?;
    // The access-log row is stored with the revocation, in one commit.
    let access = access.map(|Extension(PendingAccess(entry))| entry);
    let logged = access.is_some();
    let revoked = app
        .store()
        .revoke_respondent_links(&dossier, RespondentId(id), app.now(), access)
        .await?;
    let mut response = if revoked {
        StatusCode::NO_CONTENT.into_response()
    } else {
        ApiError::NotFound("respondent").into_response()
    };
    if logged {
        response.extensions_mut().insert(AccessLogged);
    }
    Ok(response)
}
