//! Scorer of the daily diary (`questionnaires/diary`), sliders written for
//! this project. It is not a validated instrument: there are no norms or
//! bands, and its limits for attention are the definition's `cutoff`s,
//! this project's choice, which a clinic changes in the definition.
//!
//! The rules, all this project's own:
//! - `mood`: the mean of the four feelings on their 0–10 sliders, the
//!   unpleasant ones (down, anxious: v_3, v_4) reversed as 10 − answer, so
//!   0 to 10 with higher better. All four are needed: one unanswered
//!   leaves no value (`missing_values`). Below the score's `cutoff` (4 as
//!   shipped; higher is better, so the cut-off is the first value that is
//!   not low) it carries `status: attention`, and the attention list
//!   names the four feelings.
//! - `interference`: the 0–100 answer to how much complaints got in the
//!   way (v_5). At or above its `cutoff` (70 as shipped) it carries
//!   `status: attention` and the attention list names v_5.
//! - `satisfaction`: the 0–100 answer to satisfaction with the day (v_6);
//!   nothing flagged.
//! - A score whose definition has no `cutoff` flags nothing. No alarm:
//!   one day's diary is not an emergency.
//! - completion: the six sliders answered, over six; the note (v_7) is
//!   optional.
//!
//! Slider answers are numbers, so it reads `values` alone: it declines
//! the questions and the answers (a cheaper call).

use plugin_sdk::{Score, ScoreStatus, ScorerInput, ScorerOutput, scoring};

/// The pleasant feelings (cheerful, relaxed), 0–10.
const PLEASANT: [&str; 2] = ["v_1", "v_2"];

/// The unpleasant feelings (down, anxious), 0–10, reversed for the mood.
const UNPLEASANT: [&str; 2] = ["v_3", "v_4"];

/// The feelings' slider runs from 0 to this.
const FEELING_MAX: f64 = 10.0;

/// Interference of complaints, 0–100.
const INTERFERENCE: &str = "v_5";

/// Satisfaction with the day, 0–100.
const SATISFACTION: &str = "v_6";

/// The sliders, which a complete diary answers.
const SLIDERS: [&str; 6] = ["v_1", "v_2", "v_3", "v_4", "v_5", "v_6"];

fn score(input: ScorerInput) -> ScorerOutput {
    let cutoff = |key: &str| input.questionnaire.score(key).and_then(|s| s.cutoff);
    let mood = mood(&input, cutoff("mood"));
    let interference = interference(&input, cutoff("interference"));
    let mut attention = Vec::new();
    if flagged(&mood) {
        attention.extend(PLEASANT.iter().chain(&UNPLEASANT).map(|k| (*k).to_owned()));
    }
    if flagged(&interference) {
        attention.push(INTERFERENCE.to_owned());
    }
    let mut output = ScorerOutput::default();
    output.scores.insert("mood".into(), mood);
    output.scores.insert("interference".into(), interference);
    output
        .scores
        .insert("satisfaction".into(), answer(&input, SATISFACTION));
    output.alarm = None;
    output.attention = Some(attention);
    output.completion = Some(scoring::completion(&input.values_of(&SLIDERS)));
    output
}

fn flagged(score: &Score) -> bool {
    score.status == Some(ScoreStatus::Attention)
}

/// The mean of the four feelings, unpleasant ones reversed; attention
/// below `cutoff`.
fn mood(input: &ScorerInput, cutoff: Option<f64>) -> Score {
    let pleasant = input.values_of(&PLEASANT);
    let unpleasant = input
        .values_of(&UNPLEASANT)
        .into_iter()
        .map(|v| v.map(|v| scoring::reverse(v, 0.0, FEELING_MAX)));
    let feelings: Vec<Option<f64>> = pleasant.into_iter().chain(unpleasant).collect();
    let Some(sum) = scoring::sum(&feelings) else {
        let keys: Vec<&str> = PLEASANT.iter().chain(&UNPLEASANT).copied().collect();
        return Score::missing(scoring::missing(input, &keys));
    };
    let mut score = Score::of(sum / feelings.len() as f64);
    if let (Some(value), Some(c)) = (score.value, cutoff) {
        let low = value < c;
        score.norm = Some(format!("< {c}"));
        score.interpretation = Some(if low {
            format!("low: below {c}")
        } else {
            format!("not low: {c} or above")
        });
        score.status = low.then_some(ScoreStatus::Attention);
    }
    score
}

/// The interference answer; attention at or above `cutoff`.
fn interference(input: &ScorerInput, cutoff: Option<f64>) -> Score {
    let mut score = answer(input, INTERFERENCE);
    if let (Some(value), Some(c)) = (score.value, cutoff) {
        let high = value >= c;
        score.norm = Some(format!(">= {c}"));
        score.interpretation = Some(if high {
            format!("high: {c} or above")
        } else {
            format!("below {c}")
        });
        score.status = high.then_some(ScoreStatus::Attention);
    }
    score
}

/// A slider's answer as the score, or the question missing.
fn answer(input: &ScorerInput, key: &str) -> Score {
    match input.value(key) {
        Some(value) => Score::of(value),
        None => Score::missing([key]),
    }
}

plugin_sdk::export_scorer!(
    score,
    questionnaires = ["diary"],
    questions = false,
    answers = false
);

#[cfg(test)]
mod tests;
