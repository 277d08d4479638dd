//! Group commit: one task owns the write connection, takes every write that
//! is waiting, runs each in its own savepoint inside one transaction, commits
//! once, and only then answers each caller. With SQLite in WAL mode and
//! `synchronous=FULL` the commit is one fsync for the whole batch, so
//! durability does not cost throughput; a write that fails rolls back to its
//! savepoint without touching its neighbours.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;

use futures_util::FutureExt;
use sqlx::{AnyConnection, Connection};
use tokio::sync::{mpsc, oneshot};

use super::{Backend, StoreError};

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
    jobs: mpsc::Sender<Box<dyn Job>>,
}

impl Writer {
    /// Starts the writer task. It connects on first use and reconnects after
    /// a connection-level failure.
    pub fn spawn(
        backend: Backend,
        connect: impl Fn() -> BoxFuture<'static, Result<AnyConnection, sqlx::Error>>
        + Send
        + Sync
        + 'static,
    ) -> Writer {
        let (jobs, rx) = mpsc::channel(QUEUE);
        tokio::spawn(run(rx, Box::new(connect), backend));
        Writer { jobs }
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
        self.jobs
            .send(Box::new(job))
            .await
            .map_err(|_| StoreError::WriterGone)?;
        answer.await.map_err(|_| StoreError::WriterGone)?
    }
}

trait Job: Send {
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

struct Op<F, T> {
    f: Option<F>,
    result: Option<Result<T, StoreError>>,
    reply: oneshot::Sender<Result<T, StoreError>>,
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

async fn run(mut rx: mpsc::Receiver<Box<dyn Job>>, connect: Connect, backend: Backend) {
    let mut conn: Option<AnyConnection> = None;
    let mut batch: Vec<Box<dyn Job>> = Vec::with_capacity(MAX_BATCH);
    while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let c = match conn.as_mut() {
            Some(c) => c,
            None => match connect().await {
                Ok(c) => conn.insert(c),
                Err(e) => {
                    tracing::error!(error = %e, "database writer cannot connect");
                    let e = StoreError::from(e);
                    batch.drain(..).for_each(|job| job.finish(Err(e.clone())));
                    continue;
                }
            },
        };
        let size = batch.len();
        let commit = run_batch(c, &mut batch, backend).await;
        if let Err(e) = &commit {
            tracing::error!(error = %e, size, "write batch failed; reconnecting");
            conn = None;
        }
        batch.drain(..).for_each(|job| job.finish(commit.clone()));
    }
    if let Some(c) = conn {
        let _ = c.close().await;
    }
}

async fn run_batch(
    conn: &mut AnyConnection,
    batch: &mut [Box<dyn Job>],
    backend: Backend,
) -> Result<(), StoreError> {
    // SQLite: take the write lock up front, so that a write which reads
    // first never fails to upgrade its lock against another process.
    let mut tx = match backend {
        Backend::Sqlite => conn.begin_with("BEGIN IMMEDIATE").await?,
        Backend::Postgres => conn.begin().await?,
    };
    if batch.len() == 1 {
        // Nothing to isolate the write from: skip the savepoint.
        if !batch[0].run(&mut tx).await {
            tx.rollback().await?;
            return Ok(());
        }
    } else {
        for job in batch.iter_mut() {
            let mut savepoint = tx.begin().await?;
            if job.run(&mut savepoint).await {
                savepoint.commit().await?;
            } else {
                savepoint.rollback().await?;
            }
        }
    }
    tx.commit().await?;
    Ok(())
}
