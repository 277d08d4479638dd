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
    CalculatorInput, OptionInfo, PatientInfo, PluginKind, QuestionInfo, QuestionnaireInfo,
    ScoreInfo, ScorerInput, ScorerOutput,
};
use serde::Serialize;

use crate::domain::answers::Answers;
use crate::domain::outcome::{self, Outcome, Provenance};
use crate::domain::questionnaire::{Questionnaire, sha256_hex};
use crate::domain::response::Completion;
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

/// The parts of a definition plugins see.
pub fn questionnaire_info(q: &Questionnaire) -> QuestionnaireInfo {
    info(q, true)
}

/// The parts of a definition plugins see, the questions left empty unless
/// `questions` (a scorer's manifest may decline them).
fn info(q: &Questionnaire, questions: bool) -> QuestionnaireInfo {
    QuestionnaireInfo {
        key: q.key.clone(),
        name: q.name.clone(),
        questions: q
            .questions
            .iter()
            .take(if questions { usize::MAX } else { 0 })
            .map(|question| QuestionInfo {
                key: question.key.clone(),
                title: question.title.resolve(&q.language, "en").to_owned(),
                kind: question.kind.clone(),
                options: question
                    .options
                    .iter()
                    .map(|o| OptionInfo {
                        key: o.key.clone(),
                        value: o.value as f64,
                    })
                    .collect(),
                required: question.required,
            })
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
            })
            .collect(),
    }
}

/// A calculator's input as `plugin` asked for it: the questions left out
/// of the definitions and the answers out of the responses when its
/// manifest declines them.
pub fn calculator_input_for(plugin: &Plugin, mut input: CalculatorInput) -> CalculatorInput {
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

/// The scorer input for `answers` to `q`, every part of it (the fixture
/// runner shows authors this). Answers to questions the response's variant
/// hides are left out (a hidden question's answer is ignored by scoring);
/// `flags` holds every flag the questionnaire declares, with the response's
/// value or the default.
pub fn scorer_input(q: &Questionnaire, answers: &Answers, ctx: ScoringContext<'_>) -> ScorerInput {
    // The one builder is `input_json`; this is its parse, so the harness and
    // a real call cannot disagree.
    serde_json::from_slice(&input_json(q, answers, ctx, true, true))
        .expect("the scorer input the host writes parses as ScorerInput")
}

/// The scorer input for `answers` to `q` as `plugin` asked for it, as the
/// JSON the plugin reads: without the questions, or the option keys
/// answered, when its manifest declines them.
pub fn scorer_input_for(
    plugin: &Plugin,
    q: &Questionnaire,
    answers: &Answers,
    ctx: ScoringContext<'_>,
) -> Vec<u8> {
    input_json(
        q,
        answers,
        ctx,
        plugin.manifest.questions,
        plugin.manifest.answers,
    )
}

/// A [`ScorerInput`] written straight from the definition and the response,
/// without building one: every response is scored, so this is on the path
/// of every POST. The questionnaire part is serialized once per definition
/// (`Questionnaire::scorer_json`) and copied in; the rest borrows.
fn input_json(
    q: &Questionnaire,
    answers: &Answers,
    ctx: ScoringContext<'_>,
    questions: bool,
    option_keys: bool,
) -> Vec<u8> {
    let info = &scorer_json(q)[usize::from(questions)];
    let shown = |key: &str| {
        q.question(key)
            .is_none_or(|question| ctx.variant.shows(q, question))
    };
    let visible = || {
        answers
            .0
            .iter()
            .map(move |(key, answer)| (key.as_str(), answer.as_deref().filter(|_| shown(key))))
    };
    let rest = InputRest {
        answers: MapOf(|| visible().filter(|_| option_keys)),
        values: MapOf(|| {
            visible().map(|(key, answer)| {
                let value = answer.and_then(|a| {
                    q.question(key)
                        .and_then(|question| question.option(a))
                        .map(|o| o.value as f64)
                });
                (key, value)
            })
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
            serde_json::to_vec(&info(q, with)).expect("strings, numbers and lists always serialize")
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
/// are [`MapOf`]s).
#[derive(Serialize)]
struct InputRest<'a, A, V, F> {
    answers: A,
    values: V,
    flags: F,
    textvars: &'a std::collections::BTreeMap<String, String>,
    completed_at: String,
    respondent_type: &'static str,
    patient: PatientInfo,
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

    fn input(
        q: &Questionnaire,
        variant: &Variant,
        questions: bool,
        option_keys: bool,
    ) -> ScorerInput {
        let given = json!({"v_1": "a1", "v_2": "a3", "v_9": "a2", "v_10": null});
        let answers = Answers::check(q, given.as_object().expect("an object")).expect("valid");
        let ctx = ScoringContext {
            completed_at: Utc
                .with_ymd_and_hms(2026, 3, 4, 5, 6, 7)
                .single()
                .expect("a valid time"),
            professional: true,
            variant,
        };
        let bytes = input_json(q, &answers, ctx, questions, option_keys);
        serde_json::from_slice(&bytes).expect("parses as ScorerInput")
    }

    #[test]
    fn the_input_written_directly_is_the_scorer_input() {
        let q = phq9();
        let plain = input(&q, &Variant::default(), true, true);
        assert_eq!(plain.questionnaire, info(&q, true));
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
        let answers = Answers::check(
            &q,
            json!({"v_1": "a1", "v_9": "a2"})
                .as_object()
                .expect("an object"),
        )
        .expect("valid");
        let variant = Variant::default();
        let ctx = ScoringContext {
            completed_at: Utc
                .with_ymd_and_hms(2026, 3, 4, 5, 6, 7)
                .single()
                .expect("a valid time"),
            professional: false,
            variant: &variant,
        };
        for questions in [false, true] {
            let bytes = input_json(&q, &answers, ctx, questions, true);
            assert_eq!(input_sha256(&q, questions, &bytes), sha256_hex(&bytes));
            // Kept state, second use.
            assert_eq!(input_sha256(&q, questions, &bytes), sha256_hex(&bytes));
        }
        assert_eq!(input_sha256(&q, true, b"{}"), sha256_hex(b"{}"));
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
