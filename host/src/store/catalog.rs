//! Importing questionnaire and protocol definitions. Ids are stable per key:
//! a re-import updates the row in place, so responses keep pointing at the
//! same questionnaire. Definitions that disappear from disk keep their rows,
//! because stored responses still name them.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use sqlx::{AnyConnection, Row};

use super::{Store, StoreError};
use crate::domain::catalog::{Catalog, CatalogProtocol, CatalogQuestionnaire};
use crate::domain::ids::{MeasurementId, ProtocolId, QuestionnaireId};
use crate::domain::protocol::ProtocolDef;
use crate::domain::questionnaire::Questionnaire;
use crate::domain::time::to_millis;

/// A parsed definition with the text it came from and that text's SHA-256.
#[derive(Debug, Clone)]
pub struct DefinitionSource<T> {
    pub def: T,
    pub text: String,
    pub sha256: String,
}

impl Store {
    /// Stores every definition (inserting new keys, updating known ones) in
    /// one transaction and returns the catalog with their ids.
    pub async fn import_definitions(
        &self,
        questionnaires: Vec<DefinitionSource<Questionnaire>>,
        protocols: Vec<DefinitionSource<ProtocolDef>>,
        now: DateTime<Utc>,
    ) -> Result<Catalog, StoreError> {
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let now = to_millis(now);
                    let mut catalog_questionnaires = Vec::with_capacity(questionnaires.len());
                    for q in questionnaires {
                        let id = upsert(conn, "questionnaires", &q.def.key, &q.def.name, &q.text, &q.sha256, now).await?;
                        // Every version is kept: outcomes name the one they
                        // were scored with (docs/operations.md#verifying-outcomes-and-trying-a-new-scorer).
                        sqlx::query(
                            "INSERT INTO questionnaire_versions (sha256, key, definition, first_seen) \
                             VALUES ($1, $2, $3, $4) ON CONFLICT (sha256) DO NOTHING",
                        )
                        .bind(&q.sha256)
                        .bind(&q.def.key)
                        .bind(&q.text)
                        .bind(now)
                        .execute(&mut *conn)
                        .await?;
                        catalog_questionnaires.push(CatalogQuestionnaire { id: QuestionnaireId(id), def: Arc::new(q.def) });
                    }
                    let mut catalog_protocols = Vec::with_capacity(protocols.len());
                    for p in protocols {
                        let id = upsert(conn, "protocols", &p.def.key, &p.def.name, &p.text, &p.sha256, now).await?;
                        let mut measurement_ids = Vec::with_capacity(p.def.measurements.len());
                        for m in &p.def.measurements {
                            let row = sqlx::query(
                                "INSERT INTO measurements (protocol_id, key, name) VALUES ($1, $2, $3) \
                                 ON CONFLICT (protocol_id, key) DO UPDATE SET name = excluded.name RETURNING id",
                            )
                            .bind(id)
                            .bind(&m.key)
                            .bind(&m.name)
                            .fetch_one(&mut *conn)
                            .await?;
                            measurement_ids.push(MeasurementId(row.try_get(0)?));
                        }
                        catalog_protocols.push(CatalogProtocol { id: ProtocolId(id), def: p.def, measurement_ids });
                    }
                    Ok(Catalog::new(catalog_questionnaires, catalog_protocols))
                })
            })
            .await
    }
}

async fn upsert(
    conn: &mut AnyConnection,
    table: &'static str,
    key: &str,
    name: &str,
    text: &str,
    sha256: &str,
    now: i64,
) -> Result<i64, StoreError> {
    let sql = format!(
        "INSERT INTO {table} (key, name, definition, sha256, imported_at) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (key) DO UPDATE SET name = excluded.name, definition = excluded.definition, \
         sha256 = excluded.sha256, imported_at = excluded.imported_at RETURNING id"
    );
    let row = sqlx::query(&sql)
        .bind(key)
        .bind(name)
        .bind(text)
        .bind(sha256)
        .bind(now)
        .fetch_one(&mut *conn)
        .await?;
    Ok(row.try_get(0)?)
}
