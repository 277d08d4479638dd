//! Report calculator `score_series`: the scores of a dossier's responses as
//! time series, one per questionnaire and score, for the charts a clinician
//! or patient portal draws of the course of treatment (routine outcome
//! monitoring).
//!
//! No clinical rule is applied here: the values, t-scores, cut-offs and
//! tonality are those the scorers stored and the questionnaire definitions
//! carry. Rules:
//! - a point per response whose outcome holds a `value` for the score;
//!   scores without a value (too many missing answers, a failed scorer) are
//!   left out rather than drawn as zero;
//! - points in order of `completed_at` (by instant), then response id;
//! - series in order of questionnaire key, then the definition's score
//!   order; scores the definition does not list come last, by key;
//! - a series without points is left out.

use std::collections::BTreeMap;

use plugin_sdk::time as instant;
use plugin_sdk::{CalculatorInput, QuestionnaireInfo, ResponseInfo, Tonality};
use serde::Serialize;

/// The `results` of the calculation.
#[derive(Debug, Serialize)]
pub struct Results {
    /// One series per questionnaire and score that has at least one value.
    pub series: Vec<Series>,
}

/// The values of one score of one questionnaire over time.
#[derive(Debug, Serialize)]
pub struct Series {
    /// Questionnaire key.
    pub questionnaire_key: String,
    /// Score key.
    pub score_key: String,
    /// The score's label from the definition (else the one the host stored
    /// with the outcome, else the key).
    pub label: String,
    /// The definition's clinical cut-off, for a reference line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cutoff: Option<f64>,
    /// Which way the score points, when the definition is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tonality: Option<Tonality>,
    /// The values, oldest first.
    pub points: Vec<Point>,
}

/// One value of a score.
#[derive(Debug, Serialize)]
pub struct Point {
    /// Response id.
    pub response_id: i64,
    /// When the response was completed.
    pub completed_at: String,
    /// The score's value.
    pub value: f64,
    /// The score's t-score, when the scorer computed one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tscore: Option<f64>,
}

/// The points of each score, per questionnaire; labels the host stored.
type Collected<'a> = BTreeMap<&'a str, BTreeMap<&'a str, (Vec<Point>, Option<&'a str>)>>;

fn calculate(input: CalculatorInput) -> Result<Results, std::convert::Infallible> {
    let mut responses: Vec<&ResponseInfo> = input.responses.iter().collect();
    responses.sort_by(|a, b| instant::cmp(&a.completed_at, &b.completed_at).then(a.id.cmp(&b.id)));

    let mut collected: Collected = BTreeMap::new();
    for response in responses {
        for (score_key, score) in &response.outcome.scores {
            let Some(value) = score.value else { continue };
            let entry = collected
                .entry(&response.questionnaire_key)
                .or_default()
                .entry(score_key)
                .or_default();
            entry.0.push(Point {
                response_id: response.id,
                completed_at: response.completed_at.clone(),
                value,
                tscore: score.tscore,
            });
            if entry.1.is_none() {
                entry.1 = score.extra.get("label").and_then(|l| l.as_str());
            }
        }
    }

    let mut series = Vec::new();
    for (questionnaire_key, mut scores) in collected {
        let definition = input.questionnaires.get(questionnaire_key);
        for score_key in score_order(definition, &scores) {
            let Some((points, stored_label)) = scores.remove(score_key.as_str()) else {
                continue;
            };
            let info = definition.and_then(|d| d.score(&score_key));
            let label = match (info, stored_label) {
                (Some(info), _) if !info.label.is_empty() => info.label.clone(),
                (_, Some(label)) => label.to_string(),
                _ => score_key.clone(),
            };
            series.push(Series {
                questionnaire_key: questionnaire_key.to_string(),
                label,
                cutoff: info.and_then(|i| i.cutoff),
                tonality: info.map(|i| i.tonality),
                score_key,
                points,
            });
        }
    }
    Ok(Results { series })
}

/// The score keys with points: the definition's order first, then the
/// others by key.
fn score_order<T>(
    definition: Option<&QuestionnaireInfo>,
    scores: &BTreeMap<&str, T>,
) -> Vec<String> {
    let mut order: Vec<String> = definition
        .map(|d| d.scores.iter().map(|s| s.key.clone()).collect())
        .unwrap_or_default();
    order.retain(|key| scores.contains_key(key.as_str()));
    let listed = order.clone();
    order.extend(
        scores
            .keys()
            .filter(|key| !listed.iter().any(|l| l == *key))
            .map(|key| key.to_string()),
    );
    order
}

// Works on stored outcomes and score definitions alone.
plugin_sdk::export_calculator!(calculate, questions = false, answers = false);

#[cfg(test)]
mod tests {
    use super::*;
    use plugin_sdk::{OutcomeInfo, Score, ScoreInfo};

    fn response(
        id: i64,
        questionnaire: &str,
        at: &str,
        scores: &[(&str, Option<f64>)],
    ) -> ResponseInfo {
        ResponseInfo {
            id,
            questionnaire_key: questionnaire.into(),
            completed_at: at.into(),
            values: BTreeMap::new(),
            outcome: OutcomeInfo {
                scores: scores
                    .iter()
                    .map(|(k, v)| {
                        let score = Score {
                            value: *v,
                            ..Score::default()
                        };
                        (k.to_string(), score)
                    })
                    .collect(),
                ..OutcomeInfo::default()
            },
        }
    }

    fn definition(key: &str, scores: &[&str]) -> QuestionnaireInfo {
        QuestionnaireInfo {
            key: key.into(),
            name: String::new(),
            questions: Vec::new(),
            scores: scores
                .iter()
                .map(|k| ScoreInfo {
                    key: k.to_string(),
                    label: format!("{k} label"),
                    items: Vec::new(),
                    norm: None,
                    reliability: None,
                    sd: None,
                    cutoff: None,
                    tonality: Tonality::HigherIsWorse,
                    episode: None,
                })
                .collect(),
        }
    }

    fn run(responses: Vec<ResponseInfo>, questionnaires: Vec<QuestionnaireInfo>) -> Results {
        let input = CalculatorInput {
            responses,
            questionnaires: questionnaires
                .into_iter()
                .map(|q| (q.key.clone(), q))
                .collect(),
        };
        let Ok(results) = calculate(input);
        results
    }

    #[test]
    fn fixtures() {
        plugin_sdk::testing::check_fixtures(env!("CARGO_MANIFEST_DIR"), super::call_json);
    }

    #[test]
    fn no_responses_give_no_series() {
        assert!(
            run(Vec::new(), vec![definition("phq9", &["total"])])
                .series
                .is_empty()
        );
    }

    #[test]
    fn points_follow_the_instant_then_the_id() {
        let results = run(
            vec![
                response(3, "phq9", "2026-03-02T00:00:00Z", &[("total", Some(3.0))]),
                response(2, "phq9", "2026-03-01T12:00:00.5Z", &[("total", Some(2.0))]),
                response(
                    1,
                    "phq9",
                    "2026-03-01T13:00:00+01:00",
                    &[("total", Some(1.0))],
                ),
                response(0, "phq9", "2026-03-01T12:00:00Z", &[("total", Some(0.0))]),
            ],
            vec![definition("phq9", &["total"])],
        );
        let ids: Vec<i64> = results.series[0]
            .points
            .iter()
            .map(|p| p.response_id)
            .collect();
        assert_eq!(ids, [0, 1, 2, 3]);
    }

    #[test]
    fn scores_without_a_value_are_skipped() {
        let results = run(
            vec![
                response(1, "phq9", "2026-03-01T09:00:00Z", &[("total", None)]),
                response(2, "phq9", "2026-03-02T09:00:00Z", &[("total", Some(7.0))]),
                response(3, "who5", "2026-03-02T09:00:00Z", &[("raw", None)]),
            ],
            Vec::new(),
        );
        assert_eq!(results.series.len(), 1);
        assert_eq!(results.series[0].points.len(), 1);
        assert_eq!(results.series[0].label, "total");
    }

    #[test]
    fn series_follow_the_definition_then_the_key() {
        let results = run(
            vec![response(
                1,
                "who5",
                "2026-03-01T09:00:00Z",
                &[
                    ("extra", Some(1.0)),
                    ("percentage", Some(40.0)),
                    ("raw", Some(10.0)),
                ],
            )],
            vec![definition("who5", &["raw", "percentage"])],
        );
        let keys: Vec<&str> = results
            .series
            .iter()
            .map(|s| s.score_key.as_str())
            .collect();
        assert_eq!(keys, ["raw", "percentage", "extra"]);
        assert_eq!(results.series[0].label, "raw label");
    }
}
