//! PUT answers on a pending response, found by external id or by the id of
//! a response the service prepared. Checked and scored against one catalog
//! snapshot; the store hands the completed response on to shadow scoring,
//! so this handler must not.

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use super::body::CompleteResponseBody;
use super::view::{ResponseView, StoredResponseView};
use crate::AppState;
use crate::api::extract::{DossierPath, JsonObject, PathParams, QueryParams};
use crate::api::rules;
use crate::auth::guard::PendingAccess;
use crate::domain::variant::Variant;
use crate::error::{ApiError, ErrorBody, Errors, json};
use crate::scoring;
use crate::store::{CompleteError, Scored};

/// Complete a pending response
///
/// `external_id` is matched against the dossier's external ids; if none
/// matches and it is a decimal number, against the id of a response the
/// service prepared (invitation, subscription), which then also takes it as
/// its external id. A response that already stores data cannot be updated.
/// The answers are checked as for POST, in the flags and textvars the
/// response was prepared with: answers to questions that are not enabled
/// are named in `dropped_answers` (or refused with `strict=true`).
#[utoipa::path(
    put,
    path = "/dossiers/{dossier_id}/responses/{external_id}",
    tag = "responses",
    params(
        ("dossier_id" = rules::DossierId, Path, description = "The EPD's identifier of the patient"),
        ("external_id" = rules::Id, Path, description = "External id, or id of a prepared response"),
        ("strict" = Option<rules::Boolean>, Query, description = "true: refuse answers to questions that are not enabled (422 `not_enabled`) instead of dropping them; default false"),
    ),
    request_body(content = CompleteResponseBody, content_type = "application/json"),
    responses(
        (status = 200, description = "Stored", body = StoredResponseView),
        (status = 403, description = "`{\"errors\":{\"base\":[\"already_completed\"]}}`", body = ErrorBody),
        (status = 404, description = "`{\"errors\":{\"external_id\":[\"not_found\"]}}` or `questionnaire_key`", body = ErrorBody),
        (status = 422, description = "Field errors as for POST; `questionnaire_key: invalid` when the response is of another questionnaire", body = ErrorBody),
    )
)]
pub async fn update_response(
    State(app): State<AppState>,
    DossierPath(dossier): DossierPath,
    params: PathParams,
    query: QueryParams,
    access: Option<Extension<PendingAccess>>,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let by = access.map(|Extension(PendingAccess(entry))| entry);
    let strict = query.boolean("strict", false)?;
    let segment = params
        .get("external_id")
        .filter(|s| rules::ID.check(s).is_ok())
        .ok_or(ApiError::NotFound("external_id"))?
        .to_owned();
    let now = app.now();
    // One catalog snapshot: the definition the answers are checked
    // against is the one that scores them.
    let catalog = app.catalog();
    let parsed = CompleteResponseBody::parse(&body, &catalog, now)?;
    let questionnaire = parsed.questionnaire.clone();
    // Checked and scored in the variant the pending response was prepared
    // with; what is not found is answered by complete_response below.
    let variant = match app.store().response_to_complete(&dossier, &segment).await? {
        Some(pending) => Variant::from_stored(&pending.flags, &pending.textvars),
        None => Variant::default(),
    };
    let (mut completion, dropped) = parsed.complete(variant, strict)?;
    scoring::score_completion(
        app.trials(),
        app.metrics(),
        &questionnaire,
        &mut completion,
        false,
    )
    .await;
    let scored = Scored {
        completion,
        definition: questionnaire,
        professional: false,
    };
    match app
        .store()
        .complete_response(dossier, segment, scored, now, by)
        .await?
    {
        Ok(r) => Ok(json(
            StatusCode::OK,
            &StoredResponseView {
                response: ResponseView::new(&r, app.config().time_zone, now, app.links()),
                dropped_answers: dropped,
            },
        )),
        Err(CompleteError::NotFound) => Err(ApiError::NotFound("external_id")),
        Err(CompleteError::AlreadyCompleted) => Err(ApiError::Forbidden("already_completed")),
        Err(CompleteError::OtherQuestionnaire) => Err(ApiError::Invalid(Errors::one(
            "questionnaire_key",
            "invalid",
        ))),
    }
}
