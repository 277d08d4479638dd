//! Outcomes that verify (docs/operations.md#verifying-outcomes-and-trying-a-new-scorer):
//! `outcomes verify` (called as the library function the CLI runs) and
//! `GET .../responses/:id/verification` recompute stored outcomes with the
//! archived module and definition versions that computed them. Fresh
//! outcomes verify; a changed byte of an archived module is named as a
//! hash mismatch; a changed stored outcome is named with the field that
//! differs; a definition changed after scoring in what its outcomes hold
//! does not stop a verification, and its archived version changed behind
//! the service's back is named; the endpoint's right and other dossiers'
//! ids.

use host::commands::verify::{Tally, VerifyArgs, verify};
use host::store::{Store, StoreOptions};
use reqwest::Method;
use serde_json::Value;
use sqlx::Connection;
use tests::plugins::copy_definition;
use tests::{Db, TestApp, basic, create_token, db_test, json};

use crate::support::*;

/// Runs `outcomes verify` on `app`'s database.
async fn run_verify(app: &TestApp, questionnaire: Option<&str>) -> Tally {
    let config = app.command_config();
    let store = Store::connect(&config.database_url, &StoreOptions::default())
        .await
        .expect("the database");
    let args = VerifyArgs {
        questionnaire: questionnaire.map(str::to_owned),
        since: None,
    };
    let tally = verify(&store, &config, args).await;
    store.close().await;
    tally.expect("verify runs")
}

fn verification(dossier: &str, id: i64) -> String {
    format!("/api/v1/dossiers/{dossier}/responses/{id}/verification")
}

/// Runs `statement` with `bytes` bound to `$1` on `app`'s database.
async fn sql_with_bytes(app: &TestApp, statement: &str, bytes: Vec<u8>, text: &str) {
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(&app.database_url)
        .await
        .expect("the test database");
    sqlx::query(statement)
        .bind(bytes)
        .bind(text.to_owned())
        .execute(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("{statement}: {e}"));
    let _ = conn.close().await;
}

db_test!(async fn fresh_outcomes_verify_byte_for_byte(app) {
    let a = id_of(&posted(&app, "d1", "a").await);
    let b = post_phq9(&app, "d1", "b", phq9_items("3 3 3 3 3 3 3 3 3")).await;
    assert_eq!(b.status, 201, "{}", b.text);
    let tally = run_verify(&app, None).await;
    assert_eq!(
        tally,
        Tally { checked: 2, identical: 2, differ: 0, unverifiable: 0 }
    );
    let answer = app.get(&verification("d1", a)).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.body["identical"], true, "{}", answer.text);
    assert_eq!(answer.body["reasons"], json!([]));
    assert_eq!(answer.body["response_id"], a);
    assert_eq!(answer.body["plugin"], "phq9");
    assert_eq!(answer.body["abi_version"], plugin_sdk::ABI_VERSION);
    let module = answer.body["module_sha256"].as_str().unwrap_or_default().to_owned();
    let served = app.get("/api/v1/plugins").await.body["plugins"]
        .as_array()
        .and_then(|all| all.iter().find(|p| p["folder"] == "phq9").cloned())
        .unwrap_or(Value::Null);
    assert_eq!(served["serving"]["sha256"], module.as_str());
    assert_eq!(answer.body["definition_sha256"].as_str().map(str::len), Some(64));
    assert_eq!(answer.body["input_sha256"].as_str().map(str::len), Some(64));
    assert_eq!(answer.body["stored_outcome"], Value::Null);
    assert_eq!(answer.body["differences"], json!([]));
    // Both path forms.
    let other = app
        .get(&format!("/api/v1/dossier/d1/responses/{a}/verification"))
        .await;
    assert_eq!(other.body["identical"], true, "{}", other.text);
});

db_test!(async fn a_changed_byte_of_an_archived_module_is_a_hash_mismatch(app) {
    let a = id_of(&posted(&app, "d1", "a").await);
    let sha = app
        .sql_strings(&format!("SELECT outcome_plugin_sha256 FROM responses WHERE id = {a}"))
        .await
        .remove(0);
    let mut bytes = app
        .state
        .store()
        .archived_module(&sha)
        .await
        .expect("read")
        .expect("the module that computed it is archived");
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    sql_with_bytes(&app, "UPDATE plugin_modules SET module = $1 WHERE sha256 = $2", bytes, &sha).await;

    let tally = run_verify(&app, None).await;
    assert_eq!(
        tally,
        Tally { checked: 1, identical: 0, differ: 0, unverifiable: 1 }
    );
    let answer = app.get(&verification("d1", a)).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.body["identical"], false);
    assert_eq!(answer.body["reasons"], json!(["module_hash_mismatch"]));
    assert_eq!(answer.body["module_sha256"], sha.as_str());

    // Gone from the archive altogether.
    app.sql_strings(&format!("DELETE FROM plugin_modules WHERE sha256 = '{sha}' RETURNING sha256"))
        .await;
    let answer = app.get(&verification("d1", a)).await;
    assert_eq!(answer.body["reasons"], json!(["module_missing"]), "{}", answer.text);
});

db_test!(async fn a_changed_stored_outcome_is_named_with_the_field_that_differs(app) {
    let a = id_of(&posted(&app, "d1", "a").await);
    let b = id_of(&posted(&app, "d1", "b").await);
    let stored = app
        .sql_strings(&format!("SELECT outcome FROM responses WHERE id = {b}"))
        .await
        .remove(0);
    assert!(stored.contains(r#""value":9.0"#), "{stored}");
    app.sql(&format!(
        "UPDATE responses SET outcome = replace(outcome, '\"value\":9.0', '\"value\":10.0') WHERE id = {b} RETURNING id"
    ))
    .await;

    let tally = run_verify(&app, Some("phq9")).await;
    assert_eq!(
        tally,
        Tally { checked: 2, identical: 1, differ: 1, unverifiable: 0 }
    );
    assert_eq!(app.get(&verification("d1", a)).await.body["identical"], true);
    let answer = app.get(&verification("d1", b)).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.body["identical"], false);
    assert_eq!(answer.body["reasons"], json!(["outcome_differs"]));
    assert_eq!(
        answer.body["differences"],
        json!([{"path": "scores.total.value", "stored": 10.0, "recomputed": 9.0}])
    );
    assert_eq!(answer.body["stored_outcome"]["scores"]["total"]["value"], 10.0);
    assert_eq!(answer.body["recomputed_outcome"]["scores"]["total"]["value"], 9.0);

    // Only the text changed, not the values: still not the same bytes.
    app.sql(&format!(
        "UPDATE responses SET outcome = replace(outcome, '\"value\":10.0', '\"value\": 9.0') WHERE id = {b} RETURNING id"
    ))
    .await;
    let answer = app.get(&verification("d1", b)).await;
    assert_eq!(answer.body["reasons"], json!(["outcome_differs"]), "{}", answer.text);
    assert_eq!(answer.body["differences"], json!([]));

    // A questionnaire that scored nothing is not checked.
    assert_eq!(run_verify(&app, Some("gad7")).await, Tally::default());
});

/// The PHQ-9's norm population for t-scores as its definition gives it,
/// and moved.
const NORM: &str = "norm = { mean = 2.91, sd = 3.52 }";
const MOVED_NORM: &str = "norm = { mean = 4.91, sd = 3.52 }";

/// The host on a questionnaire folder of its own holding the PHQ-9, which
/// a test may edit (and protocols that name only the PHQ-9).
async fn spawn_with_own_phq9(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        let questionnaires = config.data_dir.join("questionnaires");
        copy_definition(&questionnaires, "phq9");
        config.questionnaires_dir = questionnaires;
        config.protocols_dir = test_protocols();
    })
    .await
}

db_test!(
    async fn outcomes_verify_after_their_definition_changed(app: spawn_with_own_phq9) {
        let first = posted(&app, "d1", "a").await;
        let a = id_of(&first);
        let recorded = app
            .sql_strings(&format!(
                "SELECT outcome_definition_sha256 FROM responses WHERE id = {a}"
            ))
            .await
            .remove(0);
        // The definition is edited after scoring, in what its outcomes hold:
        // the mean of the norm population moves from 2.91 to 4.91, so the
        // same total of 9 gets another t-score. A host started on the
        // edited folder imports it.
        let file = app
            .state
            .config()
            .questionnaires_dir
            .join("phq9")
            .join("questionnaire.toml");
        let text = std::fs::read_to_string(&file).expect("the definition");
        assert!(text.contains(NORM), "{text}");
        std::fs::write(&file, text.replace(NORM, MOVED_NORM)).expect("edit");
        let edited = app.another_host().await;
        let second = posted(&edited, "d1", "b").await;
        let (before, after) = (
            &first["outcome"]["scores"]["total"],
            &second["outcome"]["scores"]["total"],
        );
        assert_eq!(
            (&before["value"], &after["value"]),
            (&json!(9.0), &json!(9.0))
        );
        assert_ne!(
            before["tscore"], after["tscore"],
            "the edit changes the outcome of the same answers"
        );

        // Recomputed with the edited definition, `a` would differ: it verifies
        // because the version it was scored with is archived by its hash.
        let answer = edited.get(&verification("d1", a)).await;
        assert_eq!(answer.body["identical"], true, "{}", answer.text);
        assert_eq!(answer.body["definition_sha256"], recorded.as_str());
        let b = edited.get(&verification("d1", id_of(&second))).await;
        assert_eq!(b.body["identical"], true, "{}", b.text);
        assert_ne!(b.body["definition_sha256"], recorded.as_str());

        // The archived version changed the same way behind the service's back:
        // its text no longer gives the recorded hash, and that is named.
        app.sql_strings(&format!(
            "UPDATE questionnaire_versions SET definition = replace(definition, '{NORM}', '{MOVED_NORM}') \
             WHERE sha256 = '{recorded}' RETURNING sha256"
        ))
        .await;
        let answer = edited.get(&verification("d1", a)).await;
        assert_eq!(answer.body["identical"], false, "{}", answer.text);
        assert_eq!(
            answer.body["reasons"],
            json!(["definition_hash_mismatch"]),
            "{}",
            answer.text
        );

        app.sql_strings(&format!(
            "DELETE FROM questionnaire_versions WHERE sha256 = '{recorded}' RETURNING sha256"
        ))
        .await;
        let answer = edited.get(&verification("d1", a)).await;
        assert_eq!(
            answer.body["reasons"],
            json!(["definition_missing"]),
            "{}",
            answer.text
        );
    }
);

db_test!(async fn a_response_that_is_not_completed_has_nothing_to_verify(app) {
    let id = prepare(&app, "d1", "phq9", None, None).await;
    let answer = app.get(&verification("d1", id)).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.body["identical"], false);
    assert_eq!(answer.body["reasons"], json!(["not_completed"]));
});

db_test!(async fn verification_needs_the_responses_right_and_the_responses_dossier(app) {
    let a = id_of(&posted(&app, "d1", "a").await);
    posted(&app, "d2", "b").await;
    // Another dossier's response, an unknown id, an id that is no number.
    for path in [
        verification("d2", a),
        verification("nobody", a),
        verification("d1", a + 100),
        "/api/v1/dossiers/d1/responses/abc/verification".to_owned(),
        "/api/v1/dossiers/d1/responses/-1/verification".to_owned(),
    ] {
        let answer = app.get(&path).await;
        assert_error(&answer, 404, error("response", "not_found"));
    }
    let secret = create_token(&app.state, "no-responses", "stats,questionnaires").await;
    let answer = app
        .send_as(Method::GET, &verification("d1", a), None, Some(&basic("no-responses", &secret)))
        .await;
    assert_error(&answer, 403, error("base", "right_missing"));
    let secret = create_token(&app.state, "responses", "responses").await;
    let answer = app
        .send_as(Method::GET, &verification("d1", a), None, Some(&basic("responses", &secret)))
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.body["identical"], true);
    let none = app
        .send_as(Method::GET, &verification("d1", a), None, None)
        .await;
    assert_eq!(none.status, 401);
});
