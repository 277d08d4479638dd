//! The service's metrics, served at `/metrics` in the Prometheus text
//! format (docs/operations.md#monitoring). Values live in the `metrics`
//! crate's handles (atomics); metrics-exporter-prometheus renders them.
//! Each [`Metrics`] owns its recorder, never installed as the process's
//! global one: the black-box tests run several apps in one process, and
//! each must count only its own.
//!
//! Hot paths (every request, plugin call, write batch and connection)
//! keep handles found once (`cache`), and take no lock; cold paths
//! (reloads, failures, the scheduler) look a series up by name and labels.
//! No label carries patient data, a path as sent, or anything else a
//! client chooses freely.
//!
//! Order of use: `families` (names, help, buckets) → `cache` → `process`
//! → this file → `http` and `plugins` (the figures of requests and plugin
//! calls).

mod cache;
pub mod families;
pub mod http;
pub mod plugins;
pub mod process;

use ::metrics::{Counter, Gauge, Histogram, Key, KeyName, Label, Level, Metadata, Recorder};
use metrics_exporter_prometheus::{
    Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};

use crate::build_info;
use crate::store::StoreMetrics;
use families::{FAMILIES, Kind};

/// Where our series are registered from, for the recorder (which ignores
/// it).
static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// The metrics of one app.
pub struct Metrics {
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
    process: Option<Process>,
    http: http::Requests,
    plugin_calls: plugins::Calls,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("http", &self.http)
            .field("plugin_calls", &self.plugin_calls)
            .finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// A recorder with every family described, the series whose label
    /// values are known ahead at zero (so alerts see them before the first
    /// event), and the build's `outcomes_build_info`.
    pub fn new() -> Metrics {
        let recorder = recorder();
        for family in FAMILIES {
            let name = KeyName::from_const_str(family.name);
            let help = ::metrics::SharedString::const_str(family.help);
            match family.kind {
                Kind::Counter => recorder.describe_counter(name, None, help),
                Kind::Gauge => recorder.describe_gauge(name, None, help),
                Kind::Histogram => recorder.describe_histogram(name, None, help),
            }
        }
        let handle = recorder.handle();
        let process = process::read().map(|_| Process::register(&recorder));
        let metrics = Metrics {
            recorder,
            handle,
            process,
            http: http::Requests::default(),
            plugin_calls: plugins::Calls::default(),
        };
        // Series an alert watches exist at 0 before their first event, so
        // `rate()` and `increase()` see that event.
        for (attempts, refused) in [
            (families::CALLBACKS, families::CALLBACKS_REFUSED),
            (
                families::ALARM_DELIVERIES,
                families::ALARM_DELIVERIES_REFUSED,
            ),
        ] {
            for result in ["delivered", "retry", "given_up"] {
                metrics.add(attempts, &[("result", result)], 0);
            }
            metrics.add(refused, &[], 0);
        }
        for result in ["ok", "failed"] {
            metrics.add(families::SCHEDULER_TICKS, &[("result", result)], 0);
        }
        metrics.add(families::WRITER_FAILED, &[], 0);
        metrics.set(
            families::BUILD_INFO,
            &[
                ("version", build_info::VERSION),
                ("commit", build_info::COMMIT),
                ("abi_version", &build_info::ABI_VERSION.to_string()),
            ],
            1.0,
        );
        metrics
    }

    /// The counter of `name` with `labels` (keep it where it is used
    /// often).
    pub fn counter(&self, name: &'static str, labels: &[(&str, &str)]) -> Counter {
        self.recorder
            .register_counter(&key(name, labels), &METADATA)
    }

    /// The gauge of `name` with `labels`.
    pub fn gauge(&self, name: &'static str, labels: &[(&str, &str)]) -> Gauge {
        self.recorder.register_gauge(&key(name, labels), &METADATA)
    }

    /// The histogram of `name` with `labels`.
    pub fn histogram(&self, name: &'static str, labels: &[(&str, &str)]) -> Histogram {
        self.recorder
            .register_histogram(&key(name, labels), &METADATA)
    }

    /// Adds one to a counter.
    pub fn inc(&self, name: &'static str, labels: &[(&str, &str)]) {
        self.counter(name, labels).increment(1);
    }

    /// Adds `n` to a counter.
    pub fn add(&self, name: &'static str, labels: &[(&str, &str)], n: u64) {
        self.counter(name, labels).increment(n);
    }

    /// Sets a gauge.
    pub fn set(&self, name: &'static str, labels: &[(&str, &str)], value: f64) {
        self.gauge(name, labels).set(value);
    }

    /// The handles the store records its pool waits and write batches in.
    pub fn store(&self) -> StoreMetrics {
        StoreMetrics {
            pool_wait: self.histogram(families::POOL_WAIT, &[]),
            batch_size: self.histogram(families::WRITER_BATCH, &[]),
            commit: self.histogram(families::WRITER_COMMIT, &[]),
            failed_batches: self.counter(families::WRITER_FAILED, &[]),
        }
    }

    /// The Prometheus text exposition of every series, the process's
    /// figures read now.
    pub fn render(&self) -> String {
        if let Some(process) = &self.process {
            process.refresh();
        }
        self.handle.render()
    }

    /// Folds the histogram values recorded since the last scrape into
    /// their buckets. A scrape does this too; without scrapes the values
    /// would pile up, so the app does it every few seconds.
    pub fn upkeep(&self) {
        self.handle.run_upkeep();
    }
}

/// The Prometheus recorder, with the buckets of every histogram family.
/// Bucket lists are constants checked by the families' test; should one
/// still be refused, that histogram is rendered as a summary instead.
fn recorder() -> PrometheusRecorder {
    let builder = FAMILIES
        .iter()
        .filter(|f| f.kind == Kind::Histogram)
        .try_fold(PrometheusBuilder::new(), |builder, f| {
            builder.set_buckets_for_metric(Matcher::Full(f.name.to_owned()), f.buckets)
        });
    match builder {
        Ok(builder) => builder.build_recorder(),
        Err(e) => {
            tracing::error!(error = %e, "histogram buckets refused; histograms are rendered as summaries");
            PrometheusBuilder::new().build_recorder()
        }
    }
}

fn key(name: &'static str, labels: &[(&str, &str)]) -> Key {
    let labels: Vec<Label> = labels
        .iter()
        .map(|(k, v)| Label::new((*k).to_owned(), (*v).to_owned()))
        .collect();
    Key::from_parts(name, labels)
}

/// The process's figures, as handles set at each scrape.
struct Process {
    resident: Gauge,
    virtual_memory: Gauge,
    open_fds: Gauge,
    max_fds: Gauge,
    cpu: Counter,
}

impl Process {
    fn register(recorder: &PrometheusRecorder) -> Process {
        let gauge = |name| recorder.register_gauge(&Key::from_static_name(name), &METADATA);
        // The start time does not change: set once.
        if let Some(start) = process::read().and_then(|f| f.start_time_seconds) {
            gauge(families::START_TIME).set(start);
        }
        Process {
            resident: gauge(families::RESIDENT_MEMORY),
            virtual_memory: gauge(families::VIRTUAL_MEMORY),
            open_fds: gauge(families::OPEN_FDS),
            max_fds: gauge(families::MAX_FDS),
            cpu: recorder
                .register_counter(&Key::from_static_name(families::CPU_SECONDS), &METADATA),
        }
    }

    fn refresh(&self) {
        let Some(figures) = process::read() else {
            return;
        };
        let set = |gauge: &Gauge, value: Option<u64>| {
            if let Some(v) = value {
                gauge.set(v as f64);
            }
        };
        set(&self.resident, figures.resident_bytes);
        set(&self.virtual_memory, figures.virtual_bytes);
        set(&self.open_fds, figures.open_fds);
        set(&self.max_fds, figures.max_fds);
        if let Some(cpu) = figures.cpu_seconds {
            // The exporter's counters hold whole numbers.
            self.cpu.absolute(cpu as u64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of `series` (name and labels as rendered) in `text`.
    pub(super) fn value(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    }

    #[test]
    fn series_render_in_the_text_format_with_escaped_labels() {
        let m = Metrics::new();
        m.inc(
            "outcomes_plugin_calls_total",
            &[("plugin", "phq9"), ("kind", "scorer"), ("result", "ok")],
        );
        m.add(
            "outcomes_plugin_calls_total",
            &[("plugin", "phq9"), ("kind", "scorer"), ("result", "ok")],
            2,
        );
        m.set("outcomes_plugins_serving", &[], 4.0);
        m.inc("outcomes_plugin_reloads_total", &[("folder", "a\"b")]);
        let text = m.render();
        assert_eq!(
            value(
                &text,
                r#"outcomes_plugin_calls_total{plugin="phq9",kind="scorer",result="ok"}"#
            ),
            Some(3.0),
            "{text}"
        );
        assert_eq!(value(&text, "outcomes_plugins_serving"), Some(4.0));
        assert!(text.contains(r#"folder="a\"b""#), "{text}");
        assert!(text.contains("# TYPE outcomes_plugin_calls_total counter"));
        assert!(text.contains("# HELP outcomes_plugins_serving Plugins serving."));
    }

    #[test]
    fn build_info_and_known_series_are_there_from_the_start() {
        let text = Metrics::new().render();
        let info = format!(
            "outcomes_build_info{{version=\"{}\",commit=\"{}\",abi_version=\"{}\"}}",
            build_info::VERSION,
            build_info::COMMIT,
            build_info::ABI_VERSION
        );
        assert_eq!(value(&text, &info), Some(1.0), "{text}");
        assert_eq!(
            value(&text, r#"outcomes_callbacks_total{result="delivered"}"#),
            Some(0.0)
        );
        assert_eq!(
            value(&text, "outcomes_writer_failed_batches_total"),
            Some(0.0)
        );
        if cfg!(target_os = "linux") {
            assert!(
                value(&text, "outcomes_process_resident_memory_bytes").is_some_and(|v| v > 0.0)
            );
            assert!(value(&text, "outcomes_process_start_time_seconds").is_some_and(|v| v > 1.0e9));
        }
    }

    #[test]
    fn histograms_have_their_buckets() {
        let m = Metrics::new();
        let store = m.store();
        store.batch_size.record(3.0);
        store.commit.record(0.002);
        let text = m.render();
        assert_eq!(
            value(&text, r#"outcomes_writer_batch_size_bucket{le="2"}"#),
            Some(0.0),
            "{text}"
        );
        assert_eq!(
            value(&text, r#"outcomes_writer_batch_size_bucket{le="4"}"#),
            Some(1.0),
            "{text}"
        );
        assert_eq!(value(&text, "outcomes_writer_batch_size_count"), Some(1.0));
        assert_eq!(
            value(&text, "outcomes_writer_commit_duration_seconds_count"),
            Some(1.0)
        );
        assert!(text.contains("# TYPE outcomes_writer_commit_duration_seconds histogram"));
    }

    #[test]
    fn two_apps_count_apart() {
        let (a, b) = (Metrics::new(), Metrics::new());
        a.inc(
            "outcomes_scoring_failures_total",
            &[("questionnaire", "x"), ("code", "trap")],
        );
        let series = r#"outcomes_scoring_failures_total{questionnaire="x",code="trap"}"#;
        assert_eq!(value(&a.render(), series), Some(1.0));
        assert_eq!(value(&b.render(), series), None);
    }
}
