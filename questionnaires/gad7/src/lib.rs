//! Scorer of the GAD-7, the Generalized Anxiety Disorder 7-item scale: one
//! `total` score (0–21) from items `v_1`..`v_7`, its severity band, the
//! attention status at the cut-off, and completion. `v_8` (difficulty) is
//! asked on the form but not scored.
//!
//! Sources:
//! - Spitzer RL, Kroenke K, Williams JBW, Löwe B. A brief measure for
//!   assessing generalized anxiety disorder: the GAD-7. Arch Intern Med
//!   2006;166(10):1092-1097 (items, 0–3 option values, sum score, cut points
//!   5, 10 and 15 for mild, moderate and severe anxiety, further evaluation
//!   at 10 or more).
//! - The published GAD-7 form and its scoring note (Pfizer;
//!   phqscreeners.com): total 0–21; 0–4 minimal, 5–9 mild, 10–14 moderate,
//!   15–21 severe anxiety.
//!
//! Unanswered items: neither source gives a proration rule for the GAD-7,
//! and we found no published one (the PHQ-9 rule of Arrieta et al. 2017
//! that the `phq9` crate follows was derived for the PHQ-9 and is not
//! carried over). The total therefore needs all seven items; with any
//! missing the score reports `missing_values` and no value.
//!
//! A certain result is still reported without a value: items only add
//! points (0–3), so the sum of the answered items is the lowest total the
//! response can reach whatever the missing answers. When that floor
//! already reaches the cut-off, the score carries `attention` and an
//! interpretation that says so ("at least 18 from the answered items:
//! severe"); no value is invented. This is a service rule, not Spitzer et
//! al.'s: it only reads the published cut-off and bands off a sum that can
//! only grow.
//!
//! The GAD-7 has no item-level alarm or attention rule (no item asks about
//! risk), so `alarm` and `attention` are `None`.
//!
//! The norm population for t-scores comes from the questionnaire definition
//! (`norm` of score `total`), not from this crate; the shipped definition
//! has none (questionnaire.toml says why), so by default there is no
//! t-score.

use plugin_sdk::scoring::{self, Band};
use plugin_sdk::{Norm, Score, ScoreStatus, ScorerInput, ScorerOutput};

/// The scored items, in form order (Spitzer et al. 2006). `v_8`, the
/// difficulty question, is not among them.
const ITEMS: [&str; 7] = ["v_1", "v_2", "v_3", "v_4", "v_5", "v_6", "v_7"];

/// The cut-off: at a total of 10 or more further evaluation is recommended
/// (sensitivity 89%, specificity 82% for generalized anxiety disorder;
/// Spitzer et al. 2006).
const CUTOFF: f64 = 10.0;

/// Severity bands, each from its lowest total: 0–4 minimal, 5–9 mild,
/// 10–14 moderate, 15–21 severe (cut points 5, 10, 15: Spitzer et al.
/// 2006; the labels as on the published form's scoring note).
const SEVERITY: [Band; 4] = [
    Band::new(0.0, "minimal"),
    Band::new(5.0, "mild"),
    Band::new(10.0, "moderate"),
    Band::new(15.0, "severe"),
];

fn score(input: ScorerInput) -> ScorerOutput {
    let values = input.values_of(&ITEMS);
    let norm = input.questionnaire.score("total").and_then(|s| s.norm);
    // No proration: the total is the plain sum of all seven items.
    let total = match scoring::sum(&values) {
        Some(total) => total_score(total, norm),
        None => incomplete_total_score(scoring::missing(&input, &ITEMS), floor(&values)),
    };

    let mut output = ScorerOutput::default();
    output.scores.insert("total".into(), total);
    // The GAD-7 defines no alarm or attention item.
    output.alarm = None;
    output.attention = None;
    output.completion = Some(scoring::completion(&values));
    output
}

fn total_score(total: f64, norm: Option<Norm>) -> Score {
    let mut score = Score::of(total);
    score.interpretation = scoring::band(total, &SEVERITY).map(String::from);
    score.norm = Some(">= 10".to_string());
    // At or above the cut-off the source recommends further evaluation, so
    // the score needs attention. A severe total (≥ 15) is not raised to
    // alarm: the sources attach no urgent action to it, and no GAD-7 item
    // asks about risk.
    if total >= CUTOFF {
        score.status = Some(ScoreStatus::Attention);
    }
    // Linear T against the norm the definition carries, to one decimal.
    scoring::set_tscore(&mut score, total, norm);
    score
}

/// The lowest total a response with unanswered items can still reach: the
/// sum of its answered items, as an unanswered item adds at least 0 (its
/// lowest option). Not a score: it only decides whether the cut-off is
/// reached whatever the missing answers.
fn floor(values: &[Option<f64>]) -> f64 {
    scoring::sum_answered(values)
}

/// The total when items are unanswered: no value, the missing items, and
/// attention when the floor already reaches the cut-off, with the band of
/// the floor ("or higher" below the top band: the missing answers can
/// only raise it).
fn incomplete_total_score(missing: Vec<String>, floor: f64) -> Score {
    let mut score = Score::missing(missing);
    if floor >= CUTOFF {
        score.status = Some(ScoreStatus::Attention);
        score.interpretation = scoring::band_at_least(floor, &SEVERITY)
            .map(|band| format!("at least {floor} from the answered items: {band}"));
    }
    score
}

// Works on `values` alone: the host need not send the questions.
plugin_sdk::export_scorer!(
    score,
    questionnaires = ["gad7"],
    questions = false,
    answers = false
);

#[cfg(test)]
mod tests {

    use super::*;

    /// A response with these values for `v_1`..`v_7` (`None` unanswered)
    /// and `v_8` unanswered, scored against a definition without a norm.
    fn input(items: [Option<f64>; 7]) -> ScorerInput {
        let values = ITEMS.into_iter().zip(items).chain([("v_8", None)]);
        plugin_sdk::testing::scorer_input("gad7", values)
    }

    #[test]
    fn fixtures() {
        plugin_sdk::testing::check_fixtures(env!("CARGO_MANIFEST_DIR"), super::call_json);
    }

    #[test]
    fn complete_total_is_the_sum_of_the_seven_items() {
        let output = score(input([Some(3.0); 7]));
        assert_eq!(output.scores["total"].value, Some(21.0));
        let output = score(input([
            Some(0.0),
            Some(1.0),
            Some(2.0),
            Some(3.0),
            Some(0.0),
            Some(1.0),
            Some(2.0),
        ]));
        assert_eq!(output.scores["total"].value, Some(9.0));
        assert_eq!(output.completion, Some(1.0));
    }

    #[test]
    fn the_difficulty_question_is_not_scored() {
        let mut with_v8 = input([Some(1.0); 7]);
        with_v8.values.insert("v_8".into(), Some(3.0));
        assert_eq!(score(with_v8).scores["total"].value, Some(7.0));
    }

    #[test]
    fn one_missing_item_gives_no_total_and_names_it() {
        // Six answered at 1: floor 6, below the cut-off, nothing raised.
        let mut items = [Some(1.0); 7];
        items[3] = None;
        let output = score(input(items));
        let total = &output.scores["total"];
        assert_eq!(total.value, None);
        assert_eq!(total.missing_values, Some(vec!["v_4".to_string()]));
        assert_eq!(total.interpretation, None);
        assert_eq!(total.status, None);
        assert_eq!(output.completion, Some(6.0 / 7.0));
    }

    #[test]
    fn the_floor_is_the_sum_of_the_answered_items() {
        assert_eq!(floor(&[Some(3.0), None, Some(2.0)]), 5.0);
        assert_eq!(floor(&[None, None]), 0.0);
    }

    #[test]
    fn a_floor_at_the_cutoff_needs_attention_without_a_value() {
        // Six answered at 3: at least 18 whatever v_4 is, severe.
        let mut items = [Some(3.0); 7];
        items[3] = None;
        let total = &score(input(items)).scores["total"];
        assert_eq!(total.value, None);
        assert_eq!(total.missing_values, Some(vec!["v_4".to_string()]));
        assert_eq!(total.status, Some(ScoreStatus::Attention));
        assert_eq!(
            total.interpretation.as_deref(),
            Some("at least 18 from the answered items: severe")
        );
        // Exactly 10 with two missing: moderate or higher.
        let score10 = incomplete_total_score(vec!["v_1".into(), "v_2".into()], 10.0);
        assert_eq!(score10.status, Some(ScoreStatus::Attention));
        assert_eq!(
            score10.interpretation.as_deref(),
            Some("at least 10 from the answered items: moderate or higher")
        );
        // One below the cut-off: nothing raised.
        let score9 = incomplete_total_score(vec!["v_1".into()], 9.0);
        assert_eq!(score9.status, None);
        assert_eq!(score9.interpretation, None);
        assert_eq!(score9.value, None);
        assert_eq!(score9.missing_values, Some(vec!["v_1".to_string()]));
    }

    #[test]
    fn nothing_answered_lists_every_item_as_missing() {
        let output = score(input([None; 7]));
        let total = &output.scores["total"];
        assert_eq!(total.value, None);
        assert_eq!(
            total.missing_values.as_deref(),
            Some(ITEMS.map(String::from).as_slice())
        );
        assert_eq!(output.completion, Some(0.0));
    }

    #[test]
    fn severity_bands_follow_spitzer_2006() {
        let cases = [
            (0.0, "minimal"),
            (4.0, "minimal"),
            (5.0, "mild"),
            (9.0, "mild"),
            (10.0, "moderate"),
            (14.0, "moderate"),
            (15.0, "severe"),
            (21.0, "severe"),
        ];
        for (total, label) in cases {
            let score = total_score(total, None);
            assert_eq!(
                score.interpretation.as_deref(),
                Some(label),
                "total {total}"
            );
            assert_eq!(score.norm.as_deref(), Some(">= 10"));
        }
    }

    #[test]
    fn attention_starts_at_the_cutoff_and_there_is_no_score_alarm() {
        assert_eq!(total_score(9.0, None).status, None);
        assert_eq!(total_score(10.0, None).status, Some(ScoreStatus::Attention));
        assert_eq!(total_score(21.0, None).status, Some(ScoreStatus::Attention));
    }

    #[test]
    fn there_is_no_alarm_or_attention_item_rule() {
        let output = score(input([Some(3.0); 7]));
        assert_eq!(output.alarm, None);
        assert_eq!(output.attention, None);
    }

    #[test]
    fn tscore_only_with_a_norm_in_the_definition() {
        assert_eq!(total_score(10.0, None).tscore, None);
        let norm = Norm { mean: 3.0, sd: 3.5 };
        // 50 + 10 × (10 − 3) / 3.5 = 70
        let ten = total_score(10.0, Some(norm));
        assert_eq!(ten.tscore, Some(70.0));
        assert_eq!(ten.tscore_interpretation.as_deref(), Some("very high"));
        // 50 + 10 × (0 − 3) / 3.5 = 41.43
        let zero = total_score(0.0, Some(norm));
        assert_eq!(zero.tscore, Some(41.4));
        assert_eq!(zero.tscore_interpretation.as_deref(), Some("average"));
        let degenerate = total_score(5.0, Some(Norm { mean: 5.0, sd: 0.0 }));
        assert_eq!(degenerate.tscore, None);
    }

    #[test]
    fn manifest_names_the_questionnaire() {
        let manifest = manifest();
        assert_eq!(manifest.name, "gad7");
        assert_eq!(manifest.questionnaires, ["gad7"]);
    }
}
