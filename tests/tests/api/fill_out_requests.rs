//! Fill-out requests and their callbacks. Callbacks go to a real HTTP
//! server in the test, which refuses the first two calls; the scheduler is
//! driven with `scheduler::tick` at explicit times. Callbacks to loopback
//! are refused unless allowed, so the tests that deliver allow 127.0.0.0/8
//! (`--callback-allowed-networks`); the signed callbacks, the refused
//! destinations and redirects are in the second half.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::LOCATION;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::Duration;
use hmac::{Hmac, Mac};
use host::commands::{self, CreateToken};
use host::scheduler;
use serde_json::Value;
use sha2::Sha256;
use tests::reqwest::Method;
use tests::{Db, TestApp, basic, db_test, json, start_time};

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

/// The host, with the loopback callback origin allowed for every token and
/// loopback allowed as a callback destination.
async fn spawn_with_callbacks(db: Db, refuse: usize) -> (TestApp, String, Received) {
    let (url, received) = endpoint(refuse).await;
    let origin = url.trim_end_matches("/cb").to_owned();
    let app = TestApp::spawn_with(db, move |config| {
        config.allowed_origins = vec![origin];
        config.callback_allowed_networks = vec![loopback()];
    })
    .await;
    (app, url, received)
}

/// 127.0.0.0/8, where the tests' receivers listen.
pub(crate) fn loopback() -> ipnet::IpNet {
    "127.0.0.0/8".parse().expect("a network")
}

async fn tick_at(app: &TestApp, after: Duration) {
    let at = start_time() + after;
    app.clock.advance(at - app.state.now());
    scheduler::tick(app.state.scheduler(), at)
        .await
        .expect("a scheduler pass");
}

/// A callback's access row: action, status, caller, receiver, event id.
type CallbackRow<'a> = (&'a str, u16, Option<&'a str>, &'a str, Option<&'a str>);

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
            json!({"dossier_id": "d1", "event": "reminder", "fill_out_request_id": id, "url": reminder_url,
                "event_id": calls[3]["event_id"]})
        );
        // Each event has its own id, kept by the retries of `opened`.
        let event_ids: Vec<&str> = calls
            .iter()
            .map(|c| c["event_id"].as_str().unwrap_or_default())
            .collect();
        assert!(
            event_ids.iter().all(|e| e.starts_with("msg_")),
            "{event_ids:?}"
        );
        assert_eq!(event_ids[0], event_ids[1]);
        assert_eq!(event_ids[1], event_ids[2]);
        assert_ne!(event_ids[2], event_ids[3]);
        assert_ne!(event_ids[3], event_ids[4]);
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
            json!({"dossier_id": "d1", "event": "expired", "fill_out_request_id": id, "url": null,
                "event_id": last["event_id"]})
        );
        // The responses expired; 6 hours later they got their non-response.
        let list = app.get(&responses("d1")).await.body;
        assert!(list[0]["non_response_id"].is_i64(), "{list}");
        // Each attempt handed dossier data to the receiver: a row each in
        // the access log, under the token that asked, with the answer.
        let receiver = url.trim_end_matches("/cb");
        let log = app
            .state
            .store()
            .access_log(Some("d1"), None)
            .await
            .expect("log");
        let sent: Vec<CallbackRow> = log
            .iter()
            .filter(|e| e.action.starts_with("POST callback"))
            .map(|e| {
                let id = e.request_id.as_deref();
                (
                    e.action.as_str(),
                    e.status,
                    e.consumer_key.as_deref(),
                    e.client.as_str(),
                    id,
                )
            })
            .collect();
        let (test, id) = (Some(tests::TEST_KEY), |n: usize| {
            calls[n]["event_id"].as_str()
        });
        assert_eq!(
            sent,
            vec![
                ("POST callback opened", 500, test, receiver, id(0)),
                ("POST callback opened", 500, test, receiver, id(1)),
                ("POST callback opened", 204, test, receiver, id(2)),
                ("POST callback reminder", 204, test, receiver, id(3)),
                ("POST callback expired", 204, test, receiver, id(4)),
            ]
        );
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

/// One call a [`Recorder`] received: headers and body as sent.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Call {
    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_default()
    }
}

/// An answer a [`Recorder`] gives: status and `Location`.
type Planned = (StatusCode, Option<String>);

/// A receiver that keeps every call whole and answers each with the next
/// of its planned answers, then 204.
#[derive(Clone, Default)]
pub(crate) struct Recorder {
    calls: Arc<Mutex<Vec<Call>>>,
    answers: Arc<Mutex<VecDeque<Planned>>>,
}

impl Recorder {
    pub(crate) fn calls(&self) -> Vec<Call> {
        self.calls.lock().expect("calls").clone()
    }
}

async fn record(State(r): State<Recorder>, headers: HeaderMap, body: Bytes) -> Response {
    r.calls.lock().expect("calls").push(Call { headers, body });
    match r.answers.lock().expect("answers").pop_front() {
        Some((status, Some(location))) => (status, [(LOCATION, location)]).into_response(),
        Some((status, None)) => status.into_response(),
        None => StatusCode::NO_CONTENT.into_response(),
    }
}

/// A [`Recorder`] on a loopback port, serving `/cb`: its port.
pub(crate) async fn recorder(answers: Vec<(StatusCode, Option<String>)>) -> (u16, Recorder) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let port = listener.local_addr().expect("bound").port();
    (port, recorder_on(listener, answers))
}

/// A [`Recorder`] serving `/cb` on `listener`.
pub(crate) fn recorder_on(
    listener: tokio::net::TcpListener,
    answers: Vec<(StatusCode, Option<String>)>,
) -> Recorder {
    let recorder = Recorder::default();
    recorder.answers.lock().expect("answers").extend(answers);
    let app = axum::Router::new()
        .route("/cb", post(record))
        .with_state(recorder.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    recorder
}

/// Whether `call` carries a `v1` signature under `secret` (`whsec_...`), as
/// Standard Webhooks defines it: HMAC-SHA256 over `{id}.{timestamp}.{body}`
/// with the base64-decoded secret, base64 in `webhook-signature`.
pub(crate) fn signed_by(secret: &str, call: &Call) -> bool {
    let key = STANDARD
        .decode(secret.strip_prefix("whsec_").expect("a whsec_ secret"))
        .expect("base64");
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("an HMAC key");
    mac.update(call.header("webhook-id").as_bytes());
    mac.update(b".");
    mac.update(call.header("webhook-timestamp").as_bytes());
    mac.update(b".");
    mac.update(&call.body);
    let expected = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
    call.header("webhook-signature")
        .split(' ')
        .any(|signature| signature == expected)
}

/// Makes a token the way `outcomes token create` does, lets the host see
/// it, and answers what the command prints with `--json`.
async fn token_create(app: &TestApp, key: &str) -> Value {
    let args = CreateToken {
        key: key.to_owned(),
        rights: "fill_out_sessions".to_owned(),
        ips: Vec::new(),
        origins: Vec::new(),
        jwt_only: false,
        json: true,
    };
    let printed = commands::create_token(app.state.store(), app.state.secrets_key(), &args)
        .await
        .expect("the token is made");
    app.state.reload_tokens().await.expect("tokens reloaded");
    printed
}

/// POSTs a fill-out request as the token `key` with `secret`.
async fn post_as(app: &TestApp, key: &str, secret: &str, body: &Value) -> tests::Answer {
    app.send_as(
        Method::POST,
        &requests("d1"),
        Some((body.to_string().into_bytes(), "application/json")),
        Some(&basic(key, secret)),
    )
    .await
}

async fn callback_metric(app: &TestApp, series: &str) -> f64 {
    metric(&metrics_text(app).await, series).unwrap_or(0.0)
}

/// The host, with a [`Recorder`] whose origin (named `localhost`, so its
/// address is looked up when a callback is sent) every token may use, and
/// loopback allowed as a destination or not.
async fn spawn_recording(
    db: Db,
    answers: Vec<(StatusCode, Option<String>)>,
    allow_loopback: bool,
) -> (TestApp, String, Recorder) {
    let (port, receiver) = recorder(answers).await;
    let origin = format!("http://localhost:{port}");
    let allowed = origin.clone();
    let app = TestApp::spawn_with(db, move |config| {
        config.allowed_origins = vec![allowed];
        if allow_loopback {
            config.callback_allowed_networks = vec![loopback()];
        }
    })
    .await;
    (app, origin, receiver)
}

/// Loopback allowed; the receiver refuses its first call.
async fn spawn_signing(db: Db) -> (TestApp, String, Recorder) {
    spawn_recording(db, vec![(StatusCode::INTERNAL_SERVER_ERROR, None)], true).await
}

db_test!(
    async fn a_signed_callback_is_verified_by_its_receiver_and_keeps_its_id_on_retries(
        setup: spawn_signing,
    ) {
        let (app, origin, receiver) = setup;
        let printed = token_create(&app, "signer").await;
        let consumer_secret = printed["consumer_secret"]
            .as_str()
            .expect("a consumer secret");
        let webhook_secret = printed["webhook_secret"]
            .as_str()
            .expect("a webhook secret")
            .to_owned();
        assert!(webhook_secret.starts_with("whsec_"), "{printed}");
        // Kept sealed with the secrets key: a copy of the database alone
        // cannot sign callbacks.
        let stored = app
            .sql_strings("SELECT webhook_secret FROM api_tokens WHERE consumer_key = 'signer'")
            .await;
        let key = webhook_secret.trim_start_matches("whsec_");
        assert!(
            stored.len() == 1 && stored[0].starts_with("aes256gcm:") && !stored[0].contains(key),
            "{stored:?}"
        );
        let now = start_time().timestamp();
        let body = json!({"questionnaire_keys": ["phq9"], "callback_url": format!("{origin}/cb"),
            "open_from": now, "open_till": now + 3600});
        let answer = post_as(&app, "signer", consumer_secret, &body).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        let id = answer.body["id"].as_i64().expect("an id");
        // `opened` is refused once, then accepted a minute later.
        tick_at(&app, Duration::zero()).await;
        tick_at(&app, Duration::minutes(1)).await;
        let calls = receiver.calls();
        assert_eq!(calls.len(), 2);
        for (call, at) in calls.iter().zip([now, now + 60]) {
            assert!(signed_by(&webhook_secret, call), "{:?}", call.headers);
            assert_eq!(call.header("webhook-timestamp"), at.to_string());
            assert_eq!(call.header("content-type"), "application/json");
            let event_id = call.header("webhook-id");
            assert!(
                event_id.starts_with("msg_") && event_id.len() > 20,
                "{event_id}"
            );
            // The link in it lasts from when it is sent, so only its
            // respondent and generation are the same on a retry.
            let mut body = call.json();
            let url = body["url"].take();
            assert_eq!(
                body,
                json!({"dossier_id": "d1", "event": "opened", "fill_out_request_id": id,
                    "url": null, "event_id": event_id})
            );
            let link = |url: &Value| {
                let url = url.as_str().expect("a url");
                (
                    url.split("?expires=").next().unwrap_or_default().to_owned(),
                    url.split("&generation=")
                        .nth(1)
                        .map(|rest| rest.split('&').next().unwrap_or_default().to_owned()),
                )
            };
            assert_eq!(link(&url), link(&answer.body["completing_url"]));
        }
        assert_eq!(
            calls[0].header("webhook-id"),
            calls[1].header("webhook-id"),
            "a retry keeps its id"
        );
        // Another key does not verify, nor does a changed body.
        let other = format!("whsec_{}", STANDARD.encode([7u8; 32]));
        assert!(!signed_by(&other, &calls[0]));
        let mut changed = calls[0].clone();
        changed.body =
            Bytes::from(String::from_utf8_lossy(&calls[0].body).replace("opened", "expired"));
        assert!(!signed_by(&webhook_secret, &changed));
        // `outcomes token webhook-secret` makes a new secret: the next
        // callback (`expired`, an event of its own) is signed with it alone.
        let rotated =
            commands::new_webhook_secret(app.state.store(), app.state.secrets_key(), "signer")
                .await
                .expect("a new secret");
        assert_ne!(rotated, webhook_secret);
        tick_at(&app, Duration::hours(1)).await;
        let calls = receiver.calls();
        assert_eq!(calls.len(), 3);
        assert_eq!(calls[2].json()["event"], "expired");
        assert!(signed_by(&rotated, &calls[2]));
        assert!(!signed_by(&webhook_secret, &calls[2]));
        assert_ne!(calls[2].header("webhook-id"), calls[0].header("webhook-id"));
        assert_eq!(calls[2].json()["event_id"], calls[2].header("webhook-id"));
    }
);

/// Loopback not allowed; the receiver would accept every call.
async fn spawn_refusing_loopback(db: Db) -> (TestApp, String, Recorder) {
    spawn_recording(db, Vec::new(), false).await
}

db_test!(
    async fn a_callback_host_that_resolves_to_loopback_is_never_called(
        setup: spawn_refusing_loopback,
    ) {
        let (app, origin, receiver) = setup;
        let now = start_time().timestamp();
        // A name is taken when the request is made: what it resolves to
        // then says nothing about when the callback is sent.
        let body = json!({"questionnaire_keys": ["phq9"], "callback_url": format!("{origin}/cb"),
            "open_from": now, "open_till": now + 3600});
        let answer = app.post(&requests("d1"), &body).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        // When sent, `localhost` resolves to loopback only: nothing is
        // connected to, and the attempt is a refused, failed one.
        tick_at(&app, Duration::zero()).await;
        assert!(receiver.calls().is_empty());
        assert_eq!(
            callback_metric(&app, "outcomes_callbacks_refused_total").await,
            1.0
        );
        assert_eq!(
            callback_metric(&app, "outcomes_callbacks_total{result=\"retry\"}").await,
            1.0
        );
        // The attempt is recorded with the reason.
        let recorded = app
            .sql_strings("SELECT last_error FROM callbacks WHERE last_error IS NOT NULL")
            .await;
        assert_eq!(recorded.len(), 1, "{recorded:?}");
        assert!(
            recorded[0].starts_with("refused: localhost resolves to no allowed address: ")
                && recorded[0].contains("is a loopback address"),
            "{recorded:?}"
        );
        // Its retry is refused the same way.
        tick_at(&app, Duration::minutes(1)).await;
        assert!(receiver.calls().is_empty());
        assert_eq!(
            callback_metric(&app, "outcomes_callbacks_refused_total").await,
            2.0
        );
        assert_eq!(
            callback_metric(&app, "outcomes_callbacks_total{result=\"delivered\"}").await,
            0.0
        );
    }
);

/// Literal addresses of every refused kind are allowed origins here, so
/// only the address rule can refuse them; 10.1.0.0/16 is allowed.
async fn spawn_with_address_origins(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        config.allowed_origins = [
            "https://127.0.0.1",
            "http://127.0.0.1:9",
            "https://10.0.0.1",
            "https://10.1.2.3",
            "https://169.254.169.254",
            "https://[::1]",
            "https://[::ffff:7f00:1]",
            "https://0.0.0.0",
            "https://[fd00::1]",
            "https://epd.example.org",
        ]
        .map(str::to_owned)
        .to_vec();
        config.callback_allowed_networks = vec!["10.1.0.0/16".parse().expect("a network")];
    })
    .await
}

db_test!(
    async fn callback_urls_naming_non_public_addresses_are_refused(
        app: spawn_with_address_origins,
    ) {
        // Opening tomorrow: nothing here is ever called.
        let now = start_time().timestamp() + 86_400;
        let body = |url: &str| json!({"questionnaire_keys": ["phq9"], "callback_url": url, "open_from": now, "open_till": now + 3600});
        for url in [
            "https://127.0.0.1/cb",
            "http://127.0.0.1:9/cb",
            "https://10.0.0.1/cb",
            "https://169.254.169.254/latest/meta-data/",
            "https://[::1]/cb",
            "https://[::ffff:127.0.0.1]/cb",
            "https://0.0.0.0/cb",
            "https://[fd00::1]/cb",
            // 127.0.0.1 written as one number.
            "https://2130706433/cb",
        ] {
            assert_error(
                &app.post(&requests("d1"), &body(url)).await,
                422,
                error("callback_url", "not_allowed"),
            );
        }
        assert_eq!(app.get(&responses("d1")).await.body, json!([]));
        // An allowed network, and a host name, are taken.
        for url in ["https://10.1.2.3/cb", "https://epd.example.org/cb"] {
            let answer = app.post(&requests("d1"), &body(url)).await;
            assert_eq!(answer.status, 200, "{url}: {}", answer.text);
        }
    }
);

/// Loopback allowed; the receiver answers its first call with a redirect
/// to a second receiver.
async fn spawn_redirecting(db: Db) -> (TestApp, String, Recorder, Recorder) {
    let (elsewhere_port, elsewhere) = recorder(Vec::new()).await;
    let location = format!("http://127.0.0.1:{elsewhere_port}/cb");
    let (app, origin, receiver) =
        spawn_recording(db, vec![(StatusCode::FOUND, Some(location))], true).await;
    (app, origin, receiver, elsewhere)
}

db_test!(
    async fn a_redirect_answer_is_not_followed(setup: spawn_redirecting) {
        let (app, origin, receiver, elsewhere) = setup;
        let now = start_time().timestamp();
        let body = json!({"questionnaire_keys": ["phq9"], "callback_url": format!("{origin}/cb"),
            "open_from": now, "open_till": now + 3600});
        let answer = app.post(&requests("d1"), &body).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        tick_at(&app, Duration::zero()).await;
        assert_eq!(receiver.calls().len(), 1);
        assert!(elsewhere.calls().is_empty(), "the redirect was followed");
        assert_eq!(
            callback_metric(&app, "outcomes_callbacks_total{result=\"retry\"}").await,
            1.0
        );
        // The retry goes to the registered URL again, which accepts it.
        tick_at(&app, Duration::minutes(1)).await;
        assert_eq!(receiver.calls().len(), 2);
        assert!(elsewhere.calls().is_empty());
        assert_eq!(
            callback_metric(&app, "outcomes_callbacks_total{result=\"delivered\"}").await,
            1.0
        );
    }
);
