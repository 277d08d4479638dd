//! Report calculator `episode_outcome`: how each episode of care ended on a
//! score, for the response and remission rates a clinic reports to its
//! board and to national benchmarks.
//!
//! **Episode** (per questionnaire and score, over the responses of one
//! dossier, oldest first): its *baseline* is the first completed response
//! with a value for the score; every later one up to `window_days[1]`
//! whole days after the baseline belongs to it; the first response after
//! that is the baseline of the next episode. Its *follow-up* is the last
//! response of the episode from `window_days[0]` to `window_days[1]` whole
//! days after the baseline, both included; a whole day is 24 hours
//! (`days_between` = elapsed seconds / 86,400, rounded down), whatever the
//! time zone. Responses without a value for the score (too many items
//! missing, scoring failed) are left out and listed, never read as 0.
//!
//! With a follow-up:
//! - **response**: the follow-up is lower than the baseline by at least
//!   `response_drop` (a fraction) of the baseline; not defined (null) for
//!   a baseline of 0 or below, where no relative drop exists;
//! - **remission**: the follow-up is below `remission_below`;
//! - both only for an episode whose baseline is at least
//!   `baseline_at_least`, when the definition gives it (the sources count
//!   only episodes that start at a clinical level; HEDIS DRR-E: a PHQ-9
//!   above 9); below it both are null, with a note;
//! - **reliable change** (Jacobson NS, Truax P. Clinical significance: a
//!   statistical approach to defining meaningful change in psychotherapy
//!   research. J Consult Clin Psychol 1991;59(1):12-19), with the score's
//!   `reliability` and `sd` from the definition, as `reliable_change` uses
//!   them: S_diff = √2 × SD × √(1 − r), RCI = (follow-up − baseline) /
//!   S_diff, reliable when |RCI| > 1.96; null when the definition lacks
//!   either number.
//!
//! The thresholds and the window come from the score's `episode` block in
//! the questionnaire definition, never from this code; each result names
//! the definition it applied (its `version` and `source`). A questionnaire
//! whose definition names none is reported with a `reason`.

mod episodes;

use std::collections::BTreeMap;

use plugin_sdk::time as instant;
use plugin_sdk::{
    CalculatorInput, EpisodeInfo, QuestionnaireInfo, ResponseInfo, ScoreInfo, Tonality,
};
use serde::Serialize;

pub use episodes::{Direction, Episode, Point, ReliableChange, Rules};

/// The `results` of the calculation.
#[derive(Debug, Serialize)]
pub struct Results {
    /// One entry per questionnaire and score with episode thresholds, by
    /// questionnaire key, then in the definition's score order; one entry
    /// with a `reason` for a questionnaire whose definition names none.
    pub scores: Vec<ScoreEpisodes>,
}

/// The episodes of one score of one questionnaire.
#[derive(Debug, Serialize)]
pub struct ScoreEpisodes {
    /// Questionnaire key.
    pub questionnaire_key: String,
    /// Score key; null when the definition names no episode thresholds.
    pub score_key: Option<String>,
    /// The definition of the metrics applied; null when there is none.
    pub definition: Option<Definition>,
    /// The episodes, oldest first.
    pub episodes: Vec<Episode>,
    /// Responses left out, and why.
    pub left_out: Vec<LeftOut>,
    /// Why there are no episodes: no definition, no thresholds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The definition of each metric, as the questionnaire definition states
/// it: versioned, with its source.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Definition {
    /// The version the questionnaire definition gives these thresholds.
    pub version: String,
    /// Response: a drop from baseline of at least this fraction of it.
    pub response: ResponseRule,
    /// Remission: a follow-up value below this.
    pub remission: RemissionRule,
    /// Which episodes are judged for response and remission.
    pub eligible: EligibleRule,
    /// The follow-up window in whole days after the baseline, both ends
    /// included.
    pub window_days: [u32; 2],
    /// Jacobson & Truax's reliable change with the definition's numbers;
    /// null when it lacks reliability or SD.
    pub reliable_change: Option<ReliableRule>,
    /// Where the thresholds and the window come from.
    pub source: String,
}

/// The response rule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResponseRule {
    /// The relative drop from baseline that counts as response.
    pub relative_drop_at_least: f64,
}

/// The remission rule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RemissionRule {
    /// A follow-up value below this is remission.
    pub below: f64,
}

/// Which episodes response and remission are judged for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EligibleRule {
    /// Episodes whose baseline is at least this; null: every episode.
    pub baseline_at_least: Option<f64>,
}

/// The reliable change rule and its numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReliableRule {
    /// Reliability r from the definition.
    pub reliability: f64,
    /// SD from the definition.
    pub sd: f64,
    /// |RCI| above this is reliable.
    pub rci_above: f64,
    /// 1.96 × S_diff, to two decimals: a difference larger than this is
    /// reliable.
    pub threshold: f64,
}

/// A response not used, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeftOut {
    /// The response.
    pub response_id: i64,
    /// Why it was left out.
    pub reason: String,
}

fn calculate(input: CalculatorInput) -> Result<Results, std::convert::Infallible> {
    let mut responses: Vec<&ResponseInfo> = input.responses.iter().collect();
    responses.sort_by(|a, b| instant::cmp(&a.completed_at, &b.completed_at).then(a.id.cmp(&b.id)));

    // Questionnaire key → its responses, oldest first.
    let mut by_questionnaire: BTreeMap<&str, Vec<&ResponseInfo>> = BTreeMap::new();
    for key in input.questionnaires.keys() {
        by_questionnaire.entry(key).or_default();
    }
    for response in responses {
        by_questionnaire
            .entry(&response.questionnaire_key)
            .or_default()
            .push(response);
    }

    let mut scores = Vec::new();
    for (key, responses) in by_questionnaire {
        let definition = input.questionnaires.get(key);
        let with_thresholds: Vec<(&ScoreInfo, &EpisodeInfo)> = definition
            .map(|d| {
                d.scores
                    .iter()
                    .filter_map(|s| s.episode.as_ref().map(|e| (s, e)))
                    .collect()
            })
            .unwrap_or_default();
        if with_thresholds.is_empty() {
            scores.push(without_thresholds(key, definition));
            continue;
        }
        for (score, episode) in with_thresholds {
            scores.push(score_episodes(key, score, episode, &responses));
        }
    }
    Ok(Results { scores })
}

fn without_thresholds(key: &str, definition: Option<&QuestionnaireInfo>) -> ScoreEpisodes {
    ScoreEpisodes {
        questionnaire_key: key.to_string(),
        score_key: None,
        definition: None,
        episodes: Vec::new(),
        left_out: Vec::new(),
        reason: Some(
            match definition {
                None => "no definition of the questionnaire",
                Some(_) => "the definition names no episode thresholds",
            }
            .to_string(),
        ),
    }
}

fn score_episodes(
    questionnaire_key: &str,
    score: &ScoreInfo,
    episode: &EpisodeInfo,
    responses: &[&ResponseInfo],
) -> ScoreEpisodes {
    let rules = Rules::new(episode, score.reliability, score.sd);
    let mut entry = ScoreEpisodes {
        questionnaire_key: questionnaire_key.to_string(),
        score_key: Some(score.key.clone()),
        definition: Some(definition(episode, &rules, score)),
        episodes: Vec::new(),
        left_out: Vec::new(),
        reason: None,
    };
    if score.tonality != Tonality::HigherIsWorse {
        entry.reason =
            Some("episode thresholds apply only to a score where higher is worse".to_string());
        return entry;
    }
    let mut points = Vec::new();
    for r in responses {
        let value = r.outcome.scores.get(&score.key).and_then(|s| s.value);
        let at = instant::parse(&r.completed_at);
        match (value, at) {
            (Some(value), Some(at)) if value.is_finite() => points.push(Point {
                response_id: r.id,
                completed_at: r.completed_at.clone(),
                value,
                at,
            }),
            (_, None) => entry.left_out.push(LeftOut {
                response_id: r.id,
                reason: "completed_at is not an RFC 3339 time".to_string(),
            }),
            _ => entry.left_out.push(LeftOut {
                response_id: r.id,
                reason: format!("no value for {}", score.key),
            }),
        }
    }
    entry.episodes = rules.episodes(&points);
    entry
}

fn definition(episode: &EpisodeInfo, rules: &Rules, score: &ScoreInfo) -> Definition {
    Definition {
        version: episode.version.clone(),
        response: ResponseRule {
            relative_drop_at_least: episode.response_drop,
        },
        remission: RemissionRule {
            below: episode.remission_below,
        },
        eligible: EligibleRule {
            baseline_at_least: episode.baseline_at_least,
        },
        window_days: episode.window_days,
        reliable_change: match (score.reliability, score.sd, rules.s_diff) {
            (Some(reliability), Some(sd), Some(s_diff)) => Some(ReliableRule {
                reliability,
                sd,
                rci_above: episodes::RELIABLE_RCI,
                threshold: episodes::round2(episodes::RELIABLE_RCI * s_diff),
            }),
            _ => None,
        },
        source: episode.source.clone(),
    }
}

// Works on stored outcomes and score definitions alone.
plugin_sdk::export_calculator!(calculate, questions = false, answers = false);

#[cfg(test)]
mod tests;
