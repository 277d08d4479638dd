//! Which migrations a database has applied, set against the ones this
//! binary carries: what `outcomes migrate --check` reports, what
//! `outcomes restore` checks a copy against, and what lets a host start
//! on a database a newer host has already migrated (a rolling upgrade,
//! docs/operations.md#upgrades); `/readyz` and `/version` read it too.
//! Reads only; [`super::Store::migrate`]
//! applies.

use std::fmt;

use super::{Backend, Store, StoreError};

/// A migration by number and name (`0013 access log chain`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationName {
    pub version: i64,
    pub description: String,
}

impl fmt::Display for MigrationName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04} {}", self.version, self.description)
    }
}

/// A row of `_sqlx_migrations`: a migration a database has run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedMigration {
    pub version: i64,
    pub description: String,
    /// False when the migration failed part way (PostgreSQL runs each in a
    /// transaction, so this is rare; sqlx records it all the same).
    pub success: bool,
    /// SHA-384 of the migration's SQL as it was run.
    pub checksum: Vec<u8>,
}

/// A database's migrations compared with this binary's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigrationStatus {
    /// This binary's migrations the database has not run: `migrate` (or
    /// `serve`) applies them.
    pub pending: Vec<MigrationName>,
    /// Migrations the database has run that this binary does not know: a
    /// newer version migrated it.
    pub newer: Vec<MigrationName>,
    /// Migrations run with other SQL than this binary's under the same
    /// number: the migrator refuses to go on.
    pub changed: Vec<MigrationName>,
    /// Migrations recorded as failed.
    pub failed: Vec<MigrationName>,
    /// The highest migration the database has run successfully.
    pub level: Option<MigrationName>,
}

impl MigrationStatus {
    /// Compares what a database has run with what `backend`'s migrations in
    /// this binary are.
    pub fn compare(applied: &[AppliedMigration], backend: Backend) -> MigrationStatus {
        let ours = super::migrator(backend);
        let ours: Vec<_> = ours
            .iter()
            .filter(|m| !m.migration_type.is_down_migration())
            .collect();
        let name = |version: i64, description: &str| MigrationName {
            version,
            description: description.to_owned(),
        };
        let mut status = MigrationStatus::default();
        for m in &ours {
            if !applied.iter().any(|a| a.version == m.version) {
                status.pending.push(name(m.version, &m.description));
            }
        }
        for a in applied {
            let this = name(a.version, &a.description);
            match ours.iter().find(|m| m.version == a.version) {
                None => status.newer.push(this.clone()),
                Some(m) if *m.checksum != *a.checksum => status.changed.push(this.clone()),
                Some(_) => {}
            }
            if !a.success {
                status.failed.push(this);
            } else if status.level.as_ref().is_none_or(|l| l.version < a.version) {
                status.level = Some(this);
            }
        }
        status
    }

    /// Exactly this binary's migrations have run, each as it is here.
    pub fn is_current(&self) -> bool {
        self.pending.is_empty()
            && self.newer.is_empty()
            && self.changed.is_empty()
            && self.failed.is_empty()
    }

    /// This binary can serve the database as it is, without migrating:
    /// everything it knows has run as it is here, and whatever else has run
    /// is newer than all of it (a newer host migrated during a rolling
    /// upgrade; the rule of docs/operations.md#upgrades keeps the old
    /// binary working on it).
    pub fn servable(&self, backend: Backend) -> bool {
        let last_known = last_version(backend);
        self.pending.is_empty()
            && self.changed.is_empty()
            && self.failed.is_empty()
            && self.newer.iter().all(|m| m.version > last_known)
    }

    /// The level as text: `0013 access log chain`, or `none`.
    pub fn level_text(&self) -> String {
        self.level
            .as_ref()
            .map_or_else(|| "none".to_owned(), ToString::to_string)
    }
}

/// The number of the last migration this binary carries for `backend`.
pub fn last_version(backend: Backend) -> i64 {
    super::migrator(backend)
        .iter()
        .map(|m| m.version)
        .max()
        .unwrap_or(0)
}

/// The highest migration this binary carries, for `/version` and
/// `outcomes --version`. Both dialects have the same numbers
/// (ARCHITECTURE.md, "Other changes"), so the SQLite list says it for both.
pub fn embedded_level() -> i64 {
    last_version(Backend::Sqlite)
}

/// The migrations this binary carries for `backend`, in order.
pub fn known_migrations(backend: Backend) -> Vec<MigrationName> {
    super::migrator(backend)
        .iter()
        .filter(|m| !m.migration_type.is_down_migration())
        .map(|m| MigrationName {
            version: m.version,
            description: m.description.to_string(),
        })
        .collect()
}

impl Store {
    /// What the database has run, compared with this binary's migrations.
    /// A database that has never been migrated has run nothing.
    pub async fn migration_status(&self) -> Result<MigrationStatus, StoreError> {
        let mut conn = self.pool.acquire().await?;
        let exists = match self.backend {
            Backend::Sqlite => SQLITE_HAS_TABLE,
            Backend::Postgres => {
                "SELECT COUNT(*) FROM information_schema.tables \
                 WHERE table_schema = current_schema() AND table_name = '_sqlx_migrations'"
            }
        };
        let tables: i64 = sqlx::query_scalar(exists).fetch_one(&mut *conn).await?;
        let rows = if tables == 0 {
            Vec::new()
        } else {
            sqlx::query_as::<_, AppliedRow>(SELECT_APPLIED)
                .fetch_all(&mut *conn)
                .await?
        };
        Ok(MigrationStatus::compare(&applied(rows), self.backend))
    }
}

/// Whether a SQLite database has the migrations table.
pub(super) const SQLITE_HAS_TABLE: &str =
    "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'";

/// The rows of `_sqlx_migrations`. success is an integer on SQLite and a
/// boolean on PostgreSQL: the CASE gives one type on both.
pub(super) const SELECT_APPLIED: &str = "SELECT version, description, \
     CAST(CASE WHEN success THEN 1 ELSE 0 END AS BIGINT), checksum \
     FROM _sqlx_migrations ORDER BY version";

/// A row of [`SELECT_APPLIED`].
pub(super) type AppliedRow = (i64, String, i64, Vec<u8>);

/// The rows of [`SELECT_APPLIED`] as applied migrations.
pub(super) fn applied(rows: Vec<AppliedRow>) -> Vec<AppliedMigration> {
    rows.into_iter()
        .map(
            |(version, description, success, checksum)| AppliedMigration {
                version,
                description,
                success: success != 0,
                checksum,
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied_all(backend: Backend) -> Vec<AppliedMigration> {
        super::super::migrator(backend)
            .iter()
            .map(|m| AppliedMigration {
                version: m.version,
                description: m.description.to_string(),
                success: true,
                checksum: m.checksum.to_vec(),
            })
            .collect()
    }

    #[test]
    fn every_migration_run_is_current() {
        for backend in [Backend::Sqlite, Backend::Postgres] {
            let status = MigrationStatus::compare(&applied_all(backend), backend);
            assert!(status.is_current(), "{status:?}");
            assert!(status.servable(backend));
            assert_eq!(status.level.map(|l| l.version), Some(last_version(backend)));
        }
    }

    #[test]
    fn nothing_run_is_all_pending() {
        let status = MigrationStatus::compare(&[], Backend::Sqlite);
        assert_eq!(status.pending, known_migrations(Backend::Sqlite));
        assert_eq!(status.level_text(), "none");
        assert!(!status.servable(Backend::Sqlite));
    }

    #[test]
    fn a_newer_migration_is_servable_but_not_current() {
        let mut applied = applied_all(Backend::Postgres);
        applied.push(AppliedMigration {
            version: 9999,
            description: "from the future".into(),
            success: true,
            checksum: vec![1, 2, 3],
        });
        let status = MigrationStatus::compare(&applied, Backend::Postgres);
        assert!(!status.is_current());
        assert!(status.servable(Backend::Postgres));
        assert_eq!(status.newer.len(), 1);
        assert_eq!(status.level_text(), "9999 from the future");
    }

    #[test]
    fn a_changed_or_failed_migration_is_not_servable() {
        let mut changed = applied_all(Backend::Sqlite);
        changed[0].checksum = vec![0];
        let status = MigrationStatus::compare(&changed, Backend::Sqlite);
        assert_eq!(status.changed.len(), 1);
        assert!(!status.servable(Backend::Sqlite));
        let mut failed = applied_all(Backend::Sqlite);
        if let Some(last) = failed.last_mut() {
            last.success = false;
        }
        let status = MigrationStatus::compare(&failed, Backend::Sqlite);
        assert_eq!(status.failed.len(), 1);
        assert!(!status.servable(Backend::Sqlite));
    }

    #[test]
    fn a_missing_old_migration_is_pending_not_servable() {
        let mut applied = applied_all(Backend::Sqlite);
        applied.remove(0);
        let status = MigrationStatus::compare(&applied, Backend::Sqlite);
        assert_eq!(status.pending.len(), 1);
        assert!(!status.servable(Backend::Sqlite));
    }
}
