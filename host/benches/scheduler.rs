//! The scheduler and stats at scale, on SQLite and (when reachable)
//! PostgreSQL:
//!
//! - one tick that prepares 100,000 due measurement occurrences (goal
//!   ≤ 10 s on SQLite): 100,000 dossiers subscribed to the bundled monthly
//!   protocol with a start in the future, then one `scheduler::tick` at
//!   that start, which makes 100,000 invitations and 200,000 responses;
//! - stats of 10,000 dossiers in one call (goal ≤ 1 s), and of all.
//!
//! `cargo bench -p host --bench scheduler` (`-- --count N` for another
//! number of subscriptions; `-- --sqlite-only`). PostgreSQL is found at
//! `OUTCOMES_BENCH_POSTGRES` (default postgres://postgres@127.0.0.1:5432/test);
//! the bench makes and drops its own database there.

#![allow(clippy::print_stdout)]

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use chrono::{Duration, TimeZone, Utc};
use host::clock::ManualClock;
use host::config::{Config, FileSettings, Settings};
use host::domain::variant::Variant;
use host::scheduler;
use host::startup::App;
use host::store::{NewSubscription, StartResult};
use sqlx::Connection;

const GOAL_TICK_SECONDS: f64 = 10.0;
const GOAL_STATS_SECONDS: f64 = 1.0;
const STATS_DOSSIERS: usize = 10_000;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let count = args
        .iter()
        .position(|a| a == "--count")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let sqlite_only = args.iter().any(|a| a == "--sqlite-only");
    // `cargo bench` passes --bench; a filter naming nothing else is ignored.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let sqlite = format!("sqlite://{}", dir.path().join("bench.db").display());
        run("SQLite", &sqlite, dir.path(), count).await;
        if !sqlite_only {
            match postgres_database().await {
                Some((url, drop)) => {
                    run("PostgreSQL", &url, dir.path(), count).await;
                    drop().await;
                }
                None => println!("PostgreSQL: not reachable; skipped"),
            }
        }
    });
}

/// The host on `url`, built as the service builds it (not serving), with
/// the bundled definitions and no plugins; its clock at `now`.
async fn host(url: &str, dir: &Path, now: chrono::DateTime<Utc>) -> App {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let plugins = dir.join("no-plugins");
    std::fs::create_dir_all(&plugins).expect("a plugin folder");
    let mut settings = Settings::default();
    settings.server.listen = Some("127.0.0.1:0".parse().expect("an address"));
    settings.storage.data_dir = Some(dir.to_owned());
    settings.storage.database_url = Some(url.to_owned());
    settings.definitions.questionnaires_dir = Some(root.join("questionnaires"));
    settings.definitions.protocols_dir = Some(root.join("protocols"));
    settings.plugins.plugins_dir = Some(plugins);
    settings.plugin_cache.plugin_cache_dir = Some(dir.join("plugin-cache"));
    settings.server.watch = Some(false);
    settings.scheduler.scheduler_interval = Some(0);
    let config = Config::resolve(settings, FileSettings::default()).expect("a configuration");
    App::build(config, Arc::new(ManualClock::new(now)))
        .await
        .expect("the host builds")
}

async fn run(name: &str, url: &str, dir: &Path, count: usize) {
    let start = Utc
        .with_ymd_and_hms(2027, 1, 31, 9, 0, 0)
        .single()
        .expect("a time");
    // Subscriptions made a day before their start: nothing is due yet.
    let made = start - Duration::days(1);
    let app = host(url, dir, made).await;
    let state = app.state();
    let store = state.store().clone();
    let catalog = state.catalog();
    let protocol = catalog
        .protocols()
        .iter()
        .find(|p| p.def.key == "rom_monthly")
        .expect("the monthly protocol")
        .clone();
    let zone = state.config().time_zone;

    let seeding = Instant::now();
    let at_seeding = scheduler::planner(catalog.clone(), zone, made);
    let workers = 64;
    let mut tasks = Vec::new();
    for w in 0..workers {
        let store = store.clone();
        let planner = at_seeding.clone();
        let protocol = protocol.clone();
        tasks.push(tokio::spawn(async move {
            for n in (w..count).step_by(workers) {
                let mut new = NewSubscription {
                    epd_id: format!("bench-{n}"),
                    protocol_id: protocol.id,
                    start_at: start,
                    stop_at: protocol.def.duration.and_then(|d| d.after(start, zone)),
                    daily_start_time: 9 * 3600,
                    variant: Variant::default(),
                    first_due: None,
                    now: made,
                };
                new.first_due = new.draft().first_due(&protocol, zone);
                match store.start_subscription(new, planner.clone()).await {
                    Ok(StartResult::Started(_, prepared)) => assert!(prepared.is_empty()),
                    other => panic!("a subscription: {other:?}"),
                }
            }
        }));
    }
    for task in tasks {
        task.await.expect("seeding");
    }
    println!(
        "{name}: {count} subscriptions made in {:.1} s (setup, not measured)",
        seeding.elapsed().as_secs_f64()
    );

    let at = start + Duration::hours(1);
    let ticking = Instant::now();
    let counts = scheduler::tick(state.scheduler(), at)
        .await
        .expect("a tick");
    let tick = ticking.elapsed().as_secs_f64();
    assert_eq!(counts.invitations, count, "{counts:?}");
    println!(
        "{name}: one tick prepared {} occurrences ({} responses) in {tick:.2} s: {:.0} occurrences/s; goal ≤ {GOAL_TICK_SECONDS} s: {}",
        counts.invitations,
        counts.responses,
        counts.invitations as f64 / tick,
        verdict(name, tick <= GOAL_TICK_SECONDS),
    );
    let again = Instant::now();
    let idle = scheduler::tick(state.scheduler(), at)
        .await
        .expect("a tick");
    assert_eq!(idle.invitations, 0);
    println!(
        "{name}: a tick with nothing due: {:.1} ms",
        again.elapsed().as_secs_f64() * 1000.0
    );

    let ids: Vec<String> = (0..STATS_DOSSIERS.min(count))
        .map(|n| format!("bench-{}", n * (count / STATS_DOSSIERS.min(count)).max(1)))
        .collect();
    let counting = Instant::now();
    let stats = store.stats(Some(&ids), at).await.expect("stats");
    let some = counting.elapsed().as_secs_f64();
    assert_eq!(stats.len(), ids.len());
    assert!(stats.values().all(|s| s.responses.open == 2));
    let counting = Instant::now();
    let all = store.stats(None, at).await.expect("stats");
    let every = counting.elapsed().as_secs_f64();
    assert_eq!(all.len(), count);
    println!(
        "{name}: stats of {} dossiers in {:.0} ms (goal ≤ {GOAL_STATS_SECONDS} s: {}); of all {} in {:.0} ms",
        ids.len(),
        some * 1000.0,
        verdict(name, some <= GOAL_STATS_SECONDS),
        all.len(),
        every * 1000.0
    );
    store.close().await;
}

fn verdict(name: &str, met: bool) -> &'static str {
    match (name, met) {
        ("SQLite", true) => "met",
        ("SQLite", false) => "NOT met",
        _ => "reported",
    }
}

/// A fresh PostgreSQL database for the bench, and how to drop it.
async fn postgres_database() -> Option<(
    String,
    impl FnOnce() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>,
)> {
    sqlx::any::install_default_drivers();
    let base = std::env::var("OUTCOMES_BENCH_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let mut admin = sqlx::AnyConnection::connect(&base).await.ok()?;
    let name = format!("outcomes_bench_{}", std::process::id());
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .await
        .ok()?;
    let _ = admin.close().await;
    let (prefix, _) = base.rsplit_once('/')?;
    let url = format!("{prefix}/{name}");
    let drop = move || -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>> {
        Box::pin(async move {
            if let Ok(mut admin) = sqlx::AnyConnection::connect(&base).await {
                let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&mut admin)
                    .await;
            }
        })
    };
    Some((url, drop))
}
