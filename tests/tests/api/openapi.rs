//! GET /api/v1/openapi.json: an OpenAPI 3.1 document that describes every
//! route the router serves, with its parameters and its error answers.
//! Which routes are served comes from the host's route table
//! ([`host::api::route_table`]), which the router is built from.

use std::collections::{BTreeMap, BTreeSet};

use reqwest::Method;
use serde_json::Value;
use tests::{TestApp, db_test};

use crate::support::*;

/// The statuses each route's handler can answer, by method and documented
/// path; the tests of this suite exercise each of them. A route the router
/// serves and this does not name fails
/// `every_operation_documents_its_error_answers`.
const ANSWERS: &[(&str, &str, &[u16])] = &[
    (
        "get",
        "/api/v1/dossiers/{dossier_id}/responses",
        &[200, 401, 403, 422],
    ),
    (
        "post",
        "/api/v1/dossiers/{dossier_id}/responses",
        &[200, 201, 400, 401, 403, 404, 408, 413, 415, 422],
    ),
    (
        "put",
        "/api/v1/dossiers/{dossier_id}/responses/{external_id}",
        &[200, 400, 401, 403, 404, 408, 413, 415, 422],
    ),
    (
        "delete",
        "/api/v1/dossiers/{dossier_id}/responses/{external_id}",
        &[204, 401, 403, 404, 422],
    ),
    (
        "get",
        "/api/v1/dossiers/{dossier_id}/responses/{id}/verification",
        &[200, 401, 403, 404, 422],
    ),
    (
        "get",
        "/api/v1/dossiers/{dossier_id}/respondents",
        &[200, 401, 403, 422],
    ),
    (
        "get",
        "/api/v1/dossiers/{dossier_id}/respondents/{id}",
        &[200, 401, 403, 404, 422],
    ),
    (
        "post",
        "/api/v1/dossiers/{dossier_id}/respondents/{id}/revoke_links",
        &[204, 401, 403, 404, 422],
    ),
    (
        "get",
        "/api/v1/dossiers/{dossier_id}/protocol_subscriptions",
        &[200, 401, 403, 422],
    ),
    (
        "post",
        "/api/v1/dossiers/{dossier_id}/protocol_subscriptions",
        &[200, 400, 401, 403, 404, 408, 413, 415, 422],
    ),
    (
        "delete",
        "/api/v1/dossiers/{dossier_id}/protocol_subscriptions/{id}",
        &[200, 401, 403, 404, 422],
    ),
    (
        "get",
        "/api/v1/dossiers/{dossier_id}/stats",
        &[200, 401, 403, 422],
    ),
    ("get", "/api/v1/stats", &[200, 401, 403, 422]),
    (
        "post",
        "/api/v1/responses/import",
        &[200, 401, 403, 415, 422],
    ),
    (
        "post",
        "/api/v1/dossiers/{dossier_id}/fill_out_requests",
        &[200, 400, 401, 403, 404, 408, 413, 415, 422],
    ),
    (
        "post",
        "/api/v1/dossiers/{dossier_id}/fill_out_sessions",
        &[200, 400, 401, 403, 404, 408, 413, 415, 422],
    ),
    (
        "delete",
        "/api/v1/dossiers/{dossier_id}/fill_out_requests/{id}",
        &[200, 401, 403, 404, 422],
    ),
    (
        "get",
        "/api/v1/dossiers/{dossier_id}/non_responses",
        &[200, 401, 403, 422],
    ),
    (
        "post",
        "/api/v1/dossiers/{dossier_id}/non_responses",
        &[201, 400, 401, 403, 404, 408, 413, 415, 422],
    ),
    (
        "get",
        "/api/v1/dossiers/{dossier_id}/non_responses/{id}",
        &[200, 401, 403, 404, 422],
    ),
    ("get", "/api/v1/protocols", &[200, 401, 403]),
    ("get", "/api/v1/protocols/{id}", &[200, 401, 403, 404]),
    ("get", "/api/v1/measurements/{id}", &[200, 401, 403, 404]),
    ("get", "/api/v1/questionnaires", &[200, 401, 403, 422]),
    (
        "get",
        "/api/v1/questionnaires/{key}",
        &[200, 401, 403, 404, 422],
    ),
    (
        "get",
        "/api/v1/dossiers/{dossier_id}/report_calculations",
        &[200, 401, 403, 404, 422],
    ),
    (
        "get",
        "/api/v1/dossiers/{dossier_id}/alarms",
        &[200, 401, 403, 422],
    ),
    ("get", "/api/v1/alarms", &[200, 401, 403, 422]),
    (
        "get",
        "/api/v1/dossiers/{dossier_id}/alarms/{id}",
        &[200, 401, 403, 404, 422],
    ),
    (
        "post",
        "/api/v1/dossiers/{dossier_id}/alarms/{id}/acknowledge",
        &[200, 400, 401, 403, 404, 408, 413, 415, 422],
    ),
    (
        "post",
        "/api/v1/dossiers/{dossier_id}/alarms/{id}/resolve",
        &[200, 400, 401, 403, 404, 408, 413, 415, 422],
    ),
    ("get", "/api/v1/plugins", &[200, 401, 403]),
    ("get", "/api/v1/openapi.json", &[200]),
    ("get", "/health", &[200, 429, 503]),
    ("get", "/metrics", &[200, 401, 403, 404, 429]),
    ("get", "/livez", &[200, 429]),
    ("get", "/readyz", &[200, 429, 503]),
    ("get", "/version", &[200, 429]),
    ("get", "/api/v1/docs", &[200]),
    ("get", "/api/v1/docs/{file}", &[200, 404]),
];

/// Routes that answer without credentials.
const OPEN: [&str; 8] = [
    "/api/v1/openapi.json",
    "/health",
    "/metrics",
    "/livez",
    "/readyz",
    "/version",
    "/api/v1/docs",
    "/api/v1/docs/{file}",
];

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

async fn document(app: &TestApp) -> Value {
    let answer = app.get("/api/v1/openapi.json").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(
        answer.headers["content-type"],
        "application/json; charset=utf-8"
    );
    answer.body
}

db_test!(async fn the_document_is_openapi_3_1(app) {
    let doc = document(&app).await;
    let version = doc["openapi"].as_str().unwrap_or_default();
    assert!(version.starts_with("3.1."), "openapi = {version:?}");
    assert!(doc["info"]["title"].as_str().is_some_and(|t| !t.is_empty()));
    assert!(doc["info"]["version"].as_str().is_some_and(|t| !t.is_empty()));
    assert!(doc["paths"].is_object());
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object(), "the error body has a schema");
    assert!(doc["components"]["schemas"]["ResponseView"].is_object(), "the Response object has a schema");
});

/// The operations the document describes: method (lower case) and path.
fn documented(doc: &Value) -> BTreeSet<(String, String)> {
    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        for method in METHODS {
            if item.get(method).is_some() {
                documented.insert((method.to_owned(), path.clone()));
            }
        }
    }
    documented
}

/// The routes the router serves, from the host's route table: method (lower
/// case) and path as documented, that is as clients call it (a GET path
/// the router matches without `.json` is documented with it when the
/// document names it so: `/api/v1/openapi.json`).
fn served(doc: &Value) -> BTreeSet<(String, String)> {
    host::api::route_table()
        .into_iter()
        .map(|(method, path)| {
            let with_json = format!("{path}.json");
            let path = if method == Method::GET && doc["paths"].get(&with_json).is_some() {
                with_json
            } else {
                path
            };
            (method.as_str().to_lowercase(), path)
        })
        .collect()
}

db_test!(async fn the_document_covers_exactly_the_routes_served(app) {
    let doc = document(&app).await;
    let served = served(&doc);
    assert!(served.len() > 20, "the route table lists the API: {served:?}");
    assert_eq!(documented(&doc), served);
});

db_test!(async fn every_served_path_answers_exactly_its_routes_methods(app) {
    // The router's own word on each path's methods: 405 with `Allow` for a
    // method it does not serve there (HEAD comes with GET).
    let mut methods: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (method, path) in host::api::route_table() {
        let entry = methods.entry(path).or_default();
        if method == Method::GET {
            entry.insert("HEAD".to_owned());
        }
        entry.insert(method.to_string());
    }
    for (path, expected) in methods {
        let path = concrete(&app, &path);
        let answer = app.send(Method::PATCH, &path, None).await;
        assert_eq!(answer.status, 405, "PATCH {path}: {}", answer.text);
        let allow: BTreeSet<String> = answer.headers["allow"]
            .to_str()
            .unwrap_or_default()
            .split(',')
            .map(|m| m.trim().to_owned())
            .collect();
        assert_eq!(allow, expected, "{path}");
    }
});

/// A concrete path for a documented route.
fn concrete(app: &TestApp, path: &str) -> String {
    let catalog = app.state.catalog();
    let id = if path.starts_with("/api/v1/protocols/") {
        catalog.protocols()[0].id.0
    } else if path.starts_with("/api/v1/measurements/") {
        catalog.protocols()[0].measurement_ids[0].0
    } else {
        1
    };
    path.replace("{dossier_id}", "d1")
        .replace("{external_id}", "nothing")
        .replace("{key}", "phq9")
        .replace("{file}", "initializer.js")
        .replace("{id}", &id.to_string())
}

fn method(name: &str) -> Method {
    Method::from_bytes(name.to_uppercase().as_bytes()).unwrap_or(Method::GET)
}

db_test!(async fn every_documented_route_is_served(app) {
    let doc = document(&app).await;
    for (name, path) in documented(&doc) {
        let (method, path) = (method(&name), concrete(&app, &path));
        let body = (method == Method::POST || method == Method::PUT).then(|| (b"{}".to_vec(), "application/json"));
        // Without a metrics bearer the main listener answers /metrics with
        // the handler's 404 (metrics_scrape.rs serves it with one).
        if path == "/metrics" && app.state.metrics_bearer().is_none() {
            continue;
        }
        let answer = app.send(method.clone(), &path, body).await;
        // Served: neither the router's 404 nor its 405.
        assert_ne!(answer.body, error("base", "not_found"), "{method} {path}");
        assert_ne!(answer.status, 405, "{method} {path}");
        assert_ne!(answer.status, 500, "{method} {path}");
    }
});

db_test!(async fn authentication_is_documented_as_it_is_enforced(app) {
    let doc = document(&app).await;
    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(schemes["basic"]["type"], "http");
    assert_eq!(schemes["basic"]["scheme"], "basic");
    assert_eq!(schemes["bearer"]["type"], "http");
    assert_eq!(schemes["bearer"]["scheme"], "bearer");
    assert_eq!(schemes["bearer"]["bearerFormat"], "JWT");
    for (name, template) in served(&doc) {
        let operation = &doc["paths"][&template][&name];
        let (method, path) = (method(&name), concrete(&app, &template));
        let body = (method == Method::POST || method == Method::PUT).then(|| (b"{}".to_vec(), "application/json"));
        let anonymous = app.send_as(method.clone(), &path, body, None).await;
        if OPEN.contains(&template.as_str()) {
            assert!(operation.get("security").is_none(), "{method} {template} needs no credentials");
            assert_ne!(anonymous.status, 401, "{method} {path}");
        } else {
            assert_eq!(operation["security"], serde_json::json!([{"basic": []}, {"bearer": []}]), "{method} {template}");
            assert!(operation["responses"]["401"]["headers"]["WWW-Authenticate"].is_object(), "{method} {template}");
            assert_eq!(anonymous.status, 401, "{method} {path}");
            assert!(anonymous.headers.get("www-authenticate").is_some(), "{method} {path}");
        }
    }
});

db_test!(async fn every_operation_documents_its_error_answers(app) {
    let doc = document(&app).await;
    let mut missing = Vec::new();
    let served = served(&doc);
    for (method, path, _) in ANSWERS {
        if !served.contains(&((*method).to_owned(), (*path).to_owned())) {
            missing.push(format!("{method} {path}: listed in ANSWERS, not served"));
        }
    }
    for (method, path) in &served {
        let Some((_, _, statuses)) = ANSWERS.iter().find(|(m, p, _)| m == method && p == path) else {
            missing.push(format!("{method} {path}: served; say in ANSWERS what it answers"));
            continue;
        };
        let operation = &doc["paths"][path][method];
        let responses = operation["responses"].as_object().cloned().unwrap_or_default();
        let documented: BTreeSet<u16> = responses.keys().filter_map(|k| k.parse().ok()).collect();
        for status in statuses.iter().filter(|s| !documented.contains(s)) {
            missing.push(format!("{method} {path} {status}"));
        }
        // An error answer says which codes it carries, in the ErrorBody
        // shape; but 414, which the HTTP server answers without a body
        // before any route sees the request.
        for (status, response) in responses
            .iter()
            .filter(|(status, _)| status.starts_with('4') && *status != "414")
        {
            if !response["description"].as_str().is_some_and(|d| d.contains("errors")) {
                missing.push(format!("{method} {path} {status}: the description names no error body"));
            }
            if response["content"]["application/json"]["schema"]["$ref"] != "#/components/schemas/ErrorBody" {
                missing.push(format!("{method} {path} {status}: schema is not ErrorBody"));
            }
        }
    }
    assert!(missing.is_empty(), "answers not documented: {missing:#?}");
});

db_test!(async fn every_path_parameter_is_documented(app) {
    let doc = document(&app).await;
    for (method, path) in served(&doc) {
        let parameters = doc["paths"][&path][&method]["parameters"].as_array().cloned().unwrap_or_default();
        let in_path: BTreeSet<String> = parameters
            .iter()
            .filter(|p| p["in"] == "path")
            .filter_map(|p| p["name"].as_str().map(str::to_owned))
            .collect();
        let named: BTreeSet<String> = path
            .split('/')
            .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .map(str::to_owned)
            .collect();
        assert_eq!(in_path, named, "{method} {path}");
    }
});

db_test!(async fn request_bodies_are_documented(app) {
    let doc = document(&app).await;
    for (method, path) in [("post", "/api/v1/dossiers/{dossier_id}/responses"), ("put", "/api/v1/dossiers/{dossier_id}/responses/{external_id}")] {
        let body = &doc["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"];
        let schema_ref = body["$ref"].as_str().unwrap_or_default();
        let name = schema_ref.rsplit('/').next().unwrap_or_default();
        let schema = &doc["components"]["schemas"][name];
        let properties = schema["properties"].as_object().cloned().unwrap_or_default();
        for field in ["questionnaire_key", "answer_data", "started_at", "filled_out_at"] {
            assert!(properties.contains_key(field), "{method} {path}: {field} in {schema_ref}");
        }
        if method == "post" {
            for field in ["external_id", "respondent", "entered_by"] {
                assert!(properties.contains_key(field), "POST: {field}");
            }
        }
    }
});
