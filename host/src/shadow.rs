//! Shadow scoring: a candidate version of a scorer scores every response
//! the serving version scores, in the background, and what it makes of
//! each is compared with the stored outcome; differences are recorded per
//! response with both outcomes (docs/operations.md#verifying-outcomes-and-trying-a-new-scorer).
//!
//! A consequence of storing, not a call to remember: the store hands every
//! completion it stored, whatever path stored it, to the shadow's
//! [`Queue`] (a `store::CompletionSink`, given to the store at start), and
//! the queue keeps it only while a candidate of its scorer is on trial
//! (`crate::trials`). Candidates live in the database
//! (`store/candidates.rs`), so every host sharing it shadows with the same
//! one; each host reads them every few seconds ([`refresh`]) and sets the
//! trials. Off the request's path: the queue is bounded and never waits
//! (a full queue drops the job and counts it), and one worker per host
//! drains it in batches ([`run`]), building each candidate's input with
//! the function that builds the serving input (`scoring::scorer_input_for`)
//! on a thread that gets only idle CPU, and writing the counts at most
//! every half second, differences at once.
//!
//! Must not: touch stored outcomes, make a request wait, or decide which
//! version serves (that is `trials.rs`; this file only sets it from the
//! database).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use plugin_sdk::{PluginKind, ScorerOutput};
use tokio::sync::{mpsc, oneshot};

use crate::clock::Clock;
use crate::domain::answers::Answers;
use crate::domain::outcome::Outcome;
use crate::domain::questionnaire::{Questionnaire, sha256_hex};
use crate::domain::variant::Variant;
use crate::metrics::Metrics;
use crate::plugins::{Background, Plugin, Plugins};
use crate::scoring::{ScoringContext, finish, scorer_input_for};
use crate::store::{
    CompletionSink, ShadowDifference, ShadowTally, Store, StoreError, StoredCompletion,
};
use crate::trials::{OnTrial, Trials};

/// Jobs a host keeps waiting for its worker; more are dropped (counted).
pub const QUEUE: usize = 4096;

/// Jobs the worker takes at once, written in one write.
const BATCH: usize = 256;

/// One stored response for a candidate to score: what rebuilds the input
/// the serving version read, and what it made of it.
#[derive(Debug)]
pub struct Job {
    pub response_id: i64,
    pub candidate: Arc<Plugin>,
    /// The definition the response was scored with.
    pub questionnaire: Arc<Questionnaire>,
    pub answers: Answers,
    pub variant: Variant,
    pub completed_at: DateTime<Utc>,
    pub professional: bool,
    /// What the serving version made of it, as stored.
    pub live: Outcome,
    pub live_sha256: Option<String>,
}

/// The shadow's queue: the store's completion sink. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Queue(Arc<QueueInner>);

#[derive(Debug)]
struct QueueInner {
    sender: mpsc::Sender<Job>,
    /// Taken by the worker when it starts.
    receiver: Mutex<Option<mpsc::Receiver<Job>>>,
    /// Jobs dropped since last written, by plugin name and candidate hash.
    dropped: Mutex<HashMap<(String, String), i64>>,
    /// Jobs the worker finished (their counts and differences written),
    /// for whoever waits on one (tests).
    done: tokio::sync::watch::Sender<u64>,
    /// Which candidate, if any, a stored completion goes to.
    trials: Arc<Trials>,
    metrics: Arc<Metrics>,
}

impl Queue {
    pub fn new(trials: Arc<Trials>, metrics: Arc<Metrics>) -> Queue {
        Queue::with_capacity(QUEUE, trials, metrics)
    }

    pub fn with_capacity(capacity: usize, trials: Arc<Trials>, metrics: Arc<Metrics>) -> Queue {
        let (sender, receiver) = mpsc::channel(capacity.max(1));
        Queue(Arc::new(QueueInner {
            sender,
            receiver: Mutex::new(Some(receiver)),
            dropped: Mutex::new(HashMap::new()),
            done: tokio::sync::watch::Sender::new(0),
            trials,
            metrics,
        }))
    }

    /// Hands a job to the worker without waiting: when the queue is full
    /// it is dropped and counted.
    fn submit(&self, job: Job) {
        let key = (
            job.candidate.name().to_owned(),
            job.candidate.sha256.clone(),
        );
        if self.0.sender.try_send(job).is_err() {
            self.0.metrics.inc(
                crate::metrics::families::SHADOW_DROPPED,
                &[("plugin", key.0.as_str())],
            );
            *self
                .0
                .dropped
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .entry(key)
                .or_default() += 1;
        }
    }

    /// Tells of every batch the worker finished: the jobs done so far.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.0.done.subscribe()
    }

    fn take_dropped(&self) -> Vec<ShadowTally> {
        std::mem::take(
            &mut *self
                .0
                .dropped
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
        .into_iter()
        .map(|((plugin, candidate_sha256), dropped)| ShadowTally {
            plugin,
            candidate_sha256,
            calls: 0,
            dropped,
        })
        .collect()
    }
}

impl CompletionSink for Queue {
    /// A job for the candidate of the scorer that scored `stored`, if one
    /// is on trial and a serving version scored it (not one that was not
    /// loaded); dropped otherwise.
    fn stored(&self, stored: StoredCompletion) {
        let completion = stored.completion;
        if completion.provenance.sha256.is_none() {
            return;
        }
        let Some(candidate) = self.0.trials.candidate(&stored.definition.scorer) else {
            return;
        };
        self.submit(Job {
            response_id: stored.response_id.0,
            candidate,
            questionnaire: stored.definition,
            answers: completion.answers,
            variant: completion.variant,
            completed_at: completion.completed_at,
            professional: stored.professional,
            live: completion.outcome,
            live_sha256: completion.provenance.sha256,
        });
    }
}

/// A host's shadow scoring: its queue, and what its worker and
/// [`refresh`] read and write.
#[derive(Debug, Clone)]
pub struct Shadow {
    queue: Queue,
    store: Store,
    clock: Arc<dyn Clock>,
    /// The candidate rows the trials were last built from.
    seen: Arc<tokio::sync::Mutex<Vec<CandidateRow>>>,
}

/// A candidate row as [`refresh`] compares them: name, hash, the hash of
/// the folder version it is tried against, promoted or not.
type CandidateRow = (String, String, String, bool);

impl Shadow {
    /// The shadow of `queue` (the sink `store` was given), writing to
    /// `store` at times read from `clock`.
    pub fn new(queue: Queue, store: Store, clock: Arc<dyn Clock>) -> Shadow {
        Shadow {
            queue,
            store,
            clock,
            seen: Arc::default(),
        }
    }

    /// Tells of every batch the worker finished: the jobs done so far.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.queue.subscribe()
    }

    fn trials(&self) -> &Arc<Trials> {
        &self.queue.0.trials
    }

    fn metrics(&self) -> &Metrics {
        &self.queue.0.metrics
    }
}

/// Reads the candidates from the database and loads any new one from the
/// module archive (its bytes checked against its hash); the trials change
/// only when the rows did. Writes the counts of dropped jobs first.
pub async fn refresh(shadow: &Shadow) -> Result<(), StoreError> {
    let dropped = shadow.queue.take_dropped();
    if !dropped.is_empty() {
        shadow
            .store
            .record_shadow(dropped, Vec::new(), shadow.clock.now())
            .await?;
    }
    let mut seen = shadow.seen.lock().await;
    let rows = shadow.store.candidates().await?;
    let now: Vec<CandidateRow> = rows
        .iter()
        .map(|c| {
            (
                c.name.clone(),
                c.sha256.clone(),
                c.live_sha256.clone(),
                c.promoted_at.is_some(),
            )
        })
        .collect();
    if *seen == now {
        return Ok(());
    }
    let current = shadow.trials().on_trial();
    let mut trials = OnTrial::default();
    for (name, sha, live_sha, promoted) in &now {
        let Some(plugin) = candidate_plugin(shadow, &current, sha).await? else {
            continue;
        };
        if plugin.name() != name || plugin.kind() != PluginKind::Scorer {
            tracing::warn!(
                candidate = name,
                "the candidate module is not a scorer of that name; ignored"
            );
            continue;
        }
        if *promoted {
            trials
                .promoted
                .insert(name.clone(), (live_sha.clone(), plugin));
        } else {
            trials.candidates.insert(name.clone(), plugin);
        }
    }
    tracing::info!(
        candidates = trials.candidates.len(),
        promoted = trials.promoted.len(),
        "scorer versions on trial changed"
    );
    shadow.trials().set(trials);
    *seen = now;
    Ok(())
}

/// The candidate module with hash `sha`: as loaded before, else from the
/// archive. None (logged) when it is missing, altered or refused.
async fn candidate_plugin(
    shadow: &Shadow,
    current: &OnTrial,
    sha: &str,
) -> Result<Option<Arc<Plugin>>, StoreError> {
    if let Some(p) = current
        .candidates
        .values()
        .chain(current.promoted.values().map(|(_, p)| p))
        .find(|p| p.sha256 == sha)
    {
        return Ok(Some(p.clone()));
    }
    let Some(bytes) = shadow.store.archived_module(sha).await? else {
        tracing::error!(sha256 = sha, "the candidate module is not in the archive");
        return Ok(None);
    };
    if sha256_hex(&bytes) != sha {
        tracing::error!(
            sha256 = sha,
            "the archived candidate module does not match its hash; not used"
        );
        return Ok(None);
    }
    let plugins = shadow.trials().plugins().clone();
    let loaded = tokio::task::spawn_blocking(move || plugins.load_module(&bytes)).await;
    match loaded {
        Ok(Ok(plugin)) => Ok(Some(Arc::new(plugin))),
        Ok(Err(e)) => {
            tracing::error!(sha256 = sha, error = %e, "the candidate module was refused");
            Ok(None)
        }
        Err(e) => {
            tracing::error!(sha256 = sha, error = %e, "loading the candidate module failed");
            Ok(None)
        }
    }
}

/// The worker: takes jobs in batches, has each candidate score its
/// response, compares with the serving version's outcome, and writes the
/// counts and differences. Ends when the queue is closed, or when it is
/// dropped (aborted).
///
/// The candidates' calls run on a thread of their own that runs only when
/// a core would otherwise idle ([`Background::Idle`]), one batch at a
/// time: on a busy machine the serving version's calls, the requests and
/// the writer go first, and when the shadow falls behind its queue fills
/// and further jobs are dropped and counted, rather than taking the CPU a
/// request waits for. Every write queues at the writer that POSTs wait
/// for, so counts are written at most every [`WRITE_EVERY`] (a difference
/// at once): a busy host would otherwise add a write for every few
/// responses (docs/benchmarks.md has the cost).
pub async fn run(shadow: Shadow) {
    let taken = shadow
        .queue
        .0
        .receiver
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    let Some(mut receiver) = taken else {
        return;
    };
    let Some(scorer) = ShadowThread::start(shadow.trials().plugins().clone()) else {
        return;
    };
    let mut batch = Vec::with_capacity(BATCH);
    let mut unwritten = Scored::default();
    let mut written = tokio::time::Instant::now();
    loop {
        let received = if unwritten.tallies.is_empty() {
            receiver.recv_many(&mut batch, BATCH).await
        } else {
            // None came before the write is due: 0.
            let next = receiver.recv_many(&mut batch, BATCH);
            tokio::time::timeout_at(written + WRITE_EVERY, next)
                .await
                .unwrap_or(0)
        };
        if received > 0 {
            let Some(scored) = scorer.score(std::mem::take(&mut batch)).await else {
                tracing::error!("the shadow scoring thread stopped; candidates score no more");
                return;
            };
            unwritten.add(scored);
        }
        let closed = received == 0 && receiver.is_closed() && receiver.is_empty();
        let due = received == 0 || written.elapsed() >= WRITE_EVERY;
        if !unwritten.tallies.is_empty() && (due || !unwritten.differences.is_empty() || closed) {
            write(&shadow, std::mem::take(&mut unwritten)).await;
            written = tokio::time::Instant::now();
        }
        if closed {
            return;
        }
    }
}

/// The share of one core the shadow thread may take while it has work:
/// after scoring a batch it rests three times as long. Even on idle CPU
/// its work slows a busy host: every hand-off between the threads a POST
/// passes through (request, writer, SQLite) that finds the cores busy
/// waits to preempt it (docs/benchmarks.md#shadow-scoring). On a host
/// near its capacity the shadow then falls behind and drops (counted);
/// at a clinic's load it scores every response.
const DUTY: f64 = 0.25;

/// How often the worker writes its counts while it is busy.
const WRITE_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// Writes what the candidates made of some jobs, and tells of them.
async fn write(shadow: &Shadow, scored: Scored) {
    // Every job is one call in the tallies.
    let jobs = scored.tallies.values().sum::<i64>().unsigned_abs();
    for difference in &scored.differences {
        shadow.metrics().inc(
            crate::metrics::families::SHADOW_DIFFERENCES,
            &[("plugin", difference.plugin.as_str())],
        );
    }
    let tallies = scored
        .tallies
        .into_iter()
        .map(|((plugin, candidate_sha256), calls)| ShadowTally {
            plugin,
            candidate_sha256,
            calls,
            dropped: 0,
        })
        .collect();
    if let Err(e) = shadow
        .store
        .record_shadow(tallies, scored.differences, shadow.clock.now())
        .await
    {
        tracing::warn!(error = %e, "shadow scoring counts and differences were not written");
    }
    shadow.queue.0.done.send_modify(|n| *n += jobs);
}

/// What the candidates made of some jobs.
#[derive(Default)]
struct Scored {
    /// Calls by plugin name and candidate hash.
    tallies: HashMap<(String, String), i64>,
    differences: Vec<ShadowDifference>,
}

impl Scored {
    fn add(&mut self, other: Scored) {
        for (key, calls) in other.tallies {
            *self.tallies.entry(key).or_default() += calls;
        }
        self.differences.extend(other.differences);
    }
}

type Batch = (Vec<Job>, oneshot::Sender<Scored>);

/// The thread the candidates' calls run on; it ends when this is dropped.
struct ShadowThread {
    batches: mpsc::Sender<Batch>,
}

impl ShadowThread {
    /// None (logged) when the thread cannot start.
    fn start(plugins: Arc<Plugins>) -> Option<ShadowThread> {
        let (batches, mut receiver) = mpsc::channel::<Batch>(1);
        let runtime = tokio::runtime::Handle::current();
        let started = std::thread::Builder::new()
            .name("shadow-scoring".into())
            .spawn(move || {
                crate::plugins::lower_priority(Background::Idle);
                while let Some((jobs, reply)) = receiver.blocking_recv() {
                    let started = std::time::Instant::now();
                    let _ = reply.send(runtime.block_on(score(&plugins, jobs)));
                    // Rest in proportion to the work: at most DUTY of one core.
                    std::thread::sleep(started.elapsed().mul_f64((1.0 - DUTY) / DUTY));
                }
            });
        match started {
            Ok(_) => Some(ShadowThread { batches }),
            Err(e) => {
                tracing::error!(error = %e, "the shadow scoring thread cannot start");
                None
            }
        }
    }

    /// Has the thread score `jobs`; None when it has stopped.
    async fn score(&self, jobs: Vec<Job>) -> Option<Scored> {
        let (reply, answer) = oneshot::channel();
        self.batches.send((jobs, reply)).await.ok()?;
        answer.await.ok()
    }
}

/// Has each job's candidate score its response and compares the outcome
/// with the serving version's. A scoring call runs inline on the calling
/// thread (`Plugins::shadow_call`), here the shadow thread.
async fn score(plugins: &Plugins, jobs: Vec<Job>) -> Scored {
    // Failures of a candidate are not the service's scoring failures.
    let quiet = Metrics::default();
    let mut scored = Scored::default();
    for job in jobs {
        let Job {
            response_id,
            candidate,
            questionnaire,
            answers,
            variant,
            completed_at,
            professional,
            live,
            live_sha256,
        } = job;
        // The input the serving version read, as the candidate's manifest
        // asks for it.
        let ctx = ScoringContext {
            completed_at,
            professional,
            variant: &variant,
        };
        let input = scorer_input_for(&candidate, &questionnaire, &answers, ctx);
        let call = plugins
            .shadow_call::<ScorerOutput>(candidate.clone(), input)
            .await;
        let (outcome, _) = finish(&quiet, &questionnaire, &candidate, call.result);
        *scored
            .tallies
            .entry((candidate.name().to_owned(), candidate.sha256.clone()))
            .or_default() += 1;
        // Equal values write equal text; only unequal ones (a NaN, say)
        // are compared as the text that is stored.
        if live == outcome {
            continue;
        }
        let (live_text, candidate_text) = (text(&live), text(&outcome));
        if live_text != candidate_text {
            scored.differences.push(ShadowDifference {
                plugin: candidate.name().to_owned(),
                candidate_sha256: candidate.sha256.clone(),
                live_sha256,
                response_id,
                live_outcome: live_text,
                candidate_outcome: candidate_text,
            });
        }
    }
    scored
}

fn text(outcome: &crate::domain::outcome::Outcome) -> String {
    serde_json::to_string(outcome).unwrap_or_default()
}
