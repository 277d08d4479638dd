//! The writer's loop: takes what waits, sorts it into a [`Batch`], runs it
//! in one transaction (closures each in a savepoint, data items by
//! `items`) and answers every caller once the commit's fate is known; a
//! response the commit created is handed to the store's completion sink
//! first (`completions.rs`).
//!
//! Each batch's size and commit time are recorded (`StoreMetrics`).

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;
use sqlx::{AnyConnection, Connection};
use tokio::sync::{mpsc, oneshot};

use super::items::{self, Results};
use super::{BoxFuture, Connect, MAX_BATCH};
use crate::domain::alarm::AlarmPolicy;
use crate::store::access_log::{AccessEntry, BEGIN_LOCKING_HEAD};
use crate::store::completions::{Completions, StoredCompletion};
use crate::store::create::{CreateResult, DossierCache, NewResponse};
use crate::store::{Backend, StoreError, StoreMetrics};

/// What waits in the writer's queue.
pub(super) enum Work {
    /// Any write, run alone in its savepoint.
    Write(Box<dyn Job>),
    /// A response to store; the creates of a batch are stored together.
    Create(Pending<Box<NewResponse>, CreateResult>),
    /// A request's access-log entries; the entries of a batch are stored
    /// together.
    Access(Pending<Vec<AccessEntry>, ()>),
}

/// A write given as data, and where its answer goes.
pub(super) struct Pending<I, T> {
    pub item: I,
    pub reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<I, T> Pending<I, T> {
    /// Answers once the batch's fate is known: the item's own result if the
    /// batch committed, else the batch's error.
    fn finish(self, result: Option<Result<T, StoreError>>, commit: &Result<(), StoreError>) {
        let answer = match (commit, result) {
            (Err(e), _) => Err(e.clone()),
            (Ok(()), Some(result)) => result,
            (Ok(()), None) => Err(StoreError::Corrupt("a write was not run".into())),
        };
        // The caller may have gone away; the write stands regardless.
        let _ = self.reply.send(answer);
    }
}

pub(super) trait Job: Send {
    /// Runs the write; true when it succeeded and should be kept.
    fn run<'c>(&'c mut self, conn: &'c mut AnyConnection) -> BoxFuture<'c, bool>;
    /// Answers the caller once the batch's fate is known.
    fn finish(self: Box<Self>, commit: Result<(), StoreError>);
}

impl std::fmt::Debug for dyn Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Job")
    }
}

pub(super) struct Op<F, T> {
    pub f: Option<F>,
    pub result: Option<Result<T, StoreError>>,
    pub reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<F, T> Job for Op<F, T>
where
    T: Send + 'static,
    F: for<'c> FnOnce(&'c mut AnyConnection) -> BoxFuture<'c, Result<T, StoreError>>
        + Send
        + 'static,
{
    fn run<'c>(&'c mut self, conn: &'c mut AnyConnection) -> BoxFuture<'c, bool> {
        Box::pin(async move {
            let Some(f) = self.f.take() else { return false };
            // A bug in one write must not take the writer (and every later
            // write) down with it.
            let result = match AssertUnwindSafe(f(conn)).catch_unwind().await {
                Ok(result) => result,
                Err(_) => Err(StoreError::Corrupt(
                    "a write panicked; it was rolled back".into(),
                )),
            };
            let ok = result.is_ok();
            self.result = Some(result);
            ok
        })
    }

    fn finish(self: Box<Self>, commit: Result<(), StoreError>) {
        let answer = match (self.result, commit) {
            (Some(Err(e)), _) => Err(e),
            (Some(Ok(value)), Ok(())) => Ok(value),
            (Some(Ok(_)), Err(e)) | (None, Err(e)) => Err(e),
            (None, Ok(())) => Err(StoreError::Corrupt("a write was not run".into())),
        };
        // The caller may have gone away; the write stands regardless.
        let _ = self.reply.send(answer);
    }
}

/// One batch, sorted by kind.
#[derive(Default)]
pub(super) struct Batch {
    pub writes: Vec<Box<dyn Job>>,
    pub creates: Vec<Pending<Box<NewResponse>, CreateResult>>,
    pub accesses: Vec<Pending<Vec<AccessEntry>, ()>>,
}

impl Batch {
    fn len(&self) -> usize {
        self.writes.len() + self.creates.len() + self.accesses.len()
    }

    /// Answers every caller, then hands each response the commit created to
    /// `completions` (the item, no longer needed, goes whole); empties the
    /// batch.
    fn finish(
        &mut self,
        results: Results,
        commit: &Result<(), StoreError>,
        completions: &Completions,
    ) {
        self.writes
            .drain(..)
            .for_each(|job| job.finish(commit.clone()));
        let mut created = results.created.into_iter();
        for Pending { item, reply } in self.creates.drain(..) {
            let result = created.next();
            let stored = match (commit, &result) {
                (Ok(()), Some(Ok(CreateResult::Created(r)))) => Some(r.id),
                _ => None,
            };
            Pending { item: (), reply }.finish(result, commit);
            if let Some(response_id) = stored {
                let NewResponse {
                    completion,
                    definition,
                    professional,
                    ..
                } = *item;
                completions.stored(StoredCompletion {
                    response_id,
                    definition,
                    completion,
                    professional,
                });
            }
        }
        let mut accessed = results.accessed.into_iter();
        self.accesses
            .drain(..)
            .for_each(|p| p.finish(accessed.next(), commit));
    }
}

pub(super) async fn run(
    mut rx: mpsc::Receiver<Work>,
    connect: Connect,
    backend: Backend,
    metrics: StoreMetrics,
    completions: Completions,
    alarms: std::sync::Arc<AlarmPolicy>,
) {
    let mut conn: Option<AnyConnection> = None;
    let mut queue: Vec<Work> = Vec::with_capacity(MAX_BATCH);
    let mut batch = Batch::default();
    let mut cache = DossierCache::default();
    while rx.recv_many(&mut queue, MAX_BATCH).await > 0 {
        for work in queue.drain(..) {
            match work {
                Work::Write(job) => batch.writes.push(job),
                Work::Create(p) => batch.creates.push(p),
                Work::Access(p) => batch.accesses.push(p),
            }
        }
        let c = match conn.as_mut() {
            Some(c) => c,
            None => match connect().await {
                Ok(c) => conn.insert(c),
                Err(e) => {
                    tracing::error!(error = %e, "database writer cannot connect");
                    batch.finish(Results::default(), &Err(StoreError::from(e)), &completions);
                    continue;
                }
            },
        };
        let started = std::time::Instant::now();
        let size = batch.len();
        let (results, commit) = match run_batch(c, &mut batch, backend, &mut cache, &alarms).await {
            Ok(results) => (results, Ok(())),
            Err(e) => {
                // It may name dossiers made in the batch.
                cache.clear();
                tracing::error!(error = %e, size, "write batch failed; reconnecting");
                conn = None;
                metrics.failed_batches.increment(1);
                (Results::default(), Err(e))
            }
        };
        metrics.commit.record(started.elapsed().as_secs_f64());
        metrics.batch_size.record(size as f64);
        batch.finish(results, &commit, &completions);
    }
    if let Some(c) = conn {
        let _ = c.close().await;
    }
}

/// Runs one batch in one transaction and commits it. An error fails the
/// whole batch.
pub(super) async fn run_batch(
    conn: &mut AnyConnection,
    batch: &mut Batch,
    backend: Backend,
    cache: &mut DossierCache,
    alarms: &AlarmPolicy,
) -> Result<Results, StoreError> {
    let creates: Vec<&NewResponse> = batch.creates.iter().map(|p| &*p.item).collect();
    let accesses: Vec<&[AccessEntry]> = batch.accesses.iter().map(|p| p.item.as_slice()).collect();
    if backend == Backend::Sqlite
        && batch.writes.is_empty()
        && let Some(results) =
            guarded(items::scripted(conn, cache, &creates, &accesses, alarms)).await?
    {
        return Ok(results);
    }
    // SQLite: take the write lock up front, so that a write which reads
    // first never fails to upgrade its lock against another process.
    // PostgreSQL: lock the access log's head first, in the same round trip
    // (`access_log::BEGIN_LOCKING_HEAD` says why).
    let mut tx = match backend {
        Backend::Sqlite => conn.begin_with("BEGIN IMMEDIATE").await?,
        Backend::Postgres => conn.begin_with(BEGIN_LOCKING_HEAD).await?,
    };
    if batch.writes.len() == 1 && batch.len() == 1 {
        // Nothing to isolate the write from: skip the savepoint.
        if !batch.writes[0].run(&mut tx).await {
            tx.rollback().await?;
            return Ok(Results::default());
        }
    } else {
        for job in batch.writes.iter_mut() {
            let mut savepoint = tx.begin().await?;
            if job.run(&mut savepoint).await {
                savepoint.commit().await?;
            } else {
                savepoint.rollback().await?;
            }
        }
    }
    let results = if creates.is_empty() && accesses.is_empty() {
        Results::default()
    } else {
        guarded(items::run_items(
            &mut tx, backend, cache, &creates, &accesses, alarms,
        ))
        .await?
    };
    tx.commit().await?;
    Ok(results)
}

/// As with the closures, a bug must not take the writer down; after a panic
/// the transaction's state is unknown, so the batch fails.
async fn guarded<T>(work: impl Future<Output = Result<T, StoreError>>) -> Result<T, StoreError> {
    match AssertUnwindSafe(work).catch_unwind().await {
        Ok(result) => result,
        Err(_) => Err(StoreError::Corrupt(
            "a write panicked; the batch was rolled back".into(),
        )),
    }
}
