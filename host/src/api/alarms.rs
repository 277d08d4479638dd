//! `/api/v1/dossiers/:dossier_id/alarms` and `/api/v1/alarms`: the alarms
//! stored outcomes raised (docs/api/alarms.md), listed per dossier or
//! across dossiers, read one by one, acknowledged by a named professional
//! and resolved. Endpoint group `alarms`. Raising them is the store's
//! (`store/alarms.rs`), escalating them the scheduler's.

use axum::Extension;
use axum::extract::{OriginalUri, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::api::extract::{DossierPath, JsonObject, PathParams, QueryParams};
use crate::api::fields::Fields;
use crate::api::responses::page;
use crate::api::rules;
use crate::auth::guard::{AccessLogged, Caller, PendingAccess};
use crate::domain::alarm::{Alarm, AlarmState};
use crate::domain::ids::{AlarmId, ResponseId};
use crate::domain::time;
use crate::error::{ApiError, ErrorBody, Errors, json};
use crate::metrics::families::ALARM_ACKNOWLEDGE;
use crate::store::{AccessEntry, AlarmFilter, AlarmStep, StepBy};

/// The routes of this resource (endpoint group `alarms`).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_dossier_alarms))
        .routes(routes!(list_alarms))
        .routes(routes!(get_alarm))
        .routes(routes!(acknowledge_alarm))
        .routes(routes!(resolve_alarm))
}

/// Longest note a professional may give: 1000 characters.
const MAX_NOTE: usize = 1000;

/// `note`: free text with line breaks and tabs, no other control
/// characters.
const NOTE: rules::Text = rules::Text {
    min_chars: 0,
    max_chars: MAX_NOTE,
    non_blank: false,
    line_breaks: true,
};

rules::documented! {
    AlarmStateName: "An alarm's state: open, acknowledged, escalated or resolved." => rules::one_of(AlarmState::ALL.iter().map(|s| s.as_str()));
    Note: "Free text, at most 1000 characters; line breaks and tabs, but no other control characters." => NOTE.schema();
}

/// An alarm: raised by a stored outcome whose action is `alarm` (or
/// `attention`, where configured), to be acknowledged by a professional
/// before its deadline.
#[derive(Debug, Serialize, ToSchema)]
pub struct AlarmView {
    pub id: i64,
    /// The EPD's identifier of the patient.
    pub dossier_id: String,
    /// The response whose outcome raised it (it may have been deleted
    /// since: then the alarm is resolved with reason `response_deleted`).
    pub response_id: i64,
    #[schema(example = "phq9")]
    pub questionnaire_key: String,
    /// The outcome's `action`: `alarm` or `attention`.
    #[schema(example = "alarm")]
    pub action: &'static str,
    /// The question keys that raised it; empty when a score's status did.
    #[schema(example = json!(["v_9"]))]
    pub question_keys: Vec<String>,
    /// `open`, `acknowledged`, `escalated` (its deadline passed
    /// unacknowledged) or `resolved`.
    #[schema(value_type = AlarmStateName)]
    pub state: &'static str,
    /// Waiting for acknowledgement (open or escalated) past its deadline.
    pub overdue: bool,
    /// When the outcome raising it was stored (ISO 8601, milliseconds, UTC
    /// offset).
    #[schema(example = "2026-03-01T09:30:00.000+01:00")]
    pub raised_at: String,
    /// By when a professional must acknowledge it.
    #[schema(example = "2026-03-01T13:30:00.000+01:00")]
    pub deadline: String,
    pub acknowledged_at: Option<String>,
    /// The professional (a name or id) who acknowledged it.
    pub acknowledged_by: Option<String>,
    pub acknowledged_note: Option<String>,
    /// When the scheduler escalated it.
    pub escalated_at: Option<String>,
    pub resolved_at: Option<String>,
    /// Why it was resolved: `resolved` (by a professional),
    /// `response_deleted`, `response_withdrawn` or `rescored` (the response's
    /// new outcome raises no alarm).
    pub resolved_reason: Option<String>,
    /// The professional who resolved it.
    pub resolved_by: Option<String>,
    pub resolved_note: Option<String>,
}

impl AlarmView {
    /// The wire form of `a` at `now`, its times in `zone`.
    pub fn new(a: &Alarm, zone: Tz, now: DateTime<Utc>) -> AlarmView {
        let at = |t: Option<DateTime<Utc>>| t.map(|t| time::format(t, zone));
        AlarmView {
            id: a.id.0,
            dossier_id: a.dossier.clone(),
            response_id: a.response_id.0,
            questionnaire_key: a.questionnaire_key.clone(),
            action: a.action.as_str(),
            question_keys: a.question_keys.clone(),
            state: a.state.as_str(),
            overdue: a.overdue(now),
            raised_at: time::format(a.raised_at, zone),
            deadline: time::format(a.deadline, zone),
            acknowledged_at: at(a.acknowledged_at),
            acknowledged_by: a.acknowledged_by.clone(),
            acknowledged_note: a.acknowledged_note.clone(),
            escalated_at: at(a.escalated_at),
            resolved_at: at(a.resolved_at),
            resolved_reason: a.resolved_reason.clone(),
            resolved_by: a.resolved_by.clone(),
            resolved_note: a.resolved_note.clone(),
        }
    }
}

/// The wire form of `a` at `now`, times in `zone`, as JSON: the `data` of
/// an alarm delivery (`scheduler/alarm_delivery.rs`).
pub fn delivered_json(a: &Alarm, zone: Tz, now: DateTime<Utc>) -> Value {
    serde_json::to_value(AlarmView::new(a, zone, now)).unwrap_or_default()
}

/// The body of `POST .../acknowledge` and `POST .../resolve`.
#[derive(Debug, ToSchema)]
pub struct AlarmStepBody {
    /// Who takes it on: the professional's name or id in the EPD (a JSON
    /// string or integer), 1 to 255 characters, not only white space.
    #[schema(value_type = rules::IdOrInteger, example = "dr. A. Jansen")]
    pub professional: String,
    /// What they did or will do, at most 1000 characters.
    #[schema(value_type = Option<Note>)]
    pub note: Option<String>,
}

impl AlarmStepBody {
    /// Reads a body, collecting every field error: `professional` `blank`
    /// or `invalid`, `note` `invalid`.
    pub fn parse(body: &Map<String, Value>) -> Result<AlarmStepBody, ApiError> {
        let mut fields = Fields::new(body);
        let professional = fields.required_id("professional");
        let mut errors = fields.errors;
        let note = match body.get("note") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) if NOTE.check(text).is_ok() => {
                Some(text.trim().to_owned()).filter(|t| !t.is_empty())
            }
            Some(_) => {
                errors.add("note", "invalid");
                None
            }
        };
        errors.into_result()?;
        Ok(AlarmStepBody {
            professional: professional.unwrap_or_default(),
            note,
        })
    }
}

/// The list filters both lists take, and the page asked for.
struct Listing {
    filter: AlarmFilter,
    page: Option<crate::store::Page>,
}

/// Reads `state`, `questionnaire_key`, `overdue` and the page parameters;
/// every problem in one 422.
fn listing(query: &QueryParams, now: DateTime<Utc>) -> Result<Listing, ApiError> {
    let mut errors = Errors::new();
    let state = query.single("state").and_then(|s| {
        let parsed = AlarmState::parse(s);
        if parsed.is_none() {
            errors.add("state", "invalid");
        }
        parsed
    });
    let questionnaire_key = query.single("questionnaire_key").and_then(|k| {
        if rules::ID.check(k).is_err() {
            errors.add("questionnaire_key", "invalid");
            return None;
        }
        Some(k.to_owned())
    });
    let overdue = match query.single("overdue") {
        None => false,
        Some(text) => rules::boolean(text).unwrap_or_else(|| {
            errors.add("overdue", "invalid");
            false
        }),
    };
    let page = page::requested(query, &mut errors);
    errors.into_result()?;
    Ok(Listing {
        filter: AlarmFilter {
            dossier: None,
            state,
            questionnaire_key,
            overdue_at: overdue.then_some(now),
            after: page.and_then(|p| p.after).map(|r| AlarmId(r.0)),
            // One more than the page, to know whether others follow.
            limit: page.map(|p| p.size + 1),
        },
        page,
    })
}

/// The alarms found, as answered: a page with its `Link` to the next when
/// more follow.
fn answer(
    app: &AppState,
    uri: &axum::http::Uri,
    query: &QueryParams,
    page: Option<crate::store::Page>,
    mut found: Vec<Alarm>,
    now: DateTime<Utc>,
) -> Result<Response, ApiError> {
    let more = page.is_some_and(|p| found.len() > p.size as usize);
    if let Some(p) = page {
        found.truncate(p.size as usize);
    }
    let zone = app.config().time_zone;
    let views: Vec<AlarmView> = found.iter().map(|a| AlarmView::new(a, zone, now)).collect();
    let mut response = json(StatusCode::OK, &views);
    if let (true, Some(p), Some(last)) = (more, page, found.last()) {
        let link = page::next_link(uri.path(), query, p.size, ResponseId(last.id.0));
        let value = HeaderValue::from_str(&link)
            .map_err(|e| ApiError::Internal(anyhow::anyhow!("the next page's link: {e}")))?;
        response.headers_mut().insert(header::LINK, value);
    }
    Ok(response)
}

/// List a dossier's alarms
///
/// The alarms of a dossier ordered by id; an unknown dossier has none.
/// `state`, `questionnaire_key` and `overdue=true` (only those waiting for
/// acknowledgement past their deadline) narrow the list; `page[size]` and
/// `page[after]` page it as the response list is paged. Also at
/// `/api/v1/dossier/{dossier_id}/alarms` and with a `.json` suffix.
#[utoipa::path(
    get,
    path = "/dossiers/{dossier_id}/alarms",
    tag = "alarms",
    params(
        ("dossier_id" = rules::DossierId, Path, description = "The EPD's identifier of the patient"),
        ("state" = Option<AlarmStateName>, Query, description = "Only alarms in this state: open, acknowledged, escalated or resolved"),
        ("questionnaire_key" = Option<rules::Id>, Query, description = "Only alarms of this questionnaire"),
        ("overdue" = Option<rules::Boolean>, Query, description = "true: only alarms waiting for acknowledgement (open or escalated) past their deadline; false: all"),
        ("page[size]" = Option<page::PageSize>, Query, description = "Answer a page of at most this many alarms (1 to 1000) instead of the whole list"),
        ("page[after]" = Option<page::Cursor>, Query, description = "The opaque cursor from the `Link` of the page before: the page of alarms after it (alone: pages of 100)"),
    ),
    responses(
        (status = 200, description = "The alarms; for a page that others follow, a `Link` header to the next", body = [AlarmView],
            headers(("Link" = String, description = "`<path?...&page[after]=CURSOR>; rel=\"next\"` (RFC 8288), only on a page that others follow"))),
        (status = 422, description = "A filter or page parameter is not valid, e.g. `{\"errors\":{\"state\":[\"invalid\"]}}`; or `{\"errors\":{\"dossier_id\":[\"invalid\"]}}`", body = ErrorBody),
    )
)]
pub async fn list_dossier_alarms(
    State(app): State<AppState>,
    OriginalUri(uri): OriginalUri,
    DossierPath(dossier): DossierPath,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let now = app.now();
    let Listing { mut filter, page } = listing(&query, now)?;
    filter.dossier = Some(dossier);
    let found = app.store().list_alarms(&filter).await?;
    answer(&app, &uri, &query, page, found, now)
}

/// List alarms across dossiers
///
/// Every dossier's alarms ordered by id, for a team's work list: with
/// `state=open&overdue=true`, those past their deadline that nobody
/// acknowledged. Filters and pages as for a dossier's list. A JWT sees
/// only the alarms of the dossier of its `sub` (403 `sub_missing` without
/// one). Each dossier answered gets its own access-log row. Also with a
/// `.json` suffix.
#[utoipa::path(
    get,
    path = "/alarms",
    tag = "alarms",
    params(
        ("state" = Option<AlarmStateName>, Query, description = "Only alarms in this state: open, acknowledged, escalated or resolved"),
        ("questionnaire_key" = Option<rules::Id>, Query, description = "Only alarms of this questionnaire"),
        ("overdue" = Option<rules::Boolean>, Query, description = "true: only alarms waiting for acknowledgement (open or escalated) past their deadline; false: all"),
        ("page[size]" = Option<page::PageSize>, Query, description = "Answer a page of at most this many alarms (1 to 1000) instead of the whole list"),
        ("page[after]" = Option<page::Cursor>, Query, description = "The opaque cursor from the `Link` of the page before: the page of alarms after it (alone: pages of 100)"),
    ),
    responses(
        (status = 200, description = "The alarms; for a page that others follow, a `Link` header to the next", body = [AlarmView],
            headers(("Link" = String, description = "`<path?...&page[after]=CURSOR>; rel=\"next\"` (RFC 8288), only on a page that others follow"))),
        (status = 403, description = "`{\"errors\":{\"base\":[\"sub_missing\"]}}`: a JWT without `sub`", body = ErrorBody),
        (status = 422, description = "A filter or page parameter is not valid, e.g. `{\"errors\":{\"overdue\":[\"invalid\"]}}`", body = ErrorBody),
    )
)]
pub async fn list_alarms(
    State(app): State<AppState>,
    OriginalUri(uri): OriginalUri,
    Extension(caller): Extension<Caller>,
    access: Option<Extension<PendingAccess>>,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let now = app.now();
    let Listing { mut filter, page } = listing(&query, now)?;
    // A JWT speaks for one patient: the dossier of its `sub`, nothing more.
    if let Some(jwt) = &caller.jwt {
        let Some(sub) = &jwt.sub else {
            return Err(ApiError::Forbidden("sub_missing"));
        };
        filter.dossier = Some(sub.clone());
    }
    let found = app.store().list_alarms(&filter).await?;
    // One access-log row per dossier answered, stored before the data
    // leaves (as the stats do); an empty answer is the guard's one row.
    let mut dossiers: Vec<&str> = found.iter().map(|a| a.dossier.as_str()).collect();
    dossiers.sort_unstable();
    dossiers.dedup();
    let logged = match access {
        Some(Extension(PendingAccess(entry))) if !dossiers.is_empty() => {
            let rows = dossiers
                .iter()
                .map(|epd_id| AccessEntry {
                    dossier: Some((*epd_id).to_owned()),
                    status: StatusCode::OK.as_u16(),
                    ..entry.clone()
                })
                .collect();
            app.store().append_accesses(rows).await?;
            true
        }
        _ => false,
    };
    let mut response = answer(&app, &uri, &query, page, found, now)?;
    if logged {
        response.extensions_mut().insert(AccessLogged);
    }
    Ok(response)
}

/// Get an alarm
///
/// An alarm of another dossier is not found. Also at
/// `/api/v1/dossier/{dossier_id}/alarms/{id}` and with a `.json` suffix.
#[utoipa::path(
    get,
    path = "/dossiers/{dossier_id}/alarms/{id}",
    tag = "alarms",
    params(
        ("dossier_id" = rules::DossierId, Path, description = "The EPD's identifier of the patient"),
        ("id" = rules::PositiveId, Path, description = "Alarm id"),
    ),
    responses(
        (status = 200, body = AlarmView),
        (status = 404, description = "`{\"errors\":{\"alarm\":[\"not_found\"]}}`: no alarm of this dossier has the id (or it is not a number)", body = ErrorBody),
        (status = 422, description = "`{\"errors\":{\"dossier_id\":[\"invalid\"]}}`: a dossier id over 255 characters or with control characters", body = ErrorBody),
    )
)]
pub async fn get_alarm(
    State(app): State<AppState>,
    DossierPath(dossier): DossierPath,
    params: PathParams,
) -> Result<Response, ApiError> {
    let id = params.id("id", "alarm")?;
    let found = app
        .store()
        .alarm(&dossier, AlarmId(id))
        .await?
        .ok_or(ApiError::NotFound("alarm"))?;
    Ok(json(
        StatusCode::OK,
        &AlarmView::new(&found, app.config().time_zone, app.now()),
    ))
}

/// Acknowledge an alarm
///
/// A professional takes the alarm on: `professional` (their name or id in
/// the EPD) is required, `note` optional; the caller's token is recorded
/// too, and the step goes into the alarm's history and the access log. An
/// open or escalated alarm can be acknowledged; one acknowledged or
/// resolved already is 422 (`already_acknowledged`, `already_resolved`).
/// A 200 means it is on disk.
#[utoipa::path(
    post,
    path = "/dossiers/{dossier_id}/alarms/{id}/acknowledge",
    tag = "alarms",
    params(
        ("dossier_id" = rules::DossierId, Path, description = "The EPD's identifier of the patient"),
        ("id" = rules::PositiveId, Path, description = "Alarm id"),
    ),
    request_body(content = AlarmStepBody, content_type = "application/json"),
    responses(
        (status = 200, description = "Acknowledged; the alarm as it is now", body = AlarmView),
        (status = 404, description = "`{\"errors\":{\"alarm\":[\"not_found\"]}}`: no alarm of this dossier has the id", body = ErrorBody),
        (status = 422, description = "Field errors, together: `professional` `blank` (missing or empty) or `invalid` (not a string or integer, over 255 characters, control characters); `note` `invalid` (not a string, over 1000 characters, control characters other than line breaks and tabs); or the alarm's state: `{\"errors\":{\"base\":[\"already_acknowledged\"]}}`, `{\"errors\":{\"base\":[\"already_resolved\"]}}`", body = ErrorBody),
    )
)]
pub async fn acknowledge_alarm(
    State(app): State<AppState>,
    access: Option<Extension<PendingAccess>>,
    DossierPath(dossier): DossierPath,
    params: PathParams,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    step(&app, access, dossier, &params, &body, Step::Acknowledge).await
}

/// Resolve an alarm
///
/// The alarm is over: `professional` is required, `note` optional, as for
/// acknowledging; an alarm need not be acknowledged first. One resolved
/// already (by a professional, or closed because its response was deleted
/// or re-scored) is 422 `already_resolved`. A 200 means it is on disk.
#[utoipa::path(
    post,
    path = "/dossiers/{dossier_id}/alarms/{id}/resolve",
    tag = "alarms",
    params(
        ("dossier_id" = rules::DossierId, Path, description = "The EPD's identifier of the patient"),
        ("id" = rules::PositiveId, Path, description = "Alarm id"),
    ),
    request_body(content = AlarmStepBody, content_type = "application/json"),
    responses(
        (status = 200, description = "Resolved; the alarm as it is now", body = AlarmView),
        (status = 404, description = "`{\"errors\":{\"alarm\":[\"not_found\"]}}`: no alarm of this dossier has the id", body = ErrorBody),
        (status = 422, description = "Field errors, together: `professional` `blank` or `invalid`; `note` `invalid`; or `{\"errors\":{\"base\":[\"already_resolved\"]}}`", body = ErrorBody),
    )
)]
pub async fn resolve_alarm(
    State(app): State<AppState>,
    access: Option<Extension<PendingAccess>>,
    DossierPath(dossier): DossierPath,
    params: PathParams,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    step(&app, access, dossier, &params, &body, Step::Resolve).await
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Acknowledge,
    Resolve,
}

/// Acknowledges or resolves: the body read, then the step taken with the
/// request's access-log row in its transaction.
async fn step(
    app: &AppState,
    access: Option<Extension<PendingAccess>>,
    dossier: String,
    params: &PathParams,
    body: &Map<String, Value>,
    which: Step,
) -> Result<Response, ApiError> {
    let id = AlarmId(params.id("id", "alarm")?);
    let parsed = AlarmStepBody::parse(body)?;
    // Without the guard's row (never, behind the guard) the step is still
    // recorded in the alarm's history, and the guard logs the request.
    let Some(Extension(PendingAccess(entry))) = access else {
        return Err(ApiError::Internal(anyhow::anyhow!(
            "an alarm step without its access-log row"
        )));
    };
    let by = StepBy {
        professional: parsed.professional,
        note: parsed.note,
        access: entry,
    };
    let now = app.now();
    let store = app.store();
    let result = match which {
        Step::Acknowledge => store.acknowledge_alarm(dossier, id, by, now).await?,
        Step::Resolve => store.resolve_alarm(dossier, id, by, now).await?,
    };
    let mut response = match result {
        AlarmStep::Done(alarm) => {
            if which == Step::Acknowledge
                && let Some(at) = alarm.acknowledged_at
            {
                let waited = (at - alarm.raised_at).num_milliseconds().max(0);
                app.metrics()
                    .histogram(ALARM_ACKNOWLEDGE, &[("action", alarm.action.as_str())])
                    .record(waited as f64 / 1000.0);
            }
            json(
                StatusCode::OK,
                &AlarmView::new(&alarm, app.config().time_zone, now),
            )
        }
        AlarmStep::NotFound => ApiError::NotFound("alarm").into_response(),
        AlarmStep::Refused(why) => {
            ApiError::Invalid(Errors::one("base", why.code())).into_response()
        }
    };
    response.extensions_mut().insert(AccessLogged);
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: Value) -> Result<AlarmStepBody, Value> {
        let Value::Object(map) = body else {
            panic!("an object")
        };
        AlarmStepBody::parse(&map).map_err(|e| match e {
            ApiError::Invalid(errors) => errors.body()["errors"].clone(),
            other => panic!("{other:?}"),
        })
    }

    #[test]
    fn a_step_names_its_professional_and_may_carry_a_note() {
        let body = parse(serde_json::json!({"professional": "dr. Jansen", "note": " called \n"}))
            .expect("valid");
        assert_eq!(body.professional, "dr. Jansen");
        assert_eq!(body.note.as_deref(), Some("called"));
        let body = parse(serde_json::json!({"professional": 1234})).expect("an id");
        assert_eq!(body.professional, "1234");
        assert_eq!(body.note, None);
    }

    #[test]
    fn every_field_error_comes_at_once() {
        let errors = parse(serde_json::json!({"note": 5})).expect_err("refused");
        assert_eq!(
            errors,
            serde_json::json!({"professional": ["blank"], "note": ["invalid"]})
        );
        let errors = parse(serde_json::json!({"professional": "x\u{0}", "note": "a".repeat(1001)}))
            .expect_err("refused");
        assert_eq!(
            errors,
            serde_json::json!({"professional": ["invalid"], "note": ["invalid"]})
        );
        let errors = parse(serde_json::json!({"professional": ["a"]})).expect_err("refused");
        assert_eq!(errors, serde_json::json!({"professional": ["invalid"]}));
    }
}
