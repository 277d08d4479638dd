//! The bodies of POST and PUT `/responses`: the documented wire fields,
//! and reading them into a domain [`Completion`], collecting every field
//! error (docs/api/responses.md#store-a-response).

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::api::fields::{Fields, variant_errors};
use crate::api::rules::{self, Choice};
use crate::domain::answer::AnswerError;
use crate::domain::answers::GivenAnswers;
use crate::domain::catalog::Catalog;
use crate::domain::ids::QuestionnaireId;
use crate::domain::outcome::{Outcome, Provenance};
use crate::domain::questionnaire::Questionnaire;
use crate::domain::response::Completion;
use crate::domain::variant::Variant;
use crate::error::{ApiError, Errors};

/// How far in the future a `filled_out_at` may lie, for clocks that differ.
const CLOCK_SKEW: Duration = Duration::hours(1);

/// Who filled out a response: `respondent` (alias `respondent_type`).
const RESPONDENTS: Choice = Choice(&["patient", "profess"]);

rules::documented! {
    AnswerData: "Question key (`v_` form) to its answer in the form of its type (docs/api/responses.md#answer-data): an option key (radio, select), a list of option keys (checkbox), a number (slider, integer, decimal), an ISO date (`2024-05-17`, `2024-05` or `2024`, as the question asks), a text (string, textarea). Null, an empty list and a blank text are unanswered. Answers to questions that are not enabled (their flags or conditions hide them) are not stored: they are named in the answer's `dropped_answers`. At least one question." => rules::non_empty_object();
    Respondent: "Who filled it out: `patient` or `profess` (a professional)." => RESPONDENTS.schema();
}

/// The body of `POST .../responses`.
#[derive(Debug, ToSchema)]
pub struct NewResponseBody {
    /// Key of the questionnaire.
    #[schema(value_type = rules::Id)]
    pub questionnaire_key: String,
    /// Id managed by the external application; unique per dossier; string
    /// or integer, 1-255 characters.
    #[schema(value_type = rules::IdOrInteger)]
    pub external_id: String,
    /// The answers, question key to answer (`AnswerData`).
    #[schema(value_type = AnswerData)]
    pub answer_data: Map<String, Value>,
    /// Unix seconds, at least 946598400, at most an hour from now.
    #[schema(value_type = Option<rules::UnixTime>)]
    pub started_at: Option<i64>,
    /// Unix seconds, at least 946598400, at most an hour from now; default:
    /// now.
    #[schema(value_type = Option<rules::UnixTime>)]
    pub filled_out_at: Option<i64>,
    /// `patient` (default) or `profess`. Alias: `respondent_type`.
    #[schema(value_type = Option<Respondent>)]
    pub respondent: Option<String>,
    /// EPD user id of the professional who entered the response; blank
    /// means the respondent did.
    #[schema(value_type = Option<rules::ShortText>)]
    pub entered_by: Option<String>,
    /// Flag name to boolean: the variant of the questionnaire that was
    /// filled out (a flag may hide or show questions; answers to hidden
    /// questions are kept but not scored). Names must be flags of the
    /// questionnaire (422 `{"errors":{"base":["flag_does_not_exist"]}}`),
    /// values booleans (`flag_value_invalid`). Kept on the response.
    #[schema(value_type = Option<Object>)]
    pub flags: Option<Map<String, Value>>,
    /// Textvar name to string, filling `{{name}}` in the questionnaire's
    /// texts. Names must be textvars of the questionnaire
    /// (`textvar_does_not_exist`), values strings (`invalid`). Kept on the
    /// response.
    #[schema(value_type = Option<Object>)]
    pub textvars: Option<Map<String, Value>>,
    /// The language it was filled out in, ISO 639-1 (`nl`); default: the
    /// questionnaire definition's language.
    #[schema(value_type = Option<rules::Language>)]
    pub language: Option<String>,
}

/// A POST body, checked.
#[derive(Debug)]
pub struct CheckedResponse {
    pub external_id: String,
    pub professional: bool,
    pub entered_by: Option<String>,
    pub completion: Completion,
    /// The definition the answers were checked against, to score with.
    pub questionnaire: Arc<Questionnaire>,
    /// Questions answered but not enabled: their answers were dropped.
    pub dropped: Vec<String>,
}

impl NewResponseBody {
    /// Reads a POST body; `strict` refuses answers to questions that are
    /// not enabled instead of dropping them.
    pub fn parse(
        body: &Map<String, Value>,
        catalog: &Catalog,
        now: DateTime<Utc>,
        strict: bool,
    ) -> Result<CheckedResponse, ApiError> {
        let mut f = Fields::new(body);
        let external_id = f.required_id("external_id");
        // `respondent_type` is an alias of `respondent`
        // (docs/api/responses.md#store-a-response).
        let respondent_key = if body.contains_key("respondent") {
            "respondent"
        } else {
            "respondent_type"
        };
        let respondent = f.optional_choice(respondent_key, RESPONDENTS);
        let entered_by = f.optional_string("entered_by");
        let parsed = ParsedCompletion::parse(f, catalog, now)?;
        // Flags and textvars (an extension of the original contract's POST,
        // which has them only for protocol subscriptions): the variant of
        // the questionnaire the response was filled out in. Checked as a
        // subscription's are, with the errors under `base`
        // (docs/api/responses.md#flags-and-textvars-on-post).
        let variant = Variant::check(
            [&*parsed.questionnaire],
            body.get("flags"),
            body.get("textvars"),
        )
        .map_err(variant_errors)?;
        let questionnaire = parsed.questionnaire.clone();
        let (completion, dropped) = parsed.complete(variant, strict)?;
        Ok(CheckedResponse {
            external_id: external_id.unwrap_or_default(),
            professional: respondent.as_deref() == Some("profess"),
            entered_by,
            completion,
            questionnaire,
            dropped,
        })
    }
}

/// The body of `PUT .../responses/{external_id}`.
#[derive(Debug, ToSchema)]
pub struct CompleteResponseBody {
    #[schema(value_type = rules::Id)]
    pub questionnaire_key: String,
    /// As for POST.
    #[schema(value_type = AnswerData)]
    pub answer_data: Map<String, Value>,
    /// As for POST.
    #[schema(value_type = Option<rules::UnixTime>)]
    pub started_at: Option<i64>,
    /// As for POST.
    #[schema(value_type = Option<rules::UnixTime>)]
    pub filled_out_at: Option<i64>,
    /// As for POST.
    #[schema(value_type = Option<rules::Language>)]
    pub language: Option<String>,
}

impl CompleteResponseBody {
    /// Reads a PUT body, up to the answers checked against their
    /// questions; the handler completes it in the pending response's
    /// variant ([`ParsedCompletion::complete`]).
    pub fn parse(
        body: &Map<String, Value>,
        catalog: &Catalog,
        now: DateTime<Utc>,
    ) -> Result<ParsedCompletion, ApiError> {
        ParsedCompletion::parse(Fields::new(body), catalog, now)
    }
}

/// The fields POST and PUT share, read, with the answers checked against
/// their questions but not yet against the variant.
#[derive(Debug)]
pub struct ParsedCompletion {
    pub questionnaire_id: QuestionnaireId,
    /// The definition the answers were checked against, to score with.
    pub questionnaire: Arc<Questionnaire>,
    given: GivenAnswers,
    started_at: Option<DateTime<Utc>>,
    completed_at: DateTime<Utc>,
    language: Option<String>,
}

impl ParsedCompletion {
    /// Shape errors come first (422); then an unknown questionnaire (404);
    /// then answers checked against it (422 under `answer_data`).
    fn parse(mut f: Fields<'_>, catalog: &Catalog, now: DateTime<Utc>) -> Result<Self, ApiError> {
        let key = f.required_key("questionnaire_key");
        let answer_data = f.required_object("answer_data");
        let started_at = f.optional_unix("started_at", now + CLOCK_SKEW);
        let filled_out_at = f.optional_unix("filled_out_at", now + CLOCK_SKEW);
        let language = f.optional_language("language");
        if let (Some(start), Some(end)) = (started_at, filled_out_at)
            && start > end
        {
            f.errors.add("started_at", "invalid");
        }
        f.errors.clone().into_result()?;
        let (Some(key), Some(answer_data)) = (key, answer_data) else {
            return Err(ApiError::Invalid(f.errors));
        };
        let questionnaire = catalog
            .questionnaire(&key)
            .ok_or(ApiError::NotFound("questionnaire_key"))?;
        let given = GivenAnswers::check(&questionnaire.def, answer_data).map_err(answer_errors)?;
        Ok(ParsedCompletion {
            questionnaire_id: questionnaire.id,
            questionnaire: questionnaire.def.clone(),
            given,
            started_at,
            completed_at: filled_out_at.unwrap_or(now),
            language,
        })
    }

    /// The completion in `variant`: the answers to questions that are not
    /// enabled taken out (and named), or refused under `strict`
    /// (422 `not_enabled` per question).
    pub fn complete(
        self,
        variant: Variant,
        strict: bool,
    ) -> Result<(Completion, Vec<String>), ApiError> {
        let q = &self.questionnaire;
        let checked = self.given.enabled(q, &variant);
        if strict && !checked.dropped.is_empty() {
            return Err(answer_errors(
                checked
                    .dropped
                    .into_iter()
                    .map(|key| (key, AnswerError::NotEnabled))
                    .collect(),
            ));
        }
        let language = self.language.unwrap_or_else(|| q.language.clone());
        let completion = Completion {
            questionnaire_id: self.questionnaire_id,
            answers: checked.answers,
            started_at: self.started_at,
            completed_at: self.completed_at,
            variant,
            translation_sha256: q.translations.get(&language).map(|t| t.sha256.clone()),
            language,
            // The handler runs the scorer with `questionnaire` once the body
            // is known to be valid; nothing is scored for a refused request.
            outcome: Outcome::empty(),
            provenance: Provenance::default(),
        };
        Ok((completion, checked.dropped))
    }
}

/// `{"errors":{"answer_data":{"<key>":["<code>"]}}}`.
fn answer_errors(bad: std::collections::BTreeMap<String, AnswerError>) -> ApiError {
    let mut inner = Errors::new();
    for (question, reason) in bad {
        inner.add(&question, reason.code());
    }
    let mut errors = Errors::new();
    errors.nest("answer_data", inner);
    ApiError::Invalid(errors)
}
