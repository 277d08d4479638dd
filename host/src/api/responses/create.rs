//! POST a completed response. Idempotent: a retry with the same external id,
//! questionnaire and answers answers 200 with what was stored. Checked and
//! scored against one catalog snapshot, then stored with its access row;
//! the store hands a created response on to shadow scoring, so this
//! handler must not.
//!
//! A 201 means the response is on disk.

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::body::NewResponseBody;
use super::view::{ResponseView, StoredResponseView};
use crate::AppState;
use crate::api::extract::{DossierPath, JsonObject, QueryParams};
use crate::api::rules;
use crate::auth::guard::{AccessLogged, PendingAccess};
use crate::domain::catalog::Catalog;
use crate::error::{ApiError, ErrorBody, Errors, json};
use crate::metrics::Metrics;
use crate::scoring;
use crate::store::{AccessEntry, CreateResult, NewResponse, Store, StoreError};
use crate::trials::Trials;

/// Store a response
///
/// Stores a completed response and makes the dossier (with its patient) on
/// first write. `answer_data` maps question keys (`v_` form) to answers in
/// the form of each question's type (an option key for radio and select);
/// null is unanswered. Each answer is checked against its question's type,
/// options, range and length. Answers to questions that are not enabled
/// (hidden by flags or conditions on earlier answers) are not stored or
/// scored: they are named in `dropped_answers`, or with `strict=true`
/// refused (`not_enabled`). `respondent` is `patient` (default) or `profess`
/// (`respondent_type` is accepted as an alias). `started_at` and
/// `filled_out_at` are Unix seconds, at least 946598400 (1999-12-31), at most
/// an hour ahead of the service's clock; `filled_out_at` defaults to now.
/// External ids may be strings or integers, 1-255 characters. `flags` and
/// `textvars` (optional) record the variant of the questionnaire that was
/// filled out: a question a flag hides is not scored.
/// A 201 means the response is on disk.
#[utoipa::path(
    post,
    path = "/dossiers/{dossier_id}/responses",
    tag = "responses",
    params(
        ("dossier_id" = rules::DossierId, Path, description = "The EPD's identifier of the patient"),
        ("strict" = Option<rules::Boolean>, Query, description = "true: refuse answers to questions that are not enabled (422 `not_enabled`) instead of dropping them; default false"),
    ),
    request_body(content = NewResponseBody, content_type = "application/json"),
    responses(
        (status = 201, description = "Stored", body = StoredResponseView),
        (status = 200, description = "A retry: same external_id, questionnaire_key and answer_data as a stored response, which is returned unchanged", body = StoredResponseView),
        (status = 404, description = "`{\"errors\":{\"questionnaire_key\":[\"not_found\"]}}`", body = ErrorBody),
        (status = 422, description = "Field errors: `blank`, `invalid`, `too_early`, `taken` (external_id used for other data), `language` `invalid`, `strict` `invalid`; under `answer_data` per question `unknown_question`, `invalid_option` (radio), `not_an_option` (select, checkbox), `invalid`, `out_of_range`, `too_long`, `not_enabled` (strict only); or under `base` `flag_does_not_exist` / `flag_value_invalid` / `textvar_does_not_exist` / `invalid` for flags and textvars", body = ErrorBody),
    )
)]
pub async fn create_response(
    State(app): State<AppState>,
    access: Option<Extension<PendingAccess>>,
    DossierPath(dossier): DossierPath,
    query: QueryParams,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let strict = query.boolean("strict", false)?;
    let now = app.now();
    // One catalog snapshot: the questionnaire the answers are checked
    // against is the one that scores them, whatever a reload swaps in.
    let catalog = app.catalog();
    // The request's access-log row is stored with the response, in one
    // commit, with the status the result is answered with.
    let access = access.map(|Extension(PendingAccess(entry))| entry);
    let checked = check(&catalog, dossier, &body, now, strict, access)?;
    let logged = checked.new.access.is_some();
    let scorer = Scorer {
        trials: app.trials(),
        metrics: app.metrics(),
    };
    let result = score_and_store(app.store(), scorer, checked.new).await?;
    let mut response = answer(&app, result, now, checked.dropped);
    if logged {
        response.extensions_mut().insert(AccessLogged);
    }
    Ok(response)
}

/// A POST body checked, ready to be scored and stored.
#[derive(Debug)]
pub struct Checked {
    pub new: NewResponse,
    /// Questions answered but not enabled: their answers were dropped.
    pub dropped: Vec<String>,
}

/// Reads and checks the body of a POST of a response to `dossier` against
/// `catalog` (the answers 422 and 404 of a POST): what the POST and
/// `outcomes import` (`import.rs`) store. `access` is the row to store
/// with it.
pub fn check(
    catalog: &Catalog,
    dossier: String,
    body: &Map<String, Value>,
    now: DateTime<Utc>,
    strict: bool,
    access: Option<AccessEntry>,
) -> Result<Checked, ApiError> {
    let body = NewResponseBody::parse(body, catalog, now, strict)?;
    Ok(Checked {
        new: NewResponse {
            epd_id: dossier,
            external_id: body.external_id,
            professional: body.professional,
            entered_by: body.entered_by,
            completion: body.completion,
            definition: body.questionnaire,
            now,
            access,
        },
        dropped: body.dropped,
    })
}

/// What scores a response: the serving version of its scorer.
#[derive(Debug, Clone, Copy)]
pub struct Scorer<'a> {
    pub trials: &'a Trials,
    pub metrics: &'a Metrics,
}

/// Scores `new` with the serving version of its questionnaire's scorer
/// (provenance recorded) and stores it through the store's one create
/// path, with its access row: a POST's second half, and each line's of an
/// import.
pub async fn score_and_store(
    store: &Store,
    scorer: Scorer<'_>,
    mut new: NewResponse,
) -> Result<CreateResult, StoreError> {
    // A retry or a taken external id is scored too: the writer decides,
    // and a read to know it before scoring would cost every POST more than
    // the rare retry's scoring saves.
    let definition = new.definition.clone();
    scoring::score_completion(
        scorer.trials,
        scorer.metrics,
        &definition,
        &mut new.completion,
        new.professional,
    )
    .await;
    store.create_response(new).await
}

/// The answer to what a POST came to: 201 with the stored response, 200
/// with the one stored before (a retry), 422 when the external id is taken.
fn answer(
    app: &AppState,
    result: CreateResult,
    now: DateTime<Utc>,
    dropped: Vec<String>,
) -> Response {
    let status = StatusCode::from_u16(result.status()).unwrap_or(StatusCode::OK);
    match result {
        CreateResult::Created(r) | CreateResult::Retry(r) => json(
            status,
            &StoredResponseView {
                response: ResponseView::new(&r, app.config().time_zone, now, app.links()),
                dropped_answers: dropped,
            },
        ),
        CreateResult::Taken => {
            ApiError::Invalid(Errors::one("external_id", "taken")).into_response()
        }
    }
}
