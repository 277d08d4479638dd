//! `outcomes migrate --check`: which migrations this version would apply
//! to the configured database, applying none (docs/operations.md#upgrades).
//!
//! Exits 1 when anything would be applied; applies nothing and creates no
//! SQLite file.

use crate::config::Config;
use crate::store::{self, Backend, MigrationStatus, Store, StoreOptions};

/// A report of the database's migrations against this binary's, and
/// whether `outcomes migrate` would leave it as it is: nothing pending,
/// changed or failed. Migrations only a newer version knows leave it so
/// too (this version serves on them during a rolling upgrade), and are
/// named.
pub async fn check(config: &Config) -> anyhow::Result<(String, bool)> {
    let backend = Backend::of_url(&config.database_url).ok_or_else(|| {
        anyhow::anyhow!(
            "unknown database URL {}",
            store::redact(&config.database_url)
        )
    })?;
    // A SQLite file that is not there has run nothing; connecting would
    // create it.
    let missing = store::sqlite_file(&config.database_url).is_some_and(|f| !f.exists());
    let status = if missing {
        MigrationStatus::compare(&[], backend)
    } else {
        let store = Store::connect(&config.database_url, &StoreOptions::default()).await?;
        let status = store.migration_status().await;
        store.close().await;
        status?
    };
    Ok(report(&status, backend))
}

/// The report's text and whether nothing needs applying.
pub fn report(status: &MigrationStatus, backend: Backend) -> (String, bool) {
    let names = |list: &[store::MigrationName]| {
        list.iter()
            .map(|m| format!("  {m}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut lines = vec![format!("migration level: {}", status.level_text())];
    if !status.pending.is_empty() {
        lines.push(format!(
            "pending: {} migration(s) this version would apply:\n{}",
            status.pending.len(),
            names(&status.pending)
        ));
    }
    if !status.changed.is_empty() {
        lines.push(format!(
            "changed: applied with other SQL than this version's (the migrator refuses to go on):\n{}",
            names(&status.changed)
        ));
    }
    if !status.failed.is_empty() {
        lines.push(format!(
            "failed: recorded as failed part way (repair by hand, then migrate):\n{}",
            names(&status.failed)
        ));
    }
    if !status.newer.is_empty() {
        lines.push(format!(
            "newer: applied by a newer version (this one knows up to {:04}); it serves on them, \
             but upgrade it:\n{}",
            store::migrations::last_version(backend),
            names(&status.newer)
        ));
    }
    let nothing_to_do =
        status.pending.is_empty() && status.changed.is_empty() && status.failed.is_empty();
    if status.is_current() {
        lines.push("up to date: nothing to apply".to_owned());
    }
    (lines.join("\n"), nothing_to_do)
}
