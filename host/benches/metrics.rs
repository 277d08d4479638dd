//! What the metrics cost (host/src/metrics/), measured apart from the
//! noise of a shared machine:
//!
//! - `per_request`: the metrics work of one scored POST on its hot path:
//!   the request counted and timed by route, method and status, the
//!   in-flight gauge up and down, the scorer call counted and timed. Goal:
//!   well under 1 % of a POST (which takes about a millisecond).
//! - `per_request_4_threads`: the same from four threads at once, on the
//!   same series (handles are shared atomics, read without locks).
//! - `scrape_20_plugins`: rendering `/metrics` for a busy host with 20
//!   plugins loaded and called (each with its call, latency and failure
//!   series, its folder's reloads), every documented route answered with
//!   four statuses, the writer, pool and scheduler figures, and the process
//!   read from /proc. The scrape's size is printed first.
//!
//! Run: `cargo bench -p host --bench metrics`

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use host::metrics::Metrics;
use host::metrics::plugins::Failed;
use plugin_sdk::PluginKind;

const ROUTE: &str = "/api/v1/dossiers/{dossier_id}/responses";

fn one_request(metrics: &Metrics) {
    let gauge = metrics.requests_in_flight();
    gauge.increment(1.0);
    metrics.plugin_call("phq9", PluginKind::Scorer, Duration::from_micros(40), None);
    gauge.decrement(1.0);
    metrics.http_request(Some(ROUTE), "POST", 201, Duration::from_micros(900));
}

/// A host's metrics after a day of varied traffic, with `plugins` plugins.
fn busy(plugins: usize) -> Metrics {
    let metrics = Metrics::new();
    let doc = host::api::document();
    for route in doc.paths.paths.keys() {
        for (method, status) in [("GET", 200), ("POST", 201), ("GET", 401), ("GET", 404)] {
            metrics.http_request(
                Some(route.as_str()),
                method,
                status,
                Duration::from_millis(2),
            );
        }
    }
    metrics.http_request(None, "GET", 404, Duration::from_micros(200));
    let trap = Failed {
        code: "trap",
        failure: "trap",
    };
    let fuel = Failed {
        code: "out_of_fuel",
        failure: "fuel",
    };
    for i in 0..plugins {
        let name = format!("plugin_{i:02}");
        let kind = if i % 4 == 3 {
            PluginKind::Calculator
        } else {
            PluginKind::Scorer
        };
        for failed in [None, Some(trap), Some(fuel)] {
            metrics.plugin_call(&name, kind, Duration::from_micros(60), failed);
        }
        metrics.inc(
            "outcomes_plugin_reloads_total",
            &[("folder", &name), ("result", "loaded")],
        );
        metrics.inc(
            "outcomes_scoring_failures_total",
            &[("questionnaire", &name), ("code", "trap")],
        );
    }
    metrics.set("outcomes_plugins_serving", &[], plugins as f64);
    let store = metrics.store();
    for i in 0..100 {
        store.pool_wait.record(0.0002 * f64::from(i));
        store.batch_size.record(f64::from(i % 40 + 1));
        store.commit.record(0.001 * f64::from(i % 7 + 1));
    }
    for step in host::scheduler::STEPS {
        for result in ["ok", "failed"] {
            metrics
                .histogram(
                    "outcomes_scheduler_step_duration_seconds",
                    &[("step", step.name), ("result", result)],
                )
                .record(0.01);
        }
    }
    metrics
}

fn bench(c: &mut Criterion) {
    let metrics = Metrics::new();
    c.bench_function("per_request", |b| {
        b.iter(|| one_request(black_box(&metrics)))
    });

    let shared = Arc::new(Metrics::new());
    c.bench_function("per_request_4_threads", |b| {
        b.iter_custom(|iterations| {
            let started = std::time::Instant::now();
            let threads: Vec<_> = (0..4)
                .map(|_| {
                    let m = shared.clone();
                    std::thread::spawn(move || {
                        for _ in 0..iterations {
                            one_request(&m);
                        }
                    })
                })
                .collect();
            for t in threads {
                let _ = t.join();
            }
            // Time per request of the four threads together.
            started.elapsed() / 4
        })
    });

    let busy = busy(20);
    let text = busy.render();
    eprintln!(
        "scrape_20_plugins: {} bytes, {} lines, {} series lines",
        text.len(),
        text.lines().count(),
        text.lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .count()
    );
    c.bench_function("scrape_20_plugins", |b| b.iter(|| black_box(busy.render())));
}

criterion_group!(benches, bench);
criterion_main!(benches);
