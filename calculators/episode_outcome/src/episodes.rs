//! Episodes of one score: dividing a dossier's values into episodes,
//! choosing each one's follow-up, and judging response, remission and
//! reliable change. No JSON beyond the results it answers.

use plugin_sdk::EpisodeInfo;
use serde::Serialize;

/// |RCI| above this is a reliable change: the two-sided 95% bound of a
/// standard normal difference (Jacobson & Truax 1991).
pub const RELIABLE_RCI: f64 = 1.96;

/// Nanoseconds in a whole day (24 hours).
const DAY_NANOS: i128 = 86_400 * 1_000_000_000;

/// A score's value in one response.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    /// The response.
    pub response_id: i64,
    /// When it was completed, as the host sent it.
    pub completed_at: String,
    /// The score's value.
    pub value: f64,
    /// `completed_at` as seconds and nanoseconds since 1970.
    #[serde(skip)]
    pub at: (i64, u32),
}

/// Which way the score moved from baseline to follow-up (higher is worse).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Lower: towards health.
    Improved,
    /// The same.
    Unchanged,
    /// Higher: away from health.
    Deteriorated,
}

/// Reliable change from baseline to follow-up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReliableChange {
    /// Follow-up − baseline, to two decimals.
    pub difference: f64,
    /// The reliable change index, to two decimals.
    pub rci: f64,
    /// |RCI| > 1.96 (decided before rounding).
    pub reliable: bool,
    /// The sign of the difference.
    pub direction: Direction,
}

/// One episode of care.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Episode {
    /// The first response of the episode.
    pub baseline: Point,
    /// The last response in the window; null when there is none.
    pub follow_up: Option<Point>,
    /// Whole days from baseline to follow-up; null without follow-up.
    pub days_between: Option<i64>,
    /// Responses with a value in the episode, the baseline included.
    pub responses: usize,
    /// How many of them lie in the window.
    pub responses_in_window: usize,
    /// (baseline − follow-up) / baseline, to two decimals; null without
    /// follow-up or with a baseline of 0 or below.
    pub relative_drop: Option<f64>,
    /// A drop of at least the definition's fraction; null without
    /// follow-up, with a baseline of 0 or below, or with a baseline below
    /// the definition's eligibility cut-off.
    pub response: Option<bool>,
    /// A follow-up below the definition's cut-off; null without follow-up
    /// or with a baseline below the eligibility cut-off.
    pub remission: Option<bool>,
    /// Null without follow-up, or when the definition lacks reliability
    /// or SD.
    pub reliable_change: Option<ReliableChange>,
    /// Why a metric is null.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The rules of one score: the definition's thresholds and window, and
/// S_diff when the definition allows reliable change.
#[derive(Debug, Clone, PartialEq)]
pub struct Rules {
    response_drop: f64,
    remission_below: f64,
    baseline_at_least: Option<f64>,
    window: [i64; 2],
    /// √2 × SD × √(1 − r), when both are given and usable.
    pub s_diff: Option<f64>,
}

impl Rules {
    /// The rules of a score with these thresholds, reliability and SD.
    pub fn new(episode: &EpisodeInfo, reliability: Option<f64>, sd: Option<f64>) -> Rules {
        // Jacobson & Truax (1991): SE = SD √(1 − r), S_diff = √2 SE. A
        // reliability of 1 or more, or an SD not above 0, gives none.
        let s_diff = match (reliability, sd) {
            (Some(r), Some(sd)) if (0.0..1.0).contains(&r) && sd.is_finite() && sd > 0.0 => {
                Some(std::f64::consts::SQRT_2 * sd * (1.0 - r).sqrt())
            }
            _ => None,
        };
        Rules {
            response_drop: episode.response_drop,
            remission_below: episode.remission_below,
            baseline_at_least: episode.baseline_at_least,
            window: episode.window_days.map(i64::from),
            s_diff,
        }
    }

    /// The episodes of `points` (oldest first).
    pub fn episodes(&self, points: &[Point]) -> Vec<Episode> {
        let mut episodes = Vec::new();
        let mut start = 0;
        while let Some(baseline) = points.get(start) {
            // Every later point up to the window's end belongs to it.
            let end = points[start + 1..]
                .iter()
                .position(|p| days_between(baseline, p) > self.window[1])
                .map_or(points.len(), |n| start + 1 + n);
            let in_window: Vec<&Point> = points[start + 1..end]
                .iter()
                .filter(|p| days_between(baseline, p) >= self.window[0])
                .collect();
            episodes.push(self.judge(
                baseline,
                in_window.last().copied(),
                end - start,
                in_window.len(),
            ));
            start = end;
        }
        episodes
    }

    fn judge(
        &self,
        baseline: &Point,
        follow_up: Option<&Point>,
        responses: usize,
        responses_in_window: usize,
    ) -> Episode {
        let mut episode = Episode {
            baseline: baseline.clone(),
            follow_up: follow_up.cloned(),
            days_between: follow_up.map(|f| days_between(baseline, f)),
            responses,
            responses_in_window,
            relative_drop: None,
            response: None,
            remission: None,
            reliable_change: None,
            note: None,
        };
        let Some(follow_up) = follow_up else {
            episode.note = Some("no follow-up in the window".to_string());
            return episode;
        };
        let (b, f) = (baseline.value, follow_up.value);
        if b > 0.0 {
            episode.relative_drop = Some(round2((b - f) / b));
        }
        match self.baseline_at_least {
            // The sources judge only episodes that start at or above a
            // clinical cut-off (NCQA HEDIS DRR-E: a PHQ-9 above 9); one
            // that starts below it is in no numerator or denominator.
            Some(at_least) if b < at_least => {
                episode.note = Some(format!(
                    "baseline below {at_least}: not eligible for response or remission"
                ));
            }
            _ => {
                if b > 0.0 {
                    // Multiplied out: no rounding of the quotient decides it.
                    episode.response = Some(b - f >= self.response_drop * b);
                } else {
                    episode.note = Some(
                        "baseline of 0: a relative drop, and so response, is not defined"
                            .to_string(),
                    );
                }
                episode.remission = Some(f < self.remission_below);
            }
        }
        episode.reliable_change = self.s_diff.map(|s_diff| {
            let difference = f - b;
            let rci = difference / s_diff;
            ReliableChange {
                difference: round2(difference),
                rci: round2(rci),
                reliable: rci.abs() > RELIABLE_RCI,
                direction: match difference.partial_cmp(&0.0) {
                    Some(std::cmp::Ordering::Less) => Direction::Improved,
                    Some(std::cmp::Ordering::Greater) => Direction::Deteriorated,
                    _ => Direction::Unchanged,
                },
            }
        });
        episode
    }
}

/// Whole days (24-hour periods) from `a` to `b`, rounded down.
fn days_between(a: &Point, b: &Point) -> i64 {
    let nanos = |(s, n): (i64, u32)| i128::from(s) * 1_000_000_000 + i128::from(n);
    let days = (nanos(b.at) - nanos(a.at)).div_euclid(DAY_NANOS);
    i64::try_from(days).unwrap_or(i64::MAX)
}

/// Rounds to two decimals, halves away from zero; never `-0.0`.
pub fn round2(x: f64) -> f64 {
    let rounded = (x * 100.0).round() / 100.0;
    if rounded == 0.0 { 0.0 } else { rounded }
}
