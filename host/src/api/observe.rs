//! The figures of every request, API and fill-out pages alike
//! (`metrics/http.rs`): `startup.rs` lays this middleware over the whole
//! router with `Router::layer`, so it runs after routing and sees the
//! matched route's template, never the path as sent.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;

use crate::metrics::Metrics;
use crate::metrics::http::method_label;

/// Takes one off the in-flight gauge when the request is over, answered or
/// dropped (a client that went away).
struct InFlight<'a>(&'a ::metrics::Gauge);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

/// Times the request and counts its answer by route, method and status.
pub async fn record(State(metrics): State<Arc<Metrics>>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = req.extensions().get::<MatchedPath>().cloned();
    let method = method_label(req.method().as_str());
    let gauge = metrics.requests_in_flight();
    gauge.increment(1.0);
    let _in_flight = InFlight(gauge);
    let response = next.run(req).await;
    metrics.http_request(
        route.as_ref().map(MatchedPath::as_str),
        method,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::routing::get;
    use tower::ServiceExt;

    async fn send(router: &Router, method: &str, path: &str) -> u16 {
        let req = Request::builder()
            .method(method)
            .uri(path)
            .body(axum::body::Body::empty())
            .expect("a request");
        router
            .clone()
            .oneshot(req)
            .await
            .map(|r| r.status().as_u16())
            .unwrap_or_default()
    }

    fn value(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    }

    #[tokio::test]
    async fn requests_are_counted_by_route_template_never_by_path() {
        let metrics = Arc::new(Metrics::new());
        let router = Router::new()
            .route("/items/{id}", get(|| async { "item" }))
            .layer(axum::middleware::from_fn_with_state(
                metrics.clone(),
                record,
            ));
        assert_eq!(send(&router, "GET", "/items/1").await, 200);
        assert_eq!(send(&router, "GET", "/items/2").await, 200);
        assert_eq!(send(&router, "GET", "/secret/patient-42").await, 404);
        assert_eq!(send(&router, "BREW", "/items/3").await, 405);
        let text = metrics.render();
        let ok = r#"outcomes_http_requests_total{route="/items/{id}",method="GET",status="200"}"#;
        assert_eq!(value(&text, ok), Some(2.0), "{text}");
        let missing =
            r#"outcomes_http_requests_total{route="unmatched",method="GET",status="404"}"#;
        assert_eq!(value(&text, missing), Some(1.0), "{text}");
        let odd =
            r#"outcomes_http_requests_total{route="/items/{id}",method="other",status="405"}"#;
        assert_eq!(value(&text, odd), Some(1.0), "{text}");
        assert!(!text.contains("patient-42"), "{text}");
        assert_eq!(value(&text, "outcomes_http_requests_in_flight"), Some(0.0));
    }
}
