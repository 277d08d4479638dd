//! Bulk import (docs/api/import.md): `POST /api/v1/responses/import` and
//! `outcomes import FILE`. Mixed good and bad lines answered line by line
//! (the bad ones with a POST's errors, without stopping the good ones);
//! imported responses scored as a POST scores them, each with its access
//! row; a re-run stores nothing twice; strict mode writes nothing when a
//! line is bad; the right and the media type; the command killed half-way
//! (SIGKILL) and run again stores every line exactly once.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use tests::processes::{outcomes_binary, wait_until};
use tests::reqwest::Method;
use tests::{
    Answer, TestApp, basic, built_plugins, create_token, db_test, json, plugin_cache,
    plugin_cache_key, repo_root,
};

use crate::support::*;

const IMPORT: &str = "/api/v1/responses/import";
const NDJSON: &str = "application/x-ndjson";
/// How the access log names the route.
const ACTION: &str = "POST /api/v1/responses/import";

/// An import line: a PHQ-9 response of `dossier` with items from
/// `pattern` ([`phq9_items`]).
fn line(dossier: &str, external_id: &str, pattern: &str) -> Value {
    json!({"dossier_id": dossier, "questionnaire_key": "phq9", "external_id": external_id,
           "completed_at": START_UNIX - 86_400, "answer_data": phq9_items(pattern)})
}

fn body_of(lines: &[String]) -> Vec<u8> {
    let mut body = lines.join("\n");
    body.push('\n');
    body.into_bytes()
}

/// POSTs `lines` as an import; the answer and its NDJSON lines.
async fn import(app: &TestApp, query: &str, lines: &[String]) -> (Answer, Vec<Value>) {
    let answer = app
        .send(
            Method::POST,
            &format!("{IMPORT}{query}"),
            Some((body_of(lines), NDJSON)),
        )
        .await;
    let parsed = answer
        .text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    (answer, parsed)
}

async fn count_responses(app: &TestApp) -> i64 {
    app.sql("SELECT COUNT(*) FROM responses")
        .await
        .unwrap_or(-1)
}

db_test!(async fn mixed_lines_are_answered_line_by_line_and_the_good_ones_stored(app) {
    let lines = vec![
        line("p1", "h1", "1 1 1 1 1 1 1 2 0").to_string(),
        "{not json".to_owned(),
        String::new(),
        json!({"questionnaire_key": "phq9", "external_id": "h3", "answer_data": {"v_1": "a1"}}).to_string(),
        json!({"dossier_id": "p2", "questionnaire_key": "phq9", "external_id": "h4",
               "answer_data": {"v_1": "a9", "v_99": "a1"}}).to_string(),
        json!({"dossier_id": "p2", "questionnaire_key": "nope", "external_id": "h5",
               "answer_data": {"v_1": "a1"}}).to_string(),
        json!({"dossier_id": 7, "questionnaire_key": "phq9", "external_id": 42,
               "completed_at": START_UNIX + 7200, "answer_data": {"v_1": "a1"}}).to_string(),
        line("p2", "h7", "2 1 1 1 1 1 1 2 1").to_string(),
    ];
    let (answer, results) = import(&app, "", &lines).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.headers["content-type"], NDJSON);
    assert_eq!(answer.headers["cache-control"], "no-store");
    assert_eq!(results.len(), 8, "seven lines (the blank one is not answered) and the summary");
    let created = &results[0];
    assert_eq!(created["line"], 1);
    assert_eq!(created["dossier_id"], "p1");
    assert_eq!(created["external_id"], "h1");
    assert_eq!(created["status"], 201);
    assert_eq!(created["result"], "created");
    assert!(created["id"].as_i64().is_some(), "{created}");
    assert_eq!(results[1], json!({"line": 2, "dossier_id": null, "external_id": null, "status": 400,
                                  "result": "refused", "errors": {"base": ["malformed_json"]}}));
    assert_eq!(results[2], json!({"line": 4, "dossier_id": null, "external_id": "h3", "status": 422,
                                  "result": "refused", "errors": {"dossier_id": ["blank"]}}));
    assert_eq!(results[3]["line"], 5);
    assert_eq!(results[3]["status"], 422);
    assert_eq!(results[3]["errors"], json!({"answer_data": {"v_1": ["invalid_option"], "v_99": ["unknown_question"]}}));
    assert_eq!(results[4]["status"], 404);
    assert_eq!(results[4]["errors"], json!({"questionnaire_key": ["not_found"]}));
    // An integer dossier id and external id are read in their decimal
    // form; `completed_at` is named in its errors as the line named it.
    assert_eq!(results[5], json!({"line": 7, "dossier_id": "7", "external_id": "42", "status": 422,
                                  "result": "refused", "errors": {"completed_at": ["invalid"]}}));
    assert_eq!(results[6]["line"], 8);
    assert_eq!(results[6]["result"], "created");
    assert_eq!(results[7], json!({"summary": {"lines": 7, "created": 2, "existing": 0, "refused": 5}}));

    // Stored as a POST stores it: the same outcome for the same answers,
    // the time given.
    let imported = app.get(&responses("p2")).await.body;
    assert_eq!(imported.as_array().map(Vec::len), Some(1), "{imported}");
    assert_eq!(imported[0]["id"], results[6]["id"]);
    assert_eq!(imported[0]["external_id"], "h7");
    assert_eq!(imported[0]["completed_at"], "2026-02-28T09:00:00.000+00:00");
    let posted = posted_at(&app, "p3", "x", phq9_items("2 1 1 1 1 1 1 2 1"), START_UNIX - 86_400).await;
    assert_eq!(imported[0]["outcome"], posted["outcome"]);
    assert_eq!(imported[0]["outcome"]["scores"]["total"]["value"], 11.0);
    assert_eq!(imported[0]["values"], posted["values"]);
    // Scored by the serving scorer, recorded as a POST records it.
    let provenance = app
        .sql_strings("SELECT outcome_plugin || ' ' || outcome_plugin_version FROM responses ORDER BY id")
        .await;
    assert_eq!(provenance.len(), 3);
    assert!(provenance.iter().all(|p| p == &provenance[2]), "{provenance:?}");
    assert!(provenance[0].starts_with("phq9 "), "{provenance:?}");

    // Each line of a dossier has its access row, with the status its line
    // was answered with; the request none of its own.
    let log = app.state.store().access_log(None, None).await.expect("access log");
    // (Lines are stored several at a time: their rows in commit order.)
    let mut imports: Vec<(Option<&str>, u16)> = log
        .iter()
        .filter(|e| e.action == ACTION)
        .map(|e| (e.dossier.as_deref(), e.status))
        .collect();
    imports.sort_unstable();
    assert_eq!(
        imports,
        [(Some("7"), 422), (Some("p1"), 201), (Some("p2"), 201), (Some("p2"), 404), (Some("p2"), 422)]
    );
    let row = log.iter().find(|e| e.action == ACTION).expect("a row");
    assert_eq!(row.consumer_key.as_deref(), Some(tests::TEST_KEY));
    assert_eq!(row.client, "127.0.0.1");
    assert!(matches!(
        app.state.store().verify_access_log().await.expect("verified"),
        host::store::Verification::Intact { .. }
    ));
});

db_test!(async fn a_rerun_stores_nothing_twice_and_other_data_under_an_id_is_taken(app) {
    let lines: Vec<String> = (0..40)
        .map(|n| line(&format!("p{}", n % 3), &format!("h{n}"), "1 1 1 1 1 1 1 2 0").to_string())
        .collect();
    let (_, first) = import(&app, "", &lines).await;
    assert_eq!(first[40], json!({"summary": {"lines": 40, "created": 40, "existing": 0, "refused": 0}}));
    assert_eq!(count_responses(&app).await, 40);
    let (_, again) = import(&app, "", &lines).await;
    assert_eq!(again[40], json!({"summary": {"lines": 40, "created": 0, "existing": 40, "refused": 0}}));
    for (before, now) in first.iter().zip(&again).take(40) {
        assert_eq!(now["status"], 200);
        assert_eq!(now["result"], "existing");
        assert_eq!(now["id"], before["id"], "the stored response's id");
    }
    assert_eq!(count_responses(&app).await, 40);
    // As a POST: a retry is answered 200, other data under the id 422.
    let retry = app.post(&responses("p1"), &json!({"questionnaire_key": "phq9", "external_id": "h1",
        "answer_data": phq9_items("1 1 1 1 1 1 1 2 0")})).await;
    assert_eq!(retry.status, 200, "{}", retry.text);
    let other = vec![
        line("p1", "h1", "3 3 3 3 3 3 3 3 3").to_string(),
        // Twice in one import: stored once, then existing.
        line("p1", "new", "0 0 0 0 0 0 0 0 0").to_string(),
        line("p1", "new", "0 0 0 0 0 0 0 0 0").to_string(),
    ];
    let (_, results) = import(&app, "", &other).await;
    assert_eq!(results[0]["status"], 422);
    assert_eq!(results[0]["errors"], json!({"external_id": ["taken"]}));
    assert_eq!(results[1]["result"], "created");
    assert_eq!(results[2]["result"], "existing");
    assert_eq!(results[2]["id"], results[1]["id"]);
    assert_eq!(count_responses(&app).await, 41);
});

db_test!(async fn strict_mode_writes_nothing_when_a_line_is_bad(app) {
    posted(&app, "p1", "stored").await;
    let mut lines: Vec<String> = (0..30)
        .map(|n| line("p1", &format!("h{n}"), "1 1 1 1 1 1 1 2 0").to_string())
        .collect();
    lines.push(json!({"dossier_id": "p1", "questionnaire_key": "phq9", "external_id": "bad",
                      "answer_data": {"v_1": "a7"}}).to_string());
    // Taken: by the response stored before, and by an earlier line.
    lines.push(line("p1", "stored", "0 0 0 0 0 0 0 0 0").to_string());
    lines.push(line("p1", "h0", "2 2 2 2 2 2 2 2 2").to_string());
    let logged = app.state.store().access_log(None, None).await.expect("access log").len();
    let (answer, results) = import(&app, "?strict=true", &lines).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(results.len(), 4, "the bad lines and the summary: {results:?}");
    assert_eq!(results[0]["line"], 31);
    assert_eq!(results[0]["errors"], json!({"answer_data": {"v_1": ["invalid_option"]}}));
    assert_eq!(results[1]["line"], 32);
    assert_eq!(results[1]["errors"], json!({"external_id": ["taken"]}));
    assert_eq!(results[2]["line"], 33);
    assert_eq!(results[2]["errors"], json!({"external_id": ["taken"]}));
    assert_eq!(results[3], json!({"summary": {"lines": 33, "created": 0, "existing": 0, "refused": 3,
                                              "stopped": "strict"}}));
    assert_eq!(count_responses(&app).await, 1, "nothing written");
    assert_eq!(app.state.store().access_log(None, None).await.expect("access log").len(), logged);

    lines.truncate(30);
    let (_, results) = import(&app, "?strict=true", &lines).await;
    assert_eq!(results.len(), 31, "every line and the summary");
    assert_eq!(results[30], json!({"summary": {"lines": 30, "created": 30, "existing": 0, "refused": 0}}));
    assert_eq!(count_responses(&app).await, 31);
    let (answer, _) = import(&app, "?strict=maybe", &lines).await;
    assert_error(&answer, 422, error("strict", "invalid"));
});

db_test!(async fn the_import_needs_its_right_and_an_ndjson_body(app) {
    let lines = [line("p1", "h1", "1 1 1 1 1 1 1 2 0").to_string()];
    let secret = create_token(&app.state, "no-import", "responses").await;
    let refused = app
        .send_as(Method::POST, IMPORT, Some((body_of(&lines), NDJSON)), Some(&basic("no-import", &secret)))
        .await;
    assert_error(&refused, 403, error("base", "right_missing"));
    let secret = create_token(&app.state, "importer", "import").await;
    let allowed = app
        .send_as(Method::POST, IMPORT, Some((body_of(&lines), NDJSON)), Some(&basic("importer", &secret)))
        .await;
    assert_eq!(allowed.status, 200, "{}", allowed.text);
    for content_type in ["application/json", "text/plain", "application/x-www-form-urlencoded"] {
        let answer = app.send(Method::POST, IMPORT, Some((body_of(&lines), content_type))).await;
        assert_error(&answer, 415, error("base", "unsupported_media_type"));
    }
    let answer = app
        .send_as(Method::POST, IMPORT, None, Some(&app.basic_header()))
        .await;
    assert_error(&answer, 415, error("base", "unsupported_media_type"));
    assert_eq!(count_responses(&app).await, 1);
});

/// `outcomes import` with the app's database, definitions and plugins.
fn import_command(app: &TestApp, file: &std::path::Path, extra: &[&str]) -> Command {
    let config = app.command_config();
    let mut command = Command::new(outcomes_binary());
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("OUTCOMES_") || key == "RUST_LOG" {
            command.env_remove(key);
        }
    }
    command
        .arg("import")
        .arg(file)
        .args(extra)
        .arg("--database-url")
        .arg(&config.database_url)
        .arg("--data-dir")
        .arg(app.dir())
        .arg("--questionnaires-dir")
        .arg(repo_root().join("questionnaires"))
        .arg("--protocols-dir")
        .arg(repo_root().join("protocols"))
        .arg("--plugins-dir")
        .arg(built_plugins())
        .arg("--plugin-cache-dir")
        .arg(plugin_cache())
        .arg("--plugin-cache-key-file")
        .arg(plugin_cache_key())
        .stdin(Stdio::null());
    command
}

db_test!(async fn the_command_killed_half_way_and_run_again_stores_every_line_once(app) {
    const LINES: usize = 3000;
    let file = app.dir().join("history.ndjson");
    let text: String = (0..LINES)
        .map(|n| {
            let pattern: Vec<String> = (0..9).map(|q| ((n + q) % 4).to_string()).collect();
            let mut line = line(&format!("p{}", n % 97), &format!("old-{n}"), &pattern.join(" ")).to_string();
            line.push('\n');
            line
        })
        .collect();
    std::fs::write(&file, text).expect("the file");

    let mut child = import_command(&app, &file, &[])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("outcomes import starts");
    wait_until(Duration::from_secs(120), "the import stores its first lines", || async {
        count_responses(&app).await >= 200
    })
    .await;
    // SIGKILL: no drain, no goodbye.
    child.kill().expect("killed");
    let _ = child.wait();
    let stored = count_responses(&app).await;
    assert!(stored < LINES as i64, "killed half-way: {stored} of {LINES} stored");

    let out = import_command(&app, &file, &[]).output().expect("outcomes import runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(count_responses(&app).await, LINES as i64);
    assert_eq!(
        app.sql("SELECT COUNT(*) FROM (SELECT DISTINCT dossier_id, external_id FROM responses) x").await,
        Some(LINES as i64),
        "each line stored exactly once"
    );
    assert!(stderr.contains(&format!("{LINES} lines in ")), "{stderr}");
    // One access row answered 201 per stored response, whichever run
    // stored it (its row is in the commit that stored it).
    assert_eq!(
        app.sql("SELECT COUNT(*) FROM access_log WHERE action = 'outcomes import' AND status = 201").await,
        Some(LINES as i64),
    );
});

db_test!(async fn the_command_reports_bad_lines_and_strict_writes_nothing(app) {
    let file = app.dir().join("some.ndjson");
    let lines = [
        line("p1", "h1", "1 1 1 1 1 1 1 2 0").to_string(),
        "[1, 2]".to_owned(),
        line("p1", "h2", "1 1 1 1 1 1 1 2 0").to_string(),
    ];
    std::fs::write(&file, body_of(&lines)).expect("the file");
    let strict = import_command(&app, &file, &["--strict"]).output().expect("runs");
    assert!(!strict.status.success());
    let stdout = String::from_utf8_lossy(&strict.stdout);
    assert!(stdout.contains("line 2: 400"), "{stdout}");
    assert!(String::from_utf8_lossy(&strict.stderr).contains("nothing was written"));
    assert_eq!(count_responses(&app).await, 0);

    let out = import_command(&app, &file, &["--json"]).output().expect("runs");
    assert!(!out.status.success(), "a line was refused");
    let results: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(results.len(), 3, "{results:?}");
    assert_eq!(results[1]["errors"], json!({"base": ["malformed_json"]}));
    assert_eq!(count_responses(&app).await, 2);
    // The command's rows: no token, from the command line.
    let log = app.state.store().access_log(Some("p1"), None).await.expect("access log");
    assert_eq!(log.len(), 2);
    assert!(log.iter().all(|e| e.action == "outcomes import" && e.client == "command line"
        && e.consumer_key.is_none() && e.status == 201));
});
