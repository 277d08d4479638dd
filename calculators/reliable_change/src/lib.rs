//! Report calculator `reliable_change`: whether a patient's scores changed
//! more than measurement error explains, and whether the change brought
//! them from the clinical into the healthy range, for clinicians evaluating
//! a course of treatment and for outcome reports.
//!
//! Method: Jacobson NS, Truax P. Clinical significance: a statistical
//! approach to defining meaningful change in psychotherapy research.
//! J Consult Clin Psychol 1991;59(1):12-19.
//! - standard error of measurement SE = SD × √(1 − r), standard error of
//!   the difference S_diff = √2 × SE, reliable change index
//!   RCI = (x₂ − x₁) / S_diff; the change is reliable when |RCI| > 1.96
//!   (the 95% bound of a change due to measurement error alone);
//! - clinically significant change: a reliable improvement that also
//!   crosses the cut-off from the clinical into the healthy range;
//! - categories: recovered (both), improved (reliable improvement only),
//!   unchanged (not reliable), deteriorated (reliable deterioration).
//!
//! SD, reliability r, cut-off and tonality come from each score's entry in
//! the questionnaire definition, which cites their sources. The cut-off is
//! the definition's clinical cut-off: for scores where higher is worse,
//! values at or above it are clinical; where higher is better, values
//! below it are. A score whose definition lacks what the method needs is
//! reported with a `reason` instead of comparisons.

mod method;

use std::collections::{BTreeMap, BTreeSet};

use plugin_sdk::time as instant;
use plugin_sdk::{CalculatorInput, QuestionnaireInfo, ResponseInfo, ScoreInfo, Tonality};
use serde::Serialize;

pub use method::{Category, Comparison, Direction, Method};

/// The `results` of the calculation.
#[derive(Debug, Serialize)]
pub struct Results {
    /// One entry per questionnaire and score: by questionnaire key, then in
    /// the definition's score order, then other scores by key.
    pub scores: Vec<ScoreChange>,
}

/// The change of one score of one questionnaire.
#[derive(Debug, Serialize)]
pub struct ScoreChange {
    /// Questionnaire key.
    pub questionnaire_key: String,
    /// Score key.
    pub score_key: String,
    /// The score's label, from the definition (else the key).
    pub label: String,
    /// Which way the score points (from the definition; higher is worse
    /// when unknown).
    pub tonality: Tonality,
    /// Reliability r from the definition.
    pub reliability: Option<f64>,
    /// SD from the definition.
    pub sd: Option<f64>,
    /// Clinical cut-off from the definition.
    pub cutoff: Option<f64>,
    /// S_diff, to two decimals.
    pub standard_error_of_difference: Option<f64>,
    /// 1.96 × S_diff, to two decimals: a difference larger than this is a
    /// reliable change.
    pub reliable_change_threshold: Option<f64>,
    /// How many responses have a value for the score.
    pub response_count: usize,
    /// The first response with a value compared with the last; null with
    /// fewer than two.
    pub first_to_last: Option<Comparison>,
    /// Each response with a value compared with the previous one.
    pub consecutive: Vec<Comparison>,
    /// Why the score is not compared: the definition lacks what the
    /// method needs (or there is no definition).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A score's value in one response.
struct Value<'a> {
    response: &'a ResponseInfo,
    value: f64,
}

fn calculate(input: CalculatorInput) -> Result<Results, std::convert::Infallible> {
    let mut responses: Vec<&ResponseInfo> = input.responses.iter().collect();
    responses.sort_by(|a, b| instant::cmp(&a.completed_at, &b.completed_at).then(a.id.cmp(&b.id)));

    // Questionnaire key → score key → values, oldest first.
    let mut values: BTreeMap<&str, BTreeMap<&str, Vec<Value>>> = BTreeMap::new();
    for key in input.questionnaires.keys() {
        values.entry(key).or_default();
    }
    for response in responses {
        let scores = values.entry(&response.questionnaire_key).or_default();
        for (score_key, score) in &response.outcome.scores {
            let list = scores.entry(score_key).or_default();
            if let Some(value) = score.value {
                list.push(Value { response, value });
            }
        }
    }

    let mut results = Vec::new();
    for (questionnaire_key, mut scores) in values {
        let definition = input.questionnaires.get(questionnaire_key);
        for score_key in score_order(definition, &scores) {
            let list = scores.remove(score_key.as_str()).unwrap_or_default();
            let info = definition.and_then(|d| d.score(&score_key));
            results.push(score_change(
                questionnaire_key,
                &score_key,
                definition,
                info,
                &list,
            ));
        }
    }
    Ok(Results { scores: results })
}

fn score_change(
    questionnaire_key: &str,
    score_key: &str,
    definition: Option<&QuestionnaireInfo>,
    info: Option<&ScoreInfo>,
    values: &[Value],
) -> ScoreChange {
    let method = match (definition, info) {
        (None, _) => Err("no definition of the questionnaire".to_string()),
        (Some(_), None) => Err("score not in the definition".to_string()),
        (Some(_), Some(info)) => Method::from_definition(info),
    };
    let mut change = ScoreChange {
        questionnaire_key: questionnaire_key.to_string(),
        score_key: score_key.to_string(),
        label: info
            .map(|i| i.label.clone())
            .filter(|l| !l.is_empty())
            .unwrap_or_else(|| score_key.to_string()),
        tonality: info.map(|i| i.tonality).unwrap_or_default(),
        reliability: info.and_then(|i| i.reliability),
        sd: info.and_then(|i| i.sd),
        cutoff: info.and_then(|i| i.cutoff),
        standard_error_of_difference: None,
        reliable_change_threshold: None,
        response_count: values.len(),
        first_to_last: None,
        consecutive: Vec::new(),
        reason: None,
    };
    match method {
        Ok(method) => {
            change.standard_error_of_difference = Some(method::round2(method.s_diff));
            change.reliable_change_threshold = Some(method::round2(method.threshold()));
            let compare = |from: &Value, to: &Value| {
                method.compare(
                    (from.response.id, &from.response.completed_at, from.value),
                    (to.response.id, &to.response.completed_at, to.value),
                )
            };
            if let (Some(first), Some(last)) = (values.first(), values.last())
                && values.len() >= 2
            {
                change.first_to_last = Some(compare(first, last));
            }
            change.consecutive = values.windows(2).map(|w| compare(&w[0], &w[1])).collect();
        }
        Err(reason) => change.reason = Some(reason),
    }
    change
}

/// The definition's scores in its order, then scores only the outcomes
/// name, by key.
fn score_order<T>(definition: Option<&QuestionnaireInfo>, seen: &BTreeMap<&str, T>) -> Vec<String> {
    let mut order: Vec<String> = definition
        .map(|d| d.scores.iter().map(|s| s.key.clone()).collect())
        .unwrap_or_default();
    let mut listed: BTreeSet<String> = order.iter().cloned().collect();
    for key in seen.keys() {
        if listed.insert(key.to_string()) {
            order.push(key.to_string());
        }
    }
    order
}

// Works on stored outcomes and score definitions alone.
plugin_sdk::export_calculator!(calculate, questions = false, answers = false);

#[cfg(test)]
mod tests;
