//! GET /api/v1/dossiers/:dossier_id/responses: order, every filter, status
//! over time, and the shape of responses that are not completed.

use chrono::Duration;
use host::domain::answers::GivenAnswers;
use host::domain::ids::{ResponseId, SubscriptionId};
use host::store::Preparation;
use serde_json::Value;
use tests::{TestApp, db_test, json};

use crate::support::*;

/// Ids listed for `query` in dossier d1.
async fn listed(app: &TestApp, query: &str) -> Vec<i64> {
    let answer = app.get(&format!("{}?{query}", responses("d1"))).await;
    assert_eq!(answer.status, 200, "{query}: {}", answer.text);
    ids(&answer.body)
}

/// POSTs a PHQ-9 response filled out `hours_before` the start time.
async fn post_at(app: &TestApp, dossier: &str, external_id: &str, hours_before: i64) -> i64 {
    let body = json!({"questionnaire_key": "phq9", "external_id": external_id, "answer_data": {"v_1": "a1"},
                      "filled_out_at": START_UNIX - hours_before * 3600});
    let answer = app.post(&responses(dossier), &body).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    id_of(&answer.body)
}

db_test!(async fn unknown_dossier_lists_nothing(app) {
    let answer = app.get(&responses("nobody")).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body, json!([]));
    assert_eq!(app.get(&format!("{}?status=open&questionnaire_keys[]=phq9", responses("nobody"))).await.body, json!([]));
});

db_test!(async fn responses_are_listed_by_id(app) {
    // Filled out in the opposite order of storing.
    let first = post_at(&app, "d1", "a", 1).await;
    let prepared = prepare(&app, "d1", "phq9", None, None).await;
    let second = post_at(&app, "d1", "b", 5).await;
    let third = post_at(&app, "d1", "c", 3).await;
    post_at(&app, "d2", "a", 2).await;
    assert_eq!(listed(&app, "").await, [first, prepared, second, third]);
});

db_test!(
    async fn questionnaire_keys_filter_takes_both_array_spellings(app: spawn_with_mini) {
        let phq9 = posted(&app, "d1", "p").await;
        let mini = app.post(&responses("d1"), &json!({"questionnaire_key": "mini", "external_id": "m", "answer_data": {"v_1": "a0"}})).await;
        assert_eq!(mini.status, 201, "{}", mini.text);
        let (phq9, mini) = (id_of(&phq9), id_of(&mini.body));
        assert_eq!(listed(&app, "questionnaire_keys[]=mini").await, [mini]);
        assert_eq!(listed(&app, "questionnaire_keys%5B%5D=phq9").await, [phq9]);
        assert_eq!(
            listed(&app, "questionnaire_keys[]=mini&questionnaire_keys[]=phq9").await,
            [phq9, mini]
        );
        assert_eq!(listed(&app, "questionnaire_keys=mini").await, [mini]);
        assert_eq!(
            listed(&app, "questionnaire_keys=phq9&questionnaire_keys=mini").await,
            [phq9, mini]
        );
        assert_eq!(
            listed(&app, "questionnaire_keys[]=gad7").await,
            Vec::<i64>::new()
        );
        assert_eq!(
            listed(&app, "questionnaire_keys[]=gad7&questionnaire_keys[]=mini").await,
            [mini]
        );
    }
);

db_test!(async fn completed_before_and_after_take_unix_seconds(app) {
    let three = post_at(&app, "d1", "a", 3).await;
    let two = post_at(&app, "d1", "b", 2).await;
    let one = post_at(&app, "d1", "c", 1).await;
    prepare(&app, "d1", "phq9", None, None).await;
    let at = |hours_before: f64| START_UNIX - (hours_before * 3600.0) as i64;
    assert_eq!(listed(&app, &format!("completed_after={}", at(2.5))).await, [two, one]);
    assert_eq!(listed(&app, &format!("completed_before={}", at(1.5))).await, [three, two]);
    assert_eq!(listed(&app, &format!("completed_after={}&completed_before={}", at(2.5), at(1.5))).await, [two]);
    assert_eq!(listed(&app, &format!("completed_after={}", at(0.5))).await, Vec::<i64>::new());
    assert_eq!(listed(&app, &format!("completed_before={}", at(-1.0))).await, [three, two, one]);
});

db_test!(async fn completed_before_and_after_take_iso_8601(app) {
    // Filled out at 06:00, 07:00 and 08:00 UTC.
    let three = post_at(&app, "d1", "a", 3).await;
    let two = post_at(&app, "d1", "b", 2).await;
    let one = post_at(&app, "d1", "c", 1).await;
    assert_eq!(listed(&app, "completed_after=2026-03-01T06:30:00Z").await, [two, one]);
    assert_eq!(listed(&app, "completed_after=2026-03-01T07:30:00.000%2B01:00").await, [two, one]);
    assert_eq!(listed(&app, "completed_before=2026-03-01T07:30:00%2B00:00").await, [three, two]);
    assert_eq!(listed(&app, "completed_after=2026-03-01T06:30:00&completed_before=2026-03-01T07:30:00").await, [two]);
    assert_eq!(listed(&app, "completed_before=2026-03-01").await, Vec::<i64>::new());
    assert_eq!(listed(&app, "completed_after=2026-03-01").await, [three, two, one]);
});

db_test!(async fn respondent_type_filter_selects_the_completer_type(app) {
    let patient = posted(&app, "d1", "p").await;
    let body = json!({"questionnaire_key": "phq9", "external_id": "q", "answer_data": {"v_1": "a0"}, "respondent": "profess"});
    let professional = app.post(&responses("d1"), &body).await.body;
    let prepared = prepare(&app, "d1", "phq9", None, None).await;
    assert_eq!(listed(&app, "respondent_type=patient").await, [id_of(&patient), prepared]);
    assert_eq!(listed(&app, "respondent_type=ad_hoc_professional").await, [id_of(&professional)]);
    assert_eq!(listed(&app, "respondent_type=teacher").await, Vec::<i64>::new());
});

db_test!(async fn respondent_id_filter_selects_the_respondent(app) {
    let patient = posted(&app, "d1", "p").await;
    let body = json!({"questionnaire_key": "phq9", "external_id": "q", "answer_data": {"v_1": "a0"}, "respondent": "profess"});
    let professional = app.post(&responses("d1"), &body).await.body;
    let other_dossier = posted(&app, "d2", "p").await;
    assert_eq!(listed(&app, &format!("respondent_id={}", patient["respondent_id"])).await, [id_of(&patient)]);
    assert_eq!(listed(&app, &format!("respondent_id={}", professional["respondent_id"])).await, [id_of(&professional)]);
    assert_eq!(listed(&app, &format!("respondent_id={}", other_dossier["respondent_id"])).await, Vec::<i64>::new());
});

db_test!(async fn protocol_subscription_id_filter_selects_the_subscription(app) {
    posted(&app, "d1", "p").await;
    let patient = app.get("/api/v1/dossiers/d1/respondents").await.body[0]["id"].as_i64().unwrap_or_default();
    let protocol = app.state.catalog().protocols()[0].id.0;
    // No public API subscribes yet: arrange the subscription in the database.
    let subscription = app
        .sql(&format!(
            "INSERT INTO protocol_subscriptions (dossier_id, protocol_id, respondent_id, start_at, daily_start_time, created_at) \
             SELECT id, {protocol}, {patient}, 0, 32400, 0 FROM dossiers WHERE epd_id = 'd1' RETURNING id"
        ))
        .await
        .unwrap_or_default();
    let item = Preparation {
        questionnaire_id: questionnaire_id(&app, "phq9"),
        protocol_subscription_id: Some(SubscriptionId(subscription)),
        ..Preparation::default()
    };
    let subscribed = prepare_items(&app, "d1", vec![item]).await[0];
    prepare(&app, "d1", "phq9", None, None).await;
    assert_eq!(listed(&app, &format!("protocol_subscription_id={subscription}")).await, [subscribed]);
    assert_eq!(listed(&app, &format!("protocol_subscription_id={}", subscription + 1)).await, Vec::<i64>::new());
});

/// Asserts which responses of d1 each status filter lists, and that each
/// of them shows that status.
async fn assert_statuses(app: &TestApp, expect: [(&str, Vec<i64>); 5]) {
    let all = app.get(&responses("d1")).await.body;
    for (name, wanted) in expect {
        assert_eq!(
            listed(app, &format!("status={name}")).await,
            wanted,
            "status={name} at {}",
            app.state.now()
        );
        for r in all
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| wanted.contains(&id_of(r)))
        {
            assert_eq!(r["status"], name, "{r}");
        }
    }
}

db_test!(async fn status_filter_follows_the_clock_through_all_five_states(app) {
    let completed = id_of(&posted(&app, "d1", "done").await);
    let open = prepare(&app, "d1", "phq9", Some(Duration::hours(-1)), Some(Duration::hours(5))).await;
    let unbounded = prepare(&app, "d1", "phq9", None, None).await;
    let later = prepare(&app, "d1", "phq9", Some(Duration::hours(1)), Some(Duration::hours(2))).await;
    let aborted = prepare(&app, "d1", "phq9", None, Some(Duration::hours(3))).await;
    abort(&app, "d1", aborted).await;
    let expired = prepare(&app, "d1", "phq9", Some(Duration::hours(-2)), Some(Duration::hours(-1))).await;

    assert_statuses(&app, [
        ("completed", vec![completed]),
        ("open", vec![open, unbounded]),
        ("scheduled", vec![later]),
        ("aborted", vec![aborted]),
        ("expired", vec![expired]),
    ])
    .await;
    // At open_from exactly the window is open.
    app.clock.advance(Duration::hours(1));
    assert_statuses(&app, [
        ("completed", vec![completed]),
        ("open", vec![open, unbounded, later]),
        ("scheduled", vec![]),
        ("aborted", vec![aborted]),
        ("expired", vec![expired]),
    ])
    .await;
    // At open_till exactly it has expired.
    app.clock.advance(Duration::hours(1));
    assert_statuses(&app, [
        ("completed", vec![completed]),
        ("open", vec![open, unbounded]),
        ("scheduled", vec![]),
        ("aborted", vec![aborted]),
        ("expired", vec![later, expired]),
    ])
    .await;
    // An aborted response expires with its window too.
    app.clock.advance(Duration::hours(1));
    assert_statuses(&app, [
        ("completed", vec![completed]),
        ("open", vec![open, unbounded]),
        ("scheduled", vec![]),
        ("aborted", vec![]),
        ("expired", vec![later, aborted, expired]),
    ])
    .await;
});

db_test!(async fn unknown_status_is_invalid(app) {
    posted(&app, "d1", "p").await;
    for value in ["new", "pending", "COMPLETED", "completed,open", "%00"] {
        let answer = app.get(&format!("{}?status={value}", responses("d1"))).await;
        assert_error(&answer, 422, error("status", "invalid"));
    }
});

db_test!(async fn malformed_times_and_ids_are_invalid(app) {
    let answer = app
        .get(&format!(
            "{}?completed_before=yesterday&completed_after=2026-13-01&protocol_subscription_id=1.5&respondent_id=abc&status=later",
            responses("d1")
        ))
        .await;
    assert_error(
        &answer,
        422,
        json!({"errors": {
            "completed_before": ["invalid"],
            "completed_after": ["invalid"],
            "protocol_subscription_id": ["invalid"],
            "respondent_id": ["invalid"],
            "status": ["invalid"],
        }}),
    );
    for query in ["completed_after=99999999999999", "completed_before=2026-03-01T25:00:00Z", "protocol_subscription_id=x1"] {
        let answer = app.get(&format!("{}?{query}", responses("d1"))).await;
        assert_eq!(answer.status, 422, "{query}: {}", answer.text);
        let field = query.split('=').next().unwrap_or_default();
        assert_eq!(answer.body, error(field, "invalid"), "{query}");
    }
});

db_test!(async fn more_than_a_thousand_questionnaire_keys_are_refused(app) {
    let one = posted(&app, "d1", "p").await;
    // A thousand keys, one of them the response's: the filter works.
    let keys = |n: usize, spelling: &str| {
        (0..n).map(|i| format!("{spelling}=k{i}")).chain(["questionnaire_keys[]=phq9".to_owned()]).collect::<Vec<_>>().join("&")
    };
    assert_eq!(listed(&app, &keys(999, "questionnaire_keys[]")).await, [id_of(&one)]);
    // One more, in either spelling: each would be one more parameter of
    // the database's query, for a list no catalog could fill.
    for spelling in ["questionnaire_keys[]", "questionnaire_keys"] {
        let answer = app.get(&format!("{}?{}", responses("d1"), keys(1000, spelling))).await;
        assert_error(&answer, 422, error("questionnaire_keys", "invalid"));
    }
    let answer = app.get(&format!("{}?{}&page[size]=10", responses("d1"), keys(2000, "questionnaire_keys"))).await;
    assert_error(&answer, 422, error("questionnaire_keys", "invalid"));
});

db_test!(async fn responses_that_are_not_completed_have_an_empty_outcome_and_no_values(app) {
    let open = prepare(&app, "d1", "phq9", None, None).await;
    let aborted = prepare(&app, "d1", "phq9", None, None).await;
    // Aborting keeps the answers given so far; they are not shown.
    let phq9 = app.state.catalog().questionnaire("phq9").expect("phq9").def.clone();
    let partial = GivenAnswers::check(&phq9, json!({"v_1": "a2"}).as_object().expect("an object"))
        .expect("valid answers")
        .enabled(&phq9, &Default::default())
        .answers;
    let store = app.state.store();
    store.abort_response("d1".to_owned(), ResponseId(aborted), partial, app.state.now()).await.expect("aborted");
    let list = app.get(&responses("d1")).await.body;
    assert_eq!(ids(&list), [open, aborted]);
    for r in list.as_array().into_iter().flatten() {
        assert_eq!(r["outcome"], empty_outcome(), "{r}");
        assert_eq!(r["values"], json!({}), "{r}");
        assert_eq!(r["completed_at"], Value::Null);
        assert_eq!(r["external_id"], Value::Null);
        assert_eq!(r["completer_type"], "patient");
    }
    assert_eq!(list[0]["status"], "open");
    assert_eq!(list[1]["status"], "aborted");
});

db_test!(
    async fn filters_combine(app: spawn_with_mini) {
        let phq9_early = post_at(&app, "d1", "a", 3).await;
        let phq9_late = post_at(&app, "d1", "b", 1).await;
        let mini = json!({"questionnaire_key": "mini", "external_id": "m", "answer_data": {"v_1": "a0"}, "filled_out_at": START_UNIX - 3600});
        assert_eq!(app.post(&responses("d1"), &mini).await.status, 201);
        prepare(&app, "d1", "phq9", None, None).await;
        assert_eq!(
            listed(
                &app,
                &format!(
                    "questionnaire_keys[]=phq9&status=completed&completed_after={}",
                    START_UNIX - 7200
                )
            )
            .await,
            [phq9_late]
        );
        assert_eq!(
            listed(
                &app,
                "questionnaire_keys[]=phq9&status=completed&respondent_type=patient"
            )
            .await,
            [phq9_early, phq9_late]
        );
    }
);

db_test!(
    async fn filter_times_without_an_offset_are_read_in_the_configured_time_zone(
        app: spawn_in_amsterdam,
    ) {
        // Filled out at 06:00, 07:00 and 08:00 UTC: 07:00, 08:00, 09:00 in Amsterdam.
        let three = post_at(&app, "d1", "a", 3).await;
        let two = post_at(&app, "d1", "b", 2).await;
        let one = post_at(&app, "d1", "c", 1).await;
        assert_eq!(
            listed(&app, "completed_after=2026-03-01T07:30:00").await,
            [two, one]
        );
        assert_eq!(
            listed(&app, "completed_before=2026-03-01T08:30:00").await,
            [three, two]
        );
        assert_eq!(
            listed(&app, "completed_after=2026-03-01T07:30:00Z").await,
            [one]
        );
        let listed_times: Vec<_> = app
            .get(&responses("d1"))
            .await
            .body
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| r["completed_at"].clone())
            .collect();
        assert_eq!(
            listed_times,
            [
                json!("2026-03-01T07:00:00.000+01:00"),
                json!("2026-03-01T08:00:00.000+01:00"),
                json!("2026-03-01T09:00:00.000+01:00")
            ]
        );
    }
);
