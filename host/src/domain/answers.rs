//! Checking `answer_data` against a questionnaire
//! (docs/api/responses.md#answer-data): every key must be a question, every
//! non-null value one of its option keys; null means unanswered. The result
//! holds every question in definition order.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::questionnaire::Questionnaire;

/// Answers keyed by question (`v_` form) in definition order; `None` is
/// unanswered.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Answers(pub Vec<(String, Option<String>)>);

/// Why one entry of `answer_data` was refused; the wire codes of
/// docs/api/responses.md#answer-data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerError {
    UnknownQuestion,
    InvalidOption,
}

impl AnswerError {
    pub fn code(self) -> &'static str {
        match self {
            AnswerError::UnknownQuestion => "unknown_question",
            AnswerError::InvalidOption => "invalid_option",
        }
    }
}

impl Answers {
    /// Validates `data` against `questionnaire`. On failure, every offending
    /// key with its reason.
    pub fn check(
        questionnaire: &Questionnaire,
        data: &Map<String, Value>,
    ) -> Result<Answers, BTreeMap<String, AnswerError>> {
        let mut errors = BTreeMap::new();
        for (key, value) in data {
            match questionnaire.question(key) {
                None => {
                    errors.insert(key.clone(), AnswerError::UnknownQuestion);
                }
                Some(question) => {
                    let known = match value {
                        Value::Null => true,
                        Value::String(option) => question.option(option).is_some(),
                        _ => false,
                    };
                    if !known {
                        errors.insert(key.clone(), AnswerError::InvalidOption);
                    }
                }
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Answers(
            questionnaire
                .questions
                .iter()
                .map(|q| {
                    (
                        q.key.clone(),
                        data.get(&q.key).and_then(Value::as_str).map(str::to_owned),
                    )
                })
                .collect(),
        ))
    }

    /// The answers as a JSON object in definition order, null for unanswered.
    pub fn to_json(&self) -> Map<String, Value> {
        self.0
            .iter()
            .map(|(k, v)| (k.clone(), v.clone().map_or(Value::Null, Value::String)))
            .collect()
    }

    /// Reads back what [`Answers::to_json`] wrote.
    pub fn from_json(map: &Map<String, Value>) -> Answers {
        Answers(
            map.iter()
                .map(|(k, v)| (k.clone(), v.as_str().map(str::to_owned)))
                .collect(),
        )
    }

    /// Number of questions answered.
    pub fn answered(&self) -> usize {
        self.0.iter().filter(|(_, v)| v.is_some()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::testing::questionnaire;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn answers_cover_every_question_in_definition_order() {
        let q = questionnaire();
        let a = Answers::check(&q, &map(serde_json::json!({"v_2": "a1"}))).expect("valid");
        assert_eq!(
            a.0,
            vec![
                ("v_1".into(), None),
                ("v_2".into(), Some("a1".into())),
                ("v_3".into(), None)
            ]
        );
        assert_eq!(
            Value::Object(a.to_json()),
            serde_json::json!({"v_1": null, "v_2": "a1", "v_3": null})
        );
        assert_eq!(a.answered(), 1);
    }

    #[test]
    fn unknown_questions_and_options_are_named() {
        let q = questionnaire();
        let e = Answers::check(
            &q,
            &map(serde_json::json!({"v_1": "a7", "v_9": "a0", "v_2": 1})),
        )
        .expect_err("invalid");
        assert_eq!(e.get("v_1"), Some(&AnswerError::InvalidOption));
        assert_eq!(e.get("v_2"), Some(&AnswerError::InvalidOption));
        assert_eq!(e.get("v_9"), Some(&AnswerError::UnknownQuestion));
    }

    #[test]
    fn null_means_unanswered() {
        let q = questionnaire();
        let a = Answers::check(&q, &map(serde_json::json!({"v_1": null}))).expect("valid");
        assert_eq!(a.answered(), 0);
    }
}
