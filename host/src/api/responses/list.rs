//! GET the responses of a dossier, with the original contract's six filters
//! plus `respondent_id` (docs/api/responses.md#list-responses), whole or in
//! pages (`page.rs`).

use axum::extract::{OriginalUri, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

use super::page;
use super::view::ResponseView;
use crate::AppState;
use crate::api::extract::{DossierPath, QueryParams};
use crate::api::rules;
use crate::domain::response::Status;
use crate::domain::time::parse_filter;
use crate::error::{ApiError, ErrorBody, Errors, json};
use crate::store::ResponseFilter;

/// Questionnaire keys one list request may name. Each is a parameter of
/// the query, and no catalog holds this many questionnaires; the same cap
/// as report calculations' `filters[questionnaire_keys]`
/// (docs/api/responses.md#list-responses).
pub const MAX_QUESTIONNAIRE_KEYS: usize = 1_000;

rules::documented! {
    QuestionnaireKeys: "Questionnaire keys, at most 1000, each at most 255 characters without control characters." => rules::list_of(rules::SHORT_TEXT.schema(), MAX_QUESTIONNAIRE_KEYS);
    ResponseStatus: "A response's status." => rules::one_of(Status::ALL.iter().map(|s| s.as_str()));
}

/// List responses
///
/// The responses of a dossier ordered by id; an unknown dossier has none.
/// Array parameters take `k[]=a&k[]=b` or `k=a&k=b`. Times take Unix seconds
/// or ISO 8601 (a time without offset is read in the service's time zone).
/// Also at `/api/v1/dossier/{dossier_id}/responses` and with a `.json` suffix.
///
/// Pages are opt-in: with `page[size]` (1 to 1000) or `page[after]` the
/// answer holds at most that many responses (100 when only `page[after]` is
/// given), and, when more follow, a `Link: <...>; rel="next"` header (RFC
/// 8288) whose target is this request with `page[after]` set to the cursor
/// after the last response. The last page has no `Link`. The cursor is
/// opaque; one that the service did not make is 422 invalid under `page`.
/// Without either parameter the whole list is answered, as before.
///
/// At most 1000 `questionnaire_keys`; more is 422 invalid.
#[utoipa::path(
    get,
    path = "/dossiers/{dossier_id}/responses",
    tag = "responses",
    params(
        ("dossier_id" = rules::DossierId, Path, description = "The EPD's identifier of the patient"),
        ("questionnaire_keys[]" = Option<QuestionnaireKeys>, Query, description = "Only responses on these questionnaires (at most 1000 keys)"),
        ("completed_before" = Option<rules::FilterTime>, Query, description = "Only responses completed before this time (Unix seconds or ISO 8601)"),
        ("completed_after" = Option<rules::FilterTime>, Query, description = "Only responses completed after this time"),
        ("respondent_type" = Option<rules::ShortText>, Query, description = "Only responses whose completer_type equals this"),
        ("status" = Option<ResponseStatus>, Query, description = "One of completed, aborted, open, scheduled, expired; anything else is 422 invalid"),
        ("protocol_subscription_id" = Option<rules::AnyInteger>, Query, description = "Only responses of this subscription"),
        ("respondent_id" = Option<rules::AnyInteger>, Query, description = "Only responses of this respondent"),
        ("page[size]" = Option<page::PageSize>, Query, description = "Answer a page of at most this many responses (1 to 1000) instead of the whole list"),
        ("page[after]" = Option<page::Cursor>, Query, description = "The opaque cursor from the `Link` of the page before: the page of responses after it (alone: pages of 100)"),
    ),
    responses(
        (status = 200, description = "The responses; for a page that others follow, a `Link` header to the next", body = [ResponseView],
            headers(("Link" = String, description = "`<path?...&page[after]=CURSOR>; rel=\"next\"` (RFC 8288), only on a page that others follow"))),
        (status = 422, description = "A filter or page parameter is not valid, e.g. `{\"errors\":{\"status\":[\"invalid\"]}}` or `{\"errors\":{\"page\":{\"after\":[\"invalid\"]}}}`", body = ErrorBody),
    )
)]
pub async fn list_responses(
    State(app): State<AppState>,
    OriginalUri(uri): OriginalUri,
    DossierPath(dossier): DossierPath,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let zone = app.config().time_zone;
    let mut errors = Errors::new();
    let mut time = |key: &str| {
        let value = query.single(key)?;
        let parsed = parse_filter(value, zone);
        if parsed.is_none() {
            errors.add(key, "invalid");
        }
        parsed
    };
    let completed_before = time("completed_before");
    let completed_after = time("completed_after");
    let mut integer = |key: &str| {
        let value = query.single(key)?;
        let parsed = rules::ANY_INTEGER.parse(value);
        if parsed.is_none() {
            errors.add(key, "invalid");
        }
        parsed
    };
    let protocol_subscription_id = integer("protocol_subscription_id");
    let respondent_id = integer("respondent_id");
    let status = query.single("status").and_then(|s| {
        let parsed = Status::parse(s);
        if parsed.is_none() {
            errors.add("status", "invalid");
        }
        parsed
    });
    // Text filters go to the database as parameters, one each; control
    // characters (NUL above all, which PostgreSQL text cannot hold) name
    // nothing valid.
    let questionnaire_keys = query.list("questionnaire_keys");
    if questionnaire_keys.as_ref().is_some_and(|keys| {
        keys.len() > MAX_QUESTIONNAIRE_KEYS
            || keys.iter().any(|k| rules::SHORT_TEXT.check(k).is_err())
    }) {
        errors.add("questionnaire_keys", "invalid");
    }
    let respondent_type = query.single("respondent_type");
    if respondent_type.is_some_and(|t| rules::SHORT_TEXT.check(t).is_err()) {
        errors.add("respondent_type", "invalid");
    }
    let page = page::requested(&query, &mut errors);
    errors.into_result()?;
    let filter = ResponseFilter {
        questionnaire_keys,
        completed_before,
        completed_after,
        completer_type: respondent_type.map(str::to_owned),
        status,
        protocol_subscription_id,
        respondent_id,
    };
    let now = app.now();
    let Some(page) = page else {
        let responses = app.store().list_responses(&dossier, &filter, now).await?;
        return Ok(answer(&app, &responses, now));
    };
    let found = app
        .store()
        .list_responses_page(&dossier, &filter, page, now)
        .await?;
    let mut answer = answer(&app, &found.responses, now);
    if found.more
        && let Some(last) = found.responses.last()
    {
        let link = page::next_link(uri.path(), &query, page.size, last.id);
        let value = HeaderValue::from_str(&link)
            .map_err(|e| ApiError::Internal(anyhow::anyhow!("the next page's link: {e}")))?;
        answer.headers_mut().insert(header::LINK, value);
    }
    Ok(answer)
}

fn answer(
    app: &AppState,
    responses: &[crate::domain::response::Response],
    now: chrono::DateTime<chrono::Utc>,
) -> Response {
    let zone = app.config().time_zone;
    let views: Vec<ResponseView> = responses
        .iter()
        .map(|r| ResponseView::new(r, zone, now, app.links()))
        .collect();
    json(StatusCode::OK, &views)
}
