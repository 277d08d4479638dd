//! Pure helpers for scoring rules: sums and means over answered items,
//! prorating, reversed items, band lookups, linear t-scores and rounding.
//!
//! The helpers work on item values as [`ScorerInput::values_of`] returns
//! them: one `Option<f64>` per item, `None` when the item is unanswered.
//! None of them treats an unanswered item as 0; a rule that does so has to
//! say it explicitly (and cite the manual that allows it).
//!
//! ```
//! use plugin_sdk::scoring::{self, Band};
//!
//! // A four-item scale, item 3 reversed on a 0–4 scale, prorated when at
//! // most one item is missing.
//! let values = [Some(2.0), None, Some(1.0), Some(3.0)];
//! let values: Vec<Option<f64>> = values
//!     .iter()
//!     .enumerate()
//!     .map(|(i, v)| if i == 2 { v.map(|v| scoring::reverse(v, 0.0, 4.0)) } else { *v })
//!     .collect();
//! let total = scoring::prorated_sum(&values, 3).expect("three of four answered");
//! assert_eq!(scoring::round_to(total, 1), 10.7); // (2 + 3 + 3) / 3 × 4
//!
//! const BANDS: [Band; 3] = [
//!     Band::new(0.0, "low"),
//!     Band::new(8.0, "moderate"),
//!     Band::new(12.0, "high"),
//! ];
//! assert_eq!(scoring::band(total, &BANDS), Some("moderate"));
//! ```

use crate::contract::{Norm, Score, ScorerInput};

/// Sum of all values; `None` when any is missing. The sum of no values is
/// `Some(0.0)`.
pub fn sum(values: &[Option<f64>]) -> Option<f64> {
    values.iter().copied().sum()
}

/// Sum of the answered values, skipping the missing ones; 0 when none is
/// answered. Use it only where the instrument's manual says unanswered items
/// count as 0, or for a partial sum you report next to [`missing`].
pub fn sum_answered(values: &[Option<f64>]) -> f64 {
    values.iter().flatten().sum()
}

/// Sum of the values with each unanswered one counted as `fill`. With an
/// item's lowest possible value this is the least the complete sum can
/// still be (a floor); with its highest, the most (a ceiling). For
/// deciding what a response with missing items has certainly reached,
/// never as the score's value.
pub fn sum_with_missing_as(values: &[Option<f64>], fill: f64) -> f64 {
    values.iter().map(|v| v.unwrap_or(fill)).sum()
}

/// The number of answered values.
pub fn answered(values: &[Option<f64>]) -> usize {
    values.iter().filter(|v| v.is_some()).count()
}

/// Mean of the answered values; `None` when none is answered.
pub fn mean(values: &[Option<f64>]) -> Option<f64> {
    match answered(values) {
        0 => None,
        n => Some(sum_answered(values) / n as f64),
    }
}

/// The sum prorated over missing items: the mean of the answered values
/// times the number of items. `None` when fewer than `min_answered` values
/// (or none at all) are answered. When every item is answered this is the
/// plain sum.
///
/// Manuals state the rule as "at most k items missing"; for `n` items pass
/// `min_answered = n - k`.
pub fn prorated_sum(values: &[Option<f64>], min_answered: usize) -> Option<f64> {
    if answered(values) < min_answered {
        return None;
    }
    if answered(values) == values.len() {
        // Exactly the sum, without the rounding error of mean × n.
        return sum(values);
    }
    mean(values).map(|m| m * values.len() as f64)
}

/// Answered values / all values, from 0 to 1; 1 when there are no values.
pub fn completion(values: &[Option<f64>]) -> f64 {
    if values.is_empty() {
        return 1.0;
    }
    answered(values) as f64 / values.len() as f64
}

/// The number of answered values at or above `threshold`.
pub fn count_at_or_above(values: &[Option<f64>], threshold: f64) -> usize {
    values.iter().flatten().filter(|&&v| v >= threshold).count()
}

/// The keys among `keys` whose questions are unanswered (or do not exist),
/// in the order given: what [`Score::missing`](crate::Score::missing)
/// reports.
pub fn missing<S: AsRef<str>>(input: &ScorerInput, keys: &[S]) -> Vec<String> {
    keys.iter()
        .map(|k| k.as_ref())
        .filter(|k| input.value(k).is_none())
        .map(String::from)
        .collect()
}

/// The keys among `keys` whose value is at least `threshold`, in the order
/// given: the usual shape of an alarm or attention rule.
pub fn keys_at_or_above<S: AsRef<str>>(
    input: &ScorerInput,
    keys: &[S],
    threshold: f64,
) -> Vec<String> {
    keys.iter()
        .map(|k| k.as_ref())
        .filter(|k| input.value(k).is_some_and(|v| v >= threshold))
        .map(String::from)
        .collect()
}

/// The value of a reversed item on a `min`..=`max` scale: `min + max -
/// value`, so on a 0–4 scale 0 becomes 4 and 1 becomes 3.
pub fn reverse(value: f64, min: f64, max: f64) -> f64 {
    min + max - value
}

/// One band of a banded interpretation: it starts at `from` (inclusive)
/// and runs up to the next band's `from` (exclusive); the last band is open
/// at the top.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Band {
    /// The lowest value in the band.
    pub from: f64,
    /// The band's text, e.g. `"moderate"`.
    pub label: &'static str,
}

impl Band {
    /// A band starting at `from`; usable in `const` tables.
    pub const fn new(from: f64, label: &'static str) -> Band {
        Band { from, label }
    }
}

/// The label of the band `value` falls in. `bands` must be in ascending
/// order of `from`; each band runs from its `from` (inclusive) to the next
/// band's `from` (exclusive), and the last band has no upper end. A value
/// below the first band, or NaN, gives `None`.
///
/// Published bands are usually written as closed integer ranges ("0–4
/// minimal, 5–9 mild"); give each band the lowest value of its range
/// (`Band::new(5.0, "mild")`) so prorated, non-integer scores fall in the
/// band whose range starts at or below them.
pub fn band(value: f64, bands: &[Band]) -> Option<&'static str> {
    bands
        .iter()
        .take_while(|b| b.from <= value)
        .last()
        .map(|b| b.label)
}

/// The band a sum with unanswered items has certainly reached, given its
/// `floor` (see [`sum_with_missing_as`]): the floor's band, with "or
/// higher" below the top band, since the missing answers can only raise
/// the sum. `None` below the first band.
pub fn band_at_least(floor: f64, bands: &[Band]) -> Option<String> {
    let label = band(floor, bands)?;
    let top = bands.last().is_some_and(|b| floor >= b.from);
    Some(if top {
        label.to_string()
    } else {
        format!("{label} or higher")
    })
}

/// The linear t-score of `raw` against a norm population: `50 + 10 × (raw −
/// mean) / sd`.
///
/// This is the linear T convention of the instruments we ship
/// (questionnaires.md, "What a scorer may produce": T = 50 + 10 × (raw − M)
/// / SD of the norm group); it is not a normalised (area) T. The norm's `sd`
/// must be positive; with `sd` 0 the result is infinite or NaN, so a scorer
/// checks `is_finite` before reporting it.
pub fn tscore(raw: f64, norm: Norm) -> f64 {
    50.0 + 10.0 * (raw - norm.mean) / norm.sd
}

/// Sets `score.tscore` (the linear T of `raw` against `norm`, to one
/// decimal) and `score.tscore_interpretation` (its band, [`tscore_band`])
/// when there is a norm with a positive SD; leaves both unset otherwise.
/// The norm is the one the questionnaire definition carries
/// (`input.questionnaire.score(key).and_then(|s| s.norm)`), so a site
/// chooses its reference group without rebuilding the scorer.
pub fn set_tscore(score: &mut Score, raw: f64, norm: Option<Norm>) {
    let Some(t) = norm
        .filter(|n| n.sd > 0.0)
        .map(|n| tscore(raw, n))
        .filter(|t| t.is_finite())
    else {
        return;
    };
    let t = round_to(t, 1);
    score.tscore = Some(t);
    score.tscore_interpretation = Some(tscore_band(t).to_string());
}

/// The t-score bands of questionnaires.md, each starting at its lower bound
/// inclusive: below 30 very low, 30 up to 40 low, 40 up to 60 average, 60 up
/// to 70 high, 70 and above very high.
pub const TSCORE_BANDS: [Band; 5] = [
    Band::new(f64::NEG_INFINITY, "very low"),
    Band::new(30.0, "low"),
    Band::new(40.0, "average"),
    Band::new(60.0, "high"),
    Band::new(70.0, "very high"),
];

/// The band of a t-score ([`TSCORE_BANDS`]): `"very low"` (< 30), `"low"`
/// (30 ≤ t < 40), `"average"` (40 ≤ t < 60), `"high"` (60 ≤ t < 70) or
/// `"very high"` (≥ 70). A t exactly on a boundary belongs to the band above
/// it: 40 is average, 60 is high, 70 is very high. Negative t-scores are
/// very low. NaN is not a t-score (see [`tscore`]); it gives `"very low"`.
pub fn tscore_band(t: f64) -> &'static str {
    band(t, &TSCORE_BANDS).unwrap_or("very low")
}

/// `value` rounded to `decimals` decimal places, halves away from zero (as
/// [`f64::round`]). A decimal literal that is not exact in binary rounds by
/// its binary value: `round_to(1.005, 2)` is 1.0, because 1.005 is stored
/// as 1.00499…. Values too large to carry that many decimals come back
/// unchanged. The result is never negative zero (which JSON would show as
/// `-0.0`).
pub fn round_to(value: f64, decimals: u32) -> f64 {
    // 2^52: from here on every f64 is an integer, so there is nothing to
    // round and scaling could only lose precision.
    const EXACT: f64 = 4_503_599_627_370_496.0;
    let factor = 10f64.powi(decimals.min(i32::MAX as u32) as i32);
    let scaled = value * factor;
    if !scaled.is_finite() || scaled.abs() >= EXACT {
        return value;
    }
    let rounded = scaled.round() / factor;
    if rounded == 0.0 { 0.0 } else { rounded }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::contract::QuestionnaireInfo;

    fn input(values: &[(&str, Option<f64>)]) -> ScorerInput {
        ScorerInput {
            questionnaire: QuestionnaireInfo {
                key: "test".into(),
                name: String::new(),
                questions: Vec::new(),
                scores: Vec::new(),
            },
            answers: BTreeMap::new(),
            values: values.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            flags: BTreeMap::new(),
            textvars: BTreeMap::new(),
            completed_at: "2024-01-01T00:00:00Z".into(),
            respondent_type: "patient".into(),
            patient: Default::default(),
            typed_answers: BTreeMap::new(),
            enabled: BTreeMap::new(),
        }
    }

    const NONE: [Option<f64>; 0] = [];

    #[test]
    fn sum_needs_every_value() {
        assert_eq!(sum(&[Some(1.0), Some(2.5)]), Some(3.5));
        assert_eq!(sum(&[Some(1.0), None]), None);
        assert_eq!(sum(&[None, None]), None);
        assert_eq!(sum(&NONE), Some(0.0));
    }

    #[test]
    fn sum_answered_skips_missing_values() {
        assert_eq!(sum_answered(&[Some(1.0), None, Some(2.0)]), 3.0);
        assert_eq!(sum_answered(&[None, None]), 0.0);
        assert_eq!(sum_answered(&NONE), 0.0);
    }

    #[test]
    fn answered_counts_present_values() {
        assert_eq!(answered(&[Some(0.0), None, Some(3.0)]), 2);
        assert_eq!(answered(&[None]), 0);
        assert_eq!(answered(&NONE), 0);
    }

    #[test]
    fn mean_of_answered_values() {
        assert_eq!(mean(&[Some(1.0), None, Some(2.0)]), Some(1.5));
        assert_eq!(mean(&[Some(0.0)]), Some(0.0));
        assert_eq!(mean(&[None, None]), None);
        assert_eq!(mean(&NONE), None);
    }

    #[test]
    fn prorated_sum_scales_the_mean_to_all_items() {
        // 3 of 4 answered, mean 2 → 8.
        let values = [Some(1.0), Some(2.0), None, Some(3.0)];
        assert_eq!(prorated_sum(&values, 3), Some(8.0));
        // Exactly at the minimum is enough; one more is not.
        assert_eq!(prorated_sum(&values, 4), None);
        // Complete: the plain sum.
        assert_eq!(prorated_sum(&[Some(0.1), Some(0.2)], 2), Some(0.1 + 0.2));
        assert_eq!(prorated_sum(&[Some(0.1), Some(0.2)], 0), Some(0.1 + 0.2));
        // Nothing answered never prorates, even with a minimum of 0.
        assert_eq!(prorated_sum(&[None, None], 0), None);
        assert_eq!(prorated_sum(&NONE, 0), Some(0.0));
        assert_eq!(prorated_sum(&NONE, 1), None);
    }

    #[test]
    fn completion_is_the_answered_fraction() {
        assert_eq!(completion(&[Some(1.0), None, Some(2.0), None]), 0.5);
        assert_eq!(completion(&[None]), 0.0);
        assert_eq!(completion(&[Some(0.0)]), 1.0);
        assert_eq!(completion(&NONE), 1.0);
    }

    #[test]
    fn count_at_or_above_includes_the_threshold() {
        let values = [Some(0.0), Some(1.0), Some(2.0), None, Some(3.0)];
        assert_eq!(count_at_or_above(&values, 2.0), 2);
        assert_eq!(count_at_or_above(&values, 0.0), 4);
        assert_eq!(count_at_or_above(&values, 3.5), 0);
        assert_eq!(count_at_or_above(&[None], f64::NEG_INFINITY), 0);
        assert_eq!(count_at_or_above(&NONE, 0.0), 0);
    }

    #[test]
    fn missing_lists_unanswered_and_unknown_keys_in_order() {
        let input = input(&[("v_1", Some(1.0)), ("v_2", None), ("v_3", Some(0.0))]);
        assert_eq!(
            missing(&input, &["v_3", "v_2", "v_9", "v_1"]),
            vec!["v_2", "v_9"]
        );
        assert!(missing(&input, &["v_1"]).is_empty());
        assert!(missing::<&str>(&input, &[]).is_empty());
        let owned = vec![String::from("v_2")];
        assert_eq!(missing(&input, &owned), vec!["v_2"]);
    }

    #[test]
    fn keys_at_or_above_includes_the_threshold() {
        let input = input(&[("v_1", Some(1.0)), ("v_2", None), ("v_3", Some(2.0))]);
        let keys = ["v_1", "v_2", "v_3", "v_4"];
        assert_eq!(keys_at_or_above(&input, &keys, 1.0), vec!["v_1", "v_3"]);
        assert_eq!(keys_at_or_above(&input, &keys, 2.0), vec!["v_3"]);
        assert!(keys_at_or_above(&input, &keys, 2.5).is_empty());
    }

    #[test]
    fn reverse_mirrors_the_scale() {
        assert_eq!(reverse(0.0, 0.0, 4.0), 4.0);
        assert_eq!(reverse(1.0, 0.0, 4.0), 3.0);
        assert_eq!(reverse(2.0, 0.0, 4.0), 2.0);
        assert_eq!(reverse(1.0, 1.0, 5.0), 5.0);
        assert_eq!(reverse(5.0, 1.0, 5.0), 1.0);
    }

    const PHQ9_BANDS: [Band; 5] = [
        Band::new(0.0, "minimal"),
        Band::new(5.0, "mild"),
        Band::new(10.0, "moderate"),
        Band::new(15.0, "moderately severe"),
        Band::new(20.0, "severe"),
    ];

    #[test]
    fn band_starts_inclusive_and_runs_to_the_next_start() {
        assert_eq!(band(0.0, &PHQ9_BANDS), Some("minimal"));
        assert_eq!(band(4.0, &PHQ9_BANDS), Some("minimal"));
        assert_eq!(band(4.99, &PHQ9_BANDS), Some("minimal"));
        assert_eq!(band(5.0, &PHQ9_BANDS), Some("mild"));
        assert_eq!(band(9.0, &PHQ9_BANDS), Some("mild"));
        assert_eq!(band(10.0, &PHQ9_BANDS), Some("moderate"));
        assert_eq!(band(19.5, &PHQ9_BANDS), Some("moderately severe"));
        assert_eq!(band(20.0, &PHQ9_BANDS), Some("severe"));
        assert_eq!(band(1000.0, &PHQ9_BANDS), Some("severe"));
    }

    #[test]
    fn band_below_the_first_or_without_bands_is_none() {
        assert_eq!(band(-0.5, &PHQ9_BANDS), None);
        assert_eq!(band(f64::NAN, &PHQ9_BANDS), None);
        assert_eq!(band(3.0, &[]), None);
    }

    #[test]
    fn tscore_is_linear_in_the_norm() {
        let norm = Norm {
            mean: 10.0,
            sd: 5.0,
        };
        assert_eq!(tscore(10.0, norm), 50.0);
        assert_eq!(tscore(15.0, norm), 60.0);
        assert_eq!(tscore(2.5, norm), 35.0);
        // Far below the norm the t-score goes negative.
        assert_eq!(tscore(-20.0, norm), -10.0);
        let degenerate = Norm { mean: 1.0, sd: 0.0 };
        assert!(!tscore(2.0, degenerate).is_finite());
        assert!(tscore(1.0, degenerate).is_nan());
    }

    #[test]
    fn missing_values_count_as_the_fill_for_floors_and_ceilings() {
        let values = [Some(2.0), None, Some(1.0), None];
        assert_eq!(sum_with_missing_as(&values, 0.0), 3.0);
        assert_eq!(sum_with_missing_as(&values, 5.0), 13.0);
        assert_eq!(sum_with_missing_as(&[], 5.0), 0.0);
    }

    #[test]
    fn a_floor_reaches_its_band_or_higher_except_at_the_top() {
        assert_eq!(
            band_at_least(12.0, &PHQ9_BANDS).as_deref(),
            Some("moderate or higher")
        );
        assert_eq!(band_at_least(20.0, &PHQ9_BANDS).as_deref(), Some("severe"));
        assert_eq!(band_at_least(-1.0, &PHQ9_BANDS), None);
    }

    #[test]
    fn set_tscore_rounds_and_bands_and_skips_a_missing_or_degenerate_norm() {
        let norm = Norm {
            mean: 2.91,
            sd: 3.52,
        };
        let mut score = Score::of(10.0);
        set_tscore(&mut score, 10.0, Some(norm));
        // 50 + 10 × 7.09 / 3.52 = 70.14
        assert_eq!(score.tscore, Some(70.1));
        assert_eq!(score.tscore_interpretation.as_deref(), Some("very high"));
        for norm in [None, Some(Norm { mean: 1.0, sd: 0.0 })] {
            let mut score = Score::of(10.0);
            set_tscore(&mut score, 10.0, norm);
            assert_eq!(score.tscore, None);
            assert_eq!(score.tscore_interpretation, None);
        }
    }

    #[test]
    fn tscore_band_boundaries_belong_to_the_band_above() {
        assert_eq!(tscore_band(-10.0), "very low");
        assert_eq!(tscore_band(0.0), "very low");
        assert_eq!(tscore_band(29.999), "very low");
        assert_eq!(tscore_band(30.0), "low");
        assert_eq!(tscore_band(39.9), "low");
        assert_eq!(tscore_band(40.0), "average");
        assert_eq!(tscore_band(50.0), "average");
        assert_eq!(tscore_band(59.9), "average");
        assert_eq!(tscore_band(60.0), "high");
        assert_eq!(tscore_band(69.9), "high");
        assert_eq!(tscore_band(70.0), "very high");
        assert_eq!(tscore_band(120.0), "very high");
        assert_eq!(tscore_band(f64::NEG_INFINITY), "very low");
        assert_eq!(tscore_band(f64::INFINITY), "very high");
        assert_eq!(tscore_band(f64::NAN), "very low");
    }

    #[test]
    fn round_to_rounds_halves_away_from_zero() {
        assert_eq!(round_to(13.333_333, 1), 13.3);
        assert_eq!(round_to(2.25, 1), 2.3);
        assert_eq!(round_to(-2.25, 1), -2.3);
        assert_eq!(round_to(2.5, 0), 3.0);
        assert_eq!(round_to(1234.5678, 2), 1234.57);
        assert_eq!(round_to(7.0, 3), 7.0);
    }

    #[test]
    fn round_to_edge_cases() {
        // Never negative zero.
        let r = round_to(-0.004, 2);
        assert_eq!(r, 0.0);
        assert!(r.is_sign_positive());
        assert!(round_to(-0.0, 0).is_sign_positive());
        // Too large to scale: unchanged.
        assert_eq!(round_to(1e300, 10), 1e300);
        assert_eq!(round_to(0.1, u32::MAX), 0.1);
        assert_eq!(round_to(1e17 + 0.0, 2), 1e17);
        assert!(round_to(f64::NAN, 2).is_nan());
        assert_eq!(round_to(f64::INFINITY, 2), f64::INFINITY);
    }
}
