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
//! - Growth (`--preload N`): the POST load also runs on a copy of a
//!   database that holds N responses already (`preload`), alternating with
//!   the empty database, round by round; the list is then read at N.
//!
//! - The peer (`--peer`): the same POST load against Medplum's FHIR router
//!   (`peer`), alternating with ours, one server at a time.
//!
//! - Alarm delivery (`--alarms`, `alarms`): PHQ-9s raising alarms posted
//!   open-loop (`--alarm-rate`, `--alarm-seconds`) to a server whose
//!   alarm endpoint is a receiver inside the benchmark (`receiver`, on
//!   loopback, checking every signature), with a short `alarm_deadline`
//!   (`--alarm-deadline`, 60 s): the time from each POST's 201 to the first
//!   delivery attempt, each escalation's lateness past its deadline, then a
//!   receiver outage (`--alarm-outage`, 600 s) after which every event
//!   must arrive once (`alarm_tally` holds what arrived against what was
//!   posted).
//!
//! The load is closed-loop unless `--rate` is given (open-loop at that
//! many requests per second; see `load::Pace`); every report says which.
//!
//! The POST, auth, list, fill-out and alarm phases each get their own server and database; servers
//! are killed and PostgreSQL databases dropped at the end, also on error or
//! Ctrl-C.
//!
//! Order of use (each module imports only those before it): `args` (the
//! command line) and `cpu` (what a round cost in CPU time) → `load` (the
//! load generator and its reports) → `server` (the binary, a fresh
//! database, the `outcomes serve` process) → `seed`, `preload` (databases
//! filled with SQL), `receiver` (the alarm endpoint) → `alarm_tally` →
//! the phases `alarms`, `auth`, `candidate`, `fill_out`, `peer`,
//! `startup`, `hosts` → this file, which runs them and prints the summary.

// The report is the task's output.
#![allow(clippy::print_stdout)]

mod alarm_tally;
mod alarms;
mod args;
mod auth;
mod candidate;
mod cpu;
mod fill_out;
pub mod hosts;
mod load;
mod peer;
mod preload;
mod receiver;
mod seed;
mod server;
mod startup;

use std::path::Path;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

pub use args::BenchArgs;
use args::Database;
use load::median;
use server::{Backend, Fresh, Scoring, Server, binary};

use crate::prerequisites;

/// Responses per measured dossier.
const LIST_SIZE: u64 = 100;
/// Goals of the issue.
const GOAL_POSTS_PER_SECOND: f64 = 5000.0;
const GOAL_LIST_RATIO: f64 = 1.5;
const GOAL_FILL_OUT_MS: f64 = 5.0;
const GOAL_SCORING_COST_PERCENT: f64 = 10.0;
/// Growth goals (#20): SQLite keeps 90% of its empty-database throughput
/// at 1M responses, PostgreSQL 80%; SQLite posts 1.5x the peer's.
const GOAL_SQLITE_KEPT: f64 = 0.9;
const GOAL_POSTGRES_KEPT: f64 = 0.8;
const GOAL_PEER_RATIO: f64 = 1.5;

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.clients > 0 && args.dossiers > 0 && args.seconds > 0,
        "--clients, --dossiers and --seconds must be positive"
    );
    anyhow::ensure!(args.list_requests > 0, "--list-requests must be positive");
    anyhow::ensure!(args.rounds > 0, "--rounds must be positive");
    anyhow::ensure!(args.fill_out_pages > 0, "--fill-out-pages must be positive");
    anyhow::ensure!(
        args.rate.is_none_or(|r| r.is_finite() && r > 0.0),
        "--rate must be positive"
    );
    anyhow::ensure!(
        !args.no_empty || args.preload > 0,
        "--no-empty needs --preload"
    );
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
    let binary = binary(&root, args.binary.as_deref(), args.no_build)?;
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
    let peer_dir = if args.peer && !args.no_post {
        Some(peer::install(&root)?)
    } else {
        None
    };
    let mut reports = Vec::new();
    for backend in backends {
        println!("== {} ==", backend.name());
        let report = runtime.block_on(bench_backend(
            backend,
            &args,
            &binary,
            &root,
            peer_dir.as_deref(),
        ))?;
        reports.push((backend, report));
    }
    print_summary(&args, &reports);
    Ok(())
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
    /// --preload: each round's run on the preloaded database, and the
    /// median one.
    preloaded_runs: Vec<f64>,
    preloaded: Option<load::LoadReport>,
    /// Responses the preloaded database held.
    preloaded_rows: u64,
    startup: Option<startup::StartupReport>,
    /// --peer: each round's run against the peer, and the median one.
    peer_runs: Vec<f64>,
    peer: Option<load::LoadReport>,
    auth: Option<auth::AuthReport>,
    list: Option<ListReport>,
    fill_out: Option<fill_out::FillOutReport>,
    alarms: Option<alarms::AlarmReport>,
}

#[derive(Debug)]
struct ListReport {
    small: load::Latency,
    large: load::Latency,
    /// Responses in the database at each measurement.
    small_rows: u64,
    large_rows: u64,
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
    peer_dir: Option<&Path>,
) -> anyhow::Result<BackendReport> {
    let mut report = BackendReport::default();
    let cached = if args.preload > 0 {
        Some(
            preload::ensure(
                backend,
                args.preload,
                binary,
                root,
                &args.postgres_url,
                args.rebuild_preload,
            )
            .await?,
        )
    } else {
        None
    };
    if !args.no_post {
        let mut scored = Vec::new();
        let mut preloaded = Vec::new();
        let mut peers = Vec::new();
        for round in 0..args.rounds {
            if args.rounds > 1 {
                println!("POST: round {} of {}", round + 1, args.rounds);
            }
            if let Some(dir) = peer_dir {
                let run = peer_phase(args, dir).await?;
                report.peer_runs.push(run.throughput());
                peers.push(run);
            }
            if let Some(cached) = &cached {
                report.preloaded_rows = cached.responses;
                let run = phase_on(backend, args, Some(cached), async |fresh| {
                    post_phase(backend, args, binary, root, fresh, Scoring::On).await
                })
                .await?;
                report.preloaded_runs.push(run.throughput());
                preloaded.push(run);
            }
            for scoring in [Scoring::On, Scoring::Off] {
                if scoring == Scoring::Off && !args.scoring_baseline {
                    continue;
                }
                if scoring == Scoring::On && args.no_empty {
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
        report.post = median_run(scored);
        report.preloaded = median_run(preloaded);
        report.peer = median_run(peers);
    }
    if args.startup {
        report.startup = Some(
            phase(backend, args, async |fresh| {
                startup::startup_phase(backend, args, binary, root, fresh).await
            })
            .await?,
        );
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
    if args.alarms {
        report.alarms = Some(
            phase(backend, args, async |fresh| {
                alarms::alarm_phase(backend, args, binary, root, fresh).await
            })
            .await?,
        );
    }
    if !args.no_list {
        report.list = Some(match &cached {
            None => {
                phase(backend, args, async |fresh| {
                    list_phase(backend, args, binary, root, fresh).await
                })
                .await?
            }
            Some(cached) => {
                let small = phase(backend, args, async |fresh| {
                    list_small(backend, args, binary, root, fresh).await
                })
                .await?;
                let large = phase_on(backend, args, Some(cached), async |fresh| {
                    list_preloaded(args, binary, root, fresh, cached).await
                })
                .await?;
                let report = ListReport {
                    small,
                    large,
                    small_rows: args.small,
                    large_rows: cached.responses,
                };
                println!(
                    "List: {}: median at {} rows / at {} rows = {:.2}",
                    backend.name(),
                    report.large_rows,
                    report.small_rows,
                    report.ratio()
                );
                report
            }
        });
    }
    Ok(report)
}

/// The run with the median throughput (the upper one of an even count).
fn median_run(mut runs: Vec<load::LoadReport>) -> Option<load::LoadReport> {
    runs.sort_by(|a, b| a.throughput().total_cmp(&b.throughput()));
    let middle = runs.len() / 2;
    runs.into_iter().nth(middle)
}

/// The POST load against a fresh peer.
async fn peer_phase(args: &BenchArgs, dir: &Path) -> anyhow::Result<load::LoadReport> {
    let peer = peer::Peer::start(dir).await?;
    println!(
        "POST (peer): Medplum's FHIR router in memory, {} connections, {} s warm-up + {} s measured",
        args.clients, args.warmup, args.seconds
    );
    let report = peer::post_load(
        &peer,
        args.clients,
        args.dossiers,
        Duration::from_secs(args.warmup),
        Duration::from_secs(args.seconds),
        pace(args),
    )
    .await?;
    println!("{}", report.describe());
    drop(peer);
    Ok(report)
}

fn pace(args: &BenchArgs) -> load::Pace {
    args.rate.map_or(load::Pace::Closed, load::Pace::Open)
}

/// Runs `body` on a fresh database, then removes that database whatever
/// happened, also on Ctrl-C. The server `body` starts is killed when `body`
/// returns or is cancelled.
async fn phase<T>(
    backend: Backend,
    args: &BenchArgs,
    body: impl AsyncFnOnce(&Fresh) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    phase_on(backend, args, None, body).await
}

/// [`phase`] on a copy of a preloaded database, or a fresh one.
async fn phase_on<T>(
    backend: Backend,
    args: &BenchArgs,
    cached: Option<&preload::Cached>,
    body: impl AsyncFnOnce(&Fresh) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let fresh = match cached {
        Some(cached) => cached.copy(&args.postgres_url).await?,
        None => Fresh::create(backend, &args.postgres_url).await?,
    };
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
    let shadow = if args.shadow_candidate && scoring == Scoring::On {
        candidate::install(binary, root, fresh, &server).await?;
        Some(candidate::settled(&server).await?)
    } else {
        None
    };
    // Counted after the candidate's probe responses, so that only the
    // load's are compared with its 201s below.
    let before = if fresh.copied || shadow.is_some() {
        seed::count_responses(&fresh.url()).await?
    } else {
        0
    };
    println!("POST: plugins: {}", server.plugins().await);
    println!(
        "POST: {} responses in the database; {} connections, {} s warm-up + {} s measured, {} dossiers ({} at {})",
        before,
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
        pace(args),
    )
    .await?;
    println!("{}", report.describe());
    if let Some(before) = &shadow {
        // Every PHQ-9 response answered 201 was either scored by the
        // candidate or dropped (and counted) by a full queue; the worker
        // goes on after the load, so wait for it.
        let after = candidate::drained(&server, before, report.ok_total).await?;
        println!(
            "      shadow candidate: {} (during the load: {} calls + {} dropped = the {} responses answered 201)",
            after.describe(),
            after.calls - before.calls,
            after.dropped - before.dropped,
            report.ok_total
        );
    }
    server.stop();
    // Every 201 is a response on disk, and nothing else is.
    let stored = seed::count_responses(&fresh.url()).await? - before;
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

/// The list at `--small` rows, seeded as [`list_phase`] does.
async fn list_small(
    backend: Backend,
    args: &BenchArgs,
    binary: &Path,
    root: &Path,
    fresh: &Fresh,
) -> anyhow::Result<load::Latency> {
    let server = Server::start(binary, root, fresh).await?;
    let mut seeder = seed::Seeder::connect(backend, &fresh.url(), server.target()).await?;
    let dossier = seeder.grow_to(args.small, LIST_SIZE, "small").await?;
    seeder.close().await;
    let latency = load::list_latency(
        server.target(),
        server.pid(),
        &dossier,
        LIST_SIZE as usize,
        args.list_warmup,
        args.list_requests,
    )
    .await?;
    println!("List: {} rows: {}", args.small, latency.describe());
    server.stop();
    Ok(latency)
}

/// The list of the preloaded database's list dossier.
async fn list_preloaded(
    args: &BenchArgs,
    binary: &Path,
    root: &Path,
    fresh: &Fresh,
    cached: &preload::Cached,
) -> anyhow::Result<load::Latency> {
    let server = Server::start(binary, root, fresh).await?;
    let latency = load::list_latency(
        server.target(),
        server.pid(),
        preload::LIST_DOSSIER,
        preload::LIST_SIZE as usize,
        args.list_warmup,
        args.list_requests,
    )
    .await?;
    println!(
        "List: {} rows (preloaded): {}",
        cached.responses,
        latency.describe()
    );
    server.stop();
    Ok(latency)
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
    let report = ListReport {
        small,
        large,
        small_rows: args.small,
        large_rows: args.large,
    };
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
        "list small",
        "list large",
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
        "(POST latency: {}; list columns: median latency in ms at {} and {} rows in total)",
        pace(args).label(),
        args.small,
        reports
            .iter()
            .find_map(|(_, r)| r.list.as_ref().map(|l| l.large_rows))
            .unwrap_or(args.large)
    );
    print_growth(args, reports);
    for (backend, report) in reports {
        if let Some(startup) = &report.startup {
            println!("Start-up with 20 plugin folders, {}:", backend.name());
            for line in startup.summary() {
                println!("  {line}");
            }
        }
    }
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
    print_alarms(args, reports);
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
                "Goal: list median at {} rows <= {GOAL_LIST_RATIO}x that at {} on SQLite: {verdict}",
                l.large_rows, l.small_rows
            );
        }
    }
}

/// The growth and peer lines: each configuration's runs, medians and
/// ratios, and the goals of #20.
fn print_growth(args: &BenchArgs, reports: &[(Backend, BackendReport)]) {
    let list = |r: &[f64]| {
        r.iter()
            .map(|t| format!("{t:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for (backend, report) in reports {
        let empty = median(&report.post_runs);
        if !report.preloaded_runs.is_empty() {
            let full = median(&report.preloaded_runs);
            println!(
                "Growth, {}: {} responses preloaded {full:.0} POST/s (runs {}) vs empty {empty:.0} POST/s (runs {}): {:.1}% of empty",
                backend.name(),
                report.preloaded_rows,
                list(&report.preloaded_runs),
                list(&report.post_runs),
                100.0 * full / empty
            );
            if let Some(p) = &report.preloaded {
                println!("  preloaded, median run: {}", p.describe());
            }
            let paired: Vec<f64> = report
                .preloaded_runs
                .iter()
                .zip(&report.post_runs)
                .map(|(f, e)| f / e)
                .collect();
            if !paired.is_empty() {
                println!(
                    "  preloaded/empty per round: {} (median {:.2})",
                    paired
                        .iter()
                        .map(|r| format!("{r:.2}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    median(&paired)
                );
            }
            let goal = match backend {
                Backend::Sqlite => GOAL_SQLITE_KEPT,
                Backend::Postgres => GOAL_POSTGRES_KEPT,
            };
            if empty.is_finite() {
                println!(
                    "Goal: at {} responses >= {:.0}% of the empty database's POST/s on {}: {}",
                    report.preloaded_rows,
                    goal * 100.0,
                    backend.name(),
                    if full >= goal * empty {
                        "met"
                    } else {
                        "NOT met"
                    }
                );
            }
        }
        if !report.peer_runs.is_empty() {
            let peer = median(&report.peer_runs);
            let (ours, what) = if report.preloaded_runs.is_empty() {
                (empty, "empty".to_owned())
            } else {
                (
                    median(&report.preloaded_runs),
                    format!("{} responses preloaded", report.preloaded_rows),
                )
            };
            println!(
                "Peer vs {} ({what}): peer {peer:.0} POST/s (runs {}), ours {ours:.0} POST/s: ratio {:.2} ({})",
                backend.name(),
                list(&report.peer_runs),
                ours / peer,
                pace(args).label()
            );
            if let Some(p) = &report.peer {
                println!("  peer, median run: {}", p.describe());
            }
            if *backend == Backend::Sqlite {
                println!(
                    "Goal: SQLite ({what}) >= {GOAL_PEER_RATIO}x the peer's POST/s: {}",
                    if ours >= GOAL_PEER_RATIO * peer {
                        "met"
                    } else {
                        "NOT met"
                    }
                );
            }
        }
    }
}

/// The alarm lines: delivery latency, escalation lateness, the outage,
/// and the goals of #32.
fn print_alarms(args: &BenchArgs, reports: &[(Backend, BackendReport)]) {
    for (backend, report) in reports {
        let Some(a) = &report.alarms else {
            continue;
        };
        let name = backend.name();
        println!(
            "Alarms, {name} ({:.0} alarms/s + as many ordinary POSTs, open-loop, {} s; deadline {} s):",
            args.alarm_rate, args.alarm_seconds, args.alarm_deadline
        );
        let first = a.first_attempt();
        let late = a.escalation_arrival();
        let line = |s: Option<alarm_tally::Summary>| s.map_or("-".to_owned(), |s| s.describe());
        let shown = |s: Option<f64>| s.map_or("-".to_owned(), |s| format!("{s:.1} s"));
        println!("  201 → first delivery attempt: {}", line(first));
        println!("  escalation arrival − deadline: {}", line(late));
        if let Some(o) = &a.outage {
            println!(
                "  outage of {} s: {}; after the receiver came back the last raised event arrived {}, the last event {} ({} calls answered 503 as it went down)",
                o.seconds,
                o.tally.describe(),
                shown(o.last_raised_after_back),
                shown(o.last_after_back),
                o.refused
            );
        }
        println!("  all: {}", a.all.describe());
        let verdict = |met: bool| if met { "met" } else { "NOT met" };
        println!(
            "Goal: 201 → first delivery attempt p99 < {} s on {name}: {}",
            alarms::GOAL_FIRST_ATTEMPT_P99_S,
            verdict(first.is_some_and(|s| s.p99 < alarms::GOAL_FIRST_ATTEMPT_P99_S))
        );
        println!(
            "Goal: escalation within {} s of the deadline on {name}: {}",
            alarms::GOAL_ESCALATION_LATE_S,
            verdict(late.is_some_and(|s| s.max < alarms::GOAL_ESCALATION_LATE_S))
        );
        if let Some(o) = &a.outage {
            println!(
                "Goal: every event delivered after a receiver outage of {} s on {name}: {}",
                o.seconds,
                verdict(a.delivered_all() && o.tally.complete())
            );
        }
    }
}

/// A percentile of a histogram in microseconds, as milliseconds.
fn ms(h: &Histogram<u64>, percentile: f64) -> f64 {
    h.value_at_percentile(percentile) as f64 / 1000.0
}
