//! The bundled intake and daily diary (questionnaires/intake,
//! questionnaires/diary), which between them use every question type,
//! pages and a chained condition: responses of every type stored in their
//! own form and scored by their plugins; every refusal code on their
//! questions, nothing stored; answers dropped through the intake's chain
//! ("No" to alcohol leaves out the drinks a week, and so the question that
//! depends on them) and refused under `?strict=true`; their Dutch texts,
//! with the same scores.

use host::domain::questionnaire::sha256_hex;
use serde_json::Value;
use tests::{db_test, json};

use crate::support::*;

/// An intake answering every question it asks: two complaints (not
/// "Other"), so "other, namely" is not asked.
fn intake() -> Value {
    json!({
        "v_1": ["a4", "a1"], "v_3": "2025-11", "v_4": 6.5, "v_5": "a1", "v_6": "a1",
        "v_7": 4, "v_8": "a0", "v_9": "I work night shifts.",
    })
}

/// A diary with every slider moved and a note.
fn diary() -> Value {
    json!({"v_1": 8, "v_2": 7, "v_3": 1, "v_4": 2, "v_5": 10, "v_6": 80, "v_7": "A walk."})
}

fn body(key: &str, external_id: &str, answers: Value) -> Value {
    json!({"questionnaire_key": key, "external_id": external_id, "answer_data": answers})
}

db_test!(async fn an_intake_of_every_type_is_stored_in_its_own_form_and_scored(app) {
    let posted = app.post(&responses("d1"), &body("intake", "intake", intake())).await;
    assert_eq!(posted.status, 201, "{}", posted.text);
    let stored = nothing_dropped(posted.body);
    // Every question that takes an answer, in definition order (the
    // display item is not among them), the ticked options in definition
    // order, the one not asked null.
    let values = json!({
        "v_1": ["a1", "a4"], "v_2": null, "v_3": "2025-11", "v_4": 6.5, "v_5": "a1",
        "v_6": "a1", "v_7": 4, "v_8": "a0", "v_9": "I work night shifts.",
    });
    assert_eq!(stored["values"], values);
    let order: Vec<&String> = stored["values"].as_object().into_iter().flat_map(|o| o.keys()).collect();
    assert_eq!(order, ["v_1", "v_2", "v_3", "v_4", "v_5", "v_6", "v_7", "v_8", "v_9"]);
    let outcome = &stored["outcome"];
    assert_eq!(outcome["scores"]["complaints"]["value"], 2.0);
    assert_eq!(outcome["scores"]["complaints"]["global"], true);
    assert_eq!(outcome["scores"]["sleep_hours"]["value"], 6.5);
    assert_eq!(outcome["scores"]["drinks_per_week"]["value"], 4.0);
    assert_eq!(
        outcome["scores"]["drinks_per_week"]["interpretation"],
        "below the clinic's limit of 15 a week"
    );
    assert_eq!(outcome["attention"], json!([]));
    assert_eq!(outcome["alarm"], Value::Null);
    assert_eq!(outcome["action"], Value::Null);
    assert_eq!(outcome["complete"], "100%");
    assert_eq!(app.get(&responses("d1")).await.body, json!([stored]));
});

db_test!(async fn an_intake_at_the_clinics_alcohol_limit_asks_for_attention(app) {
    let mut answers = intake();
    answers["v_7"] = json!(15);
    answers["v_8"] = json!("a1");
    let posted = app.post(&responses("d1"), &body("intake", "limit", answers)).await;
    assert_eq!(posted.status, 201, "{}", posted.text);
    let outcome = &posted.body["outcome"];
    assert_eq!(outcome["scores"]["drinks_per_week"]["status"], "attention");
    assert_eq!(outcome["attention"], json!(["v_7", "v_8"]));
    assert_eq!(outcome["action"], "attention");
});

db_test!(async fn a_diary_is_stored_as_numbers_and_scored_from_its_sliders(app) {
    let posted = app.post(&responses("d1"), &body("diary", "good", diary())).await;
    assert_eq!(posted.status, 201, "{}", posted.text);
    let stored = nothing_dropped(posted.body);
    assert_eq!(stored["values"], diary());
    let outcome = &stored["outcome"];
    // (8 + 7 + (10 - 1) + (10 - 2)) / 4
    assert_eq!(outcome["scores"]["mood"]["value"], 8.0);
    assert_eq!(outcome["scores"]["interference"]["value"], 10.0);
    assert_eq!(outcome["scores"]["satisfaction"]["value"], 80.0);
    assert_eq!(outcome["attention"], json!([]));
    assert_eq!(outcome["complete"], "100%");
    // A low day with complaints in the way: both flags; an untouched
    // slider is unanswered.
    let low = json!({"v_1": 2, "v_2": 3, "v_3": 8, "v_4": 7, "v_5": 75, "v_6": null});
    let posted = app.post(&responses("d1"), &body("diary", "low", low)).await;
    assert_eq!(posted.status, 201, "{}", posted.text);
    let outcome = &posted.body["outcome"];
    assert_eq!(outcome["scores"]["mood"]["value"], 2.5);
    assert_eq!(outcome["scores"]["mood"]["status"], "attention");
    assert_eq!(outcome["attention"], json!(["v_1", "v_2", "v_3", "v_4", "v_5"]));
    assert_eq!(outcome["scores"]["satisfaction"]["missing_values"], json!(["v_6"]));
    assert_eq!(outcome["complete"], "83%");
});

db_test!(async fn every_wrong_intake_or_diary_answer_is_named_with_its_code_and_nothing_is_stored(app) {
    let cases = [
        ("intake", "v_1", json!(["a1", "a99"]), "not_an_option"),
        ("intake", "v_1", json!(["a0", "a1"]), "invalid"),
        ("intake", "v_1", json!("a1"), "invalid"),
        ("intake", "v_2", json!("x".repeat(201)), "too_long"),
        ("intake", "v_3", json!("2025-11-03"), "invalid"),
        ("intake", "v_3", json!("2025-13"), "invalid"),
        ("intake", "v_4", json!(24.5), "out_of_range"),
        ("intake", "v_4", json!(-1), "out_of_range"),
        ("intake", "v_4", json!("7"), "invalid"),
        ("intake", "v_5", json!("a8"), "not_an_option"),
        ("intake", "v_6", json!("a2"), "invalid_option"),
        ("intake", "v_7", json!(151), "out_of_range"),
        ("intake", "v_7", json!(4.5), "invalid"),
        ("intake", "v_9", json!("x".repeat(2001)), "too_long"),
        ("intake", "v_intro", json!("read"), "invalid"),
        ("intake", "v_10", json!("a1"), "unknown_question"),
        ("diary", "v_1", json!(11), "out_of_range"),
        ("diary", "v_1", json!(7.5), "invalid"),
        ("diary", "v_5", json!(-1), "out_of_range"),
        ("diary", "v_6", json!(42), "invalid"),
        ("diary", "v_6", json!("80"), "invalid"),
        ("diary", "v_7", json!("x".repeat(1001)), "too_long"),
    ];
    for (i, (key, question, value, code)) in cases.iter().enumerate() {
        let mut answers = if *key == "intake" { intake() } else { diary() };
        // "Other, namely" is asked only with "Other" ticked.
        if *question == "v_2" {
            answers["v_1"] = json!(["a7"]);
        }
        answers[*question] = value.clone();
        let answer = app.post(&responses("d1"), &body(key, &format!("bad-{i}"), answers)).await;
        assert_error(&answer, 422, json!({"errors": {"answer_data": {*question: [code]}}}));
    }
    assert_eq!(app.get(&responses("d1")).await.body, json!([]));
    assert_eq!(app.sql("SELECT COUNT(*) FROM responses").await, Some(0));
});

db_test!(async fn answers_after_no_to_alcohol_are_dropped_through_the_chain_and_not_scored(app) {
    // "No": the drinks a week (v_7) are not asked, so they count as
    // unanswered, so the question about them (v_8) is not asked either.
    let mut answers = intake();
    answers["v_6"] = json!("a0");
    answers["v_7"] = json!(30);
    answers["v_8"] = json!("a1");
    let posted = app.post(&responses("d1"), &body("intake", "no", answers.clone())).await;
    assert_eq!(posted.status, 201, "{}", posted.text);
    assert_eq!(posted.body["dropped_answers"], json!(["v_7", "v_8"]));
    assert_eq!(posted.body["values"]["v_7"], Value::Null);
    assert_eq!(posted.body["values"]["v_8"], Value::Null);
    let outcome = &posted.body["outcome"];
    assert_eq!(outcome["scores"]["drinks_per_week"]["value"], 0.0);
    assert_eq!(outcome["attention"], json!([]), "30 drinks and a wish to talk, both dropped");
    assert_eq!(outcome["complete"], "100%");
    // Under strict both are refused, and nothing is stored.
    let strict = app
        .post(&format!("{}?strict=true", responses("d2")), &body("intake", "no", answers))
        .await;
    assert_error(
        &strict,
        422,
        json!({"errors": {"answer_data": {"v_7": ["not_enabled"], "v_8": ["not_enabled"]}}}),
    );
    assert_eq!(app.get(&responses("d2")).await.body, json!([]));
    // "Yes" and 0 drinks: v_7 is asked, the chain stops at v_8.
    let mut none = intake();
    none["v_7"] = json!(0);
    none["v_8"] = json!("a1");
    let posted = app.post(&responses("d1"), &body("intake", "zero", none)).await;
    assert_eq!(posted.body["dropped_answers"], json!(["v_8"]), "{}", posted.text);
    assert_eq!(posted.body["values"]["v_7"], 0);
    // "Other, namely" without "Other" ticked, and the onset after "None
    // of these": dropped too.
    let mut nothing = intake();
    nothing["v_1"] = json!(["a0"]);
    nothing["v_2"] = json!("nightmares");
    let posted = app.post(&responses("d1"), &body("intake", "none", nothing)).await;
    assert_eq!(posted.body["dropped_answers"], json!(["v_2", "v_3"]), "{}", posted.text);
    assert_eq!(posted.body["outcome"]["scores"]["complaints"]["value"], 0.0);
});

db_test!(async fn the_intake_and_the_diary_read_in_dutch_and_score_the_same(app) {
    for (key, name, question, title) in [
        ("intake", "Intake", "v_6", "Drinkt u alcohol?"),
        ("diary", "Dagboek", "v_3", "Hoe somber voelde u zich vandaag?"),
    ] {
        let nl = app.get(&format!("/api/v1/questionnaires/{key}?use_legacy_keys=false&language=nl")).await;
        assert_eq!(nl.status, 200, "{}", nl.text);
        let nl = &nl.body["questionnaire"];
        assert_eq!(nl["name"], name);
        assert_eq!(nl["languages"], json!(["en", "nl"]));
        assert_eq!(nl["questions"][question]["title"], title);
        let en = app.get(&format!("/api/v1/questionnaires/{key}?use_legacy_keys=false")).await.body;
        assert_ne!(en["questionnaire"]["questions"][question]["title"], title);
    }
    let nl = app.get("/api/v1/questionnaires/intake?use_legacy_keys=false&language=nl").await.body;
    let q = &nl["questionnaire"];
    assert_eq!(q["questions"]["v_1"]["options"]["a0"], json!({"value": 0, "description": "Geen van deze", "exclusive": true}));
    assert_eq!(q["questions"]["v_7"]["unit"], "glazen");
    assert_eq!(q["pages"][1]["intro"], "Over de afgelopen vier weken.");
    assert_eq!(q["scores"]["drinks_per_week"]["label"], "Standaardglazen per week");
    let diary_nl = app.get("/api/v1/questionnaires/diary?use_legacy_keys=false&language=nl").await.body;
    assert_eq!(diary_nl["questionnaire"]["questions"]["v_5"]["max_label"], "Volledig");
    // Filled out in Dutch: the same outcome, the language and the
    // overlay's SHA-256 recorded.
    for (key, answers) in [("intake", intake()), ("diary", diary())] {
        let en = app.post(&responses("d1"), &body(key, &format!("{key}-en"), answers.clone())).await;
        let mut dutch = body(key, &format!("{key}-nl"), answers);
        dutch["language"] = json!("nl");
        let nl = app.post(&responses("d1"), &dutch).await;
        assert_eq!(nl.status, 201, "{}", nl.text);
        assert_eq!(nl.body["language"], "nl");
        assert_eq!(nl.body["outcome"], en.body["outcome"], "{key}");
    }
    let recorded = app
        .sql_strings("SELECT COALESCE(language, '-') || ' ' || COALESCE(translation_sha256, '-') FROM responses ORDER BY id")
        .await;
    let sha = |key: &str| {
        let file = tests::repo_root().join("questionnaires").join(key).join("translations/nl.toml");
        sha256_hex(&std::fs::read(file).expect("the Dutch overlay"))
    };
    assert_eq!(
        recorded,
        ["en -".to_owned(), format!("nl {}", sha("intake")), "en -".to_owned(), format!("nl {}", sha("diary"))]
    );
});
