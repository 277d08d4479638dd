//! Logging: tracing to stderr, human or JSON, with a request id on every
//! line a request causes; and the HTTP layers that attach it.

use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::http::{HeaderValue, Request};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::trace::{DefaultOnFailure, TraceLayer};
use tracing::Level;
use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;
use crate::error::ApiError;

/// Installs the global subscriber. `filter` is an EnvFilter directive;
/// `RUST_LOG`, when set, wins.
pub fn init(format: LogFormat, filter: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(filter));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Human => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

/// Request ids: a per-process random prefix and a counter, short and unique
/// enough to follow one request through the logs.
#[derive(Debug, Clone)]
struct Ids {
    prefix: u32,
    next: std::sync::Arc<AtomicU64>,
}

impl MakeRequestId for Ids {
    fn make_request_id<B>(&mut self, _: &Request<B>) -> Option<RequestId> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        HeaderValue::from_str(&format!("{:08x}-{n}", self.prefix))
            .ok()
            .map(RequestId::new)
    }
}

/// Wraps the router: request id in and out, a span per request, panics
/// turned into the 500 body.
pub fn layer(router: Router) -> Router {
    let prefix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() ^ std::process::id())
        .unwrap_or_default();
    let ids = Ids {
        prefix,
        next: Default::default(),
    };
    let trace = TraceLayer::new_for_http()
        .make_span_with(|req: &Request<_>| {
            let id = req
                .headers()
                .get("x-request-id")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            tracing::info_span!("request", id, method = %req.method(), path = %req.uri().path())
        })
        .on_request(())
        .on_response(tower_http::trace::DefaultOnResponse::new().level(Level::DEBUG))
        .on_failure(DefaultOnFailure::new().level(Level::WARN));
    router
        .layer(CatchPanicLayer::custom(
            |_: Box<dyn std::any::Any + Send>| {
                axum::response::IntoResponse::into_response(ApiError::Internal(anyhow::anyhow!(
                    "a request handler panicked"
                )))
            },
        ))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(trace)
        .layer(SetRequestIdLayer::x_request_id(ids))
}
