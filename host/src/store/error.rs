//! The store's error type. Database details stay here and in logs; the HTTP
//! layer only learns whether the database could not be reached
//! ([`StoreError::Unavailable`]) or something internal failed. The driver's
//! errors are sorted into those two here, and nowhere else: their cause
//! travels as a [`Cause`], which shows the driver's message in logs but
//! which nothing outside the store can match on.
//!
//! Unavailable: no connection in time, I/O, and PostgreSQL's outage
//! SQLSTATEs (class 08, class 53, 57P01..57P03). **Invariant:** a database
//! that is down or restarting is a 503, never a 500.

use std::fmt;
use std::sync::Arc;

/// A failure of the store.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// A statement failed: a bug, or data this version does not expect.
    #[error("database: {0}")]
    Database(Cause),
    /// The database does not answer: no free connection in time, the
    /// connection refused or broken. Worth retrying later.
    #[error("database unavailable: {0}")]
    Unavailable(Cause),
    #[error("migrations: {0}")]
    Migrate(String),
    #[error("configuration: {0}")]
    Config(String),
    #[error("stored data is not what this version expects: {0}")]
    Corrupt(String),
    #[error("the database writer has stopped")]
    WriterGone,
    /// The writer's queue stayed full for this long: the service takes in
    /// more writes than the database commits. Worth retrying later.
    #[error("the write queue stayed full for {0:?}")]
    Busy(std::time::Duration),
    /// A write found other rows than it was given to change: the caller
    /// named rows it may not change, or another writer changed them first.
    /// The caller's transaction must not keep the write.
    #[error("conflict: {0}")]
    Conflict(String),
}

/// What the database driver said went wrong: its message (and the causes
/// behind it) for logs. Only the store looks inside.
#[derive(Debug, Clone)]
pub struct Cause(Arc<sqlx::Error>);

impl Cause {
    /// The driver's error, for the store's own decisions.
    pub(super) fn driver(&self) -> &sqlx::Error {
        &self.0
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        if unavailable(&e) {
            StoreError::Unavailable(Cause(Arc::new(e)))
        } else {
            StoreError::Database(Cause(Arc::new(e)))
        }
    }
}

/// Whether `e` says the database cannot be reached or is going away, rather
/// than that the statement was wrong: worth answering 503 and retrying.
/// A restarted PostgreSQL first ends its sessions (57P01), then refuses new
/// ones while it starts (57P03, or a refused connection): all of that is
/// an outage the service rides out (docs/operations.md, "What a database
/// restart does").
fn unavailable(e: &sqlx::Error) -> bool {
    match e {
        // No free connection in time, a refused or broken connection, a
        // pool shutting down, the SQLite worker thread gone.
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| unavailable_code(&code)),
        _ => false,
    }
}

/// PostgreSQL's SQLSTATEs of an outage (Appendix A of its manual, "PostgreSQL
/// Error Codes"): class 08 (connection exception), class 53 (insufficient
/// resources: disk full, out of memory, too many connections), and
/// 57P01..57P03 (administrator or crash shutdown, cannot connect now).
/// SQLite's codes are numbers and never match.
fn unavailable_code(code: &str) -> bool {
    code.starts_with("08") || code.starts_with("53") || matches!(code, "57P01" | "57P02" | "57P03")
}

impl StoreError {
    /// The name of the unique constraint this error violated, if that is
    /// what it is.
    pub fn violated_constraint(&self) -> Option<String> {
        match self {
            StoreError::Database(e) => match e.driver() {
                sqlx::Error::Database(db) if db.is_unique_violation() => {
                    // PostgreSQL names the constraint; SQLite names the columns.
                    Some(
                        db.constraint()
                            .map(str::to_owned)
                            .unwrap_or_else(|| db.message().to_owned()),
                    )
                }
                _ => None,
            },
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outages_are_told_from_bad_statements() {
        for code in [
            "08006", "08001", "57P01", "57P02", "57P03", "53300", "53100",
        ] {
            assert!(unavailable_code(code), "{code}");
        }
        for code in ["23505", "42P01", "40001", "57014", "5", "2067"] {
            assert!(!unavailable_code(code), "{code}");
        }
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(matches!(
            StoreError::from(sqlx::Error::Io(refused)),
            StoreError::Unavailable(_)
        ));
        assert!(matches!(
            StoreError::from(sqlx::Error::PoolTimedOut),
            StoreError::Unavailable(_)
        ));
        assert!(matches!(
            StoreError::from(sqlx::Error::RowNotFound),
            StoreError::Database(_)
        ));
    }
}
