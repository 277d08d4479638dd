//! The Jacobson & Truax (1991) reliable change index and clinical
//! significance for one pair of values; no knowledge of responses or JSON
//! beyond the comparison it answers.

use plugin_sdk::{ScoreInfo, Tonality};
use serde::Serialize;

/// |RCI| above this is a reliable change: the two-sided 95% bound of a
/// standard normal difference (Jacobson & Truax 1991).
pub const RELIABLE_RCI: f64 = 1.96;

/// Which way a score moved, given its tonality.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Moved towards health.
    Improved,
    /// No difference.
    Unchanged,
    /// Moved away from health.
    Deteriorated,
}

/// Jacobson & Truax's classification of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// Reliable improvement that crossed the cut-off into the healthy range.
    Recovered,
    /// Reliable improvement that did not (or, without a cut-off, could not
    /// be shown to) cross the cut-off.
    Improved,
    /// No reliable change.
    Unchanged,
    /// Reliable deterioration.
    Deteriorated,
}

/// One comparison of a score between two responses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The earlier response.
    pub from_response_id: i64,
    /// When the earlier response was completed.
    pub from_completed_at: String,
    /// The score in the earlier response.
    pub from_value: f64,
    /// The later response.
    pub to_response_id: i64,
    /// When the later response was completed.
    pub to_completed_at: String,
    /// The score in the later response.
    pub to_value: f64,
    /// to − from, to two decimals.
    pub difference: f64,
    /// The reliable change index, to two decimals.
    pub rci: f64,
    /// |RCI| > 1.96 (decided before rounding).
    pub reliable: bool,
    /// The sign of the difference, read with the score's tonality.
    pub direction: Direction,
    /// Reliable improvement from the clinical into the healthy range; null
    /// when the definition has no cut-off.
    pub clinically_significant: Option<bool>,
    /// Recovered, improved, unchanged or deteriorated.
    pub category: Category,
}

/// What the method needs of a score's definition.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Method {
    /// S_diff = √2 × SD × √(1 − r).
    pub s_diff: f64,
    /// The clinical cut-off, if any.
    pub cutoff: Option<f64>,
    /// Which way the score points.
    pub tonality: Tonality,
}

impl Method {
    /// The method for a score, or why the definition does not allow it.
    pub fn from_definition(info: &ScoreInfo) -> Result<Method, String> {
        let (r, sd) = match (info.reliability, info.sd) {
            (Some(r), Some(sd)) => (r, sd),
            (None, Some(_)) => return Err("no reliability in the definition".into()),
            (Some(_), None) => return Err("no sd in the definition".into()),
            (None, None) => return Err("no reliability and no sd in the definition".into()),
        };
        // r = 1 would make every difference reliable (S_diff = 0); r < 0
        // is not a reliability.
        if !(0.0..1.0).contains(&r) {
            return Err("reliability in the definition is not at least 0 and below 1".into());
        }
        if !(sd.is_finite() && sd > 0.0) {
            return Err("sd in the definition is not positive".into());
        }
        // Jacobson & Truax (1991): SE = s₁ √(1 − r), S_diff = √(2 SE²).
        let se = sd * (1.0 - r).sqrt();
        Ok(Method {
            s_diff: std::f64::consts::SQRT_2 * se,
            cutoff: info.cutoff.filter(|c| c.is_finite()),
            tonality: info.tonality,
        })
    }

    /// 1.96 × S_diff: a difference larger than this (either way) is a
    /// reliable change.
    pub fn threshold(&self) -> f64 {
        RELIABLE_RCI * self.s_diff
    }

    /// Compares the values of two responses, each given as
    /// (response id, completed_at, value).
    pub fn compare(&self, from: (i64, &str, f64), to: (i64, &str, f64)) -> Comparison {
        let difference = to.2 - from.2;
        let rci = difference / self.s_diff;
        let reliable = rci.abs() > RELIABLE_RCI;
        let direction = match (difference.partial_cmp(&0.0), self.tonality) {
            (Some(std::cmp::Ordering::Less), Tonality::HigherIsWorse)
            | (Some(std::cmp::Ordering::Greater), Tonality::HigherIsBetter) => Direction::Improved,
            (Some(std::cmp::Ordering::Greater), Tonality::HigherIsWorse)
            | (Some(std::cmp::Ordering::Less), Tonality::HigherIsBetter) => Direction::Deteriorated,
            _ => Direction::Unchanged,
        };
        let reliable_improvement = reliable && direction == Direction::Improved;
        let crossed = self
            .cutoff
            .map(|c| self.is_clinical(from.2, c) && !self.is_clinical(to.2, c));
        let clinically_significant = crossed.map(|crossed| reliable_improvement && crossed);
        let category = match (reliable, direction) {
            (true, Direction::Improved) if clinically_significant == Some(true) => {
                Category::Recovered
            }
            (true, Direction::Improved) => Category::Improved,
            (true, Direction::Deteriorated) => Category::Deteriorated,
            _ => Category::Unchanged,
        };
        Comparison {
            from_response_id: from.0,
            from_completed_at: from.1.to_string(),
            from_value: from.2,
            to_response_id: to.0,
            to_completed_at: to.1.to_string(),
            to_value: to.2,
            difference: round2(difference),
            rci: round2(rci),
            reliable,
            direction,
            clinically_significant,
            category,
        }
    }

    /// Whether a value is in the clinical range: at or above the cut-off
    /// when higher is worse, below it when higher is better (the cut-off is
    /// the first value of the clinical, resp. healthy, range).
    fn is_clinical(&self, value: f64, cutoff: f64) -> bool {
        match self.tonality {
            Tonality::HigherIsWorse => value >= cutoff,
            Tonality::HigherIsBetter => value < cutoff,
        }
    }
}

/// Rounds to two decimals, halves away from zero; never `-0.0`.
pub fn round2(x: f64) -> f64 {
    let rounded = (x * 100.0).round() / 100.0;
    if rounded == 0.0 { 0.0 } else { rounded }
}
