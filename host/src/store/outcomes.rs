//! Stored outcomes and the plugin modules that computed them: what
//! `outcomes rescore` reads and writes, and the archive of module versions
//! by content hash.
//!
//! Also what `verify` reads (each outcome with its text as stored), and the
//! definition versions by hash (`questionnaire_versions`, filled by
//! `catalog.rs` on every import).

use chrono::{DateTime, Utc};
use sqlx::Row;

use super::responses::{COLUMNS, FROM, ResponseRow};
use super::{Store, StoreError};
use crate::domain::ids::ResponseId;
use crate::domain::outcome::{Outcome, Provenance};
use crate::domain::response::Response;
use crate::domain::time::to_millis;

/// Which completed responses to rescore.
#[derive(Debug, Clone, Default)]
pub struct RescoreFilter {
    pub questionnaire_key: Option<String>,
    /// Completed at or after.
    pub since: Option<DateTime<Utc>>,
}

impl Store {
    /// Up to `limit` completed responses with ids above `after`, by id.
    pub async fn completed_responses(
        &self,
        filter: &RescoreFilter,
        after: i64,
        limit: i64,
    ) -> Result<Vec<Response>, StoreError> {
        self.completed_rows(filter, after, limit)
            .await?
            .into_iter()
            .map(Response::try_from)
            .collect()
    }

    /// The rows of [`Store::completed_responses`].
    async fn completed_rows(
        &self,
        filter: &RescoreFilter,
        after: i64,
        limit: i64,
    ) -> Result<Vec<ResponseRow>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} {FROM} WHERE r.completed_at IS NOT NULL AND r.withdrawn_at IS NULL \
             AND r.id > $1 AND ($2 = '' OR q.key = $2) AND r.completed_at >= $3 ORDER BY r.id LIMIT $4"
        );
        Ok(sqlx::query_as::<_, ResponseRow>(&sql)
            .bind(after)
            .bind(filter.questionnaire_key.clone().unwrap_or_default())
            .bind(filter.since.map_or(i64::MIN, to_millis))
            .bind(limit)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Up to `limit` completed responses with ids above `after`, by id,
    /// each with its outcome as the text stored (what a verification
    /// compares byte for byte).
    pub async fn responses_to_verify(
        &self,
        filter: &RescoreFilter,
        after: i64,
        limit: i64,
    ) -> Result<Vec<(Response, Option<String>)>, StoreError> {
        self.completed_rows(filter, after, limit)
            .await?
            .into_iter()
            .map(with_text)
            .collect()
    }

    /// The response `id` of the dossier `epd_id`, with its outcome as the
    /// text stored; None when the dossier has no such response (withdrawn
    /// ones included: they are not the dossier's any more).
    pub async fn response_to_verify(
        &self,
        epd_id: &str,
        id: i64,
    ) -> Result<Option<(Response, Option<String>)>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} {FROM} JOIN dossiers d ON d.id = r.dossier_id \
             WHERE d.epd_id = $1 AND r.id = $2 AND r.withdrawn_at IS NULL"
        );
        sqlx::query_as::<_, ResponseRow>(&sql)
            .bind(epd_id)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .map(with_text)
            .transpose()
    }

    /// The questionnaire definition text with this SHA-256, as imported.
    pub async fn definition_version(&self, sha256: &str) -> Result<Option<String>, StoreError> {
        let row = sqlx::query("SELECT definition FROM questionnaire_versions WHERE sha256 = $1")
            .bind(sha256)
            .fetch_optional(&self.pool)
            .await?;
        Ok(match row {
            Some(row) => Some(row.try_get::<String, _>(0)?),
            None => None,
        })
    }

    /// Replaces the outcome of a completed response, and opens or closes
    /// its alarms as the new outcome raises them, recorded.
    pub async fn set_outcome(
        &self,
        id: ResponseId,
        outcome: &Outcome,
        provenance: &Provenance,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let text = serde_json::to_string(outcome)
            .map_err(|e| StoreError::Corrupt(format!("outcome of response {}: {e}", id.0)))?;
        let provenance = provenance.clone();
        let (backend, policy, outcome) = (self.backend, self.alarms.clone(), outcome.clone());
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let done = sqlx::query(
                        "UPDATE responses SET outcome = $1, outcome_plugin = $2, outcome_plugin_version = $3, \
                         outcome_plugin_sha256 = $4, outcome_computed_at = $5, updated_at = $5, \
                         outcome_abi_version = $7, outcome_definition_sha256 = $8, outcome_input_sha256 = $9 \
                         WHERE id = $6 AND completed_at IS NOT NULL",
                    )
                    .bind(text)
                    .bind(provenance.plugin)
                    .bind(provenance.version)
                    .bind(provenance.sha256)
                    .bind(to_millis(now))
                    .bind(id.0)
                    .bind(provenance.abi_version)
                    .bind(provenance.definition_sha256)
                    .bind(provenance.input_sha256)
                    .execute(&mut *conn)
                    .await?;
                    if done.rows_affected() == 1 {
                        // An outcome that changed may raise an alarm, or no
                        // longer raise one (docs/api/alarms.md#re-scoring).
                        super::alarms::rescored(conn, backend, &policy, id, &outcome, now).await?;
                    }
                    Ok(())
                })
            })
            .await
    }

    /// Archives a module version (a no-op when its hash is known).
    pub async fn archive_module(
        &self,
        module: ArchivedModule,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    sqlx::query(
                        "INSERT INTO plugin_modules (sha256, name, kind, version, module, first_seen) \
                         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (sha256) DO NOTHING",
                    )
                    .bind(module.sha256)
                    .bind(module.name)
                    .bind(module.kind)
                    .bind(module.version)
                    .bind(module.bytes)
                    .bind(to_millis(now))
                    .execute(&mut *conn)
                    .await?;
                    Ok(())
                })
            })
            .await
    }

    /// The bytes of the module version with this hash.
    pub async fn archived_module(&self, sha256: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let row = sqlx::query("SELECT module FROM plugin_modules WHERE sha256 = $1")
            .bind(sha256)
            .fetch_optional(&self.pool)
            .await?;
        Ok(match row {
            Some(row) => Some(row.try_get::<Vec<u8>, _>(0)?),
            None => None,
        })
    }
}

fn with_text(row: ResponseRow) -> Result<(Response, Option<String>), StoreError> {
    let text = row.outcome.clone();
    Ok((Response::try_from(row)?, text))
}

/// A module version to keep.
#[derive(Debug, Clone)]
pub struct ArchivedModule {
    pub sha256: String,
    pub name: String,
    pub kind: String,
    pub version: String,
    pub bytes: Vec<u8>,
}
