//! The scoring pipeline: a completed response's answers become the scorer
//! input, the questionnaire's scorer plugin computes, and the host
//! completes and checks the outcome (decisions.md §4). A scorer that fails
//! in any way never costs the response: the outcome records the failure per
//! score, the failure is logged and counted, and `outcomes rescore` can
//! recompute it later.

use chrono::{DateTime, SecondsFormat, Utc};
use plugin_sdk::{
    CalculatorInput, OptionInfo, PatientInfo, PluginKind, QuestionInfo, QuestionnaireInfo,
    ScoreInfo, ScorerInput, ScorerOutput,
};

use crate::domain::answers::Answers;
use crate::domain::outcome::{self, Outcome, Provenance};
use crate::domain::questionnaire::Questionnaire;
use crate::domain::variant::Variant;
use crate::metrics::Metrics;
use crate::plugins::{Plugin, PluginError, Plugins};

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

/// The scorer input for `answers` to `q`. Answers to questions the
/// response's variant hides are left out (a hidden question's answer is
/// ignored by scoring); `flags` holds every flag the questionnaire
/// declares, with the response's value or the default.
pub fn scorer_input(q: &Questionnaire, answers: &Answers, ctx: ScoringContext<'_>) -> ScorerInput {
    build_input(q, answers, ctx, true, true)
}

/// The scorer input for `answers` to `q` as `plugin` asked for it: without
/// the questions, or the option keys answered, when its manifest declines
/// them.
pub fn scorer_input_for(
    plugin: &Plugin,
    q: &Questionnaire,
    answers: &Answers,
    ctx: ScoringContext<'_>,
) -> ScorerInput {
    build_input(
        q,
        answers,
        ctx,
        plugin.manifest.questions,
        plugin.manifest.answers,
    )
}

fn build_input(
    q: &Questionnaire,
    answers: &Answers,
    ctx: ScoringContext<'_>,
    questions: bool,
    option_keys: bool,
) -> ScorerInput {
    let answers = ctx.variant.visible_answers(q, answers);
    let values = answers
        .0
        .iter()
        .map(|(key, answer)| {
            let value = answer.as_deref().and_then(|a| {
                q.question(key)
                    .and_then(|question| question.option(a))
                    .map(|o| o.value as f64)
            });
            (key.clone(), value)
        })
        .collect();
    ScorerInput {
        questionnaire: info(q, questions),
        answers: if option_keys {
            answers.0.into_iter().collect()
        } else {
            Default::default()
        },
        values,
        flags: q
            .flags
            .keys()
            .map(|name| (name.clone(), ctx.variant.flag(q, name)))
            .collect(),
        textvars: ctx.variant.textvars.clone(),
        completed_at: ctx
            .completed_at
            .to_rfc3339_opts(SecondsFormat::Millis, true),
        respondent_type: if ctx.professional {
            "profess"
        } else {
            "patient"
        }
        .to_owned(),
        patient: PatientInfo::default(),
    }
}

/// Scores one completed response with the serving scorer of `q`. Never
/// fails: a failure is the outcome.
pub async fn score(
    plugins: &Plugins,
    metrics: &Metrics,
    q: &Questionnaire,
    answers: &Answers,
    ctx: ScoringContext<'_>,
) -> (Outcome, Provenance) {
    let plugin = match plugins.get(PluginKind::Scorer, &q.scorer) {
        Ok(p) => p,
        Err(e) => return failure(metrics, q, None, &e),
    };
    let input = scorer_input_for(&plugin, q, answers, ctx);
    let call = plugins.call::<_, ScorerOutput>(plugin.clone(), input).await;
    finish(metrics, q, &plugin, call.result)
}

/// Scores with a given plugin synchronously (rescoring, the harness).
pub fn score_with(
    metrics: &Metrics,
    plugin: &Plugin,
    q: &Questionnaire,
    answers: &Answers,
    ctx: ScoringContext<'_>,
) -> (Outcome, Provenance) {
    let call = crate::plugins::call::invoke::<_, ScorerOutput>(
        plugin,
        &scorer_input_for(plugin, q, answers, ctx),
    );
    crate::plugins::call::emit_logs(plugin, &call.logs);
    finish(metrics, q, plugin, call.result)
}

fn finish(
    metrics: &Metrics,
    q: &Questionnaire,
    plugin: &Plugin,
    result: Result<ScorerOutput, PluginError>,
) -> (Outcome, Provenance) {
    match result.and_then(|output| outcome::complete(q, output).map_err(PluginError::Contract)) {
        Ok(outcome) => (outcome, provenance(plugin)),
        Err(e) => failure(metrics, q, Some(plugin), &e),
    }
}

fn provenance(plugin: &Plugin) -> Provenance {
    Provenance {
        plugin: Some(plugin.name().to_owned()),
        version: Some(plugin.version().to_owned()),
        sha256: Some(plugin.sha256.clone()),
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
        Some(p) => provenance(p),
        None => Provenance {
            plugin: Some(q.scorer.clone()),
            ..Provenance::default()
        },
    };
    (outcome::failed(q, e.code(), &e.to_string()), provenance)
}
