//! Questionnaire definitions: the file format under `questionnaires/<key>/`,
//! its validation, and the validated [`Questionnaire`] the rest of the host
//! works with.
//!
//! A definition is data written by clinical teams, so every problem is
//! reported with the path of the offending entry; nothing here panics on a
//! bad file.

use std::collections::{BTreeMap, HashSet};

use serde::Deserialize;

use plugin_sdk::{Norm, Tonality};

use super::text::{Text, placeholders};

/// The name of the definition file inside a questionnaire's folder.
pub const DEFINITION_FILE: &str = "questionnaire.toml";

/// The only question type the API promises
/// (docs/api/catalog.md#question-types).
pub const QUESTION_TYPES: &[&str] = &["radio"];

/// A definition file as written, before validation.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuestionnaireFile {
    pub key: String,
    pub name: String,
    #[serde(default)]
    pub description: Option<Text>,
    pub short_description: Text,
    /// Language of the texts when a text is given as one string, and the
    /// default language of localized texts (ISO 639-1).
    pub language: String,
    /// Licence and copyright note, shown to operators.
    pub licence: String,
    /// Where the items and scoring rules come from.
    #[serde(default)]
    pub source: Option<String>,
    /// Name of the scorer plugin that computes this questionnaire's outcome.
    pub scorer: String,
    /// Key other systems know the questionnaire by; defaults to `key`.
    #[serde(default)]
    pub vendor_key: Option<String>,
    #[serde(default)]
    pub option_sets: BTreeMap<String, Vec<OptionDef>>,
    pub questions: Vec<QuestionDef>,
    #[serde(default)]
    pub scores: Vec<ScoreDef>,
    #[serde(default)]
    pub flags: BTreeMap<String, FlagDef>,
    #[serde(default)]
    pub textvars: BTreeMap<String, TextvarDef>,
    #[serde(default)]
    pub sbg_info: Option<SbgInfo>,
}

/// One question as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuestionDef {
    pub key: String,
    pub title: Text,
    #[serde(rename = "type")]
    pub kind: String,
    pub options: OptionsDef,
    /// Whether a respondent must answer it to complete the questionnaire.
    #[serde(default = "yes")]
    pub required: bool,
    /// Shown only when this flag is true.
    #[serde(default)]
    pub shown_if_flag: Option<String>,
    /// Hidden when this flag is true.
    #[serde(default)]
    pub hidden_if_flag: Option<String>,
}

fn yes() -> bool {
    true
}

/// A question's options: inline, or the name of an entry of `option_sets`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum OptionsDef {
    Set(String),
    Inline(Vec<OptionDef>),
}

/// One answer option.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct OptionDef {
    pub key: String,
    pub value: i64,
    pub description: Text,
}

/// A score the scorer computes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScoreDef {
    pub key: String,
    pub label: Text,
    /// Question keys the score is computed from (`referenced_values`).
    #[serde(default)]
    pub items: Vec<String>,
    /// Norm population for t-scores.
    #[serde(default)]
    pub norm: Option<Norm>,
    /// Reliability coefficient, for reliable change.
    #[serde(default)]
    pub reliability: Option<f64>,
    /// Standard deviation of the reference sample, for reliable change.
    #[serde(default)]
    pub sd: Option<f64>,
    /// Clinical cut-off.
    #[serde(default)]
    pub cutoff: Option<f64>,
    /// Which way the score points.
    #[serde(default)]
    pub tonality: Tonality,
    /// Whether this score is a main result of the questionnaire (`global`
    /// in the outcome).
    #[serde(default)]
    pub global: bool,
}

/// A boolean flag that changes which questions are shown.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlagDef {
    pub description: Text,
    #[serde(default)]
    pub default: bool,
}

/// A text variable substituted for `{{name}}` in texts.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextvarDef {
    pub description: Text,
    /// What `{{name}}` reads when a response gives no value: one string, or
    /// one per language.
    #[serde(default)]
    pub default: Option<Text>,
}

/// Registration in the Dutch benchmarking standard (SBG).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SbgInfo {
    pub sbg_key: String,
    /// Standard identifier to question key (`v_` form).
    #[serde(default)]
    pub questions: BTreeMap<String, String>,
    /// Standard identifier to score key.
    #[serde(default)]
    pub scores: BTreeMap<String, String>,
}

/// A validated questionnaire definition.
#[derive(Debug, Clone)]
pub struct Questionnaire {
    pub key: String,
    pub name: String,
    pub description: Option<Text>,
    pub short_description: Text,
    pub language: String,
    pub licence: String,
    pub source: Option<String>,
    pub scorer: String,
    pub vendor_key: String,
    pub questions: Vec<Question>,
    pub scores: Vec<ScoreDef>,
    pub flags: BTreeMap<String, FlagDef>,
    pub textvars: BTreeMap<String, TextvarDef>,
    pub sbg_info: Option<SbgInfo>,
    /// The questionnaire's part of every scorer input, serialized on first
    /// use: without and with the questions (`scoring` fills it).
    pub scorer_json: Derived<[Vec<u8>; 2]>,
    /// SHA-256 state after the scorer input's head up to and including
    /// the questionnaire part, for each of `scorer_json`: every input's
    /// hash then costs only its own part (`scoring` fills it).
    pub scorer_json_hashed: Derived<[sha2::Sha256; 2]>,
    /// SHA-256 of the definition text it was parsed from: the name of this
    /// version in `questionnaire_versions`, recorded with every outcome
    /// scored with it.
    pub sha256: String,
}

/// A value derived from a definition on first use and kept with it. A clone
/// starts empty, so a changed copy of a definition never serves what was
/// derived from the original.
pub struct Derived<T>(std::sync::OnceLock<T>);

impl<T> Derived<T> {
    /// The value, derived with `f` on first use.
    pub fn get_or_init(&self, f: impl FnOnce() -> T) -> &T {
        self.0.get_or_init(f)
    }
}

impl<T> Default for Derived<T> {
    fn default() -> Self {
        Derived(std::sync::OnceLock::new())
    }
}

impl<T> Clone for Derived<T> {
    fn clone(&self) -> Self {
        Derived::default()
    }
}

impl<T> std::fmt::Debug for Derived<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "Derived(..)"
        } else {
            "Derived(<not yet>)"
        })
    }
}

/// A validated question with its options resolved.
#[derive(Debug, Clone)]
pub struct Question {
    pub key: String,
    pub title: Text,
    pub kind: String,
    pub options: Vec<OptionDef>,
    pub required: bool,
    pub shown_if_flag: Option<String>,
    pub hidden_if_flag: Option<String>,
}

impl Question {
    /// The option with this key, if the question has one.
    pub fn option(&self, key: &str) -> Option<&OptionDef> {
        self.options.iter().find(|o| o.key == key)
    }
}

impl Questionnaire {
    /// The question with this key (`v_` form).
    pub fn question(&self, key: &str) -> Option<&Question> {
        self.questions.iter().find(|q| q.key == key)
    }

    /// The legacy form of a question key: `v_1` of `phq9` is `phq9_1`.
    pub fn legacy_key(&self, question_key: &str) -> String {
        match question_key.strip_prefix("v_") {
            Some(rest) => format!("{}_{rest}", self.key),
            None => question_key.to_owned(),
        }
    }
}

/// Everything wrong with one definition, each entry naming where.
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.join("; "))]
pub struct DefinitionErrors(pub Vec<String>);

/// Parses and validates a questionnaire definition. `folder` is the name of
/// the folder it was found in, which must equal its key.
pub fn parse(text: &str, folder: &str) -> Result<Questionnaire, DefinitionErrors> {
    let file: QuestionnaireFile =
        toml::from_str(text).map_err(|e| DefinitionErrors(vec![e.to_string()]))?;
    let mut q = validate(file, folder)?;
    q.sha256 = sha256_hex(text.as_bytes());
    Ok(q)
}

/// SHA-256 of `bytes`, lower-case hex: how definitions, modules and scorer
/// inputs are named by content.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}

/// Keys of questionnaires, scores, flags and textvars: lower-case ASCII
/// letters, digits and underscores, starting with a letter, at most 64 long.
pub fn is_valid_key(key: &str) -> bool {
    let mut chars = key.chars();
    key.len() <= 64
        && chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn validate(file: QuestionnaireFile, folder: &str) -> Result<Questionnaire, DefinitionErrors> {
    let mut errors = Vec::new();
    let mut err = |msg: String| errors.push(msg);

    if !is_valid_key(&file.key) {
        err(format!(
            "key {:?}: use lower-case letters, digits and _ (at most 64)",
            file.key
        ));
    }
    if file.key != folder {
        err(format!(
            "key {:?} must equal its folder name {folder:?}",
            file.key
        ));
    }
    for (field, value) in [
        ("name", &file.name),
        ("language", &file.language),
        ("licence", &file.licence),
        ("scorer", &file.scorer),
    ] {
        if value.trim().is_empty() {
            err(format!("{field} is blank"));
        }
    }
    if file.short_description.is_blank() {
        err("short_description is blank".into());
    }
    for (name, set) in &file.option_sets {
        check_options(set, &format!("option_sets.{name}"), &mut err);
    }

    let mut questions = Vec::with_capacity(file.questions.len());
    let mut seen = HashSet::new();
    if file.questions.is_empty() {
        err("questions: a questionnaire needs at least one question".into());
    }
    for (i, q) in file.questions.into_iter().enumerate() {
        let at = format!("questions[{i}] ({})", q.key);
        if !q.key.starts_with("v_") || !is_valid_key(&q.key) {
            err(format!(
                "{at}: question keys look like v_1, v_2a (lower-case, starting with v_)"
            ));
        }
        if !seen.insert(q.key.clone()) {
            err(format!("{at}: duplicate question key"));
        }
        if q.title.is_blank() {
            err(format!("{at}: title is blank"));
        }
        if !QUESTION_TYPES.contains(&q.kind.as_str()) {
            err(format!(
                "{at}: type {:?} is not one of {QUESTION_TYPES:?}",
                q.kind
            ));
        }
        for flag in [&q.shown_if_flag, &q.hidden_if_flag].into_iter().flatten() {
            if !file.flags.contains_key(flag) {
                err(format!("{at}: flag {flag:?} is not defined under [flags]"));
            }
        }
        let options = match q.options {
            OptionsDef::Inline(options) => {
                check_options(&options, &at, &mut err);
                options
            }
            OptionsDef::Set(name) => match file.option_sets.get(&name) {
                Some(options) => options.clone(),
                None => {
                    err(format!(
                        "{at}: option set {name:?} is not defined under [option_sets]"
                    ));
                    Vec::new()
                }
            },
        };
        questions.push(Question {
            key: q.key,
            title: q.title,
            kind: q.kind,
            options,
            required: q.required,
            shown_if_flag: q.shown_if_flag,
            hidden_if_flag: q.hidden_if_flag,
        });
    }

    let mut score_keys = HashSet::new();
    for (i, s) in file.scores.iter().enumerate() {
        if !is_valid_key(&s.key) {
            err(format!("scores[{i}] ({}): invalid score key", s.key));
        }
        if !score_keys.insert(s.key.as_str()) {
            err(format!("scores[{i}] ({}): duplicate score key", s.key));
        }
        if s.label.is_blank() {
            err(format!("scores[{i}] ({}): label is blank", s.key));
        }
        for item in &s.items {
            if !seen.contains(item) {
                err(format!(
                    "scores[{i}] ({}): items names no question {item:?}",
                    s.key
                ));
            }
        }
        if let Some(norm) = s.norm
            && !(norm.mean.is_finite() && norm.sd.is_finite() && norm.sd > 0.0)
        {
            err(format!(
                "scores[{i}] ({}): norm needs a finite mean and an sd above 0",
                s.key
            ));
        }
        if s.reliability.is_some_and(|r| !(r > 0.0 && r < 1.0)) {
            err(format!(
                "scores[{i}] ({}): reliability must lie between 0 and 1",
                s.key
            ));
        }
        if s.sd.is_some_and(|sd| !(sd.is_finite() && sd > 0.0)) {
            err(format!("scores[{i}] ({}): sd must be above 0", s.key));
        }
        if s.cutoff.is_some_and(|c| !c.is_finite()) {
            err(format!("scores[{i}] ({}): cutoff must be a number", s.key));
        }
    }
    for name in file.flags.keys().chain(file.textvars.keys()) {
        if !is_valid_key(name) {
            err(format!("flag or textvar {name:?}: invalid name"));
        }
    }
    // Every `{{name}}` in a text must be a declared textvar, or respondents
    // would read the braces.
    let mut texts: Vec<(String, &Text)> =
        vec![("short_description".into(), &file.short_description)];
    texts.extend(file.description.iter().map(|d| ("description".into(), d)));
    for q in &questions {
        texts.push((format!("questions ({}) title", q.key), &q.title));
        for o in &q.options {
            texts.push((
                format!("questions ({}) option {}", q.key, o.key),
                &o.description,
            ));
        }
    }
    for (at, text) in texts {
        for name in text.all().flat_map(placeholders) {
            if !file.textvars.contains_key(name) {
                err(format!(
                    "{at}: {{{{{name}}}}} is not a textvar declared under [textvars]"
                ));
            }
        }
    }
    if let Some(sbg) = &file.sbg_info {
        if sbg.sbg_key.trim().is_empty() {
            err("sbg_info.sbg_key is blank".into());
        }
        for (id, key) in &sbg.questions {
            if !seen.contains(key) {
                err(format!("sbg_info.questions.{id}: no question {key:?}"));
            }
        }
        for (id, key) in &sbg.scores {
            if !score_keys.contains(key.as_str()) {
                err(format!("sbg_info.scores.{id}: no score {key:?}"));
            }
        }
    }

    if !errors.is_empty() {
        return Err(DefinitionErrors(errors));
    }
    Ok(Questionnaire {
        vendor_key: file.vendor_key.unwrap_or_else(|| file.key.clone()),
        key: file.key,
        name: file.name,
        description: file.description,
        short_description: file.short_description,
        language: file.language,
        licence: file.licence,
        source: file.source,
        scorer: file.scorer,
        questions,
        scores: file.scores,
        flags: file.flags,
        textvars: file.textvars,
        sbg_info: file.sbg_info,
        scorer_json: Derived::default(),
        scorer_json_hashed: Derived::default(),
        sha256: String::new(),
    })
}

fn check_options(options: &[OptionDef], at: &str, err: &mut impl FnMut(String)) {
    if options.is_empty() {
        err(format!("{at}: options are empty"));
    }
    let mut keys = HashSet::new();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::testing::DEFINITION;

    #[test]
    fn a_valid_definition_resolves_option_sets_in_question_order() {
        let q = parse(DEFINITION, "mini").expect("valid");
        assert_eq!(q.questions.len(), 3);
        assert_eq!(q.questions[0].options.len(), 2);
        assert_eq!(q.question("v_3").map(|q| q.options.len()), Some(1));
        assert_eq!(q.vendor_key, "mini");
        assert_eq!(q.legacy_key("v_1"), "mini_1");
    }

    #[test]
    fn every_problem_is_reported_with_its_place() {
        let text = DEFINITION
            .replace("key = \"v_2\"", "key = \"v_1\"")
            .replace("options = \"yn\"", "options = \"nope\"");
        let err = parse(&text, "other").expect_err("invalid").0;
        assert!(err.iter().any(|e| e.contains("folder name")), "{err:?}");
        assert!(
            err.iter().any(|e| e.contains("duplicate question key")),
            "{err:?}"
        );
        assert!(
            err.iter().any(|e| e.contains("option set \"nope\"")),
            "{err:?}"
        );
    }

    #[test]
    fn unknown_fields_are_refused_rather_than_ignored() {
        let text = DEFINITION.replace("scorer = \"mini\"", "scorer = \"mini\"\nscorrer = 1");
        let err = parse(&text, "mini").expect_err("invalid").0;
        assert!(err[0].contains("scorrer"), "{err:?}");
    }

    #[test]
    fn keys_are_lower_case_identifiers() {
        assert!(is_valid_key("phq9"));
        assert!(is_valid_key("v_2a"));
        assert!(!is_valid_key("PHQ9"));
        assert!(!is_valid_key("9phq"));
        assert!(!is_valid_key("a-b"));
        assert!(!is_valid_key(""));
    }
}
