//! Report calculator `alarm_summary`: which of a dossier's responses raised
//! an alarm or needed attention, and on which items and scores, so that a
//! clinician can review them at a glance (for example before a session or
//! in a case review).
//!
//! It applies no clinical rule of its own: the alarm and attention items
//! and score statuses are those each questionnaire's scorer stored, whose
//! module documents their sources. A response is listed when its action is
//! `alarm` or `attention`: the stored `action`, or, should that be missing,
//! the action the outcome rules derive (docs/api/outcomes.md#action:
//! `alarm` if any alarm item or any score with status alarm, else
//! `attention` likewise); the more severe of the two counts. Responses are
//! listed oldest first (by the instant of `completed_at`, then id).

use std::collections::BTreeMap;

use plugin_sdk::time as instant;
use plugin_sdk::{CalculatorInput, QuestionnaireInfo, ResponseInfo, ScoreStatus};
use serde::Serialize;

/// The `results` of the calculation.
#[derive(Debug, Serialize)]
pub struct Results {
    /// The responses with action alarm or attention, oldest first.
    pub responses: Vec<Flagged>,
    /// How many responses have each action.
    pub totals: Totals,
}

/// Counts of the listed responses.
#[derive(Debug, Default, Serialize)]
pub struct Totals {
    /// Responses with action alarm.
    pub alarm: usize,
    /// Responses with action attention.
    pub attention: usize,
    /// All responses the calculation looked at.
    pub checked: usize,
}

/// A response with action alarm or attention.
#[derive(Debug, Serialize)]
pub struct Flagged {
    /// Response id.
    pub response_id: i64,
    /// Questionnaire key.
    pub questionnaire_key: String,
    /// When the response was completed.
    pub completed_at: String,
    /// `alarm` or `attention`.
    pub action: ScoreStatus,
    /// Question keys that raised the alarm.
    pub alarm: Vec<String>,
    /// Question keys that raised attention.
    pub attention: Vec<String>,
    /// Scores whose status is alarm or attention.
    pub scores_with_status: Vec<ScoreWithStatus>,
    /// The alarm and attention items with their text and answer, in the
    /// questionnaire's question order.
    pub items: Vec<Item>,
}

/// A score with a status.
#[derive(Debug, Serialize)]
pub struct ScoreWithStatus {
    /// Score key.
    pub score_key: String,
    /// The score's label (definition, else stored, else the key).
    pub label: String,
    /// The status.
    pub status: ScoreStatus,
    /// The score's value, when computed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
}

/// An item that raised alarm or attention.
#[derive(Debug, Serialize)]
pub struct Item {
    /// Question key.
    pub key: String,
    /// Question text from the definition; empty when unknown.
    pub title: String,
    /// The answered option key (or text); null when unanswered.
    pub answer: Option<String>,
    /// The numeric value of the answered option, when the definition
    /// gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
}

fn calculate(input: CalculatorInput) -> Result<Results, std::convert::Infallible> {
    let mut responses: Vec<&ResponseInfo> = input.responses.iter().collect();
    responses.sort_by(|a, b| instant::cmp(&a.completed_at, &b.completed_at).then(a.id.cmp(&b.id)));

    let mut totals = Totals {
        checked: responses.len(),
        ..Totals::default()
    };
    let mut flagged = Vec::new();
    for response in responses {
        let definition = input.questionnaires.get(&response.questionnaire_key);
        if let Some(entry) = flag(response, definition) {
            match entry.action {
                ScoreStatus::Alarm => totals.alarm += 1,
                ScoreStatus::Attention => totals.attention += 1,
            }
            flagged.push(entry);
        }
    }
    Ok(Results {
        responses: flagged,
        totals,
    })
}

/// The entry of a response, when its action is alarm or attention.
fn flag(response: &ResponseInfo, definition: Option<&QuestionnaireInfo>) -> Option<Flagged> {
    let outcome = &response.outcome;
    let alarm = outcome.alarm.clone().unwrap_or_default();
    let attention = outcome.attention.clone().unwrap_or_default();
    let scores = scores_with_status(response, definition);

    let stored = match outcome.action.as_deref() {
        Some("alarm") => Some(ScoreStatus::Alarm),
        Some("attention") => Some(ScoreStatus::Attention),
        _ => None,
    };
    let derived = if !alarm.is_empty() || scores.iter().any(|s| s.status == ScoreStatus::Alarm) {
        Some(ScoreStatus::Alarm)
    } else if !attention.is_empty() || !scores.is_empty() {
        Some(ScoreStatus::Attention)
    } else {
        None
    };
    let action = match (stored, derived) {
        (Some(ScoreStatus::Alarm), _) | (_, Some(ScoreStatus::Alarm)) => ScoreStatus::Alarm,
        (Some(_), _) | (_, Some(_)) => ScoreStatus::Attention,
        (None, None) => return None,
    };

    let items = items(response, definition, &alarm, &attention);
    Some(Flagged {
        response_id: response.id,
        questionnaire_key: response.questionnaire_key.clone(),
        completed_at: response.completed_at.clone(),
        action,
        alarm,
        attention,
        scores_with_status: scores,
        items,
    })
}

/// Scores with a status: the definition's order first, then by key.
fn scores_with_status(
    response: &ResponseInfo,
    definition: Option<&QuestionnaireInfo>,
) -> Vec<ScoreWithStatus> {
    let position = |key: &str| {
        definition
            .and_then(|d| d.scores.iter().position(|s| s.key == key))
            .unwrap_or(usize::MAX)
    };
    let mut scores: Vec<(usize, ScoreWithStatus)> = response
        .outcome
        .scores
        .iter()
        .filter_map(|(key, score)| {
            let status = score.status?;
            let label = definition
                .and_then(|d| d.score(key))
                .map(|s| s.label.clone())
                .filter(|l| !l.is_empty())
                .or_else(|| {
                    score
                        .extra
                        .get("label")
                        .and_then(|l| l.as_str())
                        .map(String::from)
                })
                .unwrap_or_else(|| key.clone());
            let entry = ScoreWithStatus {
                score_key: key.clone(),
                label,
                status,
                value: score.value,
            };
            Some((position(key), entry))
        })
        .collect();
    // Stable: equal positions (scores the definition lacks) stay in key order.
    scores.sort_by_key(|(position, _)| *position);
    scores.into_iter().map(|(_, s)| s).collect()
}

/// The alarm and attention items, each once, in the definition's question
/// order; keys the definition lacks come last, in the order first named.
fn items(
    response: &ResponseInfo,
    definition: Option<&QuestionnaireInfo>,
    alarm: &[String],
    attention: &[String],
) -> Vec<Item> {
    let mut keys: Vec<&String> = Vec::new();
    for key in alarm.iter().chain(attention) {
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let position: BTreeMap<&str, usize> = definition
        .map(|d| {
            d.questions
                .iter()
                .enumerate()
                .map(|(i, q)| (q.key.as_str(), i))
                .collect()
        })
        .unwrap_or_default();
    keys.sort_by_key(|key| position.get(key.as_str()).copied().unwrap_or(usize::MAX));

    keys.into_iter()
        .map(|key| {
            let question = definition.and_then(|d| d.question(key));
            let answer = response.values.get(key).cloned().flatten();
            let value = question
                .zip(answer.as_deref())
                .and_then(|(q, a)| q.options.iter().find(|o| o.key == a))
                .map(|o| o.value);
            Item {
                key: key.clone(),
                title: question.map(|q| q.title.clone()).unwrap_or_default(),
                answer,
                value,
            }
        })
        .collect()
}

plugin_sdk::export_calculator!(calculate);

#[cfg(test)]
mod tests;
