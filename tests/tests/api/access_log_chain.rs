//! The access log's tamper evidence and multi-dossier reads
//! (docs/api/rights.md#access-log): every row is chained to the one before
//! it by its hash, whichever path wrote it and however many hosts append;
//! `outcomes access-log verify` reports the first broken link of a log
//! changed behind the service's back; a read of several dossiers leaves one
//! row per dossier it answered.

use std::time::Instant;

use host::commands::verify_access_log;
use host::store::{AccessEntry, Store, StoreOptions, Verification};
use sqlx::{Connection as _, Executor as _};
use tests::{Db, TestApp, db_test, json};

use crate::support::*;

/// Rows of every kind: reads, POSTs (stored with their response, alone
/// and in shared batches), a refusal, a multi-dossier read.
async fn history(app: &TestApp) {
    assert_eq!(app.get(&responses("d1")).await.status, 200);
    posted(app, "d1", "ext-1").await;
    let posts = (0..12).map(|n| async move {
        post_phq9(
            app,
            &format!("d{}", n % 3),
            &format!("many-{n}"),
            phq9_all_answered(),
        )
        .await
    });
    for answer in futures_util::future::join_all(posts).await {
        assert_eq!(answer.status, 201, "{}", answer.text);
    }
    assert_eq!(
        app.send_as(tests::reqwest::Method::GET, &responses("d1"), None, None)
            .await
            .status,
        401
    );
    assert_eq!(app.get("/api/v1/stats").await.status, 200);
    // The refusal is counted, and its row written with the minute's others:
    // chained like every row.
    app.state.flush_refusals().await;
}

async fn verify(app: &TestApp) -> Verification {
    app.state
        .store()
        .verify_access_log()
        .await
        .expect("verify runs")
}

/// Runs statements on the test's database as its owner would, with the
/// append-only triggers out of the way: what an attacker with the owner's
/// rights can do. (The trigger that gives rows their ids stays: without
/// it a row has none on PostgreSQL.)
async fn tamper(app: &TestApp, statements: &[&str]) {
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(&app.database_url)
        .await
        .expect("connect");
    let disable = match app.db {
        Db::Sqlite => "DROP TRIGGER access_log_no_update; DROP TRIGGER access_log_no_delete",
        Db::Postgres => "ALTER TABLE access_log DISABLE TRIGGER access_log_no_change",
    };
    conn.execute(disable).await.expect("triggers off");
    for statement in statements {
        conn.execute(*statement)
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    let _ = conn.close().await;
}

/// The ids of the rows, oldest first.
async fn ids(app: &TestApp) -> Vec<i64> {
    app.sql_strings("SELECT CAST(id AS TEXT) AS n FROM access_log ORDER BY id")
        .await
        .iter()
        .map(|id| id.parse().expect("an id"))
        .collect()
}

fn broken_at(verification: &Verification) -> (Option<i64>, &str) {
    match verification {
        Verification::Broken { id, reason } => (*id, reason.as_str()),
        intact => panic!("expected a broken link, found {intact:?}"),
    }
}

// ---------------------------------------------------------------------------
// The chain
// ---------------------------------------------------------------------------

db_test!(async fn every_row_links_to_the_one_before_and_verify_finds_the_log_intact(app) {
    history(&app).await;
    let rows = ids(&app).await.len() as u64;
    assert!(rows >= 18, "{rows} rows");
    let links = app.sql_strings("SELECT prev_hash || ' ' || hash FROM access_log ORDER BY id").await;
    let mut prev = "0".repeat(64);
    for link in &links {
        let (stored_prev, hash) = link.split_once(' ').expect("two hashes");
        assert_eq!(stored_prev, prev);
        assert_eq!(hash.len(), 64);
        prev = hash.to_owned();
    }
    let head = app.sql_strings("SELECT hash FROM access_log_head").await;
    assert_eq!(head, vec![prev.clone()]);
    assert_eq!(
        verify(&app).await,
        Verification::Intact { chained: rows, before_chain: 0, head: prev.clone() }
    );
    let said = verify_access_log(app.state.store()).await.expect("intact");
    assert!(said.contains(&format!("{rows} rows chained")) && said.contains(&prev), "{said}");
});

db_test!(async fn a_changed_row_is_the_broken_link_verify_reports(app) {
    history(&app).await;
    let third = ids(&app).await[2];
    // A POST's row made to say it was refused.
    tamper(&app, &[&format!("UPDATE access_log SET status = 403 WHERE id = {third}")]).await;
    let verification = verify(&app).await;
    let (id, reason) = broken_at(&verification);
    assert_eq!(id, Some(third));
    assert!(reason.contains("was changed"), "{reason}");
    let said = verify_access_log(app.state.store()).await.expect_err("broken");
    assert!(said.to_string().starts_with(&format!("access log broken at row {third}: ")), "{said}");
});

db_test!(async fn a_row_changed_with_its_hash_recomputed_breaks_the_next_link(app) {
    history(&app).await;
    let ids = ids(&app).await;
    // An attacker who rewrites a row and gives it a fresh hash still leaves
    // the next row pointing at the old one.
    tamper(&app, &[&format!("UPDATE access_log SET hash = '{}' WHERE id = {}", "f".repeat(64), ids[4])]).await;
    let verification = verify(&app).await;
    let (id, reason) = broken_at(&verification);
    assert_eq!(id, Some(ids[4]), "its own fields no longer give its hash");
    assert!(reason.contains("was changed"), "{reason}");
});

db_test!(async fn a_removed_row_breaks_the_link_of_the_next(app) {
    history(&app).await;
    let ids = ids(&app).await;
    tamper(&app, &[&format!("DELETE FROM access_log WHERE id = {}", ids[5])]).await;
    let verification = verify(&app).await;
    let (id, reason) = broken_at(&verification);
    assert_eq!(id, Some(ids[6]));
    assert!(reason.contains("removed or put in"), "{reason}");
});

db_test!(async fn rows_removed_from_the_end_are_noticed_by_the_head(app) {
    history(&app).await;
    let last = *ids(&app).await.last().expect("rows");
    tamper(&app, &[&format!("DELETE FROM access_log WHERE id = {last}")]).await;
    let verification = verify(&app).await;
    let (id, reason) = broken_at(&verification);
    assert_eq!(id, None);
    assert!(reason.contains("removed from the end"), "{reason}");
    let said = verify_access_log(app.state.store()).await.expect_err("broken");
    assert!(said.to_string().starts_with("access log broken at its end: "), "{said}");
});

db_test!(async fn a_row_added_behind_the_services_back_is_noticed(app) {
    history(&app).await;
    // An INSERT needs no trigger off: without a hash, or linked but not
    // through the head.
    tamper(&app, &["INSERT INTO access_log (at, dossier, action, status, client) VALUES (0, 'd1', 'GET x', 200, '10.0.0.1')"]).await;
    let forged = *ids(&app).await.last().expect("rows");
    let verification = verify(&app).await;
    let (id, reason) = broken_at(&verification);
    assert_eq!(id, Some(forged));
    assert!(reason.contains("no hash"), "{reason}");
});

db_test!(async fn an_access_row_with_an_id_of_its_choosing_is_refused_and_the_chain_stays_whole(app) {
    history(&app).await;
    let last = *ids(&app).await.last().expect("rows");
    // An id among the chain's past (before its first row), the next one
    // the log would give, one far beyond it, the largest there is (after
    // which SQLite picks ids at random): each would have put the row out
    // of the order of appends, and broken every verification after it.
    for id in [0, -1, last + 1, last + 1000, i64::MAX] {
        let statement = format!(
            "INSERT INTO access_log (id, at, dossier, action, status, client) VALUES ({id}, 0, 'd1', 'GET x', 200, '10.0.0.1')"
        );
        let refused = crate::access_log::raw_sql(&app, &statement).await.expect_err(&statement);
        assert!(refused.contains("ids come from the log itself"), "{statement}: {refused}");
    }
    if app.db == Db::Postgres {
        // OVERRIDING SYSTEM VALUE got past an identity column's own rule.
        let statement = format!(
            "INSERT INTO access_log (id, at, action, status, client) OVERRIDING SYSTEM VALUE VALUES ({}, 0, 'x', 200, 'y')",
            last + 7
        );
        let refused = crate::access_log::raw_sql(&app, &statement).await.expect_err(&statement);
        assert!(refused.contains("ids come from the log itself"), "{refused}");
    }
    assert_eq!(ids(&app).await.last(), Some(&last), "nothing was added");
    // The service appends on, in one chain.
    assert_eq!(app.get(&responses("d1")).await.status, 200);
    assert!(ids(&app).await.last().is_some_and(|id| *id > last));
    assert!(matches!(verify(&app).await, Verification::Intact { .. }), "{:?}", verify(&app).await);
});

db_test!(async fn the_service_keeps_appending_to_a_chain_whose_middle_was_broken(app) {
    history(&app).await;
    let ids = ids(&app).await;
    tamper(&app, &[&format!("UPDATE access_log SET dossier = 'elsewhere' WHERE id = {}", ids[1])]).await;
    assert_eq!(app.get(&responses("d1")).await.status, 200);
    // The break stays where it was; new rows link on from the head.
    assert_eq!(broken_at(&verify(&app).await).0, Some(ids[1]));
});

db_test!(async fn two_hosts_appending_at_once_form_one_chain(app) {
    // Another host on the same database: its own writer, its own
    // connection. Each batch locks the head, so the two never link to the
    // same row.
    let other = Store::connect(&app.database_url, &StoreOptions::default()).await.expect("a second store");
    let entry = |n: usize, host: &str| AccessEntry {
        at: app.state.now(),
        dossier: Some(format!("d{n}")),
        action: format!("GET {host}"),
        status: 200,
        client: "127.0.0.1".into(),
        ..AccessEntry::default()
    };
    let mine = (0..40).map(|n| app.state.store().append_access(entry(n, "one")));
    let theirs = (0..40).map(|n| other.append_accesses(vec![entry(n, "two"), entry(n + 100, "two")]));
    let posts = (0..20).map(|n| {
        let app = &app;
        async move { post_phq9(app, "d1", &format!("ext-{n}"), phq9_all_answered()).await }
    });
    let (mine, theirs, posts) = tokio::join!(
        futures_util::future::join_all(mine),
        futures_util::future::join_all(theirs),
        futures_util::future::join_all(posts),
    );
    assert!(mine.iter().chain(&theirs).all(Result::is_ok));
    assert!(posts.iter().all(|p| p.status == 201));
    other.close().await;
    match verify(&app).await {
        // Each PHQ-9 posted (item 9 answered 1) raises an alarm: a row more.
        Verification::Intact { chained, .. } => assert_eq!(chained, 40 + 80 + 20 + 20),
        broken => panic!("{broken:?}"),
    }
});

/// Polls `write` once: enough for its host's store to queue it with the
/// writer (a queue with room takes it at once); its answer comes later.
fn queue<F: std::future::Future>(write: &mut std::pin::Pin<&mut F>) {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(
        write.as_mut().poll(&mut cx).is_pending(),
        "answered before its batch could run"
    );
}

/// Sessions of the test's database waiting for a lock in a statement
/// that names `table` (any statement for "").
async fn waiting_in(admin: &mut sqlx::PgConnection, table: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() \
         AND wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%'",
    )
    .bind(table)
    .fetch_one(admin)
    .await
    .expect("pg_stat_activity")
}

/// Two PostgreSQL hosts whose writers' batches each lock a respondent and
/// the chain's head. Before, a batch took the head where it first
/// appended: host A's batch held the head after its first write's row and
/// wanted respondent P for its second write, while host B's batch held P
/// and wanted the head. PostgreSQL ended one after `deadlock_timeout`,
/// failing every write of that batch. The test's own transactions hold
/// the head (and a row A's writer needs first) so that both hosts'
/// batches line up in exactly that order before it lets go.
#[tokio::test]
async fn two_hosts_whose_batches_lock_the_same_rows_never_deadlock_on_the_chain_head() {
    use std::time::Duration;
    let a = TestApp::spawn(Db::Postgres).await;
    let b = a.another_host().await;
    posted(&a, "d1", "ext-1").await;
    posted(&a, "d2", "ext-2").await;
    let respondent = async |dossier: &str| {
        a.state
            .store()
            .respondents(dossier)
            .await
            .expect("respondents")[0]
            .id
    };
    let (p, q) = (respondent("d1").await, respondent("d2").await);
    tests::create_token(&a.state, "blocker", "all").await;
    let access = |dossier: &str| AccessEntry {
        at: a.state.now(),
        dossier: Some(dossier.to_owned()),
        action: "POST revoke_links".into(),
        status: 204,
        client: "127.0.0.1".into(),
        ..AccessEntry::default()
    };
    let connect = || sqlx::PgConnection::connect(&a.database_url);
    let (mut admin, mut head, mut token) = (
        connect().await.expect("connect"),
        connect().await.expect("connect"),
        connect().await.expect("connect"),
    );
    head.execute("BEGIN; SELECT hash FROM access_log_head WHERE id = 1 FOR UPDATE")
        .await
        .expect("the head held");
    token
        .execute("BEGIN; SELECT 1 FROM api_tokens WHERE consumer_key = 'blocker' FOR UPDATE")
        .await
        .expect("a token row held");
    let (store_a, store_b, now) = (a.state.store(), b.state.store(), a.state.now());
    let answers = {
        // Host A's writer busy with a write that appends nothing, so that
        // the next two writes make one batch.
        let mut held = std::pin::pin!(store_a.revoke_token("blocker".into(), now));
        queue(&mut held);
        wait_for_waiting(&mut admin, "", 1, "A's writer waits").await;
        // A's next batch: Q's links (Q, then the head), then P's.
        let mut first =
            std::pin::pin!(store_a.revoke_respondent_links("d2", q, now, Some(access("d2"))));
        queue(&mut first);
        let mut second =
            std::pin::pin!(store_a.revoke_respondent_links("d1", p, now, Some(access("d1"))));
        queue(&mut second);
        token.execute("COMMIT").await.expect("the token row let go");
        wait_for_waiting(
            &mut admin,
            "access_log_head",
            1,
            "A's batch waits for the head",
        )
        .await;
        // Host B: P's links (P, then the head), behind A in the head's
        // queue.
        let mut other =
            std::pin::pin!(store_b.revoke_respondent_links("d1", p, now, Some(access("d1"))));
        queue(&mut other);
        wait_for_waiting(&mut admin, "access_log_head", 2, "B waits for the head too").await;
        head.execute("COMMIT").await.expect("the head let go");
        let all = async { (held.await, first.await, second.await, other.await) };
        tokio::time::timeout(Duration::from_secs(30), all)
            .await
            .expect("every write answered")
    };
    let (held, first, second, other) = answers;
    assert!(held.expect("the token revoked"));
    assert!(first.expect("Q's links revoked on A"));
    assert!(second.expect("P's links revoked on A"));
    assert!(other.expect("P's links revoked on B"));
    match verify(&a).await {
        // Two POSTs, each with the row of the alarm it raised; three
        // revocations.
        Verification::Intact { chained, .. } => assert_eq!(chained, 2 * 2 + 3),
        broken => panic!("{broken:?}"),
    }
    let _ = admin.close().await;
    b.stop().await;
    a.stop().await;
}

/// Waits until `count` sessions wait for a lock in a statement naming
/// `table` (a wait on a condition, checked every 20 ms, for at most 20 s).
async fn wait_for_waiting(admin: &mut sqlx::PgConnection, table: &str, count: i64, what: &str) {
    let deadline = Instant::now() + std::time::Duration::from_secs(20);
    while waiting_in(admin, table).await != count {
        assert!(Instant::now() < deadline, "{what}: not within 20 s");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

db_test!(async fn rows_from_before_the_chain_are_counted_apart(app) {
    // A log that predates migration 0013: its rows stay as written, outside
    // the chain, which starts after them.
    posted(&app, "d1", "ext-1").await;
    let store = app.state.store();
    let before = ids(&app).await;
    tamper(&app, &[
        "DROP TABLE access_log_head",
        "CREATE TABLE access_log_head (id BIGINT PRIMARY KEY, hash TEXT NOT NULL, chain_start BIGINT NOT NULL)",
        &format!("INSERT INTO access_log_head VALUES (1, '{}', {})", "0".repeat(64), before.last().expect("rows")),
    ]).await;
    assert_eq!(app.get(&responses("d1")).await.status, 200);
    match store.verify_access_log().await.expect("verify") {
        // Before: the POST and the alarm it raised.
        Verification::Intact { chained, before_chain, .. } => assert_eq!((chained, before_chain), (1, 2)),
        broken => panic!("{broken:?}"),
    }
});

// ---------------------------------------------------------------------------
// Reads of several dossiers
// ---------------------------------------------------------------------------

const STATS: &str = "GET /api/v1/stats";
const DOSSIER_STATS: &str = "GET /api/v1/dossiers/{dossier_id}/stats";

/// (dossier, action, status) of each row, oldest first.
async fn rows(app: &TestApp) -> Vec<(Option<String>, String, u16)> {
    app.state
        .store()
        .access_log(None, None)
        .await
        .expect("access log")
        .into_iter()
        .map(|e| (e.dossier, e.action, e.status))
        .collect()
}

fn row(dossier: Option<&str>, action: &str, status: u16) -> (Option<String>, String, u16) {
    (dossier.map(str::to_owned), action.to_owned(), status)
}

db_test!(async fn a_stats_read_of_several_dossiers_logs_one_row_per_dossier_answered(app) {
    posted(&app, "d1", "ext-1").await;
    posted(&app, "d2", "ext-1").await;
    posted(&app, "d3", "ext-1").await;
    let before = rows(&app).await.len();
    let path = app.get("/api/v1/dossiers/d1,d2,nobody/stats").await;
    assert_eq!(path.status, 200);
    let query = app.get("/api/v1/stats?epd_ids=d3,d2").await;
    assert_eq!(query.status, 200);
    let all = app.get("/api/v1/stats").await;
    assert_eq!(all.body.as_object().map(|o| o.len()), Some(3));
    // Nothing answered: the request's one row, as before.
    let none = app.get("/api/v1/stats?epd_ids=nobody").await;
    assert_eq!(none.body, json!({}));
    let refused = app.get("/api/v1/dossiers/d1,%20/stats").await;
    assert_eq!(refused.status, 422);
    assert_eq!(
        rows(&app).await[before..],
        [
            row(Some("d1"), DOSSIER_STATS, 200),
            row(Some("d2"), DOSSIER_STATS, 200),
            row(Some("d2"), STATS, 200),
            row(Some("d3"), STATS, 200),
            row(Some("d1"), STATS, 200),
            row(Some("d2"), STATS, 200),
            row(Some("d3"), STATS, 200),
            row(None, STATS, 200),
            row(Some("d1, "), DOSSIER_STATS, 422),
        ]
    );
    let log = app.state.store().access_log(None, None).await.expect("log");
    assert!(log[before..].iter().all(|e| e.consumer_key.as_deref() == Some(tests::TEST_KEY)));
    assert!(matches!(verify(&app).await, Verification::Intact { .. }));
});

db_test!(async fn a_stats_read_of_ten_thousand_dossiers_logs_each_in_one_write(app) {
    // Dossiers made directly: ten thousand POSTs would only slow the test.
    app.sql(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000) \
         INSERT INTO dossiers (epd_id, created_at) SELECT 'p' || CAST(i AS TEXT), 0 FROM n",
    )
    .await;
    // The writer's batches so far: how many, and how many writes in all.
    let batches = |text: &str| {
        let count = metric(text, "outcomes_writer_batch_size_count").unwrap_or(0.0);
        let writes = metric(text, "outcomes_writer_batch_size_sum").unwrap_or(0.0);
        (count, writes)
    };
    let (count_before, writes_before) = batches(&metrics_text(&app).await);
    let started = Instant::now();
    let all = app.get("/api/v1/stats").await;
    let took = started.elapsed();
    assert_eq!(all.status, 200);
    assert_eq!(all.body.as_object().map(|o| o.len()), Some(10_000));
    // One write of the writer, committed in one batch, holds every row:
    // not a write per dossier.
    let (count_after, writes_after) = batches(&metrics_text(&app).await);
    assert_eq!(
        (count_after - count_before, writes_after - writes_before),
        (1.0, 1.0),
        "the read's rows went to the writer as one write, in one batch"
    );
    let log = app.state.store().access_log(None, None).await.expect("log");
    assert_eq!(log.len(), 10_000);
    assert!(log.iter().all(|e| e.action == STATS && e.status == 200));
    let mut dossiers: Vec<&str> = log.iter().filter_map(|e| e.dossier.as_deref()).collect();
    dossiers.sort_unstable();
    dossiers.dedup();
    assert_eq!(dossiers.len(), 10_000);
    eprintln!("GET /api/v1/stats over 10,000 dossiers, 10,000 rows logged: {took:?}");
    assert!(matches!(verify(&app).await, Verification::Intact { chained: 10_000, .. }));
});
