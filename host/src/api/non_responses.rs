//! `/api/v1/dossiers/:dossier_id/non_responses`: why responses were not
//! filled out, with a reason of the benchmark standard's list
//! (docs/api/non-responses.md). List, get one, and register one for pending
//! responses, which withdraws them.

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono_tz::Tz;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::api::extract::{DossierPath, JsonObject, PathParams};
use crate::api::rules;
use crate::auth::guard::{AccessLogged, PendingAccess};
use crate::domain::ids::{NonResponseId, ResponseId};
use crate::domain::non_response::{self, MAX_REASON_OTHER, MAX_RESPONSES, NonResponse};
use crate::domain::time;
use crate::error::{ApiError, ErrorBody, Errors, json};
use crate::store::{NewNonResponse, RegisterResult};

/// The routes of this resource (endpoint group `non_responses`).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_non_responses, create_non_response))
        .routes(routes!(get_non_response))
}

/// A record that responses were not filled out, with the reason in the
/// format of the SBG benchmark (Stichting Benchmark GGZ).
#[derive(Debug, Serialize, ToSchema)]
pub struct NonResponseView {
    pub id: i64,
    /// When it was registered (ISO 8601, milliseconds, UTC offset).
    #[schema(example = "2026-03-01T09:30:00.000+01:00")]
    pub non_response_at: String,
    /// The responses it is for, ascending. A professional's registration
    /// withdraws them from the response list; the ones the service
    /// registers for expired responses (code `04`) stay listed as expired.
    pub response_ids: Vec<i64>,
    /// The reason's group: `Patiënt is wel benaderd voor de ROM meting,
    /// maar:` (codes 01-05) or `Patiënt is niet benaderd voor de ROM
    /// meting, omdat:` (06-10).
    #[schema(example = "Patiënt is wel benaderd voor de ROM meting, maar:")]
    pub reason_group: &'static str,
    /// The standard's text of the reason, continuing the group's sentence.
    #[schema(example = "Patiënt retourneert meetinstrument niet.")]
    pub reason_option: &'static str,
    /// `01`..`10`, `02a`, `02b`, `06a`, `06b`, `09a` or `09b`.
    #[schema(example = "04")]
    pub reason_code: String,
    /// Free text entered with the reason (required with code `10`); `""`
    /// when none.
    pub reason_other: String,
}

impl NonResponseView {
    /// The wire form of `n`, its time in `zone`.
    pub fn new(n: &NonResponse, zone: Tz) -> NonResponseView {
        let reason = n.reason();
        NonResponseView {
            id: n.id.0,
            non_response_at: time::format(n.at, zone),
            response_ids: n.response_ids.iter().map(|r| r.0).collect(),
            // Every stored code is one of the table's; a code the table
            // lost would still show its code.
            reason_group: reason.map_or("", |r| r.group.text()),
            reason_option: reason.map_or("", |r| r.option),
            reason_code: n.reason_code.clone(),
            reason_other: n.reason_other.clone(),
        }
    }
}

/// `reason_other`: free text with line breaks and tabs; other control
/// characters (NUL above all, which PostgreSQL text cannot hold) are not
/// text.
const REASON_OTHER: rules::Text = rules::Text {
    min_chars: 0,
    max_chars: MAX_REASON_OTHER,
    non_blank: false,
    line_breaks: true,
};

rules::documented! {
    ReasonCode: "A code of the SBG list of non-response reasons." => rules::one_of(non_response::REASONS.iter().map(|r| r.code));
    ReasonOther: "Free text, at most 1000 characters; line breaks and tabs, but no other control characters." => REASON_OTHER.schema();
}

/// The body of `POST .../non_responses`; also accepted wrapped as
/// `{"non_response": {...}}`.
#[derive(Debug, ToSchema)]
pub struct NewNonResponseBody {
    /// Ids of pending responses of this dossier (not completed and in no
    /// non-response yet: scheduled, open, aborted or expired); 1 to 1000
    /// integers.
    #[schema(min_items = 1, max_items = 1000)]
    pub response_ids: Vec<i64>,
    /// A code of the standard's list: `01`..`10`, `02a`, `02b`, `06a`,
    /// `06b`, `09a`, `09b`.
    #[schema(value_type = ReasonCode, example = "10")]
    pub reason_code: String,
    /// Free text, at most 1000 characters; required (not blank) with code
    /// `10` ("Andere reden, namelijk:").
    #[schema(value_type = Option<ReasonOther>)]
    pub reason_other: Option<String>,
}

/// List non-responses
///
/// The non-responses of a dossier ordered by id (oldest first); an unknown
/// dossier has none. Also at `/api/v1/dossier/{dossier_id}/non_responses`
/// and with a `.json` suffix.
#[utoipa::path(
    get,
    path = "/dossiers/{dossier_id}/non_responses",
    tag = "non-responses",
    params(("dossier_id" = rules::DossierId, Path, description = "The EPD's identifier of the patient")),
    responses(
        (status = 200, description = "The non-responses", body = [NonResponseView]),
        (status = 422, description = "`{\"errors\":{\"dossier_id\":[\"invalid\"]}}`: a dossier id over 255 characters or with control characters", body = ErrorBody),
    )
)]
pub async fn list_non_responses(
    State(app): State<AppState>,
    DossierPath(dossier): DossierPath,
) -> Result<Response, ApiError> {
    let zone = app.config().time_zone;
    let listed = app.store().non_responses(&dossier).await?;
    let views: Vec<NonResponseView> = listed
        .iter()
        .map(|n| NonResponseView::new(n, zone))
        .collect();
    Ok(json(StatusCode::OK, &views))
}

/// Get a non-response
///
/// A non-response of another dossier is not found. Also at
/// `/api/v1/dossier/{dossier_id}/non_responses/{id}` and with a `.json`
/// suffix.
#[utoipa::path(
    get,
    path = "/dossiers/{dossier_id}/non_responses/{id}",
    tag = "non-responses",
    params(
        ("dossier_id" = rules::DossierId, Path, description = "The EPD's identifier of the patient"),
        ("id" = rules::PositiveId, Path, description = "Non-response id"),
    ),
    responses(
        (status = 200, body = NonResponseView),
        (status = 404, description = "`{\"errors\":{\"non_response\":[\"not_found\"]}}`: no non-response of this dossier has the id (or it is not a number)", body = ErrorBody),
        (status = 422, description = "`{\"errors\":{\"dossier_id\":[\"invalid\"]}}`: a dossier id over 255 characters or with control characters", body = ErrorBody),
    )
)]
pub async fn get_non_response(
    State(app): State<AppState>,
    DossierPath(dossier): DossierPath,
    params: PathParams,
) -> Result<Response, ApiError> {
    let id = params.id("id", "non_response")?;
    let found = app
        .store()
        .non_response(&dossier, NonResponseId(id))
        .await?
        .ok_or(ApiError::NotFound("non_response"))?;
    Ok(json(
        StatusCode::OK,
        &NonResponseView::new(&found, app.config().time_zone),
    ))
}

/// Register a non-response
///
/// Records why pending responses of the dossier were not filled out (a
/// response that is not completed and in no non-response yet: scheduled,
/// open, aborted or expired) and withdraws them: they leave the response
/// list. Every field error is reported at once. The body may also be
/// wrapped as `{"non_response": {...}}`. A 201 means it is on disk.
#[utoipa::path(
    post,
    path = "/dossiers/{dossier_id}/non_responses",
    tag = "non-responses",
    params(("dossier_id" = rules::DossierId, Path, description = "The EPD's identifier of the patient")),
    request_body(content = NewNonResponseBody, content_type = "application/json"),
    responses(
        (status = 201, description = "Registered", body = NonResponseView),
        (status = 404, description = "`{\"errors\":{\"response_ids\":[\"not_found\"]}}`: an id names no response of this dossier, or a withdrawn one", body = ErrorBody),
        (status = 422, description = "Field errors, together: `response_ids` `blank` (missing or empty) or `invalid` (not an array of integers, over 1000 ids, or a response that is completed or already in a non-response); `reason_code` `blank` or `invalid` (not a code of the list); `reason_other` `blank` (code 10 without it) or `invalid` (not a string, over 1000 characters, control characters other than line breaks and tabs); `dossier_id` `invalid`", body = ErrorBody),
    )
)]
pub async fn create_non_response(
    State(app): State<AppState>,
    access: Option<Extension<PendingAccess>>,
    DossierPath(dossier): DossierPath,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let new = NewNonResponseBody::parse(&body)?;
    let now = app.now();
    // The request's access-log row is stored with the non-response, in one
    // commit; the guard appends it only for answers given before this.
    let access = access.map(|Extension(PendingAccess(entry))| entry);
    let logged = access.is_some();
    let result = app
        .store()
        .register_non_response(dossier, new, now, access)
        .await?;
    let mut response = match result {
        RegisterResult::Registered(n) => json(
            StatusCode::CREATED,
            &NonResponseView::new(&n, app.config().time_zone),
        ),
        RegisterResult::NotFound => ApiError::NotFound("response_ids").into_response(),
        RegisterResult::NotPending => {
            ApiError::Invalid(Errors::one("response_ids", "invalid")).into_response()
        }
    };
    if logged {
        response.extensions_mut().insert(AccessLogged);
    }
    Ok(response)
}

impl NewNonResponseBody {
    /// Reads a POST body, collecting every field error
    /// (docs/api/non-responses.md#register-a-non-response).
    pub fn parse(body: &Map<String, Value>) -> Result<NewNonResponse, ApiError> {
        // Rails clients wrap a resource in its name.
        let body = match body.get("non_response") {
            Some(Value::Object(inner)) => inner,
            _ => body,
        };
        let mut errors = Errors::new();
        let response_ids = match body.get("response_ids") {
            None | Some(Value::Null) => {
                errors.add("response_ids", "blank");
                None
            }
            Some(Value::Array(items)) if items.is_empty() => {
                errors.add("response_ids", "blank");
                None
            }
            Some(Value::Array(items)) if items.len() <= MAX_RESPONSES => {
                let ids: Option<Vec<ResponseId>> =
                    items.iter().map(|v| v.as_i64().map(ResponseId)).collect();
                if ids.is_none() {
                    errors.add("response_ids", "invalid");
                }
                ids
            }
            Some(_) => {
                errors.add("response_ids", "invalid");
                None
            }
        };
        let reason = match body.get("reason_code") {
            None | Some(Value::Null) => {
                errors.add("reason_code", "blank");
                None
            }
            Some(Value::String(code)) if code.trim().is_empty() => {
                errors.add("reason_code", "blank");
                None
            }
            Some(Value::String(code)) => {
                let found = non_response::reason(code);
                if found.is_none() {
                    errors.add("reason_code", "invalid");
                }
                found
            }
            Some(_) => {
                errors.add("reason_code", "invalid");
                None
            }
        };
        let reason_other = match body.get("reason_other") {
            None | Some(Value::Null) => Some(String::new()),
            Some(Value::String(text)) => {
                if REASON_OTHER.check(text).is_ok() {
                    Some(text.trim().to_owned())
                } else {
                    errors.add("reason_other", "invalid");
                    None
                }
            }
            Some(_) => {
                errors.add("reason_other", "invalid");
                None
            }
        };
        if let (Some(reason), Some(other)) = (reason, &reason_other)
            && reason.needs_other()
            && other.is_empty()
        {
            errors.add("reason_other", "blank");
        }
        errors.clone().into_result()?;
        match (response_ids, reason, reason_other) {
            (Some(response_ids), Some(reason), Some(reason_other)) => Ok(NewNonResponse {
                reason_code: reason.code.to_owned(),
                reason_other,
                response_ids,
            }),
            _ => Err(ApiError::Invalid(errors)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(body: Value) -> Result<NewNonResponse, Value> {
        let map = body.as_object().cloned().unwrap_or_default();
        NewNonResponseBody::parse(&map).map_err(|e| e.errors().body())
    }

    #[test]
    fn a_body_is_read_plain_or_wrapped() {
        let expected = NewNonResponse {
            reason_code: "10".to_owned(),
            reason_other: "verhuisd".to_owned(),
            response_ids: vec![ResponseId(3), ResponseId(1)],
        };
        let body =
            json!({"response_ids": [3, 1], "reason_code": "10", "reason_other": " verhuisd "});
        assert_eq!(parsed(body.clone()), Ok(expected.clone()));
        assert_eq!(parsed(json!({"non_response": body})), Ok(expected));
        let no_text = parsed(json!({"response_ids": [1], "reason_code": "04"}));
        assert_eq!(no_text.map(|n| n.reason_other), Ok(String::new()));
    }

    #[test]
    fn every_field_error_is_reported_together() {
        assert_eq!(
            parsed(json!({})),
            Err(json!({"errors": {"response_ids": ["blank"], "reason_code": ["blank"]}}))
        );
        assert_eq!(
            parsed(json!({"response_ids": [], "reason_code": " ", "reason_other": 5})),
            Err(
                json!({"errors": {"response_ids": ["blank"], "reason_code": ["blank"], "reason_other": ["invalid"]}})
            )
        );
        assert_eq!(
            parsed(json!({"response_ids": [1, "2"], "reason_code": "11"})),
            Err(json!({"errors": {"response_ids": ["invalid"], "reason_code": ["invalid"]}}))
        );
        assert_eq!(
            parsed(json!({"response_ids": 1, "reason_code": 4})),
            Err(json!({"errors": {"response_ids": ["invalid"], "reason_code": ["invalid"]}}))
        );
        assert_eq!(
            parsed(json!({"response_ids": [1.5, 18446744073709551615_u64], "reason_code": "10"})),
            Err(json!({"errors": {"response_ids": ["invalid"], "reason_other": ["blank"]}}))
        );
    }

    #[test]
    fn reason_other_is_bounded_text() {
        let with = |other: Value| {
            parsed(json!({"response_ids": [1], "reason_code": "10", "reason_other": other}))
        };
        let invalid = Err(json!({"errors": {"reason_other": ["invalid"]}}));
        let blank = Err(json!({"errors": {"reason_other": ["blank"]}}));
        assert_eq!(with(json!("  \n ")), blank);
        assert_eq!(with(Value::Null), blank);
        assert_eq!(with(json!("x".repeat(1001))), invalid);
        assert_eq!(with(json!("a\u{0}b")), invalid);
        assert!(with(json!("é".repeat(1000))).is_ok());
        assert!(with(json!("regel 1\nregel 2\tmet tab")).is_ok());
    }

    #[test]
    fn too_many_ids_are_invalid() {
        let ids: Vec<i64> = (1..=1001).collect();
        assert_eq!(
            parsed(json!({"response_ids": ids, "reason_code": "04"})),
            Err(json!({"errors": {"response_ids": ["invalid"]}}))
        );
    }
}
