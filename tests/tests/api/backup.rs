//! `outcomes backup`, `outcomes restore` and `outcomes migrate --check`,
//! run as the built `outcomes` binary (a process of its own, as an
//! operator runs it) against the real host: a backup taken during
//! concurrent POSTs and restored into a fresh data folder holds every
//! response acknowledged before it started, with its outcome; a damaged
//! copy, a copy from a newer version and a database in use are refused;
//! a backup never overwrites unless told. PostgreSQL goes through
//! pg_dump and pg_restore (into a database the test makes and drops), and
//! says what to run when they are missing.
//!
//! The binary is this build's, built once per test run as every test of
//! processes builds it ([`tests::processes::outcomes_binary`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use sqlx::{Connection, PgConnection};
use tests::processes::outcomes_binary;
use tests::{Db, ScratchDatabase, TestApp, db_test};
use tokio::sync::{oneshot, watch};

use crate::support::*;

/// What a run of the binary did.
#[derive(Debug)]
struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// Runs `outcomes ARGS --database-url URL --data-dir DIR`, with `path` as
/// PATH when given (to hide pg_dump).
async fn outcomes(args: &[&str], url: &str, dir: &Path, path: Option<&Path>) -> Run {
    let mut command = std::process::Command::new(outcomes_binary());
    command
        .args(args)
        .arg("--database-url")
        .arg(url)
        .arg("--data-dir")
        .arg(dir)
        .current_dir(tests::repo_root())
        .env("NO_COLOR", "1");
    if let Some(path) = path {
        command.env("PATH", path);
    }
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("joins")
        .expect("the binary runs");
    Run {
        ok: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Where a restore goes: a fresh data folder, and a fresh database in it
/// (SQLite) or beside it (PostgreSQL). The secrets key of `app`'s folder
/// is copied in, as docs/operations.md#backup-and-restore says.
struct Fresh {
    url: String,
    _db: ScratchDatabase,
    dir: tempfile::TempDir,
}

impl Fresh {
    async fn for_app(app: &TestApp) -> Fresh {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::copy(
            app.dir().join("secrets.key"),
            dir.path().join("secrets.key"),
        )
        .expect("copies the secrets key");
        let db = ScratchDatabase::create(app.db, dir.path()).await;
        Fresh {
            url: db.url.clone(),
            _db: db,
            dir,
        }
    }
}

/// A host started on a restored database, with `app`'s configuration
/// otherwise (its token is in the restored database).
struct Restored {
    base: String,
    authorization: String,
    client: tests::reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

impl Restored {
    async fn start(app: &TestApp, fresh: &Fresh) -> Restored {
        let mut config = app.config.clone();
        config.database_url = fresh.url.clone();
        config.data_dir = fresh.dir.path().to_owned();
        config.secrets_key_file = fresh.dir.path().join("secrets.key");
        let built = host::startup::App::build(config, app.clock.clone())
            .await
            .expect("the host starts on the restored database");
        let base = format!("http://{}", built.local_addr().expect("bound"));
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(built.run(async move {
            let _ = stopped.await;
        }));
        Restored {
            base,
            authorization: app.basic_header(),
            client: tests::reqwest::Client::new(),
            stop: Some(stop),
            server: Some(server),
        }
    }

    /// A dossier's responses as the restored host lists them.
    async fn responses(&self, dossier: &str) -> Vec<Value> {
        let answer = self
            .client
            .get(format!("{}{}", self.base, responses(dossier)))
            .header("authorization", &self.authorization)
            .send()
            .await
            .expect("answers");
        assert_eq!(answer.status(), 200);
        let body: Value = answer.json().await.expect("JSON");
        body.as_array().cloned().unwrap_or_default()
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            server.await.expect("joins").expect("stops cleanly");
        }
    }
}

/// A response the service acknowledged with 201, and when.
#[derive(Debug, Clone)]
struct Acknowledged {
    dossier: String,
    external_id: String,
    at: Instant,
    body: Value,
}

/// PHQ-9 answers that differ from one response to the next, so their
/// outcomes do.
/// This version's last migration (`0015 shadow scoring`); both dialects
/// number theirs alike.
fn last_migration() -> host::store::MigrationName {
    host::store::migrations::known_migrations(host::store::Backend::Sqlite)
        .pop()
        .expect("migrations")
}

fn answers(n: usize) -> Value {
    let items: Vec<String> = (0..9).map(|i| ((n + i) % 4).to_string()).collect();
    phq9_items(&items.join(" "))
}

/// Records migration 9999 as applied, as a newer version would.
async fn from_the_future(app: &TestApp) {
    let checksum = match app.db {
        Db::Sqlite => "X'00'",
        Db::Postgres => "decode('00', 'hex')",
    };
    app.sql(&format!(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (9999, 'from the future', TRUE, {checksum}, 0) RETURNING version"
    ))
    .await;
}

db_test!(async fn a_backup_during_posts_restores_every_acknowledged_response(app) {
    let app = Arc::new(app);
    let (count_tx, mut count_rx) = watch::channel(0_usize);
    let (stop_tx, stop_rx) = watch::channel(false);
    let acknowledged = Arc::new(std::sync::Mutex::new(Vec::<Acknowledged>::new()));
    let mut writers = Vec::new();
    for task in 0..4 {
        let (app, acknowledged, count_tx, stop_rx) =
            (app.clone(), acknowledged.clone(), count_tx.clone(), stop_rx.clone());
        writers.push(tokio::spawn(async move {
            let dossier = format!("backup-{task}");
            for n in 0.. {
                if *stop_rx.borrow() {
                    break;
                }
                let external_id = format!("r-{task}-{n}");
                let answer = post_phq9(&app, &dossier, &external_id, answers(n)).await;
                let at = Instant::now();
                assert_eq!(answer.status, 201, "{}", answer.text);
                let mut all = acknowledged.lock().expect("lock");
                all.push(Acknowledged { dossier: dossier.clone(), external_id, at, body: answer.body });
                count_tx.send_replace(all.len());
            }
        }));
    }
    // Writes are under way before the backup starts.
    tokio::time::timeout(Duration::from_secs(60), count_rx.wait_for(|n| *n >= 40))
        .await
        .expect("40 responses within a minute")
        .expect("writers run");
    let copy = app.dir().join("backups/copy");
    let started = Instant::now();
    let backup = outcomes(&["backup", "--to", &copy.to_string_lossy()], &app.database_url, app.dir(), None).await;
    let finished = Instant::now();
    // Let the writers go on a little past the backup, then stop them.
    let after = count_rx.borrow().to_owned();
    tokio::time::timeout(Duration::from_secs(60), count_rx.wait_for(|n| *n >= after + 10))
        .await
        .expect("writes go on after the backup")
        .expect("writers run");
    stop_tx.send_replace(true);
    for writer in writers {
        writer.await.expect("a writer ends cleanly");
    }
    assert!(backup.ok, "backup failed: {}{}", backup.stdout, backup.stderr);
    assert!(backup.stdout.contains(&format!("migration level: {}", last_migration())), "{}", backup.stdout);
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&copy).expect("the copy").permissions());
    assert_eq!(mode & 0o777, 0o600, "the copy is patient data");
    let all = acknowledged.lock().expect("lock").clone();
    let before: Vec<&Acknowledged> = all.iter().filter(|a| a.at < started).collect();
    let during = all.iter().filter(|a| a.at > started && a.at < finished).count();
    assert!(before.len() >= 40);
    assert!(during > 0, "responses were acknowledged while the backup ran");

    let fresh = Fresh::for_app(&app).await;
    let restore = outcomes(&["restore", "--from", &copy.to_string_lossy()], &fresh.url, fresh.dir.path(), None).await;
    assert!(restore.ok, "restore failed: {}{}", restore.stdout, restore.stderr);
    assert!(restore.stdout.contains(&format!("migration level: {}", last_migration())), "{}", restore.stdout);
    let restored = Restored::start(&app, &fresh).await;
    let mut listed = std::collections::HashMap::new();
    for task in 0..4 {
        for response in restored.responses(&format!("backup-{task}")).await {
            listed.insert(response["external_id"].as_str().unwrap_or_default().to_owned(), response);
        }
    }
    for ack in &before {
        let found = listed
            .get(&ack.external_id)
            .unwrap_or_else(|| panic!("{} of {} was acknowledged before the backup and is not restored", ack.external_id, ack.dossier));
        assert_eq!(found["id"], ack.body["id"]);
        assert_eq!(found["outcome"], ack.body["outcome"], "{}", ack.external_id);
        assert_eq!(found["values"], ack.body["values"]);
        assert!(found["outcome"]["scores"].as_object().is_some_and(|s| !s.is_empty()), "scored");
    }
    // Nothing appears that was never acknowledged.
    assert!(listed.len() <= all.len());
    restored.stop().await;
});

db_test!(async fn a_backup_never_overwrites_unless_told(app) {
    posted(&app, "d", "one").await;
    let copy = app.dir().join("copy");
    std::fs::write(&copy, b"keep me").expect("writes");
    let refused = outcomes(&["backup", "--to", &copy.to_string_lossy()], &app.database_url, app.dir(), None).await;
    assert!(!refused.ok);
    assert!(refused.stderr.contains("exists"), "{}", refused.stderr);
    assert_eq!(std::fs::read(&copy).expect("reads"), b"keep me");
    let forced = outcomes(&["backup", "--to", &copy.to_string_lossy(), "--force"], &app.database_url, app.dir(), None).await;
    assert!(forced.ok, "{}", forced.stderr);
    assert_ne!(std::fs::read(&copy).expect("reads"), b"keep me");
    // No temporary file is left beside it.
    let left: Vec<String> = std::fs::read_dir(app.dir())
        .expect("lists")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".copy"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
});

db_test!(async fn restore_refuses_a_damaged_copy(app) {
    posted(&app, "d", "one").await;
    let copy = app.dir().join("copy");
    let backup = outcomes(&["backup", "--to", &copy.to_string_lossy()], &app.database_url, app.dir(), None).await;
    assert!(backup.ok, "{}", backup.stderr);
    let mut bytes = std::fs::read(&copy).expect("reads");
    let damaged = app.dir().join("damaged");
    let fresh = Fresh::for_app(&app).await;
    match app.db {
        Db::Sqlite => {
            // One whole page in the middle overwritten: its b-tree header
            // or overflow pointer no longer holds, which integrity_check
            // reports (https://www.sqlite.org/pragma.html#pragma_integrity_check).
            let page_size = match u16::from_be_bytes([bytes[16], bytes[17]]) {
                1 => 65536,
                n => usize::from(n),
            };
            let pages = bytes.len() / page_size;
            assert!(pages > 4, "a copy of {pages} pages");
            let middle = pages / 2 * page_size;
            bytes[middle..middle + page_size].fill(0xff);
        }
        Db::Postgres => {
            // The archive's header: no longer a pg_dump archive.
            bytes[..5].copy_from_slice(b"XXXXX");
        }
    }
    std::fs::write(&damaged, &bytes).expect("writes");
    let refused = outcomes(&["restore", "--from", &damaged.to_string_lossy()], &fresh.url, fresh.dir.path(), None).await;
    assert!(!refused.ok);
    match app.db {
        Db::Sqlite => {
            assert!(refused.stderr.contains("integrity check"), "{}", refused.stderr);
            assert!(!fresh.dir.path().join("outcomes.db").exists(), "nothing was put in place");
        }
        Db::Postgres => {
            assert!(refused.stderr.contains("not a pg_dump archive"), "{}", refused.stderr);
            let mut conn = PgConnection::connect(&fresh.url).await.expect("connects");
            let tables: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'")
                .fetch_one(&mut conn).await.expect("counts");
            assert_eq!(tables, 0, "nothing was restored");
        }
    }
    assert!(refused.stderr.contains("nothing was"), "{}", refused.stderr);
    // A file that is no database at all.
    std::fs::write(&damaged, vec![0x55_u8; 8192]).expect("writes");
    let refused = outcomes(&["restore", "--from", &damaged.to_string_lossy()], &fresh.url, fresh.dir.path(), None).await;
    assert!(!refused.ok);
    assert!(refused.stderr.contains("nothing was"), "{}", refused.stderr);
});

db_test!(async fn restore_refuses_a_copy_from_a_newer_version(app) {
    posted(&app, "d", "one").await;
    // What a newer version's migration leaves: a row this binary does not know.
    from_the_future(&app).await;
    let copy = app.dir().join("copy");
    let backup = outcomes(&["backup", "--to", &copy.to_string_lossy()], &app.database_url, app.dir(), None).await;
    assert!(backup.ok, "{}", backup.stderr);
    assert!(backup.stdout.contains("migration level: 9999 from the future"), "{}", backup.stdout);
    let fresh = Fresh::for_app(&app).await;
    let refused = outcomes(&["restore", "--from", &copy.to_string_lossy()], &fresh.url, fresh.dir.path(), None).await;
    assert!(!refused.ok);
    assert!(refused.stderr.contains("newer version"), "{}", refused.stderr);
    assert!(refused.stderr.contains("9999 from the future"), "{}", refused.stderr);
});

db_test!(async fn restore_refuses_a_database_in_use_unless_forced(app) {
    posted(&app, "d", "one").await;
    let copy = app.dir().join("copy");
    let backup = outcomes(&["backup", "--to", &copy.to_string_lossy()], &app.database_url, app.dir(), None).await;
    assert!(backup.ok, "{}", backup.stderr);
    posted(&app, "d", "two").await;
    match app.db {
        Db::Sqlite => {
            // The service serves on the target.
            let refused = outcomes(&["restore", "--from", &copy.to_string_lossy()], &app.database_url, app.dir(), None).await;
            assert!(!refused.ok);
            assert!(refused.stderr.contains("in use"), "{}", refused.stderr);
            assert_eq!(app.get(&responses("d")).await.body.as_array().map(Vec::len), Some(2), "still serving");
            let forced = outcomes(&["restore", "--from", &copy.to_string_lossy(), "--force"], &app.database_url, app.dir(), None).await;
            assert!(forced.ok, "{}", forced.stderr);
            assert!(forced.stdout.contains("was in use"), "{}", forced.stdout);
            let aside: Vec<PathBuf> = std::fs::read_dir(app.dir())
                .expect("lists")
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy();
                    n.starts_with("outcomes.db.replaced-") && !n.ends_with("-wal") && !n.ends_with("-shm")
                }))
                .collect();
            assert_eq!(aside.len(), 1, "the replaced database is kept: {aside:?}");
        }
        Db::Postgres => {
            // A database with tables is never restored into.
            let refused = outcomes(&["restore", "--from", &copy.to_string_lossy()], &app.database_url, app.dir(), None).await;
            assert!(!refused.ok);
            assert!(refused.stderr.contains("has tables already"), "{}", refused.stderr);
            // An empty one that someone is connected to: in use.
            let fresh = Fresh::for_app(&app).await;
            let mut session = PgConnection::connect(&fresh.url).await.expect("connects");
            let refused = outcomes(&["restore", "--from", &copy.to_string_lossy()], &fresh.url, fresh.dir.path(), None).await;
            assert!(!refused.ok);
            assert!(refused.stderr.contains("in use"), "{}", refused.stderr);
            let forced = outcomes(&["restore", "--from", &copy.to_string_lossy(), "--force"], &fresh.url, fresh.dir.path(), None).await;
            assert!(forced.ok, "{}", forced.stderr);
            let restored: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM responses")
                .fetch_one(&mut session)
                .await
                .expect("counts");
            assert_eq!(restored, 1, "the copy has the response made before it");
            let _ = session.close().await;
        }
    }
});

#[tokio::test]
async fn postgres_without_its_tools_says_what_to_run() {
    let app = TestApp::spawn(Db::Postgres).await;
    let empty = tempfile::tempdir().expect("tempdir");
    let copy = app.dir().join("copy");
    let backup = outcomes(
        &["backup", "--to", &copy.to_string_lossy()],
        &app.database_url,
        app.dir(),
        Some(empty.path()),
    )
    .await;
    assert!(!backup.ok);
    assert!(
        backup.stderr.contains("pg_dump --format=custom"),
        "{}",
        backup.stderr
    );
    assert!(!copy.exists());
    let restore = outcomes(
        &["restore", "--from", &copy.to_string_lossy()],
        &app.database_url,
        app.dir(),
        Some(empty.path()),
    )
    .await;
    assert!(!restore.ok);
    assert!(
        restore
            .stderr
            .contains("pg_restore --exit-on-error --single-transaction"),
        "{}",
        restore.stderr
    );
}

db_test!(async fn migrate_check_lists_pending_migrations_and_applies_none(app) {
    let current = outcomes(&["migrate", "--check"], &app.database_url, app.dir(), None).await;
    assert!(current.ok, "{}{}", current.stdout, current.stderr);
    assert!(current.stdout.contains("up to date"), "{}", current.stdout);
    // As if this version's last migration had not run yet.
    let last = last_migration();
    app.sql(&format!("DELETE FROM _sqlx_migrations WHERE version = {} RETURNING version", last.version)).await;
    let pending = outcomes(&["migrate", "--check"], &app.database_url, app.dir(), None).await;
    assert!(!pending.ok);
    assert!(pending.stdout.contains(&last.to_string()), "{}", pending.stdout);
    assert!(pending.stdout.contains(&format!("migration level: {:04}", last.version - 1)), "{}", pending.stdout);
    let applied = format!("SELECT COUNT(*) FROM _sqlx_migrations WHERE version = {}", last.version);
    assert_eq!(app.sql(&applied).await, Some(0), "nothing applied");
    // A database never migrated: every migration pending, nothing made.
    let fresh = Fresh::for_app(&app).await;
    let empty = outcomes(&["migrate", "--check"], &fresh.url, fresh.dir.path(), None).await;
    assert!(!empty.ok);
    assert!(empty.stdout.contains("0001 initial"), "{}", empty.stdout);
    assert!(empty.stdout.contains("migration level: none"), "{}", empty.stdout);
    if app.db == Db::Sqlite {
        assert!(!fresh.dir.path().join("outcomes.db").exists(), "--check creates no database");
    }
    let migrated = outcomes(&["migrate"], &fresh.url, fresh.dir.path(), None).await;
    assert!(migrated.ok, "{}", migrated.stderr);
    let after = outcomes(&["migrate", "--check"], &fresh.url, fresh.dir.path(), None).await;
    assert!(after.ok, "{}{}", after.stdout, after.stderr);
});

db_test!(async fn a_host_starts_on_a_database_a_newer_version_migrated(app) {
    from_the_future(&app).await;
    // A host of this version restarting in the middle of a rolling upgrade.
    let second = app.another_host().await;
    assert_eq!(second.get("/health").await.status, 200);
    let check = outcomes(&["migrate", "--check"], &app.database_url, app.dir(), None).await;
    assert!(check.ok, "nothing to apply: {}{}", check.stdout, check.stderr);
    assert!(check.stdout.contains("newer"), "{}", check.stdout);
    second.stop().await;
});
