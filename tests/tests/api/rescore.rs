//! `outcomes rescore` and `outcomes plugin test`, called as the library
//! functions the CLI runs: responses stored while their scorer was missing
//! are recomputed once it is there (seen through the API), a dry run writes
//! nothing, `--questionnaire` limits the set, `--exact` reproduces stored
//! outcomes with the module versions that computed them; the plugin
//! harness passes the bundled fixtures and fails a wrong one.

use std::path::PathBuf;

use host::commands::plugin::{self, PluginCommand};
use host::commands::rescore::{RescoreArgs, rescore};
use host::store::{Store, StoreOptions};
use serde_json::Value;
use tests::{TestApp, db_test, json};

use crate::support::*;

fn args(questionnaire: Option<&str>, dry_run: bool, exact: bool) -> RescoreArgs {
    RescoreArgs {
        questionnaire: questionnaire.map(str::to_owned),
        since: None,
        dry_run,
        exact,
    }
}

/// Runs `outcomes rescore` with these arguments on `app`'s database.
async fn run_rescore(app: &TestApp, args: RescoreArgs) -> bool {
    let config = app.command_config();
    let store = Store::connect(&config.database_url, &StoreOptions::default())
        .await
        .expect("the database");
    let result = rescore(&store, &config, args).await;
    store.close().await;
    result.expect("rescore runs")
}

/// The outcome of every response of `dossier`, by id.
async fn outcomes(app: &TestApp, dossier: &str) -> Vec<Value> {
    let list = app.get(&responses(dossier)).await;
    assert_eq!(list.status, 200, "{}", list.text);
    list.body
        .as_array()
        .map(|all| all.iter().map(|r| r["outcome"].clone()).collect())
        .unwrap_or_default()
}

/// Whether an outcome records a scoring failure on any score.
fn failed(outcome: &Value) -> bool {
    outcome["scores"]
        .as_object()
        .is_some_and(|scores| scores.values().any(|s| s.get("exception").is_some()))
}

/// The outcome the PHQ-9 scorer gives "1 1 1 1 1 1 1 2 0".
fn mild_outcome() -> Value {
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
                "referenced_values": ["v_1", "v_2", "v_3", "v_4", "v_5", "v_6", "v_7", "v_8", "v_9"],
            }
        },
        "action": null,
        "alarm": [],
        "attention": [],
        "complete": "100%",
    })
}

db_test!(
    async fn rescoring_recomputes_outcomes_stored_while_the_scorer_was_missing(
        app: spawn_without_plugins,
    ) {
        post_phq9(&app, "d1", "a", phq9_items("1 1 1 1 1 1 1 2 0")).await;
        post_phq9(&app, "d1", "b", phq9_items("2 1 1 1 1 1 1 2 1")).await;
        post_phq9(&app, "d2", "c", phq9_items("1 1 1 1 1 1 1 2 0")).await;
        let before = outcomes(&app, "d1").await;
        assert!(before.iter().all(failed), "{before:?}");
        assert_eq!(
            before[0]["scores"]["total"]["exception"]["code"],
            "not_loaded"
        );

        assert!(
            run_rescore(&app, args(None, false, false)).await,
            "every outcome was recomputed"
        );
        let after = outcomes(&app, "d1").await;
        assert_eq!(after[0], mild_outcome());
        assert_eq!(after[1]["scores"]["total"]["value"], 11.0);
        assert_eq!(after[1]["action"], "alarm");
        assert!(!after.iter().any(failed), "{after:?}");
        assert_eq!(
            outcomes(&app, "d2").await,
            [mild_outcome()],
            "every dossier is rescored"
        );
        // Rescored outcomes are what scoring on POST gives now.
        let fresh = TestApp::spawn(app.db).await;
        let scored = post_phq9(&fresh, "d1", "a", phq9_items("2 1 1 1 1 1 1 2 1")).await;
        assert_eq!(after[1], scored.body["outcome"]);
    }
);

db_test!(
    async fn a_dry_run_writes_nothing(app: spawn_without_plugins) {
        post_phq9(&app, "d1", "a", phq9_items("1 1 1 1 1 1 1 2 0")).await;
        let before = outcomes(&app, "d1").await;
        assert!(run_rescore(&app, args(None, true, false)).await);
        assert_eq!(outcomes(&app, "d1").await, before);
        assert!(failed(&outcomes(&app, "d1").await[0]));
    }
);

db_test!(
    async fn the_questionnaire_option_limits_what_is_rescored(
        app: spawn_with_mini_without_plugins,
    ) {
        post_phq9(&app, "d1", "p", phq9_items("1 1 1 1 1 1 1 2 0")).await;
        let body = json!({"questionnaire_key": "mini", "external_id": "m", "answer_data": {"v_1": "a1", "v_2": "a0"}});
        assert_eq!(app.post(&responses("d1"), &body).await.status, 201);
        let before = outcomes(&app, "d1").await;
        // Mini has no scorer anywhere: it cannot be recomputed, and PHQ-9 is
        // not touched.
        assert!(!run_rescore(&app, args(Some("mini"), false, false)).await);
        assert_eq!(outcomes(&app, "d1").await, before);
        // PHQ-9 alone: all of it recomputed, mini left as stored.
        assert!(run_rescore(&app, args(Some("phq9"), false, false)).await);
        let after = outcomes(&app, "d1").await;
        assert_eq!(after[0], mild_outcome());
        assert_eq!(after[1], before[1]);
        // Everything: mini still cannot be recomputed.
        assert!(!run_rescore(&app, args(None, false, false)).await);
        assert_eq!(outcomes(&app, "d1").await, after);
        // An unknown questionnaire is an error.
        let config = app.command_config();
        let store = Store::connect(&config.database_url, &StoreOptions::default())
            .await
            .expect("the database");
        assert!(
            rescore(&store, &config, args(Some("nope"), false, false))
                .await
                .is_err()
        );
        store.close().await;
    }
);

db_test!(
    async fn after_a_rescore_exact_reproduces_every_outcome(app: spawn_without_plugins) {
        post_phq9(&app, "d1", "a", phq9_items("1 1 1 1 1 1 1 2 0")).await;
        post_phq9(&app, "d1", "b", phq9_items("- 1 1 - 1 1 - 1 2")).await;
        assert!(run_rescore(&app, args(None, false, false)).await);
        let rescored = outcomes(&app, "d1").await;
        assert!(!rescored.iter().any(failed), "{rescored:?}");
        assert!(
            run_rescore(&app, args(None, false, true)).await,
            "the module that computed them reproduces them"
        );
        assert_eq!(outcomes(&app, "d1").await, rescored, "exact writes nothing");
    }
);

db_test!(async fn exact_reproduces_outcomes_the_host_computed_and_a_rescore_changes_none(app) {
    post_phq9(&app, "d1", "a", phq9_items("1 1 1 1 1 1 1 2 0")).await;
    post_phq9(&app, "d1", "b", phq9_items("3 3 3 3 3 3 3 3 3")).await;
    let stored = outcomes(&app, "d1").await;
    assert!(run_rescore(&app, args(None, false, true)).await);
    assert!(run_rescore(&app, args(None, false, false)).await);
    assert_eq!(outcomes(&app, "d1").await, stored);
    assert!(run_rescore(&app, args(None, false, true)).await);
});

// ---------------------------------------------------------------------------
// outcomes plugin test
// ---------------------------------------------------------------------------

fn phq9_module() -> PathBuf {
    tests::built_plugins().join("phq9").join("phq9.wasm")
}

#[test]
fn plugin_test_passes_the_phq9_module_on_its_fixtures() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let config = tests::plugin_tool_config(dir.path());
    let default = PluginCommand::Test {
        module: phq9_module(),
        fixtures: Vec::new(),
        profile: None,
    };
    assert!(plugin::run(default, &config).expect("the harness runs"));
    let named = PluginCommand::Test {
        module: phq9_module(),
        fixtures: vec![tests::repo_root().join("questionnaires/phq9/fixtures")],
        profile: None,
    };
    assert!(plugin::run(named, &config).expect("the harness runs"));
}

#[test]
fn plugin_test_fails_a_fixture_whose_expected_output_is_wrong() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let config = tests::plugin_tool_config(dir.path());
    let source = tests::repo_root().join("questionnaires/phq9/fixtures/band_edge_9_mild.json");
    let mut fixture: Value =
        serde_json::from_slice(&std::fs::read(&source).expect("the fixture")).expect("JSON");
    assert_eq!(fixture["output"]["scores"]["total"]["value"], 9.0);
    let right = dir.path().join("right.json");
    std::fs::write(&right, fixture.to_string()).expect("written");
    fixture["output"]["scores"]["total"]["value"] = json!(10.0);
    let wrong = dir.path().join("wrong.json");
    std::fs::write(&wrong, fixture.to_string()).expect("written");

    let run = |fixtures: Vec<PathBuf>| {
        plugin::run(
            PluginCommand::Test {
                module: phq9_module(),
                fixtures,
                profile: None,
            },
            &config,
        )
        .expect("the harness runs")
    };
    assert!(run(vec![right.clone()]));
    assert!(!run(vec![wrong.clone()]));
    assert!(!run(vec![right, wrong]), "one wrong fixture fails the run");
}
