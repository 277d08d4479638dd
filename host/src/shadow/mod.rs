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
//! A candidate row is used only when its seal checks under the secrets
//! key (`trials::is_sealed`) and `plugin_allow` names its module: others
//! may write the database. A row refused is logged, counted
//! (`outcomes_plugin_candidates_refused`) and shown as `refused`.
//!
//! Must not: touch stored outcomes, make a request wait, or decide which
//! version serves (that is `trials.rs`; this file only sets it from the
//! database).
//!
//! Imports run one way: `queue` (the sink and its jobs) → `worker` (the
//! thread that scores them and the writes) → this file ([`Shadow`], and
//! [`refresh`], which sets the trials from the database).

mod queue;
mod worker;

use std::sync::Arc;

use plugin_sdk::PluginKind;

pub use queue::{Job, QUEUE, Queue};

use crate::auth::at_rest::SecretsKey;
use crate::clock::Clock;
use crate::domain::questionnaire::sha256_hex;
use crate::metrics::Metrics;
use crate::metrics::families::CANDIDATES_REFUSED;
use crate::plugins::{Plugin, Plugins};
use crate::store::{Store, StoreError, StoredCandidate};
use crate::trials::{self, OnTrial, Trials};

/// A host's shadow scoring: its queue, and what its worker and
/// [`refresh`] read and write.
#[derive(Debug, Clone)]
pub struct Shadow {
    queue: Queue,
    store: Store,
    clock: Arc<dyn Clock>,
    /// What checks the seals of candidate rows.
    secrets: Arc<SecretsKey>,
    metrics: Arc<Metrics>,
    /// The candidate rows the trials were last built from.
    seen: Arc<tokio::sync::Mutex<Vec<CandidateRow>>>,
}

/// A candidate row as [`refresh`] compares them: the row without its
/// counts (which change all the time and decide nothing).
type CandidateRow = StoredCandidate;

/// What [`refresh`] compares of a row.
fn compared(c: &StoredCandidate) -> CandidateRow {
    StoredCandidate {
        calls: 0,
        dropped: 0,
        differences: 0,
        ..c.clone()
    }
}

impl Shadow {
    /// The shadow of `queue` (the sink `store` was given), writing to
    /// `store` at times read from `clock`, believing candidate rows sealed
    /// with `secrets`.
    pub fn new(
        queue: Queue,
        store: Store,
        clock: Arc<dyn Clock>,
        secrets: Arc<SecretsKey>,
        metrics: Arc<Metrics>,
    ) -> Shadow {
        metrics.set(CANDIDATES_REFUSED, &[], 0.0);
        Shadow {
            queue,
            store,
            clock,
            secrets,
            metrics,
            seen: Arc::default(),
        }
    }

    /// Tells of every batch the worker finished: the jobs done so far.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.queue.subscribe()
    }

    fn trials(&self) -> &Arc<Trials> {
        self.queue.trials()
    }
}

/// Reads the candidates from the database and loads any new one from the
/// module archive (its row's seal checked, its hash in `plugin_allow`, its
/// bytes checked against its hash); the trials change only when the rows
/// did. Writes the counts of dropped jobs first.
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
    let now: Vec<CandidateRow> = rows.iter().map(compared).collect();
    if *seen == now {
        return Ok(());
    }
    let current = shadow.trials().on_trial();
    let mut trials = OnTrial::default();
    for row in &now {
        let name = &row.name;
        let plugin = match usable(shadow, &current, row).await? {
            Ok(plugin) => plugin,
            Err(why) => {
                tracing::error!(
                    candidate = %name,
                    sha256 = %row.sha256,
                    promoted = row.promoted_at.is_some(),
                    "the candidate scorer version serves nothing: {why}"
                );
                trials.refused.insert(name.clone(), why);
                continue;
            }
        };
        if row.promoted_at.is_some() {
            trials
                .promoted
                .insert(name.clone(), (row.live_sha256.clone(), plugin));
        } else {
            trials.candidates.insert(name.clone(), plugin);
        }
    }
    tracing::info!(
        candidates = trials.candidates.len(),
        promoted = trials.promoted.len(),
        refused = trials.refused.len(),
        "scorer versions on trial changed"
    );
    shadow
        .metrics
        .set(CANDIDATES_REFUSED, &[], trials.refused.len() as f64);
    shadow.trials().set(trials);
    *seen = now;
    Ok(())
}

/// The module of the candidate row `row`, or why it may not serve: its
/// seal does not check, `plugin_allow` does not name it, or its module is
/// missing, altered, refused or not a scorer of that name.
async fn usable(
    shadow: &Shadow,
    current: &OnTrial,
    row: &StoredCandidate,
) -> Result<Result<Arc<Plugin>, String>, StoreError> {
    if !trials::is_sealed(&shadow.secrets, row) {
        return Ok(Err(trials::UNSEALED.to_owned()));
    }
    if !shadow.trials().plugins().allows(&row.sha256) {
        return Ok(Err(Plugins::not_allowed(&row.sha256)));
    }
    let Some(plugin) = candidate_plugin(shadow, current, &row.sha256).await? else {
        return Ok(Err(
            "its module is missing from the archive, altered or refused (logged)".to_owned(),
        ));
    };
    if plugin.name() != row.name || plugin.kind() != PluginKind::Scorer {
        return Ok(Err(format!(
            "its module is the {} {}, not the scorer {}",
            plugin.kind(),
            plugin.name(),
            row.name
        )));
    }
    Ok(Ok(plugin))
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

/// Runs the worker of `shadow` (see `worker.rs`) until its queue closes or
/// it is dropped (aborted).
pub async fn run(shadow: Shadow) {
    worker::run(shadow.queue, shadow.store, shadow.clock).await;
}
