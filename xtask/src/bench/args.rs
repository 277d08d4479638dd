//! The command line of `cargo xtask bench`: what a run measures, and how.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Which database(s) to benchmark
    #[arg(long, value_enum, default_value_t = Database::Both)]
    pub(super) database: Database,

    /// Measured seconds of POST load (after the warm-up)
    #[arg(long, default_value_t = 10)]
    pub(super) seconds: u64,

    /// Warm-up seconds before the POST load is measured
    #[arg(long, default_value_t = 2)]
    pub(super) warmup: u64,

    /// Concurrent keep-alive connections posting responses
    #[arg(long, default_value_t = 64)]
    pub(super) clients: usize,

    /// Dossiers the posted responses are spread over
    #[arg(long, default_value_t = 1000)]
    pub(super) dossiers: usize,

    /// Timed sequential GETs of the list, per database size
    #[arg(long, default_value_t = 2000)]
    pub(super) list_requests: usize,

    /// Untimed GETs before the timed ones, per database size
    #[arg(long, default_value_t = 200)]
    pub(super) list_warmup: usize,

    /// Rows in the database for the first list measurement
    #[arg(long, default_value_t = 1_000)]
    pub(super) small: u64,

    /// Rows in the database for the second list measurement
    #[arg(long, default_value_t = 1_000_000)]
    pub(super) large: u64,

    /// Skip the POST load
    #[arg(long)]
    pub(super) no_post: bool,

    /// Also measure POST with no scorer loaded (the same binary, an empty
    /// plugin folder), alternating with the scored runs, and report what
    /// scoring costs
    #[arg(long)]
    pub(super) scoring_baseline: bool,

    /// Install a candidate of the PHQ-9 scorer (`outcomes plugin
    /// candidate`; the built module under another hash) before the POST
    /// load, so every scored POST is also scored in the shadow
    #[arg(long)]
    pub(super) shadow_candidate: bool,

    /// POST measurements per configuration (the median run is reported;
    /// with --scoring-baseline, scored and unscored runs alternate)
    #[arg(long, default_value_t = 1)]
    pub(super) rounds: usize,

    /// Skip the list latency
    #[arg(long)]
    pub(super) no_list: bool,

    /// Skip the authenticated GETs (Basic vs RS256 JWT, --seconds each)
    #[arg(long)]
    pub(super) no_auth: bool,

    /// Skip the fill-out pages (render and submit latency)
    #[arg(long)]
    pub(super) no_fill_out: bool,

    /// Timed fill-out pages, each rendered and then submitted
    #[arg(long, default_value_t = 2000)]
    pub(super) fill_out_pages: usize,

    /// Untimed fill-out pages before the timed ones
    #[arg(long, default_value_t = 200)]
    pub(super) fill_out_warmup: usize,

    /// Threads of the load generator's runtime (it shares the machine with
    /// the server)
    #[arg(long, default_value_t = 1)]
    pub(super) client_threads: usize,

    /// PostgreSQL server to create the benchmark databases on (the user
    /// must be allowed to create databases)
    #[arg(
        long,
        env = "OUTCOMES_TEST_POSTGRES_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/test"
    )]
    pub(super) postgres_url: String,

    /// Use target/release/outcomes as it is instead of building it first
    #[arg(long)]
    pub(super) no_build: bool,

    /// Benchmark this `outcomes` binary instead of building one (e.g. to
    /// compare two versions)
    #[arg(long, value_name = "FILE", conflicts_with = "no_build")]
    pub(super) binary: Option<PathBuf>,

    /// Also measure POST on a database holding this many responses already
    /// (with their dossiers, outcomes and access-log rows), alternating
    /// with the empty database each round; the list is then read at this
    /// size. The preloaded database is built with SQL once and kept under
    /// <target>/bench-preload (PostgreSQL: a database on the server) for
    /// later runs
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(super) preload: u64,

    /// Build the preloaded database again even if one is kept
    #[arg(long)]
    pub(super) rebuild_preload: bool,

    /// With --preload, skip the POST runs on the empty database
    #[arg(long)]
    pub(super) no_empty: bool,

    /// Open-loop load: requests are due at this many per second in all,
    /// and latency counts from the due time (without it, closed-loop: each
    /// connection waits for its answer before sending again)
    #[arg(long, value_name = "PER_SECOND")]
    pub(super) rate: Option<f64>,

    /// Measure the start with 20 plugin folders (spawn to /health, with
    /// the compiled-module cache filled) and the idle resident memory
    #[arg(long)]
    pub(super) startup: bool,

    /// Starts timed with --startup (after the one that fills the cache)
    #[arg(long, default_value_t = 5)]
    pub(super) startup_runs: usize,

    /// Also run the POST load against the peer (Medplum's FHIR router in
    /// memory, installed with npm), alternating with ours, and report the
    /// ratio
    #[arg(long)]
    pub(super) peer: bool,

    /// Measure alarm delivery (#32): PHQ-9s raising alarms posted
    /// open-loop to a server whose alarm endpoint is a receiver in the
    /// benchmark; the time from each 201 to the first delivery attempt,
    /// escalation past the deadline, and a receiver outage after which
    /// every event must arrive
    #[arg(long)]
    pub(super) alarms: bool,

    /// With --alarms: alarms raised per second (as many ordinary POSTs go
    /// with them)
    #[arg(long, value_name = "PER_SECOND", default_value_t = 20.0)]
    pub(super) alarm_rate: f64,

    /// With --alarms: seconds of load with the receiver up
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub(super) alarm_seconds: u64,

    /// With --alarms: seconds the receiver refuses connections while the
    /// load goes on (0: no outage)
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    pub(super) alarm_outage: u64,

    /// With --alarms: the server's alarm_deadline (60 at least)
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub(super) alarm_deadline: u64,

    /// With --alarms: the server's scheduler_interval (default: the
    /// server's own, 60 s)
    #[arg(long, value_name = "SECONDS")]
    pub(super) alarm_scheduler_interval: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum Database {
    Sqlite,
    Postgres,
    Both,
}
