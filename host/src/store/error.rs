//! The store's error type. Database details stay here and in logs; the HTTP
//! layer only learns whether the database could not be reached
//! ([`StoreError::Unavailable`]) or something internal failed. The driver's
//! errors are sorted into those two here, and nowhere else.

use std::sync::Arc;

/// A failure of the store.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    #[error("database: {0}")]
    Database(Arc<sqlx::Error>),
    /// The database does not answer: no free connection in time, the
    /// connection refused or broken. Worth retrying later.
    #[error("database unavailable: {0}")]
    Unavailable(Arc<sqlx::Error>),
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

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        // A refused or broken connection is an I/O error.
        if matches!(e, sqlx::Error::PoolTimedOut | sqlx::Error::Io(_)) {
            StoreError::Unavailable(Arc::new(e))
        } else {
            StoreError::Database(Arc::new(e))
        }
    }
}

impl StoreError {
    /// The name of the unique constraint this error violated, if that is
    /// what it is.
    pub fn violated_constraint(&self) -> Option<String> {
        match self {
            StoreError::Database(e) => match e.as_ref() {
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
