//! Scorer of the PHQ-9, the depression module of the Patient Health
//! Questionnaire: one `total` score (0–27) from items `v_1`..`v_9`, the
//! suicidality alarm of item 9, and completion. `v_10` (difficulty) is
//! asked on the form but not scored.
//!
//! Sources:
//! - Kroenke K, Spitzer RL, Williams JBW. The PHQ-9: validity of a brief
//!   depression severity measure. J Gen Intern Med 2001;16(9):606-613
//!   (items, 0–3 option values, sum score, severity bands, cut-off ≥ 10).
//! - Kroenke K, Spitzer RL. The PHQ-9: a new depression diagnostic and
//!   severity measure. Psychiatr Ann 2002;32(9):509-515 (severity bands
//!   and the treatment actions they suggest).
//! - Arrieta J, Aguerrebere M, Raviola G, et al. Validity and utility of the
//!   Patient Health Questionnaire (PHQ)-2 and PHQ-9 for screening and
//!   diagnosis of depression in rural Chiapas, Mexico. J Clin Psychol
//!   2017;73(9):1076-1090 (proration when at most two items are missing).
//! - Instruction manual: Instructions for Patient Health Questionnaire
//!   (PHQ) and GAD-7 measures (Pfizer; phqscreeners.com): a patient who
//!   endorses item 9 needs further assessment of suicide risk.
//!
//! - Kroenke K, Strine TW, Spitzer RL, Williams JBW, Berry JT, Mokdad AH.
//!   The PHQ-8 as a measure of current depression in the general
//!   population. J Affect Disord 2009;114(1-3):163-173 (the PHQ-8: item 9
//!   left out, total 0–24, the same bands and cut-off ≥ 10).
//!
//! With the definition's flag `phq8` set, item 9 is not asked and the
//! scorer computes the PHQ-8: the sum of items 1–8 with the same bands and
//! cut-off, no suicidality alarm (the item was not asked: `alarm` is null,
//! not an empty list), no t-score (the norm is of the PHQ-9 total) and no
//! proration (the proration source studied the PHQ-9).
//!
//! Attention: item 9 left unanswered is listed in `attention` (a service
//! rule, not the instrument's: a skipped suicidality item must not read
//! like "not at all"; the total may still be prorated over it).
//!
//! The norm population for t-scores comes from the questionnaire
//! definition (`norm` of score `total`), not from this crate, so a site can
//! choose its own reference group.

use plugin_sdk::scoring::{self, Band};
use plugin_sdk::{Norm, Score, ScoreStatus, ScorerInput, ScorerOutput};

/// The scored items, in form order.
const ITEMS: [&str; 9] = [
    "v_1", "v_2", "v_3", "v_4", "v_5", "v_6", "v_7", "v_8", "v_9",
];

/// The items of the PHQ-8 (Kroenke et al. 2009): all but item 9.
const PHQ8_ITEMS: [&str; 8] = ["v_1", "v_2", "v_3", "v_4", "v_5", "v_6", "v_7", "v_8"];

/// The definition's flag that selects the PHQ-8.
const PHQ8_FLAG: &str = "phq8";

/// The suicidality item ("thoughts that you would be better off dead or of
/// hurting yourself").
const SUICIDALITY_ITEM: &str = "v_9";

/// At least this many answered items give a (prorated) total: Arrieta et
/// al. 2017 (Methods) scored questionnaires with up to two missing values,
/// each replaced by the mean of the completed items.
const MIN_ANSWERED: usize = ITEMS.len() - 2;

/// The clinical cut-off: a total of 10 or more detected major depression
/// with a sensitivity and a specificity of 88% (Kroenke et al. 2001).
const CUTOFF: f64 = 10.0;

/// Severity bands, each from its lowest total: 0–4 minimal, 5–9 mild,
/// 10–14 moderate, 15–19 moderately severe, 20–27 severe (Kroenke et al.
/// 2001; Kroenke & Spitzer 2002).
const SEVERITY: [Band; 5] = [
    Band::new(0.0, "minimal"),
    Band::new(5.0, "mild"),
    Band::new(10.0, "moderate"),
    Band::new(15.0, "moderately severe"),
    Band::new(20.0, "severe"),
];

fn score(input: ScorerInput) -> ScorerOutput {
    if input.flags.get(PHQ8_FLAG).copied().unwrap_or(false) {
        return score_phq8(&input);
    }
    let values = input.values_of(&ITEMS);
    let norm = input.questionnaire.score("total").and_then(|s| s.norm);
    let total = match total(&values) {
        Some(total) => total_score(total, norm),
        None => Score::missing(scoring::missing(&input, &ITEMS)),
    };

    let mut output = ScorerOutput::default();
    output.scores.insert("total".into(), total);
    // Any answer above "not at all" on item 9 calls for an assessment of
    // suicide risk by someone competent to make it, whatever the total
    // (PHQ instruction manual; questionnaires.md: alarm when item 9 > 0).
    // An unanswered item 9 raises nothing, but keeps `completion` below 1.
    let alarm = input.value(SUICIDALITY_ITEM).is_some_and(|v| v > 0.0);
    output.alarm = Some(if alarm {
        vec![SUICIDALITY_ITEM.to_string()]
    } else {
        Vec::new()
    });
    // An unanswered item 9 is not "not at all": nobody knows, and a
    // respondent who skips exactly that question may be the one to ask.
    // The PHQ-9 itself defines no attention rule; this one is ours (see
    // the module docs).
    let item9_unanswered = input.value(SUICIDALITY_ITEM).is_none();
    output.attention = Some(if item9_unanswered {
        vec![SUICIDALITY_ITEM.to_string()]
    } else {
        Vec::new()
    });
    output.completion = Some(scoring::completion(&values));
    output
}

/// The PHQ-8: the sum of items 1–8, every one of them answered.
fn score_phq8(input: &ScorerInput) -> ScorerOutput {
    let values = input.values_of(&PHQ8_ITEMS);
    let total = match scoring::sum(&values) {
        Some(total) => total_score(total, None),
        None => Score::missing(scoring::missing(input, &PHQ8_ITEMS)),
    };
    let mut output = ScorerOutput::default();
    output.scores.insert("total".into(), total);
    output.alarm = None;
    output.attention = None;
    output.completion = Some(scoring::completion(&values));
    output
}

/// The total: the sum when all nine items are answered; with one or two
/// missing, the mean of the answered items × 9 (Arrieta et al. 2017),
/// rounded to the nearest whole point (halves up) so that the bands and
/// the cut-off, which the sources define on whole totals, apply unchanged
/// (the rounding is ours, not the paper's); `None` with more missing.
fn total(values: &[Option<f64>]) -> Option<f64> {
    scoring::prorated_sum(values, MIN_ANSWERED).map(|total| scoring::round_to(total, 0))
}

fn total_score(total: f64, norm: Option<Norm>) -> Score {
    let mut score = Score::of(total);
    score.interpretation = scoring::band(total, &SEVERITY).map(String::from);
    score.norm = Some(">= 10".to_string());
    // At or above the cut-off the score needs attention. A severe total
    // (≥ 20) is not raised to alarm: the source's action for that band is
    // prompt treatment and, with severe impairment, expedited referral
    // (Kroenke & Spitzer 2002), a treatment decision rather than an urgent
    // safety signal; the urgent signal is item 9, raised as the alarm.
    if total >= CUTOFF {
        score.status = Some(ScoreStatus::Attention);
    }
    // Linear T against the norm the definition carries, to one decimal.
    scoring::set_tscore(&mut score, total, norm);
    score
}

// Works on `values` alone: the host need not send the questions.
plugin_sdk::export_scorer!(
    score,
    questionnaires = ["phq9"],
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

    #[test]
    fn all_answered_total_is_the_sum() {
        assert_eq!(total(&[Some(3.0); 9]), Some(27.0));
        assert_eq!(total(&[Some(0.0); 9]), Some(0.0));
    }

    #[test]
    fn one_or_two_missing_items_are_prorated_from_the_mean() {
        // 8 / 7 × 9 = 10.29
        let two_missing = [
            Some(1.0),
            None,
            Some(1.0),
            Some(1.0),
            None,
            Some(1.0),
            Some(1.0),
            Some(2.0),
            Some(1.0),
        ];
        assert_eq!(total(&two_missing), Some(10.0));
        // 4 / 8 × 9 = 4.5: halves round up
        let one_missing = [
            Some(1.0),
            Some(1.0),
            Some(1.0),
            Some(1.0),
            Some(0.0),
            Some(0.0),
            Some(0.0),
            Some(0.0),
            None,
        ];
        assert_eq!(total(&one_missing), Some(5.0));
    }

    #[test]
    fn three_missing_items_give_no_total() {
        let three_missing = [
            None,
            Some(3.0),
            Some(3.0),
            None,
            Some(3.0),
            Some(3.0),
            None,
            Some(3.0),
            Some(3.0),
        ];
        assert_eq!(total(&three_missing), None);
        assert_eq!(total(&[None; 9]), None);
    }

    #[test]
    fn severity_bands_follow_kroenke_2001() {
        let cases = [
            (0.0, "minimal"),
            (4.0, "minimal"),
            (5.0, "mild"),
            (9.0, "mild"),
            (10.0, "moderate"),
            (14.0, "moderate"),
            (15.0, "moderately severe"),
            (19.0, "moderately severe"),
            (20.0, "severe"),
            (27.0, "severe"),
        ];
        for (total, label) in cases {
            let score = total_score(total, None);
            assert_eq!(
                score.interpretation.as_deref(),
                Some(label),
                "total {total}"
            );
        }
    }

    #[test]
    fn attention_starts_at_the_cutoff_and_there_is_no_score_alarm() {
        assert_eq!(total_score(9.0, None).status, None);
        assert_eq!(total_score(10.0, None).status, Some(ScoreStatus::Attention));
        assert_eq!(total_score(27.0, None).status, Some(ScoreStatus::Attention));
    }

    #[test]
    fn tscore_is_linear_against_the_norm() {
        let norm = Norm {
            mean: 2.91,
            sd: 3.52,
        };
        let ten = total_score(10.0, Some(norm));
        assert_eq!(ten.tscore, Some(70.1));
        assert_eq!(ten.tscore_interpretation.as_deref(), Some("very high"));
        let zero = total_score(0.0, Some(norm));
        assert_eq!(zero.tscore, Some(41.7));
        assert_eq!(zero.tscore_interpretation.as_deref(), Some("average"));
        let degenerate = total_score(5.0, Some(Norm { mean: 5.0, sd: 0.0 }));
        assert_eq!(degenerate.tscore, None);
        assert_eq!(total_score(5.0, None).tscore, None);
    }

    fn input_with(values: &[(&str, f64)], flags: &[(&str, bool)]) -> ScorerInput {
        let mut input =
            plugin_sdk::testing::scorer_input("phq9", values.iter().map(|(k, v)| (*k, Some(*v))));
        for (name, on) in flags {
            input.flags.insert((*name).into(), *on);
        }
        input
    }

    #[test]
    fn an_unanswered_item_9_is_listed_in_attention_but_not_in_the_phq8() {
        let eight: Vec<(&str, f64)> = PHQ8_ITEMS.iter().map(|k| (*k, 1.0)).collect();
        let skipped = score(input_with(&eight, &[]));
        assert_eq!(skipped.attention, Some(vec!["v_9".to_string()]));
        assert_eq!(skipped.alarm, Some(Vec::new()));
        let mut nine = eight.clone();
        nine.push(("v_9", 0.0));
        assert_eq!(score(input_with(&nine, &[])).attention, Some(Vec::new()));
        let phq8 = score(input_with(&eight, &[("phq8", true)]));
        assert_eq!(phq8.attention, None);
        assert_eq!(phq8.alarm, None);
        assert_eq!(phq8.scores["total"].value, Some(8.0));
    }

    #[test]
    fn manifest_names_the_questionnaire() {
        let manifest = manifest();
        assert_eq!(manifest.name, "phq9");
        assert_eq!(manifest.questionnaires, ["phq9"]);
        assert!(!manifest.questions, "works on values alone");
    }
}
