//! Probes for orchestrators and load balancers: `/livez` (the process
//! answers), `/readyz` (send it traffic: `crate::readiness`'s checks) and
//! `/version` (what this binary is). Outside `/api/v1`, never
//! authenticated, like `/health`; they name no patient data, path,
//! address or setting (docs/operations.md#health-and-version).
//!
//! `/readyz` answers 503 with `errors` naming each failed check, and gives
//! one answer for a second (`crate::readiness::Recent`). Each client
//! address has its share of the probes, `/health` included ([`limit`]):
//! past it, 429 before anything is looked at.

use std::collections::BTreeMap;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::AppState;
use crate::auth::guard::client_of;
use crate::auth::service::AuthService;
use crate::build_info;
use crate::error::{ApiError, json};

/// Holds each client address (IPv6: its /64) to its share of the probes
/// (`probe_burst`, `probe_per_second`; docs/operations.md#rate-limits),
/// before the probe runs.
pub async fn limit(auth: AuthService, req: Request, next: Next) -> Response {
    let remote = client_of(&auth, req.extensions(), req.headers());
    match auth.limits().admit_probe(remote.rate_key()) {
        Ok(()) => next.run(req).await,
        Err(over) => ApiError::TooManyRequests(over.0).into_response(),
    }
}
use crate::readiness::Status;

/// The process answers.
#[derive(Debug, Serialize, ToSchema)]
pub struct Alive {
    /// Always `ok`.
    pub status: &'static str,
}

/// Liveness
///
/// 200 whenever the process answers HTTP at all; touches neither the
/// database nor the plugins, so a slow database never gets a live process
/// restarted. Like every probe, 429 past this client address's share.
#[utoipa::path(get, path = "/livez", tag = "operations", responses(
    (status = 200, body = Alive),
))]
pub async fn livez() -> Response {
    json(StatusCode::OK, &Alive { status: "ok" })
}

/// One readiness check.
#[derive(Debug, Serialize, ToSchema)]
pub struct CheckView {
    /// `ok`, `failed`, or `unknown` (not checked because another failed).
    pub status: &'static str,
    /// What was found, when `ok` or `unknown`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// What is wrong, when `failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// Readiness: every check by name, and when one failed, the codes of
/// those that did in the usual error shape.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({
    "status": "not_ready",
    "checks": {
        "database": {"status": "ok", "detail": "answers"},
        "migrations": {"status": "ok", "detail": "level 13"},
        "plugins": {"status": "failed", "problem": "scorer phq9 (questionnaire phq9) does not serve"},
        "scheduler": {"status": "ok", "detail": "last pass 12 s ago, every 60 s"},
        "tokens": {"status": "ok", "detail": "ok"}
    },
    "errors": {"plugins": ["not_loaded"]}
}))]
pub struct Readiness {
    /// `ready` or `not_ready`.
    pub status: &'static str,
    /// `database`, `migrations`, `plugins`, `scheduler`, `tokens`.
    #[schema(value_type = BTreeMap<String, CheckView>)]
    pub checks: BTreeMap<&'static str, CheckView>,
    /// Only when not ready: each failed check's code. `database`:
    /// `unreachable` or `timeout`; `migrations`: `pending`, `changed` or `failed`;
    /// `plugins`: `not_loaded`; `scheduler`: `late`; `tokens`: `expired`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub errors: Option<BTreeMap<&'static str, Vec<&'static str>>>,
}

/// Readiness
///
/// 200 when this host can serve: the database answers within 2 s, every
/// migration of this binary is applied, the scorer of every questionnaire
/// serves and no plugin folder was refused with nothing serving from it,
/// the scheduler passed within two intervals (when it runs in this
/// process), and the token table has not expired. 503 otherwise, naming
/// each failed check with its problem; details are in the log. One answer
/// serves every probe for a second, so the database is asked at most once
/// a second however many probes arrive; 429 past this client address's
/// share of the probes.
#[utoipa::path(get, path = "/readyz", tag = "operations", responses(
    (status = 200, body = Readiness),
    (status = 503, body = Readiness, description = "Not ready: `errors` names each failed check"),
))]
pub async fn readyz(State(app): State<AppState>) -> Response {
    let checks = app.ready().await;
    let mut errors = BTreeMap::new();
    let mut views = BTreeMap::new();
    for check in checks.iter() {
        let view = match &check.status {
            Status::Ok(detail) => CheckView {
                status: "ok",
                detail: Some(detail.clone()),
                problem: None,
            },
            Status::Unknown(detail) => CheckView {
                status: "unknown",
                detail: Some(detail.clone()),
                problem: None,
            },
            Status::Failed { code, problem } => {
                errors.insert(check.name, vec![*code]);
                CheckView {
                    status: "failed",
                    detail: None,
                    problem: Some(problem.clone()),
                }
            }
        };
        views.insert(check.name, view);
    }
    let ready = errors.is_empty();
    json(
        if ready {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        },
        &Readiness {
            status: if ready { "ready" } else { "not_ready" },
            checks: views,
            errors: (!ready).then_some(errors),
        },
    )
}

/// What this binary is.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"version": "0.1.0", "commit": "3f2c1a9b7d4e", "abi_version": 1, "migration": 13}))]
pub struct Version {
    /// The release (semantic versioning).
    pub version: &'static str,
    /// The commit it was built from (12 hex digits), or `unknown`.
    pub commit: &'static str,
    /// The plugin ABI version it loads.
    pub abi_version: u32,
    /// The highest database migration it carries; `/readyz` says whether
    /// the database has applied it.
    pub migration: i64,
}

/// Version
///
/// The release, commit, plugin ABI and migration level of this binary, as
/// `outcomes --version` prints them. Nothing else: no settings, paths,
/// host names or database details.
#[utoipa::path(get, path = "/version", tag = "operations", responses(
    (status = 200, body = Version),
))]
pub async fn version() -> Response {
    json(
        StatusCode::OK,
        &Version {
            version: build_info::VERSION,
            commit: build_info::COMMIT,
            abi_version: build_info::ABI_VERSION,
            migration: build_info::migration(),
        },
    )
}
