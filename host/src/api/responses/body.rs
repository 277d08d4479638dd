//! The bodies of POST and PUT `/responses`: the documented wire fields,
//! and reading them into a domain [`Completion`], collecting every field
//! error (docs/api/responses.md#store-a-response).

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::api::fields::{Fields, variant_errors};
use crate::domain::answers::Answers;
use crate::domain::catalog::Catalog;
use crate::domain::outcome::{Outcome, Provenance};
use crate::domain::questionnaire::Questionnaire;
use crate::domain::response::Completion;
use crate::domain::variant::Variant;
use crate::error::{ApiError, Errors};

/// How far in the future a `filled_out_at` may lie, for clocks that differ.
const CLOCK_SKEW: Duration = Duration::hours(1);

/// The body of `POST .../responses`.
#[derive(Debug, ToSchema)]
pub struct NewResponseBody {
    /// Key of the questionnaire.
    pub questionnaire_key: String,
    /// Id managed by the external application; unique per dossier; string
    /// or integer, 1-255 characters.
    pub external_id: String,
    /// Question key (`v_` form) to option key; null is unanswered.
    #[schema(value_type = Object)]
    pub answer_data: Map<String, Value>,
    /// Unix seconds, at least 946598400.
    pub started_at: Option<i64>,
    /// Unix seconds, at least 946598400; default: now.
    pub filled_out_at: Option<i64>,
    /// `patient` (default) or `profess`. Alias: `respondent_type`.
    pub respondent: Option<String>,
    /// EPD user id of the professional who entered the response; blank
    /// means the respondent did.
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
}

impl NewResponseBody {
    /// Reads a POST body.
    pub fn parse(
        body: &Map<String, Value>,
        catalog: &Catalog,
        now: DateTime<Utc>,
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
        let respondent = f.optional_choice(respondent_key, &["patient", "profess"]);
        let entered_by = f.optional_string("entered_by");
        let (mut completion, questionnaire) = parse_completion(f, catalog, now)?;
        // Flags and textvars (an extension of the original contract's POST,
        // which has them only for protocol subscriptions): the variant of
        // the questionnaire the response was filled out in. Checked as a
        // subscription's are, with the errors under `base`
        // (docs/api/responses.md#flags-and-textvars-on-post).
        completion.variant =
            Variant::check([&*questionnaire], body.get("flags"), body.get("textvars"))
                .map_err(variant_errors)?;
        Ok(CheckedResponse {
            external_id: external_id.unwrap_or_default(),
            professional: respondent.as_deref() == Some("profess"),
            entered_by,
            completion,
            questionnaire,
        })
    }
}

/// The body of `PUT .../responses/{external_id}`.
#[derive(Debug, ToSchema)]
pub struct CompleteResponseBody {
    pub questionnaire_key: String,
    #[schema(value_type = Object)]
    pub answer_data: Map<String, Value>,
    pub started_at: Option<i64>,
    pub filled_out_at: Option<i64>,
}

impl CompleteResponseBody {
    /// Reads a PUT body; also answers the definition the answers were
    /// checked against.
    pub fn parse(
        body: &Map<String, Value>,
        catalog: &Catalog,
        now: DateTime<Utc>,
    ) -> Result<(Completion, Arc<Questionnaire>), ApiError> {
        parse_completion(Fields::new(body), catalog, now)
    }
}

/// The fields POST and PUT share. Shape errors come first (422); then an
/// unknown questionnaire (404); then answers checked against it (422).
fn parse_completion(
    mut f: Fields<'_>,
    catalog: &Catalog,
    now: DateTime<Utc>,
) -> Result<(Completion, Arc<Questionnaire>), ApiError> {
    let key = f.required_key("questionnaire_key");
    let answer_data = f.required_object("answer_data");
    let started_at = f.optional_unix("started_at", now + CLOCK_SKEW);
    let filled_out_at = f.optional_unix("filled_out_at", now + CLOCK_SKEW);
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
    let answers = Answers::check(&questionnaire.def, answer_data).map_err(|bad| {
        let mut inner = Errors::new();
        for (question, reason) in bad {
            inner.add(&question, reason.code());
        }
        let mut errors = Errors::new();
        errors.nest("answer_data", inner);
        ApiError::Invalid(errors)
    })?;
    let completion = Completion {
        questionnaire_id: questionnaire.id,
        answers,
        started_at,
        completed_at: filled_out_at.unwrap_or(now),
        // POST reads its own; PUT takes the pending response's.
        variant: Variant::default(),
        // The handler runs the scorer with `questionnaire` once the body
        // is known to be valid; nothing is scored for a refused request.
        outcome: Outcome::empty(),
        provenance: Provenance::default(),
    };
    Ok((completion, questionnaire.def.clone()))
}
