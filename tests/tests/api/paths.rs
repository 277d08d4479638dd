//! Path conventions (docs/api/conventions.md#path-forms, docs/api/errors.md):
//! `dossier` and `dossiers`, the `.json` suffix, trailing slashes, blank and
//! unknown paths, wrong methods, and the headers every answer carries.

use reqwest::Method;
use serde_json::Value;
use tests::{Answer, TestApp, db_test, json};

use crate::support::*;

/// Every GET path the router serves, with the ids of a dossier d1 that has
/// one response (see [`arrange`]).
async fn get_paths(app: &TestApp) -> Vec<String> {
    let respondent = app.get("/api/v1/dossiers/d1/respondents").await.body[0]["id"].clone();
    let protocol = app.state.catalog().protocols()[0].id.0;
    let measurement = app.state.catalog().protocols()[0].measurement_ids[0].0;
    vec![
        "/api/v1/dossiers/d1/responses".to_owned(),
        "/api/v1/dossiers/d1/respondents".to_owned(),
        format!("/api/v1/dossiers/d1/respondents/{respondent}"),
        "/api/v1/protocols".to_owned(),
        format!("/api/v1/protocols/{protocol}"),
        format!("/api/v1/measurements/{measurement}"),
        "/api/v1/questionnaires".to_owned(),
        "/api/v1/questionnaires/phq9".to_owned(),
        "/api/v1/openapi".to_owned(),
        "/health".to_owned(),
    ]
}

async fn arrange(app: &TestApp) {
    posted(app, "d1", "ext-1").await;
}

/// The answer to a GET of `path`, which must be a 200.
async fn ok(app: &TestApp, path: &str) -> Answer {
    let answer = app.get(path).await;
    assert_eq!(answer.status, 200, "GET {path}: {}", answer.text);
    answer
}

db_test!(async fn dossier_endpoints_answer_under_dossier_and_dossiers(app) {
    let body = json!({"questionnaire_key": "phq9", "external_id": "ext-1", "answer_data": {"v_1": "a0"}});
    let created = app.post("/api/v1/dossier/d1/responses", &body).await;
    assert_eq!(created.status, 201, "{}", created.text);
    let listed = json!([nothing_dropped(created.body)]);
    assert_eq!(ok(&app, "/api/v1/dossier/d1/responses").await.body, listed);
    assert_eq!(ok(&app, "/api/v1/dossiers/d1/responses").await.body, listed);
    let respondents = ok(&app, "/api/v1/dossiers/d1/respondents").await.body;
    assert_eq!(ok(&app, "/api/v1/dossier/d1/respondents").await.body, respondents);
    let one = format!("/respondents/{}", respondents[0]["id"]);
    assert_eq!(ok(&app, &format!("/api/v1/dossier/d1{one}")).await.body, respondents[0]);
    assert_eq!(ok(&app, &format!("/api/v1/dossiers/d1{one}")).await.body, respondents[0]);

    let id = prepare(&app, "d1", "phq9", None, None).await;
    let put = app.put(&format!("/api/v1/dossier/d1/responses/{id}"), &json!({"questionnaire_key": "phq9", "answer_data": {"v_1": "a1"}})).await;
    assert_eq!(put.status, 200, "{}", put.text);
    assert_eq!(app.delete("/api/v1/dossier/d1/responses/ext-1").await.status, 204);
    assert_eq!(ids(&ok(&app, "/api/v1/dossiers/d1/responses").await.body), [id]);
});

db_test!(async fn every_get_answers_with_a_json_suffix(app) {
    arrange(&app).await;
    for path in get_paths(&app).await {
        let plain = ok(&app, &path).await;
        let suffixed = ok(&app, &format!("{path}.json")).await;
        assert_eq!(suffixed.body, plain.body, "{path}.json");
    }
    let filtered = ok(&app, "/api/v1/dossier/d1/responses.json?status=open").await;
    assert_eq!(filtered.body, json!([]));
});

db_test!(async fn every_path_answers_with_a_trailing_slash(app) {
    arrange(&app).await;
    for path in get_paths(&app).await {
        let plain = ok(&app, &path).await;
        assert_eq!(ok(&app, &format!("{path}/")).await.body, plain.body, "{path}/");
        assert_eq!(ok(&app, &format!("{path}.json/")).await.body, plain.body, "{path}.json/");
    }
    let body = json!({"questionnaire_key": "phq9", "external_id": "ext-2", "answer_data": {"v_1": "a0"}});
    assert_eq!(app.post("/api/v1/dossiers/d1/responses/", &body).await.status, 201);
    let id = prepare(&app, "d1", "phq9", None, None).await;
    let put = app.put(&format!("/api/v1/dossiers/d1/responses/{id}/"), &json!({"questionnaire_key": "phq9", "answer_data": {"v_1": "a1"}})).await;
    assert_eq!(put.status, 200, "{}", put.text);
    assert_eq!(app.delete("/api/v1/dossiers/d1/responses/ext-2/").await.status, 204);
    assert_eq!(app.delete("/api/v1/dossier/d1/responses/ext-1/").await.status, 204);
    assert_eq!(ids(&ok(&app, "/api/v1/dossiers/d1/responses/").await.body), [id]);
});

db_test!(async fn only_get_paths_lose_a_json_suffix(app) {
    // An external id may itself end in `.json`.
    posted(&app, "d1", "export.json").await;
    posted(&app, "d1", "export").await;
    assert_eq!(app.delete(&response("d1", "export.json")).await.status, 204);
    let left = ok(&app, &responses("d1")).await.body;
    assert_eq!(left[0]["external_id"], "export");
    assert_eq!(left.as_array().map(Vec::len), Some(1));
});

db_test!(async fn percent_encoded_dossier_ids_are_one_segment(app) {
    let body = json!({"questionnaire_key": "phq9", "external_id": "ext-1", "answer_data": {"v_1": "a0"}});
    assert_eq!(app.post("/api/v1/dossiers/a%2Fb%20c/responses", &body).await.status, 201);
    assert_eq!(ok(&app, "/api/v1/dossiers/a%2Fb%20c/responses").await.body.as_array().map(Vec::len), Some(1));
    assert_eq!(ok(&app, "/api/v1/dossiers/a/responses").await.body, json!([]));
    assert_eq!(ok(&app, "/api/v1/dossiers/a%2Fb/responses").await.body, json!([]));
    assert_eq!(app.delete("/api/v1/dossiers/a%2Fb%20c/responses/ext-1").await.status, 204);
});

db_test!(async fn blank_dossier_id_is_not_found(app) {
    let body = json!({"questionnaire_key": "phq9", "external_id": "ext-1", "answer_data": {"v_1": "a0"}});
    let not_found = error("dossier_id", "not_found");
    for prefix in ["/api/v1/dossiers/", "/api/v1/dossier/"] {
        assert_error(&app.get(&format!("{prefix}/responses")).await, 404, not_found.clone());
        assert_error(&app.get(&format!("{prefix}/responses.json")).await, 404, not_found.clone());
        assert_error(&app.post(&format!("{prefix}/responses"), &body).await, 404, not_found.clone());
        assert_error(&app.put(&format!("{prefix}/responses/ext-1"), &body).await, 404, not_found.clone());
        assert_error(&app.delete(&format!("{prefix}/responses/ext-1")).await, 404, not_found.clone());
        assert_error(&app.get(&format!("{prefix}/respondents")).await, 404, not_found.clone());
        assert_error(&app.get(&format!("{prefix}/respondents/1")).await, 404, not_found.clone());
    }
});

db_test!(async fn unknown_paths_are_a_json_404(app) {
    for path in [
        "/",
        "/api",
        "/api/v1",
        "/api/v2/dossiers/d1/responses",
        "/api/v1/dossiers/d1",
        "/api/v1/dossiers/d1/unknown",
        "/api/v1/dossiers/d1/responses/ext-1/more",
        "/api/v1/protocol/1",
        "/api/v1/questionnaires/phq9/questions",
        "/API/V1/PROTOCOLS",
    ] {
        let answer = app.get(path).await;
        assert_error(&answer, 404, error("base", "not_found"));
        assert_eq!(answer.headers["cache-control"], "no-store", "{path}");
    }
    let answer = app.post("/api/v1/nothing", &json!({})).await;
    assert_error(&answer, 404, error("base", "not_found"));
});

db_test!(async fn wrong_method_is_a_json_405(app) {
    let cases = [
        (Method::PATCH, "/api/v1/dossiers/d1/responses"),
        (Method::DELETE, "/api/v1/dossiers/d1/responses"),
        (Method::PUT, "/api/v1/dossiers/d1/responses"),
        (Method::GET, "/api/v1/dossiers/d1/responses/ext-1"),
        (Method::POST, "/api/v1/dossiers/d1/responses/ext-1"),
        (Method::PATCH, "/api/v1/dossiers/d1/responses/ext-1"),
        (Method::POST, "/api/v1/dossiers/d1/respondents"),
        (Method::DELETE, "/api/v1/dossier/d1/respondents/1"),
        (Method::POST, "/api/v1/protocols"),
        (Method::DELETE, "/api/v1/protocols/1"),
        (Method::PUT, "/api/v1/measurements/1"),
        (Method::POST, "/api/v1/questionnaires"),
        (Method::PUT, "/api/v1/questionnaires/phq9"),
        (Method::POST, "/api/v1/openapi"),
        (Method::POST, "/health"),
    ];
    for (method, path) in cases {
        let answer = app.send(method.clone(), path, Some((b"{}".to_vec(), "application/json"))).await;
        assert_eq!(answer.status, 405, "{method} {path}: {}", answer.text);
        assert_eq!(answer.body, error("base", "method_not_allowed"), "{method} {path}");
        assert_eq!(answer.headers["content-type"], "application/json; charset=utf-8", "{method} {path}");
        assert!(answer.headers.get("allow").is_some(), "{method} {path}: 405 without Allow");
    }
    let answer = app.send(Method::PATCH, "/api/v1/dossiers/d1/responses", None).await;
    let allow = answer.headers.get("allow").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let mut allowed: Vec<&str> = allow.split(',').map(str::trim).collect();
    allowed.sort_unstable();
    assert_eq!(allowed, ["GET", "HEAD", "POST"]);
});

db_test!(async fn answers_are_json_and_never_cached(app) {
    let created = post_phq9(&app, "d1", "ext-1", phq9_all_answered()).await;
    let retried = post_phq9(&app, "d1", "ext-1", phq9_all_answered()).await;
    let taken = post_phq9(&app, "d1", "ext-1", json!({"v_1": "a0"})).await;
    let mut answers = vec![("POST 201", created), ("POST 200", retried), ("POST 422", taken)];
    answers.push(("GET 422", app.get(&format!("{}?status=x", responses("d1"))).await));
    answers.push(("PUT 403", app.put(&response("d1", "ext-1"), &json!({"questionnaire_key": "phq9", "answer_data": {"v_1": "a0"}})).await));
    answers.push(("PUT 404", app.put(&response("d1", "x"), &json!({"questionnaire_key": "phq9", "answer_data": {"v_1": "a0"}})).await));
    answers.push(("POST 400", app.send(Method::POST, &responses("d1"), Some((b"{".to_vec(), "application/json"))).await));
    answers.push(("POST 415", app.send(Method::POST, &responses("d1"), Some((b"{}".to_vec(), "text/plain"))).await));
    answers.push(("404", app.get("/nothing").await));
    answers.push(("405", app.send(Method::PATCH, "/api/v1/protocols", None).await));
    for path in get_paths(&app).await {
        let answer = app.get(&path).await;
        answers.push(("GET", answer));
    }
    for (what, answer) in answers {
        assert_ne!(answer.status, 500, "{what}");
        assert_eq!(answer.headers["content-type"], "application/json; charset=utf-8", "{what}");
        assert_eq!(answer.headers["cache-control"], "no-store", "{what}");
        assert_ne!(answer.body, Value::Null, "{what}: {}", answer.text);
    }
});

db_test!(async fn requests_with_charset_are_read_and_without_content_type_refused(app) {
    let body = json!({"questionnaire_key": "phq9", "external_id": "ext-1", "answer_data": {"v_1": "a0"}}).to_string();
    let with_charset = app.send(Method::POST, &responses("d1"), Some((body.clone().into_bytes(), "application/json; charset=utf-8"))).await;
    assert_eq!(with_charset.status, 201, "{}", with_charset.text);
    let plus_json = app.send(Method::POST, &responses("d1"), Some((body.clone().into_bytes(), "application/vnd.api+json"))).await;
    assert_eq!(plus_json.status, 200, "the same response again: {}", plus_json.text);
    let body = json!({"questionnaire_key": "phq9", "external_id": "ext-2", "answer_data": {"v_1": "a0"}}).to_string();
    let request = app.client.post(app.url(&responses("d1"))).header("authorization", app.basic_header());
    let answer = request.body(body).send().await.expect("the host answers");
    assert_eq!(answer.status(), 415);
    assert_eq!(app.get(&responses("d1")).await.body.as_array().map(Vec::len), Some(1));
});
