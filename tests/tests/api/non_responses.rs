//! `/api/v1/dossiers/:dossier_id/non_responses`: the Non-response object
//! (exact JSON, times in the configured zone), list and get under both path
//! forms, registering one for pending responses (which withdraws them),
//! every refusal with its body, the access log and the right it needs.

use chrono::Duration;
use host::store::AccessEntry;
use serde_json::Value;
use tests::reqwest::Method;
use tests::{Answer, TestApp, basic, create_token, db_test, json};

use crate::support::*;

const GROUP_A: &str = "Patiënt is wel benaderd voor de ROM meting, maar:";
const GROUP_B: &str = "Patiënt is niet benaderd voor de ROM meting, omdat:";

/// `/api/v1/dossiers/{dossier}/non_responses`
fn non_responses(dossier: &str) -> String {
    format!("/api/v1/dossiers/{dossier}/non_responses")
}

/// `/api/v1/dossiers/{dossier}/non_responses/{id}`
fn non_response(dossier: &str, id: impl std::fmt::Display) -> String {
    format!("/api/v1/dossiers/{dossier}/non_responses/{id}")
}

/// POSTs a registration for these responses with this reason.
async fn register(app: &TestApp, dossier: &str, ids: &[i64], code: &str, other: &str) -> Answer {
    let body = json!({"response_ids": ids, "reason_code": code, "reason_other": other});
    app.post(&non_responses(dossier), &body).await
}

/// Registers code 01 for these responses, which must succeed; the answer.
async fn registered(app: &TestApp, dossier: &str, ids: &[i64]) -> Value {
    let answer = register(app, dossier, ids, "01", "").await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    answer.body
}

/// A response prepared for now, open without a window.
async fn open(app: &TestApp, dossier: &str) -> i64 {
    prepare(app, dossier, "phq9", None, None).await
}

/// The non-response object, as the API writes it.
fn object(
    id: i64,
    at: &str,
    response_ids: &[i64],
    group: &str,
    option: &str,
    code: &str,
    other: &str,
) -> Value {
    json!({
        "id": id,
        "non_response_at": at,
        "response_ids": response_ids,
        "reason_group": group,
        "reason_option": option,
        "reason_code": code,
        "reason_other": other,
    })
}

/// What the scheduler does for expired responses (not public): a code 04
/// non-response that links them without withdrawing them.
async fn register_expiry(app: &TestApp, dossier: &str, ids: &[i64]) -> i64 {
    let dossier_id = app
        .sql(&format!(
            "SELECT id FROM dossiers WHERE epd_id = '{dossier}'"
        ))
        .await
        .expect("the dossier exists");
    let at = app.state.now().timestamp_millis();
    let id = app
        .sql(&format!(
            "INSERT INTO non_responses (dossier_id, reason_code, reason_other, non_response_at) \
             VALUES ({dossier_id}, '04', '', {at}) RETURNING id"
        ))
        .await
        .expect("inserted");
    let list = ids
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    app.sql(&format!(
        "UPDATE responses SET non_response_id = {id} WHERE id IN ({list})"
    ))
    .await;
    id
}

// ---------------------------------------------------------------------------
// The object, list and get
// ---------------------------------------------------------------------------

db_test!(async fn an_unknown_dossier_has_no_non_responses(app) {
    for path in ["/api/v1/dossiers/nobody/non_responses", "/api/v1/dossier/nobody/non_responses.json"] {
        let answer = app.get(path).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.text);
        assert_eq!(answer.body, json!([]), "{path}");
        assert_eq!(answer.headers["content-type"], "application/json; charset=utf-8");
    }
    assert_error(&app.get(&non_response("nobody", 1)).await, 404, error("non_response", "not_found"));
});

db_test!(async fn a_registration_answers_the_non_response_object(app) {
    let a = open(&app, "d1").await;
    let b = open(&app, "d1").await;
    let answer = register(&app, "d1", &[b, a], "01", "").await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    assert_eq!(answer.headers["content-type"], "application/json; charset=utf-8");
    let id = id_of(&answer.body);
    let expected = object(id, START_WIRE, &[a, b], GROUP_A, "Patiënt weigert meting.", "01", "");
    assert_eq!(answer.body, expected);
    // The fields in the order of docs/api/non-responses.md#non-response-object,
    // nothing more.
    let keys: Vec<&str> = answer.body.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
    assert_eq!(
        keys,
        ["id", "non_response_at", "response_ids", "reason_group", "reason_option", "reason_code", "reason_other"]
    );
    assert_eq!(app.get(&non_responses("d1")).await.body, json!([expected]));
    assert_eq!(app.get(&non_response("d1", id)).await.body, expected);
});

db_test!(async fn the_list_holds_the_dossiers_non_responses_oldest_first(app) {
    let first = open(&app, "d1").await;
    let second = open(&app, "d1").await;
    let third = open(&app, "d1").await;
    let elsewhere = open(&app, "d2").await;
    let one = id_of(&registered(&app, "d1", &[first]).await);
    app.clock.advance(Duration::minutes(90));
    let answer = register(&app, "d1", &[third, second], "06b", "").await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    let two = id_of(&answer.body);
    registered(&app, "d2", &[elsewhere]).await;
    let listed = app.get(&non_responses("d1")).await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert_eq!(
        listed.body,
        json!([
            object(one, START_WIRE, &[first], GROUP_A, "Patiënt weigert meting.", "01", ""),
            object(
                two,
                "2026-03-01T10:30:00.000+00:00",
                &[second, third],
                GROUP_B,
                "Patiënt niet in staat werd geacht tot responderen vanwege de ernst van de stoornis.",
                "06b",
                ""
            ),
        ])
    );
});

db_test!(
    async fn times_are_written_in_the_configured_zone(app: spawn_in_amsterdam) {
        // A response whose window opens now shows now as the API writes times.
        let id = prepare(&app, "d1", "phq9", Some(Duration::zero()), None).await;
        let open_from = app.get(&responses("d1")).await.body[0]["open_from"].clone();
        assert_eq!(open_from, "2026-03-01T10:00:00.000+01:00");
        let body = registered(&app, "d1", &[id]).await;
        assert_eq!(body["non_response_at"], open_from);
        assert_eq!(
            app.get(&non_response("d1", id_of(&body))).await.body["non_response_at"],
            open_from
        );
        // Summer time: +02:00.
        app.clock.advance(Duration::days(120));
        let id = open(&app, "d1").await;
        let body = registered(&app, "d1", &[id]).await;
        assert_eq!(body["non_response_at"], "2026-06-29T11:00:00.000+02:00");
    }
);

db_test!(async fn both_path_forms_suffixes_and_trailing_slashes_answer(app) {
    let id = open(&app, "d1").await;
    let created = app
        .post("/api/v1/dossier/d1/non_responses/", &json!({"response_ids": [id], "reason_code": "07"}))
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let nr = id_of(&created.body);
    for path in [
        "/api/v1/dossiers/d1/non_responses".to_owned(),
        "/api/v1/dossier/d1/non_responses".to_owned(),
        "/api/v1/dossier/d1/non_responses/".to_owned(),
        "/api/v1/dossiers/d1/non_responses.json".to_owned(),
    ] {
        let answer = app.get(&path).await;
        assert_eq!(answer.status, 200, "{path}");
        assert_eq!(answer.body, json!([created.body]), "{path}");
    }
    for path in [
        format!("/api/v1/dossiers/d1/non_responses/{nr}"),
        format!("/api/v1/dossier/d1/non_responses/{nr}"),
        format!("/api/v1/dossier/d1/non_responses/{nr}.json"),
        format!("/api/v1/dossiers/d1/non_responses/{nr}/"),
    ] {
        let answer = app.get(&path).await;
        assert_eq!(answer.status, 200, "{path}");
        assert_eq!(answer.body, created.body, "{path}");
    }
});

db_test!(async fn unknown_foreign_and_non_numeric_ids_are_not_found(app) {
    let own = open(&app, "d1").await;
    let foreign = open(&app, "d2").await;
    let nr = id_of(&registered(&app, "d1", &[own]).await);
    let theirs = id_of(&registered(&app, "d2", &[foreign]).await);
    let not_found = error("non_response", "not_found");
    for segment in [theirs.to_string(), (theirs + 100).to_string(), "abc".to_owned(), "0".to_owned(), "-1".to_owned(), "1.5".to_owned(), "99999999999999999999".to_owned()] {
        assert_error(&app.get(&non_response("d1", &segment)).await, 404, not_found.clone());
    }
    // Its own dossier finds it.
    assert_eq!(app.get(&non_response("d1", nr)).await.status, 200);
    assert_eq!(app.get(&non_response("d2", theirs)).await.status, 200);
});

// ---------------------------------------------------------------------------
// Registering
// ---------------------------------------------------------------------------

db_test!(async fn registering_withdraws_the_responses_it_names(app) {
    let kept = open(&app, "d1").await;
    let scheduled = prepare(&app, "d1", "phq9", Some(Duration::days(1)), Some(Duration::days(2))).await;
    let opened = prepare(&app, "d1", "phq9", None, Some(Duration::hours(2))).await;
    let aborted = open(&app, "d1").await;
    abort(&app, "d1", aborted).await;
    let expired = prepare(&app, "d1", "phq9", None, Some(Duration::hours(1))).await;
    app.clock.advance(Duration::minutes(61));
    let statuses: Vec<Value> = app.get(&responses("d1")).await.body.as_array().cloned().unwrap_or_default()
        .iter().map(|r| r["status"].clone()).collect();
    assert_eq!(statuses, [json!("open"), json!("scheduled"), json!("open"), json!("aborted"), json!("expired")]);
    // Each kind of pending response may be named.
    let named = [expired, aborted, opened, scheduled];
    let body = registered(&app, "d1", &named).await;
    let nr = id_of(&body);
    assert_eq!(body["response_ids"], json!([scheduled, opened, aborted, expired]));
    assert_eq!(body["non_response_at"], "2026-03-01T10:01:00.000+00:00");
    // Gone from the response list, and from every status filter.
    assert_eq!(ids(&app.get(&responses("d1")).await.body), [kept]);
    for status in ["open", "scheduled", "aborted", "expired"] {
        let listed = app.get(&format!("{}?status={status}", responses("d1"))).await;
        assert!(ids(&listed.body).iter().all(|id| *id == kept), "{status}: {}", listed.text);
    }
    // Stored with their non-response.
    let linked = app
        .sql(&format!("SELECT COUNT(*) FROM responses WHERE non_response_id = {nr} AND withdrawn_at IS NOT NULL"))
        .await;
    assert_eq!(linked, Some(4));
    assert_eq!(app.get(&non_response("d1", nr)).await.body["response_ids"], body["response_ids"]);
});

db_test!(async fn a_wrapped_body_is_accepted(app) {
    let id = open(&app, "d1").await;
    let body = json!({"non_response": {"response_ids": [id], "reason_code": "02a"}});
    let answer = app.post(&non_responses("d1"), &body).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    assert_eq!(
        answer.body,
        object(id_of(&answer.body), START_WIRE, &[id], GROUP_A, "Patiënt is niet in staat tot responderen vanwege taal.", "02a", "")
    );
});

db_test!(async fn a_repeated_id_counts_once(app) {
    let id = open(&app, "d1").await;
    let body = registered(&app, "d1", &[id, id, id]).await;
    assert_eq!(body["response_ids"], json!([id]));
});

db_test!(async fn code_10_needs_reason_other(app) {
    let id = open(&app, "d1").await;
    for other in [json!(null), json!(""), json!("   ")] {
        let answer = app.post(&non_responses("d1"), &json!({"response_ids": [id], "reason_code": "10", "reason_other": other})).await;
        assert_error(&answer, 422, error("reason_other", "blank"));
    }
    let answer = app.post(&non_responses("d1"), &json!({"response_ids": [id], "reason_code": "10"})).await;
    assert_error(&answer, 422, error("reason_other", "blank"));
    // Nothing was stored by the refusals.
    assert_eq!(app.get(&non_responses("d1")).await.body, json!([]));
    assert_eq!(ids(&app.get(&responses("d1")).await.body), [id]);
    let answer = register(&app, "d1", &[id], "10", "Patiënt is verhuisd naar het buitenland").await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    assert_eq!(
        answer.body,
        object(
            id_of(&answer.body),
            START_WIRE,
            &[id],
            GROUP_B,
            "Andere reden, namelijk:",
            "10",
            "Patiënt is verhuisd naar het buitenland"
        )
    );
});

db_test!(async fn other_codes_keep_reason_other_when_given(app) {
    let id = open(&app, "d1").await;
    let answer = register(&app, "d1", &[id], "09b", "  gestopt na twee sessies\n").await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    assert_eq!(answer.body["reason_other"], "gestopt na twee sessies");
    assert_eq!(answer.body["reason_group"], GROUP_B);
    assert_eq!(
        answer.body["reason_option"],
        "De behandeling niet regulier is afgerond door eenzijdig staken van de behandeling door de patiënt."
    );
});

// ---------------------------------------------------------------------------
// Refusals
// ---------------------------------------------------------------------------

db_test!(async fn missing_fields_are_blank_and_reported_together(app) {
    let path = non_responses("d1");
    assert_error(&app.post(&path, &json!({})).await, 422, json!({"errors": {"response_ids": ["blank"], "reason_code": ["blank"]}}));
    assert_error(
        &app.post(&path, &json!({"response_ids": [], "reason_code": "", "reason_other": 3})).await,
        422,
        json!({"errors": {"response_ids": ["blank"], "reason_code": ["blank"], "reason_other": ["invalid"]}}),
    );
    assert_error(
        &app.post(&path, &json!({"response_ids": null, "reason_code": null})).await,
        422,
        json!({"errors": {"response_ids": ["blank"], "reason_code": ["blank"]}}),
    );
    // An empty wrapper is an empty body.
    assert_error(
        &app.post(&path, &json!({"non_response": {}})).await,
        422,
        json!({"errors": {"response_ids": ["blank"], "reason_code": ["blank"]}}),
    );
});

db_test!(async fn response_ids_must_be_an_array_of_integers(app) {
    let id = open(&app, "d1").await;
    let too_many: Vec<i64> = (1..=1001).collect();
    for ids in [json!(id), json!(id.to_string()), json!([id.to_string()]), json!([id, 1.5]), json!([id, null]), json!({"a": id}), json!([[id]]), json!([18446744073709551615_u64]), json!(too_many)] {
        let answer = app.post(&non_responses("d1"), &json!({"response_ids": ids, "reason_code": "04"})).await;
        assert_error(&answer, 422, error("response_ids", "invalid"));
    }
    assert_eq!(ids(&app.get(&responses("d1")).await.body), [id]);
});

db_test!(async fn reason_codes_outside_the_list_are_invalid(app) {
    let id = open(&app, "d1").await;
    for code in [json!("11"), json!("00"), json!("4"), json!("02A"), json!("02c"), json!(" 04"), json!(4), json!(["04"]), json!(true)] {
        let answer = app.post(&non_responses("d1"), &json!({"response_ids": [id], "reason_code": code})).await;
        assert_error(&answer, 422, error("reason_code", "invalid"));
    }
    // Every code of the list is taken.
    for code in ["01", "02", "02a", "02b", "03", "04", "05", "06", "06a", "06b", "07", "08", "09", "09a", "09b", "10"] {
        let id = open(&app, "d1").await;
        let answer = register(&app, "d1", &[id], code, "reden").await;
        assert_eq!(answer.status, 201, "{code}: {}", answer.text);
        assert_eq!(answer.body["reason_code"], code);
        let group = if code < "06" { GROUP_A } else { GROUP_B };
        assert_eq!(answer.body["reason_group"], group, "{code}");
    }
});

db_test!(async fn reason_other_is_at_most_1000_characters_of_text(app) {
    let id = open(&app, "d1").await;
    for other in [json!("x".repeat(1001)), json!("a\u{0}b"), json!("bell\u{7}"), json!(["tekst"]), json!(12)] {
        let answer = app.post(&non_responses("d1"), &json!({"response_ids": [id], "reason_code": "10", "reason_other": other})).await;
        assert_error(&answer, 422, error("reason_other", "invalid"));
    }
    // 1000 characters of two bytes each are fine.
    let answer = register(&app, "d1", &[id], "10", &"é".repeat(1000)).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
});

db_test!(async fn several_field_errors_come_in_one_answer(app) {
    let answer = app
        .post(&non_responses("d1"), &json!({"response_ids": "1", "reason_code": "99", "reason_other": "x".repeat(1001)}))
        .await;
    assert_error(
        &answer,
        422,
        json!({"errors": {"response_ids": ["invalid"], "reason_code": ["invalid"], "reason_other": ["invalid"]}}),
    );
});

db_test!(async fn response_ids_of_another_dossier_are_not_found(app) {
    let own = open(&app, "d1").await;
    let foreign = open(&app, "d2").await;
    let not_found = error("response_ids", "not_found");
    for ids in [vec![foreign], vec![own, foreign], vec![own + foreign + 1000], vec![0], vec![-5]] {
        assert_error(&register(&app, "d1", &ids, "01", "").await, 404, not_found.clone());
    }
    // A dossier that does not exist has no responses.
    assert_error(&register(&app, "nobody", &[own], "01", "").await, 404, not_found.clone());
    // Nothing changed.
    assert_eq!(app.get(&non_responses("d1")).await.body, json!([]));
    assert_eq!(app.get(&non_responses("nobody")).await.body, json!([]));
    assert_eq!(ids(&app.get(&responses("d1")).await.body), [own]);
    let theirs = app.get(&responses("d2")).await.body;
    assert_eq!(ids(&theirs), [foreign]);
    assert_eq!(theirs[0]["non_response_id"], Value::Null);
});

db_test!(async fn a_completed_response_is_invalid(app) {
    let completed = id_of(&posted(&app, "d1", "ext-1").await);
    let pending = open(&app, "d1").await;
    for ids in [vec![completed], vec![pending, completed]] {
        assert_error(&register(&app, "d1", &ids, "05", "").await, 422, error("response_ids", "invalid"));
    }
    // A prepared response completed by PUT is no longer pending either.
    let body = json!({"questionnaire_key": "phq9", "answer_data": phq9_all_answered()});
    assert_eq!(app.put(&response("d1", pending), &body).await.status, 200);
    assert_error(&register(&app, "d1", &[pending], "05", "").await, 422, error("response_ids", "invalid"));
    assert_eq!(app.get(&non_responses("d1")).await.body, json!([]));
    assert_eq!(ids(&app.get(&responses("d1")).await.body), [completed, pending]);
});

db_test!(async fn a_response_already_in_a_non_response_is_invalid(app) {
    // Expired, and registered by the service with code 04: still listed.
    let expired = prepare(&app, "d1", "phq9", None, Some(Duration::hours(1))).await;
    let other = open(&app, "d1").await;
    app.clock.advance(Duration::hours(7));
    let nr = register_expiry(&app, "d1", &[expired]).await;
    let listed = app.get(&responses("d1")).await.body;
    assert_eq!(ids(&listed), [expired, other]);
    assert_eq!(listed[0]["status"], "expired");
    assert_eq!(listed[0]["non_response_id"], nr);
    assert_eq!(
        app.get(&non_responses("d1")).await.body,
        json!([object(nr, "2026-03-01T16:00:00.000+00:00", &[expired], GROUP_A, "Patiënt retourneert meetinstrument niet.", "04", "")])
    );
    // A professional cannot register it again, alone or with others.
    for ids in [vec![expired], vec![other, expired]] {
        assert_error(&register(&app, "d1", &ids, "01", "").await, 422, error("response_ids", "invalid"));
    }
    assert_eq!(app.get(&non_responses("d1")).await.body.as_array().map(Vec::len), Some(1));
});

db_test!(async fn a_withdrawn_response_is_not_found_when_named_again(app) {
    let id = open(&app, "d1").await;
    registered(&app, "d1", &[id]).await;
    assert_error(&register(&app, "d1", &[id], "01", "").await, 404, error("response_ids", "not_found"));
});

db_test!(async fn bad_bodies_get_the_documented_answers(app) {
    let id = open(&app, "d1").await;
    let path = non_responses("d1");
    let malformed = error("base", "malformed_json");
    for (bytes, content_type) in [
        ("{\"response_ids\": [", "application/json"),
        ("[1, 2]", "application/json"),
        ("\"04\"", "application/json; charset=utf-8"),
        ("", "application/json"),
    ] {
        let answer = app.send(Method::POST, &path, Some((bytes.as_bytes().to_vec(), content_type))).await;
        assert_error(&answer, 400, malformed.clone());
    }
    let body = json!({"response_ids": [id], "reason_code": "04"}).to_string().into_bytes();
    let answer = app.send(Method::POST, &path, Some((body.clone(), "text/plain"))).await;
    assert_error(&answer, 415, error("base", "unsupported_media_type"));
    let big = json!({"response_ids": [id], "reason_code": "10", "reason_other": "x".repeat(2 * 1024 * 1024)});
    assert_error(&app.post(&path, &big).await, 413, error("base", "too_large"));
    // Declared JSON with its charset, it is taken.
    let answer = app.send(Method::POST, &path, Some((body, "application/json; charset=utf-8"))).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
});

db_test!(async fn other_methods_are_not_allowed(app) {
    for (method, path) in [(Method::PUT, non_responses("d1")), (Method::DELETE, non_response("d1", 1)), (Method::POST, non_response("d1", 1))] {
        let answer = app.send(method.clone(), &path, None).await;
        assert_error(&answer, 405, error("base", "method_not_allowed"));
    }
});

// ---------------------------------------------------------------------------
// Access
// ---------------------------------------------------------------------------

db_test!(async fn every_request_is_recorded_in_the_access_log(app) {
    let id = open(&app, "d1").await;
    let listed = app.get(&non_responses("d1")).await;
    let created = register(&app, "d1", &[id], "03", "").await;
    let got = app.get(&non_response("d1", id_of(&created.body))).await;
    let missing = app.get(&non_response("d1", 999)).await;
    let gone = register(&app, "d1", &[id], "03", "").await;
    let completed = id_of(&posted(&app, "d1", "ext-1").await);
    let not_pending = register(&app, "d1", &[completed], "03", "").await;
    let invalid = app.post(&non_responses("d1"), &json!({})).await;
    let malformed = app.send(Method::POST, &non_responses("d1"), Some((b"{".to_vec(), "application/json"))).await;
    let alias = app.get("/api/v1/dossier/d1/non_responses.json").await;
    let statuses: Vec<u16> = [&listed, &created, &got, &missing, &gone, &not_pending, &invalid, &malformed, &alias]
        .iter()
        .map(|a| a.status.as_u16())
        .collect();
    assert_eq!(statuses, [200, 201, 200, 404, 404, 422, 422, 400, 200]);
    let log: Vec<(String, u16, Option<String>)> = app
        .state
        .store()
        .access_log(Some("d1"), None)
        .await
        .expect("access log")
        .into_iter()
        .filter(|e: &AccessEntry| e.action.contains("non_responses"))
        .map(|e| (e.action, e.status, e.consumer_key))
        .collect();
    let list = "GET /api/v1/dossiers/{dossier_id}/non_responses";
    let one = "GET /api/v1/dossiers/{dossier_id}/non_responses/{id}";
    let post = "POST /api/v1/dossiers/{dossier_id}/non_responses";
    let key = Some(tests::TEST_KEY.to_owned());
    let expected: Vec<(String, u16, Option<String>)> = [
        (list, 200),
        (post, 201),
        (one, 200),
        (one, 404),
        (post, 404),
        (post, 422),
        (post, 422),
        (post, 400),
        (list, 200),
    ]
    .into_iter()
    .map(|(action, status)| (action.to_owned(), status, key.clone()))
    .collect();
    assert_eq!(log, expected);
});

db_test!(async fn a_token_without_the_non_responses_right_is_forbidden(app) {
    let id = open(&app, "d1").await;
    let secret = create_token(&app.state, "responses-only", "responses,respondents").await;
    let auth = basic("responses-only", &secret);
    let body = json!({"response_ids": [id], "reason_code": "04"});
    let requests = [
        (Method::GET, non_responses("d1"), None),
        (Method::GET, non_response("d1", 1), None),
        (Method::POST, non_responses("d1"), Some((body.to_string().into_bytes(), "application/json"))),
    ];
    for (method, path, body) in requests.clone() {
        let answer = app.send_as(method.clone(), &path, body, Some(&auth)).await;
        assert_error(&answer, 403, error("base", "right_missing"));
    }
    // Refused before anything was stored, and recorded.
    assert_eq!(ids(&app.get(&responses("d1")).await.body), [id]);
    app.state.flush_refusals().await;
    let refused = app.state.store().access_log(Some("d1"), None).await.expect("access log");
    assert_eq!(refused.iter().filter(|e| e.status == 403 && e.refusals == Some(1)).count(), 3);
    // Without credentials: 401.
    assert_eq!(app.send_as(Method::GET, &non_responses("d1"), None, None).await.status, 401);
    // The right alone is enough.
    let secret = create_token(&app.state, "non-responses-only", "non_responses").await;
    let auth = basic("non-responses-only", &secret);
    let statuses: Vec<u16> = {
        let mut out = Vec::new();
        for (method, path, body) in requests {
            out.push(app.send_as(method, &path, body, Some(&auth)).await.status.as_u16());
        }
        out
    };
    assert_eq!(statuses, [200, 404, 201]);
});
