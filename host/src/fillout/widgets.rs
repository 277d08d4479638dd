//! One question on a page, by type (docs/api/fill-out.md#question-types):
//! plain form controls that work without JavaScript, each labelled by its
//! question, with its hint and its error tied to it (`aria-describedby`).
//! A question of several controls (options, a scale, a date) is a
//! fieldset whose legend is the question; one of a single control is a
//! label and the control. The control a page's error summary links to has
//! the id `q-<key>`.
//!
//! A slider is a row of radio buttons from min to max by step with the
//! anchor texts at the ends: nothing is chosen until the respondent
//! chooses, so an untouched slider stays unanswered, and the arrow keys
//! move along it as in any radio group.

use std::collections::BTreeMap;

use super::html::Html;
use super::i18n::{Lang, Msg};
use crate::domain::answer::AnswerError;
use crate::domain::kind::{DatePrecision, Kind};
use crate::domain::question::Question;
use crate::domain::questionnaire::Questionnaire;
use crate::domain::text::Text;
use crate::domain::variant::Variant;

/// The form fields of a date question of this precision, by the suffix
/// added to its key (`v_7.year`), in the order shown.
pub fn date_parts(precision: DatePrecision) -> &'static [(&'static str, Msg)] {
    match precision {
        DatePrecision::Day => &[
            ("day", Msg::Day),
            ("month", Msg::Month),
            ("year", Msg::Year),
        ],
        DatePrecision::Month => &[("month", Msg::Month), ("year", Msg::Year)],
        DatePrecision::Year => &[("year", Msg::Year)],
    }
}

/// Why a question of a submitted page is not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuestionError {
    /// Required and not answered.
    Unanswered,
    /// Answered with what the question does not take.
    Answer(AnswerError),
}

/// A question about to be shown, with what it needs around it.
#[derive(Debug)]
pub struct Item<'a> {
    pub q: &'a Questionnaire,
    pub variant: &'a Variant,
    pub lang: Lang,
    pub question: &'a Question,
    /// Its number among the questions shown; none for a display item.
    pub number: Option<usize>,
    /// The form's values so far, by field name.
    pub values: &'a BTreeMap<String, Vec<String>>,
    pub error: Option<QuestionError>,
    /// Shown for the first time after the page was sent (its condition
    /// came to hold on that page).
    pub new: bool,
}

impl Item<'_> {
    fn text(&self, text: &Text) -> String {
        self.variant.render(self.q, text, self.lang.code())
    }

    fn key(&self) -> &str {
        &self.question.key
    }

    fn value(&self, field: &str) -> &str {
        self.values
            .get(field)
            .and_then(|v| v.last())
            .map_or("", String::as_str)
    }

    fn chosen(&self, option: &str) -> bool {
        self.values
            .get(self.key())
            .is_some_and(|v| v.iter().any(|o| o == option))
    }

    /// ` lang="xx"` when `text` is shown in another language than the page.
    fn text_language(&self, h: &mut Html, text: &Text) {
        let shown_in = text.language(self.lang.code(), &self.q.language);
        if shown_in != self.lang.code() {
            h.attr("lang", shown_in);
        }
    }

    /// The ids that describe the question: its hint, then its error.
    fn described_by(&self, hint: bool) -> Option<String> {
        let mut ids = Vec::new();
        if hint {
            ids.push(format!("h-{}", self.key()));
        }
        if self.error.is_some() {
            ids.push(format!("e-{}", self.key()));
        }
        (!ids.is_empty()).then(|| ids.join(" "))
    }
}

/// Writes one question.
pub fn question(h: &mut Html, item: &Item<'_>) {
    match &item.question.kind {
        Kind::Display => display(h, item),
        Kind::Radio => options(h, item, "radio"),
        Kind::Checkbox => options(h, item, "checkbox"),
        Kind::Slider { .. } => scale(h, item),
        Kind::Date { precision } => date(h, item, *precision),
        Kind::Select => single(h, item, select),
        Kind::Integer { .. } | Kind::Decimal { .. } => single(h, item, number),
        Kind::String { max_length } | Kind::Textarea { max_length } => {
            let max = *max_length;
            single(h, item, move |h, item, described| {
                text(h, item, described, max)
            });
        }
    }
}

/// A text block: paragraphs split at blank lines.
fn display(h: &mut Html, item: &Item<'_>) {
    h.raw("<div class=\"display\"");
    item.text_language(h, &item.question.title);
    h.raw(">\n");
    let text = item.text(&item.question.title);
    for paragraph in text.split("\n\n").filter(|p| !p.trim().is_empty()) {
        h.raw("<p>").text(paragraph.trim()).raw("</p>\n");
    }
    h.raw("</div>\n");
}

/// The question's number and text, its required mark and its "new" tag:
/// the inside of a legend or label.
fn title(h: &mut Html, item: &Item<'_>) {
    if let Some(number) = item.number {
        h.raw("<span class=\"number\">")
            .number(number)
            .raw(".</span> ");
    }
    h.text(&item.text(&item.question.title));
    if item.question.required {
        h.raw(" <span class=\"required\" aria-hidden=\"true\">*</span><span class=\"visually-hidden\"");
        h.attr("lang", item.lang.code()).raw(">");
        h.text(Msg::Required.text(item.lang)).raw("</span>");
    }
    if item.new {
        h.raw(" <span class=\"tag\"");
        h.attr("lang", item.lang.code()).raw(">");
        h.text(Msg::NewTag.text(item.lang)).raw("</span>");
    }
}

/// The hint (`h-<key>`) and the error (`e-<key>`) under a title.
fn hint_and_error(h: &mut Html, item: &Item<'_>, hint: Option<&str>) {
    if let Some(hint) = hint {
        h.raw("<p class=\"hint\"")
            .attr("id", &format!("h-{}", item.key()))
            .raw(">")
            .text(hint)
            .raw("</p>\n");
    }
    if let Some(error) = item.error {
        h.raw("<p class=\"error\"")
            .attr("id", &format!("e-{}", item.key()))
            .raw(">")
            .text(&message(item, error))
            .raw("</p>\n");
    }
}

/// A fieldset around a question of several controls.
fn fieldset(h: &mut Html, item: &Item<'_>, hint: Option<&str>, body: impl FnOnce(&mut Html)) {
    h.raw("<fieldset").attr("id", &format!("q-{}", item.key()));
    let mut class = Vec::new();
    if item.error.is_some() {
        class.push("invalid");
    }
    if item.new {
        class.push("new");
    }
    if !class.is_empty() {
        h.attr("class", &class.join(" "));
    }
    if let Some(ids) = item.described_by(hint.is_some()) {
        h.attr("aria-describedby", &ids);
    }
    h.raw(">\n<legend");
    item.text_language(h, &item.question.title);
    h.raw(">");
    title(h, item);
    h.raw("</legend>\n");
    hint_and_error(h, item, hint);
    body(h);
    h.raw("</fieldset>\n");
}

/// Radio buttons or checkboxes, one labelled control per option; before
/// the first exclusive option of a checkbox question, "or".
fn options(h: &mut Html, item: &Item<'_>, input: &'static str) {
    fieldset(h, item, None, |h| {
        h.raw("<div class=\"options\">\n");
        let mut or_said = false;
        for option in &item.question.options {
            if option.exclusive && !or_said && input == "checkbox" {
                h.raw("<p class=\"or\">")
                    .text(Msg::Or.text(item.lang))
                    .raw("</p>\n");
                or_said = true;
            }
            h.raw("<label");
            item.text_language(h, &option.description);
            h.raw("><input");
            h.attr("type", input)
                .attr("name", item.key())
                .attr("value", &option.key);
            if item.chosen(&option.key) {
                h.raw(" checked");
            }
            h.raw("> <span>")
                .text(&item.text(&option.description))
                .raw("</span></label>\n");
        }
        h.raw("</div>\n");
    });
}

/// A slider: a radio button per step, the anchor texts at the ends
/// describing the first and the last.
fn scale(h: &mut Html, item: &Item<'_>) {
    let Kind::Slider {
        min,
        max,
        step,
        min_label,
        max_label,
    } = &item.question.kind
    else {
        return;
    };
    let lang = item.lang;
    let hint = format!(
        "{} {} {min} {} {max}.",
        Msg::ScaleHint.text(lang),
        Msg::From.text(lang),
        Msg::UpTo.text(lang)
    );
    let key = item.key();
    fieldset(h, item, Some(&hint), |h| {
        h.raw("<div class=\"scale\">\n<p class=\"anchors\">");
        h.raw("<span").attr("id", &format!("lo-{key}"));
        item.text_language(h, min_label);
        h.raw(">").text(&item.text(min_label)).raw("</span> ");
        h.raw("<span").attr("id", &format!("hi-{key}"));
        item.text_language(h, max_label);
        h.raw(">").text(&item.text(max_label)).raw("</span></p>\n");
        h.raw("<div class=\"steps\">\n");
        let mut n = *min;
        while n <= *max {
            let value = n.to_string();
            h.raw("<label><input type=\"radio\"")
                .attr("name", key)
                .attr("value", &value);
            if item.chosen(&value) {
                h.raw(" checked");
            }
            if n == *min {
                h.attr("aria-describedby", &format!("lo-{key}"));
            } else if n == *max {
                h.attr("aria-describedby", &format!("hi-{key}"));
            }
            h.raw("><span>").text(&value).raw("</span></label>\n");
            n += step;
        }
        h.raw("</div>\n</div>\n");
    });
}

/// A date: a text field for each part its precision asks, labelled.
fn date(h: &mut Html, item: &Item<'_>, precision: DatePrecision) {
    let lang = item.lang;
    let hint = match precision {
        DatePrecision::Day => Msg::DateHintDay,
        DatePrecision::Month => Msg::DateHintMonth,
        DatePrecision::Year => Msg::DateHintYear,
    };
    let key = item.key();
    fieldset(h, item, Some(hint.text(lang)), |h| {
        h.raw("<div class=\"date\">\n");
        for (i, (part, label)) in date_parts(precision).iter().enumerate() {
            // The first part takes the summary's link.
            let id = if i == 0 {
                format!("q-{key}-first")
            } else {
                format!("q-{key}-{part}")
            };
            let field = format!("{key}.{part}");
            h.raw("<div><label").attr("for", &id).raw(">");
            h.text(label.text(lang)).raw("</label>");
            h.raw("<input type=\"text\" inputmode=\"numeric\" autocomplete=\"off\"")
                .attr("id", &id)
                .attr("name", &field)
                .attr("class", if *part == "year" { "year" } else { "two" })
                .attr("maxlength", if *part == "year" { "4" } else { "2" })
                .attr("value", item.value(&field))
                .raw("></div>\n");
        }
        h.raw("</div>\n");
    });
}

/// A question of one control: a label (the question), the hint and the
/// error, then the control `control` writes, which takes the id
/// `q-<key>` and is described by the ids given.
fn single(h: &mut Html, item: &Item<'_>, control: impl FnOnce(&mut Html, &Item<'_>, Option<&str>)) {
    let key = item.key();
    let hint = match &item.question.kind {
        Kind::Integer { min, max, .. } => Some(range(
            item.lang,
            Msg::WholeNumber,
            min.map(|n| n.to_string()),
            max.map(|n| n.to_string()),
        )),
        Kind::Decimal { min, max, .. } => Some(range(
            item.lang,
            Msg::Number,
            min.map(|n| decimal(n, item.lang)),
            max.map(|n| decimal(n, item.lang)),
        )),
        Kind::String { max_length } | Kind::Textarea { max_length } => Some(format!(
            "{} {max_length} {}",
            Msg::MaxLengthBefore.text(item.lang),
            Msg::MaxLengthAfter.text(item.lang)
        )),
        _ => None,
    };
    h.raw("<div");
    let mut class = vec!["question"];
    if item.error.is_some() {
        class.push("invalid");
    }
    if item.new {
        class.push("new");
    }
    h.attr("class", &class.join(" ")).raw(">\n");
    h.raw("<label class=\"title\"")
        .attr("for", &format!("q-{key}"));
    item.text_language(h, &item.question.title);
    h.raw(">");
    title(h, item);
    h.raw("</label>\n");
    hint_and_error(h, item, hint.as_deref());
    let described = item.described_by(hint.is_some());
    control(h, item, described.as_deref());
    h.raw("</div>\n");
}

/// ` id="q-<key>" name="<key>"` and the description of a control.
fn control_attrs(h: &mut Html, item: &Item<'_>, described: Option<&str>) {
    h.attr("id", &format!("q-{}", item.key()))
        .attr("name", item.key());
    if let Some(ids) = described {
        h.attr("aria-describedby", ids);
    }
    if item.error.is_some() {
        h.raw(" aria-invalid=\"true\"");
    }
}

/// A drop-down list, empty until chosen.
fn select(h: &mut Html, item: &Item<'_>, described: Option<&str>) {
    h.raw("<select");
    control_attrs(h, item, described);
    h.raw(">\n<option value=\"\">")
        .text(Msg::ChooseOne.text(item.lang))
        .raw("</option>\n");
    for option in &item.question.options {
        h.raw("<option").attr("value", &option.key);
        item.text_language(h, &option.description);
        if item.chosen(&option.key) {
            h.raw(" selected");
        }
        h.raw(">")
            .text(&item.text(&option.description))
            .raw("</option>\n");
    }
    h.raw("</select>\n");
}

/// A number: a text field (a number field would change its value when
/// scrolled over, and takes letters such as `e`), with its unit after it.
fn number(h: &mut Html, item: &Item<'_>, described: Option<&str>) {
    let whole = matches!(item.question.kind, Kind::Integer { .. });
    let unit = item.question.kind.unit();
    let key = item.key();
    h.raw("<div class=\"with-unit\"><input type=\"text\" autocomplete=\"off\" class=\"number\"");
    h.attr("inputmode", if whole { "numeric" } else { "decimal" });
    let described = match (unit, described) {
        (Some(_), Some(ids)) => Some(format!("{ids} u-{key}")),
        (Some(_), None) => Some(format!("u-{key}")),
        (None, ids) => ids.map(str::to_owned),
    };
    control_attrs(h, item, described.as_deref());
    h.attr("value", item.value(key)).raw(">");
    if let Some(unit) = unit {
        h.raw(" <span class=\"unit\"")
            .attr("id", &format!("u-{key}"));
        item.text_language(h, unit);
        h.raw(">").text(&item.text(unit)).raw("</span>");
    }
    h.raw("</div>\n");
}

/// A line of text, or a box of several lines.
fn text(h: &mut Html, item: &Item<'_>, described: Option<&str>, max_length: usize) {
    let max = max_length.to_string();
    if matches!(item.question.kind, Kind::Textarea { .. }) {
        h.raw("<textarea rows=\"5\"");
        control_attrs(h, item, described);
        h.attr("maxlength", &max).raw(">");
        h.text(item.value(item.key())).raw("</textarea>\n");
    } else {
        h.raw("<input type=\"text\"");
        control_attrs(h, item, described);
        h.attr("maxlength", &max)
            .attr("value", item.value(item.key()))
            .raw(">\n");
    }
}

/// "A whole number from 0 to 100" and its shorter forms.
fn range(lang: Lang, what: Msg, min: Option<String>, max: Option<String>) -> String {
    let what = what.text(lang);
    match (min, max) {
        (Some(min), Some(max)) => format!(
            "{what} {} {min} {} {max}",
            Msg::From.text(lang),
            Msg::UpTo.text(lang)
        ),
        (Some(min), None) => format!("{what} {} {min}", Msg::AtLeast.text(lang)),
        (None, Some(max)) => format!("{what} {} {max}", Msg::AtMost.text(lang)),
        (None, None) => what.to_owned(),
    }
}

/// A number as the page's language writes it (a decimal comma in Dutch).
pub fn decimal(n: f64, lang: Lang) -> String {
    let text = n.to_string();
    match lang {
        Lang::Nl => text.replace('.', ","),
        Lang::En => text,
    }
}

/// What an error says, for this question.
pub fn message(item: &Item<'_>, error: QuestionError) -> String {
    let lang = item.lang;
    let kind = &item.question.kind;
    let plain = |m: Msg| m.text(lang).to_owned();
    let QuestionError::Answer(e) = error else {
        return plain(Msg::Unanswered);
    };
    match (e, kind) {
        (AnswerError::OutOfRange, _) => {
            let (min, max) = match kind {
                Kind::Integer { min, max, .. } => {
                    (min.map(|n| n.to_string()), max.map(|n| n.to_string()))
                }
                Kind::Decimal { min, max, .. } => {
                    (min.map(|n| decimal(n, lang)), max.map(|n| decimal(n, lang)))
                }
                Kind::Slider { min, max, .. } => (Some(min.to_string()), Some(max.to_string())),
                _ => (None, None),
            };
            format!("{}.", range(lang, Msg::EnterANumber, min, max))
        }
        (AnswerError::TooLong, Kind::String { max_length } | Kind::Textarea { max_length }) => {
            format!(
                "{} {max_length} {}",
                Msg::TooLongBefore.text(lang),
                Msg::TooLongAfter.text(lang)
            )
        }
        (AnswerError::Invalid, Kind::Integer { .. }) => plain(Msg::NotWhole),
        (AnswerError::Invalid, Kind::Decimal { .. }) => plain(Msg::NotANumber),
        (AnswerError::Invalid, Kind::Date { precision }) => plain(match precision {
            DatePrecision::Day => Msg::DateInvalidDay,
            DatePrecision::Month => Msg::DateInvalidMonth,
            DatePrecision::Year => Msg::DateInvalidYear,
        }),
        (AnswerError::Invalid, Kind::Checkbox) => {
            match item.question.options.iter().find(|o| o.exclusive) {
                Some(option) => format!(
                    "{} \u{201c}{}\u{201d} {}",
                    Msg::ExclusiveBefore.text(lang),
                    item.text(&option.description),
                    Msg::ExclusiveAfter.text(lang)
                ),
                None => plain(Msg::InvalidOption),
            }
        }
        _ => plain(Msg::InvalidOption),
    }
}
