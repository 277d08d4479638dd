//! The parts of the questionnaire object the OpenAPI document describes
//! field by field (docs/api/catalog.md#question-types): a question of
//! every type, its options, a condition and a page. `questionnaires.rs`
//! writes these objects as JSON; the types here only give the document
//! their shape, so a client generator sees every type, page and condition.

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::ToSchema;

/// A question (or display item) of the questionnaire object. Which fields
/// appear depends on its `type`; a radio question has `title`, `type` and
/// `options` only, as in the original contract.
#[derive(Debug, Serialize, ToSchema)]
pub struct QuestionSchema {
    /// The question (every type but `display`).
    pub title: Option<String>,
    /// The text block of a `display` item, which takes no answer.
    pub text: Option<String>,
    #[serde(rename = "type")]
    pub kind: QuestionType,
    /// Option key to option, in definition order; `{}` for the types
    /// without options.
    pub options: BTreeMap<String, OptionSchema>,
    /// Slider (always), integer and decimal (where defined): the lowest
    /// answer allowed.
    pub min: Option<f64>,
    /// Slider (always), integer and decimal (where defined): the highest
    /// answer allowed.
    pub max: Option<f64>,
    /// Slider: the step between answers, from `min`.
    pub step: Option<i64>,
    /// Slider: the text at the `min` end.
    pub min_label: Option<String>,
    /// Slider: the text at the `max` end.
    pub max_label: Option<String>,
    /// Integer, decimal: the unit of the answer, where defined.
    pub unit: Option<String>,
    /// Date: how much of a date is asked.
    pub precision: Option<DatePrecisionSchema>,
    /// String, textarea: the longest answer, in characters.
    pub max_length: Option<u64>,
    /// The condition on earlier answers under which the question is asked.
    pub shown_if: Option<ConditionSchema>,
}

/// A question's type (docs/api/catalog.md#question-types), with the form
/// of its answer in `answer_data` and `values`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum QuestionType {
    /// One option: its key.
    Radio,
    /// One option from a drop-down: its key.
    Select,
    /// Any options: a list of their keys; an exclusive option stands alone.
    Checkbox,
    /// A whole number from `min` to `max` in steps of `step`.
    Slider,
    /// A whole number.
    Integer,
    /// A number.
    Decimal,
    /// An ISO date of the question's `precision`.
    Date,
    /// A line of text.
    String,
    /// Text of several lines.
    Textarea,
    /// No answer: a text block.
    Display,
}

/// How much of a date a date question asks.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DatePrecisionSchema {
    /// `2024-05-17`
    Day,
    /// `2024-05`
    Month,
    /// `2024`
    Year,
}

/// An answer option.
#[derive(Debug, Serialize, ToSchema)]
pub struct OptionSchema {
    /// The number a scorer reads for it.
    pub value: i64,
    pub description: String,
    /// Checkbox only, present when true: ticking it excludes the others.
    pub exclusive: Option<bool>,
}

/// A condition on earlier answers (docs/api/catalog.md#conditions): either
/// `question` with one test, or `all` / `any` with a list of conditions.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConditionSchema {
    /// The question tested (a key in the form `use_legacy_keys` asks for).
    pub question: Option<String>,
    /// The answer is this option key (of a checkbox: it is ticked), number,
    /// date or text.
    pub equals: Option<serde_json::Value>,
    /// The answer is not this, or the question is unanswered.
    pub not_equals: Option<serde_json::Value>,
    /// The number (of an option question: the option's value) lies above.
    pub greater_than: Option<f64>,
    /// The number (of an option question: the option's value) lies below.
    pub less_than: Option<f64>,
    /// The answer is one of these (of a checkbox: one of them is ticked).
    pub any_of: Option<Vec<serde_json::Value>>,
    /// true: the question is answered; false: it is not.
    pub answered: Option<bool>,
    /// Every one of these holds.
    #[schema(no_recursion)]
    pub all: Option<Vec<ConditionSchema>>,
    /// At least one of these holds.
    #[schema(no_recursion)]
    pub any: Option<Vec<ConditionSchema>>,
}

/// A page of a questionnaire divided into pages.
#[derive(Debug, Serialize, ToSchema)]
pub struct PageSchema {
    pub key: String,
    pub title: Option<String>,
    /// A text shown above the page's questions.
    pub intro: Option<String>,
    /// Its question keys, in definition order; every question is on one
    /// page.
    pub questions: Vec<String>,
    /// The condition on answers of earlier pages under which it is shown.
    pub shown_if: Option<ConditionSchema>,
}
