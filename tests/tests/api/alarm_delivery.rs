//! Alarm delivery (docs/api/alarms.md#delivery): raised and escalated
//! alarms sent as signed webhooks to a real HTTP receiver in the test (on
//! loopback, allowed with `--callback-allowed-networks` as for callbacks),
//! to the endpoint of the token that stored the response or else the
//! global one. The scheduler is driven with `scheduler::tick` (and the
//! delivery between passes with `scheduler::deliver_alarms`) at explicit
//! times on the host's clock; nothing sleeps. A receiver that refuses
//! connections and then answers 503 gets every event once it is back,
//! each with one `webhook-id` over its retries; two hosts on one
//! PostgreSQL database deliver and escalate each alarm once.

use axum::http::StatusCode;
use chrono::{DateTime, Duration, Utc};
use host::commands::{self, CreateToken, TokenCommand};
use host::scheduler;
use serde_json::Value;
use tests::reqwest::Method;
use tests::{Db, TestApp, basic, db_test, json, start_time};

use crate::fill_out_requests::{Call, Recorder, loopback, recorder, recorder_on, signed_by};
use crate::support::*;

/// Item 9 answered 1, every other item 0: an alarm.
const ITEM_9_POSITIVE: &str = "0 0 0 0 0 0 0 0 1";

/// Runs a scheduler pass of `app` at `at` (the clock moved there first).
async fn tick_at(app: &TestApp, at: DateTime<Utc>) -> scheduler::TickCounts {
    app.clock.advance(at - app.state.now());
    scheduler::tick(app.state.scheduler(), at)
        .await
        .expect("a scheduler pass")
}

/// POSTs a PHQ-9 raising an alarm in `dossier` with `authorization`; the
/// alarm's id.
async fn raise(app: &TestApp, dossier: &str, external_id: &str, authorization: &str) -> i64 {
    let body = json!({"questionnaire_key": "phq9", "external_id": external_id,
        "answer_data": phq9_items(ITEM_9_POSITIVE)});
    let answer = app
        .send_as(
            Method::POST,
            &responses(dossier),
            Some((body.to_string().into_bytes(), "application/json")),
            Some(authorization),
        )
        .await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    let alarms = app.get(&format!("/api/v1/dossiers/{dossier}/alarms")).await;
    alarms
        .body
        .as_array()
        .and_then(|a| a.last())
        .expect("an alarm")["id"]
        .as_i64()
        .expect("an id")
}

/// The alarm as the API shows it now.
async fn alarm(app: &TestApp, dossier: &str, id: i64) -> Value {
    app.get(&format!("/api/v1/dossiers/{dossier}/alarms/{id}"))
        .await
        .body
}

/// The access-log rows of `dossier` about deliveries: action, status,
/// caller, client and request id.
async fn delivery_log(
    app: &TestApp,
    dossier: &str,
) -> Vec<(String, u16, Option<String>, String, Option<String>)> {
    app.state
        .store()
        .access_log(Some(dossier), None)
        .await
        .expect("the access log")
        .into_iter()
        .filter(|e| e.action.contains(" deliver"))
        .map(|e| (e.action, e.status, e.consumer_key, e.client, e.request_id))
        .collect()
}

async fn deliveries_metric(app: &TestApp, result: &str) -> f64 {
    let series = format!("outcomes_alarm_deliveries_total{{result=\"{result}\"}}");
    metric(&metrics_text(app).await, &series).unwrap_or(0.0)
}

/// The host with loopback allowed as a destination and, given one, a
/// global alarm endpoint.
async fn spawn_delivering(db: Db, global: Option<String>) -> TestApp {
    TestApp::spawn_with(db, move |config| {
        config.callback_allowed_networks = vec![loopback()];
        config.alarms.webhook_url = global;
    })
    .await
}

/// Loopback allowed, no global endpoint.
async fn spawn_without_global(db: Db) -> TestApp {
    spawn_delivering(db, None).await
}

/// Makes a token with the rights `responses,alarms` as `outcomes token
/// create` does; what it prints with `--json`.
async fn token_create(app: &TestApp, key: &str) -> Value {
    let args = CreateToken {
        key: key.to_owned(),
        rights: "responses,alarms".to_owned(),
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

/// Checks what every delivery carries: JSON, a timestamp of when it was
/// sent, the event id in the body as in `webhook-id`.
fn check_call(call: &Call, event: &str, sent_at: DateTime<Utc>) {
    assert_eq!(call.header("content-type"), "application/json");
    assert_eq!(
        call.header("webhook-timestamp"),
        sent_at.timestamp().to_string()
    );
    let id = call.header("webhook-id");
    assert!(id.starts_with("msg_") && id.len() == 36, "{id}");
    let body = call.json();
    assert_eq!(body["type"], event, "{body}");
    assert_eq!(body["event_id"], id);
}

db_test!(
    async fn a_raised_alarm_is_delivered_once_to_the_token_endpoint_signed_with_its_key(
        app: spawn_without_global,
    ) {
        let (port, receiver) = recorder(Vec::new()).await;
        let url = format!("http://127.0.0.1:{port}/cb");
        let printed = token_create(&app, "epd").await;
        let secret = printed["consumer_secret"]
            .as_str()
            .expect("a secret")
            .to_owned();
        let webhook_secret = printed["webhook_secret"]
            .as_str()
            .expect("a key")
            .to_owned();
        assert!(
            app.state
                .store()
                .set_alarm_webhook_url("epd".into(), Some(url))
                .await
                .expect("set")
        );

        let id = raise(&app, "d1", "r1", &basic("epd", &secret)).await;
        // Between passes: delivered as soon as the host looks (every second
        // while serving), once.
        let now = app.state.now();
        assert_eq!(
            scheduler::deliver_alarms(app.state.scheduler(), now)
                .await
                .expect("delivered"),
            1
        );
        assert_eq!(
            scheduler::deliver_alarms(app.state.scheduler(), now)
                .await
                .expect("nothing due"),
            0
        );
        assert_eq!(
            tick_at(&app, now + Duration::minutes(1))
                .await
                .alarms_delivered,
            0
        );
        let calls = receiver.calls();
        assert_eq!(calls.len(), 1);
        let call = &calls[0];
        check_call(call, "alarm.raised", now);
        assert!(signed_by(&webhook_secret, call), "{:?}", call.headers);
        // The alarm as the API shows it, when the step was taken.
        let body = call.json();
        assert_eq!(body["data"], alarm(&app, "d1", id).await);
        assert_eq!(body["data"]["state"], "open");
        assert_eq!(body["timestamp"], START_WIRE);
        // An alarm raised by another token (no endpoint, no global one) is
        // not delivered anywhere.
        raise(&app, "d2", "r1", &app.basic_header()).await;
        assert_eq!(
            tick_at(&app, now + Duration::minutes(2))
                .await
                .alarms_delivered,
            0
        );
        assert_eq!(receiver.calls().len(), 1);
        // In the dossier's access log: delivered, to whom, by whose token.
        assert_eq!(
            delivery_log(&app, "d1").await,
            [(
                format!("alarm {id} delivered (alarm.raised)"),
                204,
                Some("epd".to_owned()),
                format!("http://127.0.0.1:{port}"),
                Some(call.header("webhook-id").to_owned()),
            )]
        );
        assert_eq!(deliveries_metric(&app, "delivered").await, 1.0);
    }
);

/// Loopback allowed; a receiver up, answering `answers` then 204, as the
/// global endpoint: the host, the receiver and its port.
async fn spawn_global_answering(db: Db, answers: Vec<StatusCode>) -> (TestApp, Recorder, u16) {
    let (port, receiver) = recorder(answers.into_iter().map(|s| (s, None)).collect()).await;
    let app = spawn_delivering(db, Some(format!("http://127.0.0.1:{port}/cb"))).await;
    (app, receiver, port)
}

async fn spawn_global(db: Db) -> (TestApp, Recorder, u16) {
    spawn_global_answering(db, Vec::new()).await
}

/// `outcomes alarm webhook-secret`: the key it prints.
async fn global_key(app: &TestApp) -> String {
    commands::new_alarm_webhook_secret(app.state.store(), app.state.secrets_key())
        .await
        .expect("a key")
}

db_test!(
    async fn alarms_go_to_the_global_endpoint_signed_with_the_key_made_for_it(setup: spawn_global) {
        let (app, receiver, port) = setup;
        let id = raise(&app, "d1", "r1", &app.basic_header()).await;
        // No key yet: not sent unsigned, but failed, to be tried again.
        let t0 = start_time();
        tick_at(&app, t0).await;
        assert!(receiver.calls().is_empty());
        assert_eq!(deliveries_metric(&app, "retry").await, 1.0);
        let key = global_key(&app).await;
        assert!(key.starts_with("whsec_"), "{key}");
        // Kept sealed with the secrets key, as tokens' keys are.
        let stored = app
            .sql_strings("SELECT value FROM host_secrets WHERE name = 'alarm_webhook_secret'")
            .await;
        assert!(
            stored.len() == 1
                && stored[0].starts_with("aes256gcm:")
                && !stored[0].contains(key.trim_start_matches("whsec_")),
            "{stored:?}"
        );
        // Not before the backoff's 10 seconds; then delivered, signed.
        assert_eq!(
            tick_at(&app, t0 + Duration::seconds(9))
                .await
                .alarms_delivered,
            0
        );
        assert_eq!(
            tick_at(&app, t0 + Duration::seconds(10))
                .await
                .alarms_delivered,
            1
        );
        let calls = receiver.calls();
        assert_eq!(calls.len(), 1);
        check_call(&calls[0], "alarm.raised", t0 + Duration::seconds(10));
        assert!(signed_by(&key, &calls[0]));
        assert_eq!(calls[0].json()["data"]["id"], json!(id));
        // Both attempts logged, with one event id; no token's.
        let event_id = Some(calls[0].header("webhook-id").to_owned());
        let receiver_origin = format!("http://127.0.0.1:{port}");
        assert_eq!(
            delivery_log(&app, "d1").await,
            [
                (
                    format!("alarm {id} delivery failed (alarm.raised)"),
                    0,
                    None,
                    receiver_origin.clone(),
                    event_id.clone()
                ),
                (
                    format!("alarm {id} delivered (alarm.raised)"),
                    204,
                    None,
                    receiver_origin,
                    event_id
                ),
            ]
        );
    }
);

/// The global endpoint on a port where nothing listens yet: the host and
/// the port.
async fn spawn_global_down(db: Db) -> (TestApp, u16) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let port = listener.local_addr().expect("bound").port();
    drop(listener);
    let app = spawn_delivering(db, Some(format!("http://127.0.0.1:{port}/cb"))).await;
    (app, port)
}

db_test!(
    async fn after_an_outage_every_event_is_delivered_with_one_id_over_its_retries(
        setup: spawn_global_down,
    ) {
        let (app, port) = setup;
        let key = global_key(&app).await;
        let t0 = start_time();
        // Two alarms while the receiver refuses connections for ten
        // minutes; the scheduler passes every 30 seconds.
        let first = raise(&app, "d1", "r1", &app.basic_header()).await;
        let mut at = t0;
        let mut second = None;
        let back = t0 + Duration::minutes(10);
        while at < back {
            tick_at(&app, at).await;
            if second.is_none() && at >= t0 + Duration::minutes(3) {
                second = Some(raise(&app, "d2", "r1", &app.basic_header()).await);
            }
            at += Duration::seconds(30);
        }
        let second = second.expect("raised");
        assert_eq!(deliveries_metric(&app, "delivered").await, 0.0);
        // Back, answering 503 once, then taking everything.
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("the port again");
        let receiver = recorder_on(listener, vec![(StatusCode::SERVICE_UNAVAILABLE, None)]);
        while at <= t0 + Duration::hours(1) {
            tick_at(&app, at).await;
            at += Duration::seconds(30);
        }
        let calls = receiver.calls();
        assert_eq!(calls.len(), 3, "one refused with 503, then each alarm once");
        // The first call after the outage came within ten minutes of it.
        let first_call: i64 = calls[0]
            .header("webhook-timestamp")
            .parse()
            .expect("a time");
        assert!(first_call - back.timestamp() <= 600, "{first_call}");
        for (dossier, id) in [("d1", first), ("d2", second)] {
            let log = delivery_log(&app, dossier).await;
            let (last, earlier) = log.split_last().expect("attempts");
            // One event id over every attempt; the last one delivered, the
            // others failed (no answer, or the 503).
            assert_eq!(last.0, format!("alarm {id} delivered (alarm.raised)"));
            assert_eq!(last.1, 204);
            assert!(!earlier.is_empty(), "{log:?}");
            for row in earlier {
                assert_eq!(row.0, format!("alarm {id} delivery failed (alarm.raised)"));
                assert!(row.1 == 0 || row.1 == 503, "{row:?}");
                assert_eq!(row.4, last.4, "the same webhook-id on every attempt");
            }
            let sent: Vec<&Call> = calls
                .iter()
                .filter(|c| Some(c.header("webhook-id")) == last.4.as_deref())
                .collect();
            assert!(!sent.is_empty());
            for call in sent {
                assert!(signed_by(&key, call));
                assert_eq!(call.json()["data"]["id"], json!(id));
            }
        }
        assert_ne!(
            delivery_log(&app, "d1").await[0].4,
            delivery_log(&app, "d2").await[0].4
        );
        assert_eq!(deliveries_metric(&app, "delivered").await, 2.0);
        assert_eq!(deliveries_metric(&app, "given_up").await, 0.0);
    }
);

/// The global endpoint up, and a second receiver for a token's own.
async fn spawn_two_receivers(db: Db) -> (TestApp, Recorder, Recorder, String) {
    let (app, global, _) = spawn_global(db).await;
    let (port, own) = recorder(Vec::new()).await;
    (app, global, own, format!("http://127.0.0.1:{port}/cb"))
}

db_test!(
    async fn an_escalation_is_delivered_where_its_alarm_was(setup: spawn_two_receivers) {
        let (app, global, own, own_url) = setup;
        let key = global_key(&app).await;
        let printed = token_create(&app, "epd").await;
        let secret = printed["consumer_secret"]
            .as_str()
            .expect("a secret")
            .to_owned();
        let token_key = printed["webhook_secret"]
            .as_str()
            .expect("a key")
            .to_owned();
        // As `outcomes token alarm-webhook epd URL` sets it; a URL that is
        // not https (nor loopback) is refused.
        let set = |url: &str| {
            let command = TokenCommand::AlarmWebhook {
                key: "epd".into(),
                url: Some(url.to_owned()),
                none: false,
            };
            commands::token(
                app.state.store(),
                app.state.secrets_key(),
                command,
                chrono_tz::UTC,
            )
        };
        assert!(set("http://epd.example.org/alarms").await.is_err());
        set(&own_url).await.expect("set");
        let by_token = raise(&app, "d1", "r1", &basic("epd", &secret)).await;
        let by_test = raise(&app, "d2", "r1", &app.basic_header()).await;
        let seen = raise(&app, "d3", "r1", &app.basic_header()).await;
        let t0 = start_time();
        assert_eq!(tick_at(&app, t0).await.alarms_delivered, 3);
        let ack = app
            .post(
                &format!("/api/v1/dossiers/d3/alarms/{seen}/acknowledge"),
                &json!({"professional": "dr. A"}),
            )
            .await;
        assert_eq!(ack.status, 200, "{}", ack.text);
        // At the deadline: both unacknowledged alarms escalated and their
        // escalations delivered in the same pass; the acknowledged one not.
        let deadline = t0 + Duration::hours(4);
        let counts = tick_at(&app, deadline).await;
        assert_eq!((counts.alarms_escalated, counts.alarms_delivered), (2, 2));
        assert_eq!(
            tick_at(&app, deadline + Duration::minutes(1))
                .await
                .alarms_delivered,
            0
        );
        for (receiver, dossier, id, key) in [
            (&own, "d1", by_token, &token_key),
            (&global, "d2", by_test, &key),
        ] {
            let calls = receiver.calls();
            let escalated = calls.last().expect("a call");
            check_call(escalated, "alarm.escalated", deadline);
            assert!(signed_by(key, escalated));
            let data = &escalated.json()["data"];
            assert_eq!(data["id"], json!(id));
            assert_eq!(data["state"], "escalated");
            assert_eq!(data["escalated_at"], "2026-03-01T13:00:00.000+00:00");
            assert_eq!(data, &alarm(&app, dossier, id).await);
            assert_eq!(
                escalated.json()["timestamp"],
                "2026-03-01T13:00:00.000+00:00"
            );
            assert_ne!(
                escalated.header("webhook-id"),
                calls[0].header("webhook-id")
            );
            assert_eq!(
                delivery_log(&app, dossier)
                    .await
                    .last()
                    .map(|r| (r.0.clone(), r.1)),
                Some((format!("alarm {id} delivered (alarm.escalated)"), 204))
            );
        }
        assert_eq!(own.calls().len(), 2);
        assert_eq!(
            global.calls().len(),
            3,
            "d2 raised and escalated, d3 raised"
        );
    }
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_deliver_each_alarm_once_and_escalate_it_once() {
    let (app, receiver, _) = spawn_global(Db::Postgres).await;
    let other = app.another_host().await;
    let key = global_key(&app).await;
    let alarms = 12;
    for n in 0..alarms {
        let host = if n % 2 == 0 { &app } else { &other };
        raise(host, &format!("d{n}"), "r1", &host.basic_header()).await;
    }
    // Both hosts at once, passes and the delivery between passes alike.
    let t0 = start_time();
    let (x, y, a, b) = tokio::join!(
        scheduler::tick(app.state.scheduler(), t0),
        scheduler::tick(other.state.scheduler(), t0),
        scheduler::deliver_alarms(app.state.scheduler(), t0),
        scheduler::deliver_alarms(other.state.scheduler(), t0),
    );
    let delivered = x.expect("a pass").alarms_delivered
        + y.expect("a pass").alarms_delivered
        + a.expect("delivered")
        + b.expect("delivered");
    assert_eq!(delivered, alarms);
    let deadline = t0 + Duration::hours(4);
    app.clock.advance(deadline - app.state.now());
    let (x, y) = tokio::join!(
        scheduler::tick(app.state.scheduler(), deadline),
        scheduler::tick(other.state.scheduler(), deadline),
    );
    let (x, y) = (x.expect("a pass"), y.expect("a pass"));
    assert_eq!(x.alarms_escalated + y.alarms_escalated, alarms);
    assert_eq!(x.alarms_delivered + y.alarms_delivered, alarms);
    let calls = receiver.calls();
    assert_eq!(calls.len(), 2 * alarms);
    let mut ids: Vec<&str> = calls.iter().map(|c| c.header("webhook-id")).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 2 * alarms, "each event sent once");
    for event in ["alarm.raised", "alarm.escalated"] {
        let mut alarm_ids: Vec<i64> = calls
            .iter()
            .filter(|c| c.json()["type"] == event)
            .map(|c| c.json()["data"]["id"].as_i64().expect("an id"))
            .collect();
        alarm_ids.sort_unstable();
        alarm_ids.dedup();
        assert_eq!(alarm_ids.len(), alarms, "{event}: each alarm once");
    }
    assert!(calls.iter().all(|c| signed_by(&key, c)));
    assert_eq!(
        app.sql("SELECT MAX(attempts) FROM alarm_deliveries").await,
        Some(1)
    );
    assert_eq!(
        app.sql("SELECT COUNT(*) FROM alarm_events WHERE event = 'escalated'")
            .await,
        Some(i64::try_from(alarms).expect("a count"))
    );
}
