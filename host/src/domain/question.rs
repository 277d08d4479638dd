//! Questions and pages of a definition (docs/api/catalog.md#questions): as
//! written, and checked into the [`Question`]s and [`Page`]s the rest of
//! the host works with. `questionnaire.rs` checks the whole file and calls
//! this for its items; conditions are resolved there, once every question
//! is known.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::Deserialize;

use super::condition::{Condition, ConditionDef};
use super::kind::{self, Kind, KindFields, OptionDef};
use super::text::Text;

/// One item of `[[questions]]` as written: a question, or a `display`
/// text block.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuestionDef {
    pub key: String,
    /// The question (every type but `display`).
    #[serde(default)]
    pub title: Option<Text>,
    /// The text block of a `display` item.
    #[serde(default)]
    pub text: Option<Text>,
    #[serde(rename = "type")]
    pub kind: String,
    /// Radio, select and checkbox: the options, or the name of an entry of
    /// `option_sets`.
    #[serde(default)]
    pub options: Option<OptionsDef>,
    /// Whether a respondent must answer it to complete the questionnaire
    /// (default true; not for `display`).
    #[serde(default)]
    pub required: Option<bool>,
    /// Shown only when this flag is true.
    #[serde(default)]
    pub shown_if_flag: Option<String>,
    /// Hidden when this flag is true.
    #[serde(default)]
    pub hidden_if_flag: Option<String>,
    /// Shown only when this condition on earlier answers holds.
    #[serde(default)]
    pub shown_if: Option<ConditionDef>,
    #[serde(default)]
    pub min: Option<f64>,
    #[serde(default)]
    pub max: Option<f64>,
    #[serde(default)]
    pub step: Option<f64>,
    #[serde(default)]
    pub min_label: Option<Text>,
    #[serde(default)]
    pub max_label: Option<Text>,
    #[serde(default)]
    pub unit: Option<Text>,
    #[serde(default)]
    pub precision: Option<String>,
    #[serde(default)]
    pub max_length: Option<i64>,
}

/// A question's options: inline, or the name of an entry of `option_sets`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum OptionsDef {
    Set(String),
    Inline(Vec<OptionDef>),
}

/// One entry of `[[pages]]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageDef {
    pub key: String,
    #[serde(default)]
    pub title: Option<Text>,
    /// A text shown above the page's questions.
    #[serde(default)]
    pub intro: Option<Text>,
    /// The keys of its questions, in definition order.
    pub questions: Vec<String>,
    /// Shown only when this condition on answers of earlier pages holds.
    #[serde(default)]
    pub shown_if: Option<ConditionDef>,
}

/// A checked question (or display item) with its options resolved.
#[derive(Debug, Clone)]
pub struct Question {
    pub key: String,
    /// The question; of a display item, its text.
    pub title: Text,
    pub kind: Kind,
    /// Of radio, select and checkbox questions; empty otherwise.
    pub options: Vec<OptionDef>,
    /// The option set its options come from, if they do.
    pub option_set: Option<String>,
    /// Always false for a display item.
    pub required: bool,
    pub shown_if_flag: Option<String>,
    pub hidden_if_flag: Option<String>,
    /// The condition as written (the questionnaire endpoint shows it).
    pub shown_if: Option<ConditionDef>,
    /// The condition checked (set by `questionnaire.rs` once every
    /// question is known).
    pub condition: Option<Condition>,
    /// The position of its page among the questionnaire's pages.
    pub page: usize,
}

impl Question {
    /// The option with this key, if the question has one.
    pub fn option(&self, key: &str) -> Option<&OptionDef> {
        self.options.iter().find(|o| o.key == key)
    }

    /// Whether it takes an answer (every type but `display`).
    pub fn answerable(&self) -> bool {
        self.kind.answerable()
    }
}

/// A checked page: its questions are the positions `questions`.
#[derive(Debug, Clone)]
pub struct Page {
    /// Empty for the one page of a definition that declares none.
    pub key: String,
    pub title: Option<Text>,
    pub intro: Option<Text>,
    pub questions: Range<usize>,
    pub shown_if: Option<ConditionDef>,
    pub condition: Option<Condition>,
}

/// Keys of questionnaires, questions, pages, scores, flags and textvars:
/// lower-case ASCII letters, digits and underscores, starting with a
/// letter, at most 64 long.
pub fn is_valid_key(key: &str) -> bool {
    let mut chars = key.chars();
    key.len() <= 64
        && chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Checks one item; its condition is left for later. `flag_known` says
/// whether a flag is declared; `option_sets` are the file's.
pub fn build(
    def: QuestionDef,
    at: &str,
    option_sets: &BTreeMap<String, Vec<OptionDef>>,
    flag_known: &impl Fn(&str) -> bool,
    err: &mut impl FnMut(String),
) -> Option<Question> {
    let mut ok = true;
    let mut fail = |msg: String, err: &mut dyn FnMut(String)| {
        err(format!("{at}: {msg}"));
        ok = false;
    };
    if !def.key.starts_with("v_") || !is_valid_key(&def.key) {
        fail(
            "question keys look like v_1, v_2a (lower-case, starting with v_)".into(),
            err,
        );
    }
    let kind = kind::build(
        &def.kind,
        KindFields {
            min: def.min,
            max: def.max,
            step: def.step,
            min_label: def.min_label,
            max_label: def.max_label,
            unit: def.unit,
            precision: def.precision,
            max_length: def.max_length,
        },
        at,
        err,
    );
    let display = def.kind == "display";
    let title = match (display, def.title, def.text) {
        (false, Some(title), None) => title,
        (true, None, Some(text)) => text,
        (false, _, Some(_)) => {
            fail(
                "text is for display items; a question has a title".into(),
                err,
            );
            return None;
        }
        (true, Some(_), _) => {
            fail("a display item has a text, not a title".into(), err);
            return None;
        }
        (false, None, None) => {
            fail("title is missing".into(), err);
            return None;
        }
        (true, None, None) => {
            fail("text is missing".into(), err);
            return None;
        }
    };
    if title.is_blank() {
        fail(
            format!("{} is blank", if display { "text" } else { "title" }),
            err,
        );
    }
    if display && def.required.is_some() {
        fail("required does not apply to a display item".into(), err);
    }
    for flag in [&def.shown_if_flag, &def.hidden_if_flag]
        .into_iter()
        .flatten()
    {
        if !flag_known(flag) {
            fail(format!("flag {flag:?} is not defined under [flags]"), err);
        }
    }
    let kind = kind?;
    let options = match (kind.has_options(), def.options) {
        (true, Some(OptionsDef::Inline(options))) => {
            check_options(&options, at, err);
            options
        }
        (true, Some(OptionsDef::Set(name))) => match option_sets.get(&name) {
            Some(options) => options.clone(),
            None => {
                fail(
                    format!("option set {name:?} is not defined under [option_sets]"),
                    err,
                );
                Vec::new()
            }
        },
        (true, None) => {
            fail(format!("a {} question needs options", kind.name()), err);
            Vec::new()
        }
        (false, Some(_)) => {
            fail(
                format!("options do not apply to {} items", kind.name()),
                err,
            );
            Vec::new()
        }
        (false, None) => Vec::new(),
    };
    if kind != Kind::Checkbox
        && let Some(o) = options.iter().find(|o| o.exclusive)
    {
        fail(
            format!(
                "option {:?}: exclusive applies to checkbox options only",
                o.key
            ),
            err,
        );
    }
    ok.then(|| Question {
        key: def.key,
        title,
        required: !display && def.required.unwrap_or(true),
        kind,
        options,
        option_set: None,
        shown_if_flag: def.shown_if_flag,
        hidden_if_flag: def.hidden_if_flag,
        shown_if: def.shown_if,
        condition: None,
        page: 0,
    })
}

/// Checks a list of options (inline, or an option set).
pub fn check_options(options: &[OptionDef], at: &str, err: &mut impl FnMut(String)) {
    if options.is_empty() {
        err(format!("{at}: options are empty"));
    }
    let mut keys = std::collections::HashSet::new();
    for o in options {
        if o.key.is_empty()
            || o.key.len() > 64
            || !o.key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            err(format!(
                "{at}: option key {:?} must be 1-64 ASCII letters, digits or _",
                o.key
            ));
        }
        if !keys.insert(o.key.as_str()) {
            err(format!("{at}: duplicate option key {:?}", o.key));
        }
        if o.description.is_blank() {
            err(format!("{at}: option {:?} has a blank description", o.key));
        }
    }
}

/// The pages `defs` divide `questions` into, each question's `page` set.
/// Every question is on exactly one page, the pages' questions in
/// definition order; no pages at all is one page.
pub fn pages(
    defs: Vec<PageDef>,
    questions: &mut [Question],
    err: &mut impl FnMut(String),
) -> Vec<Page> {
    if defs.is_empty() {
        return vec![Page {
            key: String::new(),
            title: None,
            intro: None,
            questions: 0..questions.len(),
            shown_if: None,
            condition: None,
        }];
    }
    let position: BTreeMap<&str, usize> = questions
        .iter()
        .enumerate()
        .map(|(i, q)| (q.key.as_str(), i))
        .collect();
    let mut pages = Vec::with_capacity(defs.len());
    let mut placed: Vec<Option<usize>> = vec![None; questions.len()];
    let mut next = 0;
    let mut keys = std::collections::HashSet::new();
    for (p, def) in defs.into_iter().enumerate() {
        let at = format!("pages[{p}] ({})", def.key);
        if !is_valid_key(&def.key) {
            err(format!("{at}: invalid page key"));
        }
        if !keys.insert(def.key.clone()) {
            err(format!("{at}: duplicate page key"));
        }
        for text in [&def.title, &def.intro].into_iter().flatten() {
            if text.is_blank() {
                err(format!("{at}: a title or intro is blank"));
            }
        }
        if def.questions.is_empty() {
            err(format!("{at}: a page needs at least one question"));
        }
        let start = next;
        for key in &def.questions {
            match position.get(key.as_str()) {
                None => err(format!("{at}: {key:?} is not a question")),
                Some(&i) => match placed[i] {
                    Some(other) => err(format!(
                        "{at}: {key} is on page {other} already: every question is on one page"
                    )),
                    None if i != next => {
                        placed[i] = Some(p);
                        err(format!(
                            "{at}: {key} is out of order: pages hold the questions in \
                             definition order, and the next one is {}",
                            questions.get(next).map_or("none", |q| q.key.as_str())
                        ));
                    }
                    None => {
                        placed[i] = Some(p);
                        next += 1;
                    }
                },
            }
        }
        pages.push(Page {
            key: def.key,
            title: def.title,
            intro: def.intro,
            questions: start..next,
            shown_if: def.shown_if,
            condition: None,
        });
    }
    for (q, page) in questions.iter().zip(&placed) {
        if page.is_none() {
            err(format!("pages: {} is on no page", q.key));
        }
    }
    for (p, page) in pages.iter().enumerate() {
        for q in &mut questions[page.questions.clone()] {
            q.page = p;
        }
    }
    pages
}

#[cfg(test)]
mod tests {
    use crate::domain::questionnaire::parse;

    /// A definition with these questions and pages.
    fn definition(questions: &str, pages: &str) -> String {
        format!(
            r#"
key = "t"
name = "T"
short_description = "Test"
language = "en"
licence = "test"
scorer = "t"
{pages}
{questions}
"#
        )
    }

    const THREE: &str = r#"
[[questions]]
key = "v_1"
type = "radio"
title = "One"
options = [ { key = "a0", value = 0, description = "No" } ]

[[questions]]
key = "v_2"
type = "integer"
title = "Two"

[[questions]]
key = "v_3"
type = "display"
text = "Three"
"#;

    #[test]
    fn pages_hold_every_question_once_in_definition_order() {
        let q = parse(&definition(THREE, ""), "t").expect("valid");
        assert!(!q.paged);
        assert_eq!(q.pages.len(), 1);
        assert_eq!(q.pages[0].questions, 0..3);
        let pages = r#"
[[pages]]
key = "a"
questions = ["v_1"]
[[pages]]
key = "b"
title = "B"
questions = ["v_2", "v_3"]
"#;
        let q = parse(&definition(THREE, pages), "t").expect("valid");
        assert!(q.paged);
        assert_eq!(
            q.questions.iter().map(|q| q.page).collect::<Vec<_>>(),
            [0, 1, 1]
        );

        let wrong = r#"
[[pages]]
key = "a"
questions = ["v_2", "v_1", "v_9"]
[[pages]]
key = "a"
questions = ["v_2"]
"#;
        let err = parse(&definition(THREE, wrong), "t")
            .expect_err("invalid")
            .0;
        assert_eq!(
            err,
            [
                "pages[0] (a): v_2 is out of order: pages hold the questions in definition order, \
                 and the next one is v_1",
                "pages[0] (a): \"v_9\" is not a question",
                "pages[1] (a): duplicate page key",
                "pages[1] (a): v_2 is on page 0 already: every question is on one page",
                "pages: v_3 is on no page",
            ]
        );
    }

    #[test]
    fn each_item_takes_only_the_fields_of_its_type() {
        let wrong = THREE
            .replace(
                "type = \"display\"\ntext = \"Three\"",
                "type = \"display\"\ntitle = \"Three\"",
            )
            .replace("title = \"Two\"", "title = \"Two\"\noptions = \"set\"")
            .replace(
                "{ key = \"a0\", value = 0, description = \"No\" }",
                "{ key = \"a0\", value = 0, description = \"No\", exclusive = true }",
            );
        let err = parse(&definition(&wrong, ""), "t").expect_err("invalid").0;
        assert_eq!(
            err,
            [
                "questions[0] (v_1): option \"a0\": exclusive applies to checkbox options only",
                "questions[1] (v_2): options do not apply to integer items",
                "questions[2] (v_3): a display item has a text, not a title",
            ]
        );
    }
}
