//! Group commit: one task owns the write connection, takes every write that
//! is waiting, runs each in its own savepoint inside one transaction, commits
//! once, and only then answers each caller. With SQLite in WAL mode and
//! `synchronous=FULL` the commit is one fsync for the whole batch, so
//! durability does not cost throughput; a write that fails rolls back to its
//! savepoint without touching its neighbours.
//!
//! Every statement is a round trip to the database (for SQLite, a hop to
//! the driver's worker thread and back), and those round trips, not the
//! commit, are what limit throughput. So the two most frequent writes are
//! data, not closures: a POSTed response ([`NewResponse`], which carries
//! its request's access-log row, so that a POST waits for one commit) and
//! an access-log entry ([`AccessEntry`]). All of them in a batch are stored
//! together, in a few statements (`create::Plan`,
//! `access_log::push_inserts`); only when that fails is each stored alone
//! in its own savepoint, as the closures always are. On SQLite a batch of
//! nothing else takes three round trips in all, however many writes it
//! holds.
//!
//! A response the writer created is handed to the store's completion sink
//! after its commit, once its caller is answered (`commit.rs`); the alarm
//! its outcome raises is stored in its transaction (`store/alarms.rs`).
//!
//! Order of use: `items` (the writes given as data, stored together or one
//! by one) → `commit` (the loop: batches, savepoints, the commit) → this
//! file (the handle, [`Writer`]).
//!
//! The queue is bounded: a write that finds no room within its deadline is
//! `StoreError::Busy` (503), not a wait without end.

mod commit;
mod items;
#[cfg(test)]
mod tests;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use sqlx::AnyConnection;
use tokio::sync::{mpsc, oneshot};

use super::access_log::AccessEntry;
use super::completions::Completions;
use super::create::{CreateResult, NewResponse};
use super::{Backend, StoreError, StoreMetrics};
use crate::domain::alarm::AlarmPolicy;
use commit::{Op, Pending, Work};

/// A boxed future borrowing the write connection.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

type Connect =
    Box<dyn Fn() -> BoxFuture<'static, Result<AnyConnection, sqlx::Error>> + Send + Sync>;

/// Writes waiting beyond this many are left for the next batch.
const MAX_BATCH: usize = 512;
/// Writes that may wait for the writer before callers feel back-pressure.
const QUEUE: usize = 8192;

/// Handle to the writer task; cheap to clone.
#[derive(Debug, Clone)]
pub struct Writer {
    jobs: mpsc::Sender<Work>,
    /// How long a write may wait for room in the queue before it is given
    /// up as [`StoreError::Busy`] (503): a caller is told the service is
    /// overloaded rather than kept waiting without end.
    deadline: Duration,
}

impl Writer {
    /// Starts the writer task. It connects on first use and reconnects after
    /// a connection-level failure.
    ///
    /// The task runs on a thread of its own with a single-threaded runtime.
    /// It runs the statements of a batch one after the other, each a round
    /// trip; on the server's runtime every wake-up after a round trip would
    /// queue behind request handlers, and the writer, which everyone waits
    /// for, would spend most of its time waiting to be polled.
    /// Each batch's size and time are recorded in `metrics`; every response
    /// created is handed to `completions` once committed; the alarms its
    /// outcome raises by `alarms` are stored with it.
    pub fn spawn(
        backend: Backend,
        deadline: Duration,
        metrics: StoreMetrics,
        completions: Completions,
        alarms: Arc<AlarmPolicy>,
        connect: impl Fn() -> BoxFuture<'static, Result<AnyConnection, sqlx::Error>>
        + Send
        + Sync
        + 'static,
    ) -> Writer {
        Writer::start(
            backend,
            QUEUE,
            deadline,
            metrics,
            completions,
            alarms,
            connect,
        )
    }

    /// [`Writer::spawn`] with a queue of `capacity` writes, recording
    /// nothing.
    #[cfg(test)]
    fn spawn_with_queue(
        backend: Backend,
        capacity: usize,
        deadline: Duration,
        connect: impl Fn() -> BoxFuture<'static, Result<AnyConnection, sqlx::Error>>
        + Send
        + Sync
        + 'static,
    ) -> Writer {
        Writer::start(
            backend,
            capacity,
            deadline,
            StoreMetrics::default(),
            Completions::default(),
            Arc::new(AlarmPolicy::default()),
            connect,
        )
    }

    fn start(
        backend: Backend,
        capacity: usize,
        deadline: Duration,
        metrics: StoreMetrics,
        completions: Completions,
        alarms: Arc<AlarmPolicy>,
        connect: impl Fn() -> BoxFuture<'static, Result<AnyConnection, sqlx::Error>>
        + Send
        + Sync
        + 'static,
    ) -> Writer {
        let (jobs, rx) = mpsc::channel(capacity);
        let task = commit::run(rx, Box::new(connect), backend, metrics, completions, alarms);
        let thread = std::thread::Builder::new()
            .name("db-writer".into())
            .spawn(move || {
                match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime.block_on(task),
                    Err(e) => {
                        tracing::error!(error = %e, "the database writer cannot start its runtime")
                    }
                }
            });
        // Without the thread every write fails with WriterGone.
        if let Err(e) = thread {
            tracing::error!(error = %e, "the database writer cannot start its thread");
        }
        Writer { jobs, deadline }
    }

    /// Queues `work`, waiting at most the deadline for room.
    async fn queue(&self, work: Work) -> Result<(), StoreError> {
        match tokio::time::timeout(self.deadline, self.jobs.send(work)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(StoreError::WriterGone),
            Err(_) => Err(StoreError::Busy(self.deadline)),
        }
    }

    /// Runs `f` in the next batch and returns its result once the batch is
    /// committed. If `f` fails, its own changes are rolled back and the error
    /// returned; if the commit fails, the commit's error is returned.
    pub async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut AnyConnection) -> BoxFuture<'c, Result<T, StoreError>>
            + Send
            + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Op {
            f: Some(f),
            result: None,
            reply,
        };
        self.queue(Work::Write(Box::new(job))).await?;
        answer.await.map_err(|_| StoreError::WriterGone)?
    }

    /// Stores a POSTed response in the next batch; the answer comes once the
    /// batch is committed, as with [`Writer::write`].
    pub async fn create(&self, item: NewResponse) -> Result<CreateResult, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.queue(Work::Create(Pending {
            item: Box::new(item),
            reply,
        }))
        .await?;
        answer.await.map_err(|_| StoreError::WriterGone)?
    }

    /// Appends access-log entries (one request's: one, or one per dossier
    /// read) in the next batch; returns once they are committed, as with
    /// [`Writer::write`].
    pub async fn append_access(&self, item: Vec<AccessEntry>) -> Result<(), StoreError> {
        let (reply, answer) = oneshot::channel();
        self.queue(Work::Access(Pending { item, reply })).await?;
        answer.await.map_err(|_| StoreError::WriterGone)?
    }
}
