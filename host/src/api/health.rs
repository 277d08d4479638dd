//! `/health`: liveness and database status, for load balancers and
//! operators. Not under `/api/v1` and never authenticated.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use utoipa::ToSchema;

use crate::AppState;
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
}

/// Health
///
/// 200 when the database answers, 503 when it does not.
#[utoipa::path(get, path = "/health", tag = "operations", responses(
    (status = 200, body = Health),
    (status = 503, body = Health),
))]
pub async fn health(State(app): State<AppState>) -> Response {
    let backend = match app.store().backend() {
        crate::store::Backend::Sqlite => "sqlite",
        crate::store::Backend::Postgres => "postgres",
    };
    match app.store().ping().await {
        Ok(()) => json(
            StatusCode::OK,
            &Health {
                status: "ok",
                database: "ok",
                backend,
            },
        ),
        Err(e) => {
            tracing::warn!(error = %e, "health check: database does not answer");
            json(
                StatusCode::SERVICE_UNAVAILABLE,
                &Health {
                    status: "unavailable",
                    database: "error",
                    backend,
                },
            )
        }
    }
}

/// Metrics
///
/// Prometheus text format: plugin calls by result, plugin reloads, plugins
/// serving and refused, scoring failures. Not authenticated, like
/// `/health`; it carries no patient data.
#[utoipa::path(get, path = "/metrics", tag = "operations", responses(
    (status = 200, description = "Prometheus text exposition", content_type = "text/plain; version=0.0.4"),
))]
pub async fn metrics(State(app): State<AppState>) -> Response {
    let mut response = Response::new(axum::body::Body::from(app.metrics().render()));
    response.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}
