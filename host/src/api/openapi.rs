//! The OpenAPI 3.1 document, generated from the handlers' annotations and
//! the wire types, served at `/api/v1/openapi.json`.

use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use utoipa::{OpenApi, ToSchema};

use crate::error::json;

/// Every error answer: `{"errors": {...}}`. Field names (or `base`) map to
/// arrays of codes, to a nested object of the same kind (`answer_data`,
/// `filters`), or, for fill-out sessions only, to a bare string. Codes in
/// use: blank, invalid, missing, in_past, too_early, taken, not_found,
/// unknown_question, invalid_option, already_completed, malformed_json,
/// too_large, unsupported_media_type, method_not_allowed, internal_error,
/// unavailable.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"errors": {"external_id": ["taken"]}}))]
pub struct ErrorBody {
    #[schema(value_type = Object)]
    pub errors: serde_json::Value,
}

/// The body of `POST .../responses`.
#[derive(Debug, Serialize, ToSchema)]
pub struct NewResponseBody {
    /// Key of the questionnaire.
    pub questionnaire_key: String,
    /// Id managed by the external application; unique per dossier; string
    /// or integer, 1-255 characters.
    pub external_id: String,
    /// Question key (`v_` form) to option key; null is unanswered.
    #[schema(value_type = Object)]
    pub answer_data: serde_json::Value,
    /// Unix seconds, at least 946598400.
    pub started_at: Option<i64>,
    /// Unix seconds, at least 946598400; default: now.
    pub filled_out_at: Option<i64>,
    /// `patient` (default) or `profess`. Alias: `respondent_type`.
    pub respondent: Option<String>,
    /// EPD user id of the professional who entered the response; blank
    /// means the respondent did.
    pub entered_by: Option<String>,
}

/// The body of `PUT .../responses/{external_id}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CompleteResponseBody {
    pub questionnaire_key: String,
    #[schema(value_type = Object)]
    pub answer_data: serde_json::Value,
    pub started_at: Option<i64>,
    pub filled_out_at: Option<i64>,
}

#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "Outcomes: routine outcome monitoring API",
        description = "Questionnaire responses, outcomes, protocols and respondents of patient dossiers.\n\n\
Conventions: JSON bodies (`application/json`, charset optional); every GET path also answers with a `.json` \
suffix; every path with or without a trailing slash; dossier paths under both `/api/v1/dossiers/{id}` and \
`/api/v1/dossier/{id}`. Array query parameters as `k[]=a&k[]=b` or `k=a&k=b`; hashes as `f[k][]=x`. \
Output times are ISO 8601 with milliseconds and a numeric UTC offset in the service's time zone; input times \
in bodies are Unix seconds. Lists are ordered by id. Bodies above the configured limit (default 1 MiB) get 413. \
A path that names nothing gets 404 `{\"errors\":{\"base\":[\"not_found\"]}}`; a blank dossier id \
404 `{\"errors\":{\"dossier_id\":[\"not_found\"]}}`; a dossier id over 255 characters 422 `invalid`.",
        license(name = "EUPL-1.2"),
    ),
    paths(
        crate::api::responses::list_responses,
        crate::api::responses::create_response,
        crate::api::responses::update_response,
        crate::api::responses::delete_response,
        crate::api::respondents::list_respondents,
        crate::api::respondents::get_respondent,
        crate::api::protocols::list_protocols,
        crate::api::protocols::get_protocol,
        crate::api::protocols::get_measurement,
        crate::api::questionnaires::list_questionnaires,
        crate::api::questionnaires::get_questionnaire,
        crate::api::health::health,
        serve,
    ),
    tags(
        (name = "responses", description = "Questionnaire completions"),
        (name = "respondents", description = "Who fills out a dossier's questionnaires"),
        (name = "protocols", description = "Questionnaires grouped into measurements"),
        (name = "questionnaires", description = "Questionnaire definitions"),
        (name = "operations", description = "Health and this document"),
    )
)]
pub struct ApiDoc;

/// The OpenAPI document
///
/// This document, OpenAPI 3.1.
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "operations", responses((status = 200, description = "OpenAPI 3.1 document")))]
pub async fn serve() -> Response {
    json(StatusCode::OK, &ApiDoc::openapi())
}
