//! Hot reload while serving (docs/design.md#hot-reload): the app watches its
//! own plugin and questionnaire folders. A new module version is swapped in
//! atomically with requests in flight, and none of them fails: a request
//! taken in before the swap is answered after it, scored by the new
//! version, and the load before and after is scored by the old and the new
//! version (each stored outcome names the module that computed it); a broken
//! version (not wasm, or failing its own fixtures) is refused and the old
//! version keeps serving; a definition change is re-imported, a broken one
//! leaves the catalog as it was. Tests wait on the host's reload
//! notifications, never on time.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use host::config::Config;
use serde_json::Value;
use tests::plugins::{
    Behaviour, built_module, copy_built_plugin, copy_definition, hostile_module, install_module,
    with_custom_section,
};
use tests::processes::wait_until;
use tests::{Db, TestApp, db_test, json, reqwest};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{metric, metrics_text, test_protocols};

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

/// A POST whose headers are sent now and whose body is sent later: the
/// host has taken the request in and waits for the rest of it.
struct HeldPost {
    stream: TcpStream,
    body: Vec<u8>,
}

impl HeldPost {
    async fn start(app: &TestApp, path: &str, body: &Value) -> HeldPost {
        let body = body.to_string().into_bytes();
        let address = app.base.trim_start_matches("http://");
        let mut stream = TcpStream::connect(address).await.expect("connects");
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: {}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            app.basic_header(),
            body.len()
        );
        stream
            .write_all(head.as_bytes())
            .await
            .expect("sends the head");
        HeldPost { stream, body }
    }

    /// Sends the body; the answer's status and JSON body.
    async fn finish(mut self) -> (u16, Value) {
        self.stream
            .write_all(&self.body)
            .await
            .expect("sends the body");
        let mut answer = Vec::new();
        self.stream
            .read_to_end(&mut answer)
            .await
            .expect("reads the answer");
        let text = String::from_utf8_lossy(&answer);
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("an HTTP answer: {text}"));
        (status, serde_json::from_str(body).unwrap_or(Value::Null))
    }
}

/// `outcomes_http_requests_in_flight` as the host reports it.
async fn in_flight(app: &TestApp) -> f64 {
    metric(&metrics_text(app).await, "outcomes_http_requests_in_flight").unwrap_or(-1.0)
}

/// One POST of the load: its external id, whether it was answered before
/// the new module was installed, whether it started after the host said
/// the new version serves, and its answer.
struct Posted {
    external_id: String,
    before_install: bool,
    after_swap: bool,
    status: reqwest::StatusCode,
    body: Value,
}

db_test!(
    async fn a_new_version_swaps_in_under_load_without_a_failed_request(app: spawn_watched) {
        let old_sha = status(&app, "phq9").await["serving"]["sha256"].clone();
        let app = Arc::new(app);

        // A request the host has taken in before the swap and answers
        // after it: its body arrives only once the new version serves.
        let idle = in_flight(&app).await;
        let held =
            HeldPost::start(&app, "/api/v1/dossiers/load/responses", &phq9_body("held")).await;
        let watcher = app.clone();
        wait_until(RELOAD_BOUND, "the host takes the held request in", || {
            let app = watcher.clone();
            async move { in_flight(&app).await == idle + 1.0 }
        })
        .await;

        let installing = Arc::new(AtomicBool::new(false));
        let swapped = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicUsize::new(0));
        let mut clients = Vec::new();
        for client in 0..4 {
            let (app, installing, swapped, stop, answered) = (
                app.clone(),
                installing.clone(),
                swapped.clone(),
                stop.clone(),
                answered.clone(),
            );
            clients.push(tokio::spawn(async move {
                let mut posts = Vec::new();
                let mut after = 0;
                for n in 0.. {
                    if stop.load(Ordering::SeqCst) && after >= 3 {
                        break;
                    }
                    let external_id = format!("c{client}-{n}");
                    let after_swap = swapped.load(Ordering::SeqCst);
                    let answer = app
                        .post("/api/v1/dossiers/load/responses", &phq9_body(&external_id))
                        .await;
                    let before_install = !installing.load(Ordering::SeqCst);
                    answered.fetch_add(1, Ordering::SeqCst);
                    after += usize::from(after_swap);
                    posts.push(Posted {
                        external_id,
                        before_install,
                        after_swap,
                        status: answer.status,
                        body: answer.body,
                    });
                }
                posts
            }));
        }
        // The old version scores some of the load before the new one comes.
        wait_until(RELOAD_BOUND, "the load is answered", || {
            let n = answered.load(Ordering::SeqCst);
            async move { n >= 8 }
        })
        .await;
        installing.store(true, Ordering::SeqCst);
        let new = with_custom_section(&built_module("phq9"), "v2");
        install_and_wait(&app, &new).await;
        swapped.store(true, Ordering::SeqCst);
        let (held_status, held_body) = held.finish().await;
        stop.store(true, Ordering::SeqCst);

        let serving = status(&app, "phq9").await;
        assert_eq!(serving["state"], "serving");
        let new_sha = serving["serving"]["sha256"].clone();
        assert_ne!(new_sha, old_sha, "the new version serves");
        assert_eq!(held_status, 201, "{held_body}");
        assert_eq!(
            held_body["outcome"]["scores"]["total"]["value"], 9.0,
            "{held_body}"
        );

        let mut posts = Vec::new();
        for client in clients {
            posts.extend(client.await.expect("client finished"));
        }
        // Which version scored each stored response.
        let scored_by: HashMap<String, Value> = app
            .sql_strings("SELECT external_id || ' ' || outcome_plugin_sha256 FROM responses")
            .await
            .into_iter()
            .filter_map(|row| {
                row.split_once(' ')
                    .map(|(id, sha)| (id.to_owned(), json!(sha)))
            })
            .collect();
        assert_eq!(
            scored_by.get("held"),
            Some(&new_sha),
            "the held request is scored by the new version"
        );
        let (mut by_old, mut by_new) = (0, 0);
        for post in posts {
            assert_eq!(post.status, 201, "{}", post.body);
            assert_eq!(
                post.body["outcome"]["scores"]["total"]["value"], 9.0,
                "{}",
                post.body
            );
            let sha = scored_by
                .get(&post.external_id)
                .unwrap_or_else(|| panic!("{} stored", post.external_id));
            assert!(
                *sha == old_sha || *sha == new_sha,
                "{}: scored by {sha}",
                post.external_id
            );
            if post.before_install {
                assert_eq!(
                    *sha, old_sha,
                    "{} was answered before the install",
                    post.external_id
                );
            }
            if post.after_swap {
                assert_eq!(*sha, new_sha, "{} started after the swap", post.external_id);
            }
            by_old += usize::from(*sha == old_sha);
            by_new += usize::from(*sha == new_sha);
        }
        assert!(
            by_old > 0 && by_new > 0,
            "both versions scored the load: {by_old} old, {by_new} new"
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
        let metrics = metrics_text(&app).await;
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
        let metrics = metrics_text(&app).await;
        assert!(
            metrics.contains("outcomes_definition_reloads_total{result=\"failed\"}"),
            "{metrics}"
        );
    }
);
