//! The shadow's worker: takes the queued jobs in batches, has each
//! candidate score its response on a thread of its own that gets only idle
//! CPU and at most a quarter of one core, compares with the serving
//! version's stored outcome, and writes the counts (at most every half
//! second) and differences (at once). The candidate's input is built here
//! with `scoring::scorer_input_for`, the function that built the serving
//! input.
//!
//! Must not: touch a stored outcome, or take CPU a request waits for.
//!
//! Jobs are taken up to `BATCH` (256) at a time; the thread runs under
//! `SCHED_IDLE` (`plugins::lower_priority`), and after each batch rests
//! three times as long as it scored (`DUTY`).

use std::collections::HashMap;
use std::sync::Arc;

use plugin_sdk::ScorerOutput;
use tokio::sync::{mpsc, oneshot};

use super::queue::{Job, Queue};
use crate::clock::Clock;
use crate::metrics::Metrics;
use crate::plugins::{Background, Plugins};
use crate::scoring::{ScoringContext, finish, scorer_input_for};
use crate::store::{ShadowDifference, ShadowTally, Store};

/// Jobs the worker takes at once, written in one write.
const BATCH: usize = 256;

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
pub(super) async fn run(queue: Queue, store: Store, clock: Arc<dyn Clock>) {
    let Some(mut receiver) = queue.take_receiver() else {
        return;
    };
    let Some(scorer) = ShadowThread::start(queue.trials().plugins().clone()) else {
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
            let scored = std::mem::take(&mut unwritten);
            write(&queue, &store, &*clock, scored).await;
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
async fn write(queue: &Queue, store: &Store, clock: &dyn Clock, scored: Scored) {
    // Every job is one call in the tallies.
    let jobs = scored.tallies.values().sum::<i64>().unsigned_abs();
    for difference in &scored.differences {
        queue.metrics().inc(
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
    if let Err(e) = store
        .record_shadow(tallies, scored.differences, clock.now())
        .await
    {
        tracing::warn!(error = %e, "shadow scoring counts and differences were not written");
    }
    queue.done(jobs);
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
