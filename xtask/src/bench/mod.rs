//! `cargo xtask bench`: the HTTP benchmark of the issue.
//!
//! For each database (SQLite, PostgreSQL) it starts the release build of
//! `outcomes serve` as a child process on a free loopback port with a fresh
//! database, and measures:
//!
//! - POST throughput: `--clients` keep-alive connections post responses with
//!   unique external ids over many dossiers for `--seconds` after a warm-up;
//!   only 201s count, everything else is an error. With
//!   `--scoring-baseline` the same load runs again against a server with
//!   no scorer loaded, alternating `--rounds` times, to say what scoring
//!   costs.
//! - List latency: the database is seeded with SQL (not HTTP) so that one
//!   dossier holds 100 responses among 1,000 rows in total, then among
//!   1,000,000; sequential GETs of that dossier's list are timed at both
//!   sizes. Each dossier's rows are spread evenly over the table (round
//!   robin), as when many patients answer over time.
//!
//! - Authenticated GETs: the same GET (a questionnaire, then a dossier's
//!   response list) under `--clients` connections for `--seconds`, once with
//!   HTTP Basic and once with an RS256 JWT (the test suite's key pair
//!   registered with `outcomes token add-key`): throughput and server CPU
//!   per request with each.
//!
//! - Fill-out pages: one respondent renders a PHQ-9 page and submits it
//!   complete (scored, stored), `--fill-out-pages` times one after the
//!   other: the latency of each.
//!
//! The POST, auth, list and fill-out phases each get their own server and database; servers
//! are killed and PostgreSQL databases dropped at the end, also on error or
//! Ctrl-C.

// The report is the task's output.
#![allow(clippy::print_stdout)]

mod auth;
mod fill_out;
mod load;
mod seed;
mod server;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, ValueEnum};
use hdrhistogram::Histogram;

use crate::prerequisites;
use server::{Fresh, Scoring, Server};

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Which database(s) to benchmark
    #[arg(long, value_enum, default_value_t = Database::Both)]
    database: Database,

    /// Measured seconds of POST load (after the warm-up)
    #[arg(long, default_value_t = 10)]
    seconds: u64,

    /// Warm-up seconds before the POST load is measured
    #[arg(long, default_value_t = 2)]
    warmup: u64,

    /// Concurrent keep-alive connections posting responses
    #[arg(long, default_value_t = 64)]
    clients: usize,

    /// Dossiers the posted responses are spread over
    #[arg(long, default_value_t = 1000)]
    dossiers: usize,

    /// Timed sequential GETs of the list, per database size
    #[arg(long, default_value_t = 2000)]
    list_requests: usize,

    /// Untimed GETs before the timed ones, per database size
    #[arg(long, default_value_t = 200)]
    list_warmup: usize,

    /// Rows in the database for the first list measurement
    #[arg(long, default_value_t = 1_000)]
    small: u64,

    /// Rows in the database for the second list measurement
    #[arg(long, default_value_t = 1_000_000)]
    large: u64,

    /// Skip the POST load
    #[arg(long)]
    no_post: bool,

    /// Also measure POST with no scorer loaded (the same binary, an empty
    /// plugin folder), alternating with the scored runs, and report what
    /// scoring costs
    #[arg(long)]
    scoring_baseline: bool,

    /// POST measurements per configuration (the median run is reported;
    /// with --scoring-baseline, scored and unscored runs alternate)
    #[arg(long, default_value_t = 1)]
    rounds: usize,

    /// Skip the list latency
    #[arg(long)]
    no_list: bool,

    /// Skip the authenticated GETs (Basic vs RS256 JWT, --seconds each)
    #[arg(long)]
    no_auth: bool,

    /// Skip the fill-out pages (render and submit latency)
    #[arg(long)]
    no_fill_out: bool,

    /// Timed fill-out pages, each rendered and then submitted
    #[arg(long, default_value_t = 2000)]
    fill_out_pages: usize,

    /// Untimed fill-out pages before the timed ones
    #[arg(long, default_value_t = 200)]
    fill_out_warmup: usize,

    /// Threads of the load generator's runtime (it shares the machine with
    /// the server)
    #[arg(long, default_value_t = 1)]
    client_threads: usize,

    /// PostgreSQL server to create the benchmark databases on (the user
    /// must be allowed to create databases)
    #[arg(
        long,
        env = "OUTCOMES_TEST_POSTGRES_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/test"
    )]
    postgres_url: String,

    /// Use target/release/outcomes as it is instead of building it first
    #[arg(long)]
    no_build: bool,

    /// Benchmark this `outcomes` binary instead of building one (e.g. to
    /// compare two versions)
    #[arg(long, value_name = "FILE", conflicts_with = "no_build")]
    binary: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Database {
    Sqlite,
    Postgres,
    Both,
}

/// Which engine one run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "SQLite",
            Backend::Postgres => "PostgreSQL",
        }
    }
}

/// Responses per measured dossier.
const LIST_SIZE: u64 = 100;
/// Goals of the issue.
const GOAL_POSTS_PER_SECOND: f64 = 5000.0;
const GOAL_LIST_RATIO: f64 = 1.5;
const GOAL_FILL_OUT_MS: f64 = 5.0;
const GOAL_SCORING_COST_PERCENT: f64 = 10.0;

/// The median of some figures (the mean of the middle two for an even
/// count); NaN for none.
fn median(figures: &[f64]) -> f64 {
    let mut sorted = figures.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.clients > 0 && args.dossiers > 0 && args.seconds > 0,
        "--clients, --dossiers and --seconds must be positive"
    );
    anyhow::ensure!(args.list_requests > 0, "--list-requests must be positive");
    anyhow::ensure!(args.rounds > 0, "--rounds must be positive");
    anyhow::ensure!(args.fill_out_pages > 0, "--fill-out-pages must be positive");
    anyhow::ensure!(
        args.small >= LIST_SIZE
            && args.small.is_multiple_of(LIST_SIZE)
            && args.large > args.small
            && args.large.is_multiple_of(LIST_SIZE),
        "--small and --large must be multiples of {LIST_SIZE} with --large > --small"
    );
    let backends = match args.database {
        Database::Sqlite => vec![Backend::Sqlite],
        Database::Postgres => vec![Backend::Postgres],
        Database::Both => vec![Backend::Sqlite, Backend::Postgres],
    };
    if backends.contains(&Backend::Postgres) {
        prerequisites::postgres_at(&args.postgres_url)?;
    }
    let root = prerequisites::workspace_root();
    let binary = match &args.binary {
        Some(path) => {
            anyhow::ensure!(path.exists(), "{} does not exist", path.display());
            path.clone()
        }
        None => build(&root, args.no_build)?,
    };
    let runtime = if args.client_threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.client_threads)
            .enable_all()
            .build()?
    };
    let mut reports = Vec::new();
    for backend in backends {
        println!("== {} ==", backend.name());
        let report = runtime.block_on(bench_backend(backend, &args, &binary, &root))?;
        reports.push((backend, report));
    }
    print_summary(&args, &reports);
    Ok(())
}

/// Builds the release binary; its path.
fn build(root: &Path, skip: bool) -> anyhow::Result<PathBuf> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let binary = target
        .join("release")
        .join(format!("outcomes{}", std::env::consts::EXE_SUFFIX));
    if !skip {
        eprintln!(
            "xtask: building the release binary (cargo build --release -p host --bin outcomes)"
        );
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let status = Command::new(cargo)
            .current_dir(root)
            .args([
                "build",
                "--release",
                "--package",
                "host",
                "--bin",
                "outcomes",
            ])
            .status()
            .context("running cargo build")?;
        anyhow::ensure!(status.success(), "cargo build --release failed ({status})");
    }
    anyhow::ensure!(
        binary.exists(),
        "{} does not exist; build it or drop --no-build",
        binary.display()
    );
    Ok(binary)
}

#[derive(Debug, Default)]
struct BackendReport {
    post: Option<load::LoadReport>,
    /// Every scored POST run, and every unscored one (--scoring-baseline),
    /// in the order they ran (round i is `post_runs[i]`, `unscored_runs[i]`).
    post_runs: Vec<f64>,
    unscored_runs: Vec<f64>,
    /// Server CPU per request of those runs, in microseconds.
    post_cpu: Vec<f64>,
    unscored_cpu: Vec<f64>,
    auth: Option<auth::AuthReport>,
    list: Option<ListReport>,
    fill_out: Option<fill_out::FillOutReport>,
}

#[derive(Debug)]
struct ListReport {
    small: load::Latency,
    large: load::Latency,
}

impl ListReport {
    fn ratio(&self) -> f64 {
        self.large.median_ms() / self.small.median_ms()
    }
}

async fn bench_backend(
    backend: Backend,
    args: &BenchArgs,
    binary: &Path,
    root: &Path,
) -> anyhow::Result<BackendReport> {
    let mut report = BackendReport::default();
    if !args.no_post {
        let mut scored = Vec::new();
        for _ in 0..args.rounds {
            for scoring in [Scoring::On, Scoring::Off] {
                if scoring == Scoring::Off && !args.scoring_baseline {
                    continue;
                }
                let run = phase(backend, args, async |fresh| {
                    post_phase(backend, args, binary, root, fresh, scoring).await
                })
                .await?;
                let cpu = run.server_cpu_micros().unwrap_or(f64::NAN);
                match scoring {
                    Scoring::On => {
                        report.post_runs.push(run.throughput());
                        report.post_cpu.push(cpu);
                        scored.push(run);
                    }
                    Scoring::Off => {
                        report.unscored_runs.push(run.throughput());
                        report.unscored_cpu.push(cpu);
                    }
                }
            }
        }
        scored.sort_by(|a, b| a.throughput().total_cmp(&b.throughput()));
        report.post = scored.into_iter().nth(args.rounds / 2);
    }
    if !args.no_auth {
        report.auth = Some(
            phase(backend, args, async |fresh| {
                auth::auth_phase(backend, args, binary, root, fresh).await
            })
            .await?,
        );
    }
    if !args.no_fill_out {
        report.fill_out = Some(
            phase(backend, args, async |fresh| {
                fill_out::fill_out_phase(backend, args, binary, root, fresh).await
            })
            .await?,
        );
    }
    if !args.no_list {
        report.list = Some(
            phase(backend, args, async |fresh| {
                list_phase(backend, args, binary, root, fresh).await
            })
            .await?,
        );
    }
    Ok(report)
}

/// Runs `body` on a fresh database, then removes that database whatever
/// happened, also on Ctrl-C. The server `body` starts is killed when `body`
/// returns or is cancelled.
async fn phase<T>(
    backend: Backend,
    args: &BenchArgs,
    body: impl AsyncFnOnce(&Fresh) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let fresh = Fresh::create(backend, &args.postgres_url).await?;
    let result = tokio::select! {
        r = body(&fresh) => r,
        _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted")),
    };
    fresh.remove().await;
    result
}

async fn post_phase(
    backend: Backend,
    args: &BenchArgs,
    binary: &Path,
    root: &Path,
    fresh: &Fresh,
    scoring: Scoring,
) -> anyhow::Result<load::LoadReport> {
    let server = Server::start_with(binary, root, fresh, scoring).await?;
    println!("POST: plugins: {}", server.plugins().await);
    println!(
        "POST: {} connections, {} s warm-up + {} s measured, {} dossiers ({} at {})",
        args.clients,
        args.warmup,
        args.seconds,
        args.dossiers,
        backend.name(),
        server.addr()
    );
    let report = load::post_load(
        server.target(),
        server.pid(),
        args.clients,
        args.dossiers,
        Duration::from_secs(args.warmup),
        Duration::from_secs(args.seconds),
    )
    .await?;
    println!("{}", report.describe());
    server.stop();
    // Every 201 is a response on disk, and nothing else is.
    let stored = seed::count_responses(&fresh.url()).await?;
    anyhow::ensure!(
        stored == report.ok_total,
        "the server answered 201 {} times but the database holds {stored} responses",
        report.ok_total
    );
    println!(
        "      stored: all {stored} responses answered with 201 (warm-up included), no others"
    );
    Ok(report)
}

async fn list_phase(
    backend: Backend,
    args: &BenchArgs,
    binary: &Path,
    root: &Path,
    fresh: &Fresh,
) -> anyhow::Result<ListReport> {
    let server = Server::start(binary, root, fresh).await?;
    let mut seeder = seed::Seeder::connect(backend, &fresh.url(), server.target()).await?;
    let mut measure = async |rows: u64, stage: &str| -> anyhow::Result<load::Latency> {
        let started = Instant::now();
        let dossier = seeder.grow_to(rows, LIST_SIZE, stage).await?;
        println!(
            "List: seeded to {rows} rows in {:.1} s; dossier {dossier} holds {LIST_SIZE}",
            started.elapsed().as_secs_f64()
        );
        let latency = load::list_latency(
            server.target(),
            server.pid(),
            &dossier,
            LIST_SIZE as usize,
            args.list_warmup,
            args.list_requests,
        )
        .await?;
        println!("List: {} rows: {}", rows, latency.describe());
        Ok(latency)
    };
    let small = measure(args.small, "small").await?;
    let large = measure(args.large, "large").await?;
    seeder.close().await;
    server.stop();
    let report = ListReport { small, large };
    println!(
        "List: {}: median at {} rows / at {} rows = {:.2}",
        backend.name(),
        args.large,
        args.small,
        report.ratio()
    );
    Ok(report)
}

fn print_summary(args: &BenchArgs, reports: &[(Backend, BackendReport)]) {
    println!();
    println!(
        "Summary ({} clients, {} s; list of {LIST_SIZE} responses, {} sequential GETs; {} cores)",
        args.clients,
        args.seconds,
        args.list_requests,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "{:<11} {:>9} {:>8} {:>8} {:>8} {:>7} | {:>10} {:>10} {:>6}",
        "database",
        "POST/s",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "errors",
        "list 1k ms",
        "list 1M ms",
        "ratio"
    );
    for (backend, report) in reports {
        let post = match &report.post {
            Some(p) => format!(
                "{:>9.0} {:>8.2} {:>8.2} {:>8.2} {:>7}",
                p.throughput(),
                ms(&p.histogram, 50.0),
                ms(&p.histogram, 90.0),
                ms(&p.histogram, 99.0),
                p.error_count()
            ),
            None => format!("{:>9} {:>8} {:>8} {:>8} {:>7}", "-", "-", "-", "-", "-"),
        };
        let list = match &report.list {
            Some(l) => format!(
                "{:>10.3} {:>10.3} {:>6.2}",
                l.small.median_ms(),
                l.large.median_ms(),
                l.ratio()
            ),
            None => format!("{:>10} {:>10} {:>6}", "-", "-", "-"),
        };
        println!("{:<11} {post} | {list}", backend.name());
    }
    println!(
        "(list columns: median latency at {} and {} rows in total)",
        args.small, args.large
    );
    for (backend, report) in reports {
        if let Some(auth) = &report.auth {
            println!(
                "Authenticated GETs, {} ({} clients):",
                backend.name(),
                args.clients
            );
            for line in auth.summary() {
                println!("  {line}");
            }
        }
    }
    for (backend, report) in reports {
        if report.unscored_runs.is_empty() {
            continue;
        }
        let scored = median(&report.post_runs);
        let unscored = median(&report.unscored_runs);
        let cost = 100.0 * (1.0 - scored / unscored);
        // Each round's scored run against the unscored run right after it:
        // the machine's drift hits both alike, so the spread of these says
        // how far one figure can be trusted.
        let paired: Vec<f64> = report
            .post_runs
            .iter()
            .zip(&report.unscored_runs)
            .map(|(s, u)| 100.0 * (1.0 - s / u))
            .collect();
        let (low, high) = paired
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), c| {
                (lo.min(*c), hi.max(*c))
            });
        let list = |r: &[f64], decimals: usize| {
            r.iter()
                .map(|t| format!("{t:.decimals$}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        println!(
            "Scoring cost, {}: scored {scored:.0}/s (runs {}) vs no scorer {unscored:.0}/s (runs {}): {cost:.1}% fewer POSTs/s",
            backend.name(),
            list(&report.post_runs, 0),
            list(&report.unscored_runs, 0),
        );
        println!(
            "  per round: {} % (median {:.1}%); server CPU per request: scored {:.0} µs vs no scorer {:.0} µs (medians)",
            list(&paired, 1),
            median(&paired),
            median(&report.post_cpu),
            median(&report.unscored_cpu),
        );
        let verdict = if cost <= GOAL_SCORING_COST_PERCENT {
            "met"
        } else {
            "NOT met"
        };
        let straddles = low <= GOAL_SCORING_COST_PERCENT && high > GOAL_SCORING_COST_PERCENT;
        println!(
            "Goal: scoring costs <= {GOAL_SCORING_COST_PERCENT}% of POST throughput on {}: {verdict}{}",
            backend.name(),
            if straddles {
                format!(
                    " (rounds range from {low:.1}% to {high:.1}%, on both sides of the goal: run more --rounds)"
                )
            } else {
                String::new()
            }
        );
    }
    for (backend, report) in reports {
        if let Some(f) = &report.fill_out {
            println!(
                "Fill-out pages, {}: render p50 {:.2} ms, p99 {:.2} ms; submit (scored, stored) p50 {:.2} ms, p99 {:.2} ms",
                backend.name(),
                f.render.median_ms(),
                ms(&f.render.histogram, 99.0),
                f.submit.median_ms(),
                ms(&f.submit.histogram, 99.0),
            );
            let verdict = if f.render.median_ms() <= GOAL_FILL_OUT_MS
                && f.submit.median_ms() <= GOAL_FILL_OUT_MS
            {
                "met"
            } else {
                "NOT met"
            };
            println!(
                "Goal: fill-out render and submit p50 <= {GOAL_FILL_OUT_MS} ms each on {}: {verdict}",
                backend.name()
            );
        }
    }
    for (backend, report) in reports {
        if *backend != Backend::Sqlite {
            continue;
        }
        if let Some(p) = &report.post {
            let verdict = if p.throughput() >= GOAL_POSTS_PER_SECOND {
                "met"
            } else {
                "NOT met"
            };
            println!("Goal: >= {GOAL_POSTS_PER_SECOND:.0} durable POSTs/s on SQLite: {verdict}");
        }
        if let Some(l) = &report.list {
            let verdict = if l.ratio() <= GOAL_LIST_RATIO {
                "met"
            } else {
                "NOT met"
            };
            println!(
                "Goal: list median at 1M rows <= {GOAL_LIST_RATIO}x that at 1k on SQLite: {verdict}"
            );
        }
    }
}

/// A percentile of a histogram in microseconds, as milliseconds.
fn ms(h: &Histogram<u64>, percentile: f64) -> f64 {
    h.value_at_percentile(percentile) as f64 / 1000.0
}
