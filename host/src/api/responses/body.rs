//! The bodies of POST and PUT `/responses`: wire fields to a domain
//! [`Completion`], collecting every field error (decisions.md §1, §2, §4).

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use serde_json::{Map, Value};

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

/// A POST body, checked.
#[derive(Debug)]
pub struct NewResponseBody {
    pub external_id: String,
    pub professional: bool,
    pub entered_by: Option<String>,
    pub completion: Completion,
    /// The definition the answers were checked against, to score with.
    pub questionnaire: Arc<Questionnaire>,
}

/// Reads a POST body.
pub fn parse_create(
    body: &Map<String, Value>,
    catalog: &Catalog,
    now: DateTime<Utc>,
) -> Result<NewResponseBody, ApiError> {
    let mut f = Fields::new(body);
    let external_id = f.required_id("external_id");
    // `respondent_type` is an alias of `respondent` (decisions.md §3).
    let respondent_key = if body.contains_key("respondent") {
        "respondent"
    } else {
        "respondent_type"
    };
    let respondent = f.optional_choice(respondent_key, &["patient", "profess"]);
    let entered_by = f.optional_string("entered_by");
    let (mut completion, questionnaire) = parse_completion(f, catalog, now)?;
    // Flags and textvars (an extension of api.md's POST, which lists them
    // for protocol subscriptions): the variant of the questionnaire the
    // response was filled out in. Checked as decisions.md §5 checks a
    // subscription's, with the errors under `base`.
    completion.variant = Variant::check([&*questionnaire], body.get("flags"), body.get("textvars"))
        .map_err(variant_errors)?;
    Ok(NewResponseBody {
        external_id: external_id.unwrap_or_default(),
        professional: respondent.as_deref() == Some("profess"),
        entered_by,
        completion,
        questionnaire,
    })
}

/// Reads a PUT body; the definition the answers were checked against.
pub fn parse_update(
    body: &Map<String, Value>,
    catalog: &Catalog,
    now: DateTime<Utc>,
) -> Result<(Completion, Arc<Questionnaire>), ApiError> {
    parse_completion(Fields::new(body), catalog, now)
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
