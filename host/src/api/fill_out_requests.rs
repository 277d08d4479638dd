//! `/api/v1/dossiers/:dossier_id/fill_out_requests`: asking a dossier's
//! patient to fill out questionnaires in a window, with callbacks to the
//! EPD when it opens, at reminders and when it expires.

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::api::extract::{DossierPath, JsonObject, PathParams};
use crate::api::fields::Fields;
use crate::api::rules;
use crate::auth::destination::Destinations;
use crate::auth::guard::Caller;
use crate::auth::origin;
use crate::domain::catalog::Catalog;
use crate::domain::ids::RespondentId;
use crate::error::{ApiError, ErrorBody, Errors, json};
use crate::store::{FillOutRequestResult, NewFillOutRequest};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_fill_out_request))
        .routes(routes!(withdraw_fill_out_request))
}

/// How far ahead a window may open or close.
const LATEST: Duration = Duration::days(366 * 2);

/// Questionnaires one request may hold.
const MAX_QUESTIONNAIRES: usize = 50;

/// Reminders one request may hold.
const MAX_REMINDERS: usize = 20;

/// A fill-out request.
#[derive(Debug, Serialize, ToSchema)]
pub struct FillOutRequestView {
    pub id: i64,
    /// Who is asked: `patient`.
    pub respondent_type: &'static str,
    /// The link that opens the hosted fill-out pages for the respondent's
    /// open responses (those of this request once its window opens); null
    /// when the request is withdrawn.
    pub completing_url: Option<String>,
}

impl FillOutRequestView {
    /// A request of the dossier's patient (the only respondent asked yet),
    /// with their `completing_url`, if it still has a use.
    fn patient(id: i64, completing_url: Option<String>) -> Self {
        FillOutRequestView {
            id,
            respondent_type: "patient",
            completing_url,
        }
    }
}

/// Ask for questionnaires to be filled out
///
/// Body `{"fill_out_request": {...}}` (the fields also work unwrapped):
/// `questionnaire_keys` (required, at least one), `respondent_id` or
/// `respondent_type` (`patient`, the default), `open_from` (Unix seconds,
/// default now), `open_till` (Unix seconds, required, in the future and
/// after `open_from`), `reminders` (seconds after `open_from`), and
/// `callback_url`: https (http only for loopback hosts), of an origin the
/// token may use, and not a loopback, private or link-local address unless
/// the operator allows its network. The service then POSTs JSON
/// `{dossier_id, event, fill_out_request_id, url, event_id}` to it with
/// event `opened` at `open_from`, `reminder` at each reminder inside the
/// window and `expired` at `open_till` (`url`: the respondent's
/// `completing_url`, null with `expired`), signed as Standard Webhooks
/// (`webhook-id`, `webhook-timestamp`, `webhook-signature`, with the
/// token's webhook secret); a failed call (no 2xx within 10 s, a redirect,
/// or a host that resolves only to refused addresses) is retried after 1,
/// 5 and 30 minutes, then 2 and 6 hours, then given up. One invitation
/// holds a pending response per questionnaire.
#[utoipa::path(
    post,
    path = "/dossiers/{dossier_id}/fill_out_requests",
    tag = "fill_out_requests",
    params(("dossier_id" = rules::DossierId, Path, description = "The EPD's identifier of the patient")),
    request_body(content = NewFillOutRequestBody, content_type = "application/json"),
    responses(
        (status = 200, description = "Made", body = FillOutRequestView),
        (status = 404, description = "`{\"errors\":{\"respondent_id\":[\"not_found\"]}}`: not the dossier's patient", body = ErrorBody),
        (status = 422, description = "Field errors, e.g. `{\"errors\":{\"open_till\":[\"in_past\"],\"questionnaire_keys\":[\"blank\"]}}`: `questionnaire_keys` `blank` or `invalid` (not strings, an unknown key, more than 50); `open_till` `blank`, `invalid` (not after `open_from`, too far ahead) or `in_past`; `open_from` `invalid` or `too_early`; `reminders` `invalid`; `respondent_type` `invalid`; `respondent_id` `invalid`; `language` `invalid` (not two lower-case letters); `callback_url` `invalid` (not an https URL) or `not_allowed` (its origin is not the token's, or it names a loopback, private, link-local or other non-public address); `dossier_id` `invalid`", body = ErrorBody),
    )
)]
pub async fn create_fill_out_request(
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
    let destinations = Destinations::new(app.config().callback_allowed_networks.clone());
    let new = NewFillOutRequestBody::parse(
        &body,
        dossier,
        caller.token.consumer_key.clone(),
        &app.catalog(),
        allowed,
        &destinations,
        app.now(),
    )?;
    let made = app.store().create_fill_out_request(new).await?;
    match made {
        FillOutRequestResult::Made(id, respondent, generation) => {
            let url = app
                .links()
                .completing_url(respondent, generation, app.now());
            Ok(json(
                StatusCode::OK,
                &FillOutRequestView::patient(id, Some(url)),
            ))
        }
        FillOutRequestResult::NoSuchRespondent => Err(ApiError::NotFound("respondent_id")),
    }
}

rules::documented! {
    PatientOnly: "Only `patient` can be asked." => rules::one_of(["patient"]);
}

/// The body of `POST .../fill_out_requests`, plain or wrapped in
/// `fill_out_request`.
#[derive(Debug, ToSchema)]
pub struct NewFillOutRequestBody {
    /// Keys of the questionnaires to fill out, 1 to 50.
    #[schema(min_items = 1, max_items = 50)]
    pub questionnaire_keys: Vec<String>,
    /// The respondent asked (the dossier's patient); or `respondent_type`.
    #[schema(value_type = Option<rules::PositiveId>)]
    pub respondent_id: Option<i64>,
    /// `patient` (the default).
    #[schema(value_type = Option<PatientOnly>)]
    pub respondent_type: Option<String>,
    /// Unix seconds the questionnaires open, at most two years ahead;
    /// default now.
    #[schema(value_type = Option<rules::UnixTime>)]
    pub open_from: Option<i64>,
    /// Unix seconds they close: in the future, after `open_from`, at most
    /// two years ahead.
    #[schema(value_type = rules::UnixTime)]
    pub open_till: i64,
    /// Seconds after `open_from` at which a `reminder` callback is sent.
    pub reminders: Option<Vec<i64>>,
    /// Where the `opened`, `reminder` and `expired` callbacks go: https (http
    /// for loopback hosts), of an origin allowed for the token, and not a
    /// loopback, private or link-local address the operator does not allow.
    pub callback_url: Option<String>,
    /// The language (ISO 639-1, e.g. `nl`) of the fill-out pages: the
    /// questionnaire's translation in it, when it has one and the pages
    /// speak it; else the browser's `Accept-Language`, then the
    /// definition's language.
    pub language: Option<String>,
}

impl NewFillOutRequestBody {
    /// Reads a POST body for the dossier `dossier`, collecting every field
    /// error; `allowed` says whether a callback may go to an origin, and
    /// `destinations` to an address written in the URL (a host name is
    /// checked when the callback is sent, as it resolves then).
    /// `consumer_key` names the calling token, whose key signs the
    /// callbacks.
    fn parse(
        body: &Map<String, Value>,
        dossier: String,
        consumer_key: String,
        catalog: &Catalog,
        allowed: impl Fn(&String) -> bool,
        destinations: &Destinations,
        now: DateTime<Utc>,
    ) -> Result<NewFillOutRequest, ApiError> {
        // Rails clients wrap a resource in its name.
        let body = match body.get("fill_out_request") {
            Some(Value::Object(inner)) => inner,
            _ => body,
        };
        let mut f = Fields::new(body);
        let open_from = f.optional_unix("open_from", now + LATEST).unwrap_or(now);
        let open_till = f.optional_unix("open_till", now + LATEST);
        let language = f.optional_language("language");
        let mut errors = f.errors;
        match (body.get("open_till"), open_till) {
            (None | Some(Value::Null), _) => {
                errors.add("open_till", "blank");
            }
            (_, Some(till)) if till <= now => {
                errors.add("open_till", "in_past");
            }
            (_, Some(till)) if till <= open_from => {
                errors.add("open_till", "invalid");
            }
            _ => {}
        }
        let questionnaire_ids = match body.get("questionnaire_keys") {
            None | Some(Value::Null) => {
                errors.add("questionnaire_keys", "blank");
                Vec::new()
            }
            Some(Value::Array(keys)) if keys.is_empty() => {
                errors.add("questionnaire_keys", "blank");
                Vec::new()
            }
            Some(Value::Array(keys)) if keys.len() <= MAX_QUESTIONNAIRES => {
                let found: Option<Vec<_>> = keys
                    .iter()
                    .map(|k| {
                        k.as_str()
                            .and_then(|k| catalog.questionnaire(k))
                            .map(|q| q.id)
                    })
                    .collect();
                found.unwrap_or_else(|| {
                    errors.add("questionnaire_keys", "invalid");
                    Vec::new()
                })
            }
            Some(_) => {
                errors.add("questionnaire_keys", "invalid");
                Vec::new()
            }
        };
        let reminders = reminders(body, &mut errors);
        let respondent_id = respondent(body, &mut errors);
        let callback_url = match body.get("callback_url") {
            None | Some(Value::Null) => None,
            Some(Value::String(url)) if url.trim().is_empty() => None,
            Some(Value::String(url)) => match origin::absolute_url(url) {
                None => {
                    errors.add("callback_url", "invalid");
                    None
                }
                Some((_, o)) if !allowed(&o) => {
                    errors.add("callback_url", "not_allowed");
                    None
                }
                Some((parsed, _)) if destinations.check_literal(&parsed).is_err() => {
                    errors.add("callback_url", "not_allowed");
                    None
                }
                Some(_) => Some(url.clone()),
            },
            Some(_) => {
                errors.add("callback_url", "invalid");
                None
            }
        };
        errors.into_result()?;
        let Some(open_till) = open_till else {
            return Err(ApiError::Invalid(Errors::one("open_till", "blank")));
        };
        Ok(NewFillOutRequest {
            epd_id: dossier,
            consumer_key,
            questionnaire_ids,
            respondent_id,
            callback_url,
            reminders,
            open_from,
            open_till,
            language,
            now,
        })
    }
}

/// `reminders`: up to 20 whole seconds after `open_from`, each above 0.
fn reminders(body: &Map<String, Value>, errors: &mut Errors) -> Vec<i64> {
    match body.get("reminders") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(values)) if values.len() <= MAX_REMINDERS => {
            let seconds: Option<Vec<i64>> = values
                .iter()
                .map(|v| v.as_i64().filter(|s| *s > 0 && *s <= LATEST.num_seconds()))
                .collect();
            seconds.unwrap_or_else(|| {
                errors.add("reminders", "invalid");
                Vec::new()
            })
        }
        Some(_) => {
            errors.add("reminders", "invalid");
            Vec::new()
        }
    }
}

/// `respondent_id` (a positive integer), or `respondent_type` (only
/// `patient` can be asked).
fn respondent(body: &Map<String, Value>, errors: &mut Errors) -> Option<RespondentId> {
    match body.get("respondent_type") {
        None | Some(Value::Null) => {}
        Some(Value::String(t)) if t == "patient" => {}
        Some(_) => {
            errors.add("respondent_type", "invalid");
        }
    }
    match body.get("respondent_id") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_i64().filter(|id| *id > 0) {
            Some(id) => Some(RespondentId(id)),
            None => {
                errors.add("respondent_id", "invalid");
                None
            }
        },
    }
}

/// Withdraw a fill-out request
///
/// Its responses not yet completed are withdrawn and its callbacks not yet
/// sent are cancelled.
#[utoipa::path(
    delete,
    path = "/dossiers/{dossier_id}/fill_out_requests/{id}",
    tag = "fill_out_requests",
    params(
        ("dossier_id" = rules::DossierId, Path, description = "The EPD's identifier of the patient"),
        ("id" = rules::PositiveId, Path, description = "The fill-out request id"),
    ),
    responses(
        (status = 200, description = "Withdrawn", body = FillOutRequestView),
        (status = 404, description = "`{\"errors\":{\"fill_out_request\":[\"not_found\"]}}`", body = ErrorBody),
        (status = 422, description = "`{\"errors\":{\"dossier_id\":[\"invalid\"]}}`", body = ErrorBody),
    )
)]
pub async fn withdraw_fill_out_request(
    State(app): State<AppState>,
    DossierPath(dossier): DossierPath,
    params: PathParams,
) -> Result<Response, ApiError> {
    let id = params.id("id", "fill_out_request")?;
    if !app
        .store()
        .withdraw_fill_out_request(dossier, id, app.now())
        .await?
    {
        return Err(ApiError::NotFound("fill_out_request"));
    }
    Ok(json(StatusCode::OK, &FillOutRequestView::patient(id, None)))
}
