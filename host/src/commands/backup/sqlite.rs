//! `outcomes backup` and `outcomes restore` on SQLite: a consistent copy
//! of the live database (host/src/store/backup.rs), and putting a checked
//! copy in its place, the replaced database kept aside.
//!
//! A restore checks a copy of the copy, holds the target (refusing one in
//! use), moves it aside with its `-wal` and `-shm`, then puts the copy in
//! place. **Invariant:** a refusal replaces nothing.

use std::path::Path;

use anyhow::{Context, bail};
use chrono::{DateTime, Utc};

use super::files::{self, Staged};
use super::{BackupArgs, RestoreArgs, describe_counts, migration_notes};
use crate::store::backup::{self, Hold, SqliteInspection};

/// Copies the database at `source` to `args.to`; what was copied.
pub async fn backup(source: &Path, args: &BackupArgs) -> anyhow::Result<String> {
    if !source.is_file() {
        bail!(
            "no SQLite database at {}: nothing to back up (is --database-url or --data-dir the \
             service's?)",
            source.display()
        );
    }
    if let (Ok(a), Ok(b)) = (source.canonicalize(), args.to.canonicalize())
        && a == b
    {
        bail!(
            "{} is the database itself: give the copy another name",
            args.to.display()
        );
    }
    refuse_existing(&args.to, args.force)?;
    let staged = Staged::beside(&args.to, "backup")
        .with_context(|| format!("making a new file beside {}", args.to.display()))?;
    backup::sqlite_snapshot(source, staged.path())
        .await
        .with_context(|| format!("copying {}", source.display()))?;
    let seen = backup::inspect_sqlite(staged.path())
        .await
        .context("reading the copy")?;
    if !seen.problems.is_empty() {
        bail!(
            "the copy of {} fails SQLite's integrity check, so the database itself is damaged; \
             no backup was written. First problems: {}",
            source.display(),
            seen.problems.join("; ")
        );
    }
    let size = staged.len()?;
    staged.publish(&args.to, args.force).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            anyhow::anyhow!(
                "{} appeared while the copy was made; nothing was replaced",
                args.to.display()
            )
        } else {
            anyhow::Error::new(e).context(format!("writing {}", args.to.display()))
        }
    })?;
    Ok(format!(
        "backed up {} to {} ({}, mode 0600)\nmigration level: {}\n{}",
        source.display(),
        args.to.display(),
        files::size_text(size),
        seen.migrations.level_text(),
        describe_counts(seen.counts)
    ))
}

/// A backup never replaces a file unless told to.
pub fn refuse_existing(to: &Path, force: bool) -> anyhow::Result<()> {
    if !force && std::fs::symlink_metadata(to).is_ok() {
        bail!(
            "{} exists: give a new name, or --force to replace it",
            to.display()
        );
    }
    Ok(())
}

/// Puts a checked copy of `args.from` at `target`; what was done.
pub async fn restore(
    target: &Path,
    args: &RestoreArgs,
    secrets_key: &Path,
    now: DateTime<Utc>,
) -> anyhow::Result<String> {
    if !args.from.is_file() {
        bail!("no file at {}", args.from.display());
    }
    // The copy is checked as it will be installed: a copy of it, made
    // beside the target (a rename never crosses file systems), so the
    // backup itself is never changed.
    let staged = Staged::beside(target, "restore")
        .with_context(|| format!("making a new file beside {}", target.display()))?;
    staged
        .copy_from(&args.from)
        .with_context(|| format!("reading {}", args.from.display()))?;
    let seen = backup::inspect_sqlite(staged.path()).await.map_err(|e| {
        anyhow::anyhow!(
            "{} is not a SQLite database this service can use ({e}); nothing was replaced",
            args.from.display()
        )
    })?;
    check(&args.from, &seen)?;
    let size = staged.len()?;
    let mut done = vec![format!(
        "restored {} into {} ({})",
        args.from.display(),
        target.display(),
        files::size_text(size)
    )];
    let (aside, hold) = if target.exists() {
        let hold = match backup::hold_sqlite(target).await {
            Ok(Hold::Held(hold)) => Some(hold),
            Ok(Hold::InUse) if args.force => {
                done.push(format!(
                    "warning: {} was in use; a service still running on it goes on writing to the \
                     replaced file: stop it and start it again now",
                    target.display()
                ));
                None
            }
            Ok(Hold::InUse) => bail!(
                "the database {} is in use (a service, or another program, has it open): stop \
                 the service first, or give --force to replace it all the same; nothing was \
                 replaced",
                target.display()
            ),
            Err(e) if args.force => {
                done.push(format!(
                    "warning: {} could not be opened as a database ({e}); it is kept aside as it was",
                    target.display()
                ));
                None
            }
            Err(e) => bail!(
                "the database {} cannot be opened ({e}): give --force to replace it all the same \
                 (it is kept aside); nothing was replaced",
                target.display()
            ),
        };
        let aside = files::aside_name(target, now);
        move_aside(target, &aside)?;
        (Some(aside), hold)
    } else {
        (None, None)
    };
    let published = staged.publish(target, false);
    if let Some(hold) = hold {
        hold.release()
            .await
            .context("closing the replaced database")?;
    }
    published.with_context(|| format!("putting the copy at {}", target.display()))?;
    if let Some(aside) = aside {
        done.push(format!(
            "the database it replaced is kept as {}",
            aside.display()
        ));
    }
    done.push(format!("migration level: {}", seen.migrations.level_text()));
    done.push(describe_counts(seen.counts));
    done.extend(migration_notes(&seen.migrations));
    if !secrets_key.exists() {
        done.push(format!(
            "note: there is no secrets key at {}: copy the secrets key file of the service the \
             backup came from there before starting (the secrets in the database are sealed with \
             it; docs/operations.md#backup-and-restore)",
            secrets_key.display()
        ));
    }
    Ok(done.join("\n"))
}

/// Refuses a copy that is damaged, from a newer version, or no database
/// of this service.
fn check(from: &Path, seen: &SqliteInspection) -> anyhow::Result<()> {
    if !seen.problems.is_empty() {
        bail!(
            "{} fails SQLite's integrity check; nothing was replaced. First problems: {}",
            from.display(),
            seen.problems.join("; ")
        );
    }
    super::check_migrations(from, &seen.migrations)
}

/// Renames the database at `target` (and a -wal or -shm beside it) to
/// `aside`, so the copy can take its name; the folder is synced after.
fn move_aside(target: &Path, aside: &Path) -> anyhow::Result<()> {
    std::fs::rename(target, aside).with_context(|| format!("moving {} aside", target.display()))?;
    // Left only when the database was in use (--force) or a process died
    // with it open: they belong to the replaced file, and a -wal left at
    // the target's name would be read into the restored one.
    for suffix in ["-wal", "-shm"] {
        let from = files::with_suffix(target, suffix);
        if from.exists() {
            let to = files::with_suffix(aside, suffix);
            std::fs::rename(&from, &to)
                .with_context(|| format!("moving {} aside", from.display()))?;
        }
    }
    files::sync_folder(&files::folder(target))?;
    Ok(())
}
