//! One POSTed response stored alone, deciding retry or taken inside the
//! writer's transaction: for the items a [`super::Plan`] leaves (external id
//! taken, or repeated in the batch), and when storing a batch together
//! fails.

use serde_json::Value;
use sqlx::AnyConnection;

use super::{CreateResult, NewResponse};
use crate::domain::alarm::AlarmPolicy;
use crate::domain::ids::{DossierId, RespondentId, ResponseId};
use crate::domain::response::{COMPLETER_PATIENT, COMPLETER_PROFESSIONAL};
use crate::domain::time::to_millis;
use crate::store::access_log;
use crate::store::responses::{by_external_id, fetch, outcome_json};
use crate::store::{Backend, StoreError, dossiers};

/// One POSTed response: the dossier and its patient are made on first write;
/// an external id already used in the dossier is a retry (same questionnaire
/// and answers) or taken. The item's access-log row follows, with the
/// result's status. Five statements or more; the writer uses it for the
/// items a [`super::Plan`] leaves, and when storing a batch together fails.
pub(in crate::store) async fn create_one(
    conn: &mut AnyConnection,
    backend: Backend,
    item: &NewResponse,
    alarms: &AlarmPolicy,
) -> Result<CreateResult, StoreError> {
    let result = decide_one(conn, item).await?;
    if let Some(row) = item.access_row(result.status()) {
        access_log::insert(conn, backend, &[&row]).await?;
    }
    let result = [Some(Ok(result))];
    super::raise_alarms(conn, backend, alarms, &[item], &result).await?;
    let [Some(result)] = result else {
        return Err(StoreError::Corrupt("a response was not stored".into()));
    };
    result
}

async fn decide_one(
    conn: &mut AnyConnection,
    item: &NewResponse,
) -> Result<CreateResult, StoreError> {
    let (dossier, patient) = dossiers::ensure(conn, &item.epd_id, item.now).await?;
    if let Some(stored) = by_external_id(conn, dossier, &item.external_id).await? {
        return Ok(CreateResult::of_earlier(stored, &item.completion));
    }
    let (respondent, completer) = if item.professional {
        (
            dossiers::ensure_professional(conn, dossier, item.now).await?,
            COMPLETER_PROFESSIONAL,
        )
    } else {
        (patient, COMPLETER_PATIENT)
    };
    let id = insert(conn, dossier, respondent, completer, item).await?;
    fetch(conn, id).await.map(CreateResult::Created)
}

/// Inserts `item` as a response of `respondent` in `dossier`.
async fn insert(
    conn: &mut AnyConnection,
    dossier: DossierId,
    respondent: RespondentId,
    completer: &str,
    item: &NewResponse,
) -> Result<ResponseId, StoreError> {
    let c = &item.completion;
    let row: (i64,) = sqlx::query_as(
        "INSERT INTO responses (dossier_id, respondent_id, questionnaire_id, external_id, completer_type, \
         started_at, completed_at, answers, outcome, outcome_plugin, outcome_plugin_version, outcome_plugin_sha256, \
         outcome_computed_at, entered_by, flags, textvars, created_at, updated_at, outcome_abi_version, \
         outcome_definition_sha256, outcome_input_sha256, language, translation_sha256) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $13, $13, $17, $18, $19, $20, $21) \
         RETURNING id",
    )
    .bind(dossier.0)
    .bind(respondent.0)
    .bind(c.questionnaire_id.0)
    .bind(item.external_id.as_str())
    .bind(completer)
    .bind(c.started_at.map(to_millis))
    .bind(to_millis(c.completed_at))
    .bind(Value::Object(c.answers.to_json()).to_string())
    .bind(outcome_json(&c.outcome)?)
    .bind(c.provenance.plugin.clone())
    .bind(c.provenance.version.clone())
    .bind(c.provenance.sha256.clone())
    .bind(to_millis(item.now))
    .bind(item.entered_by.as_deref())
    .bind(Value::Object(c.variant.flags_json()).to_string())
    .bind(Value::Object(c.variant.textvars_json()).to_string())
    .bind(c.provenance.abi_version)
    .bind(c.provenance.definition_sha256.clone())
    .bind(c.provenance.input_sha256.clone())
    .bind(c.language.as_str())
    .bind(c.translation_sha256.clone())
    .fetch_one(&mut *conn)
    .await?;
    Ok(ResponseId(row.0))
}
