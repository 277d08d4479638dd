//! The database side of `outcomes backup` and `outcomes restore`
//! (host/src/commands/backup.rs owns the files and the command line):
//!
//! - a consistent copy of a SQLite database while the service writes to
//!   it (`VACUUM INTO`, one read transaction: every commit before it
//!   started is in the copy, none after);
//! - what a copy holds: its integrity, migrations and a few counts;
//! - an exclusive hold on a SQLite database, which only succeeds while no
//!   other connection has it open (a running service always has);
//! - whether a PostgreSQL database has other sessions or any tables.
//!
//! Each opens its own single connection: none of them may use a pool, and
//! none may migrate or create a database.

use std::path::Path;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteLockingMode};
use sqlx::{ConnectOptions, Connection, PgConnection, SqliteConnection};

use super::migrations::{self, MigrationStatus};
use super::{Backend, StoreError};

/// How long a backup waits for SQLite's locks (a checkpoint, a writer
/// switching the journal) before it gives up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// What a SQLite database file holds, read with [`inspect_sqlite`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteInspection {
    /// What `PRAGMA integrity_check` found wrong; empty when it answered
    /// `ok`.
    pub problems: Vec<String>,
    /// Its migrations against this binary's.
    pub migrations: MigrationStatus,
    /// Rows in the main tables; None before the first migration.
    pub counts: Option<Counts>,
}

/// Rows in the tables an operator recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub dossiers: i64,
    pub responses: i64,
    pub completed: i64,
    pub access_log: i64,
}

/// Opens one connection to an existing SQLite file; never creates one.
async fn open(file: &Path, options: SqliteConnectOptions) -> Result<SqliteConnection, StoreError> {
    Ok(options
        .filename(file)
        .create_if_missing(false)
        .log_statements(tracing::log::LevelFilter::Trace)
        .connect()
        .await?)
}

/// Writes a consistent copy of the SQLite database `source` into `into`,
/// which must be an empty file or missing (the caller makes it, with the
/// mode it wants). The service may go on writing meanwhile: the copy is
/// made in one read transaction of WAL mode, which writers do not wait for
/// (https://www.sqlite.org/lang_vacuum.html#vacuuminto). The copy is a
/// rollback-journal database in one file, with no -wal to go with it.
pub async fn sqlite_snapshot(source: &Path, into: &Path) -> Result<(), StoreError> {
    let target = into
        .to_str()
        .ok_or_else(|| StoreError::Config(format!("{} is not UTF-8", into.display())))?;
    // A name starting with "file:" would be read as a URI.
    if target.starts_with("file:") {
        return Err(StoreError::Config(format!(
            "{target}: give the copy's path with a folder (./{target})"
        )));
    }
    let mut conn = open(
        source,
        SqliteConnectOptions::new().busy_timeout(BUSY_TIMEOUT),
    )
    .await?;
    let result = sqlx::query("VACUUM INTO $1")
        .bind(target)
        .execute(&mut conn)
        .await;
    conn.close().await?;
    result?;
    Ok(())
}

/// Reads what the SQLite database `file` holds: `integrity_check`, its
/// migrations, counts. Leaves it one file in rollback-journal mode (a copy
/// from [`sqlite_snapshot`] is one already; the service turns WAL on when
/// it opens it). A file that is not a SQLite database is an error.
pub async fn inspect_sqlite(file: &Path) -> Result<SqliteInspection, StoreError> {
    let mut conn = open(file, SqliteConnectOptions::new().busy_timeout(BUSY_TIMEOUT)).await?;
    let result = inspect(&mut conn).await;
    conn.close().await?;
    result
}

async fn inspect(conn: &mut SqliteConnection) -> Result<SqliteInspection, StoreError> {
    sqlx::query("PRAGMA journal_mode = DELETE")
        .execute(&mut *conn)
        .await?;
    // At most 100 problems: enough to tell a damaged copy. A check that
    // stops on the damage is a problem too.
    let problems: Vec<String> = match sqlx::query_scalar::<_, String>("PRAGMA integrity_check(100)")
        .fetch_all(&mut *conn)
        .await
    {
        Ok(lines) => lines.into_iter().filter(|line| line != "ok").collect(),
        Err(e) => vec![e.to_string()],
    };
    if !problems.is_empty() {
        return Ok(SqliteInspection {
            problems,
            migrations: MigrationStatus::default(),
            counts: None,
        });
    }
    let tables: i64 = sqlx::query_scalar(migrations::SQLITE_HAS_TABLE)
        .fetch_one(&mut *conn)
        .await?;
    let rows = if tables == 0 {
        Vec::new()
    } else {
        sqlx::query_as::<_, migrations::AppliedRow>(migrations::SELECT_APPLIED)
            .fetch_all(&mut *conn)
            .await?
    };
    let migrations = MigrationStatus::compare(&migrations::applied(rows), Backend::Sqlite);
    // Every table counted here exists from migrations 0001 and 0002 on.
    let counts = if migrations.level.as_ref().is_some_and(|l| l.version >= 2) {
        let (dossiers, responses, completed, access_log) =
            sqlx::query_as::<_, (i64, i64, i64, i64)>(
                "SELECT (SELECT COUNT(*) FROM dossiers), (SELECT COUNT(*) FROM responses), \
                 (SELECT COUNT(*) FROM responses WHERE completed_at IS NOT NULL), \
                 (SELECT COUNT(*) FROM access_log)",
            )
            .fetch_one(&mut *conn)
            .await?;
        Some(Counts {
            dossiers,
            responses,
            completed,
            access_log,
        })
    } else {
        None
    };
    Ok(SqliteInspection {
        problems,
        migrations,
        counts,
    })
}

/// A SQLite database no other connection has open, held so until
/// [`SqliteHold::release`]: its WAL is folded into the file, so the file
/// alone is the whole database.
#[derive(Debug)]
pub struct SqliteHold {
    conn: SqliteConnection,
}

/// Whether [`hold_sqlite`] got the database.
#[derive(Debug)]
pub enum Hold {
    Held(SqliteHold),
    /// Another connection has it open: a service serving on it, a command
    /// running, or any other SQLite client.
    InUse,
}

/// Takes the SQLite database `file` for this process alone, at once or
/// not at all.
///
/// In WAL mode every connection holds a shared lock on the database file
/// for as long as it is open, not only during a transaction, and a running
/// service always has its writer's connection open. A connection in
/// `EXCLUSIVE` locking mode needs an exclusive lock on the file for its
/// first transaction, which SQLite refuses (SQLITE_BUSY) while any other
/// connection, of this process or another, holds one
/// (https://www.sqlite.org/wal.html#use_of_wal_without_shared_memory,
/// https://www.sqlite.org/pragma.html#pragma_locking_mode). With no busy
/// timeout, that refusal is the answer "in use". This uses SQLite's own
/// locks rather than a lock file of ours, so it also sees a `sqlite3`
/// shell or a crashed-then-restarted service, and nothing is left behind
/// when a process dies.
pub async fn hold_sqlite(file: &Path) -> Result<Hold, StoreError> {
    let options = SqliteConnectOptions::new()
        .busy_timeout(Duration::ZERO)
        .locking_mode(SqliteLockingMode::Exclusive);
    let mut conn = match open(file, options).await {
        Ok(conn) => conn,
        Err(e) if is_busy(&e) => return Ok(Hold::InUse),
        Err(e) => return Err(e),
    };
    match take(&mut conn).await {
        Ok(()) => Ok(Hold::Held(SqliteHold { conn })),
        Err(e) => {
            let _ = conn.close().await;
            if is_busy(&e) { Ok(Hold::InUse) } else { Err(e) }
        }
    }
}

async fn take(conn: &mut SqliteConnection) -> Result<(), StoreError> {
    sqlx::query("BEGIN EXCLUSIVE").execute(&mut *conn).await?;
    sqlx::query("COMMIT").execute(&mut *conn).await?;
    // Fold the WAL into the file and drop it: the file is then the whole
    // database, and can be moved aside alone.
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&mut *conn)
        .await?;
    sqlx::query("PRAGMA journal_mode = DELETE")
        .execute(&mut *conn)
        .await?;
    Ok(())
}

impl SqliteHold {
    /// Lets other connections in again.
    pub async fn release(self) -> Result<(), StoreError> {
        Ok(self.conn.close().await?)
    }
}

/// SQLITE_BUSY, with any of its extended codes
/// (https://www.sqlite.org/rescode.html#busy).
fn is_busy(e: &StoreError) -> bool {
    let (StoreError::Database(e) | StoreError::Unavailable(e)) = e else {
        return false;
    };
    match e.driver() {
        sqlx::Error::Database(db) => db
            .code()
            .and_then(|c| c.parse::<i32>().ok())
            .is_some_and(|code| code & 0xff == 5),
        _ => false,
    }
}

/// What a PostgreSQL database holds before a restore into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostgresTarget {
    /// Sessions connected to it other than the one asking: hosts serving,
    /// commands running, administrators.
    pub other_sessions: i64,
    /// Tables in its current schema.
    pub tables: i64,
}

/// Looks at the PostgreSQL database `url` over one connection of its own
/// (a pool's other connections would count as other sessions).
pub async fn postgres_target(url: &str) -> Result<PostgresTarget, StoreError> {
    let mut conn = PgConnection::connect(url).await?;
    let (other_sessions, tables) = sqlx::query_as::<_, (i64, i64)>(
        "SELECT (SELECT COUNT(*) FROM pg_stat_activity \
                 WHERE datname = current_database() AND pid <> pg_backend_pid()), \
                (SELECT COUNT(*) FROM information_schema.tables \
                 WHERE table_schema = current_schema())",
    )
    .fetch_one(&mut conn)
    .await?;
    conn.close().await?;
    Ok(PostgresTarget {
        other_sessions,
        tables,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::sqlite_store;

    #[tokio::test]
    async fn a_snapshot_holds_what_was_committed_and_is_one_file() {
        let (dir, store, _) = sqlite_store().await;
        let source = dir.path().join("t.db");
        let copy = dir.path().join("copy.db");
        sqlite_snapshot(&source, &copy).await.expect("copies");
        assert!(!dir.path().join("copy.db-wal").exists());
        let seen = inspect_sqlite(&copy).await.expect("inspects");
        assert!(seen.problems.is_empty(), "{:?}", seen.problems);
        assert!(seen.migrations.is_current(), "{:?}", seen.migrations);
        assert_eq!(seen.counts.map(|c| c.responses), Some(0));
        store.close().await;
    }

    #[tokio::test]
    async fn a_database_open_elsewhere_is_not_held() {
        let (dir, store, _) = sqlite_store().await;
        let file = dir.path().join("t.db");
        assert!(matches!(
            hold_sqlite(&file).await.expect("asks"),
            Hold::InUse
        ));
        store.close().await;
        match hold_sqlite(&file).await.expect("asks") {
            Hold::Held(hold) => {
                // Held: its WAL is folded in and gone.
                assert!(!dir.path().join("t.db-wal").exists());
                hold.release().await.expect("releases");
            }
            Hold::InUse => panic!("nothing has it open"),
        }
    }

    #[tokio::test]
    async fn a_file_that_is_no_database_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("x.db");
        std::fs::write(&file, vec![0x55; 8192]).expect("writes");
        assert!(inspect_sqlite(&file).await.is_err());
    }
}
