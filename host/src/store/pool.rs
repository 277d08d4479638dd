//! The read pool, timed: every connection taken from it, by a query run on
//! `&Pool` or by [`Pool::acquire`] and [`Pool::begin`], records how long it
//! waited, so an operator sees reads queue for connections before they
//! time out. [`StoreMetrics`] holds the handles the store records in; the
//! app fills it from its metrics (`crate::metrics`), which the store does
//! not know. By default they record nothing.

use std::time::Instant;

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use futures_util::{StreamExt, TryStreamExt};
use metrics::{Counter, Histogram};
use sqlx::any::{AnyQueryResult, AnyRow, AnyStatement, AnyTypeInfo};
use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyPool, Describe, Either, Execute, Executor, Transaction};

/// Where the store records how it is doing.
#[derive(Clone)]
pub struct StoreMetrics {
    /// Seconds a read waited for a pool connection.
    pub pool_wait: Histogram,
    /// Writes per batch the writer committed or tried to.
    pub batch_size: Histogram,
    /// Seconds from a batch's BEGIN to the end of its COMMIT.
    pub commit: Histogram,
    /// Batches whose transaction failed.
    pub failed_batches: Counter,
}

impl Default for StoreMetrics {
    fn default() -> Self {
        StoreMetrics {
            pool_wait: Histogram::noop(),
            batch_size: Histogram::noop(),
            commit: Histogram::noop(),
            failed_batches: Counter::noop(),
        }
    }
}

impl std::fmt::Debug for StoreMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreMetrics")
    }
}

/// The read pool and the histogram of its waits. Other methods of the
/// pool (`close`, `size`) are reached through `Deref`.
#[derive(Clone)]
pub struct Pool {
    inner: AnyPool,
    wait: Histogram,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl std::ops::Deref for Pool {
    type Target = AnyPool;

    fn deref(&self) -> &AnyPool {
        &self.inner
    }
}

impl Pool {
    pub fn new(inner: AnyPool, wait: Histogram) -> Pool {
        Pool { inner, wait }
    }

    /// A connection, once one is free (or the acquire timeout passed); the
    /// wait is recorded either way.
    pub async fn acquire(&self) -> Result<PoolConnection<Any>, sqlx::Error> {
        let started = Instant::now();
        let conn = self.inner.acquire().await;
        self.wait.record(started.elapsed().as_secs_f64());
        conn
    }

    /// A transaction on a connection of the pool. The wait recorded
    /// includes the BEGIN round trip: sqlx makes an owned transaction only
    /// from the pool itself.
    pub async fn begin(&self) -> Result<Transaction<'static, Any>, sqlx::Error> {
        let started = Instant::now();
        let tx = self.inner.begin().await;
        self.wait.record(started.elapsed().as_secs_f64());
        tx
    }
}

/// Queries run on `&Pool` as on sqlx's `&AnyPool`: a connection is taken
/// (timed), the query runs on it, the connection goes back. Rows are
/// collected before they are handed on, since the stream may not borrow
/// the connection it owns; every read of the store collects its rows
/// anyway (`fetch_all`, `fetch_one`, `fetch_optional`, `execute`).
impl<'p> Executor<'p> for &'_ Pool {
    type Database = Any;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxStream<'e, Result<Either<AnyQueryResult, AnyRow>, sqlx::Error>>
    where
        E: 'q + Execute<'q, Any>,
    {
        let pool = self.clone();
        futures_util::stream::once(async move {
            let mut conn = pool.acquire().await?;
            conn.fetch_many(query).try_collect::<Vec<_>>().await
        })
        .map_ok(|items| futures_util::stream::iter(items.into_iter().map(Ok::<_, sqlx::Error>)))
        .try_flatten()
        .boxed()
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, Result<Option<AnyRow>, sqlx::Error>>
    where
        E: 'q + Execute<'q, Any>,
    {
        let pool = self.clone();
        Box::pin(async move { pool.acquire().await?.fetch_optional(query).await })
    }

    fn prepare_with<'e, 'q: 'e>(
        self,
        sql: &'q str,
        parameters: &'e [AnyTypeInfo],
    ) -> BoxFuture<'e, Result<AnyStatement<'q>, sqlx::Error>> {
        let pool = self.clone();
        Box::pin(async move { pool.acquire().await?.prepare_with(sql, parameters).await })
    }

    fn describe<'e, 'q: 'e>(
        self,
        sql: &'q str,
    ) -> BoxFuture<'e, Result<Describe<Any>, sqlx::Error>> {
        let pool = self.clone();
        Box::pin(async move { pool.acquire().await?.describe(sql).await })
    }
}
