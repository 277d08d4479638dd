//! A response's answers (docs/api/responses.md#answer-data), in three
//! steps every path takes:
//!
//! 1. [`GivenAnswers`]: each answer given, read against its question's
//!    type and limits (`answer.rs`), from `answer_data` or a form;
//! 2. [`GivenAnswers::enabled`]: the answers to questions that are not
//!    enabled for the response (`enabled.rs`) taken out and named;
//! 3. [`Answers`]: what is stored and scored. It can only be made by that
//!    step, so an answer to a question that is not enabled is never stored
//!    or scored, by construction.
//!
//! A stored response's answers come back as [`StoredAnswers`], their JSON
//! as written, typed again with the definition when used.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::answer::{Answer, AnswerError};
use super::enabled::Enabled;
use super::questionnaire::Questionnaire;
use super::variant::Variant;

/// Answers as given, each read against its question; by position in the
/// questionnaire's questions.
#[derive(Debug, Clone, PartialEq)]
pub struct GivenAnswers(Vec<Option<Answer>>);

/// The answers of a response: every question that takes an answer, in
/// definition order, with its answer (none when unanswered or not
/// enabled) and whether it was enabled.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Answers {
    entries: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq)]
struct Entry {
    key: String,
    answer: Option<Answer>,
    enabled: bool,
}

/// What [`GivenAnswers::enabled`] came to.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub answers: Answers,
    /// Keys of the questions answered but not enabled, in definition
    /// order: their answers were taken out.
    pub dropped: Vec<String>,
}

impl GivenAnswers {
    /// Nothing answered.
    pub fn none(q: &Questionnaire) -> GivenAnswers {
        GivenAnswers(vec![None; q.questions.len()])
    }

    /// The answers of `answers` again as given (to change some of them).
    pub fn of(q: &Questionnaire, answers: &Answers) -> GivenAnswers {
        GivenAnswers(
            q.questions
                .iter()
                .map(|question| answers.get(&question.key).cloned())
                .collect(),
        )
    }

    /// Reads `data` (`answer_data`) against `q`. On failure, every
    /// offending key with its reason.
    pub fn check(
        q: &Questionnaire,
        data: &Map<String, Value>,
    ) -> Result<GivenAnswers, BTreeMap<String, AnswerError>> {
        let mut given = GivenAnswers::none(q);
        let mut errors = BTreeMap::new();
        for (key, value) in data {
            let Some(i) = q.position(key) else {
                errors.insert(key.clone(), AnswerError::UnknownQuestion);
                continue;
            };
            let question = &q.questions[i];
            match Answer::parse(&question.kind, &question.options, value) {
                Ok(answer) => given.0[i] = answer,
                Err(e) => {
                    errors.insert(key.clone(), e);
                }
            }
        }
        if errors.is_empty() {
            Ok(given)
        } else {
            Err(errors)
        }
    }

    /// Sets the answer to the question at `position` (a form's field, read
    /// by the caller with `Answer::parse` or `Answer::ticked`).
    pub fn set(&mut self, position: usize, answer: Option<Answer>) {
        if let Some(slot) = self.0.get_mut(position) {
            *slot = answer;
        }
    }

    /// The answer given to the question at `position`.
    pub fn get(&self, position: usize) -> Option<&Answer> {
        self.0.get(position).and_then(Option::as_ref)
    }

    /// What is enabled for these answers in `variant`, and the answers
    /// without those to questions that are not.
    pub fn enabled(self, q: &Questionnaire, variant: &Variant) -> Checked {
        let enabled = Enabled::evaluate(q, variant, |i| self.get(i));
        let mut dropped = Vec::new();
        let entries = q
            .questions
            .iter()
            .zip(self.0)
            .zip(enabled.questions)
            .filter(|((question, _), _)| question.answerable())
            .map(|((question, answer), enabled)| {
                if answer.is_some() && !enabled {
                    dropped.push(question.key.clone());
                }
                Entry {
                    key: question.key.clone(),
                    answer: answer.filter(|_| enabled),
                    enabled,
                }
            })
            .collect();
        Checked {
            answers: Answers { entries },
            dropped,
        }
    }
}

impl Answers {
    /// Every question that takes an answer with its answer, in definition
    /// order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Option<&Answer>)> {
        self.entries
            .iter()
            .map(|e| (e.key.as_str(), e.answer.as_ref()))
    }

    /// The answer to question `key`.
    pub fn get(&self, key: &str) -> Option<&Answer> {
        self.entries
            .iter()
            .find(|e| e.key == key)
            .and_then(|e| e.answer.as_ref())
    }

    /// Every question that takes an answer and whether it was enabled.
    pub fn enabled(&self) -> impl Iterator<Item = (&str, bool)> {
        self.entries.iter().map(|e| (e.key.as_str(), e.enabled))
    }

    /// The answers as a JSON object in definition order, null for
    /// unanswered: how they are stored and sent (`values`).
    pub fn to_json(&self) -> Map<String, Value> {
        self.entries
            .iter()
            .map(|e| {
                (
                    e.key.clone(),
                    e.answer.as_ref().map_or(Value::Null, Answer::to_json),
                )
            })
            .collect()
    }

    /// Number of questions answered.
    pub fn answered(&self) -> usize {
        self.entries.iter().filter(|e| e.answer.is_some()).count()
    }
}

/// The answers of a stored response, as stored: typed again with the
/// definition ([`StoredAnswers::typed`]) where they are used, sent as they
/// are (`values`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StoredAnswers(Map<String, Value>);

impl StoredAnswers {
    /// Reads back what [`StoredAnswers::of`] stored.
    pub fn from_json(map: Map<String, Value>) -> StoredAnswers {
        StoredAnswers(map)
    }

    /// What is stored for `answers`.
    pub fn of(answers: &Answers) -> StoredAnswers {
        StoredAnswers(answers.to_json())
    }

    /// The stored JSON, to send (`values`) or to write.
    pub fn to_json(&self) -> &Map<String, Value> {
        &self.0
    }

    /// Whether these are `answers`: the same questions answered the same
    /// way (a retried POST).
    pub fn same_as(&self, answers: &Answers) -> bool {
        let stored = self.0.iter().filter(|(_, v)| !v.is_null());
        let mut given = answers
            .entries
            .iter()
            .filter_map(|e| e.answer.as_ref().map(|a| (e.key.as_str(), a)));
        let mut count = 0;
        for (key, value) in stored {
            count += 1;
            if !given
                .clone()
                .any(|(k, a)| k == key && a.to_json() == *value)
            {
                return false;
            }
        }
        given.by_ref().count() == count
    }

    /// The answers typed with `q` for a response in `variant`, every path's
    /// rule applied again: an answer that no longer fits the definition (it
    /// changed since) counts as unanswered, and so does one to a question
    /// that is not enabled.
    pub fn typed(&self, q: &Questionnaire, variant: &Variant) -> Answers {
        let mut given = GivenAnswers::none(q);
        for (i, question) in q.questions.iter().enumerate() {
            if let Some(value) = self.0.get(&question.key) {
                given.set(
                    i,
                    Answer::parse(&question.kind, &question.options, value)
                        .ok()
                        .flatten(),
                );
            }
        }
        given.enabled(q, variant).answers
    }

    /// Each stored answer that is one string (an option key, a text, a
    /// date), others null: the `values` calculators read.
    pub fn texts(&self) -> BTreeMap<String, Option<String>> {
        self.0
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().map(str::to_owned)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::testing::questionnaire;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    fn checked(v: Value, variant: &Variant) -> Checked {
        let q = questionnaire();
        GivenAnswers::check(&q, &map(v))
            .expect("valid")
            .enabled(&q, variant)
    }

    #[test]
    fn answers_cover_every_question_in_definition_order() {
        let c = checked(json!({"v_2": "a1"}), &Variant::default());
        assert!(c.dropped.is_empty());
        let a = c.answers;
        assert_eq!(
            Value::Object(a.to_json()),
            json!({"v_1": null, "v_2": "a1", "v_3": null})
        );
        assert_eq!(a.answered(), 1);
        assert_eq!(a.get("v_2"), Some(&Answer::Option("a1".into())));
        let enabled: Vec<(&str, bool)> = a.enabled().collect();
        assert_eq!(enabled, [("v_1", true), ("v_2", true), ("v_3", false)]);
    }

    #[test]
    fn unknown_questions_and_options_are_named() {
        let q = questionnaire();
        let e = GivenAnswers::check(&q, &map(json!({"v_1": "a7", "v_9": "a0", "v_2": 1})))
            .expect_err("invalid");
        assert_eq!(e.get("v_1"), Some(&AnswerError::InvalidOption));
        assert_eq!(e.get("v_2"), Some(&AnswerError::InvalidOption));
        assert_eq!(e.get("v_9"), Some(&AnswerError::UnknownQuestion));
    }

    #[test]
    fn null_means_unanswered() {
        let c = checked(json!({"v_1": null}), &Variant::default());
        assert_eq!(c.answers.answered(), 0);
    }

    #[test]
    fn answers_to_questions_not_enabled_are_taken_out_and_named() {
        // v_2 is hidden by the flag `short`; v_3 is shown only with `extra`.
        let short = Variant {
            flags: [("short".to_owned(), true)].into(),
            ..Variant::default()
        };
        let c = checked(json!({"v_1": "a1", "v_2": "a1", "v_3": "a0"}), &short);
        assert_eq!(c.dropped, ["v_2", "v_3"]);
        assert_eq!(
            Value::Object(c.answers.to_json()),
            json!({"v_1": "a1", "v_2": null, "v_3": null})
        );
    }

    #[test]
    fn stored_answers_type_again_and_compare_with_given_ones() {
        let q = questionnaire();
        let c = checked(json!({"v_1": "a1", "v_2": "a0"}), &Variant::default());
        let stored = StoredAnswers::of(&c.answers);
        assert_eq!(stored.typed(&q, &Variant::default()), c.answers);
        assert!(stored.same_as(&c.answers));
        let other = checked(json!({"v_1": "a1"}), &Variant::default());
        assert!(!stored.same_as(&other.answers));
        assert!(!StoredAnswers::of(&other.answers).same_as(&c.answers));
        // Stored before the definition hid v_2 for this variant, or with an
        // option since removed: unanswered when typed again.
        let odd = StoredAnswers::from_json(map(json!({"v_1": "a9", "v_2": "a1"})));
        let short = Variant {
            flags: [("short".to_owned(), true)].into(),
            ..Variant::default()
        };
        assert_eq!(odd.typed(&q, &short).answered(), 0);
        assert_eq!(
            odd.texts(),
            BTreeMap::from([
                ("v_1".to_owned(), Some("a9".to_owned())),
                ("v_2".to_owned(), Some("a1".to_owned()))
            ])
        );
    }
}
