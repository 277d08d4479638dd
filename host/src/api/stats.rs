//! `GET /api/v1/dossiers/:epd_ids/stats` and `GET /api/v1/stats`: counters
//! per dossier (docs/api/stats.md), counted by the database.
//!
//! One access-log row per dossier answered, all written in one write.

use std::collections::BTreeMap;

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::api::extract::{PathParams, QueryParams};
use crate::api::rules;
use crate::auth::guard::{AccessLogged, Caller, PendingAccess};
use crate::error::{ApiError, ErrorBody, Errors, json};
use crate::store::{AccessEntry, DossierStats};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(dossier_stats))
        .routes(routes!(all_stats))
}

/// Dossiers one request may name.
pub const MAX_DOSSIERS: usize = 10_000;

/// The counters of one dossier. Withdrawn responses and invitations are
/// not counted.
#[derive(Debug, Serialize, ToSchema)]
pub struct StatsView {
    pub responses: ResponseCountsView,
    pub invitations: InvitationCountsView,
    pub protocol_subscriptions: SubscriptionCountsView,
}

/// Responses by their status at the moment of the request (the `status`
/// rule of a response).
#[derive(Debug, Serialize, ToSchema)]
pub struct ResponseCountsView {
    /// Every response of the dossier.
    pub total: i64,
    /// Filled out.
    pub completed: i64,
    /// Filling out was interrupted, and the window is still open.
    pub aborted: i64,
    /// Not completed, and `open_till` has passed (aborted ones included).
    pub expired: i64,
    /// `scheduled` + `open`: still to be filled out.
    pub pending: i64,
    /// Prepared, not open yet (`open_from` in the future).
    pub scheduled: i64,
    /// Can be filled out now.
    pub open: i64,
}

/// Invitations: batches of responses prepared together for a respondent
/// (each occurrence of a subscription's measurement is one).
#[derive(Debug, Serialize, ToSchema)]
pub struct InvitationCountsView {
    /// Every invitation not withdrawn.
    pub total: i64,
    /// Open now: `open_from` has come and `open_till` has not.
    pub active: i64,
    /// `open_till` has passed.
    pub expired: i64,
    /// `open_till` has not passed: `total` − `expired` (active ones, and
    /// those not open yet).
    pub unexpired: i64,
}

/// Protocol subscriptions.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubscriptionCountsView {
    /// Every subscription the dossier had, stopped ones included.
    pub total: i64,
    /// Active, with measurements still to be prepared.
    pub to_be_prepared: i64,
    /// Active, with a `stop_at`: they stop by themselves then.
    pub to_be_stopped: i64,
}

impl From<DossierStats> for StatsView {
    fn from(s: DossierStats) -> Self {
        let r = s.responses;
        let i = s.invitations;
        let p = s.protocol_subscriptions;
        StatsView {
            responses: ResponseCountsView {
                total: r.total,
                completed: r.completed,
                aborted: r.aborted,
                expired: r.expired,
                pending: r.pending,
                scheduled: r.scheduled,
                open: r.open,
            },
            invitations: InvitationCountsView {
                total: i.total,
                active: i.active,
                expired: i.expired,
                unexpired: i.unexpired,
            },
            protocol_subscriptions: SubscriptionCountsView {
                total: p.total,
                to_be_prepared: p.to_be_prepared,
                to_be_stopped: p.to_be_stopped,
            },
        }
    }
}

/// Stats of dossiers named in the path
///
/// `:epd_ids` is one dossier id, several separated by commas, or a JSON
/// array of strings (`["a","b"]`, percent-encoded). Answers an object keyed
/// by dossier id; an id with no dossier is left out (only unknown ids:
/// `{}`). With a JWT, only the dossier of its `sub`.
#[utoipa::path(
    get,
    path = "/dossiers/{dossier_id}/stats",
    tag = "stats",
    params(("dossier_id" = rules::IdListOrArray, Path, description = "One dossier id (`:epd_ids`), ids separated by commas, or a JSON array of ids")),
    responses(
        (status = 200, description = "Dossier id to its counters", body = BTreeMap<String, StatsView>),
        (status = 403, description = "`{\"errors\":{\"base\":[\"sub_mismatch\"]}}`: a JWT may only ask for the dossier of its `sub`", body = ErrorBody),
        (status = 422, description = "`{\"errors\":{\"epd_ids\":[\"invalid\"]}}`: a blank id, one over 255 characters or with control characters, not an array of strings, or more than 10,000 ids", body = ErrorBody),
    )
)]
pub async fn dossier_stats(
    State(app): State<AppState>,
    Extension(caller): Extension<Caller>,
    access: Option<Extension<PendingAccess>>,
    params: PathParams,
) -> Result<Response, ApiError> {
    // Named `dossier_id` like every dossier path, for the router.
    let segment = params.get("dossier_id").unwrap_or_default();
    let ids = if segment.trim_start().starts_with('[') {
        serde_json::from_str::<Vec<String>>(segment).map_err(|_| invalid())?
    } else {
        segment.split(',').map(str::to_owned).collect()
    };
    answer(&app, &caller, access, Some(ids)).await
}

/// Stats of every dossier, or of those in `epd_ids`
///
/// `epd_ids` as `epd_ids=a,b`, `epd_ids[]=a&epd_ids[]=b` or `epd_ids=a&epd_ids=b`;
/// without it, every dossier. With a JWT, `epd_ids` must name exactly the
/// dossier of its `sub`.
#[utoipa::path(
    get,
    path = "/stats",
    tag = "stats",
    params(("epd_ids" = Option<rules::IdList>, Query, description = "Dossier ids; absent: all dossiers")),
    responses(
        (status = 200, description = "Dossier id to its counters", body = BTreeMap<String, StatsView>),
        (status = 403, description = "`{\"errors\":{\"base\":[\"sub_mismatch\"]}}` (`sub_missing` without a `sub`): a JWT may only ask for the dossier of its `sub`", body = ErrorBody),
        (status = 422, description = "`{\"errors\":{\"epd_ids\":[\"invalid\"]}}`", body = ErrorBody),
    )
)]
pub async fn all_stats(
    State(app): State<AppState>,
    Extension(caller): Extension<Caller>,
    access: Option<Extension<PendingAccess>>,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let ids = query.list("epd_ids").map(|values| {
        values
            .iter()
            .flat_map(|v| v.split(','))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    });
    answer(&app, &caller, access, ids).await
}

fn invalid() -> ApiError {
    ApiError::Invalid(Errors::one("epd_ids", "invalid"))
}

async fn answer(
    app: &AppState,
    caller: &Caller,
    access: Option<Extension<PendingAccess>>,
    ids: Option<Vec<String>>,
) -> Result<Response, ApiError> {
    if let Some(ids) = &ids {
        let bad = |id: &String| rules::ID.check(id).is_err();
        if ids.is_empty() || ids.len() > MAX_DOSSIERS || ids.iter().any(bad) {
            return Err(invalid());
        }
    }
    // A JWT speaks for one patient: the dossier of its `sub`, nothing more.
    if let Some(jwt) = &caller.jwt {
        let Some(sub) = &jwt.sub else {
            return Err(ApiError::Forbidden("sub_missing"));
        };
        if !ids
            .as_ref()
            .is_some_and(|ids| ids.iter().all(|id| id == sub))
        {
            return Err(ApiError::Forbidden("sub_mismatch"));
        }
    }
    let mut ids = ids;
    if let Some(ids) = &mut ids {
        ids.sort_unstable();
        ids.dedup();
    }
    let stats = app.store().stats(ids.as_deref(), app.now()).await?;
    // One access-log row per dossier answered (NEN 7513 asks who saw which
    // patient's data), stored before the data leaves and in one write
    // whatever their number. An answer without dossiers is logged by the
    // guard, as one row for the request.
    let logged = match access {
        Some(Extension(PendingAccess(entry))) if !stats.is_empty() => {
            let rows = stats
                .keys()
                .map(|epd_id| AccessEntry {
                    dossier: Some(epd_id.clone()),
                    status: StatusCode::OK.as_u16(),
                    ..entry.clone()
                })
                .collect();
            app.store().append_accesses(rows).await?;
            true
        }
        _ => false,
    };
    let view: BTreeMap<String, StatsView> = stats.into_iter().map(|(k, v)| (k, v.into())).collect();
    let mut response = json(StatusCode::OK, &view);
    if logged {
        response.extensions_mut().insert(AccessLogged);
    }
    Ok(response)
}
