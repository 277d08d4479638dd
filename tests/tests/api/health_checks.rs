//! The probes for orchestrators: `/livez` answers while the process
//! does; `/readyz` is 200 on a healthy host and 503 naming each failed
//! check when the database is gone, a migration is missing, a plugin the
//! catalog needs was refused, or the scheduler stopped passing (time moved
//! with the test's clock, not slept); `/version` says what the binary is
//! and nothing else. All without credentials. A readiness answer serves
//! every probe for a second; each client address has its share of the
//! probes.

use std::time::Duration;

use sqlx::{Connection, Executor, PgConnection};
use tests::reqwest::Method;
use tests::{Answer, Db, TestApp, db_test, json};

/// `GET path` without credentials, as a probe asks.
async fn probe(app: &TestApp, path: &str) -> Answer {
    app.send_as(Method::GET, path, None, None).await
}

/// What no probe answer may contain: where the data is, how the database
/// is reached, the test token's secret.
fn assert_reveals_nothing(app: &TestApp, answer: &Answer) {
    let folder = app.dir().display().to_string();
    for secret in [
        app.database_url.as_str(),
        folder.as_str(),
        app.secret.as_str(),
    ] {
        assert!(!answer.text.contains(secret), "{secret} in {}", answer.text);
    }
    assert!(!answer.text.contains("127.0.0.1"), "{}", answer.text);
}

/// The answer of a host that is not ready: 503, and exactly `errors`.
async fn not_ready(app: &TestApp, errors: serde_json::Value) -> Answer {
    let answer = probe(app, "/readyz").await;
    assert_eq!(answer.status, 503, "{}", answer.text);
    assert_eq!(answer.body["status"], "not_ready", "{}", answer.text);
    assert_eq!(answer.body["errors"], errors, "{}", answer.text);
    assert_eq!(
        answer.headers["content-type"],
        "application/json; charset=utf-8"
    );
    assert_reveals_nothing(app, &answer);
    answer
}

db_test!(async fn livez_answers_without_credentials(app) {
    let answer = probe(&app, "/livez").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.body, json!({"status": "ok"}));
});

db_test!(async fn a_healthy_host_is_ready(app) {
    let answer = probe(&app, "/readyz").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.body["status"], "ready");
    assert!(answer.body.get("errors").is_none(), "{}", answer.text);
    for check in ["database", "migrations", "plugins", "scheduler", "tokens"] {
        assert_eq!(answer.body["checks"][check]["status"], "ok", "{check}: {}", answer.text);
    }
    assert_eq!(
        answer.body["checks"]["migrations"]["detail"],
        format!("level {}", host::build_info::migration())
    );
    // The test host runs no scheduler of its own (tests call `tick`).
    assert_eq!(
        answer.body["checks"]["scheduler"]["detail"],
        "off in this process (scheduler_interval 0)"
    );
    assert_reveals_nothing(&app, &answer);
});

/// Takes the database away from the running host. PostgreSQL: the
/// database is dropped, its connections ended by the server, so every
/// reconnect is refused. SQLite: connections already open keep reading
/// a file whatever becomes of its name or mode, so the host's pool is
/// closed instead, as at shutdown.
async fn lose_database(app: &TestApp) {
    match app.db {
        Db::Postgres => {
            let name = app
                .database_url
                .rsplit('/')
                .next()
                .expect("a database name");
            let mut admin = PgConnection::connect(&tests::postgres_url())
                .await
                .expect("the PostgreSQL server");
            admin
                .execute(format!("DROP DATABASE \"{name}\" WITH (FORCE)").as_str())
                .await
                .expect("the test database dropped");
        }
        Db::Sqlite => app.state.store().close().await,
    }
}

db_test!(async fn an_unreachable_database_makes_the_host_not_ready_but_alive(app) {
    assert_eq!(probe(&app, "/readyz").await.status, 200);
    lose_database(&app).await;
    // The answer of a second ago is over.
    app.clock.advance(chrono::Duration::seconds(1));
    let answer = not_ready(&app, json!({"database": ["unreachable"]})).await;
    assert_eq!(answer.body["checks"]["database"]["status"], "failed");
    assert_eq!(
        answer.body["checks"]["database"]["problem"],
        "the database does not answer (the log says why)"
    );
    assert_eq!(answer.body["checks"]["migrations"]["status"], "unknown");
    // The plugins and the scheduler do not need the database to be judged.
    assert_eq!(answer.body["checks"]["plugins"]["status"], "ok");
    // Liveness never asks the database: a restart would not bring it back.
    assert_eq!(probe(&app, "/livez").await.status, 200);
});

db_test!(async fn a_missing_migration_makes_the_host_not_ready(app) {
    let level = host::build_info::migration();
    app.sql(&format!("DELETE FROM _sqlx_migrations WHERE version = {level}"))
        .await;
    let answer = not_ready(&app, json!({"migrations": ["pending"]})).await;
    assert_eq!(
        answer.body["checks"]["migrations"]["problem"],
        format!("migrations {level} are not applied: run `outcomes migrate`")
    );
    assert_eq!(answer.body["checks"]["database"]["status"], "ok");
});

db_test!(async fn readiness_is_checked_once_a_second_however_many_probes_ask(app) {
    // The attack: a flood of probes, each a query to the database. An
    // answer serves every probe for a second of the host's clock, so the
    // database, gone right after the first check, is not asked again
    // until the second is over.
    assert_eq!(probe(&app, "/readyz").await.status, 200);
    lose_database(&app).await;
    let flood = (0..50).map(|_| probe(&app, "/readyz"));
    for answer in futures_util::future::join_all(flood).await {
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert_eq!(answer.body["checks"]["database"]["detail"], "answers");
    }
    app.clock.advance(chrono::Duration::milliseconds(999));
    assert_eq!(probe(&app, "/readyz").await.status, 200);
    app.clock.advance(chrono::Duration::milliseconds(1));
    not_ready(&app, json!({"database": ["unreachable"]})).await;
});

/// The host where each client address may ask the probes three times.
async fn spawn_with_three_probes(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        config.probe_limit = Some(host::config::RateLimit {
            burst: std::num::NonZeroU32::new(3).expect("not zero"),
            every: Duration::from_secs(3600),
        });
    })
    .await
}

db_test!(
    async fn a_client_flooding_the_probes_is_answered_429_and_no_other_client_is(
        app: spawn_with_three_probes,
    ) {
        for path in ["/livez", "/readyz", "/version"] {
            assert_eq!(probe(&app, path).await.status, 200, "{path}");
        }
        // Past its share, every probe answers 429 before it runs.
        for path in ["/health", "/livez", "/readyz", "/version"] {
            let answer = probe(&app, path).await;
            assert_eq!(answer.status, 429, "{path}: {}", answer.text);
            assert_eq!(
                answer.body,
                json!({"errors": {"base": ["too_many_requests"]}})
            );
            let wait: u64 = answer.headers["retry-after"]
                .to_str()
                .ok()
                .and_then(|v| v.parse().ok())
                .expect("Retry-After in seconds");
            assert!((1..=3600).contains(&wait), "{wait}");
        }
        // Another client address (loopback is 127.0.0.0/8) has its own.
        let other = tests::reqwest::Client::builder()
            .local_address(Some("127.0.0.2".parse().expect("address")))
            .build()
            .expect("a client");
        let answer = other
            .get(app.url("/health"))
            .send()
            .await
            .expect("an answer");
        assert_eq!(answer.status(), 200);
        // The API is not a probe.
        assert_eq!(app.get("/api/v1/protocols").await.status, 200);
    }
);

/// The host with every built plugin, but a PHQ-9 module that is not
/// WebAssembly: the folder is refused and no phq9 scorer serves.
async fn spawn_with_broken_phq9(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        let dir = config.data_dir.join("plugins-broken-phq9");
        for entry in std::fs::read_dir(tests::built_plugins())
            .expect("built plugins")
            .flatten()
        {
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.path().is_dir() && name != "phq9" {
                tests::plugins::copy_built_plugin(&dir, &name);
            }
        }
        tests::plugins::install_module(&dir, "phq9", b"\0asm\x01\0\0\0 not a module");
        config.plugins.dir = dir;
    })
    .await
}

db_test!(
    async fn a_plugin_that_failed_to_load_makes_the_host_not_ready(app: spawn_with_broken_phq9) {
        let answer = not_ready(&app, json!({"plugins": ["not_loaded"]})).await;
        assert_eq!(
            answer.body["checks"]["plugins"]["problem"],
            "scorer phq9 (questionnaire phq9) does not serve; \
         plugin folder phq9 was refused and nothing serves from it"
        );
        for check in ["database", "migrations", "scheduler", "tokens"] {
            assert_eq!(
                answer.body["checks"][check]["status"], "ok",
                "{check}: {}",
                answer.text
            );
        }
        // Why it was refused is for the authenticated plugin list and the log.
        assert!(!answer.text.contains("wasm"), "{}", answer.text);
    }
);

/// The host with its scheduler running every minute (by the wall clock;
/// what it records and is judged by is the test's clock).
async fn spawn_with_scheduler(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        config.scheduler_interval = Some(Duration::from_secs(60));
    })
    .await
}

db_test!(
    async fn a_scheduler_that_stopped_passing_makes_the_host_not_ready(app: spawn_with_scheduler) {
        // The first pass runs as the host starts; wait for it, with a deadline.
        let mut passes = app.state.scheduler_heartbeat().subscribe();
        tokio::time::timeout(Duration::from_secs(60), passes.wait_for(Option::is_some))
            .await
            .expect("the scheduler's first pass within a minute")
            .expect("the heartbeat");
        let ready = probe(&app, "/readyz").await;
        assert_eq!(ready.status, 200, "{}", ready.text);
        assert_eq!(
            ready.body["checks"]["scheduler"]["detail"],
            "last pass 0 s ago, every 60 s"
        );

        // Two intervals without a pass are allowed; a second more is not.
        app.clock.advance(chrono::Duration::seconds(120));
        assert_eq!(probe(&app, "/readyz").await.status, 200);
        app.clock.advance(chrono::Duration::seconds(1));
        let answer = not_ready(&app, json!({"scheduler": ["late"]})).await;
        assert_eq!(
            answer.body["checks"]["scheduler"]["problem"],
            "no pass for 121 s, more than two intervals of 60 s"
        );

        // A pass makes it ready again, once the last answer is over.
        host::scheduler::tick(app.state.scheduler(), app.state.now())
            .await
            .expect("a pass");
        app.clock.advance(chrono::Duration::seconds(1));
        assert_eq!(probe(&app, "/readyz").await.status, 200);
    }
);

/// The version in host/Cargo.toml.
fn host_version() -> String {
    let text = std::fs::read_to_string(tests::repo_root().join("host/Cargo.toml"))
        .expect("host/Cargo.toml");
    let manifest: toml::Table = toml::from_str(&text).expect("TOML");
    manifest["package"]["version"]
        .as_str()
        .expect("a version")
        .to_owned()
}

db_test!(async fn the_version_needs_no_credentials_and_says_nothing_else(app) {
    let answer = probe(&app, "/version").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    // Exactly these four members.
    assert_eq!(
        answer.body,
        json!({
            "version": host_version(),
            "commit": host::build_info::COMMIT,
            "abi_version": plugin_sdk::ABI_VERSION,
            "migration": host::build_info::migration(),
        })
    );
    let commit = host::build_info::COMMIT;
    assert!(
        commit == "unknown" || (commit.len() == 12 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "commit {commit:?}"
    );
    // The highest migration the binary carries is the newest file's number.
    let newest = std::fs::read_dir(tests::repo_root().join("migrations/sqlite"))
        .expect("migrations")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.split('_').next()?.parse::<i64>().ok())
        .max();
    assert_eq!(Some(host::build_info::migration()), newest);
    assert_reveals_nothing(&app, &answer);
    // Credentials change nothing.
    assert_eq!(app.get("/version").await.body, answer.body);
    // `outcomes --version` says the same.
    let long = host::build_info::long_version();
    assert!(long.contains(commit), "{long}");
    assert!(long.contains(&format!("plugin ABI {}", plugin_sdk::ABI_VERSION)), "{long}");
});
