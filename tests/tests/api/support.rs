//! Helpers the API test modules share: request bodies, preparing responses
//! through the store (no public API prepares them yet), times on the wire.

use chrono::Duration;
use host::domain::answers::Answers;
use host::domain::ids::{QuestionnaireId, ResponseId};
use host::store::Preparation;
use serde_json::Value;
use tests::{Answer, Db, TestApp, json};

/// [`tests::start_time`] as Unix seconds: 2026-03-01T09:00:00Z.
pub const START_UNIX: i64 = 1_772_355_600;

/// [`tests::start_time`] as the API writes it.
pub const START_WIRE: &str = "2026-03-01T09:00:00.000+00:00";

/// The PHQ-9 question keys in definition order.
pub const PHQ9_QUESTIONS: [&str; 10] = [
    "v_1", "v_2", "v_3", "v_4", "v_5", "v_6", "v_7", "v_8", "v_9", "v_10",
];

/// The outcome of a response that is not completed
/// (docs/api/outcomes.md#outcome-of-a-response-that-is-not-completed).
pub fn empty_outcome() -> Value {
    json!({"scores": {}, "action": null, "alarm": null, "attention": null, "complete": null})
}

/// `/api/v1/dossiers/{dossier}/responses`
pub fn responses(dossier: &str) -> String {
    format!("/api/v1/dossiers/{dossier}/responses")
}

/// `/api/v1/dossiers/{dossier}/responses/{segment}`
pub fn response(dossier: &str, segment: impl std::fmt::Display) -> String {
    format!("/api/v1/dossiers/{dossier}/responses/{segment}")
}

/// Every PHQ-9 question answered with `a1`.
pub fn phq9_all_answered() -> Value {
    let mut answers = serde_json::Map::new();
    for key in PHQ9_QUESTIONS {
        answers.insert(key.to_owned(), json!("a1"));
    }
    Value::Object(answers)
}

/// POSTs a PHQ-9 response with these answers.
pub async fn post_phq9(app: &TestApp, dossier: &str, external_id: &str, answers: Value) -> Answer {
    let body =
        json!({"questionnaire_key": "phq9", "external_id": external_id, "answer_data": answers});
    app.post(&responses(dossier), &body).await
}

/// POSTs a fully answered PHQ-9 response that must be stored; its body,
/// the Response object as a GET lists it (the answer's `dropped_answers`,
/// which must be empty, taken out).
pub async fn posted(app: &TestApp, dossier: &str, external_id: &str) -> Value {
    let answer = post_phq9(app, dossier, external_id, phq9_all_answered()).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    nothing_dropped(answer.body)
}

/// The body of a POST or PUT that stored a response, as the Response object
/// a GET lists: its `dropped_answers` must be `[]` and is taken out.
pub fn nothing_dropped(mut body: Value) -> Value {
    let dropped = body
        .as_object_mut()
        .and_then(|o| o.remove("dropped_answers"));
    assert_eq!(dropped, Some(json!([])), "{body}");
    body
}

/// The stable id of a questionnaire.
pub fn questionnaire_id(app: &TestApp, key: &str) -> QuestionnaireId {
    app.state
        .catalog()
        .questionnaire(key)
        .map(|q| q.id)
        .unwrap_or_else(|| panic!("questionnaire {key} is loaded"))
}

/// Prepares one response on `key` for the dossier's patient with the window
/// `open_from`..`open_till` (offsets from the clock's now); returns its id.
pub async fn prepare(
    app: &TestApp,
    dossier: &str,
    key: &str,
    open_from: Option<Duration>,
    open_till: Option<Duration>,
) -> i64 {
    let now = app.state.now();
    let item = Preparation {
        questionnaire_id: questionnaire_id(app, key),
        open_from: open_from.map(|d| now + d),
        open_till: open_till.map(|d| now + d),
        ..Preparation::default()
    };
    prepare_items(app, dossier, vec![item]).await[0]
}

/// Prepares these responses; returns their ids.
pub async fn prepare_items(app: &TestApp, dossier: &str, items: Vec<Preparation>) -> Vec<i64> {
    let prepared = app
        .state
        .store()
        .prepare_responses(dossier.to_owned(), items, app.state.now())
        .await
        .expect("prepared");
    prepared.iter().map(|r| r.id.0).collect()
}

/// Aborts a prepared response (no answers kept).
pub async fn abort(app: &TestApp, dossier: &str, id: i64) {
    let aborted = app
        .state
        .store()
        .abort_response(
            dossier.to_owned(),
            ResponseId(id),
            Answers::default(),
            app.state.now(),
        )
        .await;
    assert!(
        aborted.expect("abort").is_some(),
        "response {id} was aborted"
    );
}

/// The `id`s of a list answer, in order.
pub fn ids(body: &Value) -> Vec<i64> {
    body.as_array()
        .map(|a| a.iter().filter_map(|r| r["id"].as_i64()).collect())
        .unwrap_or_default()
}

/// The id of one response object.
pub fn id_of(body: &Value) -> i64 {
    body["id"]
        .as_i64()
        .unwrap_or_else(|| panic!("no id in {body}"))
}

/// The `errors` body (docs/api/errors.md#error-body) for `field` and one
/// `code`.
pub fn error(field: &str, code: &str) -> Value {
    json!({"errors": {field: [code]}})
}

/// Asserts status and exact body of an error answer, and that it is JSON.
pub fn assert_error(answer: &Answer, status: u16, body: Value) {
    assert_eq!(answer.status, status, "{}", answer.text);
    assert_eq!(answer.body, body, "{}", answer.text);
    assert_eq!(
        answer.headers["content-type"],
        "application/json; charset=utf-8"
    );
}

/// The host with the bundled protocols and two questionnaires: PHQ-9 and
/// the test questionnaire `mini` (tests/fixtures/questionnaires).
pub async fn spawn_with_mini(db: Db) -> TestApp {
    TestApp::spawn_with(db, with_test_definitions).await
}

/// The test questionnaires (mini and phq9) and the test protocols, which
/// use only those.
pub fn with_test_definitions(config: &mut host::config::Config) {
    config.questionnaires_dir = tests::repo_root().join("tests/fixtures/questionnaires");
    config.protocols_dir = test_protocols();
}

/// The test protocols: a PHQ-9 diary and a weekly PHQ-9 prepared a day
/// ahead (of the PHQ-9 only, so they load with the test questionnaires).
pub fn test_protocols() -> std::path::PathBuf {
    tests::repo_root().join("tests/fixtures/protocols")
}

/// The host writing times in Europe/Amsterdam (UTC+1, summer UTC+2).
pub async fn spawn_in_amsterdam(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        config.time_zone = "Europe/Amsterdam".parse().expect("a time zone")
    })
    .await
}

/// PHQ-9 answers for items `v_1`..`v_9` from a pattern of nine
/// whitespace-separated option values, `-` for an unanswered item:
/// `"1 - 1 1 - 1 1 2 1"`. `v_10` is left out (stored as null).
pub fn phq9_items(pattern: &str) -> Value {
    let items: Vec<&str> = pattern.split_whitespace().collect();
    assert_eq!(items.len(), 9, "nine items in {pattern:?}");
    let mut answers = serde_json::Map::new();
    for (i, item) in items.into_iter().enumerate() {
        let answer = match item {
            "-" => Value::Null,
            n => json!(format!("a{n}")),
        };
        answers.insert(format!("v_{}", i + 1), answer);
    }
    Value::Object(answers)
}

/// POSTs a PHQ-9 response with these answers, filled out at `filled_out_at`
/// (Unix seconds), that must be stored; its body.
pub async fn posted_at(
    app: &TestApp,
    dossier: &str,
    external_id: &str,
    answers: Value,
    filled_out_at: i64,
) -> Value {
    let body = json!({"questionnaire_key": "phq9", "external_id": external_id,
                      "answer_data": answers, "filled_out_at": filled_out_at});
    let answer = app.post(&responses(dossier), &body).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    answer.body
}

/// The host with an empty plugin folder: no scorer or calculator serves.
pub async fn spawn_without_plugins(db: Db) -> TestApp {
    TestApp::spawn_with(db, without_plugins).await
}

/// As [`spawn_with_mini`], with an empty plugin folder.
pub async fn spawn_with_mini_without_plugins(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        with_test_definitions(config);
        without_plugins(config);
    })
    .await
}

/// Points the plugin folder at an empty folder in the app's own folder.
fn without_plugins(config: &mut host::config::Config) {
    let empty = config.data_dir.join("no-plugins");
    std::fs::create_dir_all(&empty).expect("an empty plugin folder");
    config.plugins.dir = empty;
}

/// `GET /metrics` on the host's metrics listener (`metrics_listen`), as
/// the monitoring system asks: without credentials.
pub async fn scrape(app: &TestApp) -> tests::reqwest::Response {
    let addr = app.state.metrics_addr().expect("a metrics listener");
    app.client
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .expect("the metrics listener answers")
}

/// The body of [`scrape`], which must succeed.
pub async fn metrics_text(app: &TestApp) -> String {
    let answer = scrape(app).await;
    assert_eq!(answer.status(), 200);
    answer.text().await.expect("a body")
}

/// The value of one series in a Prometheus text exposition (`series` is
/// the metric name with its labels as written), if present.
pub fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}
