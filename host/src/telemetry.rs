//! Logging: tracing to stderr, human or JSON, with a request id on every
//! line a request causes; and the HTTP layers that attach it.
//!
//! Each request ends in one `answered` line: its span (request id, method,
//! matched route, the verified token's key, which the auth guard records)
//! with its status and latency. The route is the pattern that matched
//! (`/fill_out/respondents/{id}`), never the path or query as sent: those
//! carry dossier ids and the signatures of fill-out links. Nothing here
//! reads a header that holds a credential (docs/operations.md#logs).
//!
//! Colour codes only when stderr is a terminal and `NO_COLOR` is not set. A
//! panic in a handler is caught and answered with the fixed 500 body.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::MatchedPath;
use axum::http::{HeaderValue, Request, Response};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::trace::{DefaultOnFailure, TraceLayer};
use tracing::{Level, Span};
use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;
use crate::error::ApiError;

/// Installs the global subscriber. `filter` is an EnvFilter directive;
/// `RUST_LOG`, when set, wins. Colour codes only when stderr is a terminal
/// and `NO_COLOR` is not set: a file or pipe gets plain text.
pub fn init(format: LogFormat, filter: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(filter));
    let ansi = format == LogFormat::Human
        && colours(
            std::io::stderr().is_terminal(),
            std::env::var_os("NO_COLOR").as_deref(),
        );
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    let _ = match format {
        LogFormat::Human => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

/// Whether to write colour codes: to a terminal only, and not when
/// `NO_COLOR` holds anything (<https://no-color.org>: set and not empty).
fn colours(terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

/// The span field the auth guard fills with the verified token's key.
pub const TOKEN_FIELD: &str = "token";

/// Names the verified token's key (never its secret) on the lines of the
/// request being handled.
pub fn record_token(key: &str) {
    Span::current().record(TOKEN_FIELD, key);
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
            let request_id = req
                .headers()
                .get("x-request-id")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            // `Router::layer` wraps each route, so the route is known here.
            let route = req
                .extensions()
                .get::<MatchedPath>()
                .map_or("unmatched", MatchedPath::as_str);
            tracing::info_span!(
                "request",
                request_id,
                method = %req.method(),
                route,
                token = tracing::field::Empty,
            )
        })
        .on_request(())
        .on_response(
            |response: &Response<axum::body::Body>, latency: Duration, _: &Span| {
                tracing::info!(
                    status = response.status().as_u16(),
                    latency_ms = latency.as_micros() as f64 / 1000.0,
                    "answered"
                );
            },
        )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_only_at_a_terminal_without_no_color() {
        let set = Some(std::ffi::OsStr::new("1"));
        let empty = Some(std::ffi::OsStr::new(""));
        assert!(colours(true, None));
        assert!(colours(true, empty));
        assert!(!colours(true, set));
        assert!(!colours(false, None));
    }
}
