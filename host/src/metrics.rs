//! Counters and gauges for `/metrics`, in the Prometheus text format. Small
//! on purpose: a map from series (name and labels) to a value. Label values
//! are escaped as the format requires.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

/// Help text per metric name, written once above its series.
const HELP: &[(&str, &str, &str)] = &[
    (
        "outcomes_plugin_calls_total",
        "counter",
        "Plugin calls by plugin, kind and result (ok or an error code).",
    ),
    (
        "outcomes_plugin_reloads_total",
        "counter",
        "Plugin folder loads by result (loaded or failed).",
    ),
    (
        "outcomes_plugins_failed",
        "gauge",
        "Plugin folders whose current module was refused (an older version may still serve).",
    ),
    ("outcomes_plugins_serving", "gauge", "Plugins serving."),
    (
        "outcomes_plugin_artifacts_refused_total",
        "counter",
        "Cached compiled plugin artifacts not used, by reason (unverified: MAC wrong, link, unreadable; unloadable); each was recompiled.",
    ),
    (
        "outcomes_plugin_cache_used",
        "gauge",
        "1 when compiled plugin code is cached on disk; 0 when the cache folder or key cannot be trusted and plugins compile on every start.",
    ),
    (
        "outcomes_scoring_failures_total",
        "counter",
        "Responses stored with a scoring failure recorded in their outcome.",
    ),
    (
        "outcomes_definition_reloads_total",
        "counter",
        "Re-imports of questionnaire and protocol definitions by result.",
    ),
    (
        "outcomes_callbacks_total",
        "counter",
        "Fill-out request callback attempts by result (delivered, retry, given_up).",
    ),
    (
        "outcomes_callbacks_refused_total",
        "counter",
        "Callback attempts not sent because their address (in the URL, or every address its host resolved to) is loopback, private, link-local or otherwise not public, and not allowed by --callback-allowed-networks. Each is also counted as failed in outcomes_callbacks_total.",
    ),
    (
        "outcomes_scheduler_ticks_total",
        "counter",
        "Scheduler passes by result (ok or failed).",
    ),
    (
        "outcomes_scheduler_work_total",
        "counter",
        "What scheduler passes did: invitations and responses prepared, occurrences missed (their window closed before they could be prepared), subscriptions stopped at their stop, non-responses registered, callbacks delivered.",
    ),
];

/// The process's metrics.
#[derive(Debug, Default)]
pub struct Metrics {
    series: Mutex<BTreeMap<(&'static str, String), f64>>,
}

impl Metrics {
    /// Adds `n` to a counter.
    pub fn add(&self, name: &'static str, labels: &[(&str, &str)], n: f64) {
        self.update(name, labels, |v| *v += n);
    }

    /// Adds one to a counter.
    pub fn inc(&self, name: &'static str, labels: &[(&str, &str)]) {
        self.update(name, labels, |v| *v += 1.0);
    }

    /// Sets a gauge.
    pub fn set(&self, name: &'static str, labels: &[(&str, &str)], value: f64) {
        self.update(name, labels, |v| *v = value);
    }

    /// The current value of a series (tests and the CLI).
    pub fn get(&self, name: &'static str, labels: &[(&str, &str)]) -> f64 {
        let key = (name, render_labels(labels));
        self.lock().get(&key).copied().unwrap_or(0.0)
    }

    fn update(&self, name: &'static str, labels: &[(&str, &str)], f: impl FnOnce(&mut f64)) {
        let key = (name, render_labels(labels));
        f(self.lock().entry(key).or_insert(0.0));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<(&'static str, String), f64>> {
        // A panic while holding the lock leaves plain numbers behind; they
        // stay usable.
        self.series.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The Prometheus text exposition of every series.
    pub fn render(&self) -> String {
        let series = self.lock();
        let mut out = String::new();
        for (name, kind, help) in HELP {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for ((n, labels), value) in series.iter().filter(|((n, _), _)| n == name) {
                let _ = writeln!(out, "{n}{labels} {value}");
            }
        }
        out
    }
}

/// `{k="v",...}` with the values escaped as the text format requires;
/// empty for no labels. One allocation: it runs on every counted call.
fn render_labels(labels: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (i, (key, value)) in labels.iter().enumerate() {
        out.push(if i == 0 { '{' } else { ',' });
        out.push_str(key);
        out.push_str("=\"");
        for c in value.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    if !labels.is_empty() {
        out.push('}');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_render_in_the_text_format_with_escaped_labels() {
        let m = Metrics::default();
        m.inc(
            "outcomes_plugin_calls_total",
            &[("plugin", "phq9"), ("result", "ok")],
        );
        m.inc(
            "outcomes_plugin_calls_total",
            &[("plugin", "phq9"), ("result", "ok")],
        );
        m.set("outcomes_plugins_serving", &[], 4.0);
        m.inc("outcomes_plugin_reloads_total", &[("folder", "a\"b")]);
        let text = m.render();
        assert!(text.contains("outcomes_plugin_calls_total{plugin=\"phq9\",result=\"ok\"} 2\n"));
        assert!(text.contains("outcomes_plugins_serving 4\n"));
        assert!(text.contains("folder=\"a\\\"b\""));
        m.inc("outcomes_plugin_reloads_total", &[("folder", "c\\d\ne")]);
        assert!(
            m.render()
                .contains("outcomes_plugin_reloads_total{folder=\"c\\\\d\\ne\"} 1\n")
        );
        assert!(text.contains("# TYPE outcomes_plugin_calls_total counter"));
        assert_eq!(m.get("outcomes_plugins_serving", &[]), 4.0);
    }
}
