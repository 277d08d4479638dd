//! GET /api/v1/plugins (what every plugin folder serves) and /metrics (the
//! Prometheus text exposition operators scrape): the bundled plugins
//! serve with their manifest, hash and self-tested fixtures, and plugin
//! calls are counted.

use std::collections::BTreeMap;
use std::path::Path;

use host::config::Config;
use host::plugins::module::sha256_hex;
use plugin_sdk::Manifest;
use serde_json::Value;
use tests::plugins::{built_module, copy_built_plugin, copy_definition, with_custom_section};
use tests::reqwest::Method;
use tests::{Db, TestApp, basic, create_token, db_test, json};

use crate::support::*;

/// The bundled plugins, by folder name, with the manifest their crate
/// exports.
fn bundled() -> Vec<(&'static str, Manifest)> {
    vec![
        ("alarm_summary", alarm_summary::manifest()),
        ("audit", audit::manifest()),
        ("dass21", dass21::manifest()),
        ("diary", diary::manifest()),
        ("episode_outcome", episode_outcome::manifest()),
        ("gad7", gad7::manifest()),
        ("intake", intake::manifest()),
        ("k10", k10::manifest()),
        ("mood_diary", mood_diary::manifest()),
        ("pcl5", pcl5::manifest()),
        ("phq9", phq9::manifest()),
        ("reliable_change", reliable_change::manifest()),
        ("score_series", score_series::manifest()),
        ("who5", who5::manifest()),
    ]
}

/// How many fixture files a built plugin folder holds.
fn fixture_count(folder: &Path) -> usize {
    std::fs::read_dir(folder.join("fixtures"))
        .expect("the plugin folder has fixtures")
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .count()
}

/// Checks that `text` is a Prometheus text exposition, with a real
/// parser (`promtool check metrics`).
fn assert_prometheus_text(text: &str) {
    crate::metrics_scrape::promtool_check(text);
}

db_test!(async fn the_bundled_plugins_serve_with_manifest_hash_and_fixtures(app) {
    let answer = app.get("/api/v1/plugins").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.headers["content-type"], "application/json; charset=utf-8");
    let listed = answer.body["plugins"].as_array().cloned().unwrap_or_default();
    let folders: Vec<&str> = listed.iter().filter_map(|p| p["folder"].as_str()).collect();
    let expected: Vec<&str> = bundled().iter().map(|(folder, _)| *folder).collect();
    assert_eq!(folders, expected);
    assert!(answer.body["generation"].as_u64().is_some(), "{}", answer.text);
    for ((folder, manifest), plugin) in bundled().into_iter().zip(&listed) {
        let dir = tests::built_plugins().join(folder);
        let module = std::fs::read(dir.join(format!("{folder}.wasm"))).expect("the built module");
        assert_eq!(plugin["state"], "serving", "{plugin}");
        assert_eq!(plugin["error"], Value::Null, "{plugin}");
        assert_eq!(plugin["refused_sha256"], Value::Null, "{plugin}");
        let serving = &plugin["serving"];
        assert_eq!(serving["name"], manifest.name, "{plugin}");
        assert_eq!(serving["name"], folder, "{plugin}");
        assert_eq!(serving["kind"], json!(manifest.kind), "{plugin}");
        assert_eq!(serving["version"], manifest.version, "{plugin}");
        let sha256 = serving["sha256"].as_str().unwrap_or_default();
        assert_eq!(sha256.len(), 64, "{plugin}");
        assert!(sha256.chars().all(|c| c.is_ascii_hexdigit()), "{plugin}");
        assert_eq!(sha256, sha256_hex(&module), "the hash of {folder}.wasm");
        let fixtures = fixture_count(&dir);
        assert!(fixtures > 0, "{folder} ships fixtures");
        assert_eq!(serving["fixtures_passed"], fixtures, "{plugin}");
    }
    // Scorers sit beside their questionnaires, calculators in calculators/.
    for ((folder, _), plugin) in bundled().into_iter().zip(&listed) {
        let kind = if tests::repo_root().join("questionnaires").join(folder).is_dir() { "scorer" } else { "calculator" };
        assert_eq!(plugin["serving"]["kind"], kind, "{folder}");
    }
});

db_test!(async fn the_plugin_list_needs_credentials_and_the_questionnaires_right(app) {
    let answer = app.send_as(Method::GET, "/api/v1/plugins", None, None).await;
    assert_error(&answer, 401, error("base", "unauthorized"));
    let secret = create_token(&app.state, "responses-only", "responses").await;
    let answer = app.send_as(Method::GET, "/api/v1/plugins", None, Some(&basic("responses-only", &secret))).await;
    assert_error(&answer, 403, error("base", "right_missing"));
    let secret = create_token(&app.state, "catalog", "questionnaires").await;
    let answer = app.send_as(Method::GET, "/api/v1/plugins", None, Some(&basic("catalog", &secret))).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
});

db_test!(async fn metrics_answer_prometheus_text_without_credentials_on_their_listener(app) {
    let scraped = scrape(&app).await;
    assert_eq!(scraped.status(), 200);
    assert_eq!(scraped.headers()["content-type"], "text/plain; version=0.0.4; charset=utf-8");
    let answer = tests::Answer { status: scraped.status(), headers: scraped.headers().clone(), body: Value::Null, text: scraped.text().await.expect("a body") };
    assert_prometheus_text(&answer.text);
    let serving = bundled().len();
    assert!(answer.text.lines().any(|l| l == format!("outcomes_plugins_serving {serving}")), "{}", answer.text);
    assert_eq!(metric(&answer.text, "outcomes_plugins_serving"), Some(serving as f64));
    // A family is described once it has a series: plugin calls and scoring
    // failures have none before the first call or failure.
    for name in ["outcomes_plugin_reloads_total", "outcomes_plugins_serving", "outcomes_build_info"] {
        assert!(answer.text.contains(&format!("# TYPE {name} ")), "{name} is described");
    }
    // Credentials, right or wrong, change nothing there.
    let addr = app.state.metrics_addr().expect("a metrics listener");
    let wrong = app.client.get(format!("http://{addr}/metrics")).header("authorization", basic("test", "wrong")).send().await.expect("an answer");
    assert_eq!(wrong.status(), 200);
});

db_test!(async fn metrics_count_plugin_calls_by_plugin_kind_and_result(app) {
    let scorer = r#"outcomes_plugin_calls_total{plugin="phq9",kind="scorer",result="ok"}"#;
    let calculator = r#"outcomes_plugin_calls_total{plugin="score_series",kind="calculator",result="ok"}"#;
    let before = metrics_text(&app).await;
    let scored = metric(&before, scorer).unwrap_or(0.0);
    let calculated = metric(&before, calculator).unwrap_or(0.0);
    posted(&app, "d1", "ext-1").await;
    let after = metrics_text(&app).await;
    assert_prometheus_text(&after);
    assert_eq!(metric(&after, scorer), Some(scored + 1.0), "{after}");
    posted(&app, "d1", "ext-2").await;
    let answer = app.get("/api/v1/dossiers/d1/report_calculations?calculator=score_series&filters[questionnaire_keys][]=phq9").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let after = metrics_text(&app).await;
    assert_eq!(metric(&after, scorer), Some(scored + 2.0), "{after}");
    assert_eq!(metric(&after, calculator), Some(calculated + 1.0), "{after}");
});

/// The host serving the plugin folders `folders` (folder name, built
/// plugin copied into it) from a plugin directory of its own, with the
/// PHQ-9 definition.
fn own_plugins(config: &mut Config, folders: &[(&str, &str)]) {
    let dir = config.data_dir.join("plugins");
    for (folder, plugin) in folders {
        copy_as(&dir, plugin, folder);
    }
    let questionnaires = config.data_dir.join("questionnaires");
    copy_definition(&questionnaires, "phq9");
    config.questionnaires_dir = questionnaires;
    config.protocols_dir = crate::support::test_protocols();
    config.plugins.dir = dir;
}

/// Copies built plugin `plugin` into `dir` as folder `folder`.
fn copy_as(dir: &Path, plugin: &str, folder: &str) {
    let staging = dir.with_extension("staging");
    copy_built_plugin(&staging, plugin);
    std::fs::create_dir_all(dir).expect("plugin folder");
    std::fs::rename(staging.join(plugin), dir.join(folder)).expect("moved into place");
}

/// Every folder's status at GET /api/v1/plugins, by folder name.
async fn statuses(app: &TestApp) -> BTreeMap<String, Value> {
    let answer = app.get("/api/v1/plugins").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.body["plugins"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            (
                p["folder"].as_str().unwrap_or_default().to_owned(),
                p.clone(),
            )
        })
        .collect()
}

/// Asserts that folders `a` and `b` are both refused for serving the same
/// scorer, each naming the other, and that the PHQ-9 is not scored.
async fn assert_both_refused(app: &TestApp, a: &str, b: &str) {
    let listed = statuses(app).await;
    let sha = sha256_hex(&built_module("phq9"));
    for (folder, other) in [(a, b), (b, a)] {
        let status = &listed[folder];
        assert_eq!(status["state"], "failed", "{status}");
        assert_eq!(status["serving"], Value::Null, "{status}");
        assert_eq!(status["refused_sha256"], sha, "{status}");
        let error = status["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("scorer phq9") && error.contains(&format!("folder {other}")),
            "{status}"
        );
    }
    let answer = post_phq9(app, "d1", &format!("ext-{a}-{b}"), phq9_all_answered()).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    assert_eq!(
        answer.body["outcome"]["scores"]["total"]["exception"]["code"], "not_loaded",
        "{}",
        answer.text
    );
}

async fn spawn_with_a_copy_first(db: Db) -> TestApp {
    TestApp::spawn_with(db, |c| {
        own_plugins(c, &[("phq9", "phq9"), ("a_copy", "phq9")])
    })
    .await
}

db_test!(
    async fn two_folders_serving_one_scorer_are_both_refused_in_any_order(
        app: spawn_with_a_copy_first,
    ) {
        // At start-up: the copy sorts before the original.
        assert_both_refused(&app, "a_copy", "phq9").await;
        let dir = app.state.config().plugins.dir.clone();
        std::fs::remove_dir_all(dir.join("a_copy")).expect("removed");
        app.state.reload_plugins().await;
        assert_eq!(statuses(&app).await["phq9"]["state"], "serving");
        // While serving, a copy appears before or after it (another build of
        // the same plugin, under another hash, in the second case): whichever
        // came first, both are refused; removed again, the original serves.
        for (copy, module) in [
            ("a_copy", built_module("phq9")),
            ("z_copy", with_custom_section(&built_module("phq9"), "copy")),
        ] {
            copy_as(&dir, "phq9", copy);
            std::fs::write(dir.join(copy).join("phq9.wasm"), &module).expect("module");
            app.state.reload_plugins().await;
            let listed = statuses(&app).await;
            assert_eq!(listed[copy]["state"], "failed", "{listed:?}");
            assert_eq!(listed["phq9"]["state"], "failed", "{listed:?}");
            assert!(
                listed["phq9"]["error"]
                    .as_str()
                    .unwrap_or_default()
                    .contains(copy),
                "{listed:?}"
            );
            assert!(
                listed[copy]["error"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("folder phq9"),
                "{listed:?}"
            );
            std::fs::remove_dir_all(dir.join(copy)).expect("removed");
            app.state.reload_plugins().await;
            let listed = statuses(&app).await;
            assert_eq!(listed["phq9"]["state"], "serving", "{listed:?}");
            assert_eq!(listed["phq9"]["error"], Value::Null, "{listed:?}");
            assert!(!listed.contains_key(copy), "{listed:?}");
            let scored = posted(&app, "d1", &format!("ext-{copy}")).await;
            assert_eq!(
                scored["outcome"]["scores"]["total"]["value"], 9.0,
                "{scored}"
            );
        }
    }
);

async fn spawn_allowing_gad7_only(db: Db) -> TestApp {
    TestApp::spawn_with(db, |c| {
        own_plugins(c, &[("phq9", "phq9"), ("gad7", "gad7")]);
        c.plugins.allow = vec![sha256_hex(&built_module("gad7"))];
    })
    .await
}

db_test!(
    async fn a_module_not_on_the_allow_list_is_refused_with_its_hash(
        app: spawn_allowing_gad7_only,
    ) {
        let listed = statuses(&app).await;
        let sha = sha256_hex(&built_module("phq9"));
        let phq9 = &listed["phq9"];
        assert_eq!(phq9["state"], "failed", "{phq9}");
        assert_eq!(phq9["serving"], Value::Null, "{phq9}");
        assert_eq!(phq9["refused_sha256"], sha, "{phq9}");
        assert_eq!(
            phq9["error"],
            format!("module sha256 {sha} is not in plugin_allow"),
            "{phq9}"
        );
        assert_eq!(listed["gad7"]["state"], "serving", "{listed:?}");
        // Refused before it ran: no self-test, nothing archived, nothing scores.
        let answer = post_phq9(&app, "d1", "ext-1", phq9_all_answered()).await;
        assert_eq!(answer.status, 201, "{}", answer.text);
        assert_eq!(
            answer.body["outcome"]["scores"]["total"]["exception"]["code"], "not_loaded",
            "{}",
            answer.text
        );
    }
);

async fn spawn_with_broken_folders(db: Db) -> TestApp {
    TestApp::spawn_with(db, |c| {
        own_plugins(
            c,
            &[("phq9", "phq9"), ("bad_fixture", "phq9"), ("twice", "gad7")],
        );
        let dir = c.plugins.dir.clone();
        std::fs::create_dir_all(dir.join("empty")).expect("an empty folder");
        std::fs::write(dir.join("bad_fixture/fixtures/broken.json"), "{ not json")
            .expect("fixture");
        std::fs::write(dir.join("twice/other.wasm"), built_module("gad7")).expect("module");
    })
    .await
}

db_test!(
    async fn the_plugin_list_names_folders_and_hashes_never_a_path(app: spawn_with_broken_folders) {
        let answer = app.get("/api/v1/plugins").await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        let dir = app.state.config().plugins.dir.display().to_string();
        for path in [
            dir.as_str(),
            &app.dir().display().to_string(),
            &std::env::temp_dir().display().to_string(),
        ] {
            assert!(!answer.text.contains(path), "{path} in {}", answer.text);
        }
        let listed = statuses(&app).await;
        let folders: Vec<&str> = listed.keys().map(String::as_str).collect();
        assert_eq!(folders, ["bad_fixture", "empty", "phq9", "twice"]);
        for status in listed.values() {
            let mut keys: Vec<&str> = status
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k.as_str())
                .collect();
            keys.sort_unstable();
            assert_eq!(
                keys,
                [
                    "candidate",
                    "error",
                    "folder",
                    "refused_sha256",
                    "serving",
                    "state"
                ],
                "{status}"
            );
        }
        assert_eq!(listed["phq9"]["state"], "serving");
        assert_eq!(listed["empty"]["error"], "empty: no .wasm module");
        assert_eq!(
            listed["twice"]["error"],
            "twice: 2 .wasm modules, expected one"
        );
        let bad = listed["bad_fixture"]["error"].as_str().unwrap_or_default();
        assert!(bad.contains("bad_fixture/fixtures/broken.json"), "{bad}");
    }
);
