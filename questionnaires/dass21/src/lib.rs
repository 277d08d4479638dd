//! Scorer of the DASS-21, the 21-item Depression Anxiety Stress Scales:
//! three scores `depression`, `anxiety` and `stress`, each the sum of its
//! seven items × 2 (0–42), with the manual's severity labels, the attention
//! rule of item 21, and completion.
//!
//! Sources:
//! - Lovibond SH, Lovibond PF. Manual for the Depression Anxiety Stress
//!   Scales (2nd ed.). Sydney: Psychology Foundation, 1995; the DASS21 form
//!   and scoring notes on the DASS website (psy.unsw.edu.au/dass): items
//!   rated 0–3; depression = items 3, 5, 10, 13, 16, 17, 21; anxiety = 2, 4,
//!   7, 9, 15, 19, 20; stress = 1, 6, 8, 11, 12, 14, 18; the short form's
//!   sums are multiplied by 2 to use the DASS-42 severity ratings: normal,
//!   mild, moderate, severe, extremely severe (depression 0–9, 10–13, 14–20,
//!   21–27, 28+; anxiety 0–7, 8–9, 10–14, 15–19, 20+; stress 0–14, 15–18,
//!   19–25, 26–33, 34+).
//! - Item 21, "I felt that life was meaningless", belongs to the depression
//!   scale's "devaluation of life" content (DASS website, overview). No DASS
//!   author defines an item-level alarm or attention rule. Attention on
//!   item 21 is a decision of this service, from its instrument notes
//!   (questionnaires.md, DASS-21: "Attention: item 21 > 0"): any answer
//!   above "did not apply to me at all" puts `v_21` in `attention`, so that
//!   a clinician can ask about hopelessness and suicidal thoughts. Not
//!   `alarm`: the item does not ask about suicide, it prompts a question
//!   about it.
//!
//! Unanswered items: the DASS FAQ has a question on missing scores, but its
//! answer could not be read in any available copy, and no other source
//! we could check gives a proration rule for the DASS-21. So a scale with
//! any of its seven items unanswered has no value and lists the missing
//! items; the other scales are scored as usual.
//!
//! Each scale's status is `attention` from the start of the manual's
//! "mild" band, the first score above its "normal" range (depression 10,
//! anxiety 8, stress 15; [`Scale::cutoff`]), as the PHQ-9 scorer does at
//! its cut-off. The manual gives severity labels, not an alarm level, so
//! no score raises `alarm`. The shipped definition's `cutoff`s have the
//! same values; the reliable-change calculator reads those, while the
//! scorer keeps its own constants (a unit test checks that the two agree),
//! so a site that moves a definition's `cutoff` for clinically significant
//! change does not silently move the attention rule.
//!
//! A scale with items missing can still be certain to be above "normal":
//! items only add points (0–3, × 2), so twice the sum of its answered items
//! is the lowest score it can reach whatever the missing answers. When that
//! floor reaches the scale's cut-off, the scale carries `attention` and an
//! interpretation that says so ("at least 12 from the answered items: mild
//! or higher"); no value is invented. This is a service rule, not the
//! manual's: it applies the manual's bands to the lowest score the
//! response could still have.

use plugin_sdk::scoring::{self, Band};
use plugin_sdk::{Score, ScoreStatus, ScorerInput, ScorerOutput};

/// One DASS scale: score key, items, severity bands (on the × 2 metric,
/// each from its lowest score) and the cut-off.
#[derive(Debug)]
struct Scale {
    key: &'static str,
    items: [&'static str; 7],
    bands: [Band; 5],
    /// Where attention starts: the first score of the "mild" band, i.e. the
    /// first above the manual's "normal" range.
    cutoff: f64,
}

/// The scales with their items and bands (Lovibond & Lovibond 1995). The
/// bands start where the manual's ranges start; a band boundary at an odd
/// number (21, 15, 19) is reached by the next even score, as every
/// DASS-21 score is even.
const SCALES: [Scale; 3] = [
    Scale {
        key: "depression",
        items: ["v_3", "v_5", "v_10", "v_13", "v_16", "v_17", "v_21"],
        bands: [
            Band::new(0.0, "normal"),
            Band::new(10.0, "mild"),
            Band::new(14.0, "moderate"),
            Band::new(21.0, "severe"),
            Band::new(28.0, "extremely severe"),
        ],
        cutoff: 10.0,
    },
    Scale {
        key: "anxiety",
        items: ["v_2", "v_4", "v_7", "v_9", "v_15", "v_19", "v_20"],
        bands: [
            Band::new(0.0, "normal"),
            Band::new(8.0, "mild"),
            Band::new(10.0, "moderate"),
            Band::new(15.0, "severe"),
            Band::new(20.0, "extremely severe"),
        ],
        cutoff: 8.0,
    },
    Scale {
        key: "stress",
        items: ["v_1", "v_6", "v_8", "v_11", "v_12", "v_14", "v_18"],
        bands: [
            Band::new(0.0, "normal"),
            Band::new(15.0, "mild"),
            Band::new(19.0, "moderate"),
            Band::new(26.0, "severe"),
            Band::new(34.0, "extremely severe"),
        ],
        cutoff: 15.0,
    },
];

/// All items, in form order, for completion.
const ITEMS: [&str; 21] = [
    "v_1", "v_2", "v_3", "v_4", "v_5", "v_6", "v_7", "v_8", "v_9", "v_10", "v_11", "v_12", "v_13",
    "v_14", "v_15", "v_16", "v_17", "v_18", "v_19", "v_20", "v_21",
];

/// The DASS-21 sums are doubled to the DASS-42 metric of the severity
/// ratings (Lovibond & Lovibond 1995; DASS21 scoring notes).
const MULTIPLIER: f64 = 2.0;

/// "I felt that life was meaningless": attention from 1 ("applied to me to
/// some degree") upwards (see the module docs).
const MEANINGLESS_ITEM: &str = "v_21";

fn score(input: ScorerInput) -> ScorerOutput {
    let mut output = ScorerOutput::default();
    for scale in &SCALES {
        let values = input.values_of(&scale.items);
        let score = match scoring::sum(&values) {
            Some(sum) => scale_score(scale, sum * MULTIPLIER),
            None => incomplete_scale_score(
                scale,
                scoring::missing(&input, &scale.items),
                floor(&values),
            ),
        };
        output.scores.insert(scale.key.into(), score);
    }
    output.alarm = None;
    output.attention = Some(scoring::keys_at_or_above(&input, &[MEANINGLESS_ITEM], 1.0));
    output.completion = Some(scoring::completion(&input.values_of(&ITEMS)));
    output
}

/// A scale's score on the × 2 metric, with its severity band, its cut-off
/// text and attention from the cut-off (the start of "mild").
fn scale_score(scale: &Scale, value: f64) -> Score {
    let mut score = Score::of(value);
    score.interpretation = scoring::band(value, &scale.bands).map(String::from);
    score.norm = Some(format!(">= {}", scale.cutoff));
    if value >= scale.cutoff {
        score.status = Some(ScoreStatus::Attention);
    }
    score
}

/// The lowest score a scale with unanswered items can still reach, on the
/// × 2 metric: twice the sum of its answered items, as an unanswered item
/// adds at least 0 ("did not apply to me at all"). Not a score: it only
/// decides whether the cut-off is reached whatever the missing answers.
fn floor(values: &[Option<f64>]) -> f64 {
    scoring::sum_answered(values) * MULTIPLIER
}

/// A scale with unanswered items: no value, the missing items, and
/// attention when the floor already reaches the cut-off, with the band of
/// the floor ("or higher" below the top band: the missing answers can only
/// raise it).
fn incomplete_scale_score(scale: &Scale, missing: Vec<String>, floor: f64) -> Score {
    let mut score = Score::missing(missing);
    if floor >= scale.cutoff {
        score.status = Some(ScoreStatus::Attention);
        score.interpretation = scoring::band_at_least(floor, &scale.bands)
            .map(|band| format!("at least {floor} from the answered items: {band}"));
    }
    score
}

// Works on `values` alone: the host need not send the questions.
plugin_sdk::export_scorer!(
    score,
    questionnaires = ["dass21"],
    questions = false,
    answers = false
);

#[cfg(test)]
mod tests {

    use super::*;

    /// A response with the items `answered` (1-based item, value); every
    /// other item unanswered.
    fn input(answered: &[(usize, f64)]) -> ScorerInput {
        let mut input = plugin_sdk::testing::scorer_input("dass21", ITEMS.map(|k| (k, None)));
        for (item, value) in answered {
            input.values.insert(format!("v_{item}"), Some(*value));
        }
        input
    }

    fn all(value: f64) -> Vec<(usize, f64)> {
        (1..=21).map(|item| (item, value)).collect()
    }

    fn scale(key: &str) -> &'static Scale {
        SCALES
            .iter()
            .find(|s| s.key == key)
            .expect("the scale exists")
    }

    #[test]
    fn fixtures() {
        plugin_sdk::testing::check_fixtures(env!("CARGO_MANIFEST_DIR"), super::call_json);
    }

    #[test]
    fn each_scale_is_its_item_sum_times_two() {
        let output = score(input(&all(3.0)));
        for key in ["depression", "anxiety", "stress"] {
            assert_eq!(output.scores[key].value, Some(42.0), "{key}");
        }
        let output = score(input(&all(0.0)));
        for key in ["depression", "anxiety", "stress"] {
            assert_eq!(output.scores[key].value, Some(0.0), "{key}");
        }
    }

    #[test]
    fn items_belong_to_the_lovibond_scales() {
        // One item per scale at a time: only its own scale moves.
        for (key, items) in [
            ("depression", [3, 5, 10, 13, 16, 17, 21]),
            ("anxiety", [2, 4, 7, 9, 15, 19, 20]),
            ("stress", [1, 6, 8, 11, 12, 14, 18]),
        ] {
            for item in items {
                let mut answers = all(0.0);
                answers[item - 1] = (item, 1.0);
                let output = score(input(&answers));
                for other in ["depression", "anxiety", "stress"] {
                    let expected = if other == key { 2.0 } else { 0.0 };
                    assert_eq!(
                        output.scores[other].value,
                        Some(expected),
                        "item {item} in {other}"
                    );
                }
            }
        }
    }

    #[test]
    fn severity_bands_follow_the_dass_manual() {
        let cases = [
            ("depression", 0.0, "normal"),
            ("depression", 8.0, "normal"),
            ("depression", 10.0, "mild"),
            ("depression", 12.0, "mild"),
            ("depression", 14.0, "moderate"),
            ("depression", 20.0, "moderate"),
            ("depression", 22.0, "severe"),
            ("depression", 26.0, "severe"),
            ("depression", 28.0, "extremely severe"),
            ("depression", 42.0, "extremely severe"),
            ("anxiety", 0.0, "normal"),
            ("anxiety", 6.0, "normal"),
            ("anxiety", 8.0, "mild"),
            ("anxiety", 10.0, "moderate"),
            ("anxiety", 14.0, "moderate"),
            ("anxiety", 16.0, "severe"),
            ("anxiety", 18.0, "severe"),
            ("anxiety", 20.0, "extremely severe"),
            ("anxiety", 42.0, "extremely severe"),
            ("stress", 0.0, "normal"),
            ("stress", 14.0, "normal"),
            ("stress", 16.0, "mild"),
            ("stress", 18.0, "mild"),
            ("stress", 20.0, "moderate"),
            ("stress", 24.0, "moderate"),
            ("stress", 26.0, "severe"),
            ("stress", 32.0, "severe"),
            ("stress", 34.0, "extremely severe"),
            ("stress", 42.0, "extremely severe"),
        ];
        for (key, value, label) in cases {
            let score = scale_score(scale(key), value);
            assert_eq!(
                score.interpretation.as_deref(),
                Some(label),
                "{key} {value}"
            );
        }
    }

    #[test]
    fn odd_manual_boundaries_hold_for_any_value() {
        // The manual's ranges start at 21 (depression severe), 15 (anxiety
        // severe), 15 and 19 (stress mild and moderate).
        assert_eq!(
            scale_score(scale("depression"), 21.0)
                .interpretation
                .as_deref(),
            Some("severe")
        );
        assert_eq!(
            scale_score(scale("anxiety"), 15.0)
                .interpretation
                .as_deref(),
            Some("severe")
        );
        assert_eq!(
            scale_score(scale("stress"), 15.0).interpretation.as_deref(),
            Some("mild")
        );
        assert_eq!(
            scale_score(scale("stress"), 19.0).interpretation.as_deref(),
            Some("moderate")
        );
    }

    #[test]
    fn attention_starts_above_the_normal_range() {
        for (key, normal, above, norm) in [
            ("depression", 8.0, 10.0, ">= 10"),
            ("anxiety", 6.0, 8.0, ">= 8"),
            ("stress", 14.0, 16.0, ">= 15"),
        ] {
            let below = scale_score(scale(key), normal);
            assert_eq!(below.status, None, "{key}");
            assert_eq!(below.norm.as_deref(), Some(norm), "{key}");
            let at = scale_score(scale(key), above);
            assert_eq!(at.status, Some(ScoreStatus::Attention), "{key}");
            let max = scale_score(scale(key), 42.0);
            assert_eq!(max.status, Some(ScoreStatus::Attention), "{key}");
        }
    }

    #[test]
    fn the_cutoff_is_the_start_of_mild_and_the_definitions_cutoff() {
        let definition = include_str!("../questionnaire.toml");
        for scale in &SCALES {
            assert_eq!(scale.bands[1].label, "mild", "{}", scale.key);
            assert_eq!(scale.cutoff, scale.bands[1].from, "{}", scale.key);
            // The `cutoff` line of this score's [[scores]] table.
            let table = definition
                .split("[[scores]]")
                .find(|t| t.contains(&format!("key = \"{}\"", scale.key)))
                .expect("the definition has the score");
            let cutoff: f64 = table
                .lines()
                .find_map(|l| l.strip_prefix("cutoff = "))
                .and_then(|v| v.trim().parse().ok())
                .expect("the score has a cutoff");
            assert_eq!(cutoff, scale.cutoff, "{}", scale.key);
        }
    }

    #[test]
    fn the_floor_is_twice_the_sum_of_the_answered_items() {
        assert_eq!(floor(&[Some(1.0), None, Some(3.0)]), 8.0);
        assert_eq!(floor(&[None; 7]), 0.0);
    }

    #[test]
    fn a_floor_at_the_cutoff_needs_attention_without_a_value() {
        // Depression: six answered at 1, item 5 missing: at least 12.
        let answers: Vec<(usize, f64)> = all(1.0).into_iter().filter(|(i, _)| *i != 5).collect();
        let depression = &score(input(&answers)).scores["depression"];
        assert_eq!(depression.value, None);
        assert_eq!(depression.missing_values, Some(vec!["v_5".to_string()]));
        assert_eq!(depression.status, Some(ScoreStatus::Attention));
        assert_eq!(
            depression.interpretation.as_deref(),
            Some("at least 12 from the answered items: mild or higher")
        );
        for (key, below, at) in [
            ("depression", 8.0, 10.0),
            ("anxiety", 6.0, 8.0),
            ("stress", 14.0, 16.0),
        ] {
            let scale = scale(key);
            let below = incomplete_scale_score(scale, vec!["v_1".into()], below);
            assert_eq!(below.status, None, "{key}");
            assert_eq!(below.interpretation, None, "{key}");
            let at = incomplete_scale_score(scale, vec!["v_1".into()], at);
            assert_eq!(at.status, Some(ScoreStatus::Attention), "{key}");
            assert_eq!(at.value, None, "{key}");
        }
        // The top band needs no "or higher".
        let top = incomplete_scale_score(scale("anxiety"), vec!["v_20".into()], 36.0);
        assert_eq!(
            top.interpretation.as_deref(),
            Some("at least 36 from the answered items: extremely severe")
        );
    }

    #[test]
    fn item_21_above_zero_needs_attention() {
        let mut answers = all(0.0);
        let output = score(input(&answers));
        assert_eq!(output.attention, Some(Vec::new()));
        answers[20] = (21, 1.0);
        let output = score(input(&answers));
        assert_eq!(output.attention, Some(vec!["v_21".to_string()]));
        answers[20] = (21, 3.0);
        let output = score(input(&answers));
        assert_eq!(output.attention, Some(vec!["v_21".to_string()]));
        assert_eq!(output.alarm, None);
    }

    #[test]
    fn a_missing_item_leaves_only_its_scale_without_value() {
        let answers: Vec<(usize, f64)> = all(1.0).into_iter().filter(|(i, _)| *i != 5).collect();
        let output = score(input(&answers));
        assert_eq!(output.scores["depression"].value, None);
        assert_eq!(
            output.scores["depression"].missing_values,
            Some(vec!["v_5".to_string()])
        );
        assert_eq!(output.scores["anxiety"].value, Some(14.0));
        assert_eq!(output.scores["stress"].value, Some(14.0));
        assert_eq!(output.completion, Some(20.0 / 21.0));
    }

    #[test]
    fn an_unanswered_item_21_raises_nothing() {
        let answers: Vec<(usize, f64)> = all(0.0).into_iter().filter(|(i, _)| *i != 21).collect();
        let output = score(input(&answers));
        assert_eq!(output.attention, Some(Vec::new()));
        assert_eq!(
            output.scores["depression"].missing_values,
            Some(vec!["v_21".to_string()])
        );
    }

    #[test]
    fn nothing_answered_gives_no_values() {
        let output = score(input(&[]));
        for scale in &SCALES {
            assert_eq!(output.scores[scale.key].value, None);
            assert_eq!(
                output.scores[scale.key]
                    .missing_values
                    .as_ref()
                    .map(Vec::len),
                Some(7)
            );
        }
        assert_eq!(output.completion, Some(0.0));
        assert_eq!(output.attention, Some(Vec::new()));
    }

    #[test]
    fn manifest_names_the_questionnaire() {
        let manifest = manifest();
        assert_eq!(manifest.name, "dass21");
        assert_eq!(manifest.questionnaires, ["dass21"]);
    }
}
