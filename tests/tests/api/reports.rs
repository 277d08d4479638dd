//! GET /api/v1/dossiers/:dossier_id/report_calculations: parameter
//! validation and its error shapes (docs/api/reports.md#errors), which
//! responses a calculation runs over, and the results of the bundled
//! calculators score_series, reliable_change and alarm_summary over stored
//! PHQ-9 outcomes.

use chrono::DateTime;
use serde_json::Value;
use tests::reqwest::Method;
use tests::{TestApp, basic, create_token, db_test, json};

use crate::support::*;

const DAY: i64 = 86_400;

/// The report calculation path of `dossier` with this query string.
fn report(dossier: &str, query: &str) -> String {
    format!("/api/v1/dossiers/{dossier}/report_calculations?{query}")
}

/// `response_ids[]=a&response_ids[]=b…`
fn ids_query(ids: &[i64]) -> String {
    ids.iter()
        .map(|id| format!("response_ids[]={id}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// A report calculation that must succeed.
async fn calculated(app: &TestApp, dossier: &str, query: &str) -> Value {
    let answer = app.get(&report(dossier, query)).await;
    assert_eq!(answer.status, 200, "{query}: {}", answer.text);
    assert_eq!(
        answer.headers["content-type"],
        "application/json; charset=utf-8"
    );
    answer.body
}

/// The ids a calculation ran over.
async fn ran_over(app: &TestApp, query: &str) -> Vec<i64> {
    let body = calculated(app, "d1", query).await;
    body["response_ids"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default()
}

/// Whether two timestamps name the same instant.
fn same_instant(a: &Value, b: &Value) -> bool {
    let parse = |v: &Value| {
        v.as_str()
            .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
    };
    matches!((parse(a), parse(b)), (Some(a), Some(b)) if a == b)
}

/// The stored response with this id in d1.
async fn stored(app: &TestApp, id: i64) -> Value {
    let list = app.get(&responses("d1")).await.body;
    list.as_array()
        .and_then(|all| all.iter().find(|r| r["id"] == id))
        .cloned()
        .unwrap_or_else(|| panic!("response {id} is listed"))
}

// ---------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------

db_test!(async fn a_calculation_without_a_calculator_is_refused_as_blank(app) {
    for query in ["filters[questionnaire_keys][]=phq9", "calculator=&filters[questionnaire_keys][]=phq9", "calculator=%20&response_ids[]=1"] {
        assert_error(&app.get(&report("d1", query)).await, 422, error("calculator", "blank"));
    }
});

db_test!(async fn neither_response_ids_nor_filters_is_a_blank_questionnaire_keys_filter(app) {
    let blank = json!({"errors": {"filters": {"questionnaire_keys": ["blank"]}}});
    for query in [
        "calculator=score_series",
        "calculator=score_series&filters[questionnaire_keys][]=",
        "calculator=score_series&filters[questionnaire_keys][]=%20",
        &format!("calculator=score_series&filters[completed_after]={START_UNIX}"),
    ] {
        assert_error(&app.get(&report("d1", query)).await, 422, blank.clone());
    }
});

db_test!(async fn an_unknown_questionnaire_key_in_the_filters_is_invalid(app) {
    let answer = app.get(&report("d1", "calculator=score_series&filters[questionnaire_keys][]=phq9&filters[questionnaire_keys][]=nope")).await;
    assert_error(&answer, 422, json!({"errors": {"filters": {"questionnaire_keys": ["invalid"]}}}));
});

db_test!(async fn garbage_time_filters_are_invalid(app) {
    let base = "calculator=score_series&filters[questionnaire_keys][]=phq9";
    let answer = app.get(&report("d1", &format!("{base}&filters[completed_after]=yesterday"))).await;
    assert_error(&answer, 422, json!({"errors": {"filters": {"completed_after": ["invalid"]}}}));
    let answer = app.get(&report("d1", &format!("{base}&filters[completed_before]=2026-13-45"))).await;
    assert_error(&answer, 422, json!({"errors": {"filters": {"completed_before": ["invalid"]}}}));
    let answer = app.get(&report("d1", &format!("{base}&filters[completed_after]=x&filters[completed_before]=y"))).await;
    assert_error(&answer, 422, json!({"errors": {"filters": {"completed_after": ["invalid"], "completed_before": ["invalid"]}}}));
});

db_test!(async fn response_ids_that_are_not_integers_are_invalid(app) {
    let id = id_of(&posted(&app, "d1", "ext-1").await);
    for ids in ["response_ids[]=abc", "response_ids[]=1.5", &format!("response_ids[]={id}&response_ids[]=x"), "response_ids[]="] {
        let answer = app.get(&report("d1", &format!("calculator=score_series&{ids}"))).await;
        assert_error(&answer, 422, error("response_ids", "invalid"));
    }
});

db_test!(async fn more_than_1000_ids_or_keys_are_invalid(app) {
    let id = id_of(&posted(&app, "d1", "ext-1").await);
    // 1,000 ids (the stored one among them) are matched: the calculation
    // runs over the one that exists, the unknown ones make it 404.
    let thousand: Vec<i64> = std::iter::once(id).chain((1..1000).map(|i| id + i)).collect();
    let answer = app.get(&report("d1", &format!("calculator=score_series&{}", ids_query(&thousand)))).await;
    assert_error(&answer, 404, error("response_ids", "not_found"));
    // 1,001 are refused before anything is read, repeated ids included.
    let too_many: Vec<i64> = std::iter::repeat_n(id, 1001).collect();
    let answer = app.get(&report("d1", &format!("calculator=score_series&{}", ids_query(&too_many)))).await;
    assert_error(&answer, 422, error("response_ids", "invalid"));
    let keys = (0..1001).map(|i| format!("filters[questionnaire_keys][]=k{i}")).collect::<Vec<_>>().join("&");
    let answer = app.get(&report("d1", &format!("calculator=score_series&{keys}"))).await;
    assert_error(&answer, 422, json!({"errors": {"filters": {"questionnaire_keys": ["invalid"]}}}));
    // 1,000 repeats of a known key are within the cap.
    let keys = std::iter::repeat_n("filters[questionnaire_keys][]=phq9", 1000).collect::<Vec<_>>().join("&");
    assert_eq!(ran_over(&app, &format!("calculator=score_series&{keys}")).await, vec![id]);
});

db_test!(async fn an_unknown_calculator_is_not_found(app) {
    for calculator in ["nope", "phq9"] {
        let answer = app.get(&report("d1", &format!("calculator={calculator}&filters[questionnaire_keys][]=phq9"))).await;
        assert_error(&answer, 404, error("calculator", "not_found"));
    }
});

db_test!(async fn a_response_id_of_another_dossier_is_not_found(app) {
    let own = id_of(&posted(&app, "d1", "ext-1").await);
    let other = id_of(&posted(&app, "d2", "ext-1").await);
    let not_found = error("response_ids", "not_found");
    for ids in [vec![other], vec![own, other], vec![other + 1000], vec![own, 0]] {
        let answer = app.get(&report("d1", &format!("calculator=score_series&{}", ids_query(&ids)))).await;
        assert_error(&answer, 404, not_found.clone());
    }
    // An unknown dossier has no responses.
    let answer = app.get(&report("d3", &format!("calculator=score_series&{}", ids_query(&[own])))).await;
    assert_error(&answer, 404, not_found);
});

db_test!(async fn a_token_without_the_report_calculations_right_is_forbidden(app) {
    posted(&app, "d1", "ext-1").await;
    let path = report("d1", "calculator=score_series&filters[questionnaire_keys][]=phq9");
    let secret = create_token(&app.state, "responses-only", "responses").await;
    let answer = app.send_as(Method::GET, &path, None, Some(&basic("responses-only", &secret))).await;
    assert_error(&answer, 403, error("base", "right_missing"));
    let secret = create_token(&app.state, "reports-only", "report_calculations").await;
    let answer = app.send_as(Method::GET, &path, None, Some(&basic("reports-only", &secret))).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    // Without credentials: 401.
    assert_eq!(app.send_as(Method::GET, &path, None, None).await.status, 401);
});

// ---------------------------------------------------------------------------
// Which responses
// ---------------------------------------------------------------------------

db_test!(async fn response_ids_in_the_answer_are_the_completed_ones_used_oldest_first(app) {
    let newest = id_of(&posted_at(&app, "d1", "a", phq9_all_answered(), START_UNIX - DAY).await);
    let oldest = id_of(&posted_at(&app, "d1", "b", phq9_all_answered(), START_UNIX - 3 * DAY).await);
    let middle = id_of(&posted_at(&app, "d1", "c", phq9_all_answered(), START_UNIX - 2 * DAY).await);
    posted(&app, "d2", "other-dossier").await;
    assert_eq!(ran_over(&app, "calculator=score_series&filters[questionnaire_keys][]=phq9").await, [oldest, middle, newest]);
    assert_eq!(ran_over(&app, &format!("calculator=score_series&{}", ids_query(&[newest, oldest]))).await, [oldest, newest]);
    assert_eq!(ran_over(&app, &format!("calculator=score_series&{}", ids_query(&[middle]))).await, [middle]);
});

db_test!(async fn a_prepared_response_named_by_id_is_left_out(app) {
    let done = id_of(&posted(&app, "d1", "ext-1").await);
    let prepared = prepare(&app, "d1", "phq9", None, None).await;
    let body = calculated(&app, "d1", &format!("calculator=score_series&{}", ids_query(&[prepared, done]))).await;
    assert_eq!(body["response_ids"], json!([done]));
    assert_eq!(body["results"]["series"][0]["points"].as_array().map(Vec::len), Some(1));
    let body = calculated(&app, "d1", &format!("calculator=score_series&{}", ids_query(&[prepared]))).await;
    assert_eq!(body, json!({"results": {"series": []}, "response_ids": []}));
    // Filters select completed responses only.
    assert_eq!(ran_over(&app, "calculator=score_series&filters[questionnaire_keys][]=phq9").await, [done]);
});

db_test!(async fn completed_after_and_completed_before_narrow_the_filtered_set(app) {
    let mut at = Vec::new();
    for days in [4, 3, 2, 1] {
        let id = id_of(&posted_at(&app, "d1", &format!("ext-{days}"), phq9_all_answered(), START_UNIX - days * DAY).await);
        at.push(id);
    }
    let base = "calculator=score_series&filters[questionnaire_keys][]=phq9";
    let after = START_UNIX - 3 * DAY - DAY / 2;
    let before = START_UNIX - DAY - DAY / 2;
    assert_eq!(ran_over(&app, base).await, at);
    assert_eq!(ran_over(&app, &format!("{base}&filters[completed_after]={after}")).await, &at[1..]);
    assert_eq!(ran_over(&app, &format!("{base}&filters[completed_before]={before}")).await, &at[..3]);
    assert_eq!(
        ran_over(&app, &format!("{base}&filters[completed_after]={after}&filters[completed_before]={before}")).await,
        &at[1..3]
    );
    assert_eq!(ran_over(&app, &format!("{base}&filters[completed_after]={START_UNIX}")).await, Vec::<i64>::new());
});

db_test!(
    async fn the_questionnaire_keys_filter_selects_questionnaires(app: spawn_with_mini) {
        let phq9 =
            id_of(&posted_at(&app, "d1", "p", phq9_all_answered(), START_UNIX - 2 * DAY).await);
        let body = json!({"questionnaire_key": "mini", "external_id": "m", "answer_data": {"v_1": "a1", "v_2": "a0"},
                      "filled_out_at": START_UNIX - 3 * DAY});
        let answer = app.post(&responses("d1"), &body).await;
        assert_eq!(answer.status, 201, "{}", answer.text);
        let mini = id_of(&answer.body);
        assert_eq!(
            ran_over(
                &app,
                "calculator=score_series&filters[questionnaire_keys][]=phq9"
            )
            .await,
            [phq9]
        );
        assert_eq!(
            ran_over(
                &app,
                "calculator=score_series&filters[questionnaire_keys][]=mini"
            )
            .await,
            [mini]
        );
        assert_eq!(
        ran_over(&app, "calculator=score_series&filters[questionnaire_keys][]=phq9&filters[questionnaire_keys][]=mini").await,
        [mini, phq9]
    );
    }
);

// ---------------------------------------------------------------------------
// The calculators
// ---------------------------------------------------------------------------

db_test!(async fn score_series_has_a_point_per_scored_response_in_completion_order(app) {
    // Stored out of completion order; one without a total (three items missing).
    let second = id_of(&posted_at(&app, "d1", "a", phq9_items("2 1 1 1 1 1 1 2 0"), START_UNIX - 2 * DAY).await);
    let first = id_of(&posted_at(&app, "d1", "b", phq9_items("2 2 2 2 2 2 2 2 2"), START_UNIX - 3 * DAY).await);
    let unscored = id_of(&posted_at(&app, "d1", "c", phq9_items("- 1 1 - 1 1 - 1 0"), START_UNIX - DAY).await);
    let third = id_of(&posted_at(&app, "d1", "d", phq9_items("1 1 1 1 1 1 1 0 0"), START_UNIX - DAY / 2).await);
    let body = calculated(&app, "d1", "calculator=score_series&filters[questionnaire_keys][]=phq9").await;
    assert_eq!(body["response_ids"], json!([first, second, unscored, third]));
    let series = body["results"]["series"].as_array().cloned().unwrap_or_default();
    assert_eq!(series.len(), 1, "{body}");
    let total = &series[0];
    assert_eq!(total["questionnaire_key"], "phq9");
    assert_eq!(total["score_key"], "total");
    assert_eq!(total["label"], "Total score");
    assert_eq!(total["cutoff"], 10.0);
    assert_eq!(total["tonality"], "higher_is_worse");
    let points = total["points"].as_array().cloned().unwrap_or_default();
    let point_ids: Vec<i64> = points.iter().filter_map(|p| p["response_id"].as_i64()).collect();
    assert_eq!(point_ids, [first, second, third], "no point for the response without a total");
    let values: Vec<f64> = points.iter().filter_map(|p| p["value"].as_f64()).collect();
    assert_eq!(values, [18.0, 10.0, 7.0]);
    for point in &points {
        let id = point["response_id"].as_i64().unwrap_or_default();
        let response = stored(&app, id).await;
        let score = &response["outcome"]["scores"]["total"];
        assert_eq!(point["value"], score["value"], "response {id}");
        assert_eq!(point["tscore"], score["tscore"], "response {id}");
        assert!(same_instant(&point["completed_at"], &response["completed_at"]), "{point} vs {}", response["completed_at"]);
    }
});

db_test!(async fn reliable_change_compares_the_first_and_last_phq9(app) {
    let last = id_of(&posted_at(&app, "d1", "c", phq9_items("1 1 1 1 1 1 1 0 0"), START_UNIX - DAY).await);
    let first = id_of(&posted_at(&app, "d1", "a", phq9_items("2 2 2 2 2 2 2 2 2"), START_UNIX - 60 * DAY).await);
    let middle = id_of(&posted_at(&app, "d1", "b", phq9_items("2 1 2 1 1 2 1 2 0"), START_UNIX - 30 * DAY).await);
    let body = calculated(&app, "d1", "calculator=reliable_change&filters[questionnaire_keys][]=phq9").await;
    assert_eq!(body["response_ids"], json!([first, middle, last]));
    let scores = body["results"]["scores"].as_array().cloned().unwrap_or_default();
    assert_eq!(scores.len(), 1, "{body}");
    let total = &scores[0];
    assert_eq!(total["questionnaire_key"], "phq9");
    assert_eq!(total["score_key"], "total");
    assert_eq!(total["response_count"], 3);
    assert_eq!(total["consecutive"].as_array().map(Vec::len), Some(2));
    let change = &total["first_to_last"];
    assert_eq!(change["from_response_id"], first);
    assert_eq!(change["to_response_id"], last);
    let from = stored(&app, first).await["outcome"]["scores"]["total"]["value"].clone();
    let to = stored(&app, last).await["outcome"]["scores"]["total"]["value"].clone();
    assert_eq!((&change["from_value"], &change["to_value"]), (&from, &to));
    assert_eq!((from, to), (json!(18.0), json!(7.0)));
    assert!(same_instant(&change["from_completed_at"], &stored(&app, first).await["completed_at"]));
    assert!(same_instant(&change["to_completed_at"], &stored(&app, last).await["completed_at"]));
    assert_eq!(change["difference"], -11.0);
    // Jacobson & Truax with the definition's sd and reliability: S_diff =
    // √2 × 3.52 × √(1 − 0.84) = 1.99, so −11 is a reliable change (RCI
    // −5.52) from the clinical range (≥ 10) into the healthy one.
    let (sd, r) = (total["sd"].as_f64().unwrap_or_default(), total["reliability"].as_f64().unwrap_or_default());
    assert_eq!((sd, r), (3.52, 0.84));
    let s_diff = 2f64.sqrt() * sd * (1.0 - r).sqrt();
    let rci = -11.0 / s_diff;
    assert_eq!(change["rci"], (rci * 100.0).round() / 100.0);
    assert_eq!(change["reliable"], true);
    assert_eq!(change["direction"], "improved");
    assert_eq!(change["clinically_significant"], true);
    assert_eq!(change["category"], "recovered");
});

db_test!(async fn reliable_change_reports_a_deterioration_and_an_unreliable_change(app) {
    let first = id_of(&posted_at(&app, "d1", "a", phq9_items("1 1 0 0 0 0 0 0 0"), START_UNIX - 2 * DAY).await);
    let last = id_of(&posted_at(&app, "d1", "b", phq9_items("2 2 2 2 1 1 1 1 0"), START_UNIX - DAY).await);
    let body = calculated(&app, "d1", &format!("calculator=reliable_change&{}", ids_query(&[last, first]))).await;
    let change = &body["results"]["scores"][0]["first_to_last"];
    assert_eq!((&change["from_value"], &change["to_value"]), (&json!(2.0), &json!(12.0)));
    assert_eq!(change["reliable"], true);
    assert_eq!(change["direction"], "deteriorated");
    assert_eq!(change["clinically_significant"], false);
    assert_eq!(change["category"], "deteriorated");
    // A difference of 2 is within measurement error (threshold 3.90).
    let third = id_of(&posted_at(&app, "d1", "c", phq9_items("2 1 1 1 1 1 1 2 0"), START_UNIX - DAY / 2).await);
    let body = calculated(&app, "d1", &format!("calculator=reliable_change&{}", ids_query(&[third, last]))).await;
    let total = &body["results"]["scores"][0];
    assert_eq!(total["reliable_change_threshold"], 3.9);
    let change = &total["first_to_last"];
    assert_eq!((&change["from_value"], &change["to_value"]), (&json!(12.0), &json!(10.0)));
    assert_eq!(change["reliable"], false);
    assert_eq!(change["direction"], "improved");
    assert_eq!(change["clinically_significant"], false);
    assert_eq!(change["category"], "unchanged");
    let body = calculated(&app, "d1", &format!("calculator=reliable_change&{}", ids_query(&[first]))).await;
    assert_eq!(body["results"]["scores"][0]["first_to_last"], Value::Null, "one response: nothing to compare");
});

db_test!(async fn alarm_summary_lists_the_responses_that_raised_alarm_or_attention(app) {
    let alarm = id_of(&posted_at(&app, "d1", "a", phq9_items("1 0 0 1 0 0 0 0 2"), START_UNIX - 3 * DAY).await);
    let attention = id_of(&posted_at(&app, "d1", "b", phq9_items("2 1 1 1 1 1 1 2 0"), START_UNIX - 2 * DAY).await);
    let quiet = id_of(&posted_at(&app, "d1", "c", phq9_items("0 0 0 0 0 0 0 0 0"), START_UNIX - DAY).await);
    let body = calculated(&app, "d1", "calculator=alarm_summary&filters[questionnaire_keys][]=phq9").await;
    assert_eq!(body["response_ids"], json!([alarm, attention, quiet]));
    let results = &body["results"];
    assert_eq!(results["totals"], json!({"alarm": 1, "attention": 1, "checked": 3}));
    let listed = results["responses"].as_array().cloned().unwrap_or_default();
    let listed_ids: Vec<i64> = listed.iter().filter_map(|r| r["response_id"].as_i64()).collect();
    assert_eq!(listed_ids, [alarm, attention]);
    let first = &listed[0];
    assert!(same_instant(&first["completed_at"], &stored(&app, alarm).await["completed_at"]));
    assert_eq!(
        first,
        &json!({
            "response_id": alarm,
            "questionnaire_key": "phq9",
            "completed_at": first["completed_at"],
            "action": "alarm",
            "alarm": ["v_9"],
            "attention": [],
            "scores_with_status": [],
            "items": [{
                "key": "v_9",
                "title": "Thoughts that you would be better off dead or of hurting yourself in some way",
                "answer": "a2",
                "value": 2.0,
            }],
        })
    );
    let second = &listed[1];
    assert_eq!(second["action"], "attention");
    assert_eq!(second["alarm"], json!([]));
    assert_eq!(
        second["scores_with_status"],
        json!([{"score_key": "total", "label": "Total score", "status": "attention", "value": 10.0}])
    );
    assert_eq!(second["items"], json!([]));
});

db_test!(async fn a_calculation_over_no_responses_answers_empty_results(app) {
    for (calculator, results) in [
        ("score_series", json!({"series": []})),
        ("alarm_summary", json!({"responses": [], "totals": {"alarm": 0, "attention": 0, "checked": 0}})),
        ("episode_outcome", json!({"scores": []})),
    ] {
        let body = calculated(&app, "nobody", &format!("calculator={calculator}&filters[questionnaire_keys][]=phq9")).await;
        assert_eq!(body, json!({"results": results, "response_ids": []}));
    }
});
