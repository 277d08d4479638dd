//! Hostile plugins (docs/design.md#sandbox): a scorer and a calculator that
//! loop forever, bomb memory, recurse without end, trap, answer garbage or
//! too much, declare another ABI or import what the host does not offer.
//! For each: the host keeps serving; a response to the hostile
//! questionnaire is stored with the failure in its outcome; a report
//! calculation answers a clear error; PHQ-9 scores normally in the same
//! moment.

use host::config::Config;
use host::plugins::LimitOverride;
use tests::plugins::{
    Behaviour, copy_built_plugin, copy_definition, hostile_module, install_module,
    two_item_definition,
};
use tests::{Db, TestApp, db_test, json};

use crate::support::{metrics_text, test_protocols};

/// PHQ-9 answers `a<n>` for items 1 to 9 from `scores`.
fn phq9_answers(scores: &[u8; 9]) -> serde_json::Value {
    let answers: serde_json::Map<String, serde_json::Value> = scores
        .iter()
        .enumerate()
        .map(|(i, s)| (format!("v_{}", i + 1), json!(format!("a{s}"))))
        .collect();
    serde_json::Value::Object(answers)
}

/// Lays out plugins and definitions for `behaviour` in the app's own
/// folder: the real PHQ-9 scorer, the hostile scorer `hostile` of the
/// questionnaire `hostile`, and the hostile calculator `hostile_calc`.
fn hostile_config(config: &mut Config, behaviour: Behaviour) {
    let plugins = config.data_dir.join("plugins");
    let questionnaires = config.data_dir.join("questionnaires");
    copy_built_plugin(&plugins, "phq9");
    install_module(
        &plugins,
        "hostile",
        &hostile_module("scorer", "hostile", behaviour),
    );
    install_module(
        &plugins,
        "hostile_calc",
        &hostile_module("calculator", "hostile_calc", behaviour),
    );
    copy_definition(&questionnaires, "phq9");
    tests::plugins::write_definition(
        &questionnaires,
        "hostile",
        &two_item_definition("hostile", "hostile"),
    );
    config.plugins.dir = plugins;
    config.questionnaires_dir = questionnaires;
    // Protocols that name only the PHQ-9.
    config.protocols_dir = test_protocols();
}

async fn spawn_hostile(db: Db, behaviour: Behaviour) -> TestApp {
    TestApp::spawn_with(db, |c| hostile_config(c, behaviour)).await
}

/// What every hostile plugin must leave intact. `code` is the failure the
/// outcome records; `loaded` says whether the module passes validation (a
/// refused module is "not loaded" for scoring and an unknown calculator).
async fn the_host_survives(app: &TestApp, code: &str, loaded: bool) {
    let hostile_body = json!({"external_id": "h1", "questionnaire_key": "hostile", "answer_data": {"v_1": "a1", "v_2": "a0"}});
    let phq9_body = json!({"external_id": "q1", "questionnaire_key": "phq9", "answer_data": phq9_answers(&[1, 2, 1, 0, 1, 2, 0, 1, 0])});
    let hostile = app.post("/api/v1/dossiers/p1/responses", &hostile_body);
    let phq9 = app.post("/api/v1/dossiers/p1/responses", &phq9_body);
    let (hostile, phq9) = tokio::join!(hostile, phq9);

    assert_eq!(hostile.status, 201, "{}", hostile.text);
    let total = &hostile.body["outcome"]["scores"]["total"];
    assert_eq!(total["exception"]["code"], code, "{total}");
    assert!(
        total["exception"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty())
    );
    assert!(
        total.get("value").is_none(),
        "no value for a failed score: {total}"
    );
    assert_eq!(total["label"], "Total");
    assert_eq!(hostile.body["status"], "completed");

    assert_eq!(phq9.status, 201, "{}", phq9.text);
    assert_eq!(phq9.body["outcome"]["scores"]["total"]["value"], 8.0);

    let stored = app
        .get("/api/v1/dossiers/p1/responses?questionnaire_keys[]=hostile")
        .await;
    assert_eq!(stored.status, 200);
    assert_eq!(
        stored.body[0]["external_id"], "h1",
        "the response is on disk"
    );
    assert_eq!(
        stored.body[0]["outcome"]["scores"]["total"]["exception"]["code"],
        code
    );

    let id = phq9.body["id"].as_i64().expect("id");
    let report = app
        .get(&format!(
            "/api/v1/dossiers/p1/report_calculations?calculator=hostile_calc&response_ids[]={id}"
        ))
        .await;
    if loaded {
        assert_eq!(report.status, 422, "{}", report.text);
        assert_eq!(
            report.body,
            json!({"errors": {"calculator": ["calculation_failed"]}})
        );
    } else {
        assert_eq!(report.status, 404, "{}", report.text);
        assert_eq!(
            report.body,
            json!({"errors": {"calculator": ["not_found"]}})
        );
    }
    let real = app
        .get(&format!(
            "/api/v1/dossiers/p1/report_calculations?calculator=score_series&response_ids[]={id}"
        ))
        .await;
    // score_series is not in this app's plugin folder: a clean 404.
    assert_eq!(real.status, 404);

    assert_eq!(app.get("/health").await.status, 200, "still serving");
    let metrics = metrics_text(app).await;
    assert!(
        metrics.contains(&format!(
            "outcomes_scoring_failures_total{{questionnaire=\"hostile\",code=\"{code}\"}} 1"
        )),
        "{metrics}"
    );
}

db_test!(
    async fn an_endless_loop_runs_out_of_fuel(app: infinite_loop) {
        the_host_survives(&app, "out_of_fuel", true).await;
    }
);

async fn infinite_loop(db: Db) -> TestApp {
    spawn_hostile(db, Behaviour::InfiniteLoop).await
}

db_test!(
    async fn an_endless_loop_with_unlimited_fuel_meets_its_deadline(app: unlimited_loop) {
        the_host_survives(&app, "deadline", true).await;
    }
);

async fn unlimited_loop(db: Db) -> TestApp {
    TestApp::spawn_with(db, |c| {
        hostile_config(c, Behaviour::InfiniteLoop);
        let generous = LimitOverride {
            fuel: Some(u64::MAX / 2),
            deadline_ms: Some(50),
            ..LimitOverride::default()
        };
        c.plugins
            .limits
            .overrides
            .insert("hostile".into(), generous.clone());
        c.plugins
            .limits
            .overrides
            .insert("hostile_calc".into(), generous);
    })
    .await
}

db_test!(
    async fn a_memory_bomb_hits_the_memory_cap(app: memory_bomb) {
        the_host_survives(&app, "memory_cap", true).await;
    }
);

async fn memory_bomb(db: Db) -> TestApp {
    spawn_hostile(db, Behaviour::MemoryBomb).await
}

db_test!(
    async fn deep_recursion_exhausts_the_stack(app: deep_recursion) {
        the_host_survives(&app, "stack_overflow", true).await;
    }
);

async fn deep_recursion(db: Db) -> TestApp {
    spawn_hostile(db, Behaviour::DeepRecursion).await
}

db_test!(
    async fn a_trap_is_recorded(app: trap) {
        the_host_survives(&app, "trap", true).await;
    }
);

async fn trap(db: Db) -> TestApp {
    spawn_hostile(db, Behaviour::Trap).await
}

db_test!(
    async fn output_that_is_not_json_is_recorded(app: invalid_json) {
        the_host_survives(&app, "invalid_json", true).await;
    }
);

async fn invalid_json(db: Db) -> TestApp {
    spawn_hostile(db, Behaviour::InvalidJson).await
}

db_test!(
    async fn output_over_the_cap_is_refused(app: huge_output) {
        the_host_survives(&app, "output_too_large", true).await;
    }
);

async fn huge_output(db: Db) -> TestApp {
    spawn_hostile(db, Behaviour::HugeOutput).await
}

db_test!(
    async fn output_outside_the_contract_is_recorded(app: wrong_contract) {
        the_host_survives(&app, "contract_violation", true).await;
    }
);

async fn wrong_contract(db: Db) -> TestApp {
    // Valid JSON, but a score the questionnaire does not define and a
    // calculator whose results are not an object.
    spawn_hostile(
        db,
        Behaviour::Reply(r#"{"ok":{"scores":{"bogus":{"value":1.0}},"results":7}}"#),
    )
    .await
}

db_test!(
    async fn a_module_of_another_abi_is_refused_and_named(app: wrong_abi) {
        the_host_survives(&app, "not_loaded", false).await;
        let plugins = app.get("/api/v1/plugins").await;
        let hostile = plugins.body["plugins"]
            .as_array()
            .and_then(|p| p.iter().find(|p| p["folder"] == "hostile"))
            .cloned()
            .expect("the hostile folder is listed");
        assert_eq!(hostile["state"], "failed");
        assert!(hostile["serving"].is_null());
        let error = hostile["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("ABI 99") && error.contains("rebuild"),
            "{error}"
        );
    }
);

async fn wrong_abi(db: Db) -> TestApp {
    spawn_hostile(db, Behaviour::WrongAbi).await
}

db_test!(
    async fn a_module_with_a_forbidden_import_is_refused_and_named(app: forbidden_import) {
        the_host_survives(&app, "not_loaded", false).await;
        let plugins = app.get("/api/v1/plugins").await;
        let text = plugins.text;
        assert!(text.contains("env.exfiltrate"), "{text}");
        let metrics = metrics_text(&app).await;
        assert!(metrics.contains("outcomes_plugins_failed 2"), "{metrics}");
    }
);

async fn forbidden_import(db: Db) -> TestApp {
    spawn_hostile(db, Behaviour::ForbiddenImport).await
}

db_test!(
    /// Every call runs in an instance no call used before, also when the
    /// host made it ahead of the call (spare instances): a scorer that
    /// counts its calls, in a global and in its memory, counts 1 every
    /// time, for responses posted one after another and all at once, while
    /// PHQ-9 scores beside it.
    async fn a_plugin_keeps_nothing_from_one_call_to_the_next(app: counts_calls) {
        let post = |n: usize| {
            let body = json!({"external_id": format!("c{n}"), "questionnaire_key": "hostile", "answer_data": {"v_1": "a1", "v_2": "a0"}});
            let app = &app;
            async move {
                app.post(&format!("/api/v1/dossiers/p{}/responses", n % 7), &body)
                    .await
            }
        };
        let mut answers = Vec::new();
        for n in 0..20 {
            answers.push(post(n).await);
        }
        answers.extend(futures_util::future::join_all((20..220).map(post)).await);
        let phq9 = json!({"external_id": "q1", "questionnaire_key": "phq9", "answer_data": phq9_answers(&[1, 2, 1, 0, 1, 2, 0, 1, 0])});
        let phq9 = app.post("/api/v1/dossiers/p1/responses", &phq9).await;
        assert_eq!(phq9.body["outcome"]["scores"]["total"]["value"], 8.0);
        for answer in answers {
            assert_eq!(answer.status, 201, "{}", answer.text);
            let total = &answer.body["outcome"]["scores"]["total"];
            assert_eq!(
                total["value"].as_f64(),
                Some(1.0),
                "calls seen by the instance: {total}"
            );
            assert_eq!(
                total["tscore"].as_f64(),
                Some(1.0),
                "calls remembered in memory: {total}"
            );
        }
    }
);

async fn counts_calls(db: Db) -> TestApp {
    spawn_hostile(db, Behaviour::CountsCalls).await
}
