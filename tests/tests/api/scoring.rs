//! Scoring on POST and PUT (docs/api/outcomes.md): the PHQ-9 outcome the
//! scorer plugin computes and the host completes (label, referenced values,
//! action, alarm, attention, completeness), proration and missing values,
//! and a response stored with the failure when its scorer is not loaded.

use serde_json::Value;
use tests::{db_test, json};

use crate::support::*;

/// The items the PHQ-9 total refers to.
fn phq9_items_referenced() -> Value {
    json!([
        "v_1", "v_2", "v_3", "v_4", "v_5", "v_6", "v_7", "v_8", "v_9"
    ])
}

/// The outcome of a PHQ-9 response POSTed to d1 with `pattern` (see
/// [`phq9_items`]), checked to be the one the list shows as well.
async fn outcome_of(app: &tests::TestApp, external_id: &str, pattern: &str) -> Value {
    let answer = post_phq9(app, "d1", external_id, phq9_items(pattern)).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    let listed = app.get(&responses("d1")).await.body;
    let stored = listed
        .as_array()
        .and_then(|all| all.iter().find(|r| r["id"] == answer.body["id"]))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        stored["outcome"], answer.body["outcome"],
        "the list shows the stored outcome"
    );
    answer.body["outcome"].clone()
}

db_test!(async fn a_fully_answered_phq9_carries_its_total_with_label_interpretation_and_tscore(app) {
    let outcome = outcome_of(&app, "ext-1", "1 1 1 1 1 1 1 2 0").await;
    assert_eq!(
        outcome,
        json!({
            "scores": {
                "total": {
                    "score": true,
                    "label": "Total score",
                    "global": true,
                    "value": 9.0,
                    "interpretation": "mild",
                    "norm": ">= 10",
                    "tscore": 67.3,
                    "tscore_interpretation": "high",
                    "referenced_values": phq9_items_referenced(),
                }
            },
            "action": null,
            "alarm": [],
            "attention": [],
            "complete": "100%",
        })
    );
});

db_test!(async fn item_9_above_zero_raises_the_alarm_whatever_the_total(app) {
    let outcome = outcome_of(&app, "ext-1", "1 0 0 1 0 0 0 0 1").await;
    assert_eq!(outcome["scores"]["total"]["value"], 3.0);
    assert_eq!(outcome["scores"]["total"]["interpretation"], "minimal");
    assert_eq!(outcome["scores"]["total"].get("status"), None);
    assert_eq!(outcome["alarm"], json!(["v_9"]));
    assert_eq!(outcome["action"], "alarm");
    assert_eq!(outcome["attention"], json!([]));
    assert_eq!(outcome["complete"], "100%");
});

db_test!(async fn a_total_at_the_cut_off_needs_attention_without_an_alarm(app) {
    let outcome = outcome_of(&app, "ext-1", "2 1 1 1 1 1 1 2 0").await;
    let total = &outcome["scores"]["total"];
    assert_eq!(total["value"], 10.0);
    assert_eq!(total["interpretation"], "moderate");
    assert_eq!(total["status"], "attention");
    assert_eq!(total["tscore"], 70.1);
    assert_eq!(outcome["alarm"], json!([]));
    assert_eq!(outcome["attention"], json!([]));
    assert_eq!(outcome["action"], "attention");
});

db_test!(async fn an_alarm_outranks_attention_in_the_action(app) {
    let outcome = outcome_of(&app, "ext-1", "3 3 3 3 3 3 3 3 3").await;
    let total = &outcome["scores"]["total"];
    assert_eq!(total["value"], 27.0);
    assert_eq!(total["interpretation"], "severe");
    assert_eq!(total["status"], "attention");
    assert_eq!(outcome["alarm"], json!(["v_9"]));
    assert_eq!(outcome["action"], "alarm");
});

db_test!(async fn an_unanswered_item_9_is_listed_for_attention_even_with_a_low_total(app) {
    let outcome = outcome_of(&app, "ext-1", "0 0 0 0 0 0 0 0 -").await;
    assert_eq!(outcome["scores"]["total"]["value"], 0.0);
    assert_eq!(outcome["alarm"], json!([]));
    assert_eq!(outcome["attention"], json!(["v_9"]));
    assert_eq!(outcome["action"], "attention");
});

db_test!(async fn two_missing_items_are_prorated_and_completion_is_78_percent(app) {
    // 8 points over 7 answered items: 8 / 7 × 9 = 10.29, rounded to 10.
    let outcome = outcome_of(&app, "ext-1", "1 - 1 1 - 1 1 2 1").await;
    let total = &outcome["scores"]["total"];
    assert_eq!(total["value"], 10.0);
    assert_eq!(total["score"], true);
    assert_eq!(total["label"], "Total score");
    assert_eq!(total["referenced_values"], phq9_items_referenced());
    assert_eq!(total.get("missing_values"), None);
    assert_eq!(outcome["complete"], "78%");
    assert_eq!(outcome["alarm"], json!(["v_9"]));
    assert_eq!(outcome["action"], "alarm");
});

db_test!(async fn three_missing_items_give_missing_values_and_no_value(app) {
    let outcome = outcome_of(&app, "ext-1", "- 1 1 - 1 1 - 1 0").await;
    assert_eq!(
        outcome,
        json!({
            "scores": {
                "total": {
                    "score": true,
                    "label": "Total score",
                    "global": true,
                    "missing_values": ["v_1", "v_4", "v_7"],
                    "referenced_values": phq9_items_referenced(),
                }
            },
            "action": null,
            "alarm": [],
            "attention": [],
            "complete": "67%",
        })
    );
    // The alarm rule still applies to item 9 without a total.
    let outcome = outcome_of(&app, "ext-2", "- 1 1 - 1 1 - 1 2").await;
    assert_eq!(outcome["scores"]["total"].get("value"), None);
    assert_eq!(outcome["alarm"], json!(["v_9"]));
    assert_eq!(outcome["action"], "alarm");
});

db_test!(async fn a_phq9_with_no_scored_item_answered_is_0_percent_complete_with_every_item_missing(app) {
    // Only the unscored difficulty question is answered.
    let answer = post_phq9(&app, "d1", "ext-1", json!({"v_10": "a1", "v_9": null})).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    let outcome = &answer.body["outcome"];
    assert_eq!(outcome["scores"]["total"]["missing_values"], phq9_items_referenced());
    assert_eq!(outcome["scores"]["total"].get("value"), None);
    assert_eq!(outcome["complete"], "0%");
    assert_eq!(outcome["alarm"], json!([]));
    // Item 9 was not answered: that needs a look, whatever else is missing.
    assert_eq!(outcome["attention"], json!(["v_9"]));
    assert_eq!(outcome["action"], "attention");
});

db_test!(async fn completing_a_prepared_response_by_put_scores_it(app) {
    let id = prepare(&app, "d1", "phq9", None, None).await;
    assert_eq!(app.get(&responses("d1")).await.body[0]["outcome"], empty_outcome());
    let body = json!({"questionnaire_key": "phq9", "answer_data": phq9_items("2 1 1 1 1 1 1 2 1")});
    let answer = app.put(&response("d1", id), &body).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let outcome = &answer.body["outcome"];
    assert_eq!(outcome["scores"]["total"]["value"], 11.0);
    assert_eq!(outcome["scores"]["total"]["label"], "Total score");
    assert_eq!(outcome["scores"]["total"]["referenced_values"], phq9_items_referenced());
    assert_eq!(outcome["scores"]["total"]["status"], "attention");
    assert_eq!(outcome["alarm"], json!(["v_9"]));
    assert_eq!(outcome["action"], "alarm");
    assert_eq!(outcome["complete"], "100%");
    assert_eq!(app.get(&responses("d1")).await.body[0]["outcome"], *outcome);
});

db_test!(
    async fn a_response_whose_scorer_is_not_loaded_is_stored_with_the_failure(
        app: spawn_without_plugins,
    ) {
        let answer = post_phq9(&app, "d1", "ext-1", phq9_items("1 1 1 1 1 1 1 2 1")).await;
        assert_eq!(answer.status, 201, "{}", answer.text);
        let body = &answer.body;
        assert_eq!(body["status"], "completed");
        assert_eq!(body["values"]["v_8"], "a2");
        let total = &body["outcome"]["scores"]["total"];
        assert_eq!(total["score"], true);
        assert_eq!(total["label"], "Total score");
        assert_eq!(total["referenced_values"], phq9_items_referenced());
        assert_eq!(total["exception"]["code"], "not_loaded");
        let message = total["exception"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("phq9"),
            "the message names the scorer: {message:?}"
        );
        assert_eq!(total.get("value"), None);
        let mut keys: Vec<&str> = total
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        keys.sort_unstable();
        assert_eq!(
            keys,
            ["exception", "global", "label", "referenced_values", "score"]
        );
        // Nothing was computed, so nothing is claimed.
        assert_eq!(body["outcome"]["action"], Value::Null);
        assert_eq!(body["outcome"]["complete"], Value::Null);
        // The list shows the stored response with its failure.
        assert_eq!(
            app.get(&responses("d1")).await.body,
            json!([nothing_dropped(body.clone())])
        );
        // And operators see it counted.
        let series = r#"outcomes_scoring_failures_total{questionnaire="phq9",code="not_loaded"}"#;
        assert_eq!(metric(&metrics_text(&app).await, series), Some(1.0));
        post_phq9(&app, "d1", "ext-2", phq9_all_answered()).await;
        assert_eq!(metric(&metrics_text(&app).await, series), Some(2.0));
    }
);

db_test!(async fn a_scored_response_counts_no_scoring_failure(app) {
    posted(&app, "d1", "ext-1").await;
    let text = metrics_text(&app).await;
    assert_eq!(metric(&text, r#"outcomes_scoring_failures_total{questionnaire="phq9",code="not_loaded"}"#), None);
    assert!(!text.lines().any(|l| l.starts_with("outcomes_scoring_failures_total")), "{text}");
});
