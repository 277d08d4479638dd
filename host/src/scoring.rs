//! The scoring pipeline: a completed response's answers become the scorer
//! input, the questionnaire's scorer plugin computes, and the host
//! completes and checks the outcome (docs/api/outcomes.md). A scorer that
//! fails in any way never costs the response: the outcome records the
//! failure per score, the failure is logged and counted, and `outcomes
//! rescore` can recompute it later (docs/api/outcomes.md#scorer-failure).
//!
//! The one builder of a scorer's input ([`scorer_input_for`]): serving
//! calls, the shadow's candidates, `verify` and the fixture harness all
//! read what it writes. Must not: store, decide which version serves
//! (`trials.rs`), or hand work to the shadow (the store does).
//!
//! Every outcome records its provenance: the module (name, version,
//! SHA-256), the ABI version, and the SHA-256 of the definition and of the
//! input, so `verify` can recompute it exactly.

use chrono::{DateTime, SecondsFormat, Utc};
use plugin_sdk::{
    CalculatorInput, OptionInfo, OutcomeInfo, PatientInfo, PluginKind, QuestionInfo,
    QuestionnaireInfo, ResponseInfo, ScoreInfo, ScorerInput, ScorerOutput,
};
use serde::Serialize;

use crate::domain::answer::Answer;
use crate::domain::answers::Answers;
use crate::domain::outcome::{self, Outcome, Provenance};
use crate::domain::questionnaire::{EpisodeDef, Kind, Question, Questionnaire, sha256_hex};
use crate::domain::response::{Completion, Response};
use crate::domain::text::Text;
use crate::domain::variant::Variant;
use crate::metrics::Metrics;
use crate::plugins::{Plugin, PluginError};
use crate::trials::Trials;

/// What the pipeline needs to know of a response besides its answers.
#[derive(Debug, Clone, Copy)]
pub struct ScoringContext<'a> {
    pub completed_at: DateTime<Utc>,
    pub professional: bool,
    /// The flags and textvars the response was created with.
    pub variant: &'a Variant,
}

/// The parts of a definition a calculator sees: everything plugins see,
/// with each score's episode thresholds.
pub fn questionnaire_info(q: &Questionnaire) -> QuestionnaireInfo {
    info(q, true, true)
}

/// The parts of a definition plugins see, the questions left empty unless
/// `questions` (a scorer's manifest may decline them), the episode
/// thresholds of the scores only with `episodes` (calculators: a scorer's
/// input, and so its hash, stays as it was before definitions had them).
/// Display items are not questions to a plugin; the limits of a question
/// appear only for the types that have them, so a radio-only definition
/// reads as it always did.
fn info(q: &Questionnaire, questions: bool, episodes: bool) -> QuestionnaireInfo {
    QuestionnaireInfo {
        key: q.key.clone(),
        name: q.name.clone(),
        questions: q
            .answerable()
            .take(if questions { usize::MAX } else { 0 })
            .map(|question| question_info(q, question))
            .collect(),
        scores: q
            .scores
            .iter()
            .map(|s| ScoreInfo {
                key: s.key.clone(),
                label: s.label.resolve(&q.language, "en").to_owned(),
                items: s.items.clone(),
                norm: s.norm,
                reliability: s.reliability,
                sd: s.sd,
                cutoff: s.cutoff,
                tonality: s.tonality,
                episode: s
                    .episode
                    .as_ref()
                    .filter(|_| episodes)
                    .map(EpisodeDef::info),
            })
            .collect(),
    }
}

/// One question as plugins see it, texts in the definition's language.
fn question_info(q: &Questionnaire, question: &Question) -> QuestionInfo {
    let text = |t: &Text| t.resolve(&q.language, "en").to_owned();
    // Bounds of a definition are whole or finite numbers.
    #[allow(clippy::cast_precision_loss)]
    let (min, max, step) = match &question.kind {
        Kind::Slider { min, max, step, .. } => {
            (Some(*min as f64), Some(*max as f64), Some(*step as f64))
        }
        Kind::Integer { min, max, .. } => (min.map(|m| m as f64), max.map(|m| m as f64), None),
        Kind::Decimal { min, max, .. } => (*min, *max, None),
        _ => (None, None, None),
    };
    QuestionInfo {
        key: question.key.clone(),
        title: text(&question.title),
        kind: question.kind.name().to_owned(),
        options: question
            .options
            .iter()
            .map(|o| OptionInfo {
                key: o.key.clone(),
                // Option values are small integers: exact.
                #[allow(clippy::cast_precision_loss)]
                value: o.value as f64,
                exclusive: o.exclusive,
            })
            .collect(),
        required: question.required,
        min,
        max,
        step,
        unit: question.kind.unit().map(text),
        precision: match question.kind {
            Kind::Date { precision } => Some(precision.name().to_owned()),
            _ => None,
        },
        max_length: match question.kind {
            Kind::String { max_length } | Kind::Textarea { max_length } => {
                u64::try_from(max_length).ok()
            }
            _ => None,
        },
    }
}

/// A stored completed response as calculators see it: its outcome as
/// stored, `completed_at` in UTC with milliseconds.
pub fn response_info(r: &Response) -> ResponseInfo {
    let outcome = serde_json::to_value(&r.outcome)
        .and_then(serde_json::from_value::<OutcomeInfo>)
        .unwrap_or_default();
    ResponseInfo {
        id: r.id.0,
        questionnaire_key: r.questionnaire_key.clone(),
        completed_at: r
            .times
            .completed_at
            .map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true))
            .unwrap_or_default(),
        values: r.answers.texts(),
        outcome,
    }
}

/// A calculator's input as `plugin` asked for it: the questions left out
/// of the definitions and the answers out of the responses when its
/// manifest declines them, and the scores' episode thresholds when it was
/// built against a contract before 3.
pub fn calculator_input_for(plugin: &Plugin, mut input: CalculatorInput) -> CalculatorInput {
    if plugin.manifest.contract < 3 {
        for q in input.questionnaires.values_mut() {
            q.scores.iter_mut().for_each(|s| s.episode = None);
        }
    }
    if !plugin.manifest.questions {
        for q in input.questionnaires.values_mut() {
            q.questions.clear();
        }
    }
    if !plugin.manifest.answers {
        for r in &mut input.responses {
            r.values.clear();
        }
    }
    input
}

/// The scorer input for `answers` to `q`, every part of it, in the latest
/// contract (the fixture runner shows authors this; a module of an older
/// contract gets it with what it does not know left out, as the service
/// sends it). `flags` holds every flag the questionnaire declares, with the
/// response's value or the default.
pub fn scorer_input(q: &Questionnaire, answers: &Answers, ctx: ScoringContext<'_>) -> ScorerInput {
    // The one builder is `input_json`; this is its parse, so the harness and
    // a real call cannot disagree.
    serde_json::from_slice(&input_json(q, answers, ctx, Wants::everything()))
        .expect("the scorer input the host writes parses as ScorerInput")
}

/// The scorer input for `answers` to `q` as `plugin` asked for it, as the
/// JSON the plugin reads: without the questions, or the option keys
/// answered, when its manifest declines them, and in the contract version
/// it was built against.
pub fn scorer_input_for(
    plugin: &Plugin,
    q: &Questionnaire,
    answers: &Answers,
    ctx: ScoringContext<'_>,
) -> Vec<u8> {
    input_json(q, answers, ctx, Wants::of(plugin))
}

/// What a scorer's manifest asks for of its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Wants {
    questions: bool,
    answers: bool,
    contract: u32,
}

impl Wants {
    fn everything() -> Wants {
        Wants {
            questions: true,
            answers: true,
            contract: plugin_sdk::CONTRACT_VERSION,
        }
    }

    fn of(plugin: &Plugin) -> Wants {
        Wants {
            questions: plugin.manifest.questions,
            answers: plugin.manifest.answers,
            contract: plugin.manifest.contract,
        }
    }
}

/// A [`ScorerInput`] written straight from the definition and the response,
/// without building one: every response is scored, so this is on the path
/// of every POST. The questionnaire part is serialized once per definition
/// (`Questionnaire::scorer_json`) and copied in; the rest borrows. The
/// answers are already only those to enabled questions ([`Answers`] holds
/// no others); a module of contract 1 gets exactly the fields it knew.
fn input_json(
    q: &Questionnaire,
    answers: &Answers,
    ctx: ScoringContext<'_>,
    wants: Wants,
) -> Vec<u8> {
    let info = &scorer_json(q)[usize::from(wants.questions)];
    let second = wants.contract >= 2;
    let value = |key: &str, answer: Option<&Answer>| {
        answer.and_then(|a| {
            q.question(key)
                .and_then(|question| a.value(&question.options))
        })
    };
    let rest = InputRest {
        answers: MapOf(|| {
            answers
                .iter()
                .filter(|_| wants.answers)
                .map(|(key, answer)| (key, answer.and_then(Answer::as_text)))
        }),
        values: MapOf(|| {
            answers
                .iter()
                .map(|(key, answer)| (key, value(key, answer)))
        }),
        flags: MapOf(|| {
            q.flags
                .keys()
                .map(|name| (name.as_str(), ctx.variant.flag(q, name)))
        }),
        textvars: &ctx.variant.textvars,
        completed_at: ctx
            .completed_at
            .to_rfc3339_opts(SecondsFormat::Millis, true),
        respondent_type: if ctx.professional {
            "profess"
        } else {
            "patient"
        },
        patient: PatientInfo::default(),
        typed_answers: (second && wants.answers).then_some(MapOf(|| {
            answers
                .iter()
                .map(|(key, answer)| (key, answer.map(Answer::to_json)))
        })),
        // Only when some question was not: absent says all were, and a
        // radio-only response of a scorer that declines the answers then
        // reads the bytes it read under contract 1.
        enabled: (second && answers.enabled().any(|(_, on)| !on))
            .then_some(MapOf(|| answers.enabled())),
    };
    let mut out = Vec::with_capacity(info.len() + 512);
    out.extend_from_slice(INPUT_HEAD);
    out.extend_from_slice(info);
    out.push(b',');
    let at = out.len();
    serde_json::to_writer(&mut out, &rest).expect("strings, numbers and maps always serialize");
    // `rest` is an object; its fields follow the questionnaire's in ours.
    debug_assert_eq!(out.get(at), Some(&b'{'));
    out.remove(at);
    out
}

/// What every scorer input starts with; the questionnaire part and a
/// comma follow.
const INPUT_HEAD: &[u8] = b"{\"questionnaire\":";

/// The questionnaire part of every scorer input for `q`, without and with
/// the questions, serialized on first use.
fn scorer_json(q: &Questionnaire) -> &[Vec<u8>; 2] {
    q.scorer_json.get_or_init(|| {
        [false, true].map(|with| {
            serde_json::to_vec(&info(q, with, false))
                .expect("strings, numbers and lists always serialize")
        })
    })
}

/// SHA-256 (hex) of `input`, a scorer input `input_json` wrote for `q`
/// (with the questions or not). The same digest as hashing all of it, but
/// the state after its head and questionnaire part is kept with the
/// definition, so each POST hashes only its own few hundred bytes.
pub fn input_sha256(q: &Questionnaire, questions: bool, input: &[u8]) -> String {
    use sha2::Digest;
    let which = usize::from(questions);
    let head = INPUT_HEAD.len() + scorer_json(q)[which].len() + 1;
    let hashed = q.scorer_json_hashed.get_or_init(|| {
        scorer_json(q).clone().map(|info| {
            let mut state = sha2::Sha256::new();
            state.update(INPUT_HEAD);
            state.update(&info);
            state.update(b",");
            state
        })
    });
    match input.get(head..) {
        Some(rest) if input.starts_with(INPUT_HEAD) => {
            let mut state = hashed[which].clone();
            state.update(rest);
            hex::encode(state.finalize())
        }
        _ => sha256_hex(input),
    }
}

/// The fields of [`ScorerInput`] after `questionnaire`, borrowed (the maps
/// are [`MapOf`]s). The last two are contract 2's, left out for contract 1.
#[derive(Serialize)]
struct InputRest<'a, A, V, F, T, E> {
    answers: A,
    values: V,
    flags: F,
    textvars: &'a std::collections::BTreeMap<String, String>,
    completed_at: String,
    respondent_type: &'static str,
    patient: PatientInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    typed_answers: Option<T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    enabled: Option<E>,
}

/// Serializes the pairs `.0()` yields as a JSON object.
struct MapOf<F>(F);

impl<F, I, K, V> Serialize for MapOf<F>
where
    F: Fn() -> I,
    I: IntoIterator<Item = (K, V)>,
    K: Serialize,
    V: Serialize,
{
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map((self.0)())
    }
}

/// Fills in the outcome and provenance of `completion`, a response to `q`,
/// with the version of `q`'s scorer that serves (`trials`: the folder's,
/// or a candidate promoted in its place; a failure becomes the outcome).
/// The caller passes the definition it checked the answers against, taken
/// from the one catalog snapshot of its request: a reload in between
/// cannot validate with one definition and score with another. A candidate
/// on trial is not this function's business: the store hands every stored
/// completion to the shadow (`crate::shadow`).
pub async fn score_completion(
    trials: &Trials,
    metrics: &Metrics,
    q: &Questionnaire,
    completion: &mut Completion,
    professional: bool,
) {
    let ctx = ScoringContext {
        completed_at: completion.completed_at,
        professional,
        variant: &completion.variant,
    };
    let plugin = match trials.serving(PluginKind::Scorer, &q.scorer) {
        Ok(p) => p,
        Err(e) => {
            (completion.outcome, completion.provenance) = failure(metrics, q, None, &e);
            return;
        }
    };
    let input = scorer_input_for(&plugin, q, &completion.answers, ctx);
    let input_sha256 = input_sha256(q, plugin.manifest.questions, &input);
    let call = trials
        .plugins()
        .call_json::<ScorerOutput>(plugin.clone(), input)
        .await;
    let (outcome, mut provenance) = finish(metrics, q, &plugin, call.result);
    provenance.input_sha256 = Some(input_sha256);
    completion.outcome = outcome;
    completion.provenance = provenance;
}

/// Scores with a given plugin synchronously (rescoring, verifying, the
/// harness).
pub fn score_with(
    metrics: &Metrics,
    plugin: &Plugin,
    q: &Questionnaire,
    answers: &Answers,
    ctx: ScoringContext<'_>,
) -> (Outcome, Provenance) {
    let input = scorer_input_for(plugin, q, answers, ctx);
    let call = plugin.invoke_json::<ScorerOutput>(&input);
    plugin.emit_logs(&call.logs);
    let (outcome, mut provenance) = finish(metrics, q, plugin, call.result);
    provenance.input_sha256 = Some(input_sha256(q, plugin.manifest.questions, &input));
    (outcome, provenance)
}

/// The outcome a scorer's reply comes to: completed with the definition,
/// or the failure.
pub fn finish(
    metrics: &Metrics,
    q: &Questionnaire,
    plugin: &Plugin,
    result: Result<ScorerOutput, PluginError>,
) -> (Outcome, Provenance) {
    match result.and_then(|output| outcome::complete(q, output).map_err(PluginError::Contract)) {
        Ok(outcome) => (outcome, provenance(plugin, q)),
        Err(e) => failure(metrics, q, Some(plugin), &e),
    }
}

/// What an outcome computed by `plugin` with definition `q` records
/// (docs/operations.md#verifying-outcomes-and-trying-a-new-scorer); the
/// input's hash is the caller's to add.
fn provenance(plugin: &Plugin, q: &Questionnaire) -> Provenance {
    Provenance {
        plugin: Some(plugin.name().to_owned()),
        version: Some(plugin.version().to_owned()),
        sha256: Some(plugin.sha256.clone()),
        abi_version: Some(i64::from(plugin.manifest.abi_version)),
        definition_sha256: Some(q.sha256.clone()).filter(|s| !s.is_empty()),
        input_sha256: None,
    }
}

fn failure(
    metrics: &Metrics,
    q: &Questionnaire,
    plugin: Option<&Plugin>,
    e: &PluginError,
) -> (Outcome, Provenance) {
    tracing::error!(
        questionnaire = q.key,
        scorer = q.scorer,
        version = plugin.map(Plugin::version),
        error = %e,
        "scoring failed; the response is stored with the failure in its outcome"
    );
    metrics.inc(
        "outcomes_scoring_failures_total",
        &[("questionnaire", &q.key), ("code", e.code())],
    );
    let provenance = match plugin {
        Some(p) => provenance(p, q),
        None => Provenance {
            plugin: Some(q.scorer.clone()),
            ..Provenance::default()
        },
    };
    (outcome::failed(q, e.code(), &e.to_string()), provenance)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::answers::GivenAnswers;
    use crate::domain::questionnaire;
    use chrono::TimeZone;
    use serde_json::json;

    fn phq9() -> Questionnaire {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../questionnaires/phq9/questionnaire.toml"
        );
        let text = std::fs::read_to_string(path).expect("the bundled PHQ-9 definition");
        questionnaire::parse(&text, "phq9").expect("valid")
    }

    /// `data` as `answer_data` to `q`, checked and taken in `variant`.
    fn answers(q: &Questionnaire, data: serde_json::Value, variant: &Variant) -> Answers {
        GivenAnswers::check(q, data.as_object().expect("an object"))
            .expect("valid")
            .enabled(q, variant)
            .answers
    }

    fn wants(questions: bool, answers: bool, contract: u32) -> Wants {
        Wants {
            questions,
            answers,
            contract,
        }
    }

    fn input(
        q: &Questionnaire,
        variant: &Variant,
        questions: bool,
        option_keys: bool,
    ) -> ScorerInput {
        let given = json!({"v_1": "a1", "v_2": "a3", "v_9": "a2", "v_10": null});
        let answers = answers(q, given, variant);
        let ctx = ScoringContext {
            completed_at: Utc
                .with_ymd_and_hms(2026, 3, 4, 5, 6, 7)
                .single()
                .expect("a valid time"),
            professional: true,
            variant,
        };
        let bytes = input_json(q, &answers, ctx, wants(questions, option_keys, 2));
        serde_json::from_slice(&bytes).expect("parses as ScorerInput")
    }

    #[test]
    fn episode_thresholds_reach_calculators_and_never_a_scorer() {
        let q = phq9();
        let scorer = input(&q, &Variant::default(), true, true);
        assert!(
            scorer
                .questionnaire
                .scores
                .iter()
                .all(|s| s.episode.is_none())
        );
        let calculator = questionnaire_info(&q);
        let episode = calculator.scores[0].episode.clone();
        assert_eq!(episode.as_ref().map(|e| e.window_days), Some([14, 180]));
        assert_eq!(episode.as_ref().map(|e| e.remission_below), Some(5.0));
        assert_eq!(episode.map(|e| e.response_drop), Some(0.5));
    }

    #[test]
    fn the_input_written_directly_is_the_scorer_input() {
        let q = phq9();
        let plain = input(&q, &Variant::default(), true, true);
        assert_eq!(plain.questionnaire, info(&q, true, false));
        assert_eq!(plain.answer("v_1"), Some("a1"));
        assert_eq!(plain.answer("v_9"), Some("a2"));
        assert_eq!(plain.value("v_2"), Some(3.0));
        assert_eq!(plain.value("v_9"), Some(2.0));
        assert_eq!(plain.values.get("v_10"), Some(&None));
        assert_eq!(plain.flags, [("phq8".to_owned(), false)].into());
        assert_eq!(plain.completed_at, "2026-03-04T05:06:07.000Z");
        assert_eq!(plain.respondent_type, "profess");
        assert_eq!(plain.patient, PatientInfo::default());

        // PHQ-8: item 9 is hidden, so its answer is as if not given.
        let phq8 = Variant {
            flags: [("phq8".to_owned(), true)].into(),
            textvars: [("anything".to_owned(), "kept".to_owned())].into(),
        };
        let hidden = input(&q, &phq8, true, true);
        assert_eq!(hidden.answers.get("v_9"), Some(&None));
        assert_eq!(hidden.values.get("v_9"), Some(&None));
        assert_eq!(hidden.value("v_1"), Some(1.0));
        assert_eq!(hidden.flags, [("phq8".to_owned(), true)].into());
        assert_eq!(hidden.textvars, phq8.textvars);

        // A manifest that declines the questions and the option keys.
        let lean = input(&q, &Variant::default(), false, false);
        assert!(lean.questionnaire.questions.is_empty());
        assert_eq!(lean.questionnaire.scores, plain.questionnaire.scores);
        assert!(lean.answers.is_empty());
        assert_eq!(lean.values, plain.values);
    }

    #[test]
    fn the_input_hash_is_the_hash_of_every_byte() {
        let q = phq9();
        let variant = Variant::default();
        let answers = answers(&q, json!({"v_1": "a1", "v_9": "a2"}), &variant);
        let ctx = ScoringContext {
            completed_at: Utc
                .with_ymd_and_hms(2026, 3, 4, 5, 6, 7)
                .single()
                .expect("a valid time"),
            professional: false,
            variant: &variant,
        };
        for questions in [false, true] {
            let bytes = input_json(&q, &answers, ctx, wants(questions, true, 2));
            assert_eq!(input_sha256(&q, questions, &bytes), sha256_hex(&bytes));
            // Kept state, second use.
            assert_eq!(input_sha256(&q, questions, &bytes), sha256_hex(&bytes));
        }
        assert_eq!(input_sha256(&q, true, b"{}"), sha256_hex(b"{}"));
    }

    fn at_five_past_five() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7)
            .single()
            .expect("a valid time")
    }

    #[test]
    fn a_first_contract_module_reads_the_bytes_it_always_did_and_the_second_more_after_them() {
        let q = crate::domain::testing::questionnaire();
        let variant = Variant::default();
        let a = answers(&q, json!({"v_1": "a1", "v_2": "a0", "v_3": "a0"}), &variant);
        let ctx = ScoringContext {
            completed_at: at_five_past_five(),
            professional: false,
            variant: &variant,
        };
        let first =
            String::from_utf8(input_json(&q, &a, ctx, wants(false, true, 1))).expect("utf-8");
        // The form of contract 1, byte for byte (v_3 is not enabled without
        // the flag `extra`: unanswered).
        let v1 = concat!(
            r#"{"questionnaire":{"key":"mini","name":"Mini <check>","questions":[],"scores":["#,
            r#"{"key":"total","label":"Total","items":["v_1","v_2"],"tonality":"higher_is_worse"},"#,
            r#"{"key":"second","label":"Second","items":[],"tonality":"higher_is_worse"}]},"#,
            r#""answers":{"v_1":"a1","v_2":"a0","v_3":null},"#,
            r#""values":{"v_1":1.0,"v_2":0.0,"v_3":null},"#,
            r#""flags":{"extra":false,"short":false},"textvars":{},"#,
            r#""completed_at":"2026-03-04T05:06:07.000Z","respondent_type":"patient","patient":{}}"#
        );
        assert_eq!(first, v1);
        let second =
            String::from_utf8(input_json(&q, &a, ctx, wants(false, true, 2))).expect("utf-8");
        assert_eq!(
            second,
            format!(
                "{},{}}}",
                &v1[..v1.len() - 1],
                concat!(
                    r#""typed_answers":{"v_1":"a1","v_2":"a0","v_3":null},"#,
                    r#""enabled":{"v_1":true,"v_2":true,"v_3":false}"#
                )
            )
        );
        // Declining the answers leaves out the typed ones too.
        let lean =
            String::from_utf8(input_json(&q, &a, ctx, wants(false, false, 2))).expect("utf-8");
        assert!(!lean.contains("typed_answers"), "{lean}");
        assert!(lean.contains(r#""answers":{}"#), "{lean}");
    }

    /// One question of each type that takes an answer, and a display item.
    const TYPES: &str = r#"
key = "types"
name = "Types"
short_description = "Every type"
language = "en"
licence = "test"
scorer = "types"

[[questions]]
key = "v_0"
type = "display"
text = "Read this first."

[[questions]]
key = "v_1"
type = "checkbox"
title = "Complaints"
options = [ { key = "a1", value = 1, description = "Sleep" }, { key = "a2", value = 2, description = "Mood" },
            { key = "a9", value = 0, description = "None of these", exclusive = true } ]

[[questions]]
key = "v_2"
type = "slider"
title = "How are you?"
min = 0
max = 100
step = 5
min_label = "Bad"
max_label = "Good"

[[questions]]
key = "v_3"
type = "decimal"
title = "Hours of sleep"
min = 0
max = 24
unit = "hours"

[[questions]]
key = "v_4"
type = "date"
title = "Since when?"
precision = "month"

[[questions]]
key = "v_5"
type = "string"
title = "Other, namely"
max_length = 200
shown_if = { question = "v_1", equals = "a2" }
"#;

    #[test]
    fn every_type_reaches_the_scorer_typed_with_its_value() {
        let q = questionnaire::parse(TYPES, "types").expect("valid");
        let variant = Variant::default();
        let a = answers(
            &q,
            json!({"v_1": ["a2", "a1"], "v_2": 35, "v_3": 7.5, "v_4": "2024-05", "v_5": "a cat"}),
            &variant,
        );
        let ctx = ScoringContext {
            completed_at: at_five_past_five(),
            professional: false,
            variant: &variant,
        };
        let input = scorer_input(&q, &a, ctx);
        assert_eq!(input.values.len(), 5, "no display item: {:?}", input.values);
        assert_eq!(
            input.value("v_1"),
            Some(3.0),
            "the ticked options' values summed"
        );
        assert_eq!(input.value("v_2"), Some(35.0));
        assert_eq!(input.value("v_3"), Some(7.5));
        assert_eq!(input.value("v_4"), None);
        assert_eq!(input.value("v_5"), None);
        assert_eq!(input.options("v_1"), ["a1", "a2"]);
        assert_eq!(input.integer("v_2"), Some(35));
        assert_eq!(input.decimal("v_3"), Some(7.5));
        assert_eq!(
            input.date("v_4").map(|d| (d.year, d.month)),
            Some((2024, Some(5)))
        );
        assert_eq!(input.text("v_5"), Some("a cat"));
        assert_eq!(input.answer("v_4"), Some("2024-05"));
        assert_eq!(input.answers.get("v_1"), Some(&None));
        assert!(input.enabled("v_5"));
        let questions = &input.questionnaire.questions;
        assert_eq!(questions.len(), 5);
        assert!(questions[0].options[2].exclusive);
        assert_eq!(
            (questions[1].min, questions[1].max, questions[1].step),
            (Some(0.0), Some(100.0), Some(5.0))
        );
        assert_eq!(questions[2].unit.as_deref(), Some("hours"));
        assert_eq!(questions[3].precision.as_deref(), Some("month"));
        assert_eq!(questions[4].max_length, Some(200));

        // Without "Mood" ticked, "other, namely" is not enabled: its answer
        // never reaches the scorer.
        let a = answers(&q, json!({"v_1": ["a1"], "v_5": "a cat"}), &variant);
        let input = scorer_input(&q, &a, ctx);
        assert!(!input.enabled("v_5"));
        assert_eq!(input.text("v_5"), None);
    }

    #[test]
    fn a_copy_of_a_definition_serializes_its_own_questionnaire_part() {
        let q = phq9();
        let _ = input(&q, &Variant::default(), true, true);
        let mut renamed = q.clone();
        renamed.name = "Renamed".to_owned();
        assert_eq!(
            input(&renamed, &Variant::default(), true, true)
                .questionnaire
                .name,
            "Renamed"
        );
    }
}
