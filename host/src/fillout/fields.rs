//! A page's form fields and a response's answers, both ways. A submitted
//! page is read over the answers stored so far, each field with the
//! domain's one reading of a form value (`Answer::from_form`, the same
//! checks as the API's), then every path's rule applied: answers to
//! questions that are not enabled are taken out (`GivenAnswers::enabled`),
//! so an answer on an earlier page that hides a later question drops that
//! question's answer. A date is sent in parts (`v_7.day`, `v_7.month`,
//! `v_7.year`) and read as the ISO form its question asks for.

use std::collections::BTreeMap;

use super::i18n::Lang;
use super::widgets::{QuestionError, date_parts, decimal};
use crate::domain::answer::{Answer, AnswerError};
use crate::domain::answers::{Answers, GivenAnswers};
use crate::domain::enabled::Enabled;
use crate::domain::kind::Kind;
use crate::domain::question::Question;
use crate::domain::questionnaire::Questionnaire;
use crate::domain::variant::Variant;

/// A form's fields: name to every value sent.
pub type FormFields = BTreeMap<String, Vec<String>>;

/// A submitted page read over the answers stored before.
#[derive(Debug, Clone, PartialEq)]
pub struct PageRead {
    /// All the response's answers, those of the page as sent; none to a
    /// question that is not enabled.
    pub answers: Answers,
    /// The page's questions whose fields could not be read, with why.
    pub unreadable: BTreeMap<String, AnswerError>,
}

/// The values the form sent for `question`: every value of its field
/// (several for a checkbox), or of a date, its parts put together
/// (`2024-05`; nothing when every part is empty).
fn values_of(question: &Question, form: &FormFields) -> Vec<String> {
    let key = &question.key;
    let Kind::Date { precision } = question.kind else {
        return form.get(key).cloned().unwrap_or_default();
    };
    let part = |name: &str| {
        form.get(&format!("{key}.{name}"))
            .and_then(|v| v.last())
            .map(|v| v.trim().to_owned())
            .unwrap_or_default()
    };
    let parts: Vec<String> = date_parts(precision)
        .iter()
        .map(|(name, _)| part(name))
        .collect();
    if parts.iter().all(String::is_empty) {
        // A date sent whole (a client of its own).
        return form.get(key).cloned().unwrap_or_default();
    }
    // Shown day, month, year; written year-month-day, with day and month
    // in two digits.
    let iso: Vec<String> = parts
        .iter()
        .rev()
        .enumerate()
        .map(|(i, p)| {
            if i > 0 && p.len() == 1 {
                format!("0{p}")
            } else {
                p.clone()
            }
        })
        .collect();
    vec![iso.join("-")]
}

/// Reads the fields of page `p` of `q` over `stored`: the page's answers
/// replaced by what was sent (a field not sent is unanswered), every
/// answer to a question not enabled then taken out.
pub fn read_page(
    q: &Questionnaire,
    variant: &Variant,
    stored: &Answers,
    p: usize,
    form: &FormFields,
) -> PageRead {
    let mut given = GivenAnswers::of(q, stored);
    let mut unreadable = BTreeMap::new();
    let range = q.pages.get(p).map_or(0..0, |page| page.questions.clone());
    for i in range {
        let question = &q.questions[i];
        if !question.answerable() {
            continue;
        }
        let values = values_of(question, form);
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        match Answer::from_form(&question.kind, &question.options, &values) {
            Ok(answer) => given.set(i, answer),
            Err(e) => {
                given.set(i, None);
                unreadable.insert(question.key.clone(), e);
            }
        }
    }
    PageRead {
        answers: given.enabled(q, variant).answers,
        unreadable,
    }
}

/// What is wrong on page `p`: each enabled question of it whose field
/// could not be read, or that is required and unanswered.
pub fn page_errors(
    q: &Questionnaire,
    enabled: &Enabled,
    p: usize,
    read: &PageRead,
) -> BTreeMap<String, QuestionError> {
    let range = q.pages.get(p).map_or(0..0, |page| page.questions.clone());
    range
        .filter(|i| enabled.questions[*i])
        .filter_map(|i| {
            let question = &q.questions[i];
            if let Some(e) = read.unreadable.get(&question.key) {
                Some((question.key.clone(), QuestionError::Answer(*e)))
            } else if question.required && read.answers.get(&question.key).is_none() {
                Some((question.key.clone(), QuestionError::Unanswered))
            } else {
                None
            }
        })
        .collect()
}

/// The first page holding an enabled required question left unanswered.
pub fn first_missing(q: &Questionnaire, enabled: &Enabled, answers: &Answers) -> Option<usize> {
    q.questions
        .iter()
        .enumerate()
        .find(|(i, question)| {
            enabled.questions[*i] && question.required && answers.get(&question.key).is_none()
        })
        .map(|(_, question)| question.page)
}

/// The form's fields that show `answers` (the page's controls chosen and
/// filled in).
pub fn fields_of(answers: &Answers, lang: Lang) -> FormFields {
    let mut fields = FormFields::new();
    for (key, answer) in answers.iter() {
        let Some(answer) = answer else { continue };
        match answer {
            Answer::Options(keys) => {
                fields.insert(key.to_owned(), keys.clone());
            }
            Answer::Date(d) => {
                let mut put = |part: &str, value: String| {
                    fields.insert(format!("{key}.{part}"), vec![value]);
                };
                put("year", format!("{:04}", d.year));
                if let Some(m) = d.month {
                    put("month", m.to_string());
                }
                if let Some(day) = d.day {
                    put("day", day.to_string());
                }
            }
            Answer::Integer(n) => {
                fields.insert(key.to_owned(), vec![n.to_string()]);
            }
            Answer::Decimal(n) => {
                fields.insert(key.to_owned(), vec![decimal(*n, lang)]);
            }
            Answer::Option(s) | Answer::Text(s) => {
                fields.insert(key.to_owned(), vec![s.clone()]);
            }
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::questionnaire;

    const DATES: &str = r#"
key = "dates"
name = "Dates"
short_description = "Dates"
language = "en"
licence = "test"
scorer = "dates"

[[questions]]
key = "v_1"
type = "date"
title = "When?"

[[questions]]
key = "v_2"
type = "date"
title = "Since?"
precision = "month"
required = false

[[questions]]
key = "v_3"
type = "checkbox"
title = "Which?"
required = false
options = [ { key = "a1", value = 1, description = "One" }, { key = "a9", value = 0, description = "None", exclusive = true } ]
"#;

    fn form(fields: &[(&str, &str)]) -> FormFields {
        let mut form = FormFields::new();
        for (k, v) in fields {
            form.entry((*k).to_owned())
                .or_default()
                .push((*v).to_owned());
        }
        form
    }

    #[test]
    fn a_date_is_read_from_its_parts_and_shown_in_them_again() {
        let q = questionnaire::parse(DATES, "dates").expect("valid");
        let read = read_page(
            &q,
            &Variant::default(),
            &Answers::default(),
            0,
            &form(&[
                ("v_1.day", "7"),
                ("v_1.month", "5"),
                ("v_1.year", "2024"),
                ("v_2.month", "11"),
                ("v_2.year", " 1999 "),
            ]),
        );
        assert!(read.unreadable.is_empty(), "{:?}", read.unreadable);
        let json = serde_json::Value::Object(read.answers.to_json());
        assert_eq!(
            json,
            serde_json::json!({"v_1": "2024-05-07", "v_2": "1999-11", "v_3": null})
        );
        let fields = fields_of(&read.answers, Lang::En);
        assert_eq!(fields["v_1.day"], ["7"]);
        assert_eq!(fields["v_2.month"], ["11"]);
        assert_eq!(fields["v_2.year"], ["1999"]);
    }

    #[test]
    fn a_date_that_does_not_exist_and_an_exclusive_option_with_others_are_named() {
        let q = questionnaire::parse(DATES, "dates").expect("valid");
        let read = read_page(
            &q,
            &Variant::default(),
            &Answers::default(),
            0,
            &form(&[
                ("v_1.day", "31"),
                ("v_1.month", "2"),
                ("v_1.year", "2024"),
                ("v_2.year", "2024"),
                ("v_3", "a1"),
                ("v_3", "a9"),
            ]),
        );
        assert_eq!(
            read.unreadable,
            BTreeMap::from([
                ("v_1".to_owned(), AnswerError::Invalid),
                ("v_2".to_owned(), AnswerError::Invalid),
                ("v_3".to_owned(), AnswerError::Invalid),
            ])
        );
        let enabled = crate::domain::paging::enabled(&q, &Variant::default(), &read.answers);
        let errors = page_errors(&q, &enabled, 0, &read);
        assert_eq!(errors.len(), 3);
        assert_eq!(first_missing(&q, &enabled, &read.answers), Some(0));
    }
}
