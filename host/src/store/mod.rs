//! The only place that knows SQL. One schema in two dialects (SQLite and
//! PostgreSQL, chosen by the database URL), every query written once in the
//! SQL both understand, times as Unix milliseconds, JSON as text.
//!
//! Writes go through [`writer::Writer`], which commits concurrent writes
//! together (group commit): a caller gets its answer only after the
//! transaction holding its write is durable. Reads use the pool directly.
//! Every completion stored, by whatever path, is handed to the sink given
//! at start (`completions.rs`; shadow scoring): callers need not remember
//! it. Likewise the alarm its outcome raises (`alarms.rs`), stored in the
//! transaction that stores the outcome, by the policy given at start.
//!
//! Every connection is set up alike (SQLite: WAL, `synchronous=FULL`);
//! queries use `$1` placeholders. `migrate` applies pending migrations;
//! ones only a newer version knows are a warning, not a stop (a rolling
//! upgrade). The pool tests a connection before handing it out and the
//! writer reconnects after a failed batch, so a restarted database needs no
//! host restart.

mod access_log;
mod alarm_deliveries;
mod alarms;
pub mod backup;
mod candidates;
mod catalog;
mod completions;
mod create;
mod dossiers;
mod error;
mod fill_out_requests;
mod fill_out_sessions;
pub mod migrations;
mod non_responses;
mod outbox;
mod outcomes;
mod pool;
mod responses;
mod stats;
mod subscriptions;
mod tokens;
mod writer;

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::any::{AnyArguments, AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyConnection, ConnectOptions, Connection, Executor};

use crate::domain::alarm::AlarmPolicy;

pub use access_log::{AccessEntry, Verification, link_hash};
pub use alarm_deliveries::{ALARM_WEBHOOK_SECRET, ClaimedDelivery};
pub use alarms::{AlarmCounts, AlarmFilter, AlarmHistory, AlarmStep, SERVICE_CLIENT, StepBy};
pub use candidates::{NewCandidate, ShadowDifference, ShadowTally, StoredCandidate};
pub use catalog::DefinitionSource;
pub use completions::{CompletionSink, Completions, Scored, StoredCompletion};
pub use create::{CreateResult, NewResponse};
pub use error::{Cause, StoreError};
pub use fill_out_requests::{ClaimedCallback, FillOutRequestResult, NewFillOutRequest};
pub use fill_out_sessions::{
    LoginResult, NewFillOutSession, OpenResult, PageAnswers, SessionTargets, StartSessionResult,
};
pub use migrations::{AppliedMigration, MigrationName, MigrationStatus, embedded_level};
#[allow(unused_imports)] // for the scheduler: code 04 in its own transaction
pub(crate) use non_responses::insert_non_response;
pub use non_responses::{NewNonResponse, RegisterResult};
pub use outcomes::{ArchivedModule, RescoreFilter};
pub use pool::StoreMetrics;
pub use responses::{CompleteError, Page, Preparation, ResponseFilter, ResponsePage};
pub use stats::{DossierStats, InvitationCounts, ResponseCounts, SubscriptionCounts};
pub use subscriptions::{EXPIRED_REASON, NewSubscription, Planner, Prepared, Settled, StartResult};
pub use tokens::{NewToken, StoredKey, StoredSecret, StoredToken};

use pool::Pool;
use writer::Writer;

/// Which database engine the URL chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// The engine a database URL names, if one we support.
    pub fn of_url(url: &str) -> Option<Backend> {
        if url.starts_with("sqlite:") {
            Some(Backend::Sqlite)
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Some(Backend::Postgres)
        } else {
            None
        }
    }
}

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/postgres");

/// This binary's migrations for `backend`.
fn migrator(backend: Backend) -> &'static sqlx::migrate::Migrator {
    match backend {
        Backend::Sqlite => &SQLITE_MIGRATIONS,
        Backend::Postgres => &POSTGRES_MIGRATIONS,
    }
}

/// Settings of the connection pool.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Read connections (the writer has its own).
    pub max_connections: u32,
    /// How long a request waits for a connection: a free one, or a new one
    /// while the database is restarting (the pool retries until then).
    pub acquire_timeout: Duration,
    /// How long a write waits for room in the writer's queue before it is
    /// answered 503.
    pub write_queue_timeout: Duration,
    /// Where pool waits and write batches are recorded (default: nowhere).
    pub metrics: StoreMetrics,
    /// Where every completion is handed once stored (default: nowhere).
    pub completions: Completions,
    /// Which stored outcomes raise alarms, and their deadlines.
    pub alarms: Arc<AlarmPolicy>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            max_connections: 8,
            acquire_timeout: Duration::from_secs(5),
            write_queue_timeout: Duration::from_secs(5),
            metrics: StoreMetrics::default(),
            completions: Completions::default(),
            alarms: Arc::new(AlarmPolicy::default()),
        }
    }
}

/// Handle to the database; cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    pool: Pool,
    backend: Backend,
    writer: Writer,
    /// Told of every completion stored (`completions.rs`).
    completions: Completions,
    /// Which stored outcomes raise alarms (`alarms.rs`).
    alarms: Arc<AlarmPolicy>,
}

impl Store {
    /// Connects, creating the SQLite file (and its folder) when missing.
    /// Does not migrate: call [`Store::migrate`].
    pub async fn connect(url: &str, options: &StoreOptions) -> Result<Store, StoreError> {
        sqlx::any::install_default_drivers();
        let backend = Backend::of_url(url).ok_or_else(|| {
            StoreError::Config(format!(
                "database URL must start with sqlite: or postgres:, got {:?}",
                redact(url)
            ))
        })?;
        let (url, sqlite_file) = match backend {
            Backend::Sqlite => {
                let (url, file) = sqlite_url(url)?;
                (url, Some(file))
            }
            Backend::Postgres => (url.to_owned(), None),
        };
        let connect_options = AnyConnectOptions::from_str(&url)
            .map_err(|e| StoreError::Config(format!("database URL {:?}: {e}", redact(&url))))?
            .log_statements(tracing::log::LevelFilter::Trace)
            .log_slow_statements(tracing::log::LevelFilter::Warn, Duration::from_millis(500));
        let pool = AnyPoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            // An idle connection may have died with a restarted database:
            // each is pinged before use, and a dead one replaced, so a
            // restart costs no request more than that wait.
            .test_before_acquire(true)
            .after_connect(move |conn, _| Box::pin(async move { configure(conn, backend).await }))
            .connect_with(connect_options.clone())
            .await?;
        let pool = Pool::new(pool, options.metrics.pool_wait.clone());
        if let Some(file) = sqlite_file {
            // SQLite gives its -wal and -shm files the database file's mode;
            // set it on them as well, whatever made them.
            for suffix in ["-wal", "-shm"] {
                let mut name = file.clone().into_os_string();
                name.push(suffix);
                private_file(Path::new(&name), false)?;
            }
        }
        let connect_timeout = options.acquire_timeout;
        let writer = Writer::spawn(
            backend,
            options.write_queue_timeout,
            options.metrics.clone(),
            options.completions.clone(),
            options.alarms.clone(),
            move || {
                let options = connect_options.clone();
                Box::pin(async move {
                    // A database host that drops packets would hold the
                    // writer, and every write queued behind it, for the
                    // operating system's TCP timeout: give up as a request
                    // would.
                    let connect = async {
                        let mut conn = AnyConnection::connect_with(&options).await?;
                        configure(&mut conn, backend).await?;
                        configure_writer(&mut conn, backend).await?;
                        Ok::<_, sqlx::Error>(conn)
                    };
                    tokio::time::timeout(connect_timeout, connect)
                        .await
                        .unwrap_or_else(|_| {
                            Err(sqlx::Error::Io(std::io::Error::new(
                                std::io::ErrorKind::TimedOut,
                                "connecting to the database timed out",
                            )))
                        })
                })
            },
        );
        Ok(Store {
            pool,
            backend,
            writer,
            completions: options.completions.clone(),
            alarms: options.alarms.clone(),
        })
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Applies the migrations of this backend that have not run yet.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        if self.migrated().await {
            return Ok(());
        }
        migrator(self.backend)
            .run(&*self.pool)
            .await
            .map_err(|e| StoreError::Migrate(e.to_string()))
    }

    /// Whether this binary's migrations have all been applied, each as it
    /// is here. Then nothing needs to run, and a role that may not change
    /// the schema (the service role of docs/operations.md#access-log) can
    /// start the service; otherwise the migrator runs, and applies what is
    /// missing or says what differs.
    ///
    /// Migrations newer than all of this binary's are no reason to stop: a
    /// newer version migrated the database during a rolling upgrade, and
    /// the rule of docs/operations.md#upgrades keeps older versions working
    /// on it (the migrator would refuse them as missing).
    async fn migrated(&self) -> bool {
        let Ok(status) = self.migration_status().await else {
            return false;
        };
        let servable = status.servable(self.backend);
        if servable && !status.newer.is_empty() {
            let newer: Vec<String> = status.newer.iter().map(ToString::to_string).collect();
            tracing::warn!(
                newer = %newer.join(", "),
                "the database has migrations a newer version of the service applied; this \
                 version serves on it, as in a rolling upgrade (docs/operations.md#upgrades): \
                 upgrade this host"
            );
        }
        servable
    }

    /// Answers whether the database takes a query.
    pub async fn ping(&self) -> Result<(), StoreError> {
        self.pool.execute("SELECT 1").await?;
        Ok(())
    }

    /// The read pool's connections now: open, idle, and the most it opens.
    pub fn pool_connections(&self) -> (usize, usize, u32) {
        (
            self.pool.size() as usize,
            self.pool.num_idle(),
            self.pool.options().get_max_connections(),
        )
    }

    /// Closes the pool and returns once each of its connections is closed;
    /// in-flight writes have already been answered when the server stops
    /// accepting requests. The writer's connection closes when the last
    /// handle to the store is dropped.
    pub async fn close(&self) {
        // sqlx's close can return while a connection that was on its way
        // back to the pool (pinged on release) lands in it, idle and still
        // open, which keeps a SQLite file in use: close again until none
        // is left. A closed pool opens no new ones, and each round waits
        // for the connections in use to come back.
        loop {
            self.pool.close().await;
            if self.pool.size() == 0 {
                break;
            }
            tokio::task::yield_now().await;
        }
    }
}

/// Per-connection settings. SQLite: WAL with `synchronous=FULL` so that a
/// commit is on disk before we answer (docs/design.md#storage).
async fn configure(conn: &mut AnyConnection, backend: Backend) -> Result<(), sqlx::Error> {
    match backend {
        Backend::Sqlite => {
            conn.execute(
                "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; \
                 PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 10000;",
            )
            .await?;
        }
        Backend::Postgres => {
            conn.execute("SET TIME ZONE 'UTC'").await?;
        }
    }
    Ok(())
}

/// SQLite, the writer's connection only (the one that changes pages):
/// what keeps a POST's cost flat as the database grows
/// (docs/benchmarks.md#growth-post-on-a-database-that-already-holds-responses).
///
/// A POST changes a leaf page of each index whose key is the dossier
/// (`responses_external_id_key`, `responses_dossier`, `access_log_dossier`):
/// under load from many dossiers, pages all over those indexes. SQLite's
/// default page cache (2 MiB) holds a few hundred pages, so once the
/// indexes outgrow it nearly every such change first reads its page back
/// from the file. 64 MiB holds the changing leaves of a million responses'
/// indexes. It is the writer's alone: the read connections keep the
/// default, so memory grows by one cache, not nine.
///
/// Each commit appends the pages it changed to the WAL; a checkpoint copies
/// them into the database file and syncs it, on the connection that
/// committed, so the writer, which every POST waits for, does it. By
/// default that happens every 1,000 WAL pages: with random index pages that
/// is every few dozen commits. Every 16,384 pages (64 MiB of WAL) it
/// happens a sixteenth as often, and a page changed by many commits in
/// between is copied once.
async fn configure_writer(conn: &mut AnyConnection, backend: Backend) -> Result<(), sqlx::Error> {
    if backend == Backend::Sqlite {
        conn.execute("PRAGMA cache_size = -65536; PRAGMA wal_autocheckpoint = 16384;")
            .await?;
    }
    Ok(())
}

/// Makes a SQLite URL create its file and the folder it lives in: the
/// folder 0700 when it is made here, the file 0600 whatever the umask
/// (docs/operations.md#files-and-permissions). Answers the URL and the file.
fn sqlite_url(url: &str) -> Result<(String, PathBuf), StoreError> {
    let rest = url.trim_start_matches("sqlite:").trim_start_matches("//");
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    if path.is_empty() || path == ":memory:" {
        return Err(StoreError::Config(
            "an in-memory SQLite database loses every response on restart; give a file path".into(),
        ));
    }
    if let Some(parent) = Path::new(path)
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
    {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(|e| {
                StoreError::Config(format!(
                    "cannot create database folder {}: {e}",
                    parent.display()
                ))
            })?;
    }
    // Only a URL that may create the database creates the file.
    let create = !query.contains("mode=") || query.contains("mode=rwc");
    private_file(Path::new(path), create)?;
    let query = if query.contains("mode=") {
        query.to_owned()
    } else if query.is_empty() {
        "mode=rwc".to_owned()
    } else {
        format!("{query}&mode=rwc")
    };
    Ok((format!("sqlite://{path}?{query}"), PathBuf::from(path)))
}

/// Gives the file at `path` mode 0600; creates it (empty, which SQLite
/// takes as a new database) when `create` and it is missing. A symbolic
/// link is neither created through nor changed.
fn private_file(path: &Path, create: bool) -> Result<(), StoreError> {
    let problem =
        |e: std::io::Error| StoreError::Config(format!("database file {}: {e}", path.display()));
    if create {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
        {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(problem(e)),
        }
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() && meta.permissions().mode() & 0o777 != 0o600 => {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(problem)
        }
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(problem(e)),
    }
}

/// The file a SQLite database URL names, without touching it; None for
/// another backend or an in-memory database.
pub fn sqlite_file(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("sqlite:")?.trim_start_matches("//");
    let path = rest.split_once('?').map_or(rest, |(path, _)| path);
    (!path.is_empty() && path != ":memory:").then(|| PathBuf::from(path))
}

/// The URL without its password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

/// Renders `$1, $2, ...` starting after `first - 1`: placeholders for an
/// `IN (...)` list in the numbered style both dialects accept.
fn placeholders(first: usize, count: usize) -> String {
    (first..first + count)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// SQL built together with its parameters, for the statements of a write
/// batch whose text grows with the batch: each [`Script::bind`] adds a
/// value and its placeholder, so the two cannot drift apart.
///
/// Placeholders are `$1`, `$2`, ... for PostgreSQL and plain `?` for
/// SQLite: while preparing, SQLite looks each numbered parameter up in the
/// list of those it has seen, which makes a statement with hundreds of them
/// quadratic to prepare; plain `?` are numbered in order without a lookup.
///
/// On SQLite a script may hold several statements separated by `;`, sent in
/// one round trip (the driver binds the parameters across them in order);
/// PostgreSQL takes one statement with parameters per round trip.
struct Script {
    backend: Backend,
    sql: String,
    args: AnyArguments<'static>,
    count: usize,
    error: Option<sqlx::error::BoxDynError>,
}

impl std::fmt::Debug for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Script")
            .field("sql", &self.sql)
            .field("parameters", &self.count)
            .finish()
    }
}

impl Script {
    fn new(backend: Backend) -> Script {
        Script {
            backend,
            sql: String::new(),
            args: AnyArguments::default(),
            count: 0,
            error: None,
        }
    }

    /// Appends SQL text.
    fn sql(&mut self, text: &str) -> &mut Script {
        self.sql.push_str(text);
        self
    }

    /// Appends the placeholder of the next parameter and binds `value` to it.
    fn bind<T>(&mut self, value: T) -> &mut Script
    where
        T: 'static + sqlx::Encode<'static, sqlx::Any> + sqlx::Type<sqlx::Any>,
    {
        self.count += 1;
        match self.backend {
            Backend::Sqlite => self.sql.push('?'),
            Backend::Postgres => {
                self.sql.push('$');
                self.sql.push_str(&self.count.to_string());
            }
        }
        if let Err(e) = sqlx::Arguments::add(&mut self.args, value) {
            self.error.get_or_insert(e);
        }
        self
    }

    /// Appends `values` as a comma-separated list of parameters (the inside
    /// of an `IN (...)`).
    fn list<T>(&mut self, values: impl IntoIterator<Item = T>) -> &mut Script
    where
        T: 'static + sqlx::Encode<'static, sqlx::Any> + sqlx::Type<sqlx::Any>,
    {
        for (n, value) in values.into_iter().enumerate() {
            self.sql(if n == 0 { "" } else { ", " }).bind(value);
        }
        self
    }

    fn check(&self) -> Result<(), StoreError> {
        match &self.error {
            Some(e) => Err(StoreError::Corrupt(format!(
                "a parameter cannot be encoded: {e}"
            ))),
            None => Ok(()),
        }
    }

    /// Runs the statements; what they changed.
    async fn execute(
        self,
        conn: &mut AnyConnection,
    ) -> Result<sqlx::any::AnyQueryResult, StoreError> {
        self.check()?;
        // The text depends on the batch: keep it out of the statement cache.
        Ok(sqlx::query_with(&self.sql, self.args)
            .persistent(false)
            .execute(conn)
            .await?)
    }

    /// Runs the statements; the rows they return.
    async fn fetch_all(
        self,
        conn: &mut AnyConnection,
    ) -> Result<Vec<sqlx::any::AnyRow>, StoreError> {
        self.check()?;
        Ok(sqlx::query_with(&self.sql, self.args)
            .persistent(false)
            .fetch_all(conn)
            .await?)
    }
}

/// What the store's unit tests share.
#[cfg(test)]
pub(crate) mod testing {
    use super::{Store, StoreOptions};

    /// A migrated SQLite store in a temporary folder with one questionnaire
    /// (id 7, key `q`); the folder and the database URL with it.
    pub async fn sqlite_store() -> (tempfile::TempDir, Store, String) {
        let dir = tempfile::tempdir().expect("tempdir");
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let store = Store::connect(&url, &StoreOptions::default())
            .await
            .expect("connects");
        store.migrate().await.expect("migrates");
        sqlx::query("INSERT INTO questionnaires (id, key, name, definition, sha256, imported_at) VALUES (7, 'q', 'Q', '', '', 0)")
            .execute(&store.pool)
            .await
            .expect("questionnaire");
        (dir, store, url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_urls_create_their_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sub/outcomes.db");
        let (url, file) = sqlite_url(&format!("sqlite://{}", path.display())).expect("valid");
        assert_eq!(url, format!("sqlite://{}?mode=rwc", path.display()));
        assert_eq!(file, path);
        assert!(path.parent().is_some_and(Path::exists));
        let mode = |p: &Path| std::fs::metadata(p).expect("exists").permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir.path().join("sub")), 0o700);
        assert!(sqlite_url("sqlite::memory:").is_err());
    }

    #[test]
    fn sqlite_files_are_read_from_urls_without_touching_them() {
        assert_eq!(
            sqlite_file("sqlite://data/outcomes.db?mode=rwc"),
            Some(PathBuf::from("data/outcomes.db"))
        );
        assert_eq!(
            sqlite_file("sqlite:///var/lib/o.db"),
            Some(PathBuf::from("/var/lib/o.db"))
        );
        assert_eq!(sqlite_file("sqlite::memory:"), None);
        assert_eq!(sqlite_file("postgres://u@h/db"), None);
    }

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(redact("postgres://u:secret@db/x"), "postgres://u:***@db/x");
        assert_eq!(redact("postgres://u@db/x"), "postgres://u@db/x");
        assert_eq!(redact("sqlite://data/x.db"), "sqlite://data/x.db");
    }

    #[tokio::test]
    async fn sqlite_commits_are_durable_on_every_connection() {
        let dir = tempfile::tempdir().expect("tempdir");
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let store = Store::connect(&url, &StoreOptions::default())
            .await
            .expect("connects");
        store.migrate().await.expect("migrates");
        let pragma = |sql: &'static str| {
            let pool = store.pool.clone();
            async move {
                sqlx::query_scalar::<_, String>(sql)
                    .fetch_one(&pool)
                    .await
                    .expect("pragma")
            }
        };
        assert_eq!(
            pragma("SELECT journal_mode FROM pragma_journal_mode").await,
            "wal"
        );
        // 2 = FULL (https://www.sqlite.org/pragma.html#pragma_synchronous)
        let sync: i64 = sqlx::query_scalar("SELECT synchronous FROM pragma_synchronous")
            .fetch_one(&store.pool)
            .await
            .expect("pragma");
        assert_eq!(sync, 2);
        let writer_sync: i64 = store
            .writer
            .write(|conn| {
                Box::pin(async move {
                    Ok(
                        sqlx::query_scalar("SELECT synchronous FROM pragma_synchronous")
                            .fetch_one(&mut *conn)
                            .await?,
                    )
                })
            })
            .await
            .expect("writer answers");
        assert_eq!(writer_sync, 2);
    }

    #[test]
    fn scripts_bind_in_the_style_of_the_backend() {
        let mut p = Script::new(Backend::Postgres);
        p.sql("SELECT ").bind(1_i64).sql(", ").bind("x".to_owned());
        assert_eq!(p.sql, "SELECT $1, $2");
        let mut s = Script::new(Backend::Sqlite);
        s.sql("SELECT ").bind(1_i64).sql(", ").bind("x".to_owned());
        assert_eq!(s.sql, "SELECT ?, ?");
    }

    #[tokio::test]
    async fn sqlite_scripts_run_several_statements_in_one_call() {
        let dir = tempfile::tempdir().expect("tempdir");
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("s.db").display());
        sqlx::any::install_default_drivers();
        let mut conn = AnyConnection::connect(&url).await.expect("connects");
        conn.execute("CREATE TABLE t (a INTEGER, b TEXT)")
            .await
            .expect("creates");
        let mut s = Script::new(Backend::Sqlite);
        s.sql("BEGIN; INSERT INTO t VALUES (")
            .bind(1_i64)
            .sql(", ")
            .bind("one".to_owned())
            .sql("); ");
        s.sql("INSERT INTO t VALUES (")
            .bind(2_i64)
            .sql(", ")
            .bind("two".to_owned())
            .sql("); ");
        s.sql("SELECT b FROM t WHERE a >= ")
            .bind(1_i64)
            .sql(" ORDER BY a");
        let rows = s.fetch_all(&mut conn).await.expect("runs");
        let got: Vec<String> = rows.iter().map(|r| sqlx::Row::get(r, 0)).collect();
        assert_eq!(got, ["one", "two"]);
        conn.execute("COMMIT").await.expect("commits");
    }

    #[test]
    fn placeholders_are_numbered() {
        assert_eq!(placeholders(3, 2), "$3, $4");
        assert_eq!(placeholders(1, 0), "");
    }
}
