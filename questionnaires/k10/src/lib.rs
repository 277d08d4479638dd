//! Scorer of the K10, the Kessler Psychological Distress Scale: one `total`
//! score (10–50) from items `v_1`..`v_10`, its distress level, attention at
//! a very high level, and completion. The K10 has no item-level alarm or
//! attention rule.
//!
//! Sources:
//! - Kessler RC, Andrews G, Colpe LJ, et al. Short screening scales to
//!   monitor population prevalences and trends in non-specific
//!   psychological distress. Psychol Med 2002;32(6):959-976 (the ten items
//!   and five response options; the total is their sum).
//! - Australian Bureau of Statistics. Information Paper: Use of the Kessler
//!   Psychological Distress Scale in ABS Health Surveys, Australia, 2007-08
//!   (cat. no. 4817.0.55.001, 2012), "K10 scoring": Table D (options scored
//!   1–5, total 10–50) and Table E (the four levels of distress used here).
//!   The same page gives a second scheme, Table F, used by CRUfAD and GPcare
//!   in primary care (Coombs 2011): 10–19 likely to be well, 20–24 likely
//!   mild disorder, 25–29 likely moderate disorder, 30–50 likely severe
//!   disorder. We use Table E, the levels of distress, because the K10
//!   measures distress and does not diagnose; both schemes start their top
//!   group at 30. (The ABS drew Table E from CRUfAD, Andrews & Slade 2001
//!   and Korten; Statistics Netherlands groups 10–15, 16–29 and 30–50.)
//! - Australian Mental Health Outcomes and Classification Network
//!   (AMHOCN). Overview of clinician-rated and consumer self-report
//!   measures, v2.1, 2021, p. 58 (K10+ scoring), as the Australian Primary
//!   Mental Health Care Minimum Data Set specification applies it: with one
//!   of items 1–10 missing the total is round(sum / 9 × 10); with more
//!   missing there is no total. (Statistics Netherlands imputes up to two
//!   missing items from each item's sample mean; that is a survey
//!   procedure, not a rule for one respondent, so we do not follow it.)
//! - ABS National Health Survey 2017-18, Users' Guide (K10): a very high
//!   level of distress "may indicate a need for professional help"; hence
//!   the attention status from 30. The definition's `cutoff` is 20 instead
//!   (Table F: 20 or more is likely to have a mental disorder): it marks
//!   the clinical range for clinically significant change, which the
//!   reliable-change calculator reads; this scorer does not read it.
//!
//! With two or more items missing there is no total, but very high
//! distress can still be certain: each item scores at least 1, so the
//! answered items plus 1 for each missing one is the lowest total the
//! response can reach whatever the missing answers. When that floor
//! reaches 30, the score carries `attention` and an interpretation that
//! says so ("at least 42 with the missing items at their lowest: very
//! high"); no value is invented. This is a service rule, not the ABS's or
//! AMHOCN's: it applies the published level to the lowest total the
//! response could still have. With one item missing the prorated total
//! decides, as above.
//!
//! No norm population is shipped: t-scores appear only when a site's
//! definition gives score `total` a `norm`.

use plugin_sdk::scoring::{self, Band};
use plugin_sdk::{Norm, Score, ScoreStatus, ScorerInput, ScorerOutput};

/// The scored items, in form order (Kessler et al. 2002; all ten).
const ITEMS: [&str; 10] = [
    "v_1", "v_2", "v_3", "v_4", "v_5", "v_6", "v_7", "v_8", "v_9", "v_10",
];

/// A total needs nine answered items; one missing item is prorated
/// (AMHOCN 2021, p. 58).
const MIN_ANSWERED: usize = ITEMS.len() - 1;

/// Levels of psychological distress, each from its lowest total: 10–15
/// low, 16–21 moderate, 22–29 high, 30–50 very high (ABS 2012, Table E).
const LEVELS: [Band; 4] = [
    Band::new(10.0, "low"),
    Band::new(16.0, "moderate"),
    Band::new(22.0, "high"),
    Band::new(30.0, "very high"),
];

/// The lowest answer, "none of the time", scores 1 (ABS 2012, Table D).
const LOWEST_ANSWER: f64 = 1.0;

/// From this total the distress is very high, which "may indicate a need
/// for professional help" (ABS 2012, Table E; ABS National Health Survey
/// 2017-18, Users' Guide).
const VERY_HIGH: f64 = 30.0;

fn score(input: ScorerInput) -> ScorerOutput {
    let values = input.values_of(&ITEMS);
    let norm = input.questionnaire.score("total").and_then(|s| s.norm);
    let total = match prorated_total(&values) {
        Some(total) => total_score(total, norm),
        None => incomplete_total_score(scoring::missing(&input, &ITEMS), floor(&values)),
    };

    let mut output = ScorerOutput::default();
    output.scores.insert("total".into(), total);
    // The K10 defines no item whose answer is worrying on its own.
    output.alarm = None;
    output.attention = None;
    output.completion = Some(scoring::completion(&values));
    output
}

/// The total: the sum of all ten items; with one missing, the mean of the
/// nine answered × 10, rounded to a whole point as AMHOCN's round(sum / 9 ×
/// 10) does (on items scored 1–5 that fraction is never exactly a half);
/// `None` with two or more missing.
fn prorated_total(values: &[Option<f64>]) -> Option<f64> {
    scoring::prorated_sum(values, MIN_ANSWERED).map(|total| scoring::round_to(total, 0))
}

fn total_score(total: f64, norm: Option<Norm>) -> Score {
    let mut score = Score::of(total);
    score.interpretation = scoring::band(total, &LEVELS).map(String::from);
    score.norm = Some(format!(">= {VERY_HIGH}"));
    // Very high distress asks for a clinician's attention. It is not an
    // alarm: the K10 carries no suicide or risk item, and its top level
    // calls for assessment, not for urgent action.
    if total >= VERY_HIGH {
        score.status = Some(ScoreStatus::Attention);
    }
    scoring::set_tscore(&mut score, total, norm);
    score
}

/// The lowest total a response with unanswered items can still reach: the
/// sum of its answered items plus the lowest answer, 1, for each unanswered
/// one. Not a score: it only decides whether very high distress is certain
/// whatever the missing answers.
fn floor(values: &[Option<f64>]) -> f64 {
    scoring::sum_with_missing_as(values, LOWEST_ANSWER)
}

/// The total when too many items are unanswered to prorate: no value, the
/// missing items, and attention when the floor already reaches very high
/// distress, the top level, so the floor's level is the total's.
fn incomplete_total_score(missing: Vec<String>, floor: f64) -> Score {
    let mut score = Score::missing(missing);
    if floor >= VERY_HIGH {
        score.status = Some(ScoreStatus::Attention);
        score.interpretation = scoring::band(floor, &LEVELS).map(|level| {
            format!("at least {floor} with the missing items at their lowest: {level}")
        });
    }
    score
}

// Works on `values` alone: the host need not send the questions.
plugin_sdk::export_scorer!(
    score,
    questionnaires = ["k10"],
    questions = false,
    answers = false
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixtures() {
        plugin_sdk::testing::check_fixtures(env!("CARGO_MANIFEST_DIR"), super::call_json);
    }

    fn answered(values: [f64; 10]) -> [Option<f64>; 10] {
        values.map(Some)
    }

    #[test]
    fn complete_total_is_the_sum_from_10_to_50() {
        assert_eq!(prorated_total(&answered([1.0; 10])), Some(10.0));
        assert_eq!(prorated_total(&answered([5.0; 10])), Some(50.0));
        let mixed = answered([1.0, 2.0, 3.0, 4.0, 5.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(prorated_total(&mixed), Some(30.0));
    }

    #[test]
    fn one_missing_item_is_prorated_and_rounded() {
        // Nine answered, sum 20: 20 / 9 × 10 = 22.2 → 22.
        let mut values = answered([2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 3.0, 3.0, 2.0, 0.0]);
        values[9] = None;
        assert_eq!(prorated_total(&values), Some(22.0));
        // Nine answered, sum 26: 26 / 9 × 10 = 28.9 → 29.
        let mut values = answered([3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 2.0, 0.0]);
        values[0] = None;
        values[9] = Some(3.0);
        assert_eq!(prorated_total(&values), Some(29.0));
    }

    #[test]
    fn two_missing_items_give_no_total() {
        let mut values = answered([5.0; 10]);
        values[2] = None;
        values[7] = None;
        assert_eq!(prorated_total(&values), None);
        assert_eq!(prorated_total(&[None; 10]), None);
    }

    #[test]
    fn the_floor_counts_each_missing_item_at_its_lowest_answer() {
        let mut values = answered([5.0; 10]);
        values[2] = None;
        values[7] = None;
        assert_eq!(floor(&values), 42.0);
        assert_eq!(floor(&[None; 10]), 10.0);
    }

    #[test]
    fn a_floor_of_very_high_distress_needs_attention_without_a_value() {
        // Eight answered at 5 (40), two missing at least 1 each: at least 42.
        let score = incomplete_total_score(vec!["v_3".into(), "v_8".into()], 42.0);
        assert_eq!(score.value, None);
        assert_eq!(
            score.missing_values,
            Some(vec!["v_3".to_string(), "v_8".to_string()])
        );
        assert_eq!(score.status, Some(ScoreStatus::Attention));
        assert_eq!(
            score.interpretation.as_deref(),
            Some("at least 42 with the missing items at their lowest: very high")
        );
        // Eight answered summing 28, two missing: at least 30, attention.
        let at = incomplete_total_score(vec!["v_1".into(), "v_2".into()], 30.0);
        assert_eq!(at.status, Some(ScoreStatus::Attention));
        // Eight answered summing 27: at least 29 only, nothing raised.
        let below = incomplete_total_score(vec!["v_1".into(), "v_2".into()], 29.0);
        assert_eq!(below.status, None);
        assert_eq!(below.interpretation, None);
    }

    #[test]
    fn levels_follow_abs_table_e() {
        let cases = [
            (10.0, "low"),
            (15.0, "low"),
            (16.0, "moderate"),
            (21.0, "moderate"),
            (22.0, "high"),
            (29.0, "high"),
            (30.0, "very high"),
            (50.0, "very high"),
        ];
        for (total, level) in cases {
            assert_eq!(
                total_score(total, None).interpretation.as_deref(),
                Some(level),
                "total {total}"
            );
        }
    }

    #[test]
    fn attention_starts_at_very_high_distress() {
        assert_eq!(total_score(29.0, None).status, None);
        assert_eq!(total_score(30.0, None).status, Some(ScoreStatus::Attention));
        assert_eq!(total_score(50.0, None).status, Some(ScoreStatus::Attention));
        assert_eq!(total_score(10.0, None).norm.as_deref(), Some(">= 30"));
    }

    #[test]
    fn tscore_only_with_a_usable_norm() {
        let norm = Norm {
            mean: 18.5,
            sd: 7.3,
        };
        // 50 + 10 × (30 − 18.5) / 7.3 = 65.75… → 65.8
        let score = total_score(30.0, Some(norm));
        assert_eq!(score.tscore, Some(65.8));
        assert_eq!(score.tscore_interpretation.as_deref(), Some("high"));
        assert_eq!(total_score(30.0, None).tscore, None);
        let flat = Norm {
            mean: 18.5,
            sd: 0.0,
        };
        assert_eq!(total_score(30.0, Some(flat)).tscore, None);
    }

    #[test]
    fn manifest_names_the_questionnaire() {
        let manifest = manifest();
        assert_eq!(manifest.name, "k10");
        assert_eq!(manifest.questionnaires, ["k10"]);
    }
}
