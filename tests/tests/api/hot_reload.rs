//! Hot reload while serving (docs/design.md#hot-reload): the app watches its
//! own plugin and questionnaire folders. A new module version is swapped in
//! atomically with requests in flight, and none of them fails; a broken
//! version (not wasm, or failing its own fixtures) is refused and the old
//! version keeps serving; a definition change is re-imported, a broken one
//! leaves the catalog as it was. Tests wait on the host's reload
//! notifications, never on time.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use host::config::Config;
use serde_json::Value;
use tests::plugins::{
    Behaviour, built_module, copy_built_plugin, copy_definition, hostile_module, install_module,
    with_custom_section,
};
use tests::{Db, TestApp, db_test, json};

use crate::support::test_protocols;

/// How long a reload may take before the test gives up (a bound, not a
/// wait: the tests continue as soon as the host says it reloaded).
const RELOAD_BOUND: Duration = Duration::from_secs(30);

fn watched(config: &mut Config) {
    let plugins = config.data_dir.join("plugins");
    let questionnaires = config.data_dir.join("questionnaires");
    copy_built_plugin(&plugins, "phq9");
    copy_definition(&questionnaires, "phq9");
    config.plugins.dir = plugins;
    config.questionnaires_dir = questionnaires;
    // Protocols that name only the PHQ-9.
    config.protocols_dir = test_protocols();
    config.watch = true;
}

async fn spawn_watched(db: Db) -> TestApp {
    let app = TestApp::spawn_with(db, watched).await;
    // Serving means `run` has started the watcher.
    assert_eq!(app.get("/health").await.status, 200);
    app
}

fn phq9_body(external_id: &str) -> Value {
    let answers: serde_json::Map<String, Value> =
        (1..=9).map(|i| (format!("v_{i}"), json!("a1"))).collect();
    json!({"external_id": external_id, "questionnaire_key": "phq9", "answer_data": answers})
}

/// The status of plugin folder `folder` at GET /api/v1/plugins.
async fn status(app: &TestApp, folder: &str) -> Value {
    let answer = app.get("/api/v1/plugins").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.body["plugins"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["folder"] == folder))
        .cloned()
        .unwrap_or(Value::Null)
}

/// Installs `bytes` as the phq9 module and returns once the host has
/// reloaded because of it.
async fn install_and_wait(app: &TestApp, bytes: &[u8]) {
    let mut generation = app.state.plugins().subscribe();
    generation.borrow_and_update();
    install_module(&app.state.config().plugins.dir, "phq9", bytes);
    tokio::time::timeout(RELOAD_BOUND, generation.changed())
        .await
        .expect("the host reloads the plugin folder")
        .expect("the host is running");
}

db_test!(
    async fn a_new_version_swaps_in_under_load_without_a_failed_request(app: spawn_watched) {
        let old_sha = status(&app, "phq9").await["serving"]["sha256"].clone();
        let app = Arc::new(app);
        let stop = Arc::new(AtomicBool::new(false));
        let mut clients = Vec::new();
        for client in 0..4 {
            let (app, stop) = (app.clone(), stop.clone());
            clients.push(tokio::spawn(async move {
                let mut answers = Vec::new();
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) || n < 5 {
                    let answer = app
                        .post(
                            "/api/v1/dossiers/load/responses",
                            &phq9_body(&format!("c{client}-{n}")),
                        )
                        .await;
                    answers.push((answer.status, answer.body));
                    n += 1;
                }
                answers
            }));
        }
        let new = with_custom_section(&built_module("phq9"), "v2");
        install_and_wait(&app, &new).await;
        stop.store(true, Ordering::SeqCst);
        let mut total = 0;
        for client in clients {
            for (status, body) in client.await.expect("client finished") {
                assert_eq!(status, 201, "{body}");
                assert_eq!(body["outcome"]["scores"]["total"]["value"], 9.0, "{body}");
                total += 1;
            }
        }
        assert!(total >= 20, "requests ran across the swap ({total})");

        let serving = status(&app, "phq9").await;
        assert_eq!(serving["state"], "serving");
        assert_ne!(
            serving["serving"]["sha256"], old_sha,
            "the new version serves"
        );
        let after = app
            .post("/api/v1/dossiers/load/responses", &phq9_body("after"))
            .await;
        assert_eq!(after.status, 201);
        let shas = app
            .sql_strings(
                "SELECT DISTINCT outcome_plugin_sha256 FROM responses WHERE external_id = 'after'",
            )
            .await;
        assert_eq!(
            shas,
            [serving["serving"]["sha256"].as_str().unwrap_or_default()]
        );
    }
);

db_test!(
    async fn a_module_that_is_not_wasm_leaves_the_old_version_serving(app: spawn_watched) {
        let before = status(&app, "phq9").await;
        install_and_wait(&app, b"\0asm but not really a module").await;
        let after = status(&app, "phq9").await;
        assert_eq!(after["state"], "failed");
        assert_eq!(
            after["serving"]["sha256"], before["serving"]["sha256"],
            "the old version serves"
        );
        let error = after["error"].as_str().unwrap_or_default();
        assert!(error.contains("not a valid WebAssembly module"), "{error}");

        let answer = app
            .post("/api/v1/dossiers/p1/responses", &phq9_body("x1"))
            .await;
        assert_eq!(answer.status, 201);
        assert_eq!(answer.body["outcome"]["scores"]["total"]["value"], 9.0);
        let metrics = app.get("/metrics").await.text;
        assert!(metrics.contains("outcomes_plugins_failed 1"), "{metrics}");
        assert!(
            metrics.contains("outcomes_plugin_reloads_total{folder=\"phq9\",result=\"failed\"} 1"),
            "{metrics}"
        );
    }
);

db_test!(
    async fn a_version_failing_its_own_fixtures_is_refused(app: spawn_watched) {
        let before = status(&app, "phq9").await;
        // A well-formed scorer named phq9 that scores nothing: its fixtures fail.
        let lazy = hostile_module(
            "scorer",
            "phq9",
            Behaviour::Reply(r#"{"ok":{"scores":{}}}"#),
        );
        install_and_wait(&app, &lazy).await;
        let after = status(&app, "phq9").await;
        assert_eq!(after["state"], "failed");
        assert_eq!(after["serving"]["sha256"], before["serving"]["sha256"]);
        let error = after["error"].as_str().unwrap_or_default();
        assert!(error.contains("self-test failed"), "{error}");

        let answer = app
            .post("/api/v1/dossiers/p1/responses", &phq9_body("x1"))
            .await;
        assert_eq!(answer.body["outcome"]["scores"]["total"]["value"], 9.0);

        // Fixing the folder makes it serve again.
        let fixed = with_custom_section(&built_module("phq9"), "fixed");
        install_and_wait(&app, &fixed).await;
        let fixed_status = status(&app, "phq9").await;
        assert_eq!(fixed_status["state"], "serving");
        assert!(fixed_status["error"].is_null());
    }
);

db_test!(
    async fn a_changed_definition_is_reimported_and_a_broken_one_ignored(app: spawn_watched) {
        let dir = app.state.config().questionnaires_dir.clone();
        let file = dir.join("phq9").join("questionnaire.toml");
        let original = std::fs::read_to_string(&file).expect("definition");

        let mut reloads = app.state.subscribe_definition_reloads();
        reloads.borrow_and_update();
        std::fs::write(
            &file,
            original.replace("name = \"PHQ-9\"", "name = \"PHQ-9 (revised)\""),
        )
        .expect("definition written");
        tokio::time::timeout(RELOAD_BOUND, reloads.changed())
            .await
            .expect("the host re-imports the definitions")
            .expect("running");
        let q = app.get("/api/v1/questionnaires/phq9").await;
        assert_eq!(q.status, 200, "{}", q.text);
        assert!(q.text.contains("PHQ-9 (revised)"), "{}", q.text);

        reloads.borrow_and_update();
        std::fs::write(&file, "key = \"phq9\"\nthis is not toml")
            .expect("broken definition written");
        tokio::time::timeout(RELOAD_BOUND, reloads.changed())
            .await
            .expect("the host tries to re-import")
            .expect("running");
        let q = app.get("/api/v1/questionnaires/phq9").await;
        assert_eq!(q.status, 200);
        assert!(
            q.text.contains("PHQ-9 (revised)"),
            "the last good definition stays: {}",
            q.text
        );
        let answer = app
            .post("/api/v1/dossiers/p1/responses", &phq9_body("x1"))
            .await;
        assert_eq!(answer.status, 201);
        let metrics = app.get("/metrics").await.text;
        assert!(
            metrics.contains("outcomes_definition_reloads_total{result=\"failed\"}"),
            "{metrics}"
        );
    }
);
