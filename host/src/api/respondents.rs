//! `/api/v1/dossier/:epd_id/respondents`: who fills out a dossier's
//! questionnaires. The professional respondent is never listed.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::api::extract::{DossierPath, PathParams};
use crate::domain::ids::RespondentId;
use crate::domain::respondent::Respondent;
use crate::error::{ApiError, ErrorBody, json};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_respondents))
        .routes(routes!(get_respondent))
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
    params(("dossier_id" = String, Path, description = "The EPD's identifier of the patient")),
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
        ("dossier_id" = String, Path, description = "The EPD's identifier of the patient"),
        ("id" = i64, Path, description = "Respondent id"),
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
