//! The figures of plugin calls, per plugin and kind: calls by result, how
//! long each took, and failures by what went wrong. A successful call (the
//! scoring path of every POST) uses handles kept per plugin; a failure
//! looks its series up, which is rare by nature.

use std::sync::Arc;
use std::time::Duration;

use ::metrics::{Counter, Histogram};
use plugin_sdk::PluginKind;

use super::Metrics;
use super::cache::Handles;
use super::families::{PLUGIN_CALLS, PLUGIN_DURATION, PLUGIN_FAILURES};

/// The handles of each plugin seen so far, scorers and calculators apart.
#[derive(Debug, Default)]
pub struct Calls {
    scorers: Handles<Box<str>, Arc<Series>>,
    calculators: Handles<Box<str>, Arc<Series>>,
}

/// The handles of one plugin.
struct Series {
    ok: Counter,
    duration: Histogram,
}

/// How a failed call failed, for metrics: its error code
/// (`PluginError::code`) and its kind (`PluginError::failure`).
#[derive(Debug, Clone, Copy)]
pub struct Failed {
    pub code: &'static str,
    pub failure: &'static str,
}

fn kind_label(kind: PluginKind) -> &'static str {
    match kind {
        PluginKind::Scorer => "scorer",
        PluginKind::Calculator => "calculator",
    }
}

impl Metrics {
    /// Counts one call of `plugin` that took `took`, failed or not.
    pub fn plugin_call(
        &self,
        plugin: &str,
        kind: PluginKind,
        took: Duration,
        failed: Option<Failed>,
    ) {
        let handles = match kind {
            PluginKind::Scorer => &self.plugin_calls.scorers,
            PluginKind::Calculator => &self.plugin_calls.calculators,
        };
        let kind = kind_label(kind);
        handles.with(
            plugin,
            || {
                let labels = [("plugin", plugin), ("kind", kind)];
                let series = Series {
                    ok: self.counter(
                        PLUGIN_CALLS,
                        &[("plugin", plugin), ("kind", kind), ("result", "ok")],
                    ),
                    duration: self.histogram(PLUGIN_DURATION, &labels),
                };
                (plugin.into(), Arc::new(series))
            },
            |series| {
                series.duration.record(took.as_secs_f64());
                if failed.is_none() {
                    series.ok.increment(1);
                }
            },
        );
        if let Some(Failed { code, failure }) = failed {
            self.inc(
                PLUGIN_CALLS,
                &[("plugin", plugin), ("kind", kind), ("result", code)],
            );
            self.inc(
                PLUGIN_FAILURES,
                &[("plugin", plugin), ("kind", kind), ("failure", failure)],
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::tests::value;

    #[test]
    fn calls_are_counted_and_timed_per_plugin_and_failures_by_kind() {
        let m = Metrics::new();
        let ms = Duration::from_millis(1);
        m.plugin_call("phq9", PluginKind::Scorer, ms, None);
        m.plugin_call("phq9", PluginKind::Scorer, ms, None);
        let fuel = Failed {
            code: "out_of_fuel",
            failure: "fuel",
        };
        m.plugin_call("phq9", PluginKind::Scorer, ms, Some(fuel));
        m.plugin_call("series", PluginKind::Calculator, ms, None);
        let text = m.render();
        let calls = |result: &str| {
            value(
                &text,
                &format!(
                    r#"outcomes_plugin_calls_total{{plugin="phq9",kind="scorer",result="{result}"}}"#
                ),
            )
        };
        assert_eq!(calls("ok"), Some(2.0), "{text}");
        assert_eq!(calls("out_of_fuel"), Some(1.0), "{text}");
        assert_eq!(
            value(
                &text,
                r#"outcomes_plugin_call_failures_total{plugin="phq9",kind="scorer",failure="fuel"}"#
            ),
            Some(1.0)
        );
        assert_eq!(
            value(
                &text,
                r#"outcomes_plugin_call_duration_seconds_count{plugin="phq9",kind="scorer"}"#
            ),
            Some(3.0)
        );
        assert_eq!(
            value(
                &text,
                r#"outcomes_plugin_call_duration_seconds_count{plugin="series",kind="calculator"}"#
            ),
            Some(1.0)
        );
    }
}
