//! POST /api/v1/dossiers/:dossier_id/responses: the stored Response object,
//! retries, external ids, answer validation and field types.

use chrono::Duration;
use serde_json::Value;
use tests::{db_test, json};

use crate::support::*;

db_test!(async fn stored_response_is_a_complete_completed_response(app) {
    let answer = post_phq9(&app, "d1", "ext-1", phq9_all_answered()).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    assert_eq!(answer.headers["content-type"], "application/json; charset=utf-8");
    let body = answer.body;
    let respondents = app.get("/api/v1/dossiers/d1/respondents").await.body;
    let expected = json!({
        "id": id_of(&body),
        "external_id": "ext-1",
        "respondent_id": respondents[0]["id"],
        "completed_at": START_WIRE,
        "completer_type": "patient",
        "completing_url": null,
        "flags": {},
        "textvars": {},
        "measurement_id": null,
        "non_response_id": null,
        "open_from": null,
        "open_till": null,
        "outcome": body["outcome"],
        "questionnaire_name": "PHQ-9",
        "questionnaire_key": "phq9",
        "requesters": [],
        "status": "completed",
        "started_at": null,
        "values": phq9_all_answered(),
        "language": "en",
        "name": "PHQ-9",
        "dropped_answers": [],
    });
    assert_eq!(body, expected);
    // The fields in the order of docs/api/responses.md#response-object,
    // then the answer's `dropped_answers`, nothing more.
    let keys: Vec<&str> = body.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
    let api_fields = [
        "id", "external_id", "respondent_id", "completed_at", "completer_type", "completing_url", "flags", "textvars",
        "measurement_id", "non_response_id", "open_from", "open_till", "outcome", "questionnaire_name",
        "questionnaire_key", "requesters", "status", "started_at", "values", "language", "name", "dropped_answers",
    ];
    assert_eq!(keys, api_fields);
    // Scores arrive with the scoring plugins; the outcome's shape is fixed now.
    let outcome_keys: Vec<&str> = body["outcome"].as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
    assert_eq!(outcome_keys, ["scores", "action", "alarm", "attention", "complete"]);
    assert!(body["outcome"]["scores"].is_object());
});

db_test!(async fn values_hold_every_question_in_definition_order_with_null_for_unanswered(app) {
    // Given out of order and incomplete.
    let answer = post_phq9(&app, "d1", "ext-1", json!({"v_9": "a3", "v_2": "a0", "v_10": null})).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    let values = &answer.body["values"];
    let keys: Vec<&str> = values.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
    assert_eq!(keys, PHQ9_QUESTIONS);
    assert_eq!(
        *values,
        json!({"v_1": null, "v_2": "a0", "v_3": null, "v_4": null, "v_5": null, "v_6": null, "v_7": null, "v_8": null, "v_9": "a3", "v_10": null})
    );
    assert_eq!(answer.body["status"], "completed");
});

db_test!(async fn supplied_times_become_started_at_and_completed_at(app) {
    let body = json!({
        "questionnaire_key": "phq9",
        "external_id": "ext-1",
        "answer_data": {"v_1": "a0"},
        "started_at": START_UNIX - 600,
        "filled_out_at": START_UNIX - 300,
    });
    let answer = app.post(&responses("d1"), &body).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    assert_eq!(answer.body["started_at"], "2026-03-01T08:50:00.000+00:00");
    assert_eq!(answer.body["completed_at"], "2026-03-01T08:55:00.000+00:00");
});

db_test!(async fn filled_out_at_defaults_to_the_clock(app) {
    app.clock.advance(Duration::minutes(90) + Duration::milliseconds(123));
    let answer = post_phq9(&app, "d1", "ext-1", json!({"v_1": "a0"})).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    assert_eq!(answer.body["completed_at"], "2026-03-01T10:30:00.123+00:00");
    assert_eq!(answer.body["started_at"], Value::Null);
});

db_test!(async fn times_before_31_december_1999_are_too_early(app) {
    let mut body = json!({"questionnaire_key": "phq9", "external_id": "ext-1", "answer_data": {"v_1": "a0"},
                          "started_at": 946_598_399, "filled_out_at": 946_598_399});
    let answer = app.post(&responses("d1"), &body).await;
    assert_error(&answer, 422, json!({"errors": {"started_at": ["too_early"], "filled_out_at": ["too_early"]}}));
    body["started_at"] = json!(946_598_400);
    body["filled_out_at"] = json!(946_598_400);
    let answer = app.post(&responses("d1"), &body).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    assert_eq!(answer.body["started_at"], "1999-12-31T00:00:00.000+00:00");
    assert_eq!(answer.body["completed_at"], "1999-12-31T00:00:00.000+00:00");
});

db_test!(async fn filled_out_at_more_than_an_hour_ahead_is_invalid(app) {
    let body = json!({"questionnaire_key": "phq9", "external_id": "ext-1", "answer_data": {"v_1": "a0"},
                      "filled_out_at": START_UNIX + 7200});
    assert_error(&app.post(&responses("d1"), &body).await, 422, error("filled_out_at", "invalid"));
});

db_test!(async fn professional_responses_use_the_professional_respondent(app) {
    let patient = posted(&app, "d1", "by-patient").await;
    let mut body = json!({"questionnaire_key": "phq9", "external_id": "by-professional", "answer_data": {"v_1": "a2"},
                          "respondent": "profess", "entered_by": "doc-7"});
    let first = app.post(&responses("d1"), &body).await;
    assert_eq!(first.status, 201, "{}", first.text);
    assert_eq!(first.body["completer_type"], "ad_hoc_professional");
    assert_ne!(first.body["respondent_id"], patient["respondent_id"]);
    // `respondent_type` is an alias of `respondent`, and the professional
    // respondent is made once per dossier.
    if let Some(fields) = body.as_object_mut() {
        fields.remove("respondent");
    }
    body["respondent_type"] = json!("profess");
    body["external_id"] = json!("by-professional-2");
    let second = app.post(&responses("d1"), &body).await;
    assert_eq!(second.status, 201, "{}", second.text);
    assert_eq!(second.body["completer_type"], "ad_hoc_professional");
    assert_eq!(second.body["respondent_id"], first.body["respondent_id"]);
    // An explicit patient is the default.
    let body = json!({"questionnaire_key": "phq9", "external_id": "explicit", "answer_data": {"v_1": "a2"}, "respondent": "patient"});
    let third = app.post(&responses("d1"), &body).await;
    assert_eq!(third.body["completer_type"], "patient");
    assert_eq!(third.body["respondent_id"], patient["respondent_id"]);
});

db_test!(async fn repeating_a_post_is_a_retry_that_returns_the_stored_response(app) {
    let first = post_phq9(&app, "d1", "ext-1", phq9_all_answered()).await;
    assert_eq!(first.status, 201, "{}", first.text);
    app.clock.advance(Duration::hours(2));
    let again = post_phq9(&app, "d1", "ext-1", phq9_all_answered()).await;
    assert_eq!(again.status, 200, "{}", again.text);
    assert_eq!(again.body, first.body);
    assert_eq!(ids(&app.get(&responses("d1")).await.body), [id_of(&first.body)]);
});

db_test!(async fn concurrent_identical_posts_store_one_response(app) {
    let (a, b) = tokio::join!(
        post_phq9(&app, "d1", "ext-1", phq9_all_answered()),
        post_phq9(&app, "d1", "ext-1", phq9_all_answered())
    );
    let mut statuses = [a.status.as_u16(), b.status.as_u16()];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 201]);
    assert_eq!(a.body, b.body);
    assert_eq!(ids(&app.get(&responses("d1")).await.body).len(), 1);
});

db_test!(async fn external_id_used_for_other_data_is_taken(app) {
    posted(&app, "d1", "ext-1").await;
    let other_answers = post_phq9(&app, "d1", "ext-1", json!({"v_1": "a0"})).await;
    assert_error(&other_answers, 422, error("external_id", "taken"));
    // An unknown questionnaire is named before the external id is looked up.
    let unknown = json!({"questionnaire_key": "nope", "external_id": "ext-1", "answer_data": {"v_1": "a0"}});
    assert_error(&app.post(&responses("d1"), &unknown).await, 404, error("questionnaire_key", "not_found"));
    assert_eq!(ids(&app.get(&responses("d1")).await.body).len(), 1);
});

db_test!(
    async fn external_id_on_another_questionnaire_is_taken(app: spawn_with_mini) {
        posted(&app, "d1", "ext-1").await;
        let body = json!({"questionnaire_key": "mini", "external_id": "ext-1", "answer_data": {"v_1": "a1"}});
        assert_error(
            &app.post(&responses("d1"), &body).await,
            422,
            error("external_id", "taken"),
        );
    }
);

db_test!(async fn missing_or_blank_external_id_is_blank(app) {
    for external_id in [None, Some(json!(null)), Some(json!("")), Some(json!("   "))] {
        let mut body = json!({"questionnaire_key": "phq9", "answer_data": {"v_1": "a0"}});
        if let Some(id) = external_id {
            body["external_id"] = id;
        }
        assert_error(&app.post(&responses("d1"), &body).await, 422, error("external_id", "blank"));
    }
    assert_eq!(app.get(&responses("d1")).await.body, json!([]));
});

db_test!(async fn integer_external_id_is_accepted_as_its_decimal_form(app) {
    let body = json!({"questionnaire_key": "phq9", "external_id": 12345, "answer_data": {"v_1": "a0"}});
    let answer = app.post(&responses("d1"), &body).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    assert_eq!(answer.body["external_id"], "12345");
    // The same id as a string is the same response.
    let again = post_phq9(&app, "d1", "12345", json!({"v_1": "a0"})).await;
    assert_eq!(again.status, 200, "{}", again.text);
    assert_eq!(again.body, answer.body);
});

db_test!(async fn unknown_questionnaire_is_not_found(app) {
    let body = json!({"questionnaire_key": "phq10", "external_id": "ext-1", "answer_data": {"v_1": "a0"}});
    assert_error(&app.post(&responses("d1"), &body).await, 404, error("questionnaire_key", "not_found"));
    assert_eq!(app.get("/api/v1/dossiers/d1/respondents").await.body, json!([]));
});

db_test!(async fn answer_for_unknown_question_is_rejected(app) {
    let answer = post_phq9(&app, "d1", "ext-1", json!({"v_1": "a0", "v_11": "a0", "phq9_2": "a1"})).await;
    assert_error(&answer, 422, json!({"errors": {"answer_data": {"phq9_2": ["unknown_question"], "v_11": ["unknown_question"]}}}));
});

db_test!(async fn answer_that_is_not_an_option_of_its_question_is_rejected(app) {
    let answer = post_phq9(&app, "d1", "ext-1", json!({"v_1": "a4", "v_2": 1, "v_3": "A1", "v_4": true, "v_5": "a0"})).await;
    assert_error(
        &answer,
        422,
        json!({"errors": {"answer_data": {"v_1": ["invalid_option"], "v_2": ["invalid_option"], "v_3": ["invalid_option"], "v_4": ["invalid_option"]}}}),
    );
    assert_eq!(app.get(&responses("d1")).await.body, json!([]));
});

db_test!(async fn null_answers_are_unanswered(app) {
    let answer = post_phq9(&app, "d1", "ext-1", json!({"v_1": null, "v_2": "a2"})).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    assert_eq!(answer.body["values"]["v_1"], Value::Null);
    assert_eq!(answer.body["values"]["v_2"], "a2");
    // Even when every answer is null the response is stored.
    let answer = post_phq9(&app, "d1", "ext-2", json!({"v_1": null})).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    assert!(answer.body["values"].as_object().is_some_and(|v| v.len() == 10 && v.values().all(Value::is_null)));
});

db_test!(async fn missing_fields_are_all_named_in_one_answer(app) {
    let answer = app.post(&responses("d1"), &json!({})).await;
    assert_error(
        &answer,
        422,
        json!({"errors": {"external_id": ["blank"], "questionnaire_key": ["blank"], "answer_data": ["blank"]}}),
    );
    let answer = app.post(&responses("d1"), &json!({"questionnaire_key": "phq9", "external_id": "x", "answer_data": {}})).await;
    assert_error(&answer, 422, error("answer_data", "blank"));
});

db_test!(async fn fields_of_the_wrong_json_type_are_invalid(app) {
    let cases = [
        ("questionnaire_key", json!(true)),
        ("questionnaire_key", json!(["phq9"])),
        ("questionnaire_key", json!({"key": "phq9"})),
        ("questionnaire_key", json!(9)),
        ("external_id", json!(true)),
        ("external_id", json!(1.5)),
        ("external_id", json!(["ext-1"])),
        ("external_id", json!({"id": 1})),
        ("answer_data", json!("v_1=a0")),
        ("answer_data", json!([["v_1", "a0"]])),
        ("answer_data", json!(1)),
        ("started_at", json!("yesterday")),
        ("started_at", json!(1.772e9)),
        ("started_at", json!(true)),
        ("started_at", json!({"unix": START_UNIX})),
        ("filled_out_at", json!("2026-03-01T09:00:00Z")),
        ("filled_out_at", json!([START_UNIX])),
        ("respondent", json!("teacher")),
        ("respondent", json!(1)),
        ("respondent_type", json!("parent")),
        ("entered_by", json!(42)),
        ("entered_by", json!({"id": "doc"})),
    ];
    for (field, value) in cases {
        let mut body = json!({"questionnaire_key": "phq9", "external_id": "ext-1", "answer_data": {"v_1": "a0"}});
        body[field] = value.clone();
        let answer = app.post(&responses("d1"), &body).await;
        assert_eq!(answer.status, 422, "{field} = {value}: {}", answer.text);
        assert_eq!(answer.body, error(field, "invalid"), "{field} = {value}");
    }
    assert_eq!(app.get(&responses("d1")).await.body, json!([]));
});

db_test!(async fn unix_times_may_be_strings_of_digits(app) {
    let body = json!({"questionnaire_key": "phq9", "external_id": "ext-1", "answer_data": {"v_1": "a0"},
                      "filled_out_at": (START_UNIX - 60).to_string()});
    let answer = app.post(&responses("d1"), &body).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    assert_eq!(answer.body["completed_at"], "2026-03-01T08:59:00.000+00:00");
});

db_test!(async fn first_write_creates_the_dossier_with_its_patient(app) {
    assert_eq!(app.get("/api/v1/dossiers/d1/respondents").await.body, json!([]));
    let body = posted(&app, "d1", "ext-1").await;
    let respondents = app.get("/api/v1/dossiers/d1/respondents").await.body;
    assert_eq!(respondents, json!([{"id": body["respondent_id"], "label": "Patient", "respondent_type": "patient"}]));
    // A second write reuses the patient.
    let second = posted(&app, "d1", "ext-2").await;
    assert_eq!(second["respondent_id"], body["respondent_id"]);
    assert_eq!(app.get("/api/v1/dossiers/d1/respondents").await.body.as_array().map(Vec::len), Some(1));
});

db_test!(async fn the_same_external_id_in_two_dossiers_is_two_responses(app) {
    let a = posted(&app, "d1", "ext-1").await;
    let b = post_phq9(&app, "d2", "ext-1", json!({"v_1": "a0"})).await;
    assert_eq!(b.status, 201, "{}", b.text);
    assert_ne!(id_of(&a), id_of(&b.body));
    assert_ne!(a["respondent_id"], b.body["respondent_id"]);
    assert_eq!(ids(&app.get(&responses("d1")).await.body), [id_of(&a)]);
    assert_eq!(ids(&app.get(&responses("d2")).await.body), [id_of(&b.body)]);
});

db_test!(async fn stored_response_is_listed_at_once(app) {
    let body = posted(&app, "d1", "ext-1").await;
    assert_eq!(app.get(&responses("d1")).await.body, json!([body]));
});

db_test!(
    async fn times_are_written_in_the_configured_time_zone(app: spawn_in_amsterdam) {
        let body = json!({"questionnaire_key": "phq9", "external_id": "winter", "answer_data": {"v_1": "a0"}, "started_at": START_UNIX - 600});
        let winter = app.post(&responses("d1"), &body).await;
        assert_eq!(winter.status, 201, "{}", winter.text);
        assert_eq!(winter.body["started_at"], "2026-03-01T09:50:00.000+01:00");
        assert_eq!(winter.body["completed_at"], "2026-03-01T10:00:00.000+01:00");
        // 2026-07-01T08:00:00Z, in summer time.
        let summer = json!({"questionnaire_key": "phq9", "external_id": "summer", "answer_data": {"v_1": "a0"}, "filled_out_at": 1_782_892_800});
        app.clock.advance(Duration::days(200));
        let summer = app.post(&responses("d1"), &summer).await;
        assert_eq!(summer.status, 201, "{}", summer.text);
        assert_eq!(summer.body["completed_at"], "2026-07-01T10:00:00.000+02:00");
    }
);

db_test!(async fn concurrent_first_writes_make_one_dossier_with_one_patient(app) {
    let (a, b, c) = tokio::join!(
        post_phq9(&app, "new", "a", json!({"v_1": "a0"})),
        post_phq9(&app, "new", "b", json!({"v_1": "a1"})),
        post_phq9(&app, "new", "c", json!({"v_1": "a2"}))
    );
    for answer in [&a, &b, &c] {
        assert_eq!(answer.status, 201, "{}", answer.text);
        assert_eq!(answer.body["respondent_id"], a.body["respondent_id"]);
    }
    let respondents = app.get("/api/v1/dossiers/new/respondents").await.body;
    assert_eq!(respondents, json!([{"id": a.body["respondent_id"], "label": "Patient", "respondent_type": "patient"}]));
    assert_eq!(ids(&app.get(&responses("new")).await.body).len(), 3);
});
