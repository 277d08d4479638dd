//! GET /api/v1/plugins (what every plugin folder serves) and /metrics (the
//! Prometheus text exposition operators scrape): the four bundled plugins
//! serve with their manifest, hash and self-tested fixtures, and plugin
//! calls are counted.

use std::path::Path;

use host::plugins::module::sha256_hex;
use plugin_sdk::Manifest;
use serde_json::Value;
use tests::reqwest::Method;
use tests::{basic, create_token, db_test, json};

use crate::support::*;

/// The bundled plugins, by folder name, with the manifest their crate
/// exports.
fn bundled() -> Vec<(&'static str, Manifest)> {
    vec![
        ("alarm_summary", alarm_summary::manifest()),
        ("audit", audit::manifest()),
        ("dass21", dass21::manifest()),
        ("gad7", gad7::manifest()),
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

/// Checks that `text` is a Prometheus text exposition: comment lines are
/// `# HELP name text` or `# TYPE name counter|gauge`, every sample line is
/// `name{labels} value` with a number and a name whose TYPE came before.
fn assert_prometheus_text(text: &str) {
    let mut typed: Vec<&str> = Vec::new();
    for line in text.lines() {
        if let Some(comment) = line.strip_prefix("# ") {
            let mut parts = comment.splitn(3, ' ');
            let (kind, name, rest) = (parts.next(), parts.next(), parts.next());
            match kind {
                Some("HELP") => assert!(
                    name.is_some() && rest.is_some_and(|r| !r.is_empty()),
                    "{line}"
                ),
                Some("TYPE") => {
                    assert!(matches!(rest, Some("counter" | "gauge")), "{line}");
                    typed.push(name.unwrap_or_default());
                }
                _ => panic!("unexpected comment line {line:?}"),
            }
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("no value in {line:?}"));
        assert!(value.parse::<f64>().is_ok(), "{line}");
        let name = series.split('{').next().unwrap_or_default();
        assert!(
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{line}"
        );
        assert!(typed.contains(&name), "{name} has no TYPE line before it");
        if let Some(labels) = series.strip_prefix(name).filter(|l| !l.is_empty()) {
            assert!(labels.starts_with('{') && labels.ends_with('}'), "{line}");
            for pair in labels[1..labels.len() - 1].split(',') {
                let (key, value) = pair.split_once('=').unwrap_or_else(|| panic!("{line}"));
                assert!(
                    !key.is_empty() && value.starts_with('"') && value.ends_with('"'),
                    "{line}"
                );
            }
        }
    }
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

db_test!(async fn metrics_answer_prometheus_text_without_credentials(app) {
    let answer = app.send_as(Method::GET, "/metrics", None, None).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
    assert_prometheus_text(&answer.text);
    let serving = bundled().len();
    assert!(answer.text.lines().any(|l| l == format!("outcomes_plugins_serving {serving}")), "{}", answer.text);
    assert_eq!(metric(&answer.text, "outcomes_plugins_serving"), Some(serving as f64));
    for name in ["outcomes_plugin_calls_total", "outcomes_plugins_serving", "outcomes_scoring_failures_total"] {
        assert!(answer.text.contains(&format!("# TYPE {name} ")), "{name} is described");
    }
    // Credentials, right or wrong, change nothing.
    let wrong = app.send_as(Method::GET, "/metrics", None, Some(&basic("test", "wrong"))).await;
    assert_eq!(wrong.status, 200, "{}", wrong.text);
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
