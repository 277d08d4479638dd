//! GET the responses of a dossier, with the original contract's six filters
//! plus `respondent_id` (docs/api/responses.md#list-responses).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use super::view::ResponseView;
use crate::AppState;
use crate::api::extract::{DossierPath, QueryParams};
use crate::domain::response::Status;
use crate::domain::time::parse_filter;
use crate::error::{ApiError, ErrorBody, Errors, json};
use crate::store::ResponseFilter;

/// List responses
///
/// The responses of a dossier ordered by id; an unknown dossier has none.
/// Array parameters take `k[]=a&k[]=b` or `k=a&k=b`. Times take Unix seconds
/// or ISO 8601 (a time without offset is read in the service's time zone).
/// Also at `/api/v1/dossier/{dossier_id}/responses` and with a `.json` suffix.
#[utoipa::path(
    get,
    path = "/dossiers/{dossier_id}/responses",
    tag = "responses",
    params(
        ("dossier_id" = String, Path, description = "The EPD's identifier of the patient (1-255 characters)"),
        ("questionnaire_keys[]" = Option<Vec<String>>, Query, description = "Only responses on these questionnaires"),
        ("completed_before" = Option<String>, Query, description = "Only responses completed before this time (Unix seconds or ISO 8601)"),
        ("completed_after" = Option<String>, Query, description = "Only responses completed after this time"),
        ("respondent_type" = Option<String>, Query, description = "Only responses whose completer_type equals this"),
        ("status" = Option<String>, Query, description = "One of completed, aborted, open, scheduled, expired; anything else is 422 invalid"),
        ("protocol_subscription_id" = Option<i64>, Query, description = "Only responses of this subscription"),
        ("respondent_id" = Option<i64>, Query, description = "Only responses of this respondent"),
    ),
    responses(
        (status = 200, description = "The responses", body = [ResponseView]),
        (status = 422, description = "A filter is not valid, e.g. `{\"errors\":{\"status\":[\"invalid\"]}}`", body = ErrorBody),
    )
)]
pub async fn list_responses(
    State(app): State<AppState>,
    DossierPath(dossier): DossierPath,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let zone = app.config().time_zone;
    let mut errors = Errors::new();
    let mut time = |key: &str| {
        let value = query.single(key)?;
        let parsed = parse_filter(value, zone);
        if parsed.is_none() {
            errors.add(key, "invalid");
        }
        parsed
    };
    let completed_before = time("completed_before");
    let completed_after = time("completed_after");
    let mut integer = |key: &str| {
        let value = query.single(key)?;
        let parsed = value.trim().parse::<i64>().ok();
        if parsed.is_none() {
            errors.add(key, "invalid");
        }
        parsed
    };
    let protocol_subscription_id = integer("protocol_subscription_id");
    let respondent_id = integer("respondent_id");
    let status = query.single("status").and_then(|s| {
        let parsed = Status::parse(s);
        if parsed.is_none() {
            errors.add("status", "invalid");
        }
        parsed
    });
    // Text filters go to the database as parameters; control characters
    // (NUL above all, which PostgreSQL text cannot hold) name nothing valid.
    let questionnaire_keys = query.list("questionnaire_keys");
    if questionnaire_keys
        .iter()
        .flatten()
        .any(|k| k.chars().any(char::is_control))
    {
        errors.add("questionnaire_keys", "invalid");
    }
    let respondent_type = query.single("respondent_type");
    if respondent_type.is_some_and(|t| t.chars().any(char::is_control)) {
        errors.add("respondent_type", "invalid");
    }
    errors.into_result()?;
    let filter = ResponseFilter {
        questionnaire_keys,
        completed_before,
        completed_after,
        completer_type: respondent_type.map(str::to_owned),
        status,
        protocol_subscription_id,
        respondent_id,
    };
    let now = app.now();
    let responses = app.store().list_responses(&dossier, &filter, now).await?;
    let views: Vec<ResponseView> = responses
        .iter()
        .map(|r| ResponseView::new(r, zone, now, app.links()))
        .collect();
    Ok(json(StatusCode::OK, &views))
}
