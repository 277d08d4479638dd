//! One answer, typed: read once from its JSON form (an option key, a list
//! of option keys, a number, a text, an ISO date) against its question's
//! type and limits (docs/api/responses.md#answer-data), and written back in
//! the same form. Nothing past this point sees an answer as raw JSON.

use std::borrow::Cow;

use serde_json::Value;

use super::kind::{DatePrecision, Kind, OptionDef};

/// An answer to one question.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The option key chosen (radio, select).
    Option(String),
    /// The option keys ticked (checkbox), in definition order; never empty.
    Options(Vec<String>),
    /// A whole number (integer, slider).
    Integer(i64),
    /// A number (decimal), finite.
    Decimal(f64),
    /// A date, or a year and month, or a year.
    Date(PartialDate),
    /// Text (string, textarea), not blank.
    Text(String),
}

/// A date to the precision its question asks: `2024-05-17`, `2024-05` or
/// `2024`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PartialDate {
    pub year: u16,
    pub month: Option<u8>,
    pub day: Option<u8>,
}

impl PartialDate {
    /// Reads exactly the form of `precision`; a date that does not exist
    /// (2023-02-29) is `None`.
    pub fn parse(text: &str, precision: DatePrecision) -> Option<PartialDate> {
        let digits = |s: &str, n: usize| -> Option<u16> {
            if s.len() == n && s.bytes().all(|b| b.is_ascii_digit()) {
                s.parse().ok()
            } else {
                None
            }
        };
        let parts: Vec<&str> = text.split('-').collect();
        let wanted = match precision {
            DatePrecision::Year => 1,
            DatePrecision::Month => 2,
            DatePrecision::Day => 3,
        };
        if parts.len() != wanted {
            return None;
        }
        let year = digits(parts[0], 4)?;
        let month = match parts.get(1) {
            Some(m) => Some(
                u8::try_from(digits(m, 2)?)
                    .ok()
                    .filter(|m| (1..=12).contains(m))?,
            ),
            None => None,
        };
        let day = match parts.get(2) {
            Some(d) => {
                let d = u8::try_from(digits(d, 2)?).ok()?;
                chrono::NaiveDate::from_ymd_opt(
                    i32::from(year),
                    u32::from(month.unwrap_or(1)),
                    u32::from(d),
                )?;
                Some(d)
            }
            None => None,
        };
        Some(PartialDate { year, month, day })
    }
}

impl std::fmt::Display for PartialDate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04}", self.year)?;
        if let Some(m) = self.month {
            write!(f, "-{m:02}")?;
        }
        if let Some(d) = self.day {
            write!(f, "-{d:02}")?;
        }
        Ok(())
    }
}

/// Why an entry of `answer_data` was refused: the wire codes of
/// docs/api/responses.md#answer-data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AnswerError {
    /// The key is no question of the questionnaire.
    UnknownQuestion,
    /// A radio answer that is not one of its option keys (kept as the
    /// original contract has it, docs/api/quirks.md).
    InvalidOption,
    /// A select or checkbox answer naming a key that is not an option.
    NotAnOption,
    /// The wrong JSON type, a date that does not exist or is not in the
    /// question's form, a fraction for a whole number, a slider value off
    /// its steps, an exclusive option with others, an option twice, or an
    /// answer to a display item.
    Invalid,
    /// A number beyond the question's min or max.
    OutOfRange,
    /// A text longer than the question's max_length (in characters).
    TooLong,
    /// An answer to a question that is not enabled (`?strict=true` only).
    NotEnabled,
}

impl AnswerError {
    pub fn code(self) -> &'static str {
        match self {
            AnswerError::UnknownQuestion => "unknown_question",
            AnswerError::InvalidOption => "invalid_option",
            AnswerError::NotAnOption => "not_an_option",
            AnswerError::Invalid => "invalid",
            AnswerError::OutOfRange => "out_of_range",
            AnswerError::TooLong => "too_long",
            AnswerError::NotEnabled => "not_enabled",
        }
    }
}

impl Answer {
    /// Reads `value` as an answer to a question of `kind` with `options`.
    /// `Ok(None)` is unanswered: null, an empty list of a checkbox, a blank
    /// text.
    pub fn parse(
        kind: &Kind,
        options: &[OptionDef],
        value: &Value,
    ) -> Result<Option<Answer>, AnswerError> {
        if value.is_null() {
            return Ok(None);
        }
        let known = |key: &str| options.iter().any(|o| o.key == key);
        match kind {
            Kind::Radio => match value {
                Value::String(key) if known(key) => Ok(Some(Answer::Option(key.clone()))),
                _ => Err(AnswerError::InvalidOption),
            },
            Kind::Select => match value {
                Value::String(key) if known(key) => Ok(Some(Answer::Option(key.clone()))),
                Value::String(_) => Err(AnswerError::NotAnOption),
                _ => Err(AnswerError::Invalid),
            },
            Kind::Checkbox => {
                let Value::Array(items) = value else {
                    return Err(AnswerError::Invalid);
                };
                let mut keys = Vec::with_capacity(items.len());
                for item in items {
                    let Value::String(key) = item else {
                        return Err(AnswerError::Invalid);
                    };
                    keys.push(key.as_str());
                }
                Self::ticked(options, &keys)
            }
            Kind::Slider { min, max, step, .. } => {
                let n = value.as_i64().ok_or(AnswerError::Invalid)?;
                if n < *min || n > *max {
                    Err(AnswerError::OutOfRange)
                } else if (n - min) % step != 0 {
                    Err(AnswerError::Invalid)
                } else {
                    Ok(Some(Answer::Integer(n)))
                }
            }
            Kind::Integer { min, max, .. } => {
                let n = value.as_i64().ok_or(AnswerError::Invalid)?;
                if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                    Err(AnswerError::OutOfRange)
                } else {
                    Ok(Some(Answer::Integer(n)))
                }
            }
            Kind::Decimal { min, max, .. } => {
                let n = match value {
                    Value::Number(n) => n.as_f64().filter(|n| n.is_finite()),
                    _ => None,
                }
                .ok_or(AnswerError::Invalid)?;
                if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                    Err(AnswerError::OutOfRange)
                } else {
                    Ok(Some(Answer::Decimal(n)))
                }
            }
            Kind::Date { precision } => match value {
                Value::String(s) => PartialDate::parse(s, *precision)
                    .map(|d| Some(Answer::Date(d)))
                    .ok_or(AnswerError::Invalid),
                _ => Err(AnswerError::Invalid),
            },
            Kind::String { max_length } | Kind::Textarea { max_length } => match value {
                Value::String(s) if s.trim().is_empty() => Ok(None),
                Value::String(s) if s.chars().count() > *max_length => Err(AnswerError::TooLong),
                Value::String(s) => Ok(Some(Answer::Text(s.clone()))),
                _ => Err(AnswerError::Invalid),
            },
            Kind::Display => Err(AnswerError::Invalid),
        }
    }

    /// Reads the values a form sent for a question of `kind` (one per
    /// field of that name; several for a checkbox): what [`Answer::parse`]
    /// reads from JSON, from text. No value or an empty one is unanswered;
    /// a decimal may use a comma.
    pub fn from_form(
        kind: &Kind,
        options: &[OptionDef],
        values: &[&str],
    ) -> Result<Option<Answer>, AnswerError> {
        if let Kind::Checkbox = kind {
            let ticked: Vec<&str> = values.iter().copied().filter(|v| !v.is_empty()).collect();
            return Self::ticked(options, &ticked);
        }
        // The last value of a field counts, as browsers send one.
        let Some(text) = values.last().map(|v| v.trim()).filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        let value = match kind {
            Kind::Slider { .. } | Kind::Integer { .. } => match text.parse::<i64>() {
                Ok(n) => Value::from(n),
                Err(_) => return Err(AnswerError::Invalid),
            },
            Kind::Decimal { .. } => match text.replace(',', ".").parse::<f64>() {
                Ok(n) if n.is_finite() => Value::from(n),
                _ => return Err(AnswerError::Invalid),
            },
            // Texts as typed, surrounding blanks included.
            Kind::String { .. } | Kind::Textarea { .. } => {
                Value::String(values.last().copied().unwrap_or_default().to_owned())
            }
            _ => Value::String(text.to_owned()),
        };
        Self::parse(kind, options, &value)
    }

    /// The checkbox answer ticking `keys`: each an option, none twice, an
    /// exclusive one alone; in definition order. None ticked is unanswered.
    pub fn ticked(options: &[OptionDef], keys: &[&str]) -> Result<Option<Answer>, AnswerError> {
        let mut ticked = vec![false; options.len()];
        for key in keys {
            let i = options
                .iter()
                .position(|o| o.key == *key)
                .ok_or(AnswerError::NotAnOption)?;
            if std::mem::replace(&mut ticked[i], true) {
                return Err(AnswerError::Invalid);
            }
        }
        if keys.len() > 1 && options.iter().zip(&ticked).any(|(o, &t)| t && o.exclusive) {
            return Err(AnswerError::Invalid);
        }
        let keys: Vec<String> = options
            .iter()
            .zip(&ticked)
            .filter(|(_, t)| **t)
            .map(|(o, _)| o.key.clone())
            .collect();
        Ok((!keys.is_empty()).then_some(Answer::Options(keys)))
    }

    /// The answer in its JSON form: what `parse` reads.
    pub fn to_json(&self) -> Value {
        match self {
            Answer::Option(key) | Answer::Text(key) => Value::String(key.clone()),
            Answer::Options(keys) => {
                Value::Array(keys.iter().cloned().map(Value::String).collect())
            }
            Answer::Integer(n) => Value::from(*n),
            Answer::Decimal(n) => Value::from(*n),
            Answer::Date(d) => Value::String(d.to_string()),
        }
    }

    /// The number a scorer reads for it (`values` of the scorer input):
    /// the chosen option's value, the sum of the ticked options' values,
    /// the number itself; none for a date or a text.
    pub fn value(&self, options: &[OptionDef]) -> Option<f64> {
        let of = |key: &str| options.iter().find(|o| o.key == key).map(|o| o.value);
        match self {
            // Option values are small integers in definitions: exact.
            #[allow(clippy::cast_precision_loss)]
            Answer::Option(key) => of(key).map(|v| v as f64),
            #[allow(clippy::cast_precision_loss)]
            Answer::Options(keys) => Some(keys.iter().filter_map(|k| of(k)).sum::<i64>() as f64),
            #[allow(clippy::cast_precision_loss)]
            Answer::Integer(n) => Some(*n as f64),
            Answer::Decimal(n) => Some(*n),
            Answer::Date(_) | Answer::Text(_) => None,
        }
    }

    /// The answer as one string, where it is one: an option key, a text, a
    /// date (the `answers` of the scorer contract's first version).
    pub fn as_text(&self) -> Option<Cow<'_, str>> {
        match self {
            Answer::Option(s) | Answer::Text(s) => Some(Cow::Borrowed(s)),
            Answer::Date(d) => Some(Cow::Owned(d.to_string())),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::text::Text;

    fn options() -> Vec<OptionDef> {
        ["a0", "a1", "a2", "none"]
            .into_iter()
            .enumerate()
            .map(|(i, key)| OptionDef {
                key: key.into(),
                value: i64::try_from(i).unwrap_or_default() * 10,
                description: Text::Plain(key.into()),
                exclusive: key == "none",
            })
            .collect()
    }

    fn parse(kind: &Kind, value: Value) -> Result<Option<Answer>, AnswerError> {
        Answer::parse(kind, &options(), &value)
    }

    #[test]
    fn radio_keeps_invalid_option_for_every_wrong_answer_and_select_splits_it() {
        assert_eq!(
            parse(&Kind::Radio, json!("a1")),
            Ok(Some(Answer::Option("a1".into())))
        );
        assert_eq!(
            parse(&Kind::Radio, json!("a9")),
            Err(AnswerError::InvalidOption)
        );
        assert_eq!(
            parse(&Kind::Radio, json!(1)),
            Err(AnswerError::InvalidOption)
        );
        assert_eq!(parse(&Kind::Radio, Value::Null), Ok(None));
        assert_eq!(
            parse(&Kind::Select, json!("a9")),
            Err(AnswerError::NotAnOption)
        );
        assert_eq!(
            parse(&Kind::Select, json!(["a1"])),
            Err(AnswerError::Invalid)
        );
    }

    #[test]
    fn checkbox_answers_are_distinct_options_in_definition_order_with_exclusive_ones_alone() {
        let answer = parse(&Kind::Checkbox, json!(["a2", "a0"])).expect("valid");
        assert_eq!(
            answer,
            Some(Answer::Options(vec!["a0".into(), "a2".into()]))
        );
        let answer = answer.expect("answered");
        assert_eq!(answer.to_json(), json!(["a0", "a2"]));
        assert_eq!(answer.value(&options()), Some(20.0));
        assert_eq!(parse(&Kind::Checkbox, json!([])), Ok(None));
        assert_eq!(
            parse(&Kind::Checkbox, json!(["none"])).map(|a| a.is_some()),
            Ok(true)
        );
        assert_eq!(
            parse(&Kind::Checkbox, json!(["none", "a1"])),
            Err(AnswerError::Invalid)
        );
        assert_eq!(
            parse(&Kind::Checkbox, json!(["a1", "a1"])),
            Err(AnswerError::Invalid)
        );
        assert_eq!(
            parse(&Kind::Checkbox, json!(["a7"])),
            Err(AnswerError::NotAnOption)
        );
        assert_eq!(
            parse(&Kind::Checkbox, json!("a1")),
            Err(AnswerError::Invalid)
        );
        assert_eq!(
            parse(&Kind::Checkbox, json!([1])),
            Err(AnswerError::Invalid)
        );
    }

    #[test]
    fn numbers_keep_their_range_and_sliders_their_steps() {
        let slider = Kind::Slider {
            min: 0,
            max: 100,
            step: 10,
            min_label: Text::Plain("none".into()),
            max_label: Text::Plain("all".into()),
        };
        assert_eq!(parse(&slider, json!(30)), Ok(Some(Answer::Integer(30))));
        assert_eq!(parse(&slider, json!(35)), Err(AnswerError::Invalid));
        assert_eq!(parse(&slider, json!(110)), Err(AnswerError::OutOfRange));
        assert_eq!(parse(&slider, json!(30.0)), Err(AnswerError::Invalid));
        assert_eq!(parse(&slider, json!("30")), Err(AnswerError::Invalid));
        let integer = Kind::Integer {
            min: Some(0),
            max: None,
            unit: None,
        };
        assert_eq!(parse(&integer, json!(-1)), Err(AnswerError::OutOfRange));
        assert_eq!(parse(&integer, json!(2.5)), Err(AnswerError::Invalid));
        assert_eq!(parse(&integer, json!(400)), Ok(Some(Answer::Integer(400))));
        let decimal = Kind::Decimal {
            min: Some(0.0),
            max: Some(24.0),
            unit: None,
        };
        assert_eq!(parse(&decimal, json!(7.5)), Ok(Some(Answer::Decimal(7.5))));
        assert_eq!(parse(&decimal, json!(8)), Ok(Some(Answer::Decimal(8.0))));
        assert_eq!(parse(&decimal, json!(24.5)), Err(AnswerError::OutOfRange));
        assert_eq!(parse(&decimal, json!("7.5")), Err(AnswerError::Invalid));
        assert_eq!(Answer::Decimal(7.5).value(&[]), Some(7.5));
    }

    #[test]
    fn dates_take_exactly_the_form_of_their_precision_and_must_exist() {
        let date = |p| Kind::Date { precision: p };
        let day = date(DatePrecision::Day);
        let month = date(DatePrecision::Month);
        let year = date(DatePrecision::Year);
        let got = parse(&day, json!("2024-02-29")).expect("a leap day");
        assert_eq!(got.as_ref().map(Answer::to_json), Some(json!("2024-02-29")));
        assert_eq!(parse(&day, json!("2023-02-29")), Err(AnswerError::Invalid));
        assert_eq!(parse(&day, json!("2024-2-9")), Err(AnswerError::Invalid));
        assert_eq!(parse(&day, json!("2024-05")), Err(AnswerError::Invalid));
        assert_eq!(
            parse(&month, json!("2024-05")).map(|a| a.map(|a| a.to_json())),
            Ok(Some(json!("2024-05")))
        );
        assert_eq!(parse(&month, json!("2024-13")), Err(AnswerError::Invalid));
        assert_eq!(parse(&year, json!("1987")).map(|a| a.is_some()), Ok(true));
        assert_eq!(parse(&year, json!(1987)), Err(AnswerError::Invalid));
        assert_eq!(parse(&year, json!("87")), Err(AnswerError::Invalid));
        assert_eq!(
            Answer::Date(PartialDate {
                year: 2024,
                month: Some(5),
                day: None
            })
            .value(&[]),
            None
        );
    }

    #[test]
    fn form_fields_read_as_their_json_would() {
        let form = |kind: &Kind, values: &[&str]| Answer::from_form(kind, &options(), values);
        assert_eq!(
            form(&Kind::Radio, &["a0", "a2"]),
            Ok(Some(Answer::Option("a2".into())))
        );
        assert_eq!(form(&Kind::Radio, &[""]), Ok(None));
        assert_eq!(form(&Kind::Radio, &["a9"]), Err(AnswerError::InvalidOption));
        assert_eq!(
            form(&Kind::Checkbox, &["a2", "a0"]),
            Ok(Some(Answer::Options(vec!["a0".into(), "a2".into()])))
        );
        assert_eq!(form(&Kind::Checkbox, &[]), Ok(None));
        let decimal = Kind::Decimal {
            min: None,
            max: None,
            unit: None,
        };
        assert_eq!(form(&decimal, &["7,5"]), Ok(Some(Answer::Decimal(7.5))));
        assert_eq!(form(&decimal, &["seven"]), Err(AnswerError::Invalid));
        let integer = Kind::Integer {
            min: None,
            max: Some(10),
            unit: None,
        };
        assert_eq!(form(&integer, &[" 12 "]), Err(AnswerError::OutOfRange));
        assert_eq!(form(&integer, &["1.5"]), Err(AnswerError::Invalid));
        let string = Kind::String { max_length: 10 };
        assert_eq!(
            form(&string, &[" hi "]),
            Ok(Some(Answer::Text(" hi ".into())))
        );
    }

    #[test]
    fn texts_count_characters_and_blank_is_unanswered() {
        let string = Kind::String { max_length: 3 };
        assert_eq!(
            parse(&string, json!("ééé")),
            Ok(Some(Answer::Text("ééé".into())))
        );
        assert_eq!(parse(&string, json!("éééé")), Err(AnswerError::TooLong));
        assert_eq!(parse(&string, json!("  ")), Ok(None));
        assert_eq!(parse(&string, json!(3)), Err(AnswerError::Invalid));
        assert_eq!(parse(&Kind::Display, json!("x")), Err(AnswerError::Invalid));
        assert_eq!(parse(&Kind::Display, Value::Null), Ok(None));
    }
}
