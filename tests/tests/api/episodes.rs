//! Episode outcomes: the `episode_outcome` calculator through GET
//! .../report_calculations over PHQ-9 responses posted with past
//! completion times (baseline, follow-up, response, remission, reliable
//! change, the definition it applied), the thresholds taken from the
//! questionnaire definition (a changed definition changes the outcome),
//! and `outcomes report episode_outcome` over every dossier, as JSON and
//! CSV.

use chrono::{DateTime, Utc};
use host::commands::report::{self, EpisodeReportArgs, Format, ReportCommand};
use host::store::{Store, StoreOptions};
use serde_json::Value;
use tests::plugins::write_definition;
use tests::{Db, TestApp, db_test, json};

use crate::support::*;

const DAY: i64 = 86_400;

/// The episode_outcome calculation over the PHQ-9 responses of `dossier`.
async fn episodes(app: &TestApp, dossier: &str) -> Value {
    let answer = app
        .get(&format!(
            "/api/v1/dossiers/{dossier}/report_calculations?calculator=episode_outcome&filters[questionnaire_keys][]=phq9"
        ))
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let scores = answer.body["results"]["scores"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(scores.len(), 1, "{}", answer.text);
    assert_eq!(scores[0]["questionnaire_key"], "phq9");
    assert_eq!(scores[0]["score_key"], "total");
    scores[0].clone()
}

/// POSTs a PHQ-9 response completed `days_ago` days before the test's
/// start; its id.
async fn phq9_at(
    app: &TestApp,
    dossier: &str,
    external_id: &str,
    items: &str,
    days_ago: i64,
) -> i64 {
    id_of(
        &posted_at(
            app,
            dossier,
            external_id,
            phq9_items(items),
            START_UNIX - days_ago * DAY,
        )
        .await,
    )
}

/// Whether `value` is an RFC 3339 time of the instant `unix`.
fn at(value: &Value, unix: i64) -> bool {
    value
        .as_str()
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .is_some_and(|t| t.timestamp() == unix)
}

db_test!(async fn a_phq9_episode_has_its_baseline_follow_up_response_remission_and_reliable_change(app) {
    // 18 -> 8 after 60 days: a drop of 10/18 = 56% (response), 8 is not
    // below 5 (no remission), RCI -10 / (√2 × 3.52 × √0.16) = -5.02.
    let baseline = phq9_at(&app, "d1", "a", "3 3 2 2 2 2 2 2 0", 100).await;
    let early = phq9_at(&app, "d1", "b", "2 2 2 2 2 2 1 1 0", 95).await;
    let follow_up = phq9_at(&app, "d1", "c", "1 1 1 1 1 1 1 1 0", 40).await;
    let entry = episodes(&app, "d1").await;
    let definition = &entry["definition"];
    assert_eq!(definition["version"], "2");
    assert_eq!(definition["response"], json!({"relative_drop_at_least": 0.5}));
    assert_eq!(definition["remission"], json!({"below": 5.0}));
    assert_eq!(definition["eligible"], json!({"baseline_at_least": 10.0}));
    assert_eq!(definition["window_days"], json!([14, 180]));
    assert_eq!(definition["reliable_change"], json!({"reliability": 0.84, "sd": 3.52, "rci_above": 1.96, "threshold": 3.9}));
    let source = definition["source"].as_str().unwrap_or_default();
    assert!(source.contains("HEDIS") && source.contains("10.1176/appi.ps.201900295"), "{source}");
    let all = entry["episodes"].as_array().cloned().unwrap_or_default();
    assert_eq!(all.len(), 1, "{entry}");
    let episode = &all[0];
    assert_eq!(episode["baseline"]["response_id"], baseline);
    assert_eq!(episode["baseline"]["value"], 18.0);
    assert!(at(&episode["baseline"]["completed_at"], START_UNIX - 100 * DAY), "{episode}");
    assert_eq!(episode["follow_up"]["response_id"], follow_up);
    assert_eq!(episode["follow_up"]["value"], 8.0);
    assert!(at(&episode["follow_up"]["completed_at"], START_UNIX - 40 * DAY), "{episode}");
    assert_ne!(episode["follow_up"]["response_id"], early, "5 days after the baseline is before the window");
    assert_eq!(episode["days_between"], 60);
    assert_eq!(episode["responses"], 3);
    assert_eq!(episode["responses_in_window"], 1);
    assert_eq!(episode["relative_drop"], 0.56);
    assert_eq!(episode["response"], true);
    assert_eq!(episode["remission"], false);
    assert_eq!(episode["reliable_change"], json!({"difference": -10.0, "rci": -5.02, "reliable": true, "direction": "improved"}));
    assert_eq!(entry["left_out"], json!([]));
});

db_test!(async fn responses_without_a_total_are_left_out_and_a_response_past_the_window_starts_an_episode(app) {
    // Three items missing: no total (docs/api/outcomes.md), never read as 0.
    let missing = phq9_at(&app, "d1", "a", "- - - 1 1 1 1 1 0", 200).await;
    let first = phq9_at(&app, "d1", "b", "2 2 2 2 2 1 1 0 0", 199).await;
    phq9_at(&app, "d1", "c", "1 1 1 1 1 1 1 1 0", 194).await;
    // 189 days after the first baseline: past the window, a new episode,
    // whose window is still open.
    let second = phq9_at(&app, "d1", "d", "0 0 0 0 0 0 0 0 0", 10).await;
    // Exactly 14 days after another dossier's baseline: in the window.
    let other = phq9_at(&app, "d2", "e", "2 2 2 2 2 1 1 0 0", 90).await;
    let other_follow_up = phq9_at(&app, "d2", "f", "1 1 1 0 0 0 0 0 0", 76).await;

    let entry = episodes(&app, "d1").await;
    assert_eq!(entry["left_out"], json!([{"response_id": missing, "reason": "no value for total"}]));
    let all = entry["episodes"].as_array().cloned().unwrap_or_default();
    assert_eq!(all.len(), 2, "{entry}");
    assert_eq!(all[0]["baseline"]["response_id"], first);
    assert_eq!(all[0]["baseline"]["value"], 12.0);
    assert_eq!(all[0]["responses"], 2);
    for episode in &all {
        assert_eq!(episode["follow_up"], Value::Null, "{episode}");
        assert_eq!((&episode["response"], &episode["remission"]), (&Value::Null, &Value::Null));
        assert_eq!(episode["note"], "no follow-up in the window");
    }
    assert_eq!(all[1]["baseline"]["response_id"], second);
    assert_eq!(all[1]["baseline"]["value"], 0.0);

    // 12 -> 3: response (9 >= 6) and remission (3 < 5).
    let entry = episodes(&app, "d2").await;
    let episode = &entry["episodes"][0];
    assert_eq!(episode["baseline"]["response_id"], other);
    assert_eq!(episode["follow_up"]["response_id"], other_follow_up);
    assert_eq!(episode["days_between"], 14);
    assert_eq!((&episode["response"], &episode["remission"]), (&json!(true), &json!(true)));
});

/// The bundled PHQ-9 with other episode thresholds: version 2-test, a drop
/// of 60%, below 9, 30 to 60 days.
async fn spawn_with_other_thresholds(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        let questionnaires = config.data_dir.join("questionnaires");
        let bundled = std::fs::read_to_string(tests::repo_root().join("questionnaires/phq9/questionnaire.toml"))
            .expect("the PHQ-9 definition");
        let (head, _) = bundled.split_once("[scores.episode]").expect("the PHQ-9 names episode thresholds");
        let text = format!(
            "{head}[scores.episode]\nversion = \"2-test\"\nresponse_drop = 0.6\nremission_below = 9\n\
             window_days = [30, 60]\nsource = \"a test\"\n"
        );
        write_definition(&questionnaires, "phq9", &text);
        config.questionnaires_dir = questionnaires;
        config.protocols_dir = test_protocols();
    })
    .await
}

db_test!(
    async fn the_thresholds_are_the_questionnaire_definitions(app: spawn_with_other_thresholds) {
        phq9_at(&app, "d1", "a", "3 3 2 2 2 2 2 2 0", 100).await;
        let follow_up = phq9_at(&app, "d1", "b", "1 1 1 1 1 1 1 1 0", 40).await;
        // 61 days: past this window of 30 to 60 days.
        phq9_at(&app, "d1", "c", "0 0 0 0 0 0 0 0 0", 39).await;
        let entry = episodes(&app, "d1").await;
        assert_eq!(entry["definition"]["version"], "2-test");
        assert_eq!(entry["definition"]["window_days"], json!([30, 60]));
        assert_eq!(entry["definition"]["source"], "a test");
        let episode = &entry["episodes"][0];
        assert_eq!(episode["follow_up"]["response_id"], follow_up);
        // 18 -> 8: a drop of 56%, short of 60%; 8 is below 9.
        assert_eq!(
            (&episode["response"], &episode["remission"]),
            (&json!(false), &json!(true))
        );
        assert_eq!(
            entry["episodes"].as_array().map(Vec::len),
            Some(2),
            "{entry}"
        );
    }
);

/// Runs `outcomes report episode_outcome` on `app`'s database as of the
/// test's start; its output.
async fn run_report(
    app: &TestApp,
    questionnaire: &str,
    since: &str,
    until: Option<&str>,
    format: Format,
) -> anyhow::Result<String> {
    let config = app.command_config();
    let store = Store::connect(&config.database_url, &StoreOptions::default())
        .await
        .expect("the database");
    let args = EpisodeReportArgs {
        questionnaire: questionnaire.to_owned(),
        since: since.to_owned(),
        until: until.map(str::to_owned),
        format,
    };
    let now = DateTime::<Utc>::from_timestamp(START_UNIX, 0).expect("a time");
    let mut out = Vec::new();
    let result = report::run(
        &store,
        &config,
        ReportCommand::EpisodeOutcome(args),
        now,
        &mut out,
    )
    .await;
    store.close().await;
    result.map(|()| String::from_utf8(out).expect("UTF-8"))
}

db_test!(async fn the_report_command_counts_episodes_over_every_dossier_as_json_and_csv(app) {
    // START is 2026-03-01T09:00Z. Baselines in the period from 2025-06-01:
    // d1 responds (18 -> 8) and improves reliably; d2 remits (12 -> 3);
    // d3 has no follow-up and its window has closed (and starts a second
    // episode, 190 days on, whose window is open); d4's baseline is 0,
    // below the definition's eligibility cut-off of 10 (neither response
    // nor remission judged). d5's episode began before the
    // period: not counted, though its follow-up lies in it.
    phq9_at(&app, "d1", "a", "3 3 2 2 2 2 2 2 0", 100).await;
    phq9_at(&app, "d1", "b", "1 1 1 1 1 1 1 1 0", 40).await;
    phq9_at(&app, "d2", "a", "2 2 2 2 2 1 1 0 0", 90).await;
    phq9_at(&app, "d2", "b", "1 1 1 0 0 0 0 0 0", 60).await;
    phq9_at(&app, "d3", "a", "2 2 2 2 2 2 2 2 0", 200).await;
    phq9_at(&app, "d3", "b", "2 2 2 2 2 2 2 2 0", 10).await;
    phq9_at(&app, "d4", "a", "0 0 0 0 0 0 0 0 0", 50).await;
    phq9_at(&app, "d4", "b", "1 1 1 0 0 0 0 0 0", 20).await;
    phq9_at(&app, "d5", "a", "3 3 3 3 3 3 3 3 0", 300).await;
    phq9_at(&app, "d5", "b", "0 0 0 0 0 0 0 0 0", 200).await;

    let text = run_report(&app, "phq9", "2025-06-01", None, Format::Json).await.expect("the report runs");
    let report: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(report["calculator"], "episode_outcome");
    assert_eq!(report["questionnaire_key"], "phq9");
    assert_eq!(report["since"], "2025-06-01T00:00:00Z");
    assert_eq!(report["until"], Value::Null);
    assert_eq!(report["generated_at"], "2026-03-01T09:00:00Z");
    assert_eq!((&report["dossiers"], &report["dossiers_failed"]), (&json!(5), &json!(0)));
    let total = &report["scores"][0];
    assert_eq!(total["score_key"], "total");
    assert_eq!(total["definition"]["version"], "2");
    assert_eq!(total["definition"]["eligible"]["baseline_at_least"], json!(10.0));
    assert_eq!(total["definition"]["window_days"], json!([14, 180]));
    let counts: Vec<(&str, Value)> = [
        "episodes", "with_follow_up", "without_follow_up", "without_follow_up_window_open",
        "responders", "response_rate", "response_not_defined", "remitters", "remission_rate",
        "remission_not_defined", "reliable_improvement", "reliable_improvement_rate", "reliable_deterioration",
        "reliable_change_not_defined",
    ]
    .into_iter()
    .map(|k| (k, total[k].clone()))
    .collect();
    // d1: 18 -> 8, 10 >= 9 responds, RCI -5.02. d2: 12 -> 3 responds,
    // remits, RCI -4.52. d4: 0 -> 3, not eligible, RCI +1.51 (not
    // reliable).
    assert_eq!(
        counts,
        [
            ("episodes", json!(5)),
            ("with_follow_up", json!(3)),
            ("without_follow_up", json!(2)),
            ("without_follow_up_window_open", json!(1)),
            ("responders", json!(2)),
            ("response_rate", json!(1.0)),
            ("response_not_defined", json!(1)),
            ("remitters", json!(1)),
            ("remission_rate", json!(0.5)),
            ("remission_not_defined", json!(1)),
            ("reliable_improvement", json!(2)),
            ("reliable_improvement_rate", json!(0.6667)),
            ("reliable_deterioration", json!(0)),
            ("reliable_change_not_defined", json!(0)),
        ]
    );

    // As CSV, for a period that ends before d4's episode and d3's second
    // (2026-01-10, 2026-02-19): d1, d2 and d3's first.
    let csv = run_report(&app, "phq9", "2025-06-01", Some("2026-01-01"), Format::Csv).await.expect("the report runs");
    let lines: Vec<&str> = csv.split("\r\n").collect();
    assert_eq!(lines.len(), 3, "a header, a line, and the end: {csv:?}");
    assert_eq!(lines[2], "");
    assert_eq!(
        lines[0],
        "questionnaire_key,score_key,since,until,generated_at,dossiers,episodes,with_follow_up,\
         without_follow_up,without_follow_up_window_open,responders,response_rate,\
         response_not_defined,remitters,remission_rate,remission_not_defined,reliable_improvement,\
         reliable_improvement_rate,reliable_deterioration,reliable_change_not_defined,\
         definition_version,window_days,source"
    );
    let source = total["definition"]["source"].as_str().unwrap_or_default();
    assert!(source.contains(','), "the source holds a comma, so the CSV quotes it: {source}");
    assert_eq!(
        lines[1],
        format!(
            "phq9,total,2025-06-01T00:00:00Z,2026-01-01T00:00:00Z,2026-03-01T09:00:00Z,5,3,2,1,0,2,1,0,1,0.5,0,2,1,0,0,2,14-180,\"{}\"",
            source.replace('"', "\"\"")
        )
    );

    // A questionnaire without thresholds, an unknown one, a bad time.
    let refused = run_report(&app, "who5", "2025-06-01", None, Format::Json).await.expect_err("refused");
    assert!(refused.to_string().contains("names no episode thresholds"), "{refused}");
    let refused = run_report(&app, "nope", "2025-06-01", None, Format::Json).await.expect_err("refused");
    assert!(refused.to_string().contains("no questionnaire \"nope\""), "{refused}");
    let refused = run_report(&app, "phq9", "yesterday", None, Format::Json).await.expect_err("refused");
    assert!(refused.to_string().contains("--since \"yesterday\": not a time"), "{refused}");
});
