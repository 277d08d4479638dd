//! Answers of every question type (docs/api/responses.md#answer-data): each
//! checked against its question's type, options, range and length, every
//! refusal a 422 naming the question with its code and nothing stored;
//! answers to questions that are not enabled dropped and named, or refused
//! with `?strict=true`; the language a response was filled out in. On the
//! test questionnaire `types` (tests/fixtures/typed/types), the PHQ-9 and
//! the AUDIT.

use serde_json::Value;
use tests::{Db, TestApp, db_test, json};

use crate::support::*;

/// The host with the questionnaires `types`, `phq9` and `audit`.
pub async fn spawn_typed(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        config.questionnaires_dir = tests::repo_root().join("tests/fixtures/typed");
        // No protocols: the bundled ones name questionnaires not loaded here.
        config.protocols_dir = config.data_dir.join("no-protocols");
        config.translations_dir = Some(tests::repo_root().join("tests/fixtures/translations"));
    })
    .await
}

/// One answer of every type to `types`, all questions enabled.
fn every_type() -> Value {
    json!({
        "v_1": "a1", "v_2": "a2", "v_3": ["a3", "a1"], "v_4": 70, "v_5": 14, "v_6": 7.5,
        "v_7": "2024-05", "v_8": "cats", "v_9": "since May,\nat night",
    })
}

fn body(external_id: &str, answers: Value) -> Value {
    json!({"questionnaire_key": "types", "external_id": external_id, "answer_data": answers})
}

db_test!(
    async fn an_answer_of_every_type_is_stored_in_its_own_form(app: spawn_typed) {
        let posted = app.post(&responses("d1"), &body("all", every_type())).await;
        assert_eq!(posted.status, 201, "{}", posted.text);
        let stored = nothing_dropped(posted.body);
        // In definition order, the display item left out, the ticked options
        // in definition order.
        let values = json!({
            "v_1": "a1", "v_2": "a2", "v_3": ["a1", "a3"], "v_4": 70, "v_5": 14, "v_6": 7.5,
            "v_7": "2024-05", "v_8": "cats", "v_9": "since May,\nat night",
        });
        assert_eq!(stored["values"], values);
        let keys: Vec<&String> = stored["values"]
            .as_object()
            .into_iter()
            .flat_map(|o| o.keys())
            .collect();
        assert_eq!(
            keys,
            [
                "v_1", "v_2", "v_3", "v_4", "v_5", "v_6", "v_7", "v_8", "v_9"
            ]
        );
        assert_eq!(stored["language"], "en");
        assert_eq!(app.get(&responses("d1")).await.body, json!([stored]));
    }
);

db_test!(
    async fn null_an_empty_list_and_a_blank_text_are_unanswered(app: spawn_typed) {
        let answers = json!({"v_1": "a1", "v_2": null, "v_3": [], "v_4": null, "v_8": "  "});
        let posted = app.post(&responses("d1"), &body("blank", answers)).await;
        assert_eq!(posted.status, 201, "{}", posted.text);
        let values = &posted.body["values"];
        for key in ["v_2", "v_3", "v_4", "v_5", "v_6", "v_7", "v_8", "v_9"] {
            assert_eq!(values[key], Value::Null, "{key}");
        }
        // Nothing answered to them, so nothing dropped.
        assert_eq!(posted.body["dropped_answers"], json!([]));
    }
);

db_test!(
    async fn every_wrong_answer_is_named_with_its_code_and_nothing_is_stored(app: spawn_typed) {
        let cases = [
            ("v_1", json!("a7"), "invalid_option"),
            ("v_1", json!(1), "invalid_option"),
            ("v_2", json!("a7"), "not_an_option"),
            ("v_2", json!(["a1"]), "invalid"),
            ("v_3", json!(["a1", "a7"]), "not_an_option"),
            ("v_3", json!("a1"), "invalid"),
            ("v_3", json!(["a1", "a1"]), "invalid"),
            ("v_3", json!(["a9", "a1"]), "invalid"),
            ("v_3", json!([1]), "invalid"),
            ("v_4", json!(75), "invalid"),
            ("v_4", json!(70.0), "invalid"),
            ("v_4", json!(110), "out_of_range"),
            ("v_4", json!("70"), "invalid"),
            ("v_5", json!(-1), "out_of_range"),
            ("v_5", json!(101), "out_of_range"),
            ("v_5", json!(2.5), "invalid"),
            ("v_6", json!(24.5), "out_of_range"),
            ("v_6", json!("7"), "invalid"),
            ("v_7", json!("2024-13"), "invalid"),
            ("v_7", json!("2024-05-17"), "invalid"),
            ("v_7", json!(2024), "invalid"),
            ("v_8", json!("eleven char"), "too_long"),
            ("v_8", json!(["x"]), "invalid"),
            ("v_9", json!("x".repeat(21)), "too_long"),
            ("v_intro", json!("read"), "invalid"),
            ("v_99", json!("a1"), "unknown_question"),
        ];
        for (i, (key, value, code)) in cases.iter().enumerate() {
            let mut answers = every_type();
            answers[*key] = value.clone();
            let answer = app
                .post(&responses("d1"), &body(&format!("bad-{i}"), answers))
                .await;
            assert_error(
                &answer,
                422,
                json!({"errors": {"answer_data": {*key: [code]}}}),
            );
        }
        // Several at once: all named in one answer.
        let answers = json!({"v_1": "a7", "v_3": ["a9", "a2"], "v_5": 1000, "v_8": "far too long"});
        let answer = app.post(&responses("d1"), &body("many", answers)).await;
        assert_error(
            &answer,
            422,
            json!({"errors": {"answer_data": {
                "v_1": ["invalid_option"], "v_3": ["invalid"], "v_5": ["out_of_range"], "v_8": ["too_long"],
            }}}),
        );
        assert_eq!(app.get(&responses("d1")).await.body, json!([]));
        assert_eq!(app.sql("SELECT COUNT(*) FROM responses").await, Some(0));
    }
);

db_test!(
    async fn answers_to_questions_not_enabled_are_dropped_and_named_through_a_chain(
        app: spawn_typed,
    ) {
        // No "Other" ticked: "other, namely" (v_8) is not enabled, and so not
        // v_9, which is asked only when v_8 was answered.
        let mut answers = every_type();
        answers["v_3"] = json!(["a1"]);
        let posted = app
            .post(&responses("d1"), &body("chain", answers.clone()))
            .await;
        assert_eq!(posted.status, 201, "{}", posted.text);
        assert_eq!(posted.body["dropped_answers"], json!(["v_8", "v_9"]));
        assert_eq!(posted.body["values"]["v_8"], Value::Null);
        assert_eq!(posted.body["values"]["v_9"], Value::Null);
        assert_eq!(posted.body["values"]["v_5"], 14);
        // Sent again: a retry, recognised after the same answers were dropped.
        let again = app.post(&responses("d1"), &body("chain", answers)).await;
        assert_eq!(again.status, 200, "{}", again.text);
        assert_eq!(again.body, posted.body);
        assert_eq!(app.sql("SELECT COUNT(*) FROM responses").await, Some(1));

        // "No" on v_1 hides the whole second page.
        let mut answers = every_type();
        answers["v_1"] = json!("a0");
        let posted = app.post(&responses("d1"), &body("page", answers)).await;
        assert_eq!(posted.status, 201, "{}", posted.text);
        assert_eq!(
            posted.body["dropped_answers"],
            json!(["v_4", "v_5", "v_6", "v_7", "v_8", "v_9"])
        );
        let stored = &app.get(&responses("d1")).await.body[1]["values"];
        assert_eq!(
            stored,
            &json!({"v_1": "a0", "v_2": "a2", "v_3": ["a1", "a3"], "v_4": null, "v_5": null,
        "v_6": null, "v_7": null, "v_8": null, "v_9": null})
        );
    }
);

db_test!(
    async fn strict_refuses_answers_to_questions_not_enabled_and_stores_nothing(app: spawn_typed) {
        let mut answers = every_type();
        answers["v_3"] = json!(["a9"]);
        let url = format!("{}?strict=true", responses("d1"));
        let answer = app.post(&url, &body("strict", answers.clone())).await;
        assert_error(
            &answer,
            422,
            json!({"errors": {"answer_data": {"v_8": ["not_enabled"], "v_9": ["not_enabled"]}}}),
        );
        assert_eq!(app.sql("SELECT COUNT(*) FROM responses").await, Some(0));
        // Without the answers it refused, strict stores.
        if let Some(a) = answers.as_object_mut() {
            a.remove("v_8");
            a.remove("v_9");
        }
        let stored = app.post(&url, &body("strict", answers)).await;
        assert_eq!(stored.status, 201, "{}", stored.text);
        assert_eq!(stored.body["dropped_answers"], json!([]));
        // strict=false is the default; anything but a boolean is refused.
        let answer = app
            .post(
                &format!("{}?strict=maybe", responses("d1")),
                &body("x", every_type()),
            )
            .await;
        assert_error(&answer, 422, error("strict", "invalid"));
    }
);

db_test!(
    async fn a_put_checks_the_answers_as_a_post_does_in_the_pending_responses_variant(
        app: spawn_typed,
    ) {
        let id = prepare(&app, "d1", "types", None, None).await;
        let put = |answers: Value, query: &'static str| {
            let app = &app;
            async move {
                let body =
                    json!({"questionnaire_key": "types", "answer_data": answers, "language": "nl"});
                app.put(&format!("{}{query}", response("d1", id)), &body)
                    .await
            }
        };
        let mut bad = every_type();
        bad["v_6"] = json!(25);
        assert_error(
            &put(bad, "").await,
            422,
            json!({"errors": {"answer_data": {"v_6": ["out_of_range"]}}}),
        );
        let mut hidden = every_type();
        hidden["v_3"] = json!(["a2"]);
        assert_error(
            &put(hidden.clone(), "?strict=true").await,
            422,
            json!({"errors": {"answer_data": {"v_8": ["not_enabled"], "v_9": ["not_enabled"]}}}),
        );
        assert_eq!(app.get(&responses("d1")).await.body[0]["status"], "open");
        let done = put(hidden, "").await;
        assert_eq!(done.status, 200, "{}", done.text);
        assert_eq!(done.body["dropped_answers"], json!(["v_8", "v_9"]));
        assert_eq!(done.body["language"], "nl");
        assert_eq!(done.body["values"]["v_3"], json!(["a2"]));
    }
);

db_test!(
    async fn a_response_records_the_language_it_was_filled_out_in(app: spawn_typed) {
        let default = app.post(&responses("d1"), &body("en", every_type())).await;
        assert_eq!(default.body["language"], "en", "{}", default.text);
        let mut dutch = body("nl", every_type());
        dutch["language"] = json!("nl");
        let dutch = app.post(&responses("d1"), &dutch).await;
        assert_eq!(dutch.status, 201, "{}", dutch.text);
        assert_eq!(dutch.body["language"], "nl");
        // Scores do not depend on it: the same outcome either way.
        assert_eq!(dutch.body["outcome"], default.body["outcome"]);
        for bad in [json!("NL"), json!("dut"), json!(""), json!(3)] {
            let mut b = body("bad", every_type());
            b["language"] = bad.clone();
            assert_error(
                &app.post(&responses("d1"), &b).await,
                422,
                error("language", "invalid"),
            );
        }
        // A prepared response has none until it is filled out.
        let id = prepare(&app, "d1", "types", None, None).await;
        let listed = app.get(&responses("d1")).await.body;
        let pending = listed
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| id_of(r) == id)
            .cloned();
        assert_eq!(pending.map(|r| r["language"].clone()), Some(Value::Null));
    }
);

db_test!(
    async fn a_phq9_difficulty_item_is_asked_only_after_a_problem(app: spawn_typed) {
        let mut nothing = phq9_items("0 0 0 0 0 0 0 0 0");
        nothing["v_10"] = json!("a1");
        let posted = post_phq9(&app, "d1", "none", nothing.clone()).await;
        assert_eq!(posted.status, 201, "{}", posted.text);
        assert_eq!(posted.body["dropped_answers"], json!(["v_10"]));
        assert_eq!(posted.body["values"]["v_10"], Value::Null);
        assert_eq!(posted.body["outcome"]["scores"]["total"]["value"], 0.0);
        let strict = app
        .post(
            &format!("{}?strict=true", responses("d1")),
            &json!({"questionnaire_key": "phq9", "external_id": "strict", "answer_data": nothing}),
        )
        .await;
        assert_error(
            &strict,
            422,
            json!({"errors": {"answer_data": {"v_10": ["not_enabled"]}}}),
        );
        let mut some = phq9_items("0 0 0 0 0 0 0 1 0");
        some["v_10"] = json!("a1");
        let posted = post_phq9(&app, "d1", "some", some).await;
        assert_eq!(posted.body["dropped_answers"], json!([]), "{}", posted.text);
        assert_eq!(posted.body["values"]["v_10"], "a1");
        // PHQ-8: item 9 hidden by the flag counts as unanswered for item 10.
        let mut phq8 = phq9_items("0 0 0 0 0 0 0 0 2");
        phq8["v_10"] = json!("a1");
        let posted = app
        .post(
            &responses("d1"),
            &json!({"questionnaire_key": "phq9", "external_id": "phq8", "answer_data": phq8, "flags": {"phq8": true}}),
        )
        .await;
        assert_eq!(
            posted.body["dropped_answers"],
            json!(["v_9", "v_10"]),
            "{}",
            posted.text
        );
    }
);

db_test!(
    async fn the_audit_skips_questions_by_its_definition_and_scores_them_0(app: spawn_typed) {
        let audit = |external_id: &str, answers: Value| json!({"questionnaire_key": "audit", "external_id": external_id, "answer_data": answers});
        // "Never" on question 1: 2-8 skipped, even when answered.
        let never = json!({"v_1": "a0", "v_2": "a4", "v_4": "a4", "v_9": "a1", "v_10": "a0"});
        let posted = app.post(&responses("d1"), &audit("never", never)).await;
        assert_eq!(posted.status, 201, "{}", posted.text);
        assert_eq!(posted.body["dropped_answers"], json!(["v_2", "v_4"]));
        let outcome = &posted.body["outcome"];
        assert_eq!(outcome["scores"]["total"]["value"], 2.0);
        assert_eq!(outcome["scores"]["dependence"]["value"], 0.0);
        assert_eq!(outcome["complete"], "100%");
        // 2 and 3 both 0: 4-8 skipped.
        let light =
            json!({"v_1": "a1", "v_2": "a0", "v_3": "a0", "v_5": "a3", "v_9": "a0", "v_10": "a2"});
        let posted = app.post(&responses("d1"), &audit("light", light)).await;
        assert_eq!(
            posted.body["dropped_answers"],
            json!(["v_5"]),
            "{}",
            posted.text
        );
        assert_eq!(posted.body["outcome"]["scores"]["total"]["value"], 5.0);
        assert_eq!(posted.body["outcome"]["attention"], json!(["v_10"]));
        // Question 3 unanswered: no skip, so 4-8 are asked and missing.
        let open = json!({"v_1": "a1", "v_2": "a0", "v_9": "a0", "v_10": "a0"});
        let posted = app.post(&responses("d1"), &audit("open", open)).await;
        assert_eq!(posted.body["dropped_answers"], json!([]), "{}", posted.text);
        assert_eq!(
            posted.body["outcome"]["scores"]["total"]["missing_values"],
            json!(["v_3", "v_4", "v_5", "v_6", "v_7", "v_8"])
        );
    }
);

db_test!(
    async fn the_openapi_document_describes_every_question_type_page_condition_and_dropped_answers(
        app
    ) {
        let doc = app.get("/api/v1/openapi.json").await;
        assert_eq!(doc.status, 200, "{}", doc.text);
        let schemas = &doc.body["components"]["schemas"];
        let types: Vec<&str> = schemas["QuestionType"]["enum"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(
            types,
            ["radio", "select", "checkbox", "slider", "integer", "decimal", "date", "string", "textarea", "display"]
        );
        let question = &schemas["QuestionSchema"]["properties"];
        for field in [
            "title", "text", "type", "options", "min", "max", "step", "min_label", "max_label", "unit",
            "precision", "max_length", "shown_if",
        ] {
            assert!(question.get(field).is_some(), "QuestionSchema.{field}: {question}");
        }
        let condition = &schemas["ConditionSchema"]["properties"];
        for field in ["question", "equals", "not_equals", "greater_than", "less_than", "any_of", "answered", "all", "any"] {
            assert!(condition.get(field).is_some(), "ConditionSchema.{field}: {condition}");
        }
        assert!(schemas["PageSchema"]["properties"].get("intro").is_some());
        let view = &schemas["QuestionnaireView"]["properties"];
        assert!(view["questions"].to_string().contains("QuestionSchema"), "{view}");
        assert!(view["pages"].to_string().contains("PageSchema"), "{view}");
        let stored = schemas["StoredResponseView"].to_string();
        assert!(stored.contains("dropped_answers") && stored.contains("ResponseView"), "{stored}");
        assert!(schemas["ResponseView"]["properties"].get("language").is_some());
        let post = &doc.body["paths"]["/api/v1/dossiers/{dossier_id}/responses"]["post"];
        let params: Vec<&str> = post["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["name"].as_str())
            .collect();
        assert!(params.contains(&"strict"), "{params:?}");
        let body = post["requestBody"].to_string();
        assert!(body.contains("NewResponseBody"), "{body}");
        assert!(schemas["NewResponseBody"]["properties"].get("language").is_some());
        let get = &doc.body["paths"]["/api/v1/questionnaires/{key}"]["get"]["parameters"];
        assert!(get.to_string().contains("\"language\""), "{get}");
    }
);
