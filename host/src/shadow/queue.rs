//! The shadow's queue: the store's completion sink (`store/completions.rs`).
//! A completion stored while a candidate of its scorer is on trial
//! (`crate::trials`) becomes a [`Job`] for the worker; any other is
//! dropped at once. Never waits: a full queue drops the job and counts it
//! (by plugin and candidate, written by the next refresh).
//!
//! Must not: copy or keep a completion no candidate will score, or block
//! the task that stored it (the writer's own thread for a POST).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, watch};

use crate::domain::answers::Answers;
use crate::domain::outcome::Outcome;
use crate::domain::questionnaire::Questionnaire;
use crate::domain::variant::Variant;
use crate::metrics::Metrics;
use crate::plugins::Plugin;
use crate::store::{CompletionSink, ShadowTally, StoredCompletion};
use crate::trials::Trials;

/// Jobs a host keeps waiting for its worker; more are dropped (counted).
pub const QUEUE: usize = 4096;

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
    done: watch::Sender<u64>,
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
            done: watch::Sender::new(0),
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
                .unwrap_or_else(PoisonError::into_inner)
                .entry(key)
                .or_default() += 1;
        }
    }

    /// Tells of every batch the worker finished: the jobs done so far.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.0.done.subscribe()
    }

    /// The jobs' end, for the one worker that takes it.
    pub(super) fn take_receiver(&self) -> Option<mpsc::Receiver<Job>> {
        self.0
            .receiver
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// `jobs` more are done (their counts and differences written).
    pub(super) fn done(&self, jobs: u64) {
        self.0.done.send_modify(|n| *n += jobs);
    }

    pub(super) fn trials(&self) -> &Arc<Trials> {
        &self.0.trials
    }

    pub(super) fn metrics(&self) -> &Metrics {
        &self.0.metrics
    }

    /// The counts of jobs dropped since last taken.
    pub(super) fn take_dropped(&self) -> Vec<ShadowTally> {
        std::mem::take(
            &mut *self
                .0
                .dropped
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
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
