//! The questionnaire library: every bundled instrument's golden fixtures
//! POSTed over HTTP and scored by its WebAssembly scorer; the questionnaire
//! endpoint for every instrument in both key modes, checked against the
//! definition file read here independently of the host; the `v_` round
//! trip; flags that hide a question and textvars that fill a text.

use std::path::PathBuf;

use plugin_sdk::testing::{self, Expected, Fixture};
use serde_json::{Map, Value};
use tests::{db_test, json};

use crate::support::*;

/// The instruments we ship, by questionnaire key.
const INSTRUMENTS: [&str; 10] = [
    "phq9",
    "gad7",
    "who5",
    "k10",
    "pcl5",
    "dass21",
    "audit",
    "mood_diary",
    "intake",
    "diary",
];

/// What the host adds to a score besides what the scorer computed.
const HOST_FIELDS: [&str; 4] = ["score", "label", "global", "referenced_values"];

fn folder(key: &str) -> PathBuf {
    tests::repo_root().join("questionnaires").join(key)
}

fn fixtures(key: &str) -> Vec<Fixture> {
    testing::load_dir(folder(key).join("fixtures")).unwrap_or_else(|e| panic!("{key}: {e}"))
}

#[test]
fn every_questionnaire_folder_is_an_instrument_with_eight_current_fixtures_or_more() {
    let mut found: Vec<String> = std::fs::read_dir(tests::repo_root().join("questionnaires"))
        .expect("questionnaires/")
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    let mut expected: Vec<String> = INSTRUMENTS.iter().map(|k| k.to_string()).collect();
    expected.sort();
    assert_eq!(
        found, expected,
        "a new instrument needs a line in INSTRUMENTS"
    );
    for key in INSTRUMENTS {
        assert!(fixtures(key).len() >= 8, "{key}: at least eight fixtures");
        let filled = host::commands::fixtures::fill_dir(&folder(key), true)
            .unwrap_or_else(|e| panic!("{key}: {e:#}"));
        let stale: Vec<_> = filled.iter().filter(|f| f.changed).collect();
        assert!(
            stale.is_empty(),
            "{key}: fixtures out of date with the definition (run `outcomes plugin fixtures questionnaires/{key}`): {stale:?}"
        );
    }
}

/// The POST body that gives `fixture`'s input: its answers in their own
/// form (`typed_answers`; null for unanswered), flags and textvars.
fn post_body(key: &str, fixture: &Fixture) -> Value {
    let input = &fixture.input;
    let mut body = json!({
        "questionnaire_key": key,
        "external_id": format!("{key}-{}", fixture.name),
        "answer_data": input["typed_answers"],
    });
    for field in ["flags", "textvars"] {
        if let Some(v) = input.get(field) {
            body[field] = v.clone();
        }
    }
    body
}

/// What differs between a stored outcome and a fixture's expected scorer
/// output, after taking away what the host adds (and checking it).
fn outcome_differences(key: &str, outcome: &Value, expected: &Value) -> Vec<String> {
    let mut diffs = Vec::new();
    let scores = outcome["scores"].as_object().cloned().unwrap_or_default();
    let mut computed = Map::new();
    for (score, fields) in scores {
        let mut fields = fields.as_object().cloned().unwrap_or_default();
        if fields.get("score") != Some(&Value::Bool(true)) || !fields.contains_key("label") {
            diffs.push(format!(
                "{key}.{score}: the host's score and label are missing"
            ));
        }
        for host in HOST_FIELDS {
            fields.remove(host);
        }
        // A score the scorer left out is an empty object after that.
        if !fields.is_empty() {
            computed.insert(score, Value::Object(fields));
        }
    }
    let wanted = expected["scores"].as_object().cloned().unwrap_or_default();
    diffs.extend(testing::json_diff(
        &Value::Object(wanted),
        &Value::Object(computed),
    ));
    for list in ["alarm", "attention"] {
        let want = expected.get(list).cloned().unwrap_or(Value::Null);
        diffs.extend(
            testing::json_diff(&want, &outcome[list])
                .into_iter()
                .map(|d| format!("{list}: {d}")),
        );
    }
    let complete = expected["completion"]
        .as_f64()
        .map(|c| Value::String(format!("{}%", (c * 100.0).round())))
        .unwrap_or(Value::Null);
    if outcome["complete"] != complete {
        diffs.push(format!(
            "complete: expected {complete}, got {}",
            outcome["complete"]
        ));
    }
    diffs
}

db_test!(async fn every_fixture_of_every_instrument_scores_the_same_over_http(app) {
    let mut cases = 0;
    for key in INSTRUMENTS {
        for fixture in fixtures(key) {
            let Expected::Output(expected) = &fixture.expected else {
                continue;
            };
            // Patient details are not stored yet, so the service sends
            // none; such a case can only run natively.
            if fixture.input["patient"].as_object().is_some_and(|p| !p.is_empty()) {
                continue;
            }
            let answer = app.post(&responses("lib"), &post_body(key, &fixture)).await;
            assert_eq!(answer.status, 201, "{key}/{}: {}", fixture.name, answer.text);
            let diffs = outcome_differences(key, &answer.body["outcome"], expected);
            assert!(
                diffs.is_empty(),
                "{key}/{} ({}) over HTTP:\n{}\noutcome: {}",
                fixture.name,
                fixture.description,
                diffs.join("\n"),
                answer.body["outcome"]
            );
            cases += 1;
        }
    }
    assert!(cases >= 8 * INSTRUMENTS.len(), "{cases} cases ran");
});

/// A definition file read as plain TOML, independently of the host.
struct Definition {
    toml: toml::Table,
}

/// A condition as the definition writes it, as the questionnaire object
/// shows it: the same fields, question keys as `key_of` gives them.
fn condition_json(condition: &toml::Value, key_of: &impl Fn(&str) -> String) -> Value {
    match condition {
        toml::Value::Table(t) => Value::Object(
            t.iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("question", toml::Value::String(q)) => Value::String(key_of(q)),
                        _ => condition_json(v, key_of),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        toml::Value::Array(list) => {
            Value::Array(list.iter().map(|c| condition_json(c, key_of)).collect())
        }
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(n) => json!(n),
        toml::Value::Float(n) => json!(n),
        toml::Value::Boolean(b) => json!(b),
        other => panic!("not in a condition: {other:?}"),
    }
}

impl Definition {
    fn load(key: &str) -> Definition {
        let path = folder(key).join("questionnaire.toml");
        let text = std::fs::read_to_string(&path).expect("definition");
        Definition {
            toml: toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
        }
    }

    /// The languages of the overlays in the questionnaire's
    /// `translations/` folder, in order.
    fn translations(&self) -> Vec<String> {
        let key = self.toml["key"].as_str().unwrap_or_default();
        let mut languages: Vec<String> = std::fs::read_dir(folder(key).join("translations"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.strip_suffix(".toml").map(str::to_owned)
            })
            .collect();
        languages.sort();
        languages
    }

    fn language(&self) -> &str {
        self.toml["language"].as_str().unwrap_or("en")
    }

    /// A text in the definition's language with textvar defaults filled in.
    fn text(&self, value: &toml::Value) -> String {
        let mut text = self.localized(value);
        if let Some(vars) = self.toml.get("textvars").and_then(|t| t.as_table()) {
            for (name, var) in vars {
                if let Some(default) = var.get("default") {
                    let value = self.localized(default);
                    text = text
                        .replace(&format!("{{{{{name}}}}}"), &value)
                        .replace(&format!("{{{{ {name} }}}}"), &value);
                }
            }
        }
        text
    }

    fn localized(&self, value: &toml::Value) -> String {
        match value {
            toml::Value::String(s) => s.clone(),
            toml::Value::Table(t) => t
                .get(self.language())
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_owned(),
            other => panic!("not a text: {other:?}"),
        }
    }

    fn options(&self, question: &toml::Value) -> Vec<toml::Value> {
        match question.get("options") {
            None => Vec::new(),
            Some(toml::Value::String(set)) => self.toml["option_sets"][set.as_str()]
                .as_array()
                .cloned()
                .unwrap_or_default(),
            Some(toml::Value::Array(inline)) => inline.clone(),
            Some(other) => panic!("options: {other:?}"),
        }
    }

    /// The fields of docs/api/catalog.md#question-types a question of
    /// `kind` carries besides title, type and options, with the defaults
    /// the format documents (docs/questionnaire-format.md#questions).
    fn limits(&self, q: &toml::Value, kind: &str, question: &mut Value) {
        let int = |field: &str| q.get(field).and_then(toml::Value::as_integer);
        let text = |field: &str| q.get(field).map(|t| json!(self.text(t)));
        let mut put = |field: &str, value: Option<Value>| {
            if let Some(v) = value {
                question[field] = v;
            }
        };
        match kind {
            "slider" => {
                put("min", int("min").map(|n| json!(n)));
                put("max", int("max").map(|n| json!(n)));
                put("step", Some(json!(int("step").unwrap_or(1))));
                put("min_label", text("min_label"));
                put("max_label", text("max_label"));
            }
            "integer" => {
                put("min", int("min").map(|n| json!(n)));
                put("max", int("max").map(|n| json!(n)));
                put("unit", text("unit"));
            }
            "decimal" => {
                // Decimal bounds are numbers with a fraction on the wire.
                let number = |field: &str| {
                    q.get(field)
                        .and_then(|v| v.as_float().or(v.as_integer().map(|n| n as f64)))
                        .map(|n| json!(n))
                };
                put("min", number("min"));
                put("max", number("max"));
                put("unit", text("unit"));
            }
            "date" => put(
                "precision",
                Some(json!(
                    q.get("precision")
                        .and_then(toml::Value::as_str)
                        .unwrap_or("day")
                )),
            ),
            "string" => put("max_length", Some(json!(int("max_length").unwrap_or(1000)))),
            "textarea" => put(
                "max_length",
                Some(json!(int("max_length").unwrap_or(10_000))),
            ),
            _ => {}
        }
    }

    /// The `pages` of the questionnaire object, when the definition has
    /// any: each page's key, title and intro when given, question keys,
    /// and condition.
    fn pages(&self, key_of: &impl Fn(&str) -> String) -> Option<Value> {
        let pages = self.toml.get("pages")?.as_array()?;
        let pages: Vec<Value> = pages
            .iter()
            .map(|p| {
                let mut page = json!({"key": p["key"].as_str()});
                for field in ["title", "intro"] {
                    if let Some(t) = p.get(field) {
                        page[field] = json!(self.text(t));
                    }
                }
                let keys: Vec<String> = p["questions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|k| key_of(k.as_str().unwrap_or_default()))
                    .collect();
                page["questions"] = json!(keys);
                if let Some(condition) = p.get("shown_if") {
                    page["shown_if"] = condition_json(condition, key_of);
                }
                page
            })
            .collect();
        Some(Value::Array(pages))
    }

    /// The questionnaire object of docs/api/catalog.md#questionnaire-object,
    /// question keys `<key>_N` when legacy.
    fn expected(&self, id: i64, legacy: bool) -> Value {
        let key = self.toml["key"].as_str().unwrap_or_default();
        let key_of = |k: &str| {
            if legacy {
                k.replacen("v_", &format!("{key}_"), 1)
            } else {
                k.to_owned()
            }
        };
        let mut questions = Map::new();
        for q in self.toml["questions"].as_array().into_iter().flatten() {
            let mut options = Map::new();
            for o in self.options(q) {
                let mut option = json!({"value": o["value"].as_integer(), "description": self.text(&o["description"])});
                if o.get("exclusive").and_then(toml::Value::as_bool) == Some(true) {
                    option["exclusive"] = json!(true);
                }
                options.insert(o["key"].as_str().unwrap_or_default().to_owned(), option);
            }
            let kind = q["type"].as_str().unwrap_or_default();
            let mut question = if kind == "display" {
                json!({"text": self.text(&q["text"]), "type": kind, "options": options})
            } else {
                json!({"title": self.text(&q["title"]), "type": kind, "options": options})
            };
            self.limits(q, kind, &mut question);
            if let Some(condition) = q.get("shown_if") {
                question["shown_if"] = condition_json(condition, &key_of);
            }
            questions.insert(key_of(q["key"].as_str().unwrap_or_default()), question);
        }
        let mut scores = Map::new();
        for s in self.toml["scores"].as_array().into_iter().flatten() {
            scores.insert(
                s["key"].as_str().unwrap_or_default().to_owned(),
                json!({"label": self.text(&s["label"])}),
            );
        }
        let sbg_info = self.toml.get("sbg_info").map(|sbg| {
            let questions: Map<String, Value> = sbg
                .get("questions")
                .and_then(|q| q.as_table())
                .into_iter()
                .flatten()
                .map(|(id, k)| {
                    (
                        id.clone(),
                        Value::String(key_of(k.as_str().unwrap_or_default())),
                    )
                })
                .collect();
            let scores: Map<String, Value> = sbg
                .get("scores")
                .and_then(|s| s.as_table())
                .into_iter()
                .flatten()
                .map(|(id, k)| (id.clone(), json!(k.as_str())))
                .collect();
            json!({"sbg_key": sbg["sbg_key"].as_str(), "questions": questions, "scores": scores})
        });
        let mut object = json!({
            "id": id,
            "key": key,
            "name": self.toml["name"].as_str(),
            "description": self.toml.get("description").map(|d| self.text(d)),
            "short_description": self.text(&self.toml["short_description"]),
            "questions": questions,
            "scores": scores,
            "sbg_info": sbg_info,
        });
        if let Some(pages) = self.pages(&key_of) {
            object["pages"] = pages;
        }
        let languages = self.translations();
        if !languages.is_empty() {
            let own = std::iter::once(self.language().to_owned());
            object["languages"] = json!(own.chain(languages).collect::<Vec<_>>());
        }
        object
    }
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

db_test!(async fn every_instrument_answers_the_questionnaire_object_in_both_key_modes(app) {
    for key in INSTRUMENTS {
        let definition = Definition::load(key);
        let id = questionnaire_id(&app, key).0;
        for (query, legacy) in [("", true), ("?use_legacy_keys=true", true), ("?use_legacy_keys=false", false)] {
            let answer = app.get(&format!("/api/v1/questionnaires/{key}{query}")).await;
            assert_eq!(answer.status, 200, "{key}{query}: {}", answer.text);
            assert_eq!(keys(&answer.body), ["questionnaire"]);
            let got = &answer.body["questionnaire"];
            let want = definition.expected(id, legacy);
            assert_eq!(got, &want, "{key}{query}");
            // Definition order, which JSON object equality does not check.
            assert_eq!(keys(&got["questions"]), keys(&want["questions"]), "{key}{query}: order");
            let text = answer.text.as_str();
            assert!(!text.contains("{{"), "{key}{query}: a placeholder was not filled");
        }
    }
    let unknown = app.get("/api/v1/questionnaires/phq10").await;
    assert_error(&unknown, 404, error("questionnaire", "not_found"));
});

db_test!(async fn dass21_carries_sbg_info_in_both_key_modes_and_the_others_none(app) {
    for key in INSTRUMENTS {
        let legacy = app.get(&format!("/api/v1/questionnaires/{key}")).await.body;
        let plain = app
            .get(&format!("/api/v1/questionnaires/{key}?use_legacy_keys=false"))
            .await
            .body;
        let (legacy, plain) = (&legacy["questionnaire"]["sbg_info"], &plain["questionnaire"]["sbg_info"]);
        if key != "dass21" {
            assert_eq!(legacy, &Value::Null, "{key}");
            continue;
        }
        assert_eq!(legacy["sbg_key"], "DASS21");
        let plain_keys: Vec<&Value> = plain["questions"].as_object().into_iter().flatten().map(|(_, v)| v).collect();
        assert_eq!(plain_keys.len(), 21);
        for (id, v_key) in plain["questions"].as_object().into_iter().flatten() {
            let v_key = v_key.as_str().unwrap_or_default();
            assert!(v_key.starts_with("v_"), "{id}: {v_key}");
            assert_eq!(
                legacy["questions"][id].as_str(),
                Some(v_key.replacen("v_", "dass21_", 1).as_str()),
                "{id}"
            );
        }
        assert_eq!(legacy["scores"], plain["scores"]);
    }
});

/// A valid answer to `question` (a questionnaire object's question): the
/// first option, a list of it, the lowest number, a date of its precision,
/// a text; none to a display item.
fn first_answer(question: &Value) -> Option<Value> {
    let first = || json!(keys(&question["options"])[0]);
    let lowest = || question.get("min").cloned().unwrap_or(json!(0));
    Some(match question["type"].as_str().unwrap_or_default() {
        "radio" | "select" => first(),
        "checkbox" => json!([first()]),
        "slider" | "integer" | "decimal" => lowest(),
        "date" => match question["precision"].as_str() {
            Some("year") => json!("2024"),
            Some("month") => json!("2024-05"),
            _ => json!("2024-05-17"),
        },
        "string" | "textarea" => json!("text"),
        _ => return None,
    })
}

db_test!(async fn answers_posted_with_v_keys_line_up_with_the_questionnaire_without_legacy_keys(app) {
    for key in INSTRUMENTS {
        let questionnaire = app
            .get(&format!("/api/v1/questionnaires/{key}?use_legacy_keys=false"))
            .await
            .body;
        let questions = questionnaire["questionnaire"]["questions"].as_object().cloned().unwrap_or_default();
        // Every question answered with its first option, its lowest
        // number, a date or a text; display items take no answer.
        let answers: Map<String, Value> = questions
            .iter()
            .filter_map(|(k, q)| Some((k.clone(), first_answer(q)?)))
            .collect();
        let dossier = format!("trip-{key}");
        let posted = app
            .post(
                &responses(&dossier),
                &json!({"questionnaire_key": key, "external_id": format!("trip-{key}"), "answer_data": answers}),
            )
            .await;
        assert_eq!(posted.status, 201, "{key}: {}", posted.text);
        // A first option can skip questions (the AUDIT's "Never", PHQ-9's
        // "Not at all" everywhere, the intake's "No" to alcohol): their
        // answers are dropped, named, and stored as null.
        let dropped: Vec<&str> = posted.body["dropped_answers"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        let listed = app.get(&responses(&dossier)).await.body;
        let stored = &listed[0];
        assert_eq!(keys(&stored["values"]), keys(&Value::Object(answers.clone())), "{key}: key for key, in order");
        for (k, answer) in &answers {
            if dropped.contains(&k.as_str()) {
                assert_eq!(stored["values"][k], Value::Null, "{key}.{k}: dropped");
                continue;
            }
            // An option key posted is one of the question's (first_answer
            // took it from them), so this also checks the stored one is.
            assert_eq!(&stored["values"][k], answer, "{key}.{k}: stored as posted");
        }
        let expected_dropped: &[&str] = match key {
            "phq9" => &["v_10"],
            "audit" => &["v_2", "v_3", "v_4", "v_5", "v_6", "v_7", "v_8"],
            // "Other" not ticked, and "No" to alcohol with its chain.
            "intake" => &["v_2", "v_7", "v_8"],
            _ => &[],
        };
        assert_eq!(dropped, expected_dropped, "{key}");
        // With legacy keys the same questions, renamed.
        let legacy = app.get(&format!("/api/v1/questionnaires/{key}")).await.body;
        let renamed: Vec<String> = keys(&Value::Object(questions)).iter().map(|k| k.replacen("v_", &format!("{key}_"), 1)).collect();
        assert_eq!(keys(&legacy["questionnaire"]["questions"]), renamed);
    }
});

/// PHQ-9 answers with every item at `a2` (2 points), item 9 included.
fn phq9_all_twos() -> Value {
    let mut answers = Map::new();
    for i in 1..=9 {
        answers.insert(format!("v_{i}"), json!("a2"));
    }
    Value::Object(answers)
}

db_test!(async fn a_hidden_question_is_neither_stored_nor_scored_and_the_response_keeps_its_flags(app) {
    let posted = app
        .post(
            &responses("d1"),
            &json!({"questionnaire_key": "phq9", "external_id": "phq8", "answer_data": phq9_all_twos(), "flags": {"phq8": true}}),
        )
        .await;
    assert_eq!(posted.status, 201, "{}", posted.text);
    let body = &posted.body;
    assert_eq!(body["flags"], json!({"phq8": true}));
    // PHQ-8: eight items of 2; item 9 (answered 2) hidden, so no alarm.
    assert_eq!(body["outcome"]["scores"]["total"]["value"], 16.0);
    assert_eq!(body["outcome"]["alarm"], Value::Null);
    assert_eq!(body["outcome"]["scores"]["total"]["global"], true);
    // A question the flag hides is not enabled: its answer is dropped, and
    // the answer says so.
    assert_eq!(body["values"]["v_9"], Value::Null);
    assert_eq!(body["dropped_answers"], json!(["v_9"]));
    // Without the flag the same answers are a PHQ-9 with the item-9 alarm.
    let phq9 = app
        .post(
            &responses("d1"),
            &json!({"questionnaire_key": "phq9", "external_id": "phq9", "answer_data": phq9_all_twos()}),
        )
        .await;
    assert_eq!(phq9.body["outcome"]["scores"]["total"]["value"], 18.0);
    assert_eq!(phq9.body["outcome"]["alarm"], json!(["v_9"]));
    assert_eq!(phq9.body["flags"], json!({}));
    let listed = app.get(&responses("d1")).await.body;
    let stored: Vec<&Value> = listed.as_array().into_iter().flatten().map(|r| &r["flags"]).collect();
    assert!(stored.contains(&&json!({"phq8": true})), "{listed}");
});

db_test!(async fn a_pending_response_is_scored_in_the_variant_it_was_prepared_with(app) {
    let item = host::store::Preparation {
        questionnaire_id: questionnaire_id(&app, "phq9"),
        flags: json!({"phq8": true}).as_object().cloned().unwrap_or_default(),
        ..Default::default()
    };
    let id = prepare_items(&app, "d1", vec![item]).await[0];
    let put = app
        .put(
            &response("d1", id),
            &json!({"questionnaire_key": "phq9", "answer_data": phq9_all_twos()}),
        )
        .await;
    assert_eq!(put.status, 200, "{}", put.text);
    assert_eq!(put.body["outcome"]["scores"]["total"]["value"], 16.0);
    assert_eq!(put.body["outcome"]["alarm"], Value::Null);
});

db_test!(async fn textvars_are_kept_on_the_response(app) {
    let answers = json!({"v_1": "a0", "v_2": "a0", "v_3": "a0", "v_4": "a0", "v_5": "a0", "v_6": "a0", "v_7": "a0", "v_8": "a0", "v_9": "a0", "v_10": "a0"});
    let posted = app
        .post(
            &responses("d1"),
            &json!({"questionnaire_key": "k10", "external_id": "k10-30d", "answer_data": answers, "textvars": {"period": "30 days"}}),
        )
        .await;
    assert_eq!(posted.status, 201, "{}", posted.text);
    assert_eq!(posted.body["textvars"], json!({"period": "30 days"}));
    assert_eq!(posted.body["outcome"]["scores"]["total"]["value"], 10.0);
});

db_test!(async fn unknown_or_mistyped_flags_and_textvars_get_the_documented_errors(app) {
    let post = |external_id: &str, extra: Value| {
        let mut body = json!({"questionnaire_key": "phq9", "external_id": external_id, "answer_data": {"v_1": "a0"}});
        for (k, v) in extra.as_object().cloned().unwrap_or_default() {
            body[k] = v;
        }
        body
    };
    let cases = [
        (json!({"flags": {"nope": true}}), "flag_does_not_exist"),
        (json!({"flags": {"phq8": "yes"}}), "flag_value_invalid"),
        (json!({"textvars": {"period": "2 weeks"}}), "textvar_does_not_exist"),
        (json!({"flags": ["phq8"]}), "invalid"),
    ];
    for (n, (extra, code)) in cases.into_iter().enumerate() {
        let answer = app.post(&responses("d1"), &post(&format!("bad-{n}"), extra.clone())).await;
        assert_error(&answer, 422, error("base", code));
    }
    let k10 = app
        .post(
            &responses("d1"),
            &json!({"questionnaire_key": "k10", "external_id": "k10-bad", "answer_data": {"v_1": "a1"}, "textvars": {"period": 4}}),
        )
        .await;
    assert_error(&k10, 422, error("base", "invalid"));
    // Nothing was stored.
    assert_eq!(app.get(&responses("d1")).await.body, json!([]));
});
