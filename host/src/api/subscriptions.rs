//! `/api/v1/dossiers/:dossier_id/protocol_subscriptions`: subscribing a
//! dossier to an automatic protocol, listing and stopping subscriptions
//! (docs/api/protocols-and-subscriptions.md). A start prepares what is due
//! with the scheduler's planner over the request's one catalog snapshot;
//! the handlers never prepare occurrences themselves.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::responses::ResponseView;
use crate::AppState;
use crate::api::extract::{DossierPath, JsonObject, PathParams};
use crate::api::fields::{Fields, variant_errors};
use crate::api::rules;
use crate::auth::links::Links;
use crate::domain::catalog::{Catalog, CatalogProtocol};
use crate::domain::ids::{ProtocolId, SubscriptionId};
use crate::domain::response::{Response as StoredResponse, Status};
use crate::domain::schedule::time_of_day;
use crate::domain::subscription::Subscription;
use crate::domain::time;
use crate::domain::variant::Variant;
use crate::error::{ApiError, ErrorBody, Errors, json};
use crate::scheduler;
use crate::store::{NewSubscription, StartResult};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_subscriptions, start_subscription))
        .routes(routes!(stop_subscription))
}

/// How far ahead a subscription may be started.
const LATEST_START: Duration = Duration::days(366 * 5);

/// A dossier's subscription to an automatic protocol.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubscriptionView {
    pub id: i64,
    /// Seconds after local midnight (in the service's time zone) at which
    /// the measurements of a day start: 32400 is 09:00.
    pub daily_start_time: u32,
    /// When the subscription started (ISO 8601): its first measurement is
    /// prepared then, or as the protocol's schedule says.
    pub start_at: String,
    /// When it stops by itself (the protocol's duration after the start);
    /// null when it runs until stopped.
    pub stop_at: Option<String>,
    pub protocol_key: String,
    pub protocol_name: String,
    /// Flags the questionnaires are filled out with (not in the answer to
    /// DELETE).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub flags: Option<Map<String, Value>>,
    /// Textvars the questionnaires are filled out with (not in the answer
    /// to DELETE).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub textvars: Option<Map<String, Value>>,
    /// Only in the answer to POST: the responses prepared at once (those
    /// due at `start_at` when it is not in the future), each with
    /// `outcome.actions`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub responses: Option<Vec<ResponseView>>,
}

impl SubscriptionView {
    fn new(s: &Subscription, catalog: &Catalog, zone: Tz) -> SubscriptionView {
        let protocol = catalog.protocol(s.protocol_id);
        SubscriptionView {
            id: s.id.0,
            daily_start_time: s.daily_start_time,
            start_at: time::format(s.start_at, zone),
            stop_at: s.stop_at.map(|t| time::format(t, zone)),
            protocol_key: protocol.map(|p| p.def.key.clone()).unwrap_or_default(),
            protocol_name: protocol.map(|p| p.def.name.clone()).unwrap_or_default(),
            flags: Some(s.variant.flags_json()),
            textvars: Some(s.variant.textvars_json()),
            responses: None,
        }
    }
}

/// List active subscriptions
///
/// The dossier's subscriptions that have not stopped, by id; an unknown
/// dossier has none.
#[utoipa::path(
    get,
    path = "/dossiers/{dossier_id}/protocol_subscriptions",
    tag = "protocol_subscriptions",
    params(("dossier_id" = rules::DossierId, Path, description = "The EPD's identifier of the patient")),
    responses(
        (status = 200, description = "Active subscriptions, without `responses`", body = [SubscriptionView]),
        (status = 422, description = "`{\"errors\":{\"dossier_id\":[\"invalid\"]}}`", body = ErrorBody),
    )
)]
pub async fn list_subscriptions(
    State(app): State<AppState>,
    DossierPath(dossier): DossierPath,
) -> Result<Response, ApiError> {
    let subscriptions = app.store().active_subscriptions(&dossier).await?;
    let catalog = app.catalog();
    let zone = app.config().time_zone;
    let views: Vec<SubscriptionView> = subscriptions
        .iter()
        .map(|s| SubscriptionView::new(s, &catalog, zone))
        .collect();
    Ok(json(StatusCode::OK, &views))
}

/// Start a subscription
///
/// Subscribes the dossier's patient to an automatic protocol, named by
/// `protocol_key` or `protocol_id`, from `start_at` (Unix seconds; default
/// now). `flags` and `textvars` must be declared by a questionnaire of the
/// protocol. The measurements due at once are prepared in the same
/// transaction and returned in `responses`; the scheduler prepares the
/// rest as the protocol's schedule says. The dossier is made on first
/// write. Answers 200, not 201.
#[utoipa::path(
    post,
    path = "/dossiers/{dossier_id}/protocol_subscriptions",
    tag = "protocol_subscriptions",
    params(("dossier_id" = rules::DossierId, Path, description = "The EPD's identifier of the patient")),
    request_body(content = NewSubscriptionBody, content_type = "application/json"),
    responses(
        (status = 200, description = "Started; with `responses`", body = SubscriptionView),
        (status = 404, description = "`{\"errors\":{\"protocol_key\":[\"not_found\"]}}` (or `protocol_id`)", body = ErrorBody),
        (status = 422, description = "Field errors, e.g. `{\"errors\":{\"protocol_key\":[\"not_automatic\"]}}`: `dossier_id` `invalid`; `protocol_key` `blank` (neither key nor id) or `invalid`; `protocol_id` `invalid`; under the field used, `not_automatic` (a normal protocol), `invalid` (an inactive one) or `already_subscribed` (an active subscription to it exists); `start_at` `invalid` or `too_early`; under `base`, `flag_does_not_exist`, `flag_value_invalid`, `textvar_does_not_exist` or `invalid` (flags or textvars not an object)", body = ErrorBody),
    )
)]
pub async fn start_subscription(
    State(app): State<AppState>,
    DossierPath(dossier): DossierPath,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let now = app.now();
    let catalog = app.catalog();
    let zone = app.config().time_zone;
    let Start {
        protocol,
        field,
        start_at,
        variant,
    } = NewSubscriptionBody::parse(&body, &catalog, now)?;
    let daily_start_time = protocol
        .def
        .daily_start_time
        .map_or_else(|| time_of_day(start_at, zone), |t| t.0);
    let stop_at = protocol.def.duration.and_then(|d| d.after(start_at, zone));
    let mut new = NewSubscription {
        epd_id: dossier,
        protocol_id: protocol.id,
        start_at,
        stop_at,
        daily_start_time,
        variant,
        first_due: None,
        now,
    };
    new.first_due = new.draft().first_due(protocol, zone);
    let started = app
        .store()
        .start_subscription(new, scheduler::planner(catalog.clone(), zone, now))
        .await?;
    let (subscription, responses) = match started {
        StartResult::Started(s, responses) => (s, responses),
        StartResult::AlreadySubscribed => {
            return Err(ApiError::Invalid(Errors::one(field, "already_subscribed")));
        }
    };
    let mut view = SubscriptionView::new(&subscription, &catalog, zone);
    view.responses = Some(
        responses
            .iter()
            .map(|r| with_actions(r, zone, now, app.links()))
            .collect(),
    );
    Ok(json(StatusCode::OK, &view))
}

/// The body of `POST .../protocol_subscriptions`.
#[derive(Debug, ToSchema)]
pub struct NewSubscriptionBody {
    /// Key of an automatic protocol; required unless `protocol_id` is given
    /// (the key wins when both are).
    #[schema(value_type = Option<rules::ShortText>)]
    pub protocol_key: Option<String>,
    /// Id of an automatic protocol.
    #[schema(value_type = Option<rules::IdNumber>)]
    pub protocol_id: Option<i64>,
    /// Unix seconds the subscription starts (its first measurement is due
    /// then, or as the protocol's schedule says); at least 946598400, at
    /// most five years ahead; default: now. A start in the past prepares
    /// the occurrences still open and skips those whose window closed.
    #[schema(value_type = Option<rules::UnixTime>)]
    pub start_at: Option<i64>,
    /// Flag name to boolean, for every questionnaire of the protocol; each
    /// must be a flag of one of them (422 `{"errors":{"base":["flag_does_not_exist"]}}`),
    /// with a boolean value (`flag_value_invalid`).
    #[schema(value_type = Option<Object>)]
    pub flags: Option<Map<String, Value>>,
    /// Textvar name to string, likewise (`textvar_does_not_exist`, `invalid`).
    #[schema(value_type = Option<Object>)]
    pub textvars: Option<Map<String, Value>>,
}

/// A start, checked against the catalog.
#[derive(Debug)]
struct Start<'c> {
    protocol: &'c CatalogProtocol,
    /// The field that named the protocol, for the errors about it.
    field: &'static str,
    start_at: DateTime<Utc>,
    variant: Variant,
}

impl NewSubscriptionBody {
    /// Reads a POST body: the protocol first (404 when it names none), then
    /// the start, then what the protocol allows.
    fn parse<'c>(
        body: &Map<String, Value>,
        catalog: &'c Catalog,
        now: DateTime<Utc>,
    ) -> Result<Start<'c>, ApiError> {
        let (protocol, field) = find_protocol(body, catalog)?;
        let mut f = Fields::new(body);
        let start_at = f
            .optional_unix("start_at", now + LATEST_START)
            .unwrap_or(now);
        f.errors.clone().into_result()?;
        if !protocol.def.automatic {
            return Err(ApiError::Invalid(Errors::one(field, "not_automatic")));
        }
        if !protocol.def.active {
            return Err(ApiError::Invalid(Errors::one(field, "invalid")));
        }
        let questionnaires: Vec<_> = protocol
            .def
            .measurements
            .iter()
            .flat_map(|m| &m.questionnaires)
            .filter_map(|key| catalog.questionnaire(key))
            .map(|q| &*q.def)
            .collect();
        let variant = Variant::check(
            questionnaires.iter().copied(),
            body.get("flags"),
            body.get("textvars"),
        )
        .map_err(variant_errors)?;
        Ok(Start {
            protocol,
            field,
            start_at,
            variant,
        })
    }
}

/// The protocol a start names, and the field that named it: `protocol_key`
/// when given, else `protocol_id`.
fn find_protocol<'c>(
    body: &Map<String, Value>,
    catalog: &'c Catalog,
) -> Result<(&'c CatalogProtocol, &'static str), ApiError> {
    let given = |field: &str| body.get(field).filter(|v| !v.is_null());
    let key = match given("protocol_key") {
        None => None,
        Some(Value::String(key)) if key.trim().is_empty() => None,
        Some(Value::String(key)) => Some(key),
        Some(_) => return Err(ApiError::Invalid(Errors::one("protocol_key", "invalid"))),
    };
    if let Some(key) = key {
        return catalog
            .protocols()
            .iter()
            .find(|p| p.def.key == *key)
            .map(|p| (p, "protocol_key"))
            .ok_or(ApiError::NotFound("protocol_key"));
    }
    let Some(id) = given("protocol_id") else {
        return Err(ApiError::Invalid(Errors::one("protocol_key", "blank")));
    };
    let id = rules::ID_DIGITS
        .read(id)
        .ok_or(ApiError::Invalid(Errors::one("protocol_id", "invalid")))?;
    catalog
        .protocol(ProtocolId(id))
        .map(|p| (p, "protocol_id"))
        .ok_or(ApiError::NotFound("protocol_id"))
}

/// A prepared response as the start answer shows it: with `outcome.actions`,
/// what can be done with it now (`fill_out`: it is open).
fn with_actions(r: &StoredResponse, zone: Tz, now: DateTime<Utc>, links: &Links) -> ResponseView {
    let mut view = ResponseView::new(r, zone, now, links);
    let mut actions = Map::new();
    actions.insert(
        "fill_out".to_owned(),
        Value::Bool(Status::at(&r.times, now) == Status::Open),
    );
    view.outcome.actions = Some(actions);
    view
}

/// Stop a subscription
///
/// No more measurements are prepared; its responses that are not open yet
/// are withdrawn, open ones stay completable until they expire.
#[utoipa::path(
    delete,
    path = "/dossiers/{dossier_id}/protocol_subscriptions/{id}",
    tag = "protocol_subscriptions",
    params(
        ("dossier_id" = rules::DossierId, Path, description = "The EPD's identifier of the patient"),
        ("id" = rules::PositiveId, Path, description = "The subscription id"),
    ),
    responses(
        (status = 200, description = "Stopped: id, daily_start_time, start_at, stop_at, protocol_key, protocol_name", body = SubscriptionView),
        (status = 404, description = "`{\"errors\":{\"protocol_subscription\":[\"not_found\"]}}`: no active subscription with this id in this dossier", body = ErrorBody),
        (status = 422, description = "`{\"errors\":{\"dossier_id\":[\"invalid\"]}}`", body = ErrorBody),
    )
)]
pub async fn stop_subscription(
    State(app): State<AppState>,
    DossierPath(dossier): DossierPath,
    params: PathParams,
) -> Result<Response, ApiError> {
    let id = params.id("id", "protocol_subscription")?;
    let stopped = app
        .store()
        .stop_subscription(dossier, SubscriptionId(id), app.now())
        .await?
        .ok_or(ApiError::NotFound("protocol_subscription"))?;
    let mut view = SubscriptionView::new(&stopped, &app.catalog(), app.config().time_zone);
    view.flags = None;
    view.textvars = None;
    Ok(json(StatusCode::OK, &view))
}
