//! The PostgreSQL roles of docs/operations.md#access-log, as shipped in
//! `deploy/`: in a fresh database, the owner migrates, the service serves
//! as the service role, and that role may append to the access log but not
//! change, remove or empty it, nor switch its triggers off, nor choose a
//! row's id or move the sequence ids come from. PostgreSQL only: SQLite
//! has no roles.

use host::store::{Store, StoreOptions, Verification};
use sqlx::{Connection as _, Executor as _, PgConnection};
use tests::{TestApp, json};

use crate::support::*;

/// The statements of a `deploy/` file, with the roles and the database
/// renamed for this test (roles are shared by the whole server).
fn statements(file: &str, prefix: &str) -> Vec<String> {
    let text =
        std::fs::read_to_string(tests::repo_root().join("deploy").join(file)).expect("deploy file");
    let text: String = text
        .lines()
        .filter(|line| !line.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n")
        .replace("outcomes_owner", &format!("{prefix}_owner"))
        .replace("outcomes_service", &format!("{prefix}_service"))
        .replace("DATABASE outcomes ", &format!("DATABASE {prefix} "));
    text.split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The test server's URL as `user`, on `database`.
fn url_as(user: &str, database: &str) -> String {
    let admin = tests::postgres_url();
    let (scheme, rest) = admin.split_once("://").expect("a URL");
    let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let host = host.split_once('/').map_or(host, |(host, _)| host);
    format!("{scheme}://{user}@{host}/{database}")
}

/// Drops the test's database and roles, however the test ends.
pub(crate) struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let prefix = self.0.clone();
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async {
                if let Ok(mut conn) = PgConnection::connect(&tests::postgres_url()).await {
                    for statement in [
                        format!("DROP DATABASE IF EXISTS \"{prefix}\" WITH (FORCE)"),
                        format!("DROP ROLE IF EXISTS \"{prefix}_service\""),
                        format!("DROP ROLE IF EXISTS \"{prefix}_owner\""),
                    ] {
                        let _ = conn.execute(statement.as_str()).await;
                    }
                }
            });
        })
        .join();
    }
}

async fn run_all(url: &str, statements: &[String]) {
    let mut conn = PgConnection::connect(url).await.expect("connect");
    for statement in statements {
        conn.execute(statement.as_str())
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    let _ = conn.close().await;
}

/// A fresh database set up as `deploy/` says, served as the service role:
/// what drops it all afterwards, the service role's URL, and the host.
pub(crate) async fn deployed() -> (Cleanup, String, TestApp) {
    let prefix = format!(
        "outcomes_roles_{}_{}",
        std::process::id(),
        chrono::Utc::now().timestamp_subsec_nanos()
    );
    let cleanup = Cleanup(prefix.clone());
    // 1. As a superuser: the roles and the database.
    run_all(
        &tests::postgres_url(),
        &statements("postgres-roles.sql", &prefix),
    )
    .await;
    // 2. As the owner: the migrations, then the grants.
    let owner = url_as(&format!("{prefix}_owner"), &prefix);
    let store = Store::connect(&owner, &StoreOptions::default())
        .await
        .expect("owner connects");
    store.migrate().await.expect("the owner migrates");
    store.close().await;
    run_all(&owner, &statements("postgres-grants.sql", &prefix)).await;
    // 3. The service as the service role.
    let service = url_as(&format!("{prefix}_service"), &prefix);
    let app = TestApp::spawn_on_postgres(service.clone(), |_| {}).await;
    (cleanup, service, app)
}

#[tokio::test]
async fn the_service_role_may_append_to_the_access_log_but_never_change_it() {
    let (_cleanup, service, app) = deployed().await;
    // It starts, stores and reads.
    let created = post_phq9(&app, "d1", "ext-1", phq9_all_answered()).await;
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(
        app.get(&responses("d1")).await.body[0]["external_id"],
        json!("ext-1")
    );
    assert_eq!(app.get("/api/v1/stats").await.status, 200);
    assert!(matches!(
        app.state
            .store()
            .verify_access_log()
            .await
            .expect("verify as the service"),
        // The POST, the alarm its item 9 raised, the two reads.
        Verification::Intact { chained: 4, .. }
    ));

    // What the service role may not do to the log, with its triggers or
    // without.
    let mut conn = PgConnection::connect(&service)
        .await
        .expect("service connects");
    for statement in [
        "UPDATE access_log SET status = 200",
        "DELETE FROM access_log",
        "TRUNCATE access_log",
        "ALTER TABLE access_log DISABLE TRIGGER USER",
        "DROP TRIGGER access_log_no_change ON access_log",
        "UPDATE access_log_head SET chain_start = 1000",
        "DELETE FROM access_log_head",
        "CREATE TABLE elsewhere (id BIGINT)",
        "DELETE FROM _sqlx_migrations",
        // An alarm's history is appended to, never changed.
        "UPDATE alarm_events SET event = 'x'",
        "DELETE FROM alarm_events",
    ] {
        let refused = conn
            .execute(statement)
            .await
            .expect_err(statement)
            .to_string();
        assert!(
            refused.contains("permission denied") || refused.contains("must be owner"),
            "{statement}: {refused}"
        );
    }
    // It may append (that is its job) and read.
    conn.execute("INSERT INTO access_log (at, action, status, client) VALUES (0, 'x', 200, 'y')")
        .await
        .expect("the service appends");
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM access_log")
        .fetch_one(&mut conn)
        .await
        .expect("reads");
    assert_eq!(rows, 5);
    let _ = conn.close().await;
    // An append past the service's chain is noticed.
    assert!(matches!(
        app.state.store().verify_access_log().await.expect("verify"),
        Verification::Broken { .. }
    ));
    app.stop().await;
}

#[tokio::test]
async fn the_service_role_cannot_choose_an_access_rows_id() {
    let (_cleanup, service, app) = deployed().await;
    let created = post_phq9(&app, "d1", "ext-1", phq9_all_answered()).await;
    assert_eq!(created.status, 201, "{}", created.text);
    let mut conn = PgConnection::connect(&service)
        .await
        .expect("service connects");
    // A row placed among the chain's past or beyond its future ids would
    // break every verification after it, for good: the log gives the ids.
    for statement in [
        "INSERT INTO access_log (id, at, action, status, client) VALUES (1000000, 0, 'x', 200, 'y')",
        "INSERT INTO access_log (id, at, action, status, client) VALUES (0, 0, 'x', 200, 'y')",
        "INSERT INTO access_log (id, at, action, status, client) OVERRIDING SYSTEM VALUE \
         VALUES (1000000, 0, 'x', 200, 'y')",
    ] {
        let refused = conn
            .execute(statement)
            .await
            .expect_err(statement)
            .to_string();
        assert!(
            refused.contains("ids come from the log itself"),
            "{statement}: {refused}"
        );
    }
    // Nor move the sequence the ids come from, or switch the rule off.
    for statement in [
        "SELECT setval('access_log_ids', 1)",
        "SELECT nextval('access_log_ids')",
        "ALTER TABLE access_log DISABLE TRIGGER access_log_own_id",
        "DROP TRIGGER access_log_own_id ON access_log",
        "DROP FUNCTION access_log_own_id() CASCADE",
    ] {
        let refused = conn
            .execute(statement)
            .await
            .expect_err(statement)
            .to_string();
        assert!(
            refused.contains("permission denied") || refused.contains("must be owner"),
            "{statement}: {refused}"
        );
    }
    let _ = conn.close().await;
    // The service appends on, in one chain.
    assert_eq!(app.get(&responses("d1")).await.status, 200);
    assert!(matches!(
        app.state.store().verify_access_log().await.expect("verify"),
        // The POST, its alarm, the read.
        Verification::Intact { chained: 3, .. }
    ));
    app.stop().await;
}
