//! Scorer of the WHO-5 Well-Being Index: the `raw` score (0–25) and the
//! `percentage` score (raw × 4, 0–100) from items `v_1`..`v_5`, both higher
//! is better; the poor well-being cut-off and, on the percentage scale, the
//! likely-depression cut-off; the items answered 0 or 1 as attention; and
//! completion.
//!
//! Sources:
//! - The WHO-5 form (1998 version) and its scoring text, Psychiatric
//!   Research Unit, WHO Collaborating Centre in Mental Health, Frederiksborg
//!   General Hospital, Hillerød (now Psychiatric Centre North Zealand):
//!   options 5 "all of the time" to 0 "at no time"; the raw score is the
//!   total of the five answers (0–25) and the percentage score the raw
//!   score × 4; a raw score below 13 indicates poor well-being and is an
//!   indication for testing for depression; the Major Depression Inventory
//!   is recommended when the raw score is below 13 or when any of the five
//!   items is answered 0 or 1; the percentage score is used to monitor
//!   change.
//! - Topp CW, Østergaard SD, Søndergaard S, Bech P. The WHO-5 Well-Being
//!   Index: a systematic review of the literature. Psychother Psychosom
//!   2015;84(3):167-176: the 0–100 scale; a depression screening cut-off
//!   of 50 or less on it, which selects the same respondents as raw < 13;
//!   and a percentage score of 28 or less as indicative of likely
//!   depression (the band below poor well-being on the percentage scale).
//!
//! Unanswered items: the scoring text defines the raw score as the total of
//! all five answers and gives no proration rule; we found none published.
//! With any item missing both scores report `missing_values` and no value.
//! The attention rule still applies to the items that were answered.
//!
//! Poor well-being can still be certain without a value: higher is better
//! and an item adds at most 5, so the answered items plus 5 for each
//! missing one is the best raw score the response can reach whatever the
//! missing answers. When even that is below 13, both scores carry
//! `attention` and an interpretation that says so ("at most 12 with the
//! missing items at their best: poor well-being"; the percentage × 4); no
//! value is invented. This is a service rule, not the scoring text's: it
//! applies the published cut-off to the best score the response could
//! still reach.
//!
//! No norm population is given for the WHO-5 (questionnaires.md), so there
//! are no t-scores. There is no alarm rule (`alarm` is `None`).

use plugin_sdk::scoring::{self, Band};
use plugin_sdk::{Score, ScoreStatus, ScorerInput, ScorerOutput};

/// The five items, in form order (WHO-5, 1998 version).
const ITEMS: [&str; 5] = ["v_1", "v_2", "v_3", "v_4", "v_5"];

/// The percentage score is the raw score × 4 (WHO-5 scoring text).
const PERCENT_PER_RAW_POINT: f64 = 4.0;

/// A raw score below 13 indicates poor well-being (WHO-5 scoring text), so
/// 13 is the first raw score outside it.
const RAW_CUTOFF: f64 = 13.0;

/// The best answer, "all of the time" (WHO-5 form).
const BEST_ANSWER: f64 = 5.0;

/// An item answered at most this (0 "at no time" or 1 "some of the time")
/// calls for the Major Depression Inventory, whatever the total (WHO-5
/// scoring text).
const ATTENTION_ITEM_MAX: f64 = 1.0;

/// A percentage score of 28 or less indicates likely depression (Topp et
/// al. 2015). Percentage scores are multiples of 4, so 32 is the first one
/// above it; the band boundary sits just above 28 so the rule reads as
/// published whatever the value.
const LIKELY_DEPRESSION_MAX: f64 = 28.0;

const LIKELY_DEPRESSION: &str = "likely depression";
const POOR: &str = "poor well-being";
const NOT_POOR: &str = "no indication of poor well-being";

/// Bands of the raw score: 0–12 poor well-being, 13–25 not (WHO-5 scoring
/// text).
const RAW_BANDS: [Band; 2] = [Band::new(0.0, POOR), Band::new(RAW_CUTOFF, NOT_POOR)];

/// The bands on the percentage scale: 0–28 likely depression, 32–48 poor
/// well-being, 52–100 not (raw 13 × 4 = 52; Topp et al. 2015: ≤ 50 for
/// screening, the same respondents, and ≤ 28 for likely depression).
const PERCENTAGE_BANDS: [Band; 3] = [
    Band::new(0.0, LIKELY_DEPRESSION),
    Band::new(LIKELY_DEPRESSION_MAX + 1.0, POOR),
    Band::new(RAW_CUTOFF * PERCENT_PER_RAW_POINT, NOT_POOR),
];

fn score(input: ScorerInput) -> ScorerOutput {
    let values = input.values_of(&ITEMS);
    let mut output = ScorerOutput::default();
    match scoring::sum(&values) {
        Some(raw) => {
            output.scores.insert("raw".into(), raw_score(raw));
            output
                .scores
                .insert("percentage".into(), percentage_score(raw));
        }
        None => {
            let missing = scoring::missing(&input, &ITEMS);
            let best = best_possible(&values);
            output
                .scores
                .insert("raw".into(), incomplete_score(missing.clone(), best, 1.0));
            output.scores.insert(
                "percentage".into(),
                incomplete_score(missing, best, PERCENT_PER_RAW_POINT),
            );
        }
    }
    // The WHO-5 has no alarm rule; its item rule is the attention list.
    output.alarm = None;
    output.attention = Some(low_items(&input));
    output.completion = Some(scoring::completion(&values));
    output
}

/// The items answered 0 or 1, in form order; unanswered items raise
/// nothing.
fn low_items(input: &ScorerInput) -> Vec<String> {
    ITEMS
        .iter()
        .filter(|k| input.value(k).is_some_and(|v| v <= ATTENTION_ITEM_MAX))
        .map(|k| k.to_string())
        .collect()
}

fn raw_score(raw: f64) -> Score {
    banded(raw, &RAW_BANDS, raw < RAW_CUTOFF, "< 13")
}

fn percentage_score(raw: f64) -> Score {
    let percentage = raw * PERCENT_PER_RAW_POINT;
    banded(percentage, &PERCENTAGE_BANDS, raw < RAW_CUTOFF, "< 52")
}

/// A score with its band and cut-off text; poor well-being is an
/// indication for testing for depression (WHO-5 scoring text), so it needs
/// attention. It is not raised to alarm: the sources ask for a further
/// assessment, not for urgent action.
fn banded(value: f64, bands: &[Band], poor: bool, cutoff_text: &str) -> Score {
    let mut score = Score::of(value);
    score.interpretation = scoring::band(value, bands).map(String::from);
    score.norm = Some(cutoff_text.to_string());
    if poor {
        score.status = Some(ScoreStatus::Attention);
    }
    score
}

/// The highest raw score a response with unanswered items can still
/// reach: the sum of its answered items plus the best answer, 5, for each
/// unanswered one. Not a score: it only decides whether poor well-being is
/// certain whatever the missing answers.
fn best_possible(values: &[Option<f64>]) -> f64 {
    scoring::sum_with_missing_as(values, BEST_ANSWER)
}

/// A score when items are unanswered: no value, the missing items, and
/// attention when even the best possible raw score (`best`) is below 13,
/// stated on the score's own scale (`per_raw_point`: 1 for `raw`, 4 for
/// `percentage`). On the percentage scale a best possible of 28 or less
/// makes likely depression certain too, and the interpretation says so.
fn incomplete_score(missing: Vec<String>, best: f64, per_raw_point: f64) -> Score {
    let mut score = Score::missing(missing);
    if best < RAW_CUTOFF {
        let at_most = best * per_raw_point;
        let band = if per_raw_point == PERCENT_PER_RAW_POINT {
            scoring::band(at_most, &PERCENTAGE_BANDS).unwrap_or(POOR)
        } else {
            POOR
        };
        score.status = Some(ScoreStatus::Attention);
        score.interpretation = Some(format!(
            "at most {at_most} with the missing items at their best: {band}"
        ));
    }
    score
}

// Works on `values` alone: the host need not send the questions.
plugin_sdk::export_scorer!(
    score,
    questionnaires = ["who5"],
    questions = false,
    answers = false
);

#[cfg(test)]
mod tests {

    use super::*;

    /// A response with these values for `v_1`..`v_5` (`None` unanswered).
    fn input(items: [Option<f64>; 5]) -> ScorerInput {
        plugin_sdk::testing::scorer_input("who5", ITEMS.into_iter().zip(items))
    }

    #[test]
    fn fixtures() {
        plugin_sdk::testing::check_fixtures(env!("CARGO_MANIFEST_DIR"), super::call_json);
    }

    #[test]
    fn raw_is_the_sum_and_percentage_four_times_it() {
        let output = score(input([Some(5.0); 5]));
        assert_eq!(output.scores["raw"].value, Some(25.0));
        assert_eq!(output.scores["percentage"].value, Some(100.0));
        let output = score(input([Some(0.0); 5]));
        assert_eq!(output.scores["raw"].value, Some(0.0));
        assert_eq!(output.scores["percentage"].value, Some(0.0));
        let output = score(input([
            Some(3.0),
            Some(2.0),
            Some(4.0),
            Some(1.0),
            Some(5.0),
        ]));
        assert_eq!(output.scores["raw"].value, Some(15.0));
        assert_eq!(output.scores["percentage"].value, Some(60.0));
    }

    #[test]
    fn poor_well_being_is_a_raw_score_below_13() {
        let twelve = raw_score(12.0);
        assert_eq!(twelve.interpretation.as_deref(), Some(POOR));
        assert_eq!(twelve.status, Some(ScoreStatus::Attention));
        assert_eq!(twelve.norm.as_deref(), Some("< 13"));
        let thirteen = raw_score(13.0);
        assert_eq!(thirteen.interpretation.as_deref(), Some(NOT_POOR));
        assert_eq!(thirteen.status, None);
        assert_eq!(raw_score(0.0).interpretation.as_deref(), Some(POOR));
        assert_eq!(raw_score(25.0).interpretation.as_deref(), Some(NOT_POOR));
    }

    #[test]
    fn the_percentage_carries_the_same_cutoff_times_four() {
        let forty_eight = percentage_score(12.0);
        assert_eq!(forty_eight.value, Some(48.0));
        assert_eq!(forty_eight.interpretation.as_deref(), Some(POOR));
        assert_eq!(forty_eight.status, Some(ScoreStatus::Attention));
        assert_eq!(forty_eight.norm.as_deref(), Some("< 52"));
        let fifty_two = percentage_score(13.0);
        assert_eq!(fifty_two.value, Some(52.0));
        assert_eq!(fifty_two.interpretation.as_deref(), Some(NOT_POOR));
        assert_eq!(fifty_two.status, None);
    }

    #[test]
    fn a_percentage_of_28_or_less_is_likely_depression() {
        let twenty_eight = percentage_score(7.0);
        assert_eq!(twenty_eight.value, Some(28.0));
        assert_eq!(
            twenty_eight.interpretation.as_deref(),
            Some(LIKELY_DEPRESSION)
        );
        assert_eq!(twenty_eight.status, Some(ScoreStatus::Attention));
        assert_eq!(
            percentage_score(0.0).interpretation.as_deref(),
            Some(LIKELY_DEPRESSION)
        );
        let thirty_two = percentage_score(8.0);
        assert_eq!(thirty_two.interpretation.as_deref(), Some(POOR));
        // The raw scale has no such band: raw 7 is poor well-being.
        assert_eq!(raw_score(7.0).interpretation.as_deref(), Some(POOR));
        // Certain without a value: 1 + 1 + 0 + 0, one missing at best 5
        // is at most 7 (28 %).
        let output = score(input([Some(1.0), Some(1.0), Some(0.0), Some(0.0), None]));
        assert_eq!(
            output.scores["percentage"].interpretation.as_deref(),
            Some("at most 28 with the missing items at their best: likely depression")
        );
        assert_eq!(
            output.scores["raw"].interpretation.as_deref(),
            Some("at most 7 with the missing items at their best: poor well-being")
        );
    }

    #[test]
    fn items_answered_0_or_1_need_attention() {
        let output = score(input([
            Some(0.0),
            Some(1.0),
            Some(2.0),
            Some(5.0),
            Some(1.0),
        ]));
        assert_eq!(
            output.attention,
            Some(vec!["v_1".to_string(), "v_2".into(), "v_5".into()])
        );
        let none_low = score(input([Some(2.0); 5]));
        assert_eq!(none_low.attention, Some(Vec::new()));
        assert_eq!(none_low.alarm, None);
    }

    #[test]
    fn a_missing_item_gives_no_scores_but_answered_low_items_still_count() {
        let output = score(input([Some(5.0), None, Some(1.0), Some(5.0), Some(5.0)]));
        for key in ["raw", "percentage"] {
            let s = &output.scores[key];
            assert_eq!(s.value, None, "{key}");
            assert_eq!(s.missing_values, Some(vec!["v_2".to_string()]), "{key}");
            assert_eq!(s.status, None, "{key}");
        }
        assert_eq!(output.attention, Some(vec!["v_3".to_string()]));
        assert_eq!(output.completion, Some(0.8));
    }

    #[test]
    fn the_best_possible_adds_5_per_missing_item() {
        assert_eq!(best_possible(&[Some(1.0), None, Some(2.0)]), 8.0);
        assert_eq!(best_possible(&[None; 5]), 25.0);
        assert_eq!(best_possible(&[Some(0.0); 5]), 0.0);
    }

    #[test]
    fn poor_well_being_certain_without_a_value_needs_attention() {
        // 2 + 2 + 2 + 1 = 7, v_5 at best 5: at most 12 (percentage 48).
        let output = score(input([Some(2.0), Some(2.0), Some(2.0), Some(1.0), None]));
        let raw = &output.scores["raw"];
        assert_eq!(raw.value, None);
        assert_eq!(raw.missing_values, Some(vec!["v_5".to_string()]));
        assert_eq!(raw.status, Some(ScoreStatus::Attention));
        assert_eq!(
            raw.interpretation.as_deref(),
            Some("at most 12 with the missing items at their best: poor well-being")
        );
        let percentage = &output.scores["percentage"];
        assert_eq!(percentage.value, None);
        assert_eq!(percentage.status, Some(ScoreStatus::Attention));
        assert_eq!(
            percentage.interpretation.as_deref(),
            Some("at most 48 with the missing items at their best: poor well-being")
        );
        assert_eq!(output.attention, Some(vec!["v_4".to_string()]));
        // 1 + 1 + 1, two missing at best 5: at most 13, not certain.
        let output = score(input([Some(1.0), Some(1.0), Some(1.0), None, None]));
        for key in ["raw", "percentage"] {
            let s = &output.scores[key];
            assert_eq!(s.status, None, "{key}");
            assert_eq!(s.interpretation, None, "{key}");
        }
    }

    #[test]
    fn nothing_answered_lists_every_item_and_raises_nothing() {
        let output = score(input([None; 5]));
        assert_eq!(
            output.scores["raw"].missing_values.as_deref(),
            Some(ITEMS.map(String::from).as_slice())
        );
        assert_eq!(output.attention, Some(Vec::new()));
        assert_eq!(output.completion, Some(0.0));
    }

    #[test]
    fn manifest_names_the_questionnaire() {
        let manifest = manifest();
        assert_eq!(manifest.name, "who5");
        assert_eq!(manifest.questionnaires, ["who5"]);
    }
}
