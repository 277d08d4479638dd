//! `/health`: liveness, database and token table status (`ok`, `stale`,
//! `expired`), for load balancers and operators. Not under `/api/v1` and
//! never authenticated. (`/metrics` is `scrape.rs`.) The token table's
//! state comes from the auth service; nothing here writes.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use utoipa::ToSchema;

use crate::AppState;
use crate::auth::tokens::Freshness;
use crate::error::json;

/// Service health.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok` or `unavailable`.
    pub status: &'static str,
    /// `ok` or `error`.
    pub database: &'static str,
    /// `sqlite` or `postgres`.
    pub backend: &'static str,
    /// The API token table: `ok`; `stale` when the last 3 or more reloads
    /// failed (revocations made since are not seen); `expired` when they
    /// kept failing past `token_reload_failure_limit`, and every API
    /// credential is refused with 503.
    pub tokens: &'static str,
}

/// Health
///
/// 200 when the database answers and the token table has not expired, 503
/// when either fails; 429 past this client address's share of the probes
/// (`/livez`, `/readyz`, `/version` and this one).
#[utoipa::path(get, path = "/health", tag = "operations", responses(
    (status = 200, body = Health),
    (status = 503, body = Health),
))]
pub async fn health(State(app): State<AppState>) -> Response {
    let backend = match app.store().backend() {
        crate::store::Backend::Sqlite => "sqlite",
        crate::store::Backend::Postgres => "postgres",
    };
    let tokens = app.auth().token_freshness();
    let database = match app.store().ping().await {
        Ok(()) => "ok",
        Err(e) => {
            tracing::warn!(error = %e, "health check: database does not answer");
            "error"
        }
    };
    let serving = database == "ok" && tokens != Freshness::Expired;
    json(
        if serving {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        },
        &Health {
            status: if serving { "ok" } else { "unavailable" },
            database,
            backend,
            tokens: tokens.as_str(),
        },
    )
}
