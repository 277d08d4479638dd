//! `/metrics`: the Prometheus text exposition of the app's metrics
//! (`crate::metrics`; docs/operations.md#monitoring). It carries no patient
//! data, but it tells an attacker how busy the service is, which plugins
//! serve and how each request fares, so it is not public: it is served
//! without credentials only on a listener of its own (`metrics_listen`,
//! loopback by default, [`router`]), and on the main listener only to
//! `Authorization: Bearer <secret>` with the secret of
//! `metrics_bearer_file` ([`MetricsBearer`](crate::auth::metrics_bearer::MetricsBearer)); without that setting the main
//! listener answers it 404.
//!
//! The bearer is refused like API credentials: over plain HTTP from
//! outside loopback and trusted proxies it is not read (403
//! `https_required`), a wrong one is 401, and refusals count against the
//! client address's rate limit, held back past it.

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::AppState;
use crate::auth::guard::client_of;
use crate::auth::tokens::Credentials;
use crate::error::{ApiError, ErrorBody};
use crate::metrics::families::{POOL_CONNECTIONS, POOL_MAX_CONNECTIONS};

const SCRAPE_CHALLENGE: &str = "Bearer realm=\"metrics\"";
const WRONG_SCRAPE_CHALLENGE: &str = "Bearer realm=\"metrics\", error=\"invalid_token\"";

/// Metrics
///
/// Prometheus text format: requests by route, method and status with their
/// latency; the writer's batches and commits; waits for database
/// connections; plugin calls, latency and failures per plugin; scheduler
/// steps; callbacks; build and process figures. Served without credentials
/// only on the `metrics_listen` address (loopback by default). Here, on
/// the API's address, only with `Authorization: Bearer <secret>`, the
/// secret of the `metrics_bearer_file` setting; 404 when that is not set.
#[utoipa::path(get, path = "/metrics", tag = "operations", responses(
    (status = 200, description = "Prometheus text exposition", content_type = "text/plain; version=0.0.4"),
    (status = 401, description = "`{\"errors\":{\"base\":[\"unauthorized\"]}}` with `WWW-Authenticate: Bearer realm=\"metrics\"`: no bearer, or not the configured one", body = ErrorBody),
    (status = 403, description = "`{\"errors\":{\"base\":[\"https_required\"]}}`: a bearer over plain HTTP from outside loopback and the trusted proxies, refused unread", body = ErrorBody),
    (status = 404, description = "`{\"errors\":{\"base\":[\"not_found\"]}}`: no metrics_bearer_file is set, so /metrics is served on the metrics_listen address only", body = ErrorBody),
    (status = 429, description = "`{\"errors\":{\"base\":[\"too_many_requests\"]}}` with `Retry-After` (seconds): this client address made too many requests without valid credentials", body = ErrorBody),
))]
pub async fn metrics(State(app): State<AppState>, req: Request) -> Response {
    let Some(bearer) = app.metrics_bearer() else {
        return ApiError::NotFound("base").into_response();
    };
    let auth = app.auth();
    let remote = client_of(auth, req.extensions(), req.headers());
    if let Err(over) = auth.limits().held_back(remote.rate_key()) {
        return ApiError::TooManyRequests(over.0).into_response();
    }
    let header = req.headers().get(header::AUTHORIZATION);
    let refusal = if header.is_some() && !auth.is_secure() && !remote.proxied_https {
        ApiError::Forbidden("https_required")
    } else {
        match header
            .and_then(|v| v.to_str().ok())
            .and_then(Credentials::parse)
        {
            Some(Credentials::Bearer(given)) if bearer.matches(given) => return exposition(&app),
            Some(Credentials::Bearer(_)) => ApiError::Unauthorized(WRONG_SCRAPE_CHALLENGE),
            _ => ApiError::Unauthorized(SCRAPE_CHALLENGE),
        }
    };
    match auth.limits().admit_anonymous(remote.rate_key()) {
        Ok(()) => refusal.into_response(),
        Err(over) => ApiError::TooManyRequests(over.0).into_response(),
    }
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
