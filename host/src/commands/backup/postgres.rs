//! `outcomes backup` and `outcomes restore` on PostgreSQL, by its own
//! tools: `pg_dump --format=custom` takes a consistent snapshot while the
//! service writes (it runs in one repeatable-read transaction,
//! https://www.postgresql.org/docs/current/app-pgdump.html), and
//! `pg_restore` fills an empty database in one transaction. When they are
//! not installed, the command prints what to run instead.
//!
//! The password never goes on a command line, which every user of the
//! machine can read (`ps`): the tools get the URL without it and the
//! password in `PGPASSWORD`, which only the same user can read.
//!
//! A restore goes only into an empty database; the dump's migrations are
//! read first with `pg_restore --data-only`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Context, bail};

use super::files::{self, Staged};
use super::{BackupArgs, RestoreArgs, check_migrations, migration_notes};
use crate::store::backup::postgres_target;
use crate::store::{AppliedMigration, Backend, MigrationStatus, redact};

/// Dumps the database at `url` to `args.to`; what was copied.
pub async fn backup(url: &str, args: &BackupArgs) -> anyhow::Result<String> {
    let connection = Libpq::of(url)?;
    let Some(pg_dump) = find_program("pg_dump") else {
        bail!(
            "pg_dump is not installed here, and a PostgreSQL database is backed up with it. \
             Install the PostgreSQL client (Debian: apt install postgresql-client) or run, where \
             it is installed, with the password in PGPASSWORD or ~/.pgpass:\n  {}",
            dump_command(&connection.url, &args.to)
        );
    };
    let pg_restore = find_program("pg_restore").context("pg_restore is not installed")?;
    super::sqlite::refuse_existing(&args.to, args.force)?;
    let staged = Staged::beside(&args.to, "backup")
        .with_context(|| format!("making a new file beside {}", args.to.display()))?;
    let mut dump = Command::new(&pg_dump);
    dump.arg("--format=custom")
        .arg("--no-password")
        .arg(format!("--file={}", staged.path().display()))
        .arg(format!("--dbname={}", connection.url));
    run(connection.apply(dump), "pg_dump").await?;
    let status = migrations_in(&pg_restore, staged.path()).await?;
    let size = staged.len()?;
    staged
        .publish(&args.to, args.force)
        .with_context(|| format!("writing {}", args.to.display()))?;
    Ok(format!(
        "backed up {} to {} ({}, pg_dump custom format, mode 0600)\nmigration level: {}",
        redact(url),
        args.to.display(),
        files::size_text(size),
        status.level_text()
    ))
}

/// Restores the archive `args.from` into the empty database at `url`.
pub async fn restore(url: &str, args: &RestoreArgs) -> anyhow::Result<String> {
    let connection = Libpq::of(url)?;
    let Some(pg_restore) = find_program("pg_restore") else {
        bail!(
            "pg_restore is not installed here, and a PostgreSQL backup is restored with it. \
             Install the PostgreSQL client (Debian: apt install postgresql-client) or run, where \
             it is installed, into a new empty database:\n  {}",
            restore_command(&connection.url, &args.from)
        );
    };
    if !args.from.is_file() {
        bail!("no file at {}", args.from.display());
    }
    let mut list = Command::new(&pg_restore);
    list.arg("--list").arg(&args.from);
    run(list, "pg_restore --list").await.with_context(|| {
        format!(
            "{} is not a pg_dump archive in custom format; nothing was restored",
            args.from.display()
        )
    })?;
    let status = migrations_in(&pg_restore, &args.from).await?;
    check_migrations(&args.from, &status)?;
    let target = postgres_target(url)
        .await
        .with_context(|| format!("connecting to {}", redact(url)))?;
    if target.tables > 0 {
        bail!(
            "the database {} has tables already: a restore fills an empty database and never \
             drops one. Create a new database (createdb --owner=OWNER NAME), restore into it, \
             and point --database-url at it; the old one stays as it is until you drop it. \
             Nothing was restored",
            redact(url)
        );
    }
    let mut notes = Vec::new();
    if target.other_sessions > 0 {
        if !args.force {
            bail!(
                "the database {} is in use ({} other session(s) connected: a service?): stop \
                 them first, or give --force; nothing was restored",
                redact(url),
                target.other_sessions
            );
        }
        notes.push(format!(
            "warning: {} other session(s) were connected to the database",
            target.other_sessions
        ));
    }
    let mut restore = Command::new(&pg_restore);
    restore
        .arg("--exit-on-error")
        .arg("--single-transaction")
        .arg("--no-owner")
        .arg("--no-acl")
        .arg("--no-password")
        .arg(format!("--dbname={}", connection.url))
        .arg(&args.from);
    run(connection.apply(restore), "pg_restore").await?;
    let mut done = vec![
        format!("restored {} into {}", args.from.display(), redact(url)),
        format!("migration level: {}", status.level_text()),
    ];
    done.extend(notes);
    done.extend(migration_notes(&status));
    done.push(
        "objects belong to the role that restored them and carry no grants: with the roles of \
         docs/operations.md#postgresql-roles, run deploy/postgres-grants.sql as the owner now"
            .to_owned(),
    );
    Ok(done.join("\n"))
}

/// The archive's `_sqlx_migrations` rows, read without restoring it:
/// `pg_restore --data-only --table` writes that table's COPY data.
async fn migrations_in(pg_restore: &Path, archive: &Path) -> anyhow::Result<MigrationStatus> {
    let mut data = Command::new(pg_restore);
    data.arg("--data-only")
        .arg("--table=_sqlx_migrations")
        .arg("--file=-")
        .arg(archive);
    let output = run(data, "pg_restore").await?;
    let text = String::from_utf8_lossy(&output.stdout);
    let applied = parse_copy(&text)
        .with_context(|| format!("reading the migrations recorded in {}", archive.display()))?;
    Ok(MigrationStatus::compare(&applied, Backend::Postgres))
}

/// The rows of the `COPY ... _sqlx_migrations (...) FROM stdin;` block in
/// pg_restore's SQL output (text format: tab-separated, `\N` for NULL,
/// bytea as `\\x` and hex; https://www.postgresql.org/docs/current/sql-copy.html).
fn parse_copy(sql: &str) -> anyhow::Result<Vec<AppliedMigration>> {
    let mut lines = sql.lines();
    let Some(header) = lines
        .by_ref()
        .find(|l| l.starts_with("COPY ") && l.contains("_sqlx_migrations"))
    else {
        return Ok(Vec::new());
    };
    let columns: Vec<&str> = header
        .split_once('(')
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(cols, _)| cols.split(',').map(str::trim).collect())
        .unwrap_or_default();
    let at = |name: &str| {
        columns
            .iter()
            .position(|c| *c == name)
            .with_context(|| format!("no column {name} in {header:?}"))
    };
    let (version, description, success, checksum) = (
        at("version")?,
        at("description")?,
        at("success")?,
        at("checksum")?,
    );
    let mut rows = Vec::new();
    for line in lines.take_while(|l| *l != "\\.") {
        let fields: Vec<&str> = line.split('\t').collect();
        let field = |i: usize| {
            fields
                .get(i)
                .copied()
                .with_context(|| format!("a short row: {line:?}"))
        };
        rows.push(AppliedMigration {
            version: field(version)?
                .parse()
                .with_context(|| format!("a version that is no number: {line:?}"))?,
            description: field(description)?.replace("\\\\", "\\"),
            success: field(success)? == "t",
            checksum: hex::decode(field(checksum)?.trim_start_matches("\\\\x"))
                .ok()
                .with_context(|| format!("a checksum that is no hex: {line:?}"))?,
        });
    }
    Ok(rows)
}

/// A connection for the libpq tools: the URL without its password, and
/// the password apart.
struct Libpq {
    url: String,
    password: Option<String>,
}

impl Libpq {
    /// libpq reads `postgres://` URLs as sqlx does
    /// (https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS),
    /// except parameters only sqlx knows, which are left out.
    fn of(url: &str) -> anyhow::Result<Libpq> {
        let mut parsed = url::Url::parse(url)
            .map_err(|e| anyhow::anyhow!("the database URL {}: {e}", redact(url)))?;
        let password = parsed.password().map(percent_decoded);
        // Setting an empty password cannot fail on a URL with a host.
        let _ = parsed.set_password(None);
        const LIBPQ: [&str; 12] = [
            "host",
            "hostaddr",
            "port",
            "dbname",
            "user",
            "sslmode",
            "sslrootcert",
            "sslcert",
            "sslkey",
            "application_name",
            "options",
            "connect_timeout",
        ];
        // The pieces kept as they were written, so their escapes stay.
        let kept: Vec<String> = parsed
            .query()
            .unwrap_or_default()
            .split('&')
            .filter(|piece| {
                let key = piece.split_once('=').map_or(*piece, |(k, _)| k);
                LIBPQ.contains(&key)
            })
            .map(str::to_owned)
            .collect();
        parsed.set_query((!kept.is_empty()).then(|| kept.join("&")).as_deref());
        Ok(Libpq {
            url: parsed.to_string(),
            password,
        })
    }

    fn apply(&self, mut command: Command) -> Command {
        if let Some(password) = &self.password {
            command.env("PGPASSWORD", password);
        }
        command
    }
}

/// `%XX` escapes decoded (a URL's user info may hold any byte that way).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| text.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match escaped {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn dump_command(url: &str, to: &Path) -> String {
    format!(
        "pg_dump --format=custom --file='{}' --dbname='{url}'",
        to.display()
    )
}

fn restore_command(url: &str, from: &Path) -> String {
    format!(
        "pg_restore --exit-on-error --single-transaction --no-owner --no-acl --dbname='{url}' '{}'",
        from.display()
    )
}

/// The first `program` on PATH.
fn find_program(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Runs `command` off the async threads; its output, or its standard
/// error as the failure.
async fn run(mut command: Command, what: &'static str) -> anyhow::Result<Output> {
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .context("the runtime")?
        .with_context(|| format!("starting {what}"))?;
    if !output.status.success() {
        bail!(
            "{what} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_leaves_the_url() {
        let c = Libpq::of("postgres://svc:p%40ss%2Fw@db.example:5433/outcomes?sslmode=require&statement-cache-capacity=10")
            .expect("parses");
        assert_eq!(
            c.url,
            "postgres://svc@db.example:5433/outcomes?sslmode=require"
        );
        assert_eq!(c.password.as_deref(), Some("p@ss/w"));
        let plain = Libpq::of("postgres://postgres@127.0.0.1/x").expect("parses");
        assert_eq!(plain.url, "postgres://postgres@127.0.0.1/x");
        assert_eq!(plain.password, None);
    }

    #[test]
    fn copy_data_reads_as_applied_migrations() {
        let sql = "SET x = 1;\n\
            COPY public._sqlx_migrations (version, description, installed_on, success, checksum, execution_time) FROM stdin;\n\
            1\tinitial\t2026-03-01 09:00:00+00\tt\t\\\\x0aff\t1234\n\
            2\tauth\t2026-03-01 09:00:00+00\tf\t\\\\x00\t99\n\
            \\.\n";
        let rows = parse_copy(sql).expect("parses");
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].version, 1);
        assert_eq!(rows[0].description, "initial");
        assert!(rows[0].success);
        assert_eq!(rows[0].checksum, vec![0x0a, 0xff]);
        assert!(!rows[1].success);
        assert!(parse_copy("SET x = 1;\n").expect("parses").is_empty());
    }
}
