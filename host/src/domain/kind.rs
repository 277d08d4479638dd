//! Question types (docs/api/catalog.md#question-types): what a question of
//! each type asks for and the limits its answers keep, checked from the
//! fields a definition writes for it. Reading an answer of a type is
//! `answer.rs`'s.

use serde::Deserialize;

use super::text::Text;

/// Every question type, as a definition names it.
pub const QUESTION_TYPES: &[&str] = &[
    "radio", "select", "checkbox", "slider", "integer", "decimal", "date", "string", "textarea",
    "display",
];

/// How long a `string` answer may be when the definition gives no
/// `max_length`, in characters.
pub const STRING_MAX_LENGTH: usize = 1000;

/// How long a `textarea` answer may be when the definition gives no
/// `max_length`, in characters.
pub const TEXTAREA_MAX_LENGTH: usize = 10_000;

/// The largest `max_length` a definition may set.
const MAX_LENGTH_LIMIT: usize = 100_000;

/// The largest magnitude of an integer bound: every integer up to it is
/// exact as a JSON number in any client (2^53).
const INTEGER_LIMIT: f64 = 9_007_199_254_740_992.0;

/// One answer option of a radio, select or checkbox question.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct OptionDef {
    pub key: String,
    pub value: i64,
    pub description: Text,
    /// Checkbox only: ticking it excludes every other option (as "none of
    /// these" does).
    #[serde(default)]
    pub exclusive: bool,
}

/// How much of a date a `date` question asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatePrecision {
    /// `2024-05-17`
    Day,
    /// `2024-05`
    Month,
    /// `2024`
    Year,
}

impl DatePrecision {
    pub fn name(self) -> &'static str {
        match self {
            DatePrecision::Day => "day",
            DatePrecision::Month => "month",
            DatePrecision::Year => "year",
        }
    }

    fn parse(name: &str) -> Option<DatePrecision> {
        [
            DatePrecision::Day,
            DatePrecision::Month,
            DatePrecision::Year,
        ]
        .into_iter()
        .find(|p| p.name() == name)
    }
}

/// A question's type with what its answers must keep.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// One option, as radio buttons.
    Radio,
    /// One option, from a drop-down list.
    Select,
    /// Any number of options; an exclusive option stands alone.
    Checkbox,
    /// A whole number from `min` to `max` in steps of `step`, with a text at
    /// each end. No position is preselected: untouched is unanswered.
    Slider {
        min: i64,
        max: i64,
        step: i64,
        min_label: Text,
        max_label: Text,
    },
    /// A whole number.
    Integer {
        min: Option<i64>,
        max: Option<i64>,
        unit: Option<Text>,
    },
    /// A number.
    Decimal {
        min: Option<f64>,
        max: Option<f64>,
        unit: Option<Text>,
    },
    /// A date, or a year and month, or a year.
    Date { precision: DatePrecision },
    /// A line of text.
    String { max_length: usize },
    /// Free text of several lines.
    Textarea { max_length: usize },
    /// A text block, not a question: never answered.
    Display,
}

impl Kind {
    /// The type's name in definitions and on the wire.
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Radio => "radio",
            Kind::Select => "select",
            Kind::Checkbox => "checkbox",
            Kind::Slider { .. } => "slider",
            Kind::Integer { .. } => "integer",
            Kind::Decimal { .. } => "decimal",
            Kind::Date { .. } => "date",
            Kind::String { .. } => "string",
            Kind::Textarea { .. } => "textarea",
            Kind::Display => "display",
        }
    }

    /// Whether its answers are option keys.
    pub fn has_options(&self) -> bool {
        matches!(self, Kind::Radio | Kind::Select | Kind::Checkbox)
    }

    /// Whether it takes an answer at all (all but `display`).
    pub fn answerable(&self) -> bool {
        !matches!(self, Kind::Display)
    }

    /// Whether its answer is a number (slider, integer, decimal).
    pub fn numeric(&self) -> bool {
        matches!(
            self,
            Kind::Slider { .. } | Kind::Integer { .. } | Kind::Decimal { .. }
        )
    }

    /// The unit of an integer or decimal question.
    pub fn unit(&self) -> Option<&Text> {
        match self {
            Kind::Integer { unit, .. } | Kind::Decimal { unit, .. } => unit.as_ref(),
            _ => None,
        }
    }

    /// The texts this type carries besides title and options, with the
    /// field name each is written under (the same names a translation
    /// uses).
    pub fn texts(&self) -> Vec<(&'static str, &Text)> {
        match self {
            Kind::Slider {
                min_label,
                max_label,
                ..
            } => vec![("min_label", min_label), ("max_label", max_label)],
            Kind::Integer { unit: Some(u), .. } | Kind::Decimal { unit: Some(u), .. } => {
                vec![("unit", u)]
            }
            _ => Vec::new(),
        }
    }

    /// The same texts, to change (a translation's overlay).
    pub fn texts_mut(&mut self) -> Vec<(&'static str, &mut Text)> {
        match self {
            Kind::Slider {
                min_label,
                max_label,
                ..
            } => vec![("min_label", min_label), ("max_label", max_label)],
            Kind::Integer { unit: Some(u), .. } | Kind::Decimal { unit: Some(u), .. } => {
                vec![("unit", u)]
            }
            _ => Vec::new(),
        }
    }
}

/// The fields a definition may write for some types only, as written.
#[derive(Debug, Clone, Default)]
pub struct KindFields {
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub step: Option<f64>,
    pub min_label: Option<Text>,
    pub max_label: Option<Text>,
    pub unit: Option<Text>,
    pub precision: Option<String>,
    pub max_length: Option<i64>,
}

impl KindFields {
    /// The names of the fields given, in a fixed order.
    fn given(&self) -> Vec<&'static str> {
        [
            ("min", self.min.is_some()),
            ("max", self.max.is_some()),
            ("step", self.step.is_some()),
            ("min_label", self.min_label.is_some()),
            ("max_label", self.max_label.is_some()),
            ("unit", self.unit.is_some()),
            ("precision", self.precision.is_some()),
            ("max_length", self.max_length.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .collect()
    }
}

/// The fields each type takes besides the common ones.
fn allowed(name: &str) -> &'static [&'static str] {
    match name {
        "slider" => &["min", "max", "step", "min_label", "max_label"],
        "integer" | "decimal" => &["min", "max", "unit"],
        "date" => &["precision"],
        "string" | "textarea" => &["max_length"],
        _ => &[],
    }
}

/// The type named `name` with `fields`, each problem reported to `err`
/// prefixed with `at` (the question's place). `None` when something is
/// wrong.
pub fn build(
    name: &str,
    fields: KindFields,
    at: &str,
    err: &mut impl FnMut(String),
) -> Option<Kind> {
    if !QUESTION_TYPES.contains(&name) {
        err(format!(
            "{at}: type {name:?} is not one of {QUESTION_TYPES:?}"
        ));
        return None;
    }
    let mut ok = true;
    for field in fields.given() {
        if !allowed(name).contains(&field) {
            err(format!("{at}: {field} does not apply to a {name} question"));
            ok = false;
        }
    }
    let mut fail = |msg: String| {
        err(format!("{at}: {msg}"));
        ok = false;
    };
    let whole = |value: Option<f64>, field: &str, fail: &mut dyn FnMut(String)| -> Option<i64> {
        let v = value?;
        if v.fract() != 0.0 || v.abs() > INTEGER_LIMIT {
            fail(format!("{field} must be a whole number"));
            return None;
        }
        // Whole and within 2^53: exact.
        #[allow(clippy::cast_possible_truncation)]
        Some(v as i64)
    };
    let kind = match name {
        "radio" => Kind::Radio,
        "select" => Kind::Select,
        "checkbox" => Kind::Checkbox,
        "display" => Kind::Display,
        "slider" => {
            let min = whole(fields.min, "min", &mut fail);
            let max = whole(fields.max, "max", &mut fail);
            let step = whole(fields.step, "step", &mut fail).unwrap_or(1);
            if fields.min.is_none() || fields.max.is_none() {
                fail("a slider needs min and max".into());
            }
            let (min_label, max_label) = match (fields.min_label, fields.max_label) {
                (Some(a), Some(b)) if !a.is_blank() && !b.is_blank() => (a, b),
                _ => {
                    fail("a slider needs min_label and max_label (the texts at its ends)".into());
                    (Text::Plain(String::new()), Text::Plain(String::new()))
                }
            };
            let (Some(min), Some(max)) = (min, max) else {
                return None;
            };
            if min >= max {
                fail(format!("min {min} must be below max {max}"));
            }
            if step < 1 {
                fail(format!("step {step} must be 1 or more"));
            } else if (max - min) % step != 0 {
                fail(format!("step {step} must divide max - min ({})", max - min));
            }
            Kind::Slider {
                min,
                max,
                step,
                min_label,
                max_label,
            }
        }
        "integer" => {
            let min = whole(fields.min, "min", &mut fail);
            let max = whole(fields.max, "max", &mut fail);
            if let (Some(a), Some(b)) = (min, max)
                && a > b
            {
                fail(format!("min {a} lies above max {b}"));
            }
            Kind::Integer {
                min,
                max,
                unit: fields.unit,
            }
        }
        "decimal" => {
            for (field, v) in [("min", fields.min), ("max", fields.max)] {
                if v.is_some_and(|v| !v.is_finite()) {
                    fail(format!("{field} must be a finite number"));
                }
            }
            if let (Some(a), Some(b)) = (fields.min, fields.max)
                && a > b
            {
                fail(format!("min {a} lies above max {b}"));
            }
            Kind::Decimal {
                min: fields.min,
                max: fields.max,
                unit: fields.unit,
            }
        }
        "date" => {
            let precision = match fields.precision.as_deref() {
                None => DatePrecision::Day,
                Some(p) => DatePrecision::parse(p).unwrap_or_else(|| {
                    fail(format!("precision {p:?} is not one of day, month, year"));
                    DatePrecision::Day
                }),
            };
            Kind::Date { precision }
        }
        _ => {
            let default = if name == "string" {
                STRING_MAX_LENGTH
            } else {
                TEXTAREA_MAX_LENGTH
            };
            let max_length = match fields.max_length {
                None => default,
                Some(n) => match usize::try_from(n) {
                    Ok(n) if (1..=MAX_LENGTH_LIMIT).contains(&n) => n,
                    _ => {
                        fail(format!(
                            "max_length {n} must lie from 1 to {MAX_LENGTH_LIMIT}"
                        ));
                        default
                    }
                },
            };
            if name == "string" {
                Kind::String { max_length }
            } else {
                Kind::Textarea { max_length }
            }
        }
    };
    if let Some(unit) = kind.unit()
        && unit.is_blank()
    {
        fail("unit is blank".into());
    }
    ok.then_some(kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn built(name: &str, fields: KindFields) -> Result<Kind, Vec<String>> {
        let mut errors = Vec::new();
        let kind = build(name, fields, "q", &mut |e| errors.push(e));
        kind.ok_or(errors)
    }

    fn text(s: &str) -> Option<Text> {
        Some(Text::Plain(s.into()))
    }

    #[test]
    fn a_slider_needs_whole_bounds_a_dividing_step_and_both_anchors() {
        let slider = KindFields {
            min: Some(0.0),
            max: Some(100.0),
            step: Some(5.0),
            min_label: text("Not at all"),
            max_label: text("Extremely"),
            ..KindFields::default()
        };
        let kind = built("slider", slider.clone()).expect("valid");
        assert!(matches!(
            kind,
            Kind::Slider {
                min: 0,
                max: 100,
                step: 5,
                ..
            }
        ));
        assert_eq!(kind.texts().len(), 2);

        let err = built(
            "slider",
            KindFields {
                step: Some(7.0),
                max_label: None,
                ..slider.clone()
            },
        )
        .expect_err("invalid");
        assert!(
            err.iter().any(|e| e.contains("step 7 must divide")),
            "{err:?}"
        );
        assert!(
            err.iter().any(|e| e.contains("min_label and max_label")),
            "{err:?}"
        );

        let err = built(
            "slider",
            KindFields {
                min: Some(0.5),
                ..slider
            },
        )
        .expect_err("invalid");
        assert!(
            err.iter().any(|e| e.contains("min must be a whole number")),
            "{err:?}"
        );
    }

    #[test]
    fn fields_of_another_type_are_refused_by_name() {
        let err = built(
            "radio",
            KindFields {
                min: Some(1.0),
                unit: text("drinks"),
                ..KindFields::default()
            },
        )
        .expect_err("invalid");
        assert_eq!(
            err,
            [
                "q: min does not apply to a radio question",
                "q: unit does not apply to a radio question"
            ]
        );
        let err = built("scale", KindFields::default()).expect_err("unknown");
        assert!(err[0].contains("type \"scale\" is not one of"), "{err:?}");
    }

    #[test]
    fn numbers_dates_and_texts_take_their_limits() {
        let int = built(
            "integer",
            KindFields {
                min: Some(0.0),
                max: Some(100.0),
                unit: text("drinks"),
                ..KindFields::default()
            },
        )
        .expect("valid");
        assert_eq!(int.unit(), text("drinks").as_ref());
        let err = built(
            "decimal",
            KindFields {
                min: Some(24.0),
                max: Some(0.0),
                ..KindFields::default()
            },
        )
        .expect_err("min above max");
        assert!(err[0].contains("min 24 lies above max 0"), "{err:?}");
        assert_eq!(
            built("date", KindFields::default()),
            Ok(Kind::Date {
                precision: DatePrecision::Day
            })
        );
        let month = KindFields {
            precision: Some("month".into()),
            ..KindFields::default()
        };
        assert_eq!(
            built("date", month),
            Ok(Kind::Date {
                precision: DatePrecision::Month
            })
        );
        let week = KindFields {
            precision: Some("week".into()),
            ..KindFields::default()
        };
        assert!(built("date", week).is_err());
        assert_eq!(
            built("string", KindFields::default()),
            Ok(Kind::String {
                max_length: STRING_MAX_LENGTH
            })
        );
        let none = KindFields {
            max_length: Some(0),
            ..KindFields::default()
        };
        assert!(built("textarea", none).is_err());
    }
}
