//! The alarm phase (`--alarms`): alarm delivery with real processes, the
//! goals of #32. The server runs with `--alarm-deadline` (default 60 s,
//! the shortest allowed), its global `--alarm-webhook-url` at the
//! benchmark's own receiver on loopback (`receiver`; allowed with
//! `--callback-allowed-networks 127.0.0.1/32`) and the key `outcomes alarm
//! webhook-secret` makes; the scheduler at its default interval unless
//! `--alarm-scheduler-interval` says otherwise.
//!
//! 1. Steady: `--alarm-rate` PHQ-9s per second whose item 9 is answered 1
//!    (an alarm; questionnaires/phq9) and as many ordinary ones (every
//!    item 0: no alarm), open-loop, for `--alarm-seconds`. Each alarm's
//!    time from the POST's 201 to its raised event's arrival is the
//!    delivery latency (goal: p99 under 5 s). Every fourth alarm is
//!    acknowledged when its event arrives; the others must each be
//!    escalated, and the escalation's arrival minus the alarm's deadline
//!    is the lateness (goal: under a minute).
//! 2. Outage (`--alarm-outage` seconds, default 600; 0 skips it): once
//!    every event of the steady part has arrived, the receiver closes its
//!    port (connections are refused) while the same load goes on; then it
//!    listens again and the phase waits until every event owed arrived:
//!    each alarm's raising and each escalation (none is acknowledged
//!    here). How long after the receiver came back the last one arrived
//!    is reported.
//!
//! Every call's signature is checked at the receiver; a `webhook-id`
//! arriving again after its 2xx, an alarm's event sent under two ids, an
//! event nobody is owed, or a signature that fails makes the phase fail,
//! as does an owed event that never arrives. The alarms' states in the
//! database are checked against what was acknowledged.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use sqlx::{AnyConnection, Connection, Row};

use super::alarm_tally::{self, Part, Posted, RAISED, Summary, Tally};
use super::args::BenchArgs;
use super::load::{self, Target};
use super::receiver::{Arrival, Receiver};
use super::server::{Backend, Fresh, Server};

/// Goals of #32.
pub const GOAL_FIRST_ATTEMPT_P99_S: f64 = 5.0;
pub const GOAL_ESCALATION_LATE_S: f64 = 60.0;

/// Every this many alarms of the steady part, one is acknowledged.
const ACKNOWLEDGE_EVERY: usize = 4;
/// Dossiers the POSTs are spread over.
const DOSSIERS: usize = 100;
/// How long after the receiver is back the phase waits for the events
/// owed before it fails: past the longest retry delay a 10-minute outage
/// meets (10 minutes) and the escalations of what was posted last.
const RECOVERY_LIMIT: Duration = Duration::from_secs(40 * 60);
/// The server's scheduler interval when none is given (`serve`'s default).
const DEFAULT_SCHEDULER_INTERVAL: u64 = 60;

/// What the phase measured.
#[derive(Debug)]
pub struct AlarmReport {
    pub steady: Tally,
    pub outage: Option<OutageReport>,
    /// Everything held against everything: duplicates and strays of the
    /// whole run, escalation records.
    pub all: Tally,
    pub post_errors: u64,
    pub acknowledge_errors: u64,
}

#[derive(Debug)]
pub struct OutageReport {
    pub tally: Tally,
    pub seconds: u64,
    /// From the receiver listening again to the last owed event's arrival.
    pub last_after_back: Option<f64>,
    /// The same for the last raised event (escalations of the alarms
    /// posted last fall due after the receiver is back).
    pub last_raised_after_back: Option<f64>,
    /// Calls answered 503 in the moment the receiver went down.
    pub refused: u64,
}

impl AlarmReport {
    pub fn first_attempt(&self) -> Option<Summary> {
        Summary::of(&self.steady.first_attempt)
    }

    pub fn escalation_arrival(&self) -> Option<Summary> {
        Summary::of(&self.steady.escalation_arrival)
    }

    /// Whether every owed event arrived once, and nothing else.
    pub fn delivered_all(&self) -> bool {
        self.all.complete() && self.all.clean() && self.post_errors == 0
    }
}

pub async fn alarm_phase(
    backend: Backend,
    args: &BenchArgs,
    binary: &Path,
    root: &Path,
    fresh: &Fresh,
) -> anyhow::Result<AlarmReport> {
    anyhow::ensure!(
        args.alarm_rate.is_finite() && args.alarm_rate > 0.0 && args.alarm_seconds > 0,
        "--alarm-rate and --alarm-seconds must be positive"
    );
    let mut receiver = Receiver::start().await?;
    let interval = args
        .alarm_scheduler_interval
        .unwrap_or(DEFAULT_SCHEDULER_INTERVAL);
    let mut extra = vec![
        "--alarm-deadline".to_owned(),
        args.alarm_deadline.to_string(),
        "--alarm-webhook-url".to_owned(),
        receiver.url(),
        "--callback-allowed-networks".to_owned(),
        "127.0.0.1/32".to_owned(),
    ];
    if let Some(interval) = args.alarm_scheduler_interval {
        extra.extend(["--scheduler-interval".to_owned(), interval.to_string()]);
    }
    let server = Server::start_with_args(binary, root, fresh, &extra).await?;
    receiver.set_key(&webhook_secret(binary, fresh)?)?;
    println!("Alarms: plugins: {}", server.plugins().await);
    println!(
        "Alarms: {} at {}; deadline {} s, scheduler every {interval} s; receiver {}",
        backend.name(),
        server.addr(),
        args.alarm_deadline,
        receiver.url()
    );
    let state = Arc::new(Posting::default());
    let target = server.target().clone();

    // 1. Steady.
    println!(
        "Alarms (steady): {:.0} alarms/s and {:.0} ordinary POSTs/s for {} s, open-loop; every {ACKNOWLEDGE_EVERY}th alarm acknowledged when its event arrives",
        args.alarm_rate, args.alarm_rate, args.alarm_seconds
    );
    let mut acknowledger = Acknowledger::default();
    let poster = tokio::spawn(post_open_loop(
        target.clone(),
        state.clone(),
        args.alarm_rate,
        Duration::from_secs(args.alarm_seconds),
        0,
        Part::Steady,
    ));
    let steady_end = Instant::now() + Duration::from_secs(args.alarm_seconds);
    let limit = steady_end
        + Duration::from_secs(args.alarm_deadline + 2 * interval)
        + Duration::from_secs(120);
    let next = loop {
        acknowledger.acknowledge(&target, &state, &receiver.arrivals());
        if poster.is_finished() {
            break poster.await.context("the posting task")?;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let steady = loop {
        acknowledger.acknowledge(&target, &state, &receiver.arrivals());
        let t = part_tally(&state, Part::Steady, &acknowledger, &receiver.arrivals());
        if (t.complete() && acknowledger.settled()) || Instant::now() > limit {
            break t;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    println!("      {}", steady.describe());
    if let Some(s) = Summary::of(&steady.first_attempt) {
        println!("      201 → first delivery attempt: {}", s.describe());
    }
    if let Some(s) = Summary::of(&steady.escalation_arrival) {
        println!(
            "      escalation's arrival − deadline: {} (recorded escalated_at − deadline: {})",
            s.describe(),
            Summary::of(&steady.escalation_recorded).map_or("-".to_owned(), |s| s.describe())
        );
    }
    anyhow::ensure!(
        steady.complete(),
        "the steady part's events did not all arrive within {} s of its last POST: {}",
        limit.saturating_duration_since(steady_end).as_secs(),
        steady.describe()
    );

    // 2. Outage.
    let outage = if args.alarm_outage > 0 {
        println!(
            "Alarms (outage): the receiver refuses connections for {} s while the same load goes on, then listens again",
            args.alarm_outage
        );
        receiver.go_down().await;
        let poster = tokio::spawn(post_open_loop(
            target.clone(),
            state.clone(),
            args.alarm_rate,
            Duration::from_secs(args.alarm_outage),
            next,
            Part::Outage,
        ));
        poster.await.context("the posting task")?;
        receiver.come_back().await?;
        let back = Instant::now();
        println!(
            "      receiver back after {} s; waiting for every event owed (at most {} s)",
            args.alarm_outage,
            RECOVERY_LIMIT.as_secs()
        );
        let mut reported = back;
        let tally = loop {
            let t = part_tally(&state, Part::Outage, &acknowledger, &receiver.arrivals());
            if t.complete() || back.elapsed() > RECOVERY_LIMIT {
                break t;
            }
            if reported.elapsed() > Duration::from_secs(60) {
                reported = Instant::now();
                println!(
                    "      {:.0} s after: {} of {} events",
                    back.elapsed().as_secs_f64(),
                    t.delivered(),
                    t.expected()
                );
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        let after_back =
            |at: Option<Instant>| at.map(|at| at.saturating_duration_since(back).as_secs_f64());
        let last_after_back = after_back(tally.last_arrival);
        let last_raised_after_back = after_back(tally.last_raised);
        let shown = |s: Option<f64>| s.map_or("-".to_owned(), |s| format!("{s:.1} s"));
        println!("      {}", tally.describe());
        println!(
            "      after the receiver came back: the last raised event arrived {}, the last event {}",
            shown(last_raised_after_back),
            shown(last_after_back)
        );
        Some(OutageReport {
            tally,
            seconds: args.alarm_outage,
            last_after_back,
            last_raised_after_back,
            refused: receiver.refused(),
        })
    } else {
        None
    };
    // A moment for anything late or repeated to show.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let all = part_tally_all(&state, &acknowledger, &receiver.arrivals());
    let post_errors = lock(&state.errors).values().sum();
    let report = AlarmReport {
        steady,
        outage,
        all,
        post_errors,
        acknowledge_errors: acknowledger.errors(),
    };
    let states = alarm_states(&fresh.url()).await?;
    server.stop();
    println!("      all: {}", report.all.describe());
    if let Some(s) = Summary::of(&report.all.escalation_recorded) {
        println!(
            "      every escalation, recorded escalated_at − deadline: {}",
            s.describe()
        );
    }
    println!(
        "      in the database: {}",
        states
            .iter()
            .map(|(s, n)| format!("{n} {s}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some(sample) = lock(&state.error_sample).as_ref() {
        println!(
            "      POST errors: {:?}, e.g. {sample}",
            lock(&state.errors)
        );
    }
    anyhow::ensure!(
        report.post_errors == 0,
        "{} POSTs were not answered 201",
        report.post_errors
    );
    anyhow::ensure!(
        report.acknowledge_errors == 0,
        "{} acknowledgements failed",
        report.acknowledge_errors
    );
    anyhow::ensure!(
        report.all.clean(),
        "events arrived that must not: {}",
        report.all.describe()
    );
    anyhow::ensure!(
        report.all.complete(),
        "not every event owed arrived: {}",
        report.all.describe()
    );
    let acknowledged = report.all.acknowledged as u64;
    let escalated = (report.all.alarms - report.all.acknowledged) as u64;
    let expected = BTreeMap::from([
        ("acknowledged".to_owned(), acknowledged),
        ("escalated".to_owned(), escalated),
    ]);
    let found: BTreeMap<String, u64> = states.into_iter().filter(|(_, n)| *n > 0).collect();
    let expected: BTreeMap<String, u64> = expected.into_iter().filter(|(_, n)| *n > 0).collect();
    anyhow::ensure!(
        found == expected,
        "the database's alarm states {found:?} are not those expected {expected:?}"
    );
    Ok(report)
}

/// The `whsec_` key `outcomes alarm webhook-secret` makes for the global
/// endpoint, run against the server's database and data folder.
fn webhook_secret(binary: &Path, fresh: &Fresh) -> anyhow::Result<String> {
    let out = Command::new(binary)
        .args(["alarm", "webhook-secret", "--json", "--database-url"])
        .arg(fresh.url())
        .arg("--data-dir")
        .arg(fresh.dir.path().join("data"))
        .output()
        .context("running outcomes alarm webhook-secret")?;
    anyhow::ensure!(
        out.status.success(),
        "outcomes alarm webhook-secret failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("reading the webhook secret")?;
    Ok(printed["webhook_secret"]
        .as_str()
        .context("no webhook_secret printed")?
        .to_owned())
}

/// What the posting tasks found.
#[derive(Debug, Default)]
struct Posting {
    posted: Mutex<Vec<Posted>>,
    /// Alarms' responses to acknowledge when their event arrives, with
    /// their dossier.
    to_acknowledge: Mutex<BTreeMap<i64, String>>,
    errors: Mutex<BTreeMap<String, u64>>,
    error_sample: Mutex<Option<String>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Posts for `duration`: request `n` (from `first`) is due at `n / (2 *
/// rate)`, even ones raising an alarm, odd ones ordinary, each on its own
/// connection so that a slow answer holds up no other. The next `n`.
async fn post_open_loop(
    target: Target,
    state: Arc<Posting>,
    rate: f64,
    duration: Duration,
    first: usize,
    part: Part,
) -> usize {
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    let mut n = first;
    loop {
        let due = start + Duration::from_secs_f64((n - first) as f64 / (2.0 * rate));
        if due >= start + duration {
            break;
        }
        tokio::time::sleep_until(due.into()).await;
        let (target, state) = (target.clone(), state.clone());
        let acknowledge = part == Part::Steady && n.is_multiple_of(2 * ACKNOWLEDGE_EVERY);
        tasks.spawn(async move { post_one(&target, &state, n, part, acknowledge).await });
        n += 1;
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    n
}

/// The body of POST `n`: PHQ-9 with item 9 answered 1 (an alarm) for even
/// `n`, every item 0 (none) for odd.
fn body(n: usize) -> String {
    let item_9 = if n.is_multiple_of(2) { 1 } else { 0 };
    let mut body =
        format!(r#"{{"questionnaire_key":"phq9","external_id":"alarm-{n}","answer_data":{{"#);
    for q in 1..=9 {
        let answer = if q == 9 { item_9 } else { 0 };
        let _ = write!(
            body,
            r#"{}"v_{q}":"a{answer}""#,
            if q == 1 { "" } else { "," }
        );
    }
    body.push_str("}}");
    body
}

fn dossier(n: usize) -> String {
    format!("alarms-{}", n % DOSSIERS)
}

async fn post_one(target: &Target, state: &Posting, n: usize, part: Part, acknowledge: bool) {
    let path = format!("/api/v1/dossiers/{}/responses", dossier(n));
    let answer = load::post_once(target, &path, body(n)).await;
    let answered = Instant::now();
    let failure = match answer {
        Ok((201, text)) => {
            let id = serde_json::from_slice::<serde_json::Value>(&text)
                .ok()
                .and_then(|v| v["id"].as_i64());
            match id {
                Some(id) => {
                    lock(&state.posted).push(Posted {
                        response_id: id,
                        answered,
                        part,
                        raises: n.is_multiple_of(2),
                    });
                    if acknowledge {
                        lock(&state.to_acknowledge).insert(id, dossier(n));
                    }
                    return;
                }
                None => (
                    "201 without an id".to_owned(),
                    String::from_utf8_lossy(&text).into_owned(),
                ),
            }
        }
        Ok((status, text)) => (
            format!("HTTP {status}"),
            String::from_utf8_lossy(&text).into_owned(),
        ),
        Err(e) => ("transport error".to_owned(), format!("{e:#}")),
    };
    *lock(&state.errors).entry(failure.0).or_default() += 1;
    lock(&state.error_sample).get_or_insert(failure.1);
}

/// Acknowledges the alarms picked for it as their raised events arrive.
#[derive(Debug, Default)]
struct Acknowledger {
    /// Arrivals looked at so far.
    read: usize,
    started: HashSet<i64>,
    shared: Arc<Acknowledged>,
}

/// What the acknowledging tasks did.
#[derive(Debug, Default)]
struct Acknowledged {
    /// Under way.
    running: AtomicUsize,
    /// The alarms acknowledged (answered 200).
    done: Mutex<BTreeSet<i64>>,
    failures: Mutex<Vec<String>>,
}

impl Acknowledger {
    fn acknowledge(&mut self, target: &Target, state: &Posting, arrivals: &[Arrival]) {
        for arrival in &arrivals[self.read.min(arrivals.len())..] {
            if arrival.body["type"] != RAISED {
                continue;
            }
            let data = &arrival.body["data"];
            let (Some(response), Some(alarm)) = (data["response_id"].as_i64(), data["id"].as_i64())
            else {
                continue;
            };
            let Some(dossier) = lock(&state.to_acknowledge).get(&response).cloned() else {
                continue;
            };
            if !self.started.insert(alarm) {
                continue;
            }
            let (target, shared) = (target.clone(), self.shared.clone());
            shared.running.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let path = format!("/api/v1/dossiers/{dossier}/alarms/{alarm}/acknowledge");
                let body = r#"{"professional":"bench","note":"benchmark"}"#.to_owned();
                match load::post_once(&target, &path, body).await {
                    Ok((200, _)) => {
                        lock(&shared.done).insert(alarm);
                    }
                    Ok((status, text)) => lock(&shared.failures).push(format!(
                        "POST {path}: HTTP {status}: {}",
                        String::from_utf8_lossy(&text)
                    )),
                    Err(e) => lock(&shared.failures).push(format!("POST {path}: {e:#}")),
                }
                shared.running.fetch_sub(1, Ordering::SeqCst);
            });
        }
        self.read = arrivals.len();
    }

    /// No acknowledgement is under way.
    fn settled(&self) -> bool {
        self.shared.running.load(Ordering::SeqCst) == 0
    }

    /// The alarms acknowledged so far.
    fn done(&self) -> BTreeSet<i64> {
        lock(&self.shared.done).clone()
    }

    fn errors(&self) -> u64 {
        let failures = lock(&self.shared.failures);
        if let Some(first) = failures.first() {
            eprintln!("xtask: acknowledging failed: {first}");
        }
        failures.len() as u64
    }
}

/// The tally of one part's POSTs and the events of their alarms.
fn part_tally(state: &Posting, part: Part, ack: &Acknowledger, arrivals: &[Arrival]) -> Tally {
    let posted: Vec<Posted> = lock(&state.posted)
        .iter()
        .filter(|p| p.part == part)
        .cloned()
        .collect();
    let ours: HashSet<i64> = posted.iter().map(|p| p.response_id).collect();
    let arrivals: Vec<Arrival> = arrivals
        .iter()
        .filter(|a| {
            a.body["data"]["response_id"]
                .as_i64()
                .is_some_and(|r| ours.contains(&r))
        })
        .cloned()
        .collect();
    alarm_tally::tally(&posted, &ack.done(), &arrivals)
}

/// The tally of everything.
fn part_tally_all(state: &Posting, ack: &Acknowledger, arrivals: &[Arrival]) -> Tally {
    alarm_tally::tally(&lock(&state.posted), &ack.done(), arrivals)
}

/// How many alarms the database holds in each state.
async fn alarm_states(url: &str) -> anyhow::Result<BTreeMap<String, u64>> {
    sqlx::any::install_default_drivers();
    let mut conn = AnyConnection::connect(url)
        .await
        .context("connecting to count alarms")?;
    let rows = sqlx::query("SELECT state, COUNT(*) FROM alarms GROUP BY state")
        .fetch_all(&mut conn)
        .await?;
    let _ = conn.close().await;
    let mut states = BTreeMap::new();
    for row in rows {
        let state: String = row.try_get(0)?;
        let count: i64 = row.try_get(1)?;
        states.insert(state, u64::try_from(count)?);
    }
    Ok(states)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_posts_raise_an_alarm_and_odd_ones_do_not() {
        let alarm: serde_json::Value = serde_json::from_str(&body(4)).expect("json");
        assert_eq!(alarm["answer_data"]["v_9"], "a1");
        assert_eq!(alarm["answer_data"]["v_1"], "a0");
        assert_eq!(alarm["external_id"], "alarm-4");
        let ordinary: serde_json::Value = serde_json::from_str(&body(5)).expect("json");
        assert_eq!(ordinary["answer_data"]["v_9"], "a0");
        assert_eq!(
            ordinary["answer_data"].as_object().map(|o| o.len()),
            Some(9)
        );
    }
}
