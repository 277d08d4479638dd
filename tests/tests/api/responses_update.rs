//! PUT /api/v1/dossiers/:dossier_id/responses/:external_id: completing a
//! pending response found by external id or by the id of a prepared one,
//! once, however many hosts and patients race for it.

use chrono::Duration;
use futures_util::future::join_all;
use host::domain::answers::GivenAnswers;
use host::domain::outcome::{Outcome, Provenance};
use host::domain::response::Completion;
use host::domain::variant::Variant;
use host::store::{CompleteError, Preparation, Store, StoreOptions};
use serde_json::Value;
use tests::{TestApp, db_test, json};

use crate::support::*;
use crate::visitor::{Visitor, pairs, phq9_form};

fn phq9_body(answers: Value) -> Value {
    json!({"questionnaire_key": "phq9", "answer_data": answers})
}

/// Gives a prepared response an external id, as an invitation that carries
/// the EPD's id for it will (no public API does this yet).
async fn set_external_id(app: &TestApp, id: i64, external_id: &str) {
    app.sql(&format!(
        "UPDATE responses SET external_id = '{external_id}' WHERE id = {id} RETURNING id"
    ))
    .await;
}

db_test!(async fn pending_response_is_completed_by_its_external_id(app) {
    let id = prepare(&app, "d1", "phq9", Some(Duration::hours(-1)), Some(Duration::hours(1))).await;
    set_external_id(&app, id, "epd-77").await;
    app.clock.advance(Duration::minutes(5));
    let body = json!({"questionnaire_key": "phq9", "answer_data": {"v_1": "a2", "v_9": "a0"}, "started_at": START_UNIX});
    let answer = app.put(&response("d1", "epd-77"), &body).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let r = &nothing_dropped(answer.body);
    assert_eq!(id_of(r), id);
    assert_eq!(r["external_id"], "epd-77");
    assert_eq!(r["status"], "completed");
    assert_eq!(r["started_at"], START_WIRE);
    assert_eq!(r["completed_at"], "2026-03-01T09:05:00.000+00:00");
    assert_eq!(r["open_from"], "2026-03-01T08:00:00.000+00:00");
    assert_eq!(r["open_till"], "2026-03-01T10:00:00.000+00:00");
    assert_eq!(r["values"]["v_1"], "a2");
    assert_eq!(r["values"]["v_9"], "a0");
    assert_eq!(r["values"].as_object().map(|v| v.len()), Some(10));
    assert_eq!(app.get(&responses("d1")).await.body, json!([r]));
});

db_test!(async fn prepared_response_is_completed_by_its_numeric_id(app) {
    let measurement = app.state.catalog().protocols()[0].measurement_ids[0];
    let item = Preparation {
        questionnaire_id: questionnaire_id(&app, "phq9"),
        measurement_id: Some(measurement),
        requesters: vec!["doc-1".to_owned()],
        ..Preparation::default()
    };
    let id = prepare_items(&app, "d1", vec![item]).await[0];
    let before = app.get(&responses("d1")).await.body;
    assert_eq!(before[0]["status"], "open");
    assert_eq!(before[0]["external_id"], Value::Null);
    let body = json!({"questionnaire_key": "phq9", "answer_data": phq9_all_answered(), "filled_out_at": START_UNIX - 60});
    let answer = app.put(&response("d1", id), &body).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let r = &nothing_dropped(answer.body);
    assert_eq!(id_of(r), id);
    assert_eq!(r["status"], "completed");
    // Completed through the API, it now carries the id it was stored under.
    assert_eq!(r["external_id"], id.to_string());
    assert_eq!(r["completed_at"], "2026-03-01T08:59:00.000+00:00");
    assert_eq!(r["values"], phq9_all_answered());
    assert_eq!(r["measurement_id"], json!(measurement.0));
    assert_eq!(r["requesters"], json!([{"epd_id": "doc-1"}]));
    assert_eq!(r["respondent_id"], before[0]["respondent_id"]);
    assert_eq!(r["completer_type"], "patient");
    assert_eq!(app.get(&responses("d1")).await.body, json!([r]));
});

db_test!(async fn response_that_already_stores_data_cannot_be_updated(app) {
    let posted = posted(&app, "d1", "ext-1").await;
    let answer = app.put(&response("d1", "ext-1"), &phq9_body(json!({"v_1": "a0"}))).await;
    assert_error(&answer, 403, error("base", "already_completed"));
    assert_eq!(app.get(&responses("d1")).await.body, json!([posted]));
    // A prepared response completed once cannot be completed again.
    let id = prepare(&app, "d1", "phq9", None, None).await;
    assert_eq!(app.put(&response("d1", id), &phq9_body(json!({"v_1": "a1"}))).await.status, 200);
    let again = app.put(&response("d1", id), &phq9_body(json!({"v_1": "a3"}))).await;
    assert_error(&again, 403, error("base", "already_completed"));
    assert_eq!(app.get(&responses("d1")).await.body[1]["values"]["v_1"], "a1");
});

db_test!(async fn unknown_external_id_is_not_found(app) {
    let body = phq9_body(json!({"v_1": "a0"}));
    // Unknown dossier.
    assert_error(&app.put(&response("d1", "ext-1"), &body).await, 404, error("external_id", "not_found"));
    posted(&app, "d1", "ext-1").await;
    let id = prepare(&app, "d1", "phq9", None, None).await;
    assert_error(&app.put(&response("d1", "ext-2"), &body).await, 404, error("external_id", "not_found"));
    assert_error(&app.put(&response("d1", id + 100), &body).await, 404, error("external_id", "not_found"));
    assert_error(&app.put(&response("d1", "0"), &body).await, 404, error("external_id", "not_found"));
    assert_error(&app.put(&response("d1", "-1"), &body).await, 404, error("external_id", "not_found"));
    assert_error(&app.put(&response("d1", "99999999999999999999999"), &body).await, 404, error("external_id", "not_found"));
    assert_eq!(app.get(&responses("d1")).await.body[1]["status"], "open");
});

db_test!(async fn response_of_another_dossier_is_not_found(app) {
    let prepared = prepare(&app, "d1", "phq9", None, None).await;
    let pending = prepare(&app, "d1", "phq9", None, None).await;
    set_external_id(&app, pending, "epd-1").await;
    posted(&app, "d2", "ext-other").await;
    let body = phq9_body(json!({"v_1": "a0"}));
    assert_error(&app.put(&response("d2", prepared), &body).await, 404, error("external_id", "not_found"));
    assert_error(&app.put(&response("d2", "epd-1"), &body).await, 404, error("external_id", "not_found"));
    assert_error(&app.put(&response("d3", prepared), &body).await, 404, error("external_id", "not_found"));
    let list = app.get(&responses("d1")).await.body;
    assert_eq!(list[0]["status"], "open");
    assert_eq!(list[1]["status"], "open");
});

db_test!(async fn posted_response_is_not_found_by_its_numeric_id(app) {
    // A decimal segment matches only responses the service prepared, so a
    // POSTed response is not found by its id
    // (docs/api/responses.md#which-response-a-put-names).
    let posted = posted(&app, "d1", "ext-1").await;
    let answer = app.put(&response("d1", id_of(&posted)), &phq9_body(json!({"v_1": "a0"}))).await;
    assert_error(&answer, 404, error("external_id", "not_found"));
});

db_test!(
    async fn response_of_another_questionnaire_is_refused(app: spawn_with_mini) {
        let id = prepare(&app, "d1", "mini", None, None).await;
        let answer = app
            .put(&response("d1", id), &phq9_body(json!({"v_1": "a0"})))
            .await;
        assert_error(&answer, 422, error("questionnaire_key", "invalid"));
        assert_eq!(app.get(&responses("d1")).await.body[0]["status"], "open");
        let answer = app
            .put(
                &response("d1", id),
                &json!({"questionnaire_key": "mini", "answer_data": {"v_2": "a1"}}),
            )
            .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert_eq!(answer.body["values"], json!({"v_1": null, "v_2": "a1"}));
        assert_eq!(answer.body["questionnaire_key"], "mini");
        assert_eq!(answer.body["questionnaire_name"], "Mini");
    }
);

db_test!(async fn answers_are_checked_as_for_post(app) {
    let id = prepare(&app, "d1", "phq9", None, None).await;
    let path = response("d1", id);
    let answer = app.put(&path, &phq9_body(json!({"v_0": "a0", "v_1": "a9"}))).await;
    assert_error(&answer, 422, json!({"errors": {"answer_data": {"v_0": ["unknown_question"], "v_1": ["invalid_option"]}}}));
    let answer = app.put(&path, &json!({"questionnaire_key": "phq9", "answer_data": {}})).await;
    assert_error(&answer, 422, error("answer_data", "blank"));
    let answer = app.put(&path, &json!({"answer_data": {"v_1": "a0"}})).await;
    assert_error(&answer, 422, error("questionnaire_key", "blank"));
    let answer = app.put(&path, &json!({"questionnaire_key": "phq9", "answer_data": ["a0"]})).await;
    assert_error(&answer, 422, error("answer_data", "invalid"));
    let answer = app.put(&path, &json!({"questionnaire_key": "phq10", "answer_data": {"v_1": "a0"}})).await;
    assert_error(&answer, 404, error("questionnaire_key", "not_found"));
    let early = json!({"questionnaire_key": "phq9", "answer_data": {"v_1": "a0"}, "started_at": 946_598_399, "filled_out_at": "x"});
    assert_error(
        &app.put(&path, &early).await,
        422,
        json!({"errors": {"started_at": ["too_early"], "filled_out_at": ["invalid"]}}),
    );
    // Nothing of that was stored.
    let list = app.get(&responses("d1")).await.body;
    assert_eq!(list[0]["status"], "open");
    assert_eq!(list[0]["values"], json!({}));
    // Null answers are unanswered here too.
    let answer = app.put(&path, &phq9_body(json!({"v_1": null, "v_3": "a3"}))).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.body["values"]["v_1"], Value::Null);
    assert_eq!(answer.body["values"]["v_3"], "a3");
});

/// PHQ-9 answers that differ in `v_1` by `n`, to tell racing writers apart.
fn phq9_answers(n: usize) -> Value {
    let mut answers = phq9_all_answered();
    answers["v_1"] = json!(format!("a{}", n % 4));
    answers
}

db_test!(async fn a_pending_response_is_completed_once_when_two_hosts_race(app) {
    let id = prepare(&app, "d1", "phq9", Some(Duration::hours(-1)), Some(Duration::hours(1))).await;
    // A second host: its own pool and writer on the same database.
    let other = Store::connect(&app.database_url, &StoreOptions::default())
        .await
        .expect("a second store");
    let phq9 = app.state.catalog().questionnaire("phq9").expect("phq9").def.clone();
    let phq9_id = questionnaire_id(&app, "phq9");
    let now = app.state.now();
    // Ten PUTs to this host and ten completions by the other, at once.
    let puts = (0..10).map(|n| {
        let app = &app;
        async move { app.put(&response("d1", id), &phq9_body(phq9_answers(n))).await }
    });
    let completions = (10..20).map(|n| {
        let (other, phq9) = (&other, &phq9);
        async move {
            let data = phq9_answers(n).as_object().cloned().unwrap_or_default();
            let completion = Completion {
                questionnaire_id: phq9_id,
                answers: GivenAnswers::check(phq9, &data)
                    .expect("valid answers")
                    .enabled(phq9, &Variant::default())
                    .answers,
                started_at: None,
                completed_at: now,
                variant: Variant::default(),
                language: "en".to_owned(),
                translation_sha256: None,
                outcome: Outcome::empty(),
                provenance: Provenance::default(),
            };
            let scored = host::store::Scored { completion, definition: phq9.clone(), professional: false };
            other
                .complete_response("d1".to_owned(), id.to_string(), scored, now, None)
                .await
                .expect("the store answers")
        }
    });
    let (puts, completions) = tokio::join!(join_all(puts), join_all(completions));
    let put_wins: Vec<_> = puts.iter().filter(|a| a.status == 200).collect();
    for answer in puts.iter().filter(|a| a.status != 200) {
        assert_error(answer, 403, error("base", "already_completed"));
    }
    let other_wins = completions.iter().filter(|c| c.is_ok()).count();
    assert!(
        completions.iter().all(|c| matches!(c, Ok(_) | Err(CompleteError::AlreadyCompleted))),
        "{completions:?}"
    );
    assert_eq!(put_wins.len() + other_wins, 1, "exactly one completion is acknowledged");
    // What is stored is what the one winner was told.
    let stored = app.get(&responses("d1")).await.body[0]["values"]["v_1"].clone();
    let won = match (put_wins.first(), completions.iter().find_map(|c| c.as_ref().ok())) {
        (Some(answer), None) => answer.body["values"]["v_1"].clone(),
        (None, Some(response)) => json!(response.answers.to_json()["v_1"]),
        _ => unreachable!("exactly one winner"),
    };
    assert_eq!(stored, won);
});

/// PHQ-9 answers that differ for every `n` below 16.
fn distinct_answers(n: usize) -> Value {
    let mut answers = phq9_all_answered();
    answers["v_1"] = json!(format!("a{}", n % 4));
    answers["v_2"] = json!(format!("a{}", (n / 4) % 4));
    answers["v_3"] = json!(format!("a{}", (n / 16) % 4));
    answers
}

db_test!(async fn twenty_puts_over_two_hosts_complete_a_response_once(app) {
    let other = app.another_host().await;
    let id = prepare(&app, "d1", "phq9", Some(Duration::hours(-1)), Some(Duration::hours(1))).await;
    // Twenty PUTs at once, every other one to the second host's port.
    let puts = (0..20).map(|n| {
        let host = if n % 2 == 0 { &app } else { &other };
        async move { host.put(&response("d1", id), &phq9_body(distinct_answers(n))).await }
    });
    let answers = join_all(puts).await;
    let wins: Vec<_> = answers.iter().filter(|a| a.status == 200).collect();
    assert_eq!(wins.len(), 1, "exactly one PUT is acknowledged: {answers:?}");
    for answer in answers.iter().filter(|a| a.status != 200) {
        assert_error(answer, 403, error("base", "already_completed"));
    }
    // What either host has stored is what the winner was told.
    let won = &wins[0].body["values"];
    for host in [&app, &other] {
        let stored = host.get(&responses("d1")).await.body;
        assert_eq!(&stored[0]["values"], won, "{stored}");
        assert_eq!(stored[0]["status"], "completed");
    }
});

db_test!(async fn a_put_racing_a_patient_s_submit_completes_once_and_the_loser_is_told(app) {
    let other = app.another_host().await;
    // A few rounds, so both orders are likely to be seen.
    for round in 0..4 {
        let dossier = format!("d{round}");
        let id = prepare(&app, &dossier, "phq9", None, None).await;
        let list = app.get(&responses(&dossier)).await.body;
        let link = list[0]["completing_url"].as_str().expect("a completing_url");
        // The patient opens the form on the second host.
        let mut patient = Visitor::new(&other);
        let form = patient.open(&link.replace(&app.base, &other.base)).await;
        assert!(form.text.contains("<h1>PHQ-9</h1>"), "{}", form.text);
        let fields = phq9_form(&form.field("csrf"), "a0");
        let path = format!("/fill_out/session/responses/{id}");
        let put_body = phq9_body(distinct_answers(5));
        let put_path = response(&dossier, id);
        let form_fields = pairs(&fields);
        let (submitted, put) = tokio::join!(
            patient.post_form(&path, &form_fields),
            app.put(&put_path, &put_body)
        );
        let stored = app.get(&responses(&dossier)).await.body[0].clone();
        assert_eq!(stored["status"], "completed");
        if put.status == 200 {
            // The patient is told their answers were not stored.
            submitted.assert_message(409, "This questionnaire was completed already");
            assert_eq!(stored["values"], put.body["values"]);
        } else {
            assert_error(&put, 403, error("base", "already_completed"));
            assert_eq!(submitted.status, 303, "{}", submitted.text);
            assert_eq!(submitted.location(), "/fill_out/session");
            assert_eq!(stored["values"]["v_1"], "a0");
            assert_eq!(stored["values"]["v_2"], "a0");
        }
    }
});
