//! Typed answers of a scorer input (contract 2): which questions were
//! enabled, and getters that read each kind of answer in its own form, so
//! a scorer never picks apart JSON. On an input of contract 1 (no
//! `typed_answers`), the getters fall back to `answers` and `values`.

use crate::contract::{AnswerValue, ScorerInput};

/// A date answer: a year, with a month and a day when the question asks
/// for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date {
    /// The year, e.g. 2024.
    pub year: i32,
    /// 1 to 12, when the question asks for the month.
    pub month: Option<u32>,
    /// 1 to 31, when the question asks for the day.
    pub day: Option<u32>,
}

impl Date {
    /// Reads `2024-05-17`, `2024-05` or `2024`.
    pub fn parse(text: &str) -> Option<Date> {
        let mut parts = text.split('-');
        let number = |s: Option<&str>| -> Option<Option<u32>> {
            match s {
                None => Some(None),
                Some(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
                    s.parse().ok().map(Some)
                }
                Some(_) => None,
            }
        };
        let year = number(parts.next())??;
        let month = number(parts.next())?;
        let day = number(parts.next())?;
        if parts.next().is_some() || (day.is_some() && month.is_none()) {
            return None;
        }
        Some(Date {
            year: i32::try_from(year).ok()?,
            month,
            day,
        })
    }
}

impl ScorerInput {
    /// Whether question `key` was enabled (shown) for this response. Of
    /// contract 1, which does not say, every question was.
    pub fn enabled(&self, key: &str) -> bool {
        self.enabled.get(key).copied().unwrap_or(true)
    }

    /// The answer to `key` in its own form; `None` when unanswered.
    pub fn typed(&self, key: &str) -> Option<&AnswerValue> {
        self.typed_answers.get(key).and_then(Option::as_ref)
    }

    /// The option key chosen for a radio or select question.
    pub fn option(&self, key: &str) -> Option<&str> {
        match self.typed(key) {
            Some(AnswerValue::Text(s)) => Some(s),
            Some(_) => None,
            None => self.answer(key),
        }
    }

    /// The option keys ticked for a checkbox question, in definition order
    /// (empty when none).
    pub fn options(&self, key: &str) -> &[String] {
        match self.typed(key) {
            Some(AnswerValue::Keys(keys)) => keys,
            _ => &[],
        }
    }

    /// The whole number answered to a slider or integer question.
    pub fn integer(&self, key: &str) -> Option<i64> {
        match self.typed(key) {
            Some(AnswerValue::Integer(n)) => Some(*n),
            _ => None,
        }
    }

    /// The number answered to a decimal question (or to a slider or
    /// integer question, as a number).
    pub fn decimal(&self, key: &str) -> Option<f64> {
        match self.typed(key) {
            Some(AnswerValue::Decimal(n)) => Some(*n),
            // Whole answers of a definition are small: exact.
            #[allow(clippy::cast_precision_loss)]
            Some(AnswerValue::Integer(n)) => Some(*n as f64),
            _ => None,
        }
    }

    /// The text answered to a string or textarea question.
    pub fn text(&self, key: &str) -> Option<&str> {
        self.option(key)
    }

    /// The date answered to a date question.
    pub fn date(&self, key: &str) -> Option<Date> {
        self.option(key).and_then(Date::parse)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(json: serde_json::Value) -> ScorerInput {
        let mut base = serde_json::json!({
            "questionnaire": {"key": "x"},
            "values": {},
            "completed_at": "2026-03-01T09:30:00.000Z",
            "respondent_type": "patient",
        });
        if let (Some(base), Some(extra)) = (base.as_object_mut(), json.as_object()) {
            base.extend(extra.clone());
        }
        serde_json::from_value(base).expect("a scorer input")
    }

    #[test]
    fn typed_getters_read_each_kind_of_answer() {
        let i = input(serde_json::json!({
            "answers": {"v_1": "a1", "v_6": "2024-05"},
            "typed_answers": {"v_1": "a1", "v_2": ["a0", "a3"], "v_3": 7, "v_4": 7.5,
                              "v_5": "more sleep", "v_6": "2024-05", "v_7": null},
            "enabled": {"v_1": true, "v_7": false},
        }));
        assert_eq!(i.option("v_1"), Some("a1"));
        assert_eq!(i.options("v_2"), ["a0", "a3"]);
        assert!(i.options("v_1").is_empty());
        assert_eq!(i.integer("v_3"), Some(7));
        assert_eq!(i.decimal("v_3"), Some(7.0));
        assert_eq!(i.decimal("v_4"), Some(7.5));
        assert_eq!(i.integer("v_4"), None);
        assert_eq!(i.text("v_5"), Some("more sleep"));
        assert_eq!(
            i.date("v_6"),
            Some(Date {
                year: 2024,
                month: Some(5),
                day: None
            })
        );
        assert_eq!(i.typed("v_7"), None);
        assert!(!i.enabled("v_7"));
        assert!(i.enabled("v_1"));
        assert!(i.enabled("v_9"), "not said: enabled");
    }

    #[test]
    fn a_first_contract_input_reads_through_answers_and_everything_is_enabled() {
        let i = input(serde_json::json!({"answers": {"v_1": "a2"}}));
        assert_eq!(i.option("v_1"), Some("a2"));
        assert!(i.enabled("v_1"));
        assert_eq!(i.integer("v_1"), None);
    }

    #[test]
    fn dates_read_at_their_precision() {
        assert_eq!(
            Date::parse("1987").map(|d| (d.year, d.month)),
            Some((1987, None))
        );
        assert_eq!(
            Date::parse("2024-02-29"),
            Some(Date {
                year: 2024,
                month: Some(2),
                day: Some(29)
            })
        );
        assert_eq!(Date::parse("2024--01"), None);
        assert_eq!(Date::parse("x"), None);
    }
}
