//! The migration level: which of this binary's migrations the database has
//! applied, read without changing anything, for the readiness probe
//! (`/readyz`) and the version an operator reads (`/version`,
//! `outcomes --version`). Applying them is [`Store::migrate`]'s.

use super::{Backend, POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS, Store, StoreError};

/// How the database's applied migrations compare with this binary's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigrationLevel {
    /// The highest migration the database has applied (0: none).
    pub applied: i64,
    /// This binary's migrations the database has not applied.
    pub pending: Vec<i64>,
    /// Migrations applied with other contents than this binary's.
    pub changed: Vec<i64>,
    /// Migrations the database has applied that this binary does not know:
    /// a newer binary migrated it (a rolling upgrade in progress).
    pub newer: Vec<i64>,
}

impl MigrationLevel {
    /// Whether the schema is the one this binary was built for, or a
    /// newer one it runs against (docs/operations.md#health-and-version).
    pub fn is_current(&self) -> bool {
        self.pending.is_empty() && self.changed.is_empty()
    }
}

fn migrator(backend: Backend) -> &'static sqlx::migrate::Migrator {
    match backend {
        Backend::Sqlite => &SQLITE_MIGRATIONS,
        Backend::Postgres => &POSTGRES_MIGRATIONS,
    }
}

/// The highest migration this binary carries. Both dialects have the same
/// numbers (ARCHITECTURE.md, "Other changes"), so the SQLite list says it
/// for both.
pub fn embedded_level() -> i64 {
    migrator(Backend::Sqlite)
        .iter()
        .filter(|m| !m.migration_type.is_down_migration())
        .map(|m| m.version)
        .max()
        .unwrap_or(0)
}

impl Store {
    /// Reads the applied migrations and compares them with this binary's.
    /// The read touches a table, so on SQLite it also proves the database
    /// file can be read (a bare `SELECT 1` reads no file).
    pub async fn migration_level(&self) -> Result<MigrationLevel, StoreError> {
        let applied = sqlx::query_as::<_, (i64, Vec<u8>)>(
            "SELECT version, checksum FROM _sqlx_migrations WHERE success",
        )
        .fetch_all(&self.pool)
        .await?;
        let ours: Vec<_> = migrator(self.backend)
            .iter()
            .filter(|m| !m.migration_type.is_down_migration())
            .collect();
        let mut level = MigrationLevel {
            applied: applied.iter().map(|(v, _)| *v).max().unwrap_or(0),
            ..MigrationLevel::default()
        };
        for m in &ours {
            match applied.iter().find(|(v, _)| *v == m.version) {
                None => level.pending.push(m.version),
                Some((_, checksum)) if **checksum != *m.checksum => level.changed.push(m.version),
                Some(_) => {}
            }
        }
        level.newer = applied
            .iter()
            .map(|(v, _)| *v)
            .filter(|v| !ours.iter().any(|m| m.version == *v))
            .collect();
        level.newer.sort_unstable();
        Ok(level)
    }
}
