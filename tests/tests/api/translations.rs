//! Translation overlays (docs/api/catalog.md#translations): a file per
//! questionnaire and language replaces the texts by key; the questionnaire
//! object shows them with `?language=`; a response filled out in one
//! records the file's SHA-256; a file that does not fit is refused and the
//! texts that served before keep serving, also across hot reloads. The
//! overlay is the test one of tests/fixtures/translations (test texts, not
//! a translation of any instrument).

use std::time::Duration;

use host::domain::questionnaire::sha256_hex;
use serde_json::Value;
use tests::{Db, TestApp, db_test, json};

use crate::answer_types::spawn_typed;
use crate::support::*;

/// How long a reload may take before the test gives up (a bound, not a
/// wait).
const RELOAD_BOUND: Duration = Duration::from_secs(30);

fn overlay_file() -> std::path::PathBuf {
    tests::repo_root().join("tests/fixtures/translations/types/nl.toml")
}

async fn types(app: &TestApp, query: &str) -> Value {
    let answer = app
        .get(&format!(
            "/api/v1/questionnaires/types?use_legacy_keys=false{query}"
        ))
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.body["questionnaire"].clone()
}

db_test!(
    async fn the_questionnaire_object_shows_a_translations_texts_by_key(app: spawn_typed) {
        let nl = types(&app, "&language=nl").await;
        assert_eq!(nl["name"], "Elk type (test)");
        assert_eq!(nl["short_description"], "Eén vraag van elk type (test)");
        // The textvar's default comes from the translation too.
        assert_eq!(nl["description"], "Testteksten voor u");
        let q = &nl["questions"];
        assert_eq!(
            q["v_intro"]["text"],
            "Beantwoord wat van toepassing is. (test)"
        );
        assert_eq!(q["v_1"]["title"], "Klachten? (test)");
        assert_eq!(
            q["v_1"]["options"]["a1"],
            json!({"value": 1, "description": "Ja"})
        );
        assert_eq!(
            q["v_3"]["options"]["a9"],
            json!({"value": 0, "description": "Geen van deze", "exclusive": true})
        );
        assert_eq!(q["v_4"]["min_label"], "Heel slecht");
        assert_eq!(q["v_5"]["unit"], "drankjes");
        assert_eq!(nl["pages"][0]["title"], "Begin (test)");
        assert_eq!(nl["pages"][0]["intro"], "Over u (test)");
        assert_eq!(nl["languages"], json!(["en", "nl"]));
        // Keys, types, values and conditions are the definition's, whatever
        // the language.
        let en = types(&app, "").await;
        assert_eq!(en["name"], "Every type");
        assert_eq!(en["questions"]["v_1"]["title"], "Any complaints?");
        let shape = |q: &Value| {
            let mut q = q.clone();
            for (_, question) in q["questions"].as_object_mut().into_iter().flatten() {
                if let Some(o) = question.as_object_mut() {
                    for field in ["title", "text", "min_label", "max_label", "unit"] {
                        o.remove(field);
                    }
                }
                for (_, option) in question["options"].as_object_mut().into_iter().flatten() {
                    if let Some(o) = option.as_object_mut() {
                        o.remove("description");
                    }
                }
            }
            q["questions"].clone()
        };
        assert_eq!(shape(&nl), shape(&en));
        // A language without a translation shows the definition's own texts.
        assert_eq!(types(&app, "&language=de").await, en);
        let bad = app.get("/api/v1/questionnaires/types?language=dutch").await;
        assert_error(&bad, 422, error("language", "invalid"));
        let list = app.get("/api/v1/questionnaires?language=nl").await.body;
        let listed = list
            .as_array()
            .into_iter()
            .flatten()
            .find(|q| q["key"] == "types")
            .cloned();
        assert_eq!(
            listed.map(|q| q["name"].clone()),
            Some(json!("Elk type (test)"))
        );
    }
);

db_test!(
    async fn a_response_filled_out_in_a_translation_records_its_sha256(app: spawn_typed) {
        let answers = json!({"v_1": "a0"});
        for (external_id, language) in [("nl", Some("nl")), ("en", None), ("de", Some("de"))] {
            let mut body = json!({"questionnaire_key": "types", "external_id": external_id, "answer_data": answers});
            if let Some(language) = language {
                body["language"] = json!(language);
            }
            let posted = app.post(&responses("d1"), &body).await;
            assert_eq!(posted.status, 201, "{}", posted.text);
        }
        let file = std::fs::read(overlay_file()).expect("the test overlay");
        let sha256 = sha256_hex(&file);
        let recorded = app
        .sql_strings("SELECT COALESCE(language, '-') || ' ' || COALESCE(translation_sha256, '-') FROM responses ORDER BY id")
        .await;
        assert_eq!(
            recorded,
            [format!("nl {sha256}"), "en -".to_owned(), "de -".to_owned()]
        );
    }
);

/// The host watching a copy of the test questionnaire, with its
/// translation in the questionnaire's own folder.
async fn spawn_watched(db: Db) -> TestApp {
    let app = TestApp::spawn_with(db, |config| {
        let dir = config.data_dir.join("questionnaires");
        let folder = dir.join("types").join("translations");
        std::fs::create_dir_all(&folder).expect("folder");
        let source = tests::repo_root().join("tests/fixtures/typed/types/questionnaire.toml");
        std::fs::copy(source, dir.join("types").join("questionnaire.toml")).expect("copied");
        std::fs::copy(overlay_file(), folder.join("nl.toml")).expect("copied");
        config.questionnaires_dir = dir;
        config.protocols_dir = config.data_dir.join("no-protocols");
        config.watch = true;
    })
    .await;
    // Serving means `run` has started the watcher.
    assert_eq!(app.get("/health").await.status, 200);
    app
}

/// Writes `text` as the watched overlay and returns once the host reloaded.
async fn write_and_wait(app: &TestApp, text: &str) {
    let file = app
        .state
        .config()
        .questionnaires_dir
        .join("types/translations/nl.toml");
    let mut reloads = app.state.subscribe_definition_reloads();
    reloads.borrow_and_update();
    std::fs::write(file, text).expect("overlay written");
    tokio::time::timeout(RELOAD_BOUND, reloads.changed())
        .await
        .expect("the host reloads the definitions")
        .expect("running");
}

db_test!(
    async fn a_translation_hot_reloads_and_a_broken_one_leaves_the_previous_serving(
        app: spawn_watched,
    ) {
        let original = std::fs::read_to_string(overlay_file()).expect("the test overlay");
        assert_eq!(
            types(&app, "&language=nl").await["questions"]["v_1"]["title"],
            "Klachten? (test)"
        );

        let changed = original.replace("Klachten? (test)", "Last van klachten? (test)");
        write_and_wait(&app, &changed).await;
        assert_eq!(
            types(&app, "&language=nl").await["questions"]["v_1"]["title"],
            "Last van klachten? (test)"
        );

        // A key renamed, and an option of another set: refused; the version
        // before keeps serving.
        let broken = changed
            .replace(
                "title = \"Welke dag? (test)\"",
                "titel = \"Welke dag? (test)\"",
            )
            .replace("a2 = \"Dinsdag\"", "a3 = \"Dinsdag\"");
        write_and_wait(&app, &broken).await;
        let nl = types(&app, "&language=nl").await;
        assert_eq!(nl["questions"]["v_1"]["title"], "Last van klachten? (test)");
        assert_eq!(nl["questions"]["v_2"]["title"], "Welke dag? (test)");
        assert_eq!(nl["languages"], json!(["en", "nl"]));
        // A response in Dutch records the version that serves.
        let posted = app
        .post(&responses("d1"), &json!({"questionnaire_key": "types", "external_id": "x", "answer_data": {"v_1": "a0"}, "language": "nl"}))
        .await;
        assert_eq!(posted.status, 201, "{}", posted.text);
        let sha256 = sha256_hex(changed.as_bytes());
        assert_eq!(
            app.sql_strings("SELECT translation_sha256 FROM responses")
                .await,
            [sha256]
        );

        // Fixed again: the fixed texts serve.
        write_and_wait(&app, &original).await;
        assert_eq!(
            types(&app, "&language=nl").await["questions"]["v_1"]["title"],
            "Klachten? (test)"
        );
    }
);
