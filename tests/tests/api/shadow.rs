//! Shadow scoring (docs/operations.md#verifying-outcomes-and-trying-a-new-scorer):
//! `outcomes plugin candidate|promote|discard` (called as the library
//! functions the CLI runs) install a candidate scorer version in the
//! database; the host's shadow worker has it score every response the
//! serving version scores, without touching stored outcomes, and records
//! each difference with both outcomes. An identical candidate records no
//! difference and promotes; a differing one is refused promotion until its
//! differences are accepted; discarding withdraws it (or the promotion);
//! two hosts on one database count into the same candidate; a response
//! stored by any path (POST, PUT, a fill-out page) is shadowed, since the
//! store hands on what it stores. Tests wait on the worker's
//! notifications, never on time.

use std::path::PathBuf;
use std::time::Duration;

use host::commands::plugin::{PluginCommand, run_with_store};
use host::shadow;
use host::store::{Store, StoreOptions};
use serde_json::Value;
use tests::plugins::{Behaviour, built_module, hostile_module, with_custom_section};
use tests::{TestApp, db_test, json};

use crate::support::*;
use crate::visitor::{Visitor, pairs, phq9_form};

/// How long the worker may take (a bound, not a wait).
const BOUND: Duration = Duration::from_secs(30);

/// Runs `outcomes plugin ...` on `app`'s database.
pub(crate) async fn run_plugin(app: &TestApp, command: PluginCommand) -> anyhow::Result<bool> {
    run_plugin_with(&app.command_config(), command).await
}

/// Runs `outcomes plugin ...` with `config`.
pub(crate) async fn run_plugin_with(
    config: &host::config::Config,
    command: PluginCommand,
) -> anyhow::Result<bool> {
    let store = Store::connect(&config.database_url, &StoreOptions::default())
        .await
        .expect("the database");
    let result = run_with_store(command, &store, config).await;
    store.close().await;
    result
}

/// `bytes` as `phq9.wasm` in a folder of its own (with the built PHQ-9
/// fixtures when `fixtures`), as an author hands a new version over.
pub(crate) fn candidate_file(app: &TestApp, folder: &str, bytes: &[u8], fixtures: bool) -> PathBuf {
    let dir = app.dir().join(folder);
    std::fs::create_dir_all(&dir).expect("candidate folder");
    if fixtures {
        let built = tests::built_plugins().join("phq9").join("fixtures");
        let to = dir.join("fixtures");
        std::fs::create_dir_all(&to).expect("fixtures folder");
        for entry in std::fs::read_dir(built).expect("built fixtures").flatten() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).expect("fixture copied");
        }
    }
    let file = dir.join("phq9.wasm");
    std::fs::write(&file, bytes).expect("candidate written");
    file
}

pub(crate) async fn install(app: &TestApp, file: PathBuf) {
    let installed = run_plugin(
        app,
        PluginCommand::Candidate {
            name: "phq9".into(),
            module: file,
        },
    )
    .await;
    assert!(installed.expect("installs"), "the candidate is accepted");
    shadow::refresh(app.state.shadow())
        .await
        .expect("candidates read");
}

pub(crate) async fn promote(app: &TestApp, accept_differences: bool) -> bool {
    run_plugin(
        app,
        PluginCommand::Promote {
            name: "phq9".into(),
            accept_differences,
        },
    )
    .await
    .expect("promote runs")
}

async fn discard(app: &TestApp) -> anyhow::Result<bool> {
    run_plugin(
        app,
        PluginCommand::Discard {
            name: "phq9".into(),
        },
    )
    .await
}

/// The PHQ-9 folder's `candidate` at GET /api/v1/plugins.
pub(crate) async fn candidate(app: &TestApp) -> Value {
    let answer = app.get("/api/v1/plugins").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.body["plugins"]
        .as_array()
        .and_then(|all| all.iter().find(|p| p["folder"] == "phq9").cloned())
        .map(|p| p["candidate"].clone())
        .unwrap_or(Value::Null)
}

/// POSTs `n` PHQ-9 responses to `dossier` and waits until the shadow
/// worker of `app` has done as many jobs; their bodies.
async fn post_shadowed(app: &TestApp, dossier: &str, n: usize) -> Vec<Value> {
    let mut done = app.state.shadow().subscribe();
    let before = *done.borrow_and_update();
    let mut bodies = Vec::new();
    for i in 0..n {
        bodies.push(posted(app, dossier, &format!("{dossier}-{i}")).await);
    }
    let target = before + n as u64;
    tokio::time::timeout(BOUND, done.wait_for(|jobs| *jobs >= target))
        .await
        .expect("the shadow worker finishes in time")
        .expect("the worker runs");
    bodies
}

/// The module that computed the stored outcome of response `id`.
async fn computed_by(app: &TestApp, id: i64) -> String {
    app.sql_strings(&format!(
        "SELECT outcome_plugin_sha256 FROM responses WHERE id = {id}"
    ))
    .await
    .remove(0)
}

fn sha256_hex(bytes: &[u8]) -> String {
    host::domain::questionnaire::sha256_hex(bytes)
}

db_test!(async fn an_identical_candidate_records_no_difference_and_promotes(app) {
    let live = sha256_hex(&built_module("phq9"));
    let bytes = with_custom_section(&built_module("phq9"), "candidate");
    install(&app, candidate_file(&app, "next", &bytes, true)).await;
    let seen = candidate(&app).await;
    assert_eq!(seen["state"], "shadowing", "{seen}");
    assert_eq!(seen["sha256"], sha256_hex(&bytes).as_str());
    assert_eq!(seen["live_sha256"], live.as_str());

    let bodies = post_shadowed(&app, "d1", 3).await;
    let seen = candidate(&app).await;
    assert_eq!((seen["calls"].as_i64(), seen["differences"].as_i64()), (Some(3), Some(0)), "{seen}");
    assert_eq!(seen["dropped"], 0);
    // Stored outcomes are the serving version's.
    assert_eq!(computed_by(&app, id_of(&bodies[0])).await, live);

    assert!(promote(&app, false).await, "no difference: promoted");
    shadow::refresh(app.state.shadow()).await.expect("candidates read");
    assert_eq!(candidate(&app).await["state"], "promoted");
    let after = posted(&app, "d1", "after").await;
    assert_eq!(after["outcome"], bodies[0]["outcome"]);
    assert_eq!(computed_by(&app, id_of(&after)).await, sha256_hex(&bytes));
    // What the promoted version computed verifies like any outcome.
    let verified = app
        .get(&format!("/api/v1/dossiers/d1/responses/{}/verification", id_of(&after)))
        .await;
    assert_eq!(verified.body["identical"], true, "{}", verified.text);

    // Discarding withdraws the promotion: the folder's version serves again.
    assert!(discard(&app).await.expect("discards"));
    shadow::refresh(app.state.shadow()).await.expect("candidates read");
    assert_eq!(candidate(&app).await, Value::Null);
    let back = posted(&app, "d1", "back").await;
    assert_eq!(computed_by(&app, id_of(&back)).await, live);
});

db_test!(async fn a_differing_candidate_records_both_outcomes_and_waits_for_acceptance(app) {
    let bytes = hostile_module(
        "scorer",
        "phq9",
        Behaviour::Reply(r#"{"ok":{"scores":{"total":{"value":99.0}}}}"#),
    );
    install(&app, candidate_file(&app, "next", &bytes, false)).await;
    let bodies = post_shadowed(&app, "d1", 2).await;
    let seen = candidate(&app).await;
    assert_eq!((seen["calls"].as_i64(), seen["differences"].as_i64()), (Some(2), Some(2)), "{seen}");
    // Both outcomes, per response.
    let recorded = app
        .sql_strings("SELECT CAST(response_id AS TEXT) FROM shadow_differences ORDER BY id")
        .await;
    let ids: Vec<String> = bodies.iter().map(|b| id_of(b).to_string()).collect();
    assert_eq!(recorded, ids);
    let live = app.sql_strings("SELECT live_outcome FROM shadow_differences ORDER BY id").await;
    let tried = app.sql_strings("SELECT candidate_outcome FROM shadow_differences ORDER BY id").await;
    for (live, tried) in live.iter().zip(&tried) {
        let live: Value = serde_json::from_str(live).expect("JSON");
        let tried: Value = serde_json::from_str(tried).expect("JSON");
        assert_eq!(live, bodies[0]["outcome"]);
        assert_eq!(tried["scores"]["total"]["value"], 99.0);
    }
    // Stored outcomes untouched.
    for body in &bodies {
        assert_eq!(body["outcome"]["scores"]["total"]["value"], 9.0);
    }
    let listed = app.get(&responses("d1")).await.body;
    assert!(listed.as_array().is_some_and(|all| all.iter().all(|r| r["outcome"]["scores"]["total"]["value"] == 9.0)), "{listed}");

    assert!(!promote(&app, false).await, "refused while differences are unexplained");
    shadow::refresh(app.state.shadow()).await.expect("candidates read");
    assert_eq!(candidate(&app).await["state"], "shadowing");
    assert_eq!(posted(&app, "d1", "still").await["outcome"]["scores"]["total"]["value"], 9.0);

    assert!(promote(&app, true).await, "promoted once the differences are accepted");
    shadow::refresh(app.state.shadow()).await.expect("candidates read");
    assert_eq!(posted(&app, "d1", "promoted").await["outcome"]["scores"]["total"]["value"], 99.0);

    assert!(discard(&app).await.expect("discards"));
    shadow::refresh(app.state.shadow()).await.expect("candidates read");
    assert_eq!(posted(&app, "d1", "discarded").await["outcome"]["scores"]["total"]["value"], 9.0);
    assert!(discard(&app).await.is_err(), "nothing left to discard");
});

db_test!(async fn a_discarded_candidate_scores_nothing_more(app) {
    let bytes = hostile_module(
        "scorer",
        "phq9",
        Behaviour::Reply(r#"{"ok":{"scores":{"total":{"value":1.0}}}}"#),
    );
    install(&app, candidate_file(&app, "next", &bytes, false)).await;
    post_shadowed(&app, "d1", 1).await;
    assert_eq!(candidate(&app).await["differences"], 1);
    assert!(discard(&app).await.expect("discards"));
    shadow::refresh(app.state.shadow()).await.expect("candidates read");
    assert_eq!(candidate(&app).await, Value::Null);
    assert!(app.state.trials().candidate("phq9").is_none(), "no candidate left to call");
    posted(&app, "d1", "later").await;
    assert_eq!(app.sql("SELECT COUNT(*) FROM shadow_differences").await, Some(0));
    assert!(!promote_missing(&app).await);
});

async fn promote_missing(app: &TestApp) -> bool {
    run_plugin(
        app,
        PluginCommand::Promote {
            name: "phq9".into(),
            accept_differences: true,
        },
    )
    .await
    .unwrap_or(false)
}

db_test!(async fn a_candidate_refuses_a_module_that_is_not_that_scorer(app) {
    let gad7 = candidate_file(&app, "other", &built_module("gad7"), false);
    let refused = run_plugin(&app, PluginCommand::Candidate { name: "phq9".into(), module: gad7 }).await;
    assert!(refused.is_err(), "gad7 is no version of phq9");
    let same = candidate_file(&app, "same", &built_module("phq9"), false);
    let refused = run_plugin(&app, PluginCommand::Candidate { name: "phq9".into(), module: same }).await;
    assert!(refused.is_err(), "the serving version is no candidate");
    let broken = candidate_file(&app, "broken", b"not wasm", false);
    let refused = run_plugin(&app, PluginCommand::Candidate { name: "phq9".into(), module: broken }).await;
    assert!(!refused.expect("reported"), "a module that does not load is refused");
    shadow::refresh(app.state.shadow()).await.expect("candidates read");
    assert_eq!(candidate(&app).await, Value::Null);
});

db_test!(async fn hosts_sharing_a_database_shadow_with_one_candidate(app) {
    let second = app.another_host().await;
    let bytes = hostile_module(
        "scorer",
        "phq9",
        Behaviour::Reply(r#"{"ok":{"scores":{"total":{"value":2.0}}}}"#),
    );
    install(&app, candidate_file(&app, "next", &bytes, false)).await;
    shadow::refresh(second.state.shadow()).await.expect("candidates read");
    post_shadowed(&app, "d1", 2).await;
    post_shadowed(&second, "d2", 1).await;
    let seen = candidate(&second).await;
    assert_eq!((seen["calls"].as_i64(), seen["differences"].as_i64()), (Some(3), Some(3)), "{seen}");
    assert!(promote(&app, true).await);
    shadow::refresh(second.state.shadow()).await.expect("candidates read");
    assert_eq!(posted(&second, "d2", "promoted").await["outcome"]["scores"]["total"]["value"], 2.0);
    second.stop().await;
});

/// Waits until the shadow worker of `app` has done one more job than
/// `jobs`, and counts it.
async fn one_more_job(done: &mut tokio::sync::watch::Receiver<u64>, jobs: &mut u64) {
    *jobs += 1;
    let target = *jobs;
    tokio::time::timeout(BOUND, done.wait_for(|n| *n >= target))
        .await
        .expect("the shadow worker finishes in time")
        .expect("the worker runs");
}

/// PHQ-9 answers, every question answered with `option`.
fn phq9_answers(option: &str) -> Value {
    Value::Object(
        PHQ9_QUESTIONS
            .iter()
            .map(|key| ((*key).to_owned(), json!(option)))
            .collect(),
    )
}

db_test!(async fn a_response_stored_by_any_path_is_scored_by_the_candidate(app) {
    // Identical to the serving version: a candidate that saw other input
    // than the serving version (answers, variant) would score otherwise.
    let bytes = with_custom_section(&built_module("phq9"), "candidate");
    install(&app, candidate_file(&app, "next", &bytes, true)).await;
    let mut done = app.state.shadow().subscribe();
    let mut jobs = *done.borrow_and_update();

    // POST.
    let body = json!({"questionnaire_key": "phq9", "external_id": "post", "answer_data": phq9_answers("a1")});
    let posted = app.post(&responses("d1"), &body).await;
    assert_eq!(posted.status, 201, "{}", posted.text);
    one_more_job(&mut done, &mut jobs).await;

    // PUT of a prepared response.
    let prepared = prepare(&app, "d1", "phq9", None, None).await;
    let body = json!({"questionnaire_key": "phq9", "answer_data": phq9_answers("a2")});
    let put = app.put(&response("d1", prepared), &body).await;
    assert_eq!(put.status, 200, "{}", put.text);
    one_more_job(&mut done, &mut jobs).await;

    // A fill-out page, submitted by the patient.
    let filled = prepare(&app, "d2", "phq9", None, None).await;
    let list = app.get(&responses("d2")).await.body;
    let link = list[0]["completing_url"].as_str().expect("a completing_url");
    let mut patient = Visitor::new(&app);
    let form = patient.open(link).await;
    assert!(form.text.contains("<h1>PHQ-9</h1>"), "{}", form.text);
    let fields = phq9_form(&form.field("csrf"), "a0");
    let submitted = patient
        .post_form(&format!("/fill_out/session/responses/{filled}"), &pairs(&fields))
        .await;
    assert_eq!(submitted.status, 303, "{}", submitted.text);
    one_more_job(&mut done, &mut jobs).await;

    // One call for each, each scoring as the serving version did.
    let seen = candidate(&app).await;
    assert_eq!((seen["calls"].as_i64(), seen["differences"].as_i64()), (Some(3), Some(0)), "{seen}");
    assert_eq!(seen["dropped"], 0);
    let stored = app.get(&responses("d1")).await.body;
    let totals: Vec<&Value> = stored.as_array().expect("a list").iter().map(|r| &r["outcome"]["scores"]["total"]["value"]).collect();
    assert_eq!(totals, [&json!(9.0), &json!(18.0)], "{stored}");
});

db_test!(async fn each_stored_response_is_scored_by_the_candidate_once_by_its_id(app) {
    let bytes = hostile_module(
        "scorer",
        "phq9",
        Behaviour::Reply(r#"{"ok":{"scores":{"total":{"value":99.0}}}}"#),
    );
    install(&app, candidate_file(&app, "next", &bytes, false)).await;
    let mut done = app.state.shadow().subscribe();
    let mut jobs = *done.borrow_and_update();
    let posted = posted(&app, "d1", "post").await;
    one_more_job(&mut done, &mut jobs).await;
    // A retry stores nothing new: nothing for the candidate (had it been
    // queued, the worker would do it before the next job waited for).
    let retry = post_phq9(&app, "d1", "post", phq9_all_answered()).await;
    assert_eq!(retry.status, 200, "{}", retry.text);
    let prepared = prepare(&app, "d1", "phq9", None, None).await;
    let body = json!({"questionnaire_key": "phq9", "answer_data": phq9_answers("a1")});
    assert_eq!(app.put(&response("d1", prepared), &body).await.status, 200);
    one_more_job(&mut done, &mut jobs).await;
    let filled = prepare(&app, "d2", "phq9", None, None).await;
    let list = app.get(&responses("d2")).await.body;
    let link = list[0]["completing_url"].as_str().expect("a completing_url");
    let mut patient = Visitor::new(&app);
    let form = patient.open(link).await;
    let fields = phq9_form(&form.field("csrf"), "a0");
    let path = format!("/fill_out/session/responses/{filled}");
    assert_eq!(patient.post_form(&path, &pairs(&fields)).await.status, 303);
    one_more_job(&mut done, &mut jobs).await;

    let recorded = app
        .sql_strings("SELECT CAST(response_id AS TEXT) FROM shadow_differences ORDER BY id")
        .await;
    let ids: Vec<String> = [id_of(&posted), prepared, filled].iter().map(i64::to_string).collect();
    assert_eq!(recorded, ids);
    let seen = candidate(&app).await;
    assert_eq!(seen["calls"].as_i64(), Some(3), "{seen}");
});
