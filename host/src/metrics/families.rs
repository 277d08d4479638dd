//! Every metric family the service exposes: its name, type, help text and,
//! for histograms, its buckets. One list, so `/metrics` describes each
//! family and docs/operations.md#monitoring can be checked against it.
//! Names carry their unit in the base unit (seconds, bytes); counters end
//! in `_total`.

/// What kind of series a family holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// One family.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    pub name: &'static str,
    pub kind: Kind,
    pub help: &'static str,
    /// Upper bounds of the buckets (histograms only).
    pub buckets: &'static [f64],
}

// HTTP (metrics/http.rs).
pub const HTTP_REQUESTS: &str = "outcomes_http_requests_total";
pub const HTTP_DURATION: &str = "outcomes_http_request_duration_seconds";
pub const HTTP_IN_FLIGHT: &str = "outcomes_http_requests_in_flight";
// Storage (store/pool.rs, store/writer/commit.rs).
pub const POOL_WAIT: &str = "outcomes_database_pool_wait_seconds";
pub const POOL_CONNECTIONS: &str = "outcomes_database_pool_connections";
pub const POOL_MAX_CONNECTIONS: &str = "outcomes_database_pool_max_connections";
pub const WRITER_BATCH: &str = "outcomes_writer_batch_size";
pub const WRITER_COMMIT: &str = "outcomes_writer_commit_duration_seconds";
pub const WRITER_FAILED: &str = "outcomes_writer_failed_batches_total";
// Plugins (plugins/, scoring.rs).
pub const PLUGIN_CALLS: &str = "outcomes_plugin_calls_total";
pub const PLUGIN_DURATION: &str = "outcomes_plugin_call_duration_seconds";
pub const PLUGIN_FAILURES: &str = "outcomes_plugin_call_failures_total";
// Shadow scoring (shadow/, plugins/mod.rs).
pub const SHADOW_CALLS: &str = "outcomes_shadow_calls_total";
pub const SHADOW_DIFFERENCES: &str = "outcomes_shadow_differences_total";
pub const SHADOW_DROPPED: &str = "outcomes_shadow_dropped_total";
pub const CANDIDATES_REFUSED: &str = "outcomes_plugin_candidates_refused";
// Scheduler (scheduler/).
pub const SCHEDULER_TICKS: &str = "outcomes_scheduler_ticks_total";
pub const SCHEDULER_STEP: &str = "outcomes_scheduler_step_duration_seconds";
pub const SCHEDULER_BATCHES: &str = "outcomes_scheduler_step_batches_total";
pub const SCHEDULER_LAST: &str = "outcomes_scheduler_last_pass_timestamp_seconds";
// Callbacks (scheduler/callbacks.rs).
pub const CALLBACKS: &str = "outcomes_callbacks_total";
pub const CALLBACKS_REFUSED: &str = "outcomes_callbacks_refused_total";
// Alarms (scheduler/steps.rs, api/alarms.rs).
pub const ALARMS: &str = "outcomes_alarms";
pub const ALARMS_OVERDUE: &str = "outcomes_alarms_overdue";
pub const ALARM_ACKNOWLEDGE: &str = "outcomes_alarm_time_to_acknowledge_seconds";
// Alarm deliveries (scheduler/alarm_delivery.rs).
pub const ALARM_DELIVERIES: &str = "outcomes_alarm_deliveries_total";
pub const ALARM_DELIVERIES_REFUSED: &str = "outcomes_alarm_deliveries_refused_total";
// The binary (build_info.rs) and the process (metrics/process.rs).
pub const BUILD_INFO: &str = "outcomes_build_info";
pub const RESIDENT_MEMORY: &str = "outcomes_process_resident_memory_bytes";
pub const VIRTUAL_MEMORY: &str = "outcomes_process_virtual_memory_bytes";
pub const OPEN_FDS: &str = "outcomes_process_open_fds";
pub const MAX_FDS: &str = "outcomes_process_max_fds";
pub const CPU_SECONDS: &str = "outcomes_process_cpu_seconds_total";
pub const START_TIME: &str = "outcomes_process_start_time_seconds";

/// Request latencies: 1 ms to 10 s (a POST commits in a few ms; the body
/// and header timeouts are seconds).
const REQUEST_SECONDS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Connection waits: 100 µs (a free connection) to the 10 s acquire
/// timeout (store/mod.rs `StoreOptions`).
const WAIT_SECONDS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];
/// Commits: an fsync takes about a millisecond on an SSD, much longer on a
/// disk that is struggling.
const COMMIT_SECONDS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];
/// Writes per batch, up to the writer's 512 (store/writer/mod.rs).
const BATCH_WRITES: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0];
/// Plugin calls: a scorer takes tens of microseconds; a deadline stops a
/// call after seconds (plugins/limits.rs).
const CALL_SECONDS: &[f64] = &[
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5,
];
/// Scheduler steps: a batch of 500 subscriptions to whole minutes of
/// callbacks to slow receivers.
const STEP_SECONDS: &[f64] = &[
    0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0,
];

/// Time to acknowledge an alarm: a minute to days (the default deadline
/// is 4 hours).
const ACKNOWLEDGE_SECONDS: &[f64] = &[
    60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0, 28800.0, 86400.0, 259200.0,
];

const fn counter(name: &'static str, help: &'static str) -> Family {
    Family {
        name,
        kind: Kind::Counter,
        help,
        buckets: &[],
    }
}

const fn gauge(name: &'static str, help: &'static str) -> Family {
    Family {
        name,
        kind: Kind::Gauge,
        help,
        buckets: &[],
    }
}

const fn histogram(name: &'static str, help: &'static str, buckets: &'static [f64]) -> Family {
    Family {
        name,
        kind: Kind::Histogram,
        help,
        buckets,
    }
}

/// Every family, in the order docs/operations.md#monitoring lists them.
pub const FAMILIES: &[Family] = &[
    counter(
        HTTP_REQUESTS,
        "HTTP requests answered, by route (the router's path template; unmatched when none matched), method and status.",
    ),
    histogram(
        HTTP_DURATION,
        "Time from routing a request to its answer's headers, by route, method and status.",
        REQUEST_SECONDS,
    ),
    gauge(HTTP_IN_FLIGHT, "HTTP requests being handled now."),
    histogram(
        POOL_WAIT,
        "Time a read waited for a connection from the database pool (timed-out waits included).",
        WAIT_SECONDS,
    ),
    gauge(
        POOL_CONNECTIONS,
        "Open connections of the database read pool at the scrape, by state (idle or in_use).",
    ),
    gauge(
        POOL_MAX_CONNECTIONS,
        "The most connections the read pool opens (max_connections); the writer has one more of its own.",
    ),
    histogram(
        WRITER_BATCH,
        "Writes the group-commit writer stored in one transaction.",
        BATCH_WRITES,
    ),
    histogram(
        WRITER_COMMIT,
        "Time the writer took for one batch, from BEGIN to the end of COMMIT (the fsync included).",
        COMMIT_SECONDS,
    ),
    counter(
        WRITER_FAILED,
        "Write batches whose transaction failed; every write in them was answered with the error.",
    ),
    counter(
        PLUGIN_CALLS,
        "Plugin calls by plugin, kind and result (ok or an error code).",
    ),
    histogram(
        PLUGIN_DURATION,
        "Time a plugin call took once it had an instance slot, by plugin and kind.",
        CALL_SECONDS,
    ),
    counter(
        PLUGIN_FAILURES,
        "Failed plugin calls by plugin, kind and failure: trap, fuel, deadline, memory, output, input, refused, busy or host.",
    ),
    counter(
        SHADOW_CALLS,
        "Calls of candidate scorer versions in the shadow of the serving ones, by plugin, kind and result.",
    ),
    counter(
        SHADOW_DIFFERENCES,
        "Responses a candidate scorer version scored differently from the serving version, by plugin.",
    ),
    counter(
        SHADOW_DROPPED,
        "Shadow-scoring jobs dropped because the worker's queue was full, by plugin.",
    ),
    counter(
        "outcomes_scoring_failures_total",
        "Responses stored with a scoring failure recorded in their outcome.",
    ),
    counter(
        "outcomes_plugin_reloads_total",
        "Plugin folder loads by result (loaded or failed).",
    ),
    gauge(
        CANDIDATES_REFUSED,
        "Candidate scorer rows in the database this host refused to use (seal not valid under its secrets key, module not in plugin_allow, missing or refused): they serve nothing.",
    ),
    gauge("outcomes_plugins_serving", "Plugins serving."),
    gauge(
        "outcomes_plugins_failed",
        "Plugin folders whose current module was refused (an older version may still serve).",
    ),
    counter(
        "outcomes_plugin_artifacts_refused_total",
        "Cached compiled plugin artifacts not used, by reason (unverified: MAC wrong, link, unreadable; unloadable); each was recompiled.",
    ),
    gauge(
        "outcomes_plugin_cache_used",
        "1 when compiled plugin code is cached on disk; 0 when the cache folder or key cannot be trusted and plugins compile on every start.",
    ),
    counter(
        "outcomes_definition_reloads_total",
        "Re-imports of questionnaire and protocol definitions by result.",
    ),
    counter(
        SCHEDULER_TICKS,
        "Scheduler passes by result (ok or failed).",
    ),
    histogram(
        SCHEDULER_STEP,
        "Time one step of a scheduler pass took (all its batches), by step and result.",
        STEP_SECONDS,
    ),
    counter(SCHEDULER_BATCHES, "Batches scheduler steps ran, by step."),
    gauge(
        SCHEDULER_LAST,
        "When the last scheduler pass that succeeded ran (Unix seconds).",
    ),
    counter(
        "outcomes_scheduler_work_total",
        "What scheduler passes did: invitations and responses prepared, occurrences missed (their window closed before they could be prepared), subscriptions stopped at their stop, non-responses registered, callbacks delivered, sessions purged, alarms escalated and delivered.",
    ),
    counter(
        CALLBACKS,
        "Fill-out request callback attempts by result (delivered, retry, given_up).",
    ),
    counter(
        CALLBACKS_REFUSED,
        "Callback attempts not sent because their address (in the URL, or every address its host resolved to) is loopback, private, link-local or otherwise not public, and not allowed by --callback-allowed-networks. Each is also counted in outcomes_callbacks_total as retry or given_up.",
    ),
    gauge(
        ALARMS,
        "Alarms waiting for someone, by state (open, acknowledged, escalated), as of this host's last scheduler pass.",
    ),
    gauge(
        ALARMS_OVERDUE,
        "Alarms past their deadline that nobody acknowledged (open or escalated), as of this host's last scheduler pass.",
    ),
    histogram(
        ALARM_ACKNOWLEDGE,
        "Time from an alarm being raised to its acknowledgement, by action (alarm or attention), for the acknowledgements this host took.",
        ACKNOWLEDGE_SECONDS,
    ),
    counter(
        ALARM_DELIVERIES,
        "Alarm delivery attempts (raised and escalated alarms sent as webhooks) by result (delivered, retry, given_up).",
    ),
    counter(
        ALARM_DELIVERIES_REFUSED,
        "Alarm delivery attempts not sent because their address is loopback, private, link-local or otherwise not public, and not allowed by --callback-allowed-networks. Each is also counted in outcomes_alarm_deliveries_total as retry or given_up.",
    ),
    counter(
        "outcomes_fill_out_logins_total",
        "Fill-out link logins by result.",
    ),
    counter(
        "outcomes_fill_out_total",
        "Fill-out sessions by event (completed questionnaire, interrupted, finished).",
    ),
    counter(
        "outcomes_fill_out_refusals_total",
        "Fill-out form submissions refused, by reason.",
    ),
    gauge(
        BUILD_INFO,
        "Always 1; the labels say what this binary is: version, commit and plugin ABI version.",
    ),
    gauge(
        RESIDENT_MEMORY,
        "Resident memory of the process in bytes (VmRSS of /proc/self/status).",
    ),
    gauge(
        VIRTUAL_MEMORY,
        "Virtual memory of the process in bytes (VmSize of /proc/self/status).",
    ),
    gauge(
        OPEN_FDS,
        "Open file descriptors of the process (sockets, database files, plugin cache).",
    ),
    gauge(
        MAX_FDS,
        "The soft limit on open file descriptors of the process.",
    ),
    counter(
        CPU_SECONDS,
        "CPU time the process used, user and system, in whole seconds.",
    ),
    gauge(START_TIME, "When the process started (Unix seconds)."),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_conventions_and_appear_once() {
        let mut seen = std::collections::HashSet::new();
        for f in FAMILIES {
            assert!(seen.insert(f.name), "{} twice", f.name);
            assert!(f.name.starts_with("outcomes_"), "{}", f.name);
            assert_eq!(
                f.kind == Kind::Counter,
                f.name.ends_with("_total"),
                "{}",
                f.name
            );
            assert_eq!(
                f.kind == Kind::Histogram,
                !f.buckets.is_empty(),
                "{}",
                f.name
            );
            assert!(f.buckets.windows(2).all(|w| w[0] < w[1]), "{}", f.name);
            assert!(!f.help.is_empty());
        }
    }
}
