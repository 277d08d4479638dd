//! Scorer of the intake questionnaire (`questionnaires/intake`), written for
//! this project. It is not a validated instrument, so it has no norms or
//! bands: its scores are counts and answers a professional reads before the
//! first appointment, and its attention list points at what to bring up.
//!
//! The rules, all this project's own (the definition's comments give the
//! reasons):
//! - `complaints`: the number of complaints ticked on the checklist (v_1),
//!   0 to 7, "Other" included; "None of these" is 0. Unanswered: no value.
//! - `sleep_hours`: the hours of sleep answered (v_4), as they are.
//! - `drinks_per_week`: the standard drinks a week answered (v_7); 0 after
//!   "No" to drinking (v_6), which leaves v_7 out. No value when v_6 is
//!   unanswered, or after "Yes" when v_7 is. At or above the score's
//!   `cutoff` in the definition (the clinic's choice, 15 as shipped) the
//!   score carries `status: attention`, an interpretation and the norm; a
//!   definition without a cut-off flags nothing.
//! - `attention`: v_7 when the drinks reach the cut-off, and v_8 when the
//!   patient answered "Yes" to talking about drinking at the first
//!   appointment. No alarm: nothing asked here is urgent.
//! - completion: of the required questions that were asked (v_1 to v_8
//!   where enabled; the free text v_9 is optional), the share answered. A
//!   question the definition's conditions left out ("other, namely"
//!   without "Other", the onset after "None of these", the alcohol
//!   questions after "No") was rightly not asked and counts neither way,
//!   so "None of these", the sleep, the occupation and "No" make a
//!   complete response, and nothing answered is 0.
//!
//! It reads typed answers (contract 2: `input.options`, `input.decimal`),
//! so it needs the answers but not the question texts.

use plugin_sdk::{Score, ScoreStatus, ScorerInput, ScorerOutput, scoring};

/// The complaint checklist (checkbox).
const CHECKLIST: &str = "v_1";

/// The checklist's exclusive "None of these", which is no complaint.
const NONE_OF_THESE: &str = "a0";

/// Hours of sleep a night (decimal).
const SLEEP: &str = "v_4";

/// "Do you drink alcohol?" (radio, yes/no).
const DRINKS_AT_ALL: &str = "v_6";

/// Standard drinks in a usual week (integer), asked after "Yes" on v_6.
const DRINKS: &str = "v_7";

/// "Would you like to talk about your drinking?" (radio, yes/no).
const TALK_ABOUT_DRINKING: &str = "v_8";

/// The option keys of the yes/no option set.
const NO: &str = "a0";
const YES: &str = "a1";

/// The score whose definition carries the clinic's limit (`cutoff`).
const DRINKS_SCORE: &str = "drinks_per_week";

/// The questions a complete response answers when they are asked (all but
/// the optional free text v_9).
const REQUIRED: [&str; 8] = ["v_1", "v_2", "v_3", "v_4", "v_5", "v_6", "v_7", "v_8"];

fn score(input: ScorerInput) -> ScorerOutput {
    let cutoff = input
        .questionnaire
        .score(DRINKS_SCORE)
        .and_then(|s| s.cutoff);
    let drinks = drinks_per_week(&input);
    let mut output = ScorerOutput::default();
    output
        .scores
        .insert("complaints".into(), complaints(&input));
    output
        .scores
        .insert("sleep_hours".into(), sleep_hours(&input));
    output
        .scores
        .insert(DRINKS_SCORE.into(), drinks_score(drinks, cutoff));
    output.alarm = None;
    output.attention = Some(attention(&input, drinks, cutoff));
    output.completion = Some(completion(&input));
    output
}

/// The number of complaints ticked; "None of these" is none.
fn complaints(input: &ScorerInput) -> Score {
    if input.typed(CHECKLIST).is_none() {
        return Score::missing([CHECKLIST]);
    }
    let ticked = input
        .options(CHECKLIST)
        .iter()
        .filter(|key| key.as_str() != NONE_OF_THESE)
        .count();
    Score::of(ticked as f64)
}

fn sleep_hours(input: &ScorerInput) -> Score {
    match input.decimal(SLEEP) {
        Some(hours) => Score::of(hours),
        None => Score::missing([SLEEP]),
    }
}

/// Drinks a week: 0 after "No", the number answered after "Yes"; else the
/// question that is missing.
fn drinks_per_week(input: &ScorerInput) -> Result<f64, &'static str> {
    match input.option(DRINKS_AT_ALL) {
        Some(NO) => Ok(0.0),
        Some(_) => input.decimal(DRINKS).ok_or(DRINKS),
        None => Err(DRINKS_AT_ALL),
    }
}

/// Whether `drinks` reaches the clinic's limit, when it has one.
fn reaches(drinks: Result<f64, &str>, cutoff: Option<f64>) -> bool {
    matches!((drinks, cutoff), (Ok(d), Some(c)) if d >= c)
}

fn drinks_score(drinks: Result<f64, &'static str>, cutoff: Option<f64>) -> Score {
    let mut score = match drinks {
        Ok(d) => Score::of(d),
        Err(missing) => return Score::missing([missing]),
    };
    if let Some(c) = cutoff {
        let flagged = reaches(drinks, cutoff);
        score.norm = Some(format!(">= {c}"));
        score.interpretation = Some(if flagged {
            format!("at or above the clinic's limit of {c} a week")
        } else {
            format!("below the clinic's limit of {c} a week")
        });
        score.status = flagged.then_some(ScoreStatus::Attention);
    }
    score
}

fn attention(input: &ScorerInput, drinks: Result<f64, &str>, cutoff: Option<f64>) -> Vec<String> {
    let mut keys = Vec::new();
    if reaches(drinks, cutoff) {
        keys.push(DRINKS.to_owned());
    }
    if input.option(TALK_ABOUT_DRINKING) == Some(YES) {
        keys.push(TALK_ABOUT_DRINKING.to_owned());
    }
    keys
}

/// Of the required questions asked (enabled), the share answered.
fn completion(input: &ScorerInput) -> f64 {
    let asked: Vec<Option<f64>> = REQUIRED
        .iter()
        .filter(|key| input.enabled(key))
        .map(|key| input.typed(key).map(|_| 1.0))
        .collect();
    scoring::completion(&asked)
}

plugin_sdk::export_scorer!(score, questionnaires = ["intake"], questions = false);

#[cfg(test)]
mod tests;
