//! Scorer of the mood diary (`questionnaires/mood_diary`), a questionnaire
//! written for this project for experience sampling. It is not a validated
//! instrument: there are no norms, bands, cut-offs or alarm rules to apply,
//! so each score is its question's answer value (0 to 4), and a question
//! left unanswered gives its score `missing_values` and no value.

use plugin_sdk::{Score, ScorerInput, ScorerOutput, scoring};

/// Score key and the one question it reports.
const SCORES: [(&str, &str); 3] = [("mood", "v_1"), ("tension", "v_2"), ("energy", "v_3")];

fn score(input: ScorerInput) -> ScorerOutput {
    let mut output = ScorerOutput::default();
    for (key, item) in SCORES {
        let score = match input.value(item) {
            Some(value) => Score::of(value),
            None => Score::missing([item]),
        };
        output.scores.insert(key.into(), score);
    }
    let items: Vec<&str> = SCORES.iter().map(|(_, item)| *item).collect();
    output.completion = Some(scoring::completion(&input.values_of(&items)));
    output
}

plugin_sdk::export_scorer!(
    score,
    questionnaires = ["mood_diary"],
    questions = false,
    answers = false
);

#[cfg(test)]
mod tests {
    #[test]
    fn fixtures() {
        plugin_sdk::testing::check_fixtures(env!("CARGO_MANIFEST_DIR"), super::call_json);
    }
}
