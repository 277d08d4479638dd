//! Fill-out requests and their callbacks. Callbacks go to a real HTTP
//! server in the test, which refuses the first two calls; the scheduler is
//! driven with `scheduler::tick` at explicit times.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use chrono::Duration;
use host::scheduler;
use serde_json::Value;
use tests::{Db, TestApp, db_test, json, start_time};

use crate::support::*;

fn requests(dossier: &str) -> String {
    format!("/api/v1/dossiers/{dossier}/fill_out_requests")
}

/// What the EPD's callback endpoint received, and how many calls it still
/// refuses.
#[derive(Clone, Default)]
struct Received {
    calls: Arc<Mutex<Vec<Value>>>,
    refuse: Arc<Mutex<usize>>,
}

async fn callback(State(r): State<Received>, axum::Json(body): axum::Json<Value>) -> StatusCode {
    r.calls.lock().expect("calls").push(body);
    let mut refuse = r.refuse.lock().expect("refusals");
    if *refuse > 0 {
        *refuse -= 1;
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::NO_CONTENT
    }
}

/// A callback endpoint on a loopback port: its URL, and what it received.
async fn endpoint(refuse: usize) -> (String, Received) {
    let received = Received::default();
    *received.refuse.lock().expect("refusals") = refuse;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let port = listener.local_addr().expect("bound").port();
    let app = axum::Router::new()
        .route("/cb", post(callback))
        .with_state(received.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://127.0.0.1:{port}/cb"), received)
}

fn events(received: &Received) -> Vec<String> {
    received
        .calls
        .lock()
        .expect("calls")
        .iter()
        .map(|c| c["event"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The host, with the loopback callback origin allowed for every token.
async fn spawn_with_callbacks(db: Db, refuse: usize) -> (TestApp, String, Received) {
    let (url, received) = endpoint(refuse).await;
    let origin = url.trim_end_matches("/cb").to_owned();
    let app = TestApp::spawn_with(db, move |config| config.allowed_origins = vec![origin]).await;
    (app, url, received)
}

async fn tick_at(app: &TestApp, after: Duration) {
    let at = start_time() + after;
    app.clock.advance(at - app.state.now());
    scheduler::tick(&app.state, at)
        .await
        .expect("a scheduler pass");
}

async fn spawn_refusing_twice(db: Db) -> (TestApp, String, Received) {
    spawn_with_callbacks(db, 2).await
}

db_test!(
    async fn callbacks_arrive_once_each_with_retries(setup: spawn_refusing_twice) {
        let (app, url, received) = setup;
        let now = start_time().timestamp();
        let body = json!({"fill_out_request": {
            "questionnaire_keys": ["phq9", "gad7"], "respondent_type": "patient", "callback_url": url,
            "reminders": [3600, 999_999], "open_from": now, "open_till": now + 86_400,
        }});
        let answer = app.post(&requests("d1"), &body).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        let id = answer.body["id"].as_i64().expect("an id");
        let completing_url = answer.body["completing_url"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            completing_url.starts_with(&format!("{}/fill_out/respondents/", app.base)),
            "{}",
            answer.text
        );
        assert_eq!(
            answer.body,
            json!({"id": id, "respondent_type": "patient", "completing_url": completing_url})
        );
        // Two pending responses, open now, with the same link.
        let list = app.get(&responses("d1")).await.body;
        assert_eq!(list[0]["completing_url"], json!(completing_url));
        assert_eq!(list[1]["completing_url"], json!(completing_url));
        let open: Vec<(&str, &str)> = list
            .as_array()
            .expect("a list")
            .iter()
            .map(|r| {
                (
                    r["questionnaire_key"].as_str().unwrap_or_default(),
                    r["status"].as_str().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(open, [("phq9", "open"), ("gad7", "open")]);
        // `opened` is refused twice, then accepted: after 1 and 5 more minutes.
        tick_at(&app, Duration::zero()).await;
        tick_at(&app, Duration::seconds(59)).await;
        assert_eq!(events(&received), ["opened"], "not before its retry time");
        tick_at(&app, Duration::minutes(1)).await;
        tick_at(&app, Duration::minutes(6)).await;
        assert_eq!(events(&received), ["opened", "opened", "opened"]);
        // The reminder after an hour; the one past the window is not sent.
        tick_at(&app, Duration::hours(1)).await;
        tick_at(&app, Duration::hours(23)).await;
        assert_eq!(events(&received).len(), 4);
        tick_at(&app, Duration::hours(24)).await;
        tick_at(&app, Duration::hours(48)).await;
        assert_eq!(
            events(&received),
            ["opened", "opened", "opened", "reminder", "expired"]
        );
        // `opened` and `reminder` carry the respondent's link (the same
        // respondent and generation; it lasts from when it was sent).
        let calls = received.calls.lock().expect("calls").clone();
        let link_of = |url: &str| url.split("?expires=").next().unwrap_or_default().to_owned();
        let reminder_url = calls[3]["url"].as_str().expect("a url").to_owned();
        assert_eq!(link_of(&reminder_url), link_of(&completing_url));
        assert!(reminder_url.contains("&generation=0&"), "{reminder_url}");
        assert_eq!(
            calls[3],
            json!({"dossier_id": "d1", "event": "reminder", "fill_out_request_id": id, "url": reminder_url})
        );
        assert_eq!(
            link_of(calls[0]["url"].as_str().expect("a url")),
            link_of(&completing_url)
        );
        let last = received
            .calls
            .lock()
            .expect("calls")
            .last()
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            last,
            json!({"dossier_id": "d1", "event": "expired", "fill_out_request_id": id, "url": null})
        );
        // The responses expired; 6 hours later they got their non-response.
        let list = app.get(&responses("d1")).await.body;
        assert!(list[0]["non_response_id"].is_i64(), "{list}");
    }
);

async fn spawn_accepting(db: Db) -> (TestApp, String, Received) {
    spawn_with_callbacks(db, 0).await
}

db_test!(
    async fn a_withdrawn_request_takes_its_responses_and_callbacks_back(setup: spawn_accepting) {
        let (app, url, received) = setup;
        let now = start_time().timestamp();
        let body = json!({"fill_out_request": {"questionnaire_keys": ["phq9"], "callback_url": url,
        "open_from": now + 3600, "open_till": now + 7200}});
        let answer = app.post(&requests("d1"), &body).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        let path = format!("{}/{}", requests("d1"), answer.body["id"]);
        assert_error(
            &app.delete(&format!("{}/{}", requests("d2"), answer.body["id"]))
                .await,
            404,
            error("fill_out_request", "not_found"),
        );
        let withdrawn = app.delete(&path).await;
        assert_eq!(withdrawn.status, 200, "{}", withdrawn.text);
        assert_eq!(withdrawn.body["completing_url"], Value::Null);
        assert_error(
            &app.delete(&path).await,
            404,
            error("fill_out_request", "not_found"),
        );
        assert_eq!(app.get(&responses("d1")).await.body, json!([]));
        tick_at(&app, Duration::hours(3)).await;
        assert!(events(&received).is_empty(), "{:?}", events(&received));
    }
);

db_test!(
    async fn requests_are_checked(setup: spawn_accepting) {
        let (app, url, _) = setup;
        let now = start_time().timestamp();
        let post = |body: Value| {
            let app = &app;
            async move {
                app.post(&requests("d1"), &json!({"fill_out_request": body}))
                    .await
            }
        };
        assert_error(
            &post(json!({"open_till": now - 1})).await,
            422,
            json!({"errors": {"open_till": ["in_past"], "questionnaire_keys": ["blank"]}}),
        );
        let till = now + 3600;
        for (body, field, code) in [
            (
                json!({"questionnaire_keys": [], "open_till": till}),
                "questionnaire_keys",
                "blank",
            ),
            (
                json!({"questionnaire_keys": ["nope"], "open_till": till}),
                "questionnaire_keys",
                "invalid",
            ),
            (
                json!({"questionnaire_keys": "phq9", "open_till": till}),
                "questionnaire_keys",
                "invalid",
            ),
            (
                json!({"questionnaire_keys": ["phq9"]}),
                "open_till",
                "blank",
            ),
            (
                json!({"questionnaire_keys": ["phq9"], "open_till": till, "open_from": till}),
                "open_till",
                "invalid",
            ),
            (
                json!({"questionnaire_keys": ["phq9"], "open_till": till, "reminders": [0]}),
                "reminders",
                "invalid",
            ),
            (
                json!({"questionnaire_keys": ["phq9"], "open_till": till, "reminders": "1h"}),
                "reminders",
                "invalid",
            ),
            (
                json!({"questionnaire_keys": ["phq9"], "open_till": till, "respondent_type": "teacher"}),
                "respondent_type",
                "invalid",
            ),
            (
                json!({"questionnaire_keys": ["phq9"], "open_till": till, "respondent_id": "x"}),
                "respondent_id",
                "invalid",
            ),
            (
                json!({"questionnaire_keys": ["phq9"], "open_till": till, "callback_url": "http://epd.example.org/cb"}),
                "callback_url",
                "invalid",
            ),
            (
                json!({"questionnaire_keys": ["phq9"], "open_till": till, "callback_url": "https://user@epd.example.org/cb"}),
                "callback_url",
                "invalid",
            ),
            (
                json!({"questionnaire_keys": ["phq9"], "open_till": till, "callback_url": "javascript:alert(1)"}),
                "callback_url",
                "invalid",
            ),
            (
                json!({"questionnaire_keys": ["phq9"], "open_till": till, "callback_url": "https://elsewhere.example.org/cb"}),
                "callback_url",
                "not_allowed",
            ),
        ] {
            assert_error(&post(body.clone()).await, 422, error(field, code));
        }
        // Nothing was stored by any of these.
        assert_eq!(app.get(&responses("d1")).await.body, json!([]));
        // Not the dossier's patient.
        let answer = post(
            json!({"questionnaire_keys": ["phq9"], "open_till": till, "respondent_id": 999_999}),
        )
        .await;
        assert_error(&answer, 404, error("respondent_id", "not_found"));
        // Unwrapped works too, and the allowed loopback callback.
        let answer = app
            .post(
                &requests("d1"),
                &json!({"questionnaire_keys": ["phq9"], "open_till": till, "callback_url": url}),
            )
            .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
    }
);
