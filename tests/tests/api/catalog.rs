//! Questionnaires, protocols, measurements and respondents: the exact
//! objects of docs/api/catalog.md, docs/api/protocols-and-subscriptions.md
//! and docs/api/respondents.md, and their 404s.

use serde_json::{Map, Value};
use tests::{TestApp, db_test, json};

use crate::support::*;

const PHQ9_TITLES: [&str; 10] = [
    "Little interest or pleasure in doing things",
    "Feeling down, depressed, or hopeless",
    "Trouble falling or staying asleep, or sleeping too much",
    "Feeling tired or having little energy",
    "Poor appetite or overeating",
    "Feeling bad about yourself - or that you are a failure or have let yourself or your family down",
    "Trouble concentrating on things, such as reading the newspaper or watching television",
    "Moving or speaking so slowly that other people could have noticed? Or the opposite - being so fidgety or restless that you have been moving around a lot more than usual",
    "Thoughts that you would be better off dead or of hurting yourself in some way",
    "If you checked off any problems, how difficult have these problems made it for you to do your work, take care of things at home, or get along with other people?",
];

/// The PHQ-9 questionnaire object as docs/api/catalog.md#questionnaire-object
/// shapes it, with question keys `phq9_N` (legacy) or `v_N`.
fn phq9(app: &TestApp, legacy: bool) -> Value {
    let options = |descriptions: [&str; 4]| {
        let mut m = Map::new();
        for (i, d) in descriptions.iter().enumerate() {
            m.insert(format!("a{i}"), json!({"value": i, "description": d}));
        }
        Value::Object(m)
    };
    let frequency = options([
        "Not at all",
        "Several days",
        "More than half the days",
        "Nearly every day",
    ]);
    let difficulty = options([
        "Not difficult at all",
        "Somewhat difficult",
        "Very difficult",
        "Extremely difficult",
    ]);
    let mut questions = Map::new();
    for (i, title) in PHQ9_TITLES.iter().enumerate() {
        let key = if legacy {
            format!("phq9_{}", i + 1)
        } else {
            format!("v_{}", i + 1)
        };
        let options = if i == 9 {
            difficulty.clone()
        } else {
            frequency.clone()
        };
        let mut question = json!({"title": title, "type": "radio", "options": options});
        if i == 9 {
            // Asked only of a respondent who checked off any problem.
            let any: Vec<Value> = (1..=9)
                .map(|n| {
                    let item = if legacy {
                        format!("phq9_{n}")
                    } else {
                        format!("v_{n}")
                    };
                    json!({"question": item, "greater_than": 0})
                })
                .collect();
            question["shown_if"] = json!({"any": any});
        }
        questions.insert(key, question);
    }
    json!({
        "id": questionnaire_id(app, "phq9").0,
        "key": "phq9",
        "name": "PHQ-9",
        "description": "Over the last 2 weeks, how often have you been bothered by any of the following problems?",
        "short_description": "Depression severity (Patient Health Questionnaire, 9 items)",
        "questions": questions,
        "scores": {"total": {"label": "Total score"}},
        "sbg_info": null,
    })
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

db_test!(async fn questionnaire_is_wrapped_with_legacy_keys_by_default(app) {
    let answer = app.get("/api/v1/questionnaires/phq9").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.body, json!({"questionnaire": phq9(&app, true)}));
    assert_eq!(keys(&answer.body["questionnaire"]), ["id", "key", "name", "description", "short_description", "questions", "scores", "sbg_info"]);
    let order: Vec<String> = (1..=10).map(|i| format!("phq9_{i}")).collect();
    assert_eq!(keys(&answer.body["questionnaire"]["questions"]), order);
    assert_eq!(app.get("/api/v1/questionnaires/phq9?use_legacy_keys=true").await.body, answer.body);
});

db_test!(async fn questionnaire_without_legacy_keys_uses_the_keys_of_response_values(app) {
    let answer = app.get("/api/v1/questionnaires/phq9?use_legacy_keys=false").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.body, json!({"questionnaire": phq9(&app, false)}));
    assert_eq!(keys(&answer.body["questionnaire"]["questions"]), PHQ9_QUESTIONS);
    // The same keys as the values of a stored response.
    let stored = posted(&app, "d1", "ext-1").await;
    assert_eq!(keys(&stored["values"]), keys(&answer.body["questionnaire"]["questions"]));
    assert_eq!(app.get("/api/v1/questionnaires/phq9?use_legacy_keys=0").await.body, answer.body);
});

db_test!(async fn use_legacy_keys_that_is_not_a_boolean_is_invalid(app) {
    for value in ["maybe", "", "2", "TRUE!"] {
        let answer = app.get(&format!("/api/v1/questionnaires/phq9?use_legacy_keys={value}")).await;
        assert_error(&answer, 422, error("use_legacy_keys", "invalid"));
        let answer = app.get(&format!("/api/v1/questionnaires?use_legacy_keys={value}")).await;
        assert_error(&answer, 422, error("use_legacy_keys", "invalid"));
    }
});

db_test!(async fn unknown_questionnaire_is_not_found(app) {
    for key in ["phq10", "PHQ9", "phq9%00", "v_1"] {
        assert_error(&app.get(&format!("/api/v1/questionnaires/{key}")).await, 404, error("questionnaire", "not_found"));
    }
});

db_test!(
    async fn questionnaires_are_listed_unwrapped_by_id(app: spawn_with_mini) {
        let answer = app.get("/api/v1/questionnaires").await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        let list = answer.body.as_array().cloned().unwrap_or_default();
        assert_eq!(list.len(), 2);
        let keys: Vec<&str> = list.iter().filter_map(|q| q["key"].as_str()).collect();
        let mut by_id = list.clone();
        by_id.sort_by_key(|q| q["id"].as_i64());
        assert_eq!(list, by_id);
        assert!(keys.contains(&"mini") && keys.contains(&"phq9"), "{keys:?}");
        let phq9_entry = list
            .iter()
            .find(|q| q["key"] == "phq9")
            .cloned()
            .unwrap_or_default();
        assert_eq!(phq9_entry, phq9(&app, true));
        let plain = app
            .get("/api/v1/questionnaires?use_legacy_keys=false")
            .await
            .body;
        let phq9_plain = plain
            .as_array()
            .into_iter()
            .flatten()
            .find(|q| q["key"] == "phq9")
            .cloned()
            .unwrap_or_default();
        assert_eq!(phq9_plain, phq9(&app, false));
    }
);

/// The protocol with this key as
/// docs/api/protocols-and-subscriptions.md#protocol-object shapes it.
fn protocol(app: &TestApp, key: &str) -> Value {
    let catalog = app.state.catalog();
    let p = catalog
        .protocols()
        .iter()
        .find(|p| p.def.key == key)
        .unwrap_or_else(|| panic!("protocol {key}"));
    let entry = |key: &str, name: &str| json!({"id": questionnaire_id(app, key).0, "key": key, "vendor_key": key, "quby_key": key, "name": name});
    let measurement = |key: &str,
                       name: &str,
                       label: &str,
                       description: &str,
                       questionnaires: Value| {
        json!({"id": p.measurement_ids[0].0, "key": key, "name": name, "description": description, "active": true,
               "label": label, "protocol_id": p.id.0, "questionnaires": questionnaires})
    };
    match key {
        "diary" => json!({
            "id": p.id.0, "key": "diary", "name": "Mood diary, four times a day",
            "description": "The mood diary (mood, tension, energy right now) four times a day for two weeks, to follow how they change over the day and over days.",
            "active": true, "automatic": true,
            "measurements": [measurement("moment", "Diary moment", "D", "At 09:00, 13:00, 17:00 and 21:00.", json!([entry("mood_diary", "Mood diary")]))],
        }),
        "intake" => json!({
            "id": p.id.0, "key": "intake", "name": "Intake", "description": "Depression screening at the start of treatment.",
            "active": true, "automatic": false,
            "measurements": [measurement("intake", "Intake", "T0", "At the first appointment.", json!([entry("phq9", "PHQ-9")]))],
        }),
        _ => json!({
            "id": p.id.0, "key": "rom_monthly", "name": "Monthly ROM: depression and anxiety",
            "description": "PHQ-9 and GAD-7 once a month for six months from the start of treatment, to follow the course of depressive and anxiety symptoms.",
            "active": true, "automatic": true,
            "measurements": [measurement(
                "monthly", "Monthly measurement", "M",
                "At the start, then on the same day of each month (the last day in shorter months).",
                json!([entry("phq9", "PHQ-9"), entry("gad7", "GAD-7")]),
            )],
        }),
    }
}

db_test!(async fn protocols_are_listed_by_id(app) {
    let answer = app.get("/api/v1/protocols").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let mut expected = vec![protocol(&app, "diary"), protocol(&app, "intake"), protocol(&app, "rom_monthly")];
    expected.sort_by_key(|p| p["id"].as_i64());
    assert_eq!(answer.body, Value::Array(expected));
});

db_test!(async fn one_protocol_and_one_measurement(app) {
    for key in ["diary", "intake", "rom_monthly"] {
        let expected = protocol(&app, key);
        let answer = app.get(&format!("/api/v1/protocols/{}", expected["id"])).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert_eq!(answer.body, expected);
        let measurement = &expected["measurements"][0];
        let answer = app.get(&format!("/api/v1/measurements/{}", measurement["id"])).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert_eq!(answer.body, *measurement);
    }
});

db_test!(async fn unknown_or_non_numeric_protocol_and_measurement_ids_are_not_found(app) {
    for id in ["999", "0", "-1", "abc", "1.5", "1e2", "99999999999999999999", "%201"] {
        assert_error(&app.get(&format!("/api/v1/protocols/{id}")).await, 404, error("protocol", "not_found"));
        assert_error(&app.get(&format!("/api/v1/measurements/{id}")).await, 404, error("measurement", "not_found"));
    }
    // A protocol's key is not its id.
    assert_error(&app.get("/api/v1/protocols/intake").await, 404, error("protocol", "not_found"));
});

db_test!(async fn respondents_list_the_patient_and_never_the_professional(app) {
    assert_eq!(app.get("/api/v1/dossiers/d1/respondents").await.body, json!([]));
    let body = json!({"questionnaire_key": "phq9", "external_id": "by-doc", "answer_data": {"v_1": "a0"}, "respondent": "profess"});
    let by_professional = app.post(&responses("d1"), &body).await;
    assert_eq!(by_professional.status, 201, "{}", by_professional.text);
    let list = app.get("/api/v1/dossiers/d1/respondents").await;
    assert_eq!(list.status, 200);
    let patient = list.body[0]["id"].clone();
    assert_eq!(list.body, json!([{"id": patient, "label": "Patient", "respondent_type": "patient"}]));
    assert_ne!(patient, by_professional.body["respondent_id"]);
    let one = app.get(&format!("/api/v1/dossiers/d1/respondents/{patient}")).await;
    assert_eq!(one.status, 200, "{}", one.text);
    assert_eq!(one.body, json!({"id": patient, "label": "Patient", "respondent_type": "patient"}));
    let professional = format!("/api/v1/dossiers/d1/respondents/{}", by_professional.body["respondent_id"]);
    assert_error(&app.get(&professional).await, 404, error("respondent", "not_found"));
});

db_test!(async fn respondent_of_another_dossier_is_not_found(app) {
    let other = posted(&app, "d2", "ext-1").await;
    posted(&app, "d1", "ext-1").await;
    let path = format!("/api/v1/dossiers/d1/respondents/{}", other["respondent_id"]);
    assert_error(&app.get(&path).await, 404, error("respondent", "not_found"));
    let unknown_dossier = format!("/api/v1/dossiers/d3/respondents/{}", other["respondent_id"]);
    assert_error(&app.get(&unknown_dossier).await, 404, error("respondent", "not_found"));
    for id in ["abc", "0", "-1", "99999"] {
        assert_error(&app.get(&format!("/api/v1/dossiers/d1/respondents/{id}")).await, 404, error("respondent", "not_found"));
    }
});
