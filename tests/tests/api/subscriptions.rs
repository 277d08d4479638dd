//! Protocol subscriptions and the scheduler
//! (docs/api/protocols-and-subscriptions.md, docs/design.md#time-and-scheduling).
//! The scheduler is driven with `scheduler::tick` at explicit times; the
//! clock of the host is moved along, so that the API shows statuses as of
//! then.

use chrono::{DateTime, Duration, NaiveDateTime, Utc};
use host::domain::schedule::resolve;
use host::scheduler::{self, Pass, TickCounts};
use host::store::{Store, StoreOptions};
use serde_json::Value;
use tests::{Db, TestApp, db_test, json, start_time};

use crate::support::*;

const AMSTERDAM: chrono_tz::Tz = chrono_tz::Europe::Amsterdam;

fn subscriptions(dossier: &str) -> String {
    format!("/api/v1/dossiers/{dossier}/protocol_subscriptions")
}

/// The host with the test protocols (a diary, a weekly protocol announced a
/// day ahead) in Europe/Amsterdam.
async fn spawn_amsterdam(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        with_test_definitions(config);
        config.time_zone = AMSTERDAM;
    })
    .await
}

/// A local time in Amsterdam.
fn local(text: &str) -> DateTime<Utc> {
    resolve(
        AMSTERDAM,
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M").expect("a local time"),
    )
}

/// Moves the host's clock to `at` and runs one scheduler pass then.
async fn tick_at(app: &TestApp, at: DateTime<Utc>) -> TickCounts {
    let now = app.state.now();
    assert!(at >= now, "the clock only moves on");
    app.clock.advance(at - now);
    scheduler::tick(app.state.scheduler(), at)
        .await
        .expect("a scheduler pass")
}

async fn subscribe(app: &TestApp, dossier: &str, body: Value) -> Value {
    let answer = app.post(&subscriptions(dossier), &body).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.body
}

/// The dossier's responses: (questionnaire key, status, open_from).
async fn listed(app: &TestApp, dossier: &str) -> Vec<(String, String, String)> {
    let answer = app.get(&responses(dossier)).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer
        .body
        .as_array()
        .expect("a list")
        .iter()
        .map(|r| {
            let text = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            (text("questionnaire_key"), text("status"), text("open_from"))
        })
        .collect()
}

fn protocol_id(app: &TestApp, key: &str) -> i64 {
    app.state
        .catalog()
        .protocols()
        .iter()
        .find(|p| p.def.key == key)
        .map(|p| p.id.0)
        .unwrap_or_else(|| panic!("protocol {key}"))
}

// ---------------------------------------------------------------------------
// Starting, listing, stopping
// ---------------------------------------------------------------------------

db_test!(async fn a_start_prepares_the_first_measurement_at_once(app) {
    let body = subscribe(&app, "d1", json!({"protocol_key": "rom_monthly"})).await;
    let id = body["id"].as_i64().expect("an id");
    let responses = body["responses"].as_array().expect("responses").clone();
    assert_eq!(responses.len(), 2);
    let expected = json!({
        "id": id, "daily_start_time": 9 * 3600,
        "start_at": "2026-03-01T09:00:00.000+00:00", "stop_at": "2026-09-01T09:00:00.000+00:00",
        "protocol_key": "rom_monthly", "protocol_name": "Monthly ROM: depression and anxiety",
        "flags": {}, "textvars": {},
    });
    let mut without_responses = body.clone();
    without_responses.as_object_mut().expect("an object").remove("responses");
    assert_eq!(without_responses, expected);
    for (response, key) in responses.iter().zip(["phq9", "gad7"]) {
        assert_eq!(response["questionnaire_key"], key);
        assert_eq!(response["status"], "open");
        assert_eq!(response["open_from"], "2026-03-01T09:00:00.000+00:00");
        assert_eq!(response["open_till"], "2026-03-08T09:00:00.000+00:00");
        assert_eq!(response["completer_type"], "patient");
        assert_eq!(response["completed_at"], Value::Null);
        assert_eq!(response["values"], json!({}));
        assert_eq!(response["outcome"]["actions"], json!({"fill_out": true}));
        assert_eq!(response["outcome"]["scores"], json!({}));
    }
    // The list shows the subscription without responses; the responses are
    // the dossier's, completable with PUT by id.
    let list = app.get(&subscriptions("d1")).await;
    assert_eq!(list.status, 200);
    assert_eq!(list.body, json!([without_responses]));
    let put = app
        .put(&response("d1", responses[0]["id"].to_string()), &json!({"questionnaire_key": "phq9", "answer_data": phq9_all_answered()}))
        .await;
    assert_eq!(put.status, 200, "{}", put.text);
    assert_eq!(put.body["measurement_id"], responses[0]["measurement_id"]);
});

db_test!(async fn starts_are_checked(app) {
    let post = |body: Value| {
        let app = &app;
        async move { app.post(&subscriptions("d1"), &body).await }
    };
    assert_error(&post(json!({})).await, 422, error("protocol_key", "blank"));
    assert_error(&post(json!({"protocol_key": ""})).await, 422, error("protocol_key", "blank"));
    assert_error(&post(json!({"protocol_key": 5})).await, 422, error("protocol_key", "invalid"));
    assert_error(&post(json!({"protocol_key": "nope"})).await, 404, error("protocol_key", "not_found"));
    assert_error(&post(json!({"protocol_id": "x"})).await, 422, error("protocol_id", "invalid"));
    assert_error(&post(json!({"protocol_id": 99999})).await, 404, error("protocol_id", "not_found"));
    assert_error(&post(json!({"protocol_key": "intake"})).await, 422, error("protocol_key", "not_automatic"));
    assert_error(&post(json!({"protocol_key": "rom_monthly", "start_at": "soon"})).await, 422, error("start_at", "invalid"));
    assert_error(&post(json!({"protocol_key": "rom_monthly", "start_at": 5})).await, 422, error("start_at", "too_early"));
    assert_error(&post(json!({"protocol_key": "rom_monthly", "flags": {"nope": true}})).await, 422, error("base", "flag_does_not_exist"));
    assert_error(&post(json!({"protocol_key": "rom_monthly", "textvars": {"nope": "x"}})).await, 422, error("base", "textvar_does_not_exist"));
    assert_error(&post(json!({"protocol_key": "rom_monthly", "flags": []})).await, 422, error("base", "invalid"));
    // Nothing was stored by any of these.
    assert_eq!(app.get(&subscriptions("d1")).await.body, json!([]));
    assert!(listed(&app, "d1").await.is_empty());
    // By id; then once only while active.
    let id = protocol_id(&app, "rom_monthly");
    subscribe(&app, "d1", json!({"protocol_id": id})).await;
    assert_error(&post(json!({"protocol_id": id})).await, 422, error("protocol_id", "already_subscribed"));
    assert_error(&post(json!({"protocol_key": "rom_monthly"})).await, 422, error("protocol_key", "already_subscribed"));
    // Another dossier may.
    subscribe(&app, "d2", json!({"protocol_key": "rom_monthly"})).await;
});

db_test!(async fn a_stopped_subscription_leaves_the_list_and_may_start_again(app) {
    let body = subscribe(&app, "d1", json!({"protocol_key": "rom_monthly"})).await;
    let path = format!("{}/{}", subscriptions("d1"), body["id"]);
    assert_error(&app.delete(&format!("{}/{}", subscriptions("d2"), body["id"])).await, 404, error("protocol_subscription", "not_found"));
    let stopped = app.delete(&path).await;
    assert_eq!(stopped.status, 200, "{}", stopped.text);
    assert_eq!(
        stopped.body,
        json!({"id": body["id"], "daily_start_time": 32400, "start_at": body["start_at"], "stop_at": body["stop_at"],
               "protocol_key": "rom_monthly", "protocol_name": body["protocol_name"]})
    );
    assert_error(&app.delete(&path).await, 404, error("protocol_subscription", "not_found"));
    for bad in ["abc", "0", "-1", "99999"] {
        assert_error(&app.delete(&format!("{}/{bad}", subscriptions("d1"))).await, 404, error("protocol_subscription", "not_found"));
    }
    assert_eq!(app.get(&subscriptions("d1")).await.body, json!([]));
    // The open responses stay completable.
    assert_eq!(listed(&app, "d1").await.iter().filter(|r| r.1 == "open").count(), 2);
    subscribe(&app, "d1", json!({"protocol_key": "rom_monthly"})).await;
});

// ---------------------------------------------------------------------------
// The scheduler over whole protocols
// ---------------------------------------------------------------------------

db_test!(
    async fn a_monthly_protocol_from_the_31st_runs_its_course(app: spawn_amsterdam_rom) {
        let start = local("2027-01-31 10:00");
        app.clock.advance(start - app.state.now());
        subscribe(&app, "d1", json!({"protocol_key": "rom_monthly"})).await;
        // A tick every day for seven months; everything each month once.
        let mut day = start;
        while day < local("2027-09-01 00:00") {
            day += Duration::days(1);
            tick_at(&app, day).await;
        }
        let opened: Vec<String> = listed(&app, "d1")
            .await
            .into_iter()
            .filter(|r| r.0 == "phq9")
            .map(|r| r.2)
            .collect();
        assert_eq!(
            opened,
            [
                "2027-01-31T10:00:00.000+01:00",
                "2027-02-28T10:00:00.000+01:00",
                "2027-03-31T10:00:00.000+02:00",
                "2027-04-30T10:00:00.000+02:00",
                "2027-05-31T10:00:00.000+02:00",
                "2027-06-30T10:00:00.000+02:00",
            ]
        );
        assert_eq!(listed(&app, "d1").await.len(), 12);
        // It stopped by itself at its stop, 31 July.
        assert_eq!(app.get(&subscriptions("d1")).await.body, json!([]));
        // Ticking again changes nothing.
        let again = tick_at(&app, local("2027-09-02 00:00")).await;
        assert_eq!((again.invitations, again.responses), (0, 0));
    }
);

/// The bundled protocols, in Europe/Amsterdam.
async fn spawn_amsterdam_rom(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| config.time_zone = AMSTERDAM).await
}

db_test!(
    async fn a_diary_keeps_its_local_times_across_the_clock_change(app: spawn_amsterdam) {
        // Clocks go forward on 28 March 2027.
        app.clock
            .advance(local("2027-03-27 08:00") - app.state.now());
        let body = subscribe(&app, "d1", json!({"protocol_key": "phq9_diary"})).await;
        assert_eq!(body["daily_start_time"], 32400);
        assert_eq!(body["responses"], json!([]), "nothing is due before 09:00");
        let mut at = local("2027-03-27 08:00");
        while at < local("2027-03-29 00:00") {
            at += Duration::minutes(30);
            tick_at(&app, at).await;
        }
        let opened: Vec<String> = listed(&app, "d1").await.into_iter().map(|r| r.2).collect();
        assert_eq!(
            opened,
            [
                "2027-03-27T09:00:00.000+01:00",
                "2027-03-27T13:00:00.000+01:00",
                "2027-03-27T17:00:00.000+01:00",
                "2027-03-27T21:00:00.000+01:00",
                "2027-03-28T09:00:00.000+02:00",
                "2027-03-28T13:00:00.000+02:00",
                "2027-03-28T17:00:00.000+02:00",
                "2027-03-28T21:00:00.000+02:00",
            ]
        );
    }
);

db_test!(
    async fn expired_occurrences_become_one_non_response_six_hours_later(app: spawn_amsterdam_rom) {
        subscribe(&app, "d1", json!({"protocol_key": "rom_monthly"})).await;
        let closed = start_time() + Duration::days(7);
        // Completed one of the two; the other expires.
        let list = app.get(&responses("d1")).await.body;
        let phq9 = list[0]["id"].to_string();
        let put = app
            .put(
                &response("d1", &phq9),
                &json!({"questionnaire_key": "phq9", "answer_data": phq9_all_answered()}),
            )
            .await;
        assert_eq!(put.status, 200, "{}", put.text);
        let early = tick_at(&app, closed + Duration::hours(5)).await;
        assert_eq!(early.non_responses, 0);
        assert_eq!(listed(&app, "d1").await[1].1, "expired");
        let due = tick_at(&app, closed + Duration::hours(6)).await;
        assert_eq!((due.settled, due.non_responses), (1, 1));
        let list = app.get(&responses("d1")).await.body;
        assert_eq!(
            list[0]["non_response_id"],
            Value::Null,
            "the completed one is not in it"
        );
        let non_response = list[1]["non_response_id"].as_i64().expect("registered");
        let row = app
        .sql_strings(&format!("SELECT reason_code || '/' || reason_other FROM non_responses WHERE id = {non_response}"))
        .await;
        assert_eq!(row, ["04/"]);
        // Once.
        let later = tick_at(&app, closed + Duration::days(1)).await;
        assert_eq!((later.settled, later.non_responses), (0, 0));
    }
);

db_test!(
    async fn stopping_withdraws_what_is_not_open_yet(app: spawn_amsterdam) {
        let start = local("2027-05-03 10:00");
        app.clock.advance(start - app.state.now());
        let body = subscribe(&app, "d1", json!({"protocol_key": "weekly"})).await;
        assert_eq!(body["responses"], json!([]), "the first is a week away");
        // Prepared a day ahead: scheduled, then open.
        tick_at(&app, local("2027-05-09 10:00")).await;
        assert_eq!(
            listed(&app, "d1").await,
            [(
                "phq9".into(),
                "scheduled".into(),
                "2027-05-10T10:00:00.000+02:00".into()
            )]
        );
        tick_at(&app, local("2027-05-10 10:00")).await;
        assert_eq!(listed(&app, "d1").await[0].1, "open");
        // The next is announced on the 16th; stop on the 16th at noon, while the
        // first is closed and the second scheduled: the second is withdrawn.
        tick_at(&app, local("2027-05-16 12:00")).await;
        assert_eq!(listed(&app, "d1").await.len(), 2);
        let stopped = app
            .delete(&format!("{}/{}", subscriptions("d1"), body["id"]))
            .await;
        assert_eq!(stopped.status, 200, "{}", stopped.text);
        assert_eq!(listed(&app, "d1").await.len(), 1);
        // Nothing more is prepared. The first, expired on the 12th, got its
        // non-response on the 16th; the withdrawn one gets none.
        let after = tick_at(&app, local("2027-06-30 00:00")).await;
        assert_eq!((after.invitations, after.non_responses), (0, 0));
        let list = app.get(&responses("d1")).await.body;
        assert!(list[0]["non_response_id"].is_i64(), "{list}");
    }
);

db_test!(
    async fn a_host_that_was_down_catches_up(app: spawn_amsterdam) {
        let start = local("2027-05-03 10:00");
        app.clock.advance(start - app.state.now());
        subscribe(&app, "d1", json!({"protocol_key": "phq9_diary"})).await;
        // Down from the start until 14:30 two days later. The slots since
        // (13, 17 and 21 on the 3rd, four on the 4th, 09 on the 5th) closed
        // unoffered: missed. 13:00 on the 5th is open till 15:00: prepared.
        let caught_up = tick_at(&app, local("2027-05-05 14:30")).await;
        assert_eq!((caught_up.missed, caught_up.invitations), (8, 1));
        assert_eq!(
            listed(&app, "d1").await,
            [(
                "phq9".into(),
                "open".into(),
                "2027-05-05T13:00:00.000+02:00".into()
            )]
        );
        // Back to normal: 17:00 is prepared when due.
        let later = tick_at(&app, local("2027-05-05 17:30")).await;
        assert_eq!(
            (later.missed, later.invitations, later.non_responses),
            (0, 1, 0)
        );
        // Missed occurrences were never offered, so they get no non-response;
        // the 13:00 one, expired at 15:00, gets one at 21:00.
        let evening = tick_at(&app, local("2027-05-05 21:00")).await;
        assert_eq!(evening.non_responses, 1);
    }
);

db_test!(
    async fn two_schedulers_at_once_prepare_everything_once(app: spawn_amsterdam) {
        let start = local("2027-05-03 08:00");
        app.clock.advance(start - app.state.now());
        for n in 0..120 {
            subscribe(
                &app,
                &format!("d{n}"),
                json!({"protocol_key": "phq9_diary"}),
            )
            .await;
        }
        // A second host: its own pool and writer on the same database.
        let other = Store::connect(&app.database_url, &StoreOptions::default())
            .await
            .expect("a second store");
        let at = local("2027-05-03 09:30");
        app.clock.advance(at - app.state.now());
        let (a, b) = tokio::join!(
            Pass {
                batch: 16,
                ..Pass::new(app.state.scheduler(), at)
            }
            .run(),
            Pass {
                store: &other,
                batch: 16,
                ..Pass::new(app.state.scheduler(), at)
            }
            .run(),
        );
        let (a, b) = (a.expect("a pass"), b.expect("a pass"));
        // The 09:00 slot of each, claimed and prepared by one of the two.
        assert_eq!(a.subscriptions + b.subscriptions, 120, "{a:?} {b:?}");
        assert_eq!(a.invitations + b.invitations, 120, "{a:?} {b:?}");
        assert_eq!(app.sql("SELECT COUNT(*) FROM responses").await, Some(120));
        assert_eq!(app.sql("SELECT COUNT(*) FROM invitations").await, Some(120));
        other.close().await;
    }
);

db_test!(
    async fn the_bundled_diary_asks_the_mood_diary_four_times_a_day(app: spawn_amsterdam_rom) {
        app.clock
            .advance(local("2027-06-07 08:00") - app.state.now());
        let body = subscribe(&app, "d1", json!({"protocol_key": "diary"})).await;
        assert_eq!(body["stop_at"], "2027-06-21T08:00:00.000+02:00");
        let first = tick_at(&app, local("2027-06-07 09:00")).await;
        assert_eq!(first.responses, 1);
        let list = app.get(&responses("d1")).await.body;
        assert_eq!(list[0]["questionnaire_key"], "mood_diary");
        assert_eq!(list[0]["open_till"], "2027-06-07T11:00:00.000+02:00");
        let id = list[0]["id"].to_string();
        let answers = json!({"v_1": "a3", "v_2": "a1", "v_3": "a2"});
        let put = app
            .put(
                &response("d1", &id),
                &json!({"questionnaire_key": "mood_diary", "answer_data": answers}),
            )
            .await;
        assert_eq!(put.status, 200, "{}", put.text);
        let scores = &put.body["outcome"]["scores"];
        assert_eq!(
            (
                scores["mood"]["value"].as_f64(),
                scores["tension"]["value"].as_f64(),
                scores["energy"]["value"].as_f64()
            ),
            (Some(3.0), Some(1.0), Some(2.0))
        );
        // The rest of the day: 13:00, 17:00, 21:00.
        let day = tick_at(&app, local("2027-06-07 21:30")).await;
        assert_eq!(day.responses + day.missed, 3);
    }
);
