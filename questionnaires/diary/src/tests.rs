//! Unit tests of every scoring rule, and the golden fixtures.

use plugin_sdk::{ScoreInfo, Tonality};

use super::*;

#[test]
fn fixtures() {
    plugin_sdk::testing::check_fixtures(env!("CARGO_MANIFEST_DIR"), super::call_json);
}

fn score_info(key: &str, cutoff: Option<f64>, tonality: Tonality) -> ScoreInfo {
    ScoreInfo {
        key: key.into(),
        label: key.into(),
        items: Vec::new(),
        norm: None,
        reliability: None,
        sd: None,
        cutoff,
        tonality,
        episode: None,
    }
}

/// An input with slider answers for v_1 to v_6 (`None`: untouched) and
/// the shipped cut-offs: mood 4, interference 70.
fn input(answers: [Option<f64>; 6]) -> ScorerInput {
    let mut input = plugin_sdk::testing::scorer_input("diary", SLIDERS.into_iter().zip(answers));
    input.questionnaire.scores = vec![
        score_info("mood", Some(4.0), Tonality::HigherIsBetter),
        score_info("interference", Some(70.0), Tonality::HigherIsWorse),
        score_info("satisfaction", None, Tonality::HigherIsBetter),
    ];
    input
}

/// The feelings cheerful, relaxed, down, anxious; a middling day.
fn feeling(v1: f64, v2: f64, v3: f64, v4: f64) -> ScorerInput {
    input([
        Some(v1),
        Some(v2),
        Some(v3),
        Some(v4),
        Some(20.0),
        Some(50.0),
    ])
}

#[test]
fn mood_is_the_mean_of_the_feelings_with_the_unpleasant_ones_reversed() {
    // (8 + 6 + (10 - 2) + (10 - 4)) / 4 = 7
    assert_eq!(
        score(feeling(8.0, 6.0, 2.0, 4.0)).scores["mood"].value,
        Some(7.0)
    );
    assert_eq!(
        score(feeling(10.0, 10.0, 0.0, 0.0)).scores["mood"].value,
        Some(10.0)
    );
    assert_eq!(
        score(feeling(0.0, 0.0, 10.0, 10.0)).scores["mood"].value,
        Some(0.0)
    );
    // (5 + 4 + 7 + 7) / 4 = 5.75: quarters, exact.
    assert_eq!(
        score(feeling(5.0, 4.0, 3.0, 3.0)).scores["mood"].value,
        Some(5.75)
    );
}

#[test]
fn mood_needs_all_four_feelings() {
    let mut answers = [Some(5.0); 6];
    answers[2] = None;
    let mood = &score(input(answers)).scores["mood"];
    assert_eq!(mood.value, None);
    assert_eq!(mood.missing_values, Some(vec!["v_3".to_owned()]));
    assert_eq!(mood.status, None);
}

#[test]
fn a_mood_below_the_cutoff_asks_for_attention_and_at_it_does_not() {
    // (3 + 4 + 6 + 2) / 4 = 3.75
    let low = score(feeling(3.0, 4.0, 4.0, 8.0));
    let mood = &low.scores["mood"];
    assert_eq!(mood.value, Some(3.75));
    assert_eq!(mood.status, Some(ScoreStatus::Attention));
    assert_eq!(mood.interpretation.as_deref(), Some("low: below 4"));
    assert_eq!(mood.norm.as_deref(), Some("< 4"));
    assert_eq!(
        low.attention,
        Some(vec!["v_1".into(), "v_2".into(), "v_3".into(), "v_4".into()])
    );
    // (4 + 4 + 4 + 4) / 4 = 4
    let edge = score(feeling(4.0, 4.0, 6.0, 6.0));
    assert_eq!(edge.scores["mood"].value, Some(4.0));
    assert_eq!(edge.scores["mood"].status, None);
    assert_eq!(
        edge.scores["mood"].interpretation.as_deref(),
        Some("not low: 4 or above")
    );
    assert_eq!(edge.attention, Some(vec![]));
}

#[test]
fn interference_at_the_cutoff_asks_for_attention_and_below_it_does_not() {
    let high = score(input([
        Some(5.0),
        Some(5.0),
        Some(5.0),
        Some(5.0),
        Some(70.0),
        Some(40.0),
    ]));
    let interference = &high.scores["interference"];
    assert_eq!(interference.value, Some(70.0));
    assert_eq!(interference.status, Some(ScoreStatus::Attention));
    assert_eq!(interference.norm.as_deref(), Some(">= 70"));
    assert_eq!(high.attention, Some(vec!["v_5".into()]));
    let below = score(input([
        Some(5.0),
        Some(5.0),
        Some(5.0),
        Some(5.0),
        Some(69.0),
        Some(40.0),
    ]));
    assert_eq!(below.scores["interference"].status, None);
    assert_eq!(below.attention, Some(vec![]));
}

#[test]
fn the_cutoffs_are_read_from_the_definition_and_without_them_nothing_is_flagged() {
    let mut strict = input([
        Some(6.0),
        Some(6.0),
        Some(4.0),
        Some(4.0),
        Some(50.0),
        Some(50.0),
    ]);
    strict.questionnaire.scores[0].cutoff = Some(7.0);
    strict.questionnaire.scores[1].cutoff = Some(50.0);
    assert_eq!(
        score(strict).attention,
        Some(vec![
            "v_1".into(),
            "v_2".into(),
            "v_3".into(),
            "v_4".into(),
            "v_5".into()
        ])
    );
    let mut none = input([
        Some(0.0),
        Some(0.0),
        Some(10.0),
        Some(10.0),
        Some(100.0),
        Some(0.0),
    ]);
    none.questionnaire.scores.clear();
    let output = score(none);
    assert_eq!(output.attention, Some(vec![]));
    assert_eq!(output.scores["mood"].status, None);
    assert_eq!(output.scores["mood"].interpretation, None);
    assert_eq!(output.scores["interference"].status, None);
}

#[test]
fn satisfaction_is_the_answer_and_never_flagged() {
    let output = score(input([
        Some(5.0),
        Some(5.0),
        Some(5.0),
        Some(5.0),
        Some(10.0),
        Some(0.0),
    ]));
    assert_eq!(output.scores["satisfaction"].value, Some(0.0));
    assert_eq!(output.scores["satisfaction"].status, None);
    assert_eq!(output.alarm, None);
}

#[test]
fn completion_counts_the_six_sliders() {
    assert_eq!(score(input([Some(1.0); 6])).completion, Some(1.0));
    let mut answers = [Some(1.0); 6];
    answers[4] = None;
    answers[5] = None;
    assert_eq!(score(input(answers)).completion, Some(4.0 / 6.0));
    assert_eq!(score(input([None; 6])).completion, Some(0.0));
}
