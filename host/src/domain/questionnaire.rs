//! Questionnaire definitions: the file format under `questionnaires/<key>/`,
//! its validation, and the validated [`Questionnaire`] the rest of the host
//! works with.
//!
//! A definition is data written by clinical teams, so every problem is
//! reported with the path of the offending entry; nothing here panics on a
//! bad file.
//!
//! Unknown fields are refused (`deny_unknown_fields`). Keys are lower-case
//! letters, digits and `_`; question keys start with `v_` (`v_1`, `v_2a`);
//! the bundled definitions name options `a0`, `a1`, ….

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use serde::Deserialize;

use plugin_sdk::{EpisodeInfo, Norm, Tonality};

use super::condition::{self, Condition, ConditionDef, Target};
pub use super::kind::{Kind, OptionDef, QUESTION_TYPES};
use super::question::{self as item};
pub use super::question::{OptionsDef, Page, PageDef, Question, QuestionDef, is_valid_key};
use super::text::{Text, Translation, placeholders};

/// The name of the definition file inside a questionnaire's folder.
pub const DEFINITION_FILE: &str = "questionnaire.toml";

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
    /// How the questions are divided into pages; none is one page.
    #[serde(default)]
    pub pages: Vec<PageDef>,
    #[serde(default)]
    pub scores: Vec<ScoreDef>,
    #[serde(default)]
    pub flags: BTreeMap<String, FlagDef>,
    #[serde(default)]
    pub textvars: BTreeMap<String, TextvarDef>,
    #[serde(default)]
    pub sbg_info: Option<SbgInfo>,
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
    /// How an episode of care is judged on this score (response,
    /// remission, follow-up window), for the `episode_outcome` calculator.
    #[serde(default)]
    pub episode: Option<EpisodeDef>,
}

/// A score's `[scores.episode]` block: the thresholds of episode outcomes
/// (docs/questionnaire-format.md#episode-outcomes). Only for scores where
/// higher is worse: response is a drop.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EpisodeDef {
    /// Version of this definition of the metrics; reports name it.
    pub version: String,
    /// Response: a drop from baseline of at least this fraction of it
    /// (above 0, at most 1).
    pub response_drop: f64,
    /// Remission: a follow-up value below this.
    pub remission_below: f64,
    /// Eligibility: episodes whose baseline is below this are not judged
    /// for response or remission; absent: all are.
    #[serde(default)]
    pub baseline_at_least: Option<f64>,
    /// The follow-up window in whole days after the baseline, both ends
    /// included.
    pub window_days: [u32; 2],
    /// Where the numbers come from.
    pub source: String,
}

impl EpisodeDef {
    /// The block as calculators see it.
    pub fn info(&self) -> EpisodeInfo {
        EpisodeInfo {
            version: self.version.clone(),
            response_drop: self.response_drop,
            remission_below: self.remission_below,
            baseline_at_least: self.baseline_at_least,
            window_days: self.window_days,
            source: self.source.clone(),
        }
    }

    /// What is wrong with the block, each as a phrase.
    fn problems(&self, tonality: Tonality) -> Vec<&'static str> {
        let mut problems = Vec::new();
        if self.version.trim().is_empty() {
            problems.push("version is blank");
        }
        if !(self.response_drop > 0.0 && self.response_drop <= 1.0) {
            problems.push("response_drop must be above 0 and at most 1");
        }
        if !self.remission_below.is_finite() {
            problems.push("remission_below must be a number");
        }
        if self.baseline_at_least.is_some_and(|b| !b.is_finite()) {
            problems.push("baseline_at_least must be a number");
        }
        if self.window_days[0] > self.window_days[1] {
            problems.push("window_days must be [from, to] with from at most to");
        }
        if self.source.trim().is_empty() {
            problems.push("source is blank");
        }
        if tonality != Tonality::HigherIsWorse {
            problems.push("only for a score where higher is worse (response is a drop)");
        }
        problems
    }
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
    /// Questions and display items, in definition order.
    pub questions: Vec<Question>,
    /// At least one; `paged` says whether the definition declared them.
    pub pages: Vec<Page>,
    pub paged: bool,
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
    /// Translation overlays applied to the texts, by language
    /// (`translation.rs`): their texts are in the [`Text`]s above, the name
    /// in [`Questionnaire::name_in`].
    pub translations: BTreeMap<String, Arc<Translation>>,
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

impl Questionnaire {
    /// The question with this key (`v_` form).
    pub fn question(&self, key: &str) -> Option<&Question> {
        self.questions.iter().find(|q| q.key == key)
    }

    /// The position of the question with this key.
    pub fn position(&self, key: &str) -> Option<usize> {
        self.questions.iter().position(|q| q.key == key)
    }

    /// The questions that take an answer (all but display items), in
    /// definition order.
    pub fn answerable(&self) -> impl Iterator<Item = &Question> {
        self.questions.iter().filter(|q| q.answerable())
    }

    /// The name in `language`: a translation's, else the definition's.
    pub fn name_in(&self, language: &str) -> &str {
        self.translations
            .get(language)
            .and_then(|t| t.name.as_deref())
            .unwrap_or(&self.name)
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
        item::check_options(set, &format!("option_sets.{name}"), &mut err);
    }

    let mut questions = Vec::with_capacity(file.questions.len());
    let mut seen = HashSet::new();
    if file.questions.is_empty() {
        err("questions: a questionnaire needs at least one question".into());
    }
    let flag_known = |name: &str| file.flags.contains_key(name);
    let mut conditions = Vec::with_capacity(file.questions.len());
    for (i, q) in file.questions.into_iter().enumerate() {
        let at = format!("questions[{i}] ({})", q.key);
        if !seen.insert(q.key.clone()) {
            err(format!("{at}: duplicate question key"));
        }
        let set = match &q.options {
            Some(OptionsDef::Set(name)) => Some(name.clone()),
            _ => None,
        };
        if let Some(question) = item::build(q, &at, &file.option_sets, &flag_known, &mut err) {
            conditions.push(at);
            questions.push(Question {
                option_set: set,
                ..question
            });
        }
    }
    if !questions.iter().any(Question::answerable) && !questions.is_empty() {
        err("questions: a questionnaire needs a question that takes an answer".into());
    }
    let mut pages = item::pages(file.pages, &mut questions, &mut err);
    // Conditions test questions defined before: a question's any earlier
    // question, a page's those of earlier pages. So none can depend on
    // itself, and evaluating in definition order settles every one.
    for (i, at) in conditions.iter().enumerate() {
        let Some(def) = questions[i].shown_if.clone() else {
            continue;
        };
        let resolved = resolve_condition(&def, &format!("{at}: shown_if"), &questions, i, &mut err);
        questions[i].condition = resolved;
    }
    for (p, page) in pages.iter_mut().enumerate() {
        let Some(def) = page.shown_if.clone() else {
            continue;
        };
        let at = format!("pages[{p}] ({}): shown_if", page.key);
        page.condition = resolve_condition(&def, &at, &questions, page.questions.start, &mut err);
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
            } else if questions.iter().any(|q| &q.key == item && !q.answerable()) {
                err(format!(
                    "scores[{i}] ({}): {item} is a display item, which has no answer to score",
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
        if let Some(episode) = &s.episode {
            for problem in episode.problems(s.tonality) {
                err(format!("scores[{i}] ({}): episode: {problem}", s.key));
            }
        }
    }
    for name in file.flags.keys().chain(file.textvars.keys()) {
        if !is_valid_key(name) {
            err(format!("flag or textvar {name:?}: invalid name"));
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

    let q = Questionnaire {
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
        paged: pages.len() > 1 || pages.first().is_some_and(|p| !p.key.is_empty()),
        pages,
        scores: file.scores,
        flags: file.flags,
        textvars: file.textvars,
        sbg_info: file.sbg_info,
        scorer_json: Derived::default(),
        scorer_json_hashed: Derived::default(),
        sha256: String::new(),
        translations: BTreeMap::new(),
    };
    // Every `{{name}}` in a text must be a declared textvar, or respondents
    // would read the braces.
    q.each_text(|at, text| {
        for name in text.all().flat_map(placeholders) {
            if !q.textvars.contains_key(name) {
                err(format!(
                    "{at}: {{{{{name}}}}} is not a textvar declared under [textvars]"
                ));
            }
        }
    });
    if !errors.is_empty() {
        return Err(DefinitionErrors(errors));
    }
    Ok(q)
}

/// The condition `def` checked, for the item at `at` whose condition may
/// test the questions before position `before`.
fn resolve_condition(
    def: &ConditionDef,
    at: &str,
    questions: &[Question],
    before: usize,
    err: &mut impl FnMut(String),
) -> Option<Condition> {
    let target = |key: &str| -> Result<Target<'_>, String> {
        let Some(index) = questions.iter().position(|q| q.key == key) else {
            return Err(format!("{key} is not a question of this questionnaire"));
        };
        let q = &questions[index];
        if index >= before {
            return Err(format!(
                "{key} is not defined before it: a condition tests earlier questions only"
            ));
        }
        if !q.answerable() {
            return Err(format!("{key} is a display item: it has no answer to test"));
        }
        Ok(Target {
            index,
            kind: &q.kind,
            options: &q.options,
        })
    };
    condition::resolve(def, at, &target, err)
}

impl Questionnaire {
    /// Every text a respondent reads, each with the key a translation
    /// gives it under (`translation.rs`), in definition order. The options
    /// of an option set are named once, under `option_sets.<set>`.
    pub fn each_text(&self, mut f: impl FnMut(String, &Text)) {
        f("short_description".into(), &self.short_description);
        if let Some(d) = &self.description {
            f("description".into(), d);
        }
        let mut sets = HashSet::new();
        for q in &self.questions {
            let at = format!("questions.{}", q.key);
            let title = if q.answerable() { "title" } else { "text" };
            f(format!("{at}.{title}"), &q.title);
            for (field, text) in q.kind.texts() {
                f(format!("{at}.{field}"), text);
            }
            match &q.option_set {
                Some(set) if !sets.insert(set.as_str()) => {}
                Some(set) => {
                    for o in &q.options {
                        f(format!("option_sets.{set}.{}", o.key), &o.description);
                    }
                }
                None => {
                    for o in &q.options {
                        f(format!("{at}.options.{}", o.key), &o.description);
                    }
                }
            }
        }
        for page in self.pages.iter().filter(|_| self.paged) {
            for (field, text) in [("title", &page.title), ("intro", &page.intro)] {
                if let Some(text) = text {
                    f(format!("pages.{}.{field}", page.key), text);
                }
            }
        }
        for (name, var) in &self.textvars {
            if let Some(default) = &var.default {
                f(format!("textvars.{name}.default"), default);
            }
        }
    }

    /// [`Questionnaire::each_text`] to change the texts: an option set's
    /// options come once per question that uses it, under the set's key.
    pub fn each_text_mut(&mut self, mut f: impl FnMut(&str, &mut Text)) {
        f("short_description", &mut self.short_description);
        if let Some(d) = &mut self.description {
            f("description", d);
        }
        for q in &mut self.questions {
            let at = format!("questions.{}", q.key);
            let title = if q.kind.answerable() { "title" } else { "text" };
            f(&format!("{at}.{title}"), &mut q.title);
            for (field, text) in q.kind.texts_mut() {
                f(&format!("{at}.{field}"), text);
            }
            let options = match &q.option_set {
                Some(set) => format!("option_sets.{set}"),
                None => format!("{at}.options"),
            };
            for o in &mut q.options {
                f(&format!("{options}.{}", o.key), &mut o.description);
            }
        }
        if self.paged {
            for page in &mut self.pages {
                for (field, text) in [("title", &mut page.title), ("intro", &mut page.intro)] {
                    if let Some(text) = text {
                        f(&format!("pages.{}.{field}", page.key), text);
                    }
                }
            }
        }
        for (name, var) in &mut self.textvars {
            if let Some(default) = &mut var.default {
                f(&format!("textvars.{name}.default"), default);
            }
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
    fn a_score_cannot_count_a_display_item() {
        let text = DEFINITION.replace(
            "[[scores]]\nkey = \"total\"",
            "[[questions]]\nkey = \"v_4\"\ntype = \"display\"\ntext = \"Thanks\"\n\n[[scores]]\nkey = \"total\"",
        )
        .replace("items = [\"v_1\", \"v_2\"]", "items = [\"v_1\", \"v_4\"]");
        let err = parse(&text, "mini").expect_err("invalid").0;
        assert_eq!(
            err,
            ["scores[0] (total): v_4 is a display item, which has no answer to score"]
        );
    }

    /// [`DEFINITION`] with this `[scores.episode]` block on `total`.
    fn with_episode(block: &str) -> String {
        DEFINITION.replace(
            "items = [\"v_1\", \"v_2\"]\n",
            &format!("items = [\"v_1\", \"v_2\"]\n\n[scores.episode]\n{block}\n"),
        )
    }

    const EPISODE: &str = "version = \"1\"\nresponse_drop = 0.5\nremission_below = 5\n\
                           baseline_at_least = 10\nwindow_days = [14, 180]\n\
                           source = \"a source\"";

    #[test]
    fn a_score_names_its_episode_thresholds_and_calculators_get_them() {
        let q = parse(&with_episode(EPISODE), "mini").expect("valid");
        let episode = q.scores[0].episode.as_ref().map(EpisodeDef::info);
        assert_eq!(
            episode,
            Some(EpisodeInfo {
                version: "1".into(),
                response_drop: 0.5,
                remission_below: 5.0,
                baseline_at_least: Some(10.0),
                window_days: [14, 180],
                source: "a source".into(),
            })
        );
        assert_eq!(q.scores[1].episode, None);
    }

    #[test]
    fn every_problem_of_an_episode_block_is_named() {
        let bad = "version = \" \"\nresponse_drop = 1.5\nremission_below = 5\n\
                   baseline_at_least = nan\nwindow_days = [180, 14]\nsource = \"\"";
        let text = with_episode(bad).replace(
            "items = [\"v_1\", \"v_2\"]\n",
            "items = [\"v_1\", \"v_2\"]\ntonality = \"higher_is_better\"\n",
        );
        let err = parse(&text, "mini").expect_err("invalid").0;
        assert_eq!(
            err,
            [
                "scores[0] (total): episode: version is blank",
                "scores[0] (total): episode: response_drop must be above 0 and at most 1",
                "scores[0] (total): episode: baseline_at_least must be a number",
                "scores[0] (total): episode: window_days must be [from, to] with from at most to",
                "scores[0] (total): episode: source is blank",
                "scores[0] (total): episode: only for a score where higher is worse (response is a drop)",
            ]
        );
        let misspelt = with_episode(&EPISODE.replace("remission_below", "remission_under"));
        let err = parse(&misspelt, "mini").expect_err("invalid").0;
        assert!(err[0].contains("remission_under"), "{err:?}");
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
