//! The figures of HTTP requests: how many, and how long each took, by
//! matched route, method and status. The route is the router's path
//! template (`/api/v1/dossiers/{dossier_id}/responses`), never the path as
//! sent, so ids make no series of their own; a request no route matched is
//! `unmatched`. Methods outside the standard ones are `other`: a client
//! cannot add series by inventing methods.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use ::metrics::{Counter, Gauge, Histogram};

use super::Metrics;
use super::cache::Handles;
use super::families::{HTTP_DURATION, HTTP_IN_FLIGHT, HTTP_REQUESTS};

/// The label of requests no route matched.
pub const UNMATCHED: &str = "unmatched";

/// The handles of each route, method and status seen so far: by route,
/// then by method and status (two lock-free lookups, no allocation).
#[derive(Default)]
pub struct Requests {
    routes: Handles<Box<str>, Arc<Route>>,
    in_flight: OnceLock<Gauge>,
}

impl std::fmt::Debug for Requests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Requests")
            .field("routes", &self.routes)
            .finish_non_exhaustive()
    }
}

/// The handles of one route, by method and status.
#[derive(Debug, Default)]
struct Route {
    series: Handles<(&'static str, u16), Arc<Series>>,
}

/// The handles of one route, method and status.
struct Series {
    requests: Counter,
    duration: Histogram,
}

/// The method as a label: the standard ones by name, anything else
/// `other`.
pub fn method_label(method: &str) -> &'static str {
    const STANDARD: [&str; 9] = [
        "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "TRACE", "CONNECT",
    ];
    STANDARD
        .into_iter()
        .find(|m| *m == method)
        .unwrap_or("other")
}

impl Metrics {
    /// The gauge of requests being handled.
    pub fn requests_in_flight(&self) -> &Gauge {
        self.http
            .in_flight
            .get_or_init(|| self.gauge(HTTP_IN_FLIGHT, &[]))
    }

    /// Counts one answered request: `route` is the matched route's
    /// template (`None`: no route matched), `method` from
    /// [`method_label`].
    pub fn http_request(
        &self,
        route: Option<&str>,
        method: &'static str,
        status: u16,
        took: Duration,
    ) {
        let route = route.unwrap_or(UNMATCHED);
        self.http.routes.with(
            route,
            || (route.into(), Arc::default()),
            |handles| {
                handles.series.with(
                    &(method, status),
                    || {
                        let status_text = status.to_string();
                        let labels = [
                            ("route", route),
                            ("method", method),
                            ("status", status_text.as_str()),
                        ];
                        let series = Series {
                            requests: self.counter(HTTP_REQUESTS, &labels),
                            duration: self.histogram(HTTP_DURATION, &labels),
                        };
                        ((method, status), Arc::new(series))
                    },
                    |series| {
                        series.requests.increment(1);
                        series.duration.record(took.as_secs_f64());
                    },
                )
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::tests::value;

    #[test]
    fn requests_are_counted_by_route_method_and_status() {
        let m = Metrics::new();
        let ms = Duration::from_millis(3);
        m.http_request(Some("/items/{id}"), method_label("GET"), 200, ms);
        m.http_request(Some("/items/{id}"), method_label("GET"), 200, ms);
        m.http_request(None, method_label("GET"), 404, ms);
        m.http_request(Some("/items/{id}"), method_label("BREW"), 405, ms);
        let text = m.render();
        let ok = r#"outcomes_http_requests_total{route="/items/{id}",method="GET",status="200"}"#;
        assert_eq!(value(&text, ok), Some(2.0), "{text}");
        let missing =
            r#"outcomes_http_requests_total{route="unmatched",method="GET",status="404"}"#;
        assert_eq!(value(&text, missing), Some(1.0), "{text}");
        let odd =
            r#"outcomes_http_requests_total{route="/items/{id}",method="other",status="405"}"#;
        assert_eq!(value(&text, odd), Some(1.0), "{text}");
        let count = r#"outcomes_http_request_duration_seconds_count{route="/items/{id}",method="GET",status="200"}"#;
        assert_eq!(value(&text, count), Some(2.0), "{text}");
        let fast = r#"outcomes_http_request_duration_seconds_bucket{route="/items/{id}",method="GET",status="200",le="0.0025"}"#;
        assert_eq!(value(&text, fast), Some(0.0), "{text}");
        let slower = r#"outcomes_http_request_duration_seconds_bucket{route="/items/{id}",method="GET",status="200",le="0.005"}"#;
        assert_eq!(value(&text, slower), Some(2.0), "{text}");
    }
}
