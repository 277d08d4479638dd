//! Alarms someone answers for (docs/api/alarms.md): a PHQ-9 with item 9
//! above zero raises an open alarm in the POST's transaction; lists and
//! their filters (state, questionnaire, overdue, pages) per dossier and
//! across dossiers; acknowledging with a professional, resolving, and the
//! steps a state forbids; a deleted response and a re-scoring close
//! alarms; a JWT sees only its `sub`'s; the scheduler escalates an alarm
//! its deadline passed (time moved on the host's clock); every step in the
//! alarm's history and the access log; hostile bodies answered as
//! documented.

use chrono::Duration;
use host::domain::ids::{AlarmId, ResponseId};
use host::domain::outcome::{Outcome, Provenance};
use serde_json::Value;
use tests::reqwest::Method;
use tests::{Answer, Db, TestApp, db_test, json};

use crate::auth::{bearer, claims, get_as, jwt, spawn_jwt};
use crate::support::*;

/// Item 9 ("better off dead") answered 1, every other item 0.
const ITEM_9_POSITIVE: &str = "0 0 0 0 0 0 0 0 1";
/// Every item 0: no alarm.
const ALL_ZERO: &str = "0 0 0 0 0 0 0 0 0";

fn alarms(dossier: &str) -> String {
    format!("/api/v1/dossiers/{dossier}/alarms")
}

fn alarm(dossier: &str, id: i64) -> String {
    format!("/api/v1/dossiers/{dossier}/alarms/{id}")
}

/// POSTs a PHQ-9 with the items of `pattern`; the response's id.
async fn post_items(app: &TestApp, dossier: &str, external_id: &str, pattern: &str) -> i64 {
    let answer = post_phq9(app, dossier, external_id, phq9_items(pattern)).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    id_of(&answer.body)
}

/// The only alarm of `dossier`.
async fn only_alarm(app: &TestApp, dossier: &str) -> Value {
    let listed = app.get(&alarms(dossier)).await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let items = listed.body.as_array().expect("a list").clone();
    assert_eq!(items.len(), 1, "{}", listed.text);
    items[0].clone()
}

async fn step(app: &TestApp, dossier: &str, id: i64, which: &str, body: &Value) -> Answer {
    app.post(&format!("{}/{which}", alarm(dossier, id)), body)
        .await
}

/// The access-log actions of `dossier`'s rows about alarms, in order.
async fn alarm_log(app: &TestApp, dossier: &str) -> Vec<(String, Option<String>, u16)> {
    app.state
        .store()
        .access_log(Some(dossier), None)
        .await
        .expect("the access log")
        .into_iter()
        .filter(|e| e.action.starts_with("alarm "))
        .map(|e| (e.action, e.consumer_key, e.status))
        .collect()
}

/// The steps of alarm `id`'s history: (event, professional, reason).
async fn history(app: &TestApp, id: i64) -> Vec<(String, Option<String>, Option<String>)> {
    app.state
        .store()
        .alarm_events(AlarmId(id))
        .await
        .expect("the history")
        .into_iter()
        .map(|step| (step.event, step.professional, step.reason))
        .collect()
}

db_test!(async fn item_9_positive_raises_an_open_alarm_with_its_question_key(app) {
    let quiet = post_items(&app, "d1", "calm", ALL_ZERO).await;
    assert!(quiet > 0);
    assert_eq!(app.get(&alarms("d1")).await.body, json!([]));

    let response = post_items(&app, "d1", "r1", ITEM_9_POSITIVE).await;
    let found = only_alarm(&app, "d1").await;
    let id = found["id"].as_i64().expect("an id");
    assert_eq!(
        found,
        json!({
            "id": id, "dossier_id": "d1", "response_id": response, "questionnaire_key": "phq9",
            "action": "alarm", "question_keys": ["v_9"], "state": "open", "overdue": false,
            "raised_at": START_WIRE, "deadline": "2026-03-01T13:00:00.000+00:00",
            "acknowledged_at": null, "acknowledged_by": null, "acknowledged_note": null,
            "escalated_at": null, "resolved_at": null, "resolved_reason": null,
            "resolved_by": null, "resolved_note": null,
        })
    );
    // One alarm, one GET; the same through `dossier` and `.json`.
    assert_eq!(app.get(&alarm("d1", id)).await.body, found);
    assert_eq!(app.get(&format!("/api/v1/dossier/d1/alarms/{id}.json")).await.body, found);
    // A retry of the POST raises nothing more.
    let retry = post_phq9(&app, "d1", "r1", phq9_items(ITEM_9_POSITIVE)).await;
    assert_eq!(retry.status, 200);
    only_alarm(&app, "d1").await;
    // Another dossier's alarm is not found; nor is one that is not there.
    let other = app.get(&alarm("d2", id)).await;
    assert_error(&other, 404, error("alarm", "not_found"));
    assert_error(&app.get(&alarm("d1", id + 1)).await, 404, error("alarm", "not_found"));
    assert_error(&app.get(&format!("{}/x", alarms("d1"))).await, 404, error("alarm", "not_found"));
    // Raised in the access log, by the POST's caller, and in its history.
    assert_eq!(
        alarm_log(&app, "d1").await,
        [(format!("alarm {id} raised by response {response}"), Some(tests::TEST_KEY.to_owned()), 201)]
    );
    assert_eq!(history(&app, id).await, [("raised".to_owned(), None, None)]);
});

db_test!(async fn a_put_that_completes_a_pending_response_raises_its_alarm(app) {
    let pending = prepare(&app, "d1", "phq9", None, None).await;
    let answer = app
        .put(&response("d1", pending), &json!({"questionnaire_key": "phq9", "answer_data": phq9_items(ITEM_9_POSITIVE)}))
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let found = only_alarm(&app, "d1").await;
    assert_eq!(found["response_id"], json!(pending));
    assert_eq!(found["question_keys"], json!(["v_9"]));
});

db_test!(async fn lists_filter_by_state_questionnaire_and_overdue_and_come_in_pages(app) {
    post_items(&app, "d1", "a", ITEM_9_POSITIVE).await;
    post_items(&app, "d2", "b", ITEM_9_POSITIVE).await;
    post_items(&app, "d2", "c", ITEM_9_POSITIVE).await;
    let all = app.get("/api/v1/alarms").await;
    assert_eq!(all.status, 200, "{}", all.text);
    let ids: Vec<i64> = ids(&all.body);
    assert_eq!(ids.len(), 3);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "by id: {ids:?}");
    let dossiers: Vec<&str> = all.body.as_array().expect("a list").iter()
        .map(|a| a["dossier_id"].as_str().expect("a dossier")).collect();
    assert_eq!(dossiers, ["d1", "d2", "d2"]);

    let ack = step(&app, "d2", ids[1], "acknowledge", &json!({"professional": "dr. Jansen"})).await;
    assert_eq!(ack.status, 200, "{}", ack.text);
    let open = app.get("/api/v1/alarms?state=open").await;
    assert_eq!(crate::support::ids(&open.body), [ids[0], ids[2]]);
    let acknowledged = app.get(&format!("{}?state=acknowledged", alarms("d2"))).await;
    assert_eq!(crate::support::ids(&acknowledged.body), [ids[1]]);
    assert_eq!(app.get("/api/v1/alarms?questionnaire_key=gad7").await.body, json!([]));
    assert_eq!(
        crate::support::ids(&app.get("/api/v1/alarms?questionnaire_key=phq9").await.body).len(),
        3
    );
    // Nothing is overdue yet; four hours on, the two nobody acknowledged.
    assert_eq!(app.get("/api/v1/alarms?overdue=true").await.body, json!([]));
    app.clock.advance(Duration::hours(4));
    let overdue = app.get("/api/v1/alarms?overdue=true").await;
    assert_eq!(crate::support::ids(&overdue.body), [ids[0], ids[2]]);
    assert_eq!(overdue.body[0]["overdue"], json!(true));
    assert_eq!(crate::support::ids(&app.get("/api/v1/alarms?overdue=false").await.body).len(), 3);
    let d2_overdue = app.get(&format!("{}?overdue=1&state=open", alarms("d2"))).await;
    assert_eq!(crate::support::ids(&d2_overdue.body), [ids[2]]);

    // Pages: one at a time, each with its Link to the next.
    let first = app.get("/api/v1/alarms?page[size]=2").await;
    assert_eq!(crate::support::ids(&first.body), [ids[0], ids[1]]);
    let link = first.headers.get("link").expect("a Link").to_str().expect("text").to_owned();
    let next = link.trim_start_matches('<').split('>').next().expect("a target").to_owned();
    let second = app.get(&next).await;
    assert_eq!(crate::support::ids(&second.body), [ids[2]]);
    assert!(second.headers.get("link").is_none(), "the last page");

    // Bad filters, all at once.
    let bad = app.get("/api/v1/alarms?state=closed&overdue=maybe&page[size]=0").await;
    assert_error(
        &bad,
        422,
        json!({"errors": {"state": ["invalid"], "overdue": ["invalid"], "page": {"size": ["invalid"]}}}),
    );
    let bad_key = app.get(&format!("{}?questionnaire_key=%00", alarms("d1"))).await;
    assert_error(&bad_key, 422, error("questionnaire_key", "invalid"));
    // Each dossier answered across dossiers has its access-log row.
    let rows = |dossier: &'static str| {
        let app = &app;
        async move {
            app.state.store().access_log(Some(dossier), None).await.expect("log")
                .into_iter().filter(|e| e.action == "GET /api/v1/alarms").count()
        }
    };
    assert!(rows("d1").await >= 1);
    assert!(rows("d2").await >= 1);
});

db_test!(async fn acknowledging_records_the_professional_the_note_and_the_token(app) {
    post_items(&app, "d1", "r1", ITEM_9_POSITIVE).await;
    let id = only_alarm(&app, "d1").await["id"].as_i64().expect("an id");
    app.clock.advance(Duration::minutes(30));
    let ack = step(&app, "d1", id, "acknowledge",
        &json!({"professional": "dr. A. Jansen", "note": "Called; safety plan made."})).await;
    assert_eq!(ack.status, 200, "{}", ack.text);
    assert_eq!(ack.body["state"], "acknowledged");
    assert_eq!(ack.body["acknowledged_by"], "dr. A. Jansen");
    assert_eq!(ack.body["acknowledged_note"], "Called; safety plan made.");
    assert_eq!(ack.body["acknowledged_at"], "2026-03-01T09:30:00.000+00:00");
    assert_eq!(app.get(&alarm("d1", id)).await.body, ack.body);
    // The token too, on disk.
    let token = app.sql_strings(&format!("SELECT acknowledged_token FROM alarms WHERE id = {id}")).await;
    assert_eq!(token, [tests::TEST_KEY]);
    // Twice is refused, and changes nothing.
    let again = step(&app, "d1", id, "acknowledge", &json!({"professional": "someone else"})).await;
    assert_error(&again, 422, error("base", "already_acknowledged"));
    assert_eq!(app.get(&alarm("d1", id)).await.body["acknowledged_by"], "dr. A. Jansen");
    // An integer names a professional by id.
    post_items(&app, "d1", "r2", ITEM_9_POSITIVE).await;
    let second = crate::support::ids(&app.get(&format!("{}?state=open", alarms("d1"))).await.body)[0];
    let by_id = step(&app, "d1", second, "acknowledge", &json!({"professional": 4711})).await;
    assert_eq!(by_id.body["acknowledged_by"], "4711");
    // Acknowledged in the history and the access log, by whom; the
    // requests themselves too, with their statuses.
    assert_eq!(
        history(&app, id).await,
        [
            ("raised".to_owned(), None, None),
            ("acknowledged".to_owned(), Some("dr. A. Jansen".to_owned()), None),
        ]
    );
    let log = alarm_log(&app, "d1").await;
    assert!(
        log.contains(&(format!("alarm {id} acknowledged by \"dr. A. Jansen\""), Some(tests::TEST_KEY.to_owned()), 200)),
        "{log:?}"
    );
    let requests: Vec<u16> = app.state.store().access_log(Some("d1"), None).await.expect("log")
        .into_iter()
        .filter(|e| e.action == "POST /api/v1/dossiers/{dossier_id}/alarms/{id}/acknowledge")
        .map(|e| e.status)
        .collect();
    assert_eq!(requests, [200, 422, 200]);
    // Time to acknowledge: one of 30 minutes, one of none.
    let text = metrics_text(&app).await;
    assert_eq!(
        metric(&text, "outcomes_alarm_time_to_acknowledge_seconds_count{action=\"alarm\"}"),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        metric(&text, "outcomes_alarm_time_to_acknowledge_seconds_sum{action=\"alarm\"}"),
        Some(1800.0)
    );
});

db_test!(async fn resolving_ends_an_alarm_and_nothing_follows(app) {
    post_items(&app, "d1", "r1", ITEM_9_POSITIVE).await;
    let id = only_alarm(&app, "d1").await["id"].as_i64().expect("an id");
    let resolved = step(&app, "d1", id, "resolve", &json!({"professional": "dr. B", "note": "Seen today."})).await;
    assert_eq!(resolved.status, 200, "{}", resolved.text);
    assert_eq!(resolved.body["state"], "resolved");
    assert_eq!(resolved.body["resolved_reason"], "resolved");
    assert_eq!(resolved.body["resolved_by"], "dr. B");
    assert_eq!(resolved.body["resolved_note"], "Seen today.");
    assert_eq!(resolved.body["resolved_at"], START_WIRE);
    assert_eq!(resolved.body["acknowledged_at"], Value::Null, "resolved without acknowledging");
    for which in ["acknowledge", "resolve"] {
        let late = step(&app, "d1", id, which, &json!({"professional": "dr. C"})).await;
        assert_error(&late, 422, error("base", "already_resolved"));
    }
    assert_eq!(
        history(&app, id).await,
        [
            ("raised".to_owned(), None, None),
            ("resolved".to_owned(), Some("dr. B".to_owned()), Some("resolved".to_owned())),
        ]
    );
    let log = alarm_log(&app, "d1").await;
    assert!(log.contains(&(format!("alarm {id} resolved (resolved) by \"dr. B\""), Some(tests::TEST_KEY.to_owned()), 200)), "{log:?}");
    // Another dossier's alarm cannot be stepped.
    let elsewhere = step(&app, "d2", id, "acknowledge", &json!({"professional": "x"})).await;
    assert_error(&elsewhere, 404, error("alarm", "not_found"));
});

db_test!(async fn deleting_the_response_closes_its_alarm(app) {
    let response = post_items(&app, "d1", "r1", ITEM_9_POSITIVE).await;
    let id = only_alarm(&app, "d1").await["id"].as_i64().expect("an id");
    assert_eq!(app.delete(&crate::support::response("d1", "r1")).await.status, 204);
    let closed = app.get(&alarm("d1", id)).await;
    assert_eq!(closed.body["state"], "resolved");
    assert_eq!(closed.body["resolved_reason"], "response_deleted");
    assert_eq!(closed.body["response_id"], json!(response));
    assert_eq!(closed.body["resolved_by"], Value::Null);
    let log = alarm_log(&app, "d1").await;
    assert!(log.contains(&(format!("alarm {id} resolved (response_deleted)"), Some(tests::TEST_KEY.to_owned()), 204)), "{log:?}");
    // A response without alarms deletes as before.
    post_items(&app, "d1", "r2", ALL_ZERO).await;
    assert_eq!(app.delete(&crate::support::response("d1", "r2")).await.status, 204);
});

db_test!(async fn rescoring_closes_an_alarm_the_new_outcome_does_not_raise_and_opens_one_it_does(app) {
    let response = ResponseId(post_items(&app, "d1", "r1", ITEM_9_POSITIVE).await);
    let id = only_alarm(&app, "d1").await["id"].as_i64().expect("an id");
    let store = app.state.store();
    let quiet = Outcome { action: None, alarm: Some(vec![]), ..Outcome::default() };
    store.set_outcome(response, &quiet, &Provenance::default(), app.state.now()).await.expect("rescored");
    let closed = app.get(&alarm("d1", id)).await;
    assert_eq!(closed.body["state"], "resolved");
    assert_eq!(closed.body["resolved_reason"], "rescored");
    // Re-scored to an alarm again: a new one opens.
    let loud = Outcome { action: Some("alarm".into()), alarm: Some(vec!["v_9".into()]), ..Outcome::default() };
    store.set_outcome(response, &loud, &Provenance::default(), app.state.now()).await.expect("rescored");
    let open = app.get(&format!("{}?state=open", alarms("d1"))).await;
    assert_eq!(open.body.as_array().map(Vec::len), Some(1), "{}", open.text);
    assert_ne!(open.body[0]["id"], json!(id));
    // Re-scored the same again: nothing changes.
    store.set_outcome(response, &loud, &Provenance::default(), app.state.now()).await.expect("rescored");
    assert_eq!(app.get(&alarms("d1")).await.body.as_array().map(Vec::len), Some(2));
    let log = alarm_log(&app, "d1").await;
    assert!(log.contains(&(format!("alarm {id} resolved (rescored)"), None, 0)), "{log:?}");
});

db_test!(async fn the_scheduler_escalates_an_alarm_nobody_acknowledged_by_its_deadline(app) {
    post_items(&app, "d1", "r1", ITEM_9_POSITIVE).await;
    post_items(&app, "d2", "r1", ITEM_9_POSITIVE).await;
    let late = only_alarm(&app, "d1").await["id"].as_i64().expect("an id");
    let seen = only_alarm(&app, "d2").await["id"].as_i64().expect("an id");
    let ack = step(&app, "d2", seen, "acknowledge", &json!({"professional": "dr. A"})).await;
    assert_eq!(ack.status, 200);

    // A minute before the deadline nothing happens.
    let before = tests::start_time() + Duration::hours(4) - Duration::minutes(1);
    app.clock.advance(before - app.state.now());
    let counts = host::scheduler::tick(app.state.scheduler(), before).await.expect("a pass");
    assert_eq!(counts.alarms_escalated, 0);
    assert_eq!(app.get(&alarm("d1", late)).await.body["state"], "open");
    let text = metrics_text(&app).await;
    assert_eq!(metric(&text, "outcomes_alarms{state=\"open\"}"), Some(1.0), "{text}");
    assert_eq!(metric(&text, "outcomes_alarms{state=\"acknowledged\"}"), Some(1.0));
    assert_eq!(metric(&text, "outcomes_alarms_overdue"), Some(0.0));

    // At the deadline the open one is escalated, once.
    let at = tests::start_time() + Duration::hours(4);
    app.clock.advance(at - app.state.now());
    let counts = host::scheduler::tick(app.state.scheduler(), at).await.expect("a pass");
    assert_eq!(counts.alarms_escalated, 1);
    let escalated = app.get(&alarm("d1", late)).await.body;
    assert_eq!(escalated["state"], "escalated");
    assert_eq!(escalated["escalated_at"], "2026-03-01T13:00:00.000+00:00");
    assert_eq!(escalated["overdue"], json!(true));
    assert_eq!(app.get(&alarm("d2", seen)).await.body["state"], "acknowledged");
    let again = host::scheduler::tick(app.state.scheduler(), at).await.expect("a pass");
    assert_eq!(again.alarms_escalated, 0);
    let text = metrics_text(&app).await;
    assert_eq!(metric(&text, "outcomes_alarms{state=\"escalated\"}"), Some(1.0), "{text}");
    assert_eq!(metric(&text, "outcomes_alarms_overdue"), Some(1.0));
    assert_eq!(metric(&text, "outcomes_scheduler_work_total{what=\"alarms_escalated\"}"), Some(1.0));
    assert_eq!(
        alarm_log(&app, "d1").await.last().cloned(),
        Some((format!("alarm {late} escalated (deadline passed unacknowledged)"), None, 0))
    );
    // An escalated alarm can still be acknowledged, and keeps when it was
    // escalated.
    let ack = step(&app, "d1", late, "acknowledge", &json!({"professional": "on call"})).await;
    assert_eq!(ack.status, 200, "{}", ack.text);
    assert_eq!(ack.body["state"], "acknowledged");
    assert_eq!(ack.body["escalated_at"], "2026-03-01T13:00:00.000+00:00");
    assert_eq!(ack.body["overdue"], json!(false));
    assert_eq!(
        history(&app, late).await.into_iter().map(|(e, _, _)| e).collect::<Vec<_>>(),
        ["raised", "escalated", "acknowledged"]
    );
});

/// The host with PHQ-9 attention raising alarms within a day, and its
/// alarms due within the hour.
async fn spawn_with_attention(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        config.alarms.questionnaires.insert(
            "phq9".to_owned(),
            host::domain::alarm::QuestionnaireAlarms {
                alarm_deadline: Some(3600),
                attention_deadline: Some(86_400),
            },
        );
    })
    .await
}

db_test!(
    async fn attention_raises_alarms_where_configured_with_each_deadline(
        app: spawn_with_attention,
    ) {
        // Item 9 unanswered: attention (the scorer's rule).
        post_items(&app, "d1", "r1", "0 0 0 0 0 0 0 0 -").await;
        let attention = only_alarm(&app, "d1").await;
        assert_eq!(attention["action"], "attention");
        assert_eq!(attention["question_keys"], json!(["v_9"]));
        assert_eq!(attention["deadline"], "2026-03-02T09:00:00.000+00:00");
        post_items(&app, "d2", "r1", ITEM_9_POSITIVE).await;
        assert_eq!(
            only_alarm(&app, "d2").await["deadline"],
            "2026-03-01T10:00:00.000+00:00"
        );
    }
);

db_test!(async fn without_configuration_attention_raises_no_alarm(app) {
    post_items(&app, "d1", "r1", "0 0 0 0 0 0 0 0 -").await;
    assert_eq!(app.get(&alarms("d1")).await.body, json!([]));
});

db_test!(
    async fn a_jwt_sees_only_the_alarms_of_its_subject(app: spawn_jwt) {
        post_items(&app, "d1", "r1", ITEM_9_POSITIVE).await;
        post_items(&app, "d2", "r1", ITEM_9_POSITIVE).await;
        let d1 = bearer(&jwt(&claims(&app, Some("d1"))));
        let own = get_as(&app, &alarms("d1"), &d1).await;
        assert_eq!(own.status, 200, "{}", own.text);
        assert_eq!(own.body.as_array().map(Vec::len), Some(1));
        let other = get_as(&app, &alarms("d2"), &d1).await;
        assert_error(&other, 403, error("base", "sub_mismatch"));
        let across = get_as(&app, "/api/v1/alarms", &d1).await;
        assert_eq!(across.status, 200, "{}", across.text);
        let dossiers: Vec<&Value> = across
            .body
            .as_array()
            .expect("a list")
            .iter()
            .map(|a| &a["dossier_id"])
            .collect();
        assert_eq!(dossiers, [&json!("d1")]);
        let no_sub = bearer(&jwt(&claims(&app, None)));
        assert_error(
            &get_as(&app, "/api/v1/alarms", &no_sub).await,
            403,
            error("base", "sub_missing"),
        );
        let id = own.body[0]["id"].as_i64().expect("an id");
        let d2_alarm = crate::support::ids(&app.get(&alarms("d2")).await.body)[0];
        let step_other = app
            .send_as(
                Method::POST,
                &format!("{}/acknowledge", alarm("d2", d2_alarm)),
                Some((br#"{"professional":"x"}"#.to_vec(), "application/json")),
                Some(&d1),
            )
            .await;
        assert_error(&step_other, 403, error("base", "sub_mismatch"));
        let step_own = app
            .send_as(
                Method::POST,
                &format!("{}/acknowledge", alarm("d1", id)),
                Some((br#"{"professional":"x"}"#.to_vec(), "application/json")),
                Some(&d1),
            )
            .await;
        assert_eq!(step_own.status, 200, "{}", step_own.text);
    }
);

db_test!(async fn a_token_without_the_alarms_right_is_refused(app) {
    post_items(&app, "d1", "r1", ITEM_9_POSITIVE).await;
    let secret = tests::create_token(&app.state, "responses-only", "responses").await;
    let auth = tests::basic("responses-only", &secret);
    for path in [alarms("d1"), "/api/v1/alarms".to_owned()] {
        let refused = get_as(&app, &path, &auth).await;
        assert_error(&refused, 403, error("base", "right_missing"));
    }
});

db_test!(async fn malformed_and_hostile_bodies_get_the_documented_errors(app) {
    post_items(&app, "d1", "r1", ITEM_9_POSITIVE).await;
    let id = only_alarm(&app, "d1").await["id"].as_i64().expect("an id");
    let path = format!("{}/acknowledge", alarm("d1", id));
    let send = |bytes: &[u8], content_type: &'static str| {
        let (app, path, bytes) = (&app, path.clone(), bytes.to_vec());
        async move { app.send(Method::POST, &path, Some((bytes, content_type))).await }
    };
    assert_error(&send(b"{", "application/json").await, 400, error("base", "malformed_json"));
    assert_error(&send(b"[1]", "application/json").await, 400, error("base", "malformed_json"));
    assert_error(
        &send(br#"{"professional":"x"}"#, "text/plain").await,
        415,
        error("base", "unsupported_media_type"),
    );
    assert_error(&send(b"{}", "application/json").await, 422, error("professional", "blank"));
    assert_error(
        &send(br#"{"professional":"   ","note":"ok"}"#, "application/json").await,
        422,
        error("professional", "blank"),
    );
    let long = format!(r#"{{"professional":"{}","note":{{"a":1}}}}"#, "x".repeat(256));
    assert_error(
        &send(long.as_bytes(), "application/json").await,
        422,
        json!({"errors": {"professional": ["invalid"], "note": ["invalid"]}}),
    );
    assert_error(
        &send(br#"{"professional":"x\u0000y"}"#, "application/json").await,
        422,
        error("professional", "invalid"),
    );
    let big = vec![b' '; 2 * 1024 * 1024];
    assert_error(&send(&big, "application/json").await, 413, error("base", "too_large"));
    // Ids that name nothing: not found.
    for bad in ["0", "-1", "abc", "99999999999999999999", "1e3"] {
        let answer = app
            .post(&format!("{}/resolve", alarms("d1") + "/" + bad), &json!({"professional": "x"}))
            .await;
        assert_error(&answer, 404, error("alarm", "not_found"));
    }
    // None of that touched the alarm.
    assert_eq!(app.get(&alarm("d1", id)).await.body["state"], "open");
    assert_eq!(history(&app, id).await.len(), 1);
});
