//! `POST /api/v1/dossiers/:dossier_id/fill_out_sessions`: hands the
//! dossier's patient to the hosted fill-out pages with a signed one-time
//! link (docs/api/fill-out.md#start-a-fill-out-session). The error shapes
//! are the original contract's, odd ones included: bare-string `missing` for
//! neither `questionnaire_keys` nor `response_ids`, and `return_url` for a
//! missing `return_to` (docs/api/fill-out.md#error-shapes).

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::api::extract::{DossierPath, JsonObject};
use crate::api::rules;
use crate::auth::guard::Caller;
use crate::auth::{origin, secret};
use crate::domain::catalog::Catalog;
use crate::domain::ids::{QuestionnaireId, ResponseId};
use crate::domain::text::is_language_code;
use crate::error::{ApiError, ErrorBody, Errors, json};
use crate::store::{NewFillOutSession, StartSessionResult};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(create_fill_out_session))
}

/// Questionnaires, or responses, one session may hold.
const MAX_ITEMS: usize = 50;

/// The answer to starting a fill-out session.
#[derive(Debug, Serialize, ToSchema)]
pub struct FillOutSessionView {
    /// Send the respondent here: `{public_url}/fill_out/session/login` with
    /// `fill_out_session_key`, `hmac`, `nonce` and `timestamp`. It works
    /// once, within the configured window (default 10 minutes).
    pub fill_out_url: String,
}

/// Start a fill-out session
///
/// `questionnaire_keys` (blank questionnaires, prepared when the link is
/// used) and/or `response_ids` (aborted responses of this dossier to
/// resume, with the answers given so far), `return_to` (required), and
/// optionally `progress_url`, `stylesheet` and `language` (ISO 639-1: the
/// pages' language, falling back to `Accept-Language`, then each
/// definition's own). The three URLs must be https
/// (http only for loopback hosts), without user info or backslashes, of an
/// origin allowed for the token or for every token (`--allowed-origins`);
/// otherwise 422 `not_allowed` on that field. The respondent visits
/// `progress_url` before the first questionnaire and between
/// questionnaires, with `continue_url`, `interrupt_url`,
/// `completed_questionnaire_keys[]` and `pending_questionnaire_keys[]`;
/// after the last, or on interrupting, `return_to`. Interrupting marks the
/// page being filled out, and what is left, aborted; the answers given are
/// kept for a session that resumes them. The dossier is made if new.
#[utoipa::path(
    post,
    path = "/dossiers/{dossier_id}/fill_out_sessions",
    tag = "fill_out_sessions",
    params(("dossier_id" = rules::DossierId, Path, description = "The EPD's identifier of the patient")),
    request_body(content = NewFillOutSessionBody, content_type = "application/json"),
    responses(
        (status = 200, description = "Started", body = FillOutSessionView),
        (status = 404, description = "`{\"errors\":{\"questionnaire_keys\":[\"not_found\"]}}` for an unknown questionnaire; `{\"errors\":{\"response_ids\":[\"not_found\"]}}` for a response that is not an aborted response of this dossier that can still be filled out", body = ErrorBody),
        (status = 422, description = "Field errors, together in one body: neither keys nor ids `{\"errors\":{\"questionnaire_keys\":\"missing\",\"response_ids\":\"missing\"}}` (bare strings, kept from the original contract); no `return_to` `{\"errors\":{\"return_url\":[\"missing\"]}}`; `return_to`, `progress_url` or `stylesheet` `not_allowed` (not an https URL of an allowed origin) or `invalid` (not a string); `language` `invalid` (not two lower-case letters); `questionnaire_keys` or `response_ids` `invalid` (not a list of strings or of positive integers, more than 50); `dossier_id` `invalid`", body = ErrorBody),
    )
)]
pub async fn create_fill_out_session(
    State(app): State<AppState>,
    Extension(caller): Extension<Caller>,
    DossierPath(dossier): DossierPath,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let allowed = |o: &String| {
        origin::allowed(
            o,
            &caller.token.allowed_origins,
            &app.config().allowed_origins,
        )
    };
    let Session {
        questionnaire_ids,
        resume_ids,
        return_to,
        progress_url,
        stylesheet,
        language,
    } = NewFillOutSessionBody::parse(&body, &app.catalog(), allowed)?;
    let now = app.now();
    let link_key = secret::generate();
    let nonce = nonce();
    let started = app
        .store()
        .start_fill_out_session(NewFillOutSession {
            epd_id: dossier,
            questionnaire_ids,
            resume_ids,
            return_to,
            progress_url,
            stylesheet,
            language,
            link_key: link_key.clone(),
            nonce: nonce.clone(),
            now,
        })
        .await?;
    match started {
        StartSessionResult::Made => {
            let fill_out_url = app.links().login_url(&link_key, &nonce, now.timestamp());
            Ok(json(StatusCode::OK, &FillOutSessionView { fill_out_url }))
        }
        StartSessionResult::NotResumable => Err(ApiError::NotFound("response_ids")),
    }
}

/// The body of `POST .../fill_out_sessions`.
#[derive(Debug, ToSchema)]
pub struct NewFillOutSessionBody {
    /// Keys of questionnaires to fill out blank (at most 50); this or
    /// `response_ids` (or both: the resumed ones come first).
    pub questionnaire_keys: Option<Vec<String>>,
    /// Ids of aborted responses of this dossier to resume (at most 50).
    pub response_ids: Option<Vec<i64>>,
    /// Where the respondent goes after the last questionnaire, or on
    /// interrupting. Required.
    pub return_to: String,
    /// The caller's progress page, visited before the first questionnaire
    /// and between questionnaires.
    pub progress_url: Option<String>,
    /// A stylesheet loaded after the built-in one.
    pub stylesheet: Option<String>,
    /// The language (ISO 639-1, e.g. `nl`) of the pages: each
    /// questionnaire's translation in it, when it has one and the pages
    /// speak it; else the browser's `Accept-Language`, then the
    /// definition's language.
    pub language: Option<String>,
}

/// A session asked for, checked against the catalog.
#[derive(Debug)]
struct Session {
    questionnaire_ids: Vec<QuestionnaireId>,
    /// Without repeats, in the order given.
    resume_ids: Vec<ResponseId>,
    return_to: String,
    progress_url: Option<String>,
    stylesheet: Option<String>,
    language: Option<String>,
}

impl NewFillOutSessionBody {
    /// Reads a POST body: every field error at once (422), then unknown
    /// questionnaires (404); `allowed` says whether a URL's origin may be
    /// used.
    fn parse(
        body: &Map<String, Value>,
        catalog: &Catalog,
        allowed: impl Fn(&String) -> bool,
    ) -> Result<Session, ApiError> {
        let mut errors = Errors::new();
        let keys = list(body, "questionnaire_keys", &mut errors, |v| {
            v.as_str().map(str::to_owned)
        });
        let ids = list(body, "response_ids", &mut errors, |v| {
            let id = match v {
                Value::Number(n) => n.as_i64(),
                Value::String(s) => s.parse().ok(),
                _ => None,
            };
            id.filter(|id| *id > 0).map(ResponseId)
        });
        if matches!((&keys, &ids), (Some(k), Some(i)) if k.is_empty() && i.is_empty()) {
            errors.bare("questionnaire_keys", "missing");
            errors.bare("response_ids", "missing");
        }
        let url = |field: &str, errors: &mut Errors| match body.get(field) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.trim().is_empty() => None,
            Some(Value::String(s)) => match origin::absolute_url(s) {
                Some((url, origin)) if allowed(&origin) => Some(String::from(url)),
                _ => {
                    errors.add(field, "not_allowed");
                    None
                }
            },
            Some(_) => {
                errors.add(field, "invalid");
                None
            }
        };
        let return_to = url("return_to", &mut errors);
        if return_to.is_none() && !errors.has("return_to") {
            errors.add("return_url", "missing");
        }
        let progress_url = url("progress_url", &mut errors);
        let stylesheet = url("stylesheet", &mut errors);
        let language = match body.get("language") {
            None | Some(Value::Null) => None,
            Some(Value::String(code)) if is_language_code(code) => Some(code.clone()),
            Some(_) => {
                errors.add("language", "invalid");
                None
            }
        };
        errors.into_result()?;
        let (Some(keys), Some(mut ids), Some(return_to)) = (keys, ids, return_to) else {
            return Err(ApiError::Invalid(Errors::one("return_url", "missing")));
        };
        let questionnaire_ids = keys
            .iter()
            .map(|k| catalog.questionnaire(k).map(|q| q.id))
            .collect::<Option<Vec<_>>>()
            .ok_or(ApiError::NotFound("questionnaire_keys"))?;
        let mut seen = std::collections::HashSet::new();
        ids.retain(|id| seen.insert(*id));
        Ok(Session {
            questionnaire_ids,
            resume_ids: ids,
            return_to,
            progress_url,
            stylesheet,
            language,
        })
    }
}

/// A list field: None with `invalid` when it is not a list of what `item`
/// reads (or too long), empty when absent or null.
fn list<T>(
    body: &Map<String, Value>,
    field: &str,
    errors: &mut Errors,
    item: impl Fn(&Value) -> Option<T>,
) -> Option<Vec<T>> {
    match body.get(field) {
        None | Some(Value::Null) => Some(Vec::new()),
        Some(Value::Array(values)) if values.len() <= MAX_ITEMS => {
            let items: Option<Vec<T>> = values.iter().map(item).collect();
            if items.is_none() {
                errors.add(field, "invalid");
            }
            items
        }
        Some(_) => {
            errors.add(field, "invalid");
            None
        }
    }
}

/// A single-use nonce: 128 random bits, base64url.
fn nonce() -> String {
    let mut bytes = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}
