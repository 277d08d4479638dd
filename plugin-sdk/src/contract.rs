//! The contract types: what the host sends a plugin and what it answers.
//! The host deserializes plugin output into these same types, so a field
//! added here is added for both sides at once. New fields are optional
//! (`#[serde(default)]`), which keeps old plugins working
//! (docs/plugin-abi.md#why-core-modules-and-json).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[cfg(feature = "schema")]
use schemars::JsonSchema;

/// The major version of the plugin ABI. A module declaring another major
/// version is refused with a message saying what to rebuild.
pub const ABI_VERSION: u32 = 1;

/// The version of the contract's messages this crate writes and reads,
/// within ABI major version 1. A module declares the one it was built
/// against in its [`Manifest`] (`export_scorer!` and `export_calculator!`
/// set it), and the host sends it exactly that version's input, so a
/// module built against an older contract keeps getting the same bytes:
///
/// | version | adds |
/// |---|---|
/// | 1 | (the first; a manifest without `contract` declares it) |
/// | 2 | scorers: [`ScorerInput::typed_answers`] and [`ScorerInput::enabled`]; question limits in [`QuestionInfo`] |
/// | 3 | calculators: [`ScoreInfo::episode`], the episode-outcome thresholds of a score |
pub const CONTRACT_VERSION: u32 = 3;

/// What a plugin does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum PluginKind {
    /// Computes the outcome of one completed response.
    Scorer,
    /// Computes a named report over several responses of a dossier.
    Calculator,
}

impl std::fmt::Display for PluginKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PluginKind::Scorer => "scorer",
            PluginKind::Calculator => "calculator",
        })
    }
}

/// What a plugin says about itself (its `describe` export).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Manifest {
    /// Plugin name: for a scorer, the name a questionnaire definition's
    /// `scorer` field gives; for a calculator, the `calculator` parameter of
    /// report calculations.
    pub name: String,
    /// Scorer or calculator.
    pub kind: PluginKind,
    /// Semantic version of the plugin.
    pub version: String,
    /// The ABI major version it was built against.
    pub abi_version: u32,
    /// For a scorer: the keys of the questionnaires it scores.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub questionnaires: Vec<String>,
    /// Whether the questionnaire definitions in its input carry their
    /// questions (titles, options, values). A scorer that works on `values`
    /// alone, or a calculator that works on stored outcomes, declares
    /// `false` and the host sends the questions empty, which makes every
    /// call cheaper (parsing them is most of a small scorer's work). Absent
    /// means `true`, so a module built before the field existed gets what it
    /// always got.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub questions: bool,
    /// Whether the input carries the answers. For a scorer: the option keys
    /// answered (`answers`); one that works on the numeric `values` alone
    /// declares `false` and gets `answers` empty. For a calculator: each
    /// response's `values`; one that works on stored outcomes alone
    /// declares `false`, which for a thousand responses is a good part of
    /// the input. Absent means `true`.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub answers: bool,
    /// The [`CONTRACT_VERSION`] the module was built against. Absent means
    /// 1, the version before the field existed.
    #[serde(default = "first_contract", skip_serializing_if = "is_first_contract")]
    pub contract: u32,
}

impl Manifest {
    /// Leaves out of a JSON input (a [`ScorerInput`] or a
    /// [`CalculatorInput`]) what this manifest declines, as the service
    /// does before a call: a fixture's input then reaches the plugin as it
    /// would in production, natively and in the host's self-test. Parts
    /// that are absent or of another shape are left as they are (a
    /// fixture may hold a broken input on purpose).
    pub fn decline(&self, input: &mut Value) {
        let Some(input) = input.as_object_mut() else {
            return;
        };
        let clear = |value: Option<&mut Value>| match value {
            Some(Value::Array(a)) => a.clear(),
            Some(Value::Object(o)) => o.clear(),
            _ => {}
        };
        match self.kind {
            PluginKind::Scorer => {
                if !self.questions {
                    clear(
                        input
                            .get_mut("questionnaire")
                            .and_then(|q| q.get_mut("questions")),
                    );
                }
                if !self.answers {
                    clear(input.get_mut("answers"));
                    input.remove("typed_answers");
                }
                if self.contract < 2 {
                    input.remove("typed_answers");
                    input.remove("enabled");
                }
            }
            PluginKind::Calculator => {
                if !self.questions
                    && let Some(Value::Object(qs)) = input.get_mut("questionnaires")
                {
                    qs.values_mut().for_each(|q| clear(q.get_mut("questions")));
                }
                if !self.answers
                    && let Some(Value::Array(rs)) = input.get_mut("responses")
                {
                    rs.iter_mut().for_each(|r| clear(r.get_mut("values")));
                }
                if self.contract < 3
                    && let Some(Value::Object(qs)) = input.get_mut("questionnaires")
                {
                    for q in qs.values_mut() {
                        if let Some(Value::Array(scores)) = q.get_mut("scores") {
                            scores
                                .iter_mut()
                                .filter_map(Value::as_object_mut)
                                .for_each(|s| {
                                    s.remove("episode");
                                });
                        }
                    }
                }
            }
        }
    }

    /// [`Manifest::decline`] on JSON bytes; bytes that are not JSON come
    /// back as they are.
    pub fn decline_bytes(&self, input: &[u8]) -> Vec<u8> {
        match serde_json::from_slice::<Value>(input) {
            Ok(mut value) => {
                self.decline(&mut value);
                serde_json::to_vec(&value).unwrap_or_else(|_| input.to_vec())
            }
            Err(_) => input.to_vec(),
        }
    }
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn first_contract() -> u32 {
    1
}

fn is_first_contract(v: &u32) -> bool {
    *v == 1
}

/// Which way a score points.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Tonality {
    /// A higher score means more symptoms (most instruments).
    #[default]
    HigherIsWorse,
    /// A higher score means better functioning (WHO-5, for instance).
    HigherIsBetter,
}

/// Mean and standard deviation of a norm population.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Norm {
    /// Mean raw score of the norm group.
    pub mean: f64,
    /// Standard deviation of the raw score in the norm group.
    pub sd: f64,
}

/// A score as the questionnaire definition describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct ScoreInfo {
    /// Score key, unique within the questionnaire.
    pub key: String,
    /// Human label.
    pub label: String,
    /// Question keys the score is computed from.
    #[serde(default)]
    pub items: Vec<String>,
    /// Norm population for t-scores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub norm: Option<Norm>,
    /// Test-retest or internal-consistency reliability, for reliable change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reliability: Option<f64>,
    /// Standard deviation of the reference sample, for reliable change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sd: Option<f64>,
    /// Clinical cut-off: the first raw value in the clinical range (for
    /// scores where higher is worse) or the first value in the healthy range
    /// (higher is better).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cutoff: Option<f64>,
    /// Which way the score points.
    #[serde(default)]
    pub tonality: Tonality,
    /// The thresholds of episode outcomes (response, remission, follow-up
    /// window), when the definition names them. Contract 3; sent to
    /// calculators only (a scorer's input never carries it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub episode: Option<EpisodeInfo>,
}

/// How an episode of care is judged on a score, as the questionnaire
/// definition states it (its `[scores.episode]` block,
/// docs/questionnaire-format.md#episode-outcomes). Defined for scores where
/// higher is worse. The definition file carries the source of each number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct EpisodeInfo {
    /// Version of this definition of the metrics, named in every report
    /// that applies it; a definition that changes a number changes it.
    pub version: String,
    /// Response: the follow-up value is lower than the baseline value by at
    /// least this fraction of the baseline (0.5: a drop of at least 50%).
    pub response_drop: f64,
    /// Remission: the follow-up value is below this.
    pub remission_below: f64,
    /// Eligibility: an episode whose baseline is below this is not judged
    /// for response or remission (both null), as the sources count only
    /// episodes that start at or above a clinical cut-off; None: every
    /// episode is judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_at_least: Option<f64>,
    /// The follow-up window: from and to this many whole days (24-hour
    /// periods) after the baseline, both included.
    pub window_days: [u32; 2],
    /// Where the thresholds and the window come from.
    pub source: String,
}

/// One answer option of a question.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct OptionInfo {
    /// Option key, as stored in answers.
    pub key: String,
    /// Numeric value used in scoring.
    pub value: f64,
    /// Of a checkbox: ticking it excludes the others ("none of these").
    #[serde(default, skip_serializing_if = "is_false")]
    pub exclusive: bool,
}

/// A question of the questionnaire.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct QuestionInfo {
    /// Question key.
    pub key: String,
    /// Question text in the questionnaire's language.
    #[serde(default)]
    pub title: String,
    /// Question type: `radio`, `select`, `checkbox`, `slider`, `integer`,
    /// `decimal`, `date`, `string` or `textarea` (display items are not
    /// sent).
    #[serde(rename = "type")]
    pub kind: String,
    /// Answer options with their values; empty for the types without.
    #[serde(default)]
    pub options: Vec<OptionInfo>,
    /// Whether the question must be answered for the questionnaire to be
    /// complete.
    #[serde(default)]
    pub required: bool,
    /// Slider, integer, decimal: the lowest answer allowed, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// Slider, integer, decimal: the highest answer allowed, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// Slider: the step between answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<f64>,
    /// Integer, decimal: the unit, in the questionnaire's language.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// Date: `day` (`2024-05-17`), `month` (`2024-05`) or `year` (`2024`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<String>,
    /// String, textarea: the longest answer, in characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
}

/// The parts of a questionnaire definition plugins see.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct QuestionnaireInfo {
    /// Questionnaire key.
    pub key: String,
    /// Display name.
    #[serde(default)]
    pub name: String,
    /// Questions in definition order.
    #[serde(default)]
    pub questions: Vec<QuestionInfo>,
    /// Scores in definition order.
    #[serde(default)]
    pub scores: Vec<ScoreInfo>,
}

impl QuestionnaireInfo {
    /// The definition of score `key`.
    pub fn score(&self, key: &str) -> Option<&ScoreInfo> {
        self.scores.iter().find(|s| s.key == key)
    }

    /// The definition of question `key`.
    pub fn question(&self, key: &str) -> Option<&QuestionInfo> {
        self.questions.iter().find(|q| q.key == key)
    }
}

/// What the patient's record says about them, when known.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct PatientInfo {
    /// `male`, `female` or `other`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gender: Option<String>,
    /// Year of birth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub birth_year: Option<i32>,
}

/// The input of a scorer: one completed response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct ScorerInput {
    /// The questionnaire the response answers.
    pub questionnaire: QuestionnaireInfo,
    /// Every question key to the answer when it is one string (an option
    /// key, a text, a date), null when unanswered or of another kind;
    /// empty for a scorer whose manifest declines the answers (it reads
    /// `values`).
    #[serde(default)]
    pub answers: BTreeMap<String, Option<String>>,
    /// Every question key to the number the answer stands for, null when
    /// unanswered or not numeric: the chosen option's value (radio,
    /// select), the sum of the ticked options' values (checkbox), the
    /// number itself (slider, integer, decimal); null for a date or text.
    pub values: BTreeMap<String, Option<f64>>,
    /// Flags the response was filled out with.
    #[serde(default)]
    pub flags: BTreeMap<String, bool>,
    /// Textvars the response was filled out with.
    #[serde(default)]
    pub textvars: BTreeMap<String, String>,
    /// When the response was completed, RFC 3339 in UTC.
    pub completed_at: String,
    /// `patient` or `profess`.
    pub respondent_type: String,
    /// The patient, when the record says.
    #[serde(default)]
    pub patient: PatientInfo,
    /// Contract 2: every question key to its answer in its own form (an
    /// option key, a list of option keys, a number, a text, a date as
    /// `2024-05-17`, `2024-05` or `2024`), null when unanswered; absent
    /// for a scorer whose manifest declines the answers. Read it with the
    /// typed getters ([`ScorerInput::integer`], [`ScorerInput::options`],
    /// ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub typed_answers: BTreeMap<String, Option<AnswerValue>>,
    /// Contract 2: every question key to whether it was enabled (shown) for
    /// this response by its flags and conditions, when some question was
    /// not. A question that was not enabled is unanswered: its answer is
    /// never stored or scored. Absent (every question was enabled, or
    /// contract 1) means every question was: see [`ScorerInput::enabled`].
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub enabled: BTreeMap<String, bool>,
}

/// An answer in its own form (contract 2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(untagged)]
pub enum AnswerValue {
    /// An option key (radio, select), a text (string, textarea) or a date.
    Text(String),
    /// The option keys ticked (checkbox), in definition order.
    Keys(Vec<String>),
    /// A whole number (slider, integer).
    Integer(i64),
    /// A number (decimal).
    Decimal(f64),
}

impl ScorerInput {
    /// The numeric value answered to question `key`; `None` when unanswered
    /// or when the question does not exist.
    pub fn value(&self, key: &str) -> Option<f64> {
        self.values.get(key).copied().flatten()
    }

    /// The option key (or text) answered to question `key`.
    pub fn answer(&self, key: &str) -> Option<&str> {
        self.answers.get(key).and_then(|a| a.as_deref())
    }

    /// The values of several questions, in the order given.
    pub fn values_of<S: AsRef<str>>(&self, keys: &[S]) -> Vec<Option<f64>> {
        keys.iter().map(|k| self.value(k.as_ref())).collect()
    }
}

/// Whether a score itself is worrying.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum ScoreStatus {
    /// Needs extra attention.
    Attention,
    /// Alarming.
    Alarm,
}

/// One computed score (an entry of `outcome.scores`). The host adds
/// `score`, `label` and `referenced_values`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Score {
    /// The score; absent when it could not be computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// Severity band text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpretation: Option<String>,
    /// The cut-off text, e.g. `">= 10"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub norm: Option<String>,
    /// Linear t-score against the norm population.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tscore: Option<f64>,
    /// The t-score band.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tscore_interpretation: Option<String>,
    /// Flag for HL7 ORU messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oru_flag: Option<String>,
    /// `attention` or `alarm` when the score itself is worrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ScoreStatus>,
    /// Question keys whose answers were missing, when too few items were
    /// answered to compute `value`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_values: Option<Vec<String>>,
    /// Further fields, passed through to the outcome unchanged.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

impl Score {
    /// A score with a value and nothing else.
    pub fn of(value: f64) -> Score {
        Score {
            value: Some(value),
            ..Score::default()
        }
    }

    /// A score that could not be computed because these answers are missing.
    pub fn missing<S: Into<String>>(missing: impl IntoIterator<Item = S>) -> Score {
        Score {
            missing_values: Some(missing.into_iter().map(Into::into).collect()),
            ..Score::default()
        }
    }
}

/// The output of a scorer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct ScorerOutput {
    /// Score key to score. Keys must be score keys of the definition.
    #[serde(default)]
    pub scores: BTreeMap<String, Score>,
    /// Question keys whose answers raise the alarm; `None` when the
    /// instrument has no alarm rule, empty when nothing triggered.
    #[serde(default)]
    pub alarm: Option<Vec<String>>,
    /// Question keys whose answers need attention; `None` when the
    /// instrument has no attention rule.
    #[serde(default)]
    pub attention: Option<Vec<String>>,
    /// Answered items / scored items (0 to 1), when the instrument defines
    /// completeness.
    #[serde(default)]
    pub completion: Option<f64>,
}

/// The stored outcome of a response, as calculators see it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct OutcomeInfo {
    /// Score key to score, with the fields the host added (`label`,
    /// `referenced_values`, and `exception` when scoring failed) in
    /// [`Score::extra`].
    #[serde(default)]
    pub scores: BTreeMap<String, Score>,
    /// `attention`, `alarm` or null.
    #[serde(default)]
    pub action: Option<String>,
    /// Question keys that raised the alarm.
    #[serde(default)]
    pub alarm: Option<Vec<String>>,
    /// Question keys that raised attention.
    #[serde(default)]
    pub attention: Option<Vec<String>>,
}

/// A completed response, as calculators see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct ResponseInfo {
    /// Response id.
    pub id: i64,
    /// Questionnaire key.
    pub questionnaire_key: String,
    /// When it was completed, RFC 3339 in UTC.
    pub completed_at: String,
    /// Question key to answered option key, null when unanswered.
    #[serde(default)]
    pub values: BTreeMap<String, Option<String>>,
    /// The stored outcome.
    #[serde(default)]
    pub outcome: OutcomeInfo,
}

/// The input of a calculator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct CalculatorInput {
    /// The selected completed responses, oldest first (by `completed_at`,
    /// then id).
    pub responses: Vec<ResponseInfo>,
    /// Questionnaire key to definition, for every questionnaire among the
    /// responses.
    #[serde(default)]
    pub questionnaires: BTreeMap<String, QuestionnaireInfo>,
}

/// The output of a calculator: the `results` of a report calculation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct CalculatorOutput {
    /// Free-form results; must be a JSON object.
    pub results: Map<String, Value>,
}

/// What a plugin's entry call answers: a result or a structured error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Reply<T> {
    /// The call succeeded.
    Ok(T),
    /// The plugin refused the input.
    Error(PluginError),
}

/// An error a plugin reports instead of a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct PluginError {
    /// What went wrong, for operators.
    pub message: String,
}

impl PluginError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> PluginError {
        PluginError {
            message: message.into(),
        }
    }
}

impl std::fmt::Display for PluginError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PluginError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_without_questions_means_the_questions_are_wanted() {
        let old = r#"{"name":"x","kind":"scorer","version":"1.0.0","abi_version":1}"#;
        let manifest: Manifest = serde_json::from_str(old).expect("a manifest");
        assert!(manifest.questions);
        assert!(manifest.answers);
        let declined = Manifest {
            questions: false,
            ..manifest.clone()
        };
        let json = serde_json::to_string(&declined).expect("json");
        assert!(json.contains(r#""questions":false"#), "{json}");
        // The default is left out, so older hosts read the same bytes.
        let json = serde_json::to_string(&manifest).expect("json");
        assert!(!json.contains("questions"), "{json}");
    }

    #[test]
    fn a_manifest_without_a_contract_is_of_the_first_and_gets_only_its_fields() {
        let old = r#"{"name":"x","kind":"scorer","version":"1.0.0","abi_version":1}"#;
        let first: Manifest = serde_json::from_str(old).expect("a manifest");
        assert_eq!(first.contract, 1);
        let input = serde_json::json!({
            "questionnaire": {"key": "x"},
            "answers": {"q1": "a"},
            "values": {"q1": 1.0},
            "typed_answers": {"q1": "a"},
            "enabled": {"q1": true},
        });
        let mut reduced = input.clone();
        first.decline(&mut reduced);
        assert_eq!(reduced.get("typed_answers"), None);
        assert_eq!(reduced.get("enabled"), None);
        assert_eq!(reduced["answers"], input["answers"]);

        let second = Manifest {
            contract: CONTRACT_VERSION,
            ..first.clone()
        };
        let json = serde_json::to_string(&second).expect("json");
        assert!(
            json.contains(&format!(r#""contract":{CONTRACT_VERSION}"#)),
            "{json}"
        );
        let mut kept = input.clone();
        second.decline(&mut kept);
        assert_eq!(kept, input);
        // Declining the answers declines the typed ones too.
        let lean = Manifest {
            answers: false,
            ..second
        };
        let mut lean_input = input.clone();
        lean.decline(&mut lean_input);
        assert_eq!(lean_input.get("typed_answers"), None);
        assert_eq!(lean_input["enabled"], input["enabled"]);
    }

    #[test]
    fn a_declining_manifest_empties_what_it_declines_and_nothing_else() {
        let scorer = |questions, answers| Manifest {
            name: "x".into(),
            kind: PluginKind::Scorer,
            version: "1.0.0".into(),
            abi_version: ABI_VERSION,
            questionnaires: vec!["x".into()],
            questions,
            answers,
            contract: CONTRACT_VERSION,
        };
        let input = serde_json::json!({
            "questionnaire": {"key": "x", "questions": [{"key": "q1"}]},
            "answers": {"q1": "a"},
            "values": {"q1": 1.0},
        });
        let mut kept = input.clone();
        scorer(true, true).decline(&mut kept);
        assert_eq!(kept, input);
        let mut lean = input.clone();
        scorer(false, false).decline(&mut lean);
        assert_eq!(lean["questionnaire"]["questions"], serde_json::json!([]));
        assert_eq!(lean["answers"], serde_json::json!({}));
        assert_eq!(lean["values"], input["values"]);
        assert_eq!(lean["questionnaire"]["key"], "x");

        let calculator = Manifest {
            kind: PluginKind::Calculator,
            ..scorer(false, false)
        };
        let input = serde_json::json!({
            "questionnaires": {"x": {"key": "x", "questions": [{"key": "q1"}]}},
            "responses": [{"values": {"q1": 1.0}, "outcome": {}}],
        });
        let mut lean = input.clone();
        calculator.decline(&mut lean);
        assert_eq!(
            lean["questionnaires"]["x"]["questions"],
            serde_json::json!([])
        );
        assert_eq!(lean["responses"][0]["values"], serde_json::json!({}));
        assert_eq!(lean["responses"][0]["outcome"], serde_json::json!({}));
        // Not JSON, or not an object: untouched.
        assert_eq!(calculator.decline_bytes(b"not json"), b"not json");
        let mut array = serde_json::json!([1]);
        calculator.decline(&mut array);
        assert_eq!(array, serde_json::json!([1]));
    }

    #[test]
    fn a_calculator_before_contract_3_gets_no_episode_thresholds() {
        let calculator = |contract| Manifest {
            name: "x".into(),
            kind: PluginKind::Calculator,
            version: "1.0.0".into(),
            abi_version: ABI_VERSION,
            questionnaires: Vec::new(),
            questions: false,
            answers: false,
            contract,
        };
        let episode = serde_json::json!({"version": "1", "response_drop": 0.5,
            "remission_below": 5.0, "window_days": [14, 180], "source": "s"});
        let input = serde_json::json!({
            "questionnaires": {"x": {"key": "x", "scores": [
                {"key": "total", "label": "Total", "episode": episode},
                {"key": "other", "label": "Other"},
            ]}},
            "responses": [],
        });
        let mut old = input.clone();
        calculator(2).decline(&mut old);
        assert_eq!(old["questionnaires"]["x"]["scores"][0].get("episode"), None);
        assert_eq!(old["questionnaires"]["x"]["scores"][0]["key"], "total");
        assert_eq!(
            old["questionnaires"]["x"]["scores"][1],
            input["questionnaires"]["x"]["scores"][1]
        );
        let mut new = input.clone();
        calculator(3).decline(&mut new);
        assert_eq!(new["questionnaires"]["x"]["scores"][0]["episode"], episode);
        let parsed: CalculatorInput = serde_json::from_value(new).expect("a calculator input");
        let info = parsed.questionnaires["x"].scores[0].episode.clone();
        assert_eq!(info.map(|e| e.window_days), Some([14, 180]));
    }
}
