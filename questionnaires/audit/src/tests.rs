//! Unit tests of every scoring rule, and the golden fixtures.

use plugin_sdk::PatientInfo;

use super::*;

#[test]
fn fixtures() {
    plugin_sdk::testing::check_fixtures(env!("CARGO_MANIFEST_DIR"), super::call_json);
}

/// An input with points for questions 1–10 (`None`: unanswered).
fn input(points: [Option<f64>; 10]) -> ScorerInput {
    plugin_sdk::testing::scorer_input("audit", ITEMS.into_iter().zip(points))
}

/// [`input`] as the host sends it when the definition's skip conditions
/// left out the questions `skipped` (1-based): not enabled, no value.
fn skipping(points: [Option<f64>; 10], skipped: std::ops::RangeInclusive<usize>) -> ScorerInput {
    let mut input = input(points);
    for (n, key) in ITEMS.iter().enumerate() {
        input
            .enabled
            .insert((*key).to_owned(), !skipped.contains(&(n + 1)));
    }
    input
}

fn all(points: [f64; 10]) -> ScorerInput {
    input(points.map(Some))
}

fn total(input: &ScorerInput) -> Score {
    total_score(&Points::of(input), cutoff_for(input))
}

#[test]
fn total_is_the_sum_from_0_to_40() {
    assert_eq!(total(&all([0.0; 10])).value, Some(0.0));
    let max = all([4.0; 10]);
    assert_eq!(total(&max).value, Some(40.0));
    let some = all([1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 2.0, 0.0]);
    assert_eq!(total(&some).value, Some(5.0));
}

#[test]
fn zones_follow_the_manual() {
    let cases = [
        (0.0, "low risk"),
        (7.0, "low risk"),
        (8.0, "hazardous"),
        (15.0, "hazardous"),
        (16.0, "harmful"),
        (19.0, "harmful"),
        (20.0, "possible dependence"),
        (40.0, "possible dependence"),
    ];
    for (value, zone) in cases {
        assert_eq!(scoring::band(value, &ZONES), Some(zone), "total {value}");
    }
}

#[test]
fn attention_status_from_the_cutoff_of_8() {
    let seven = all([2.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]);
    let score = total(&seven);
    assert_eq!(score.value, Some(7.0));
    assert_eq!(score.status, None);
    assert_eq!(score.norm.as_deref(), Some(">= 8"));
    let eight = all([2.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0]);
    assert_eq!(total(&eight).status, Some(ScoreStatus::Attention));
}

#[test]
fn women_and_patients_over_65_have_the_cutoff_of_7() {
    let seven = [2.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0];
    let six = [2.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0];

    let mut woman = all(seven);
    woman.patient.gender = Some("female".into());
    assert_eq!(total(&woman).status, Some(ScoreStatus::Attention));
    assert_eq!(total(&woman).norm.as_deref(), Some(">= 7"));
    let mut woman_six = all(six);
    woman_six.patient.gender = Some("female".into());
    assert_eq!(total(&woman_six).status, None);

    // Completed in 2026: born 1960 is over 65 (66 this year), born
    // 1961 is not (65 this year).
    let mut older_man = all(seven);
    older_man.patient = PatientInfo {
        gender: Some("male".into()),
        birth_year: Some(1960),
    };
    assert_eq!(total(&older_man).status, Some(ScoreStatus::Attention));
    let mut man_of_65 = all(seven);
    man_of_65.patient = PatientInfo {
        gender: Some("male".into()),
        birth_year: Some(1961),
    };
    assert_eq!(total(&man_of_65).status, None);
    assert_eq!(total(&man_of_65).norm.as_deref(), Some(">= 8"));

    // No birth year, or a completion time that does not parse: no age.
    let mut unknown = all(seven);
    unknown.patient.gender = Some("male".into());
    assert_eq!(cutoff_for(&unknown), CUTOFF);
    let mut unparsed = older_man.clone();
    unparsed.completed_at = "yesterday".into();
    assert_eq!(cutoff_for(&unparsed), CUTOFF);
}

#[test]
fn under_the_lower_cutoff_a_total_of_7_says_why_it_needs_attention() {
    let mut woman = all([2.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]);
    woman.patient.gender = Some("female".into());
    let score = total(&woman);
    assert_eq!(score.value, Some(7.0));
    assert_eq!(score.status, Some(ScoreStatus::Attention));
    assert_eq!(score.norm.as_deref(), Some(">= 7"));
    assert_eq!(
        score.interpretation.as_deref(),
        Some("low risk zone; at or above the cut-off of 7 for women and people over 65")
    );
    // From 8 the zone says it all, whatever the cut-off.
    let mut eight = all([2.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0]);
    eight.patient.gender = Some("female".into());
    assert_eq!(total(&eight).interpretation.as_deref(), Some("hazardous"));
    // Without patient details (as the host sends today) 7 is low risk.
    let seven = all([2.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]);
    assert_eq!(total(&seven).interpretation.as_deref(), Some("low risk"));
}

#[test]
fn an_absurd_birth_year_does_not_overflow() {
    // 2026 − i32::MIN overflows: no age. i32::MAX and 3000 give a
    // negative age: not over 65.
    for born in [i32::MIN, i32::MIN + 1, i32::MAX, 3000] {
        let mut input = all([0.0; 10]);
        input.patient.birth_year = Some(born);
        assert_eq!(cutoff_for(&input), CUTOFF, "born {born}");
    }
    // A plausible but very old birth year is over 65.
    let mut old = all([0.0; 10]);
    old.patient.birth_year = Some(1900);
    assert_eq!(cutoff_for(&old), CUTOFF_MORE_SENSITIVE);
}

#[test]
fn a_floor_at_the_cutoff_needs_attention_without_a_value() {
    // Question 7 unanswered, the others sum to 8: at least 8.
    let mut points = [2.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 2.0, 0.0].map(Some);
    points[6] = None;
    let score = total(&input(points));
    assert_eq!(score.value, None);
    assert_eq!(score.missing_values, Some(vec!["v_7".to_string()]));
    assert_eq!(score.status, Some(ScoreStatus::Attention));
    assert_eq!(
        score.interpretation.as_deref(),
        Some("at least 8 from the answered items: hazardous or higher")
    );
    // The top zone needs no "or higher".
    let top = incomplete_total_score(vec!["v_4".into()], 36.0, CUTOFF);
    assert_eq!(
        top.interpretation.as_deref(),
        Some("at least 36 from the answered items: possible dependence")
    );
    // A floor of 7: nothing under the cut-off of 8, attention under 7.
    let seven = incomplete_total_score(vec!["v_7".into()], 7.0, CUTOFF);
    assert_eq!(seven.status, None);
    assert_eq!(seven.interpretation, None);
    let lower = incomplete_total_score(vec!["v_7".into()], 7.0, CUTOFF_MORE_SENSITIVE);
    assert_eq!(lower.status, Some(ScoreStatus::Attention));
    assert_eq!(
        lower.interpretation.as_deref(),
        Some(
            "at least 7 from the answered items: at or above the cut-off of 7 for women and people over 65"
        )
    );
}

#[test]
fn skipped_questions_count_0_in_the_floor() {
    // "Never" on 1 skips 2–8; question 10 unanswered, 9 at 4: at least 4.
    let mut points = [None; 10];
    points[0] = Some(0.0);
    points[8] = Some(4.0);
    let p = Points::of(&skipping(points, 2..=8));
    assert_eq!(p.floor(&ITEMS), 4.0);
}

#[test]
fn a_respondent_who_stops_is_not_complete() {
    // Only question 1 answered, not "never": 1 of 10.
    let mut points = [None; 10];
    points[0] = Some(2.0);
    assert_eq!(Points::of(&input(points)).completion(), 0.1);
    // 1–3 answered with 2 and 3 at 0, then stopped: 4–8 skipped, 9 and
    // 10 missing: 8 of 10.
    let mut points = [None; 10];
    points[0] = Some(1.0);
    points[1] = Some(0.0);
    points[2] = Some(0.0);
    assert_eq!(Points::of(&skipping(points, 4..=8)).completion(), 0.8);
    // 1–3 answered with 3 above 0, then stopped: no skip, 3 of 10.
    points[2] = Some(1.0);
    assert_eq!(Points::of(&input(points)).completion(), 0.3);
}

#[test]
fn never_drinking_skips_questions_2_to_8() {
    let mut points = [None; 10];
    points[0] = Some(0.0);
    points[8] = Some(2.0);
    points[9] = Some(4.0);
    let input = skipping(points, 2..=8);
    let p = Points::of(&input);
    assert_eq!(total(&input).value, Some(6.0));
    assert_eq!(p.sub_score(&CONSUMPTION).value, Some(0.0));
    assert_eq!(p.sub_score(&DEPENDENCE).value, Some(0.0));
    assert_eq!(p.completion(), 1.0);
    // Question 10 "yes, during the last year" still asks for attention.
    assert_eq!(attention(&input), vec!["v_10"]);
}

#[test]
fn light_drinking_skips_questions_4_to_8() {
    let mut points = [None; 10];
    points[0] = Some(1.0);
    points[1] = Some(0.0);
    points[2] = Some(0.0);
    points[8] = Some(0.0);
    points[9] = Some(2.0);
    let input = skipping(points, 4..=8);
    assert_eq!(total(&input).value, Some(3.0));
    assert_eq!(Points::of(&input).completion(), 1.0);
}

#[test]
fn skips_do_not_reach_questions_9_and_10() {
    let mut points = [None; 10];
    points[0] = Some(0.0);
    let input = skipping(points, 2..=8);
    let score = total(&input);
    assert_eq!(score.value, None);
    assert_eq!(
        score.missing_values,
        Some(vec!["v_9".to_string(), "v_10".to_string()])
    );
    assert_eq!(Points::of(&input).completion(), 0.8);
}

#[test]
fn a_question_not_enabled_counts_0_whatever_an_input_carries_for_it() {
    // The host never sends a value for a question that was not enabled;
    // were one there, the skip still decides.
    let mut points = [None; 10];
    points[0] = Some(0.0);
    points[3] = Some(2.0);
    points[8] = Some(0.0);
    points[9] = Some(0.0);
    assert_eq!(total(&skipping(points, 2..=8)).value, Some(0.0));
}

#[test]
fn an_input_that_says_nothing_of_enabled_questions_skips_nothing() {
    // Contract 1, or a test input: every question enabled, so "never" on 1
    // with 2–8 unanswered leaves them missing.
    let mut points = [None; 10];
    points[0] = Some(0.0);
    points[8] = Some(0.0);
    points[9] = Some(0.0);
    let score = total(&input(points));
    assert_eq!(score.value, None);
    assert_eq!(score.missing_values.map(|m| m.len()), Some(7));
}

#[test]
fn an_unanswered_question_without_a_skip_leaves_no_value() {
    let mut points = [Some(1.0); 10];
    points[4] = None;
    let input = input(points);
    let p = Points::of(&input);
    assert_eq!(total(&input).missing_values, Some(vec!["v_5".to_string()]));
    assert_eq!(p.sub_score(&CONSUMPTION).value, Some(3.0));
    assert_eq!(
        p.sub_score(&DEPENDENCE).missing_values,
        Some(vec!["v_5".to_string()])
    );
    assert_eq!(p.completion(), 0.9);
}

#[test]
fn attention_items_follow_the_manual() {
    // 4–6 at 2 or more, 9–10 at 4; 7 and 8 never.
    let input = all([4.0, 4.0, 4.0, 1.0, 2.0, 4.0, 4.0, 4.0, 2.0, 4.0]);
    assert_eq!(attention(&input), vec!["v_5", "v_6", "v_10"]);
    let none = all([4.0, 4.0, 4.0, 1.0, 1.0, 1.0, 4.0, 4.0, 2.0, 2.0]);
    assert!(attention(&none).is_empty());
}

#[test]
fn manifest_names_the_questionnaire() {
    let manifest = manifest();
    assert_eq!(manifest.name, "audit");
    assert_eq!(manifest.questionnaires, ["audit"]);
}
