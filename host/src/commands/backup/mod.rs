//! `outcomes backup` and `outcomes restore`: a consistent copy of the
//! database while the service serves, and a checked copy put back in
//! place without destroying what it replaces (docs/operations.md#backup-and-restore).
//!
//! SQLite is copied by the service's own SQLite (`sqlite.rs`); PostgreSQL
//! by its own tools, `pg_dump` and `pg_restore`, when they are installed,
//! else the command says what to run (`postgres.rs`).
//!
//! A copy's migrations are checked before it is restored: newer than this
//! binary is refused, older is named (`store/migrations.rs`).
//! `tests/tests/api/backup.rs` builds and runs the binary on both
//! databases.

mod files;
mod postgres;
mod sqlite;

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use clap::Args;

use crate::config::Config;
use crate::store::backup::Counts;
use crate::store::{self, Backend, MigrationStatus};

/// `outcomes backup`
#[derive(Debug, Clone, Args)]
pub struct BackupArgs {
    /// Write the copy to this file (a new one: see --force). SQLite: a
    /// database file; PostgreSQL: a pg_dump archive in custom format.
    #[arg(long, value_name = "FILE")]
    pub to: PathBuf,
    /// Replace FILE if it exists
    #[arg(long)]
    pub force: bool,
}

/// `outcomes restore`
#[derive(Debug, Clone, Args)]
pub struct RestoreArgs {
    /// The copy to restore, made by `outcomes backup`
    #[arg(long, value_name = "FILE")]
    pub from: PathBuf,
    /// Replace the database even though a service or another program has
    /// it open (SQLite), or other sessions are connected to it (PostgreSQL)
    #[arg(long)]
    pub force: bool,
}

/// Backs up the configured database; a report of what was copied.
pub async fn backup(config: &Config, args: &BackupArgs) -> anyhow::Result<String> {
    match backend(config)? {
        Backend::Sqlite => sqlite::backup(&sqlite_file(config)?, args).await,
        Backend::Postgres => postgres::backup(&config.database_url, args).await,
    }
}

/// Restores a copy into the configured database; a report of what was
/// done. `now` names the replaced SQLite file.
pub async fn restore(
    config: &Config,
    args: &RestoreArgs,
    now: DateTime<Utc>,
) -> anyhow::Result<String> {
    match backend(config)? {
        Backend::Sqlite => {
            sqlite::restore(&sqlite_file(config)?, args, &config.secrets_key_file, now).await
        }
        Backend::Postgres => postgres::restore(&config.database_url, args).await,
    }
}

fn backend(config: &Config) -> anyhow::Result<Backend> {
    Backend::of_url(&config.database_url).ok_or_else(|| {
        anyhow::anyhow!(
            "unknown database URL {}",
            store::redact(&config.database_url)
        )
    })
}

fn sqlite_file(config: &Config) -> anyhow::Result<PathBuf> {
    store::sqlite_file(&config.database_url).ok_or_else(|| {
        anyhow::anyhow!(
            "the database URL {} names no file",
            store::redact(&config.database_url)
        )
    })
}

/// Refuses a copy whose migrations this binary cannot serve: newer than
/// it knows (restore with that version), changed, failed, or none at all.
fn check_migrations(from: &Path, status: &MigrationStatus) -> anyhow::Result<()> {
    let names = |list: &[store::MigrationName]| {
        list.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !status.newer.is_empty() {
        anyhow::bail!(
            "{} comes from a newer version of the service: it has migrations this version does \
             not know ({}); restore it with that version or a later one. Nothing was replaced",
            from.display(),
            names(&status.newer)
        );
    }
    if !status.changed.is_empty() || !status.failed.is_empty() {
        anyhow::bail!(
            "{} has migrations this version cannot continue from (changed: {}; failed: {}); \
             nothing was replaced",
            from.display(),
            names(&status.changed),
            names(&status.failed)
        );
    }
    if status.level.is_none() {
        anyhow::bail!(
            "{} holds no database of this service (no migrations were ever applied); nothing \
             was replaced",
            from.display()
        );
    }
    Ok(())
}

/// What happens next to a copy older than this binary.
fn migration_notes(status: &MigrationStatus) -> Vec<String> {
    if status.pending.is_empty() {
        return vec!["the copy is at this version's migration level".to_owned()];
    }
    let names: Vec<String> = status.pending.iter().map(ToString::to_string).collect();
    vec![format!(
        "the copy is older than this version: {} migration(s) will be applied when the service \
         starts (or by `outcomes migrate`): {}",
        names.len(),
        names.join(", ")
    )]
}

fn describe_counts(counts: Option<Counts>) -> String {
    match counts {
        Some(c) => format!(
            "{} dossiers, {} responses ({} completed), {} access-log rows",
            c.dossiers, c.responses, c.completed, c.access_log
        ),
        None => "no tables counted (an early migration level)".to_owned(),
    }
}
