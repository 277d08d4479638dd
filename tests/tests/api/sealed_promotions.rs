//! Who decides which scorer version serves
//! (docs/operations.md#verifying-outcomes-and-trying-a-new-scorer): only
//! `outcomes plugin candidate|promote`, whose rows carry a seal of the
//! service's secrets key, and only for modules `plugin_allow` lists. Rows
//! written with SQL alone, here a PHQ-9 "scorer" that never raises the
//! item-9 alarm archived and promoted as the PostgreSQL service role may
//! (its grants in `deploy/postgres-grants.sql`), change no outcome on
//! either of two hosts, and each host reports them (`refused` with why at
//! GET /api/v1/plugins, `outcomes_plugin_candidates_refused`). The
//! operator's path, candidate then promote through the commands, still
//! switches both hosts.

use host::commands::plugin::PluginCommand;
use host::shadow::refresh;
use serde_json::Value;
use sqlx::Connection as _;
use tests::plugins::{Behaviour, built_module, hostile_module, with_custom_section};
use tests::{TestApp, db_test, json};

use crate::access_log_roles::deployed;
use crate::shadow::{candidate, candidate_file, install, promote, run_plugin, run_plugin_with};
use crate::support::*;

/// What the evil module answers, whatever the answers: a total of 0 and
/// no alarm, so a patient who marks item 9 (thoughts of self-harm) is
/// never flagged.
const NEVER_ALARMS: &str = r#"{"ok":{"scores":{"total":{"value":0.0}},"alarm":[],"attention":[]}}"#;

fn sha256_hex(bytes: &[u8]) -> String {
    host::domain::questionnaire::sha256_hex(bytes)
}

/// Runs `statements` on `url` (as whoever that URL logs in as), binding
/// the evil module's bytes as `$1` where a statement takes them.
async fn as_writer(url: &str, statements: &[String], module: &[u8]) {
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(url)
        .await
        .expect("the writer connects");
    for statement in statements {
        let query = sqlx::query(statement);
        let query = if statement.contains("$1") {
            query.bind(module.to_vec())
        } else {
            query
        };
        query
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    let _ = conn.close().await;
}

/// A PHQ-9 response with item 9 answered on `host`: it must be scored by
/// the folder's version `live` (item-9 alarm raised) and come out as
/// `expected`.
async fn scored_by_the_folder(host: &TestApp, external_id: &str, live: &str, expected: &Value) {
    let body = posted(host, "d1", external_id).await;
    assert_eq!(body["outcome"]["alarm"], json!(["v_9"]), "{body}");
    assert_eq!(body["outcome"]["action"], "alarm", "{body}");
    assert_eq!(&body["outcome"], expected);
    let by = host
        .sql_strings(&format!(
            "SELECT outcome_plugin_sha256 FROM responses WHERE id = {}",
            id_of(&body)
        ))
        .await;
    assert_eq!(by, vec![live.to_owned()]);
}

/// After a refresh, `host` serves PHQ-9 with the folder's version and
/// reports the candidate row as refused because of `why`.
async fn refused_on(host: &TestApp, external_id: &str, live: &str, expected: &Value, why: &str) {
    refresh(host.state.shadow()).await.expect("candidates read");
    assert!(
        host.state.trials().candidate("phq9").is_none(),
        "nothing shadows"
    );
    scored_by_the_folder(host, external_id, live, expected).await;
    let seen = candidate(host).await;
    assert_eq!(seen["state"], "refused", "{seen}");
    let error = seen["error"].as_str().unwrap_or_default();
    assert!(error.contains(why), "{error}");
    assert_eq!(
        metric(
            &metrics_text(host).await,
            "outcomes_plugin_candidates_refused"
        ),
        Some(1.0)
    );
}

/// The attack, by whoever `writer_url` logs in as, against `app` and a
/// second host on its database; then the operator's path.
async fn sql_promotions_change_no_outcome(app: &TestApp, writer_url: &str) {
    let other = app.another_host().await;
    let live = sha256_hex(&built_module("phq9"));
    let evil = hostile_module("scorer", "phq9", Behaviour::Reply(NEVER_ALARMS));
    let evil_sha = sha256_hex(&evil);
    let expected = posted(app, "d1", "before")
        .await
        .get("outcome")
        .cloned()
        .expect("an outcome");
    let live_version = app.get("/api/v1/plugins").await.body["plugins"]
        .as_array()
        .and_then(|all| all.iter().find(|p| p["folder"] == "phq9").cloned())
        .map(|p| p["serving"]["version"].clone())
        .and_then(|v| v.as_str().map(str::to_owned))
        .expect("phq9 serves");

    // 1. The module archived and promoted, row by row.
    as_writer(
        writer_url,
        &[
            format!(
                "INSERT INTO plugin_modules (sha256, name, kind, version, module, first_seen) \
                 VALUES ('{evil_sha}', 'phq9', 'scorer', '6.6.6', $1, 0)"
            ),
            format!(
                "INSERT INTO plugin_candidates (name, sha256, version, live_sha256, live_version, \
                 installed_at, promoted_at, fixtures_passed, seal) VALUES ('phq9', '{evil_sha}', \
                 '6.6.6', '{live}', '{live_version}', 0, 0, 4, '{}')",
                "0".repeat(64)
            ),
        ],
        &evil,
    )
    .await;
    for (host, id) in [(app, "sql-1"), (&other, "sql-2")] {
        refused_on(host, id, &live, &expected, "valid seal").await;
    }

    // 2. A legitimate candidate's row, sealed by the command, turned into
    //    a promotion of the evil module: the seal stays, and checks no more.
    as_writer(
        writer_url,
        &["DELETE FROM plugin_candidates".to_owned()],
        &[],
    )
    .await;
    let next = with_custom_section(&built_module("phq9"), "next");
    install(app, candidate_file(app, "next", &next, true)).await;
    refresh(other.state.shadow())
        .await
        .expect("candidates read");
    assert_eq!(candidate(&other).await["state"], "shadowing");
    as_writer(
        writer_url,
        &[format!(
            "UPDATE plugin_candidates SET sha256 = '{evil_sha}', version = '6.6.6', \
             promoted_at = installed_at WHERE name = 'phq9'"
        )],
        &[],
    )
    .await;
    for (host, id) in [(app, "copied-1"), (&other, "copied-2")] {
        refused_on(host, id, &live, &expected, "valid seal").await;
    }
    // Nor will the command promote a row it did not seal, waiting for an
    // operator to make it serve.
    as_writer(
        writer_url,
        &["UPDATE plugin_candidates SET promoted_at = NULL".to_owned()],
        &[],
    )
    .await;
    let refused = run_plugin(
        app,
        PluginCommand::Promote {
            name: "phq9".into(),
            accept_differences: true,
        },
    )
    .await
    .expect_err("an unsealed row is not promoted");
    assert!(refused.to_string().contains("valid seal"), "{refused}");

    // 3. The operator's path still switches both hosts.
    install(app, candidate_file(app, "legit", &next, true)).await;
    assert!(promote(app, false).await, "promoted");
    for (host, id) in [(app, "legit-1"), (&other, "legit-2")] {
        refresh(host.state.shadow()).await.expect("candidates read");
        assert_eq!(candidate(host).await["state"], "promoted");
        let body = posted(host, "d1", id).await;
        assert_eq!(body["outcome"], expected, "the same code scores the same");
        let by = host
            .sql_strings(&format!(
                "SELECT outcome_plugin_sha256 FROM responses WHERE id = {}",
                id_of(&body)
            ))
            .await;
        assert_eq!(by, vec![sha256_hex(&next)]);
        assert_eq!(
            metric(
                &metrics_text(host).await,
                "outcomes_plugin_candidates_refused"
            ),
            Some(0.0)
        );
    }
    other.stop().await;
}

db_test!(
    async fn a_promotion_written_with_sql_alone_changes_no_outcome_on_either_host(app) {
        let url = app.database_url.clone();
        sql_promotions_change_no_outcome(&app, &url).await;
    }
);

#[tokio::test]
async fn the_postgres_service_role_cannot_promote_a_scorer_on_either_host() {
    let (_cleanup, service, app) = deployed().await;
    sql_promotions_change_no_outcome(&app, &service).await;
}

/// A host that serves only the built modules of its plugin folder.
async fn spawn_with_allow_list(db: tests::Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        config.plugins.allow = std::fs::read_dir(tests::built_plugins())
            .expect("built plugins")
            .flatten()
            .filter_map(|folder| {
                let name = folder.file_name().to_string_lossy().into_owned();
                let module = folder.path().join(format!("{name}.wasm"));
                std::fs::read(module).ok().map(|bytes| sha256_hex(&bytes))
            })
            .collect();
    })
    .await
}

db_test!(
    async fn a_version_outside_the_allow_list_is_neither_installed_nor_served(
        app: spawn_with_allow_list,
    ) {
        let live = sha256_hex(&built_module("phq9"));
        let expected = posted(&app, "d1", "before")
            .await
            .get("outcome")
            .cloned()
            .expect("an outcome");
        let next = with_custom_section(&built_module("phq9"), "next");
        let file = candidate_file(&app, "next", &next, true);
        // With the service's allow-list, the command refuses it.
        let mut config = app.command_config();
        config.plugins.allow = app.config.plugins.allow.clone();
        let installed = run_plugin_with(
            &config,
            PluginCommand::Candidate {
                name: "phq9".into(),
                module: file.clone(),
            },
        )
        .await;
        assert!(
            !installed.expect("reported"),
            "refused: not in plugin_allow"
        );
        assert_eq!(
            app.sql("SELECT COUNT(*) FROM plugin_candidates").await,
            Some(0)
        );

        // Installed and promoted from a machine without that list (sealed
        // with the right key), it still serves nothing on this host.
        install(&app, file).await;
        let refused = run_plugin_with(
            &config,
            PluginCommand::Promote {
                name: "phq9".into(),
                accept_differences: true,
            },
        )
        .await;
        assert!(
            refused.is_err(),
            "the command with the list does not promote it"
        );
        assert!(promote(&app, true).await, "the command without it does");
        refused_on(&app, "after", &live, &expected, "not in plugin_allow").await;
    }
);
