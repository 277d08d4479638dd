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
//! together, in a few statements ([`Plan`], [`access_log::push_inserts`]);
//! only when that fails is each stored alone in its own savepoint, as the
//! closures always are. On SQLite a batch of nothing else takes three round
//! trips in all, however many writes it holds.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;

use futures_util::FutureExt;
use sqlx::{AnyConnection, Connection, Executor};
use tokio::sync::{mpsc, oneshot};

use super::access_log::{self, AccessEntry};
use super::batch::{self, NewResponse, Plan};
use super::dossiers::DossierCache;
use super::responses::CreateResult;
use super::{Backend, Script, StoreError};

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
}

/// What waits in the writer's queue.
enum Work {
    /// Any write, run alone in its savepoint.
    Write(Box<dyn Job>),
    /// A response to store; the creates of a batch are stored together.
    Create(Pending<Box<NewResponse>, CreateResult>),
    /// An access-log entry; the entries of a batch are stored together.
    Access(Pending<AccessEntry, ()>),
}

/// A write given as data, and where its answer goes.
struct Pending<I, T> {
    item: I,
    reply: oneshot::Sender<Result<T, StoreError>>,
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

impl Writer {
    /// Starts the writer task. It connects on first use and reconnects after
    /// a connection-level failure.
    ///
    /// The task runs on a thread of its own with a single-threaded runtime.
    /// It runs the statements of a batch one after the other, each a round
    /// trip; on the server's runtime every wake-up after a round trip would
    /// queue behind request handlers, and the writer, which everyone waits
    /// for, would spend most of its time waiting to be polled.
    pub fn spawn(
        backend: Backend,
        connect: impl Fn() -> BoxFuture<'static, Result<AnyConnection, sqlx::Error>>
        + Send
        + Sync
        + 'static,
    ) -> Writer {
        let (jobs, rx) = mpsc::channel(QUEUE);
        let task = run(rx, Box::new(connect), backend);
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
            .send(Work::Write(Box::new(job)))
            .await
            .map_err(|_| StoreError::WriterGone)?;
        answer.await.map_err(|_| StoreError::WriterGone)?
    }

    /// Stores a POSTed response in the next batch; the answer comes once the
    /// batch is committed, as with [`Writer::write`].
    pub async fn create(&self, item: NewResponse) -> Result<CreateResult, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(Work::Create(Pending {
                item: Box::new(item),
                reply,
            }))
            .await
            .map_err(|_| StoreError::WriterGone)?;
        answer.await.map_err(|_| StoreError::WriterGone)?
    }

    /// Appends an access-log entry in the next batch; returns once it is
    /// committed, as with [`Writer::write`].
    pub async fn append_access(&self, item: AccessEntry) -> Result<(), StoreError> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(Work::Access(Pending { item, reply }))
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

/// One batch, sorted by kind.
#[derive(Default)]
struct Batch {
    writes: Vec<Box<dyn Job>>,
    creates: Vec<Pending<Box<NewResponse>, CreateResult>>,
    accesses: Vec<Pending<AccessEntry, ()>>,
}

/// The results of a batch's items given as data, in order.
#[derive(Debug, Default)]
struct Results {
    created: Vec<Result<CreateResult, StoreError>>,
    accessed: Vec<Result<(), StoreError>>,
}

impl Batch {
    fn len(&self) -> usize {
        self.writes.len() + self.creates.len() + self.accesses.len()
    }

    /// Answers every caller; empties the batch.
    fn finish(&mut self, results: Results, commit: &Result<(), StoreError>) {
        self.writes
            .drain(..)
            .for_each(|job| job.finish(commit.clone()));
        let mut created = results.created.into_iter();
        self.creates
            .drain(..)
            .for_each(|p| p.finish(created.next(), commit));
        let mut accessed = results.accessed.into_iter();
        self.accesses
            .drain(..)
            .for_each(|p| p.finish(accessed.next(), commit));
    }
}

async fn run(mut rx: mpsc::Receiver<Work>, connect: Connect, backend: Backend) {
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
                    batch.finish(Results::default(), &Err(StoreError::from(e)));
                    continue;
                }
            },
        };
        let (results, commit) = match run_batch(c, &mut batch, backend, &mut cache).await {
            Ok(results) => (results, Ok(())),
            Err(e) => {
                // It may name dossiers made in the batch.
                cache.clear();
                tracing::error!(error = %e, size = batch.len(), "write batch failed; reconnecting");
                conn = None;
                (Results::default(), Err(e))
            }
        };
        batch.finish(results, &commit);
    }
    if let Some(c) = conn {
        let _ = c.close().await;
    }
}

/// Runs one batch in one transaction and commits it. An error fails the
/// whole batch.
async fn run_batch(
    conn: &mut AnyConnection,
    batch: &mut Batch,
    backend: Backend,
    cache: &mut DossierCache,
) -> Result<Results, StoreError> {
    let creates: Vec<&NewResponse> = batch.creates.iter().map(|p| &*p.item).collect();
    let accesses: Vec<&AccessEntry> = batch.accesses.iter().map(|p| &p.item).collect();
    if backend == Backend::Sqlite
        && batch.writes.is_empty()
        && let Some(results) = guarded(scripted(conn, cache, &creates, &accesses)).await?
    {
        return Ok(results);
    }
    // SQLite: take the write lock up front, so that a write which reads
    // first never fails to upgrade its lock against another process.
    let mut tx = match backend {
        Backend::Sqlite => conn.begin_with("BEGIN IMMEDIATE").await?,
        Backend::Postgres => conn.begin().await?,
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
        guarded(run_items(&mut tx, backend, cache, &creates, &accesses)).await?
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

/// SQLite, a batch of data items only (the common case under load), in the
/// fewest round trips, each a hop to the driver's thread: `BEGIN IMMEDIATE`
/// with the queries of the [`Plan`]; every INSERT; and `COMMIT` on its own,
/// so that a failed commit is known as such. The plan does not look for
/// taken external ids: the INSERT skips their rows, which shows in its
/// count. No savepoints: if a statement fails before the commit, or an item
/// needs [`batch::create_one`] (external id taken or repeated in the
/// batch), the transaction is rolled back and None returned, and the batch
/// takes the common path. A failed commit fails the batch.
async fn scripted(
    conn: &mut AnyConnection,
    cache: &mut DossierCache,
    creates: &[&NewResponse],
    accesses: &[&AccessEntry],
) -> Result<Option<Results>, StoreError> {
    let mut made = false;
    let attempt = async {
        let mut opening = Script::new(Backend::Sqlite);
        opening.sql("BEGIN IMMEDIATE; ");
        let mut plan = None;
        if !creates.is_empty() {
            let made_plan =
                Plan::make(conn, Backend::Sqlite, cache, creates, opening, false).await?;
            made = made_plan.made_dossiers();
            if made_plan.leaves_some() {
                return Ok(None);
            }
            opening = Script::new(Backend::Sqlite);
            plan = Some(made_plan);
        }
        let mut inserts = opening;
        // Every item of a plan that leaves none is created: the POSTs'
        // access-log rows say 201, and go with the batch's other rows.
        let logged: Vec<AccessEntry> = creates
            .iter()
            .filter_map(|c| c.access_row(CreateResult::CREATED))
            .collect();
        let entries: Vec<&AccessEntry> = accesses.iter().copied().chain(&logged).collect();
        let mut rows = entries.len();
        if let Some(plan) = &plan {
            plan.push_inserts(&mut inserts)?;
            rows += creates.len();
        }
        access_log::push_inserts(&mut inserts, &entries);
        let done = inserts.execute(conn).await?;
        if done.rows_affected() != rows as u64 {
            // An external id was taken, and its row skipped: start over on
            // the common path, which decides such items one by one.
            return Ok(None);
        }
        let mut created: Vec<Option<Result<CreateResult, StoreError>>> =
            creates.iter().map(|_| None).collect();
        if let Some(plan) = plan {
            let ids = plan.sqlite_ids();
            plan.finish(ids, &mut created)?;
        }
        let created = created
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|| Err(StoreError::Corrupt("a response was not stored".into())))
            })
            .collect();
        Ok::<_, StoreError>(Some(Results {
            created,
            accessed: accesses.iter().map(|_| Ok(())).collect(),
        }))
    }
    .await;
    match attempt {
        Ok(Some(results)) => {
            conn.execute("COMMIT").await?;
            Ok(Some(results))
        }
        Ok(None) | Err(_) => {
            if let Err(e) = &attempt {
                tracing::debug!(error = %e, "storing a batch in one go failed; storing it with savepoints");
            }
            if made || attempt.is_err() {
                // It may name dossiers the rollback takes back.
                cache.clear();
            }
            // There may be no transaction to roll back, if BEGIN failed.
            let _ = conn.execute("ROLLBACK").await;
            Ok(None)
        }
    }
}

/// Stores the batch's writes given as data inside the batch's transaction:
/// all together in one savepoint (responses by a [`Plan`], access-log
/// entries, theirs included, in one INSERT), or, if that fails, each alone
/// in its own savepoint, a response with its access-log row. Creates the
/// plan leaves (external id taken or repeated) are decided one by one
/// afterwards. An error is one the transaction cannot
/// survive.
async fn run_items(
    conn: &mut AnyConnection,
    backend: Backend,
    cache: &mut DossierCache,
    creates: &[&NewResponse],
    accesses: &[&AccessEntry],
) -> Result<Results, StoreError> {
    let mut created: Vec<Option<Result<CreateResult, StoreError>>> =
        creates.iter().map(|_| None).collect();
    let mut accessed: Vec<Result<(), StoreError>> = Vec::with_capacity(accesses.len());

    let mut savepoint = conn.begin().await?;
    let fast = async {
        let mut logged = Vec::new();
        if !creates.is_empty() {
            let plan = Plan::make(
                &mut savepoint,
                backend,
                cache,
                creates,
                Script::new(backend),
                true,
            )
            .await?;
            let ids = plan.insert(&mut savepoint).await?;
            plan.finish(ids, &mut created)?;
            // The access-log rows of the POSTs stored; those the plan left
            // go with their items, one by one.
            logged = creates
                .iter()
                .zip(&created)
                .filter_map(|(item, result)| match result {
                    Some(Ok(result)) => item.access_row(result.status()),
                    _ => None,
                })
                .collect();
        }
        let entries: Vec<&AccessEntry> = accesses.iter().copied().chain(&logged).collect();
        if !entries.is_empty() {
            access_log::insert(&mut savepoint, backend, &entries).await?;
        }
        Ok::<_, StoreError>(())
    }
    .await;
    match fast {
        Ok(()) => {
            savepoint.commit().await?;
            accessed.extend(accesses.iter().map(|_| Ok(())));
        }
        Err(e) => {
            savepoint.rollback().await?;
            // It may name dossiers made in the savepoint.
            cache.clear();
            created.iter_mut().for_each(|r| *r = None);
            tracing::debug!(error = %e, creates = creates.len(), accesses = accesses.len(), "storing writes together failed; storing them one by one");
            for entry in accesses {
                accessed.push(
                    alone(conn, async |c| {
                        access_log::insert(c, backend, std::slice::from_ref(entry)).await
                    })
                    .await?,
                );
            }
        }
    }
    for (item, result) in creates
        .iter()
        .zip(created.iter_mut())
        .filter(|(_, r)| r.is_none())
    {
        *result = Some(alone(conn, async |c| batch::create_one(c, backend, item).await).await?);
    }
    let created = created
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(StoreError::Corrupt("a response was not stored".into()))))
        .collect();
    Ok(Results { created, accessed })
}

/// Runs `write` in a savepoint of its own, kept if it succeeds. The outer
/// error is one the transaction cannot survive.
async fn alone<T>(
    conn: &mut AnyConnection,
    write: impl AsyncFnOnce(&mut AnyConnection) -> Result<T, StoreError>,
) -> Result<Result<T, StoreError>, StoreError> {
    let mut savepoint = conn.begin().await?;
    let result = write(&mut savepoint).await;
    if result.is_ok() {
        savepoint.commit().await?;
    } else {
        savepoint.rollback().await?;
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};
    use sqlx::Connection;

    use super::*;
    use crate::domain::answers::Answers;
    use crate::domain::ids::{DossierId, QuestionnaireId, RespondentId};
    use crate::domain::outcome::{Outcome, Provenance};
    use crate::domain::response::Completion;
    use crate::domain::time::from_millis;
    use crate::store::dossiers::DossierRespondents;

    /// A migrated SQLite database with one questionnaire; its URL.
    async fn sqlite() -> (tempfile::TempDir, String) {
        let (dir, store, url) = crate::store::testing::sqlite_store().await;
        store.close().await;
        (dir, url)
    }

    fn now() -> DateTime<Utc> {
        from_millis(1_700_000_000_123)
    }

    fn item(epd_id: &str, external_id: &str, professional: bool, answer: &str) -> NewResponse {
        NewResponse {
            epd_id: epd_id.to_owned(),
            external_id: external_id.to_owned(),
            professional,
            entered_by: professional.then(|| "dr. x".to_owned()),
            completion: Completion {
                questionnaire_id: QuestionnaireId(7),
                answers: Answers(vec![
                    ("v_1".into(), Some(answer.into())),
                    ("v_2".into(), None),
                ]),
                started_at: Some(from_millis(1_699_999_999_000)),
                completed_at: now(),
                variant: Default::default(),
                outcome: Outcome::empty(),
                provenance: Provenance::default(),
            },
            now: now(),
            access: None,
        }
    }

    /// `item`, POSTed by a request whose access-log row it carries.
    fn logged_item(epd_id: &str, external_id: &str, answer: &str) -> NewResponse {
        NewResponse {
            access: Some(AccessEntry {
                status: 0,
                request_id: Some(external_id.to_owned()),
                ..access(epd_id)
            }),
            ..item(epd_id, external_id, false, answer)
        }
    }

    fn access(dossier: &str) -> AccessEntry {
        AccessEntry {
            at: now(),
            consumer_key: Some("k".into()),
            jwt_issuer: None,
            dossier: Some(dossier.into()),
            action: "POST /api/v1/dossiers/{dossier_id}/responses".into(),
            status: 201,
            client: "127.0.0.1".into(),
            request_id: None,
        }
    }

    /// Runs one batch as the writer does; with `closure`, a write given as a
    /// closure joins it, which takes the batch down the savepoint path.
    async fn run(
        url: &str,
        cache: &mut DossierCache,
        items: Vec<NewResponse>,
        accesses: Vec<AccessEntry>,
        closure: bool,
    ) -> Results {
        let mut conn = AnyConnection::connect(url).await.expect("connects");
        conn.execute("PRAGMA foreign_keys = ON")
            .await
            .expect("pragma");
        let mut batch = Batch::default();
        for item in items {
            batch.creates.push(Pending {
                item: Box::new(item),
                reply: oneshot::channel().0,
            });
        }
        for item in accesses {
            batch.accesses.push(Pending {
                item,
                reply: oneshot::channel().0,
            });
        }
        if closure {
            fn nothing(_: &mut AnyConnection) -> BoxFuture<'_, Result<(), StoreError>> {
                Box::pin(async { Ok(()) })
            }
            batch.writes.push(Box::new(Op {
                f: Some(nothing),
                result: None,
                reply: oneshot::channel().0,
            }));
        }
        let results = run_batch(&mut conn, &mut batch, Backend::Sqlite, cache)
            .await
            .expect("batch");
        conn.close().await.expect("closes");
        results
    }

    fn describe(result: &Result<CreateResult, StoreError>) -> String {
        match result {
            Ok(CreateResult::Created(r)) => {
                format!("created {}", r.external_id.as_deref().unwrap_or_default())
            }
            Ok(CreateResult::Retry(r)) => {
                format!("retry {}", r.external_id.as_deref().unwrap_or_default())
            }
            Ok(CreateResult::Taken) => "taken".to_owned(),
            Err(e) => format!("error {e}"),
        }
    }

    async fn count(url: &str, sql: &str) -> i64 {
        let mut conn = AnyConnection::connect(url).await.expect("connects");
        sqlx::query_scalar(sql)
            .fetch_one(&mut conn)
            .await
            .expect("counts")
    }

    #[tokio::test]
    async fn batches_answer_as_a_read_back() {
        for closure in [false, true] {
            let (_dir, url) = sqlite().await;
            let mut cache = DossierCache::default();
            let items = vec![
                item("d1", "a", false, "x"),
                item("d2", "b", true, "y"),
                item("d1", "c", true, "x"),
            ];
            let results = run(
                &url,
                &mut cache,
                items,
                vec![access("d1"), access("d2")],
                closure,
            )
            .await;
            // Stored together: the dossiers are cached.
            assert!(cache.get("d1").is_some() && cache.get("d2").is_some());
            assert_eq!(results.accessed.len(), 2);
            assert!(results.accessed.iter().all(Result::is_ok));
            let mut conn = AnyConnection::connect(&url).await.expect("connects");
            for result in &results.created {
                let Ok(CreateResult::Created(made)) = result else {
                    panic!("not created: {}", describe(result))
                };
                let read = super::super::responses::fetch(&mut conn, made.id)
                    .await
                    .expect("reads back");
                assert_eq!(format!("{made:?}"), format!("{read:?}"));
            }
            assert_eq!(count(&url, "SELECT COUNT(*) FROM access_log").await, 2);
            // The ids given are AUTOINCREMENT's, which carries on after them.
            assert_eq!(
                count(
                    &url,
                    "SELECT seq FROM sqlite_sequence WHERE name = 'responses'"
                )
                .await,
                3
            );
        }
    }

    #[tokio::test]
    async fn repeats_in_a_batch_answer_as_one_by_one() {
        for closure in [false, true] {
            let (_dir, url) = sqlite().await;
            let mut cache = DossierCache::default();
            run(
                &url,
                &mut cache,
                vec![item("d1", "a", false, "x")],
                Vec::new(),
                closure,
            )
            .await;
            // Repeats, in the database and within the batch: a retry with the
            // same answers, taken with others.
            let items = vec![
                item("d1", "a", false, "x"),
                item("d1", "a", false, "z"),
                item("d3", "e", false, "x"),
                item("d3", "e", false, "x"),
                item("d3", "f", false, "z"),
                item("d3", "f", false, "x"),
            ];
            let results = run(&url, &mut cache, items, vec![access("d3")], closure).await;
            let got: Vec<String> = results.created.iter().map(describe).collect();
            assert_eq!(
                got,
                [
                    "retry a",
                    "taken",
                    "created e",
                    "retry e",
                    "created f",
                    "taken"
                ]
            );
            assert_eq!(count(&url, "SELECT COUNT(*) FROM responses").await, 3);
            assert_eq!(count(&url, "SELECT COUNT(*) FROM access_log").await, 1);
        }
    }

    #[tokio::test]
    async fn an_external_id_taken_before_the_batch_answers_as_one_by_one() {
        for closure in [false, true] {
            let (_dir, url) = sqlite().await;
            let mut cache = DossierCache::default();
            run(
                &url,
                &mut cache,
                vec![item("d1", "a", false, "x"), item("d1", "b", false, "x")],
                Vec::new(),
                closure,
            )
            .await;
            let items = vec![
                item("d2", "c", false, "x"),
                item("d1", "a", false, "x"),
                item("d1", "b", false, "y"),
            ];
            let results = run(&url, &mut cache, items, vec![access("d1")], closure).await;
            let got: Vec<String> = results.created.iter().map(describe).collect();
            assert_eq!(got, ["created c", "retry a", "taken"]);
            assert_eq!(count(&url, "SELECT COUNT(*) FROM responses").await, 3);
            assert_eq!(count(&url, "SELECT MAX(id) FROM responses").await, 3);
            assert_eq!(count(&url, "SELECT COUNT(*) FROM access_log").await, 1);
        }
    }

    #[tokio::test]
    async fn a_stale_cache_falls_back_to_one_by_one() {
        for closure in [false, true] {
            let (_dir, url) = sqlite().await;
            let mut cache = DossierCache::default();
            // A dossier the database does not have.
            cache.insert(
                "d1".into(),
                DossierRespondents {
                    dossier: DossierId(999),
                    patient: RespondentId(999),
                    professional: None,
                },
            );
            let results = run(
                &url,
                &mut cache,
                vec![item("d1", "a", false, "x"), item("d2", "b", false, "y")],
                vec![access("d1")],
                closure,
            )
            .await;
            let got: Vec<String> = results.created.iter().map(describe).collect();
            assert_eq!(got, ["created a", "created b"]);
            assert!(
                cache
                    .get("d1")
                    .is_none_or(|ids| ids.dossier != DossierId(999)),
                "the stale entry is gone"
            );
            // Then together again, with AUTOINCREMENT's ids carrying on.
            let more = run(
                &url,
                &mut cache,
                vec![item("d1", "c", false, "x"), item("d2", "d", false, "y")],
                Vec::new(),
                closure,
            )
            .await;
            let ids: Vec<i64> = results
                .created
                .iter()
                .chain(&more.created)
                .map(|r| match r {
                    Ok(CreateResult::Created(made)) => made.id.0,
                    other => panic!("not created: {}", describe(other)),
                })
                .collect();
            assert_eq!(ids, [1, 2, 3, 4]);
            assert_eq!(count(&url, "SELECT COUNT(*) FROM access_log").await, 1);
        }
    }

    #[tokio::test]
    async fn a_post_stores_its_access_row_with_the_status_it_is_answered() {
        for closure in [false, true] {
            let (_dir, url) = sqlite().await;
            let mut cache = DossierCache::default();
            // Stored together (scripted, or in the batch's savepoint).
            run(
                &url,
                &mut cache,
                vec![logged_item("d1", "a", "x"), logged_item("d2", "b", "x")],
                vec![access("d1")],
                closure,
            )
            .await;
            // A retry, a taken id and a repeat in the batch: one by one.
            let results = run(
                &url,
                &mut cache,
                vec![
                    logged_item("d1", "a", "x"),
                    logged_item("d1", "b", "y"),
                    logged_item("d2", "b", "z"),
                    logged_item("d3", "c", "x"),
                    logged_item("d3", "c", "y"),
                ],
                Vec::new(),
                closure,
            )
            .await;
            let got: Vec<String> = results.created.iter().map(describe).collect();
            assert_eq!(got, ["retry a", "created b", "taken", "created c", "taken"]);
            let mut conn = AnyConnection::connect(&url).await.expect("connects");
            let rows: Vec<(Option<String>, Option<String>, i64)> = sqlx::query_as(
                "SELECT dossier, request_id, status FROM access_log ORDER BY dossier, request_id, status",
            )
            .fetch_all(&mut conn)
            .await
            .expect("reads the log");
            let rows: Vec<(String, String, i64)> = rows
                .into_iter()
                .map(|(d, r, s)| (d.unwrap_or_default(), r.unwrap_or_default(), s))
                .collect();
            let expected: Vec<(String, String, i64)> = [
                ("d1", "", 201),
                ("d1", "a", 200),
                ("d1", "a", 201),
                ("d1", "b", 201),
                ("d2", "b", 201),
                ("d2", "b", 422),
                ("d3", "c", 201),
                ("d3", "c", 422),
            ]
            .into_iter()
            .map(|(d, r, s)| (d.to_owned(), r.to_owned(), s))
            .collect();
            assert_eq!(rows, expected, "closure: {closure}");
        }
    }
}
