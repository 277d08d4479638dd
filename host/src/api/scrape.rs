//! `/metrics`: the Prometheus text exposition of the app's metrics
//! (`crate::metrics`; docs/operations.md#monitoring). Not authenticated,
//! like `/health`: it carries no patient data. Served on the main listener,
//! or, when `metrics_listen` is set, only on a listener of its own
//! ([`router`]), and then the main listener answers it 404.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::metrics::families::{POOL_CONNECTIONS, POOL_MAX_CONNECTIONS};

/// Metrics
///
/// Prometheus text format: requests by route, method and status with their
/// latency; the writer's batches and commits; waits for database
/// connections; plugin calls, latency and failures per plugin; scheduler
/// steps; callbacks; build and process figures. Not authenticated, like
/// `/health`; it carries no patient data. 404 when `metrics_listen` serves
/// it on another address.
#[utoipa::path(get, path = "/metrics", tag = "operations", responses(
    (status = 200, description = "Prometheus text exposition", content_type = "text/plain; version=0.0.4"),
    (status = 404, description = "`{\"errors\":{\"base\":[\"not_found\"]}}`: metrics_listen serves /metrics on its own address instead", body = ErrorBody),
))]
pub async fn metrics(State(app): State<AppState>) -> Response {
    if app.config().metrics_listen.is_some() {
        return ApiError::NotFound("base").into_response();
    }
    exposition(&app)
}

/// The scrape, wherever it is served: the pool's connections counted now,
/// then every series.
fn exposition(app: &AppState) -> Response {
    let metrics = app.metrics();
    let (open, idle, max) = app.store().pool_connections();
    metrics.set(POOL_CONNECTIONS, &[("state", "idle")], idle as f64);
    metrics.set(
        POOL_CONNECTIONS,
        &[("state", "in_use")],
        open.saturating_sub(idle) as f64,
    );
    metrics.set(POOL_MAX_CONNECTIONS, &[], f64::from(max));
    let mut response = Response::new(axum::body::Body::from(metrics.render()));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

/// The router of the `metrics_listen` address: `/metrics`, and 404 for
/// anything else.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(|State(app): State<AppState>| async move { exposition(&app) }),
        )
        .fallback(|| async { ApiError::NotFound("base").into_response() })
        .with_state(state)
}
