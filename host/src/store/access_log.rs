//! The access log (NEN 7513): one row per request that touches dossier
//! data, reads and refusals included. Append-only: this module has no update
//! or delete, and the schema's triggers refuse them.

use chrono::{DateTime, Utc};

use super::{Store, StoreError};
use crate::domain::time::{from_millis, to_millis};

/// One access.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessEntry {
    pub at: DateTime<Utc>,
    /// The token's consumer key (Basic) or the JWT's kid; None when the
    /// caller could not be identified.
    pub consumer_key: Option<String>,
    /// The JWT's `iss`, for bearer callers.
    pub jwt_issuer: Option<String>,
    /// The dossier the request named.
    pub dossier: Option<String>,
    /// Method and route, e.g. `GET /api/v1/dossiers/{dossier_id}/responses`.
    pub action: String,
    /// The HTTP status answered.
    pub status: u16,
    /// The client address as determined for IP allow-lists.
    pub client: String,
    pub request_id: Option<String>,
}

#[derive(sqlx::FromRow)]
struct Row {
    at: i64,
    consumer_key: Option<String>,
    jwt_issuer: Option<String>,
    dossier: Option<String>,
    action: String,
    status: i64,
    client: String,
    request_id: Option<String>,
}

impl Store {
    /// Appends one entry; returns once it is durable.
    pub async fn append_access(&self, entry: AccessEntry) -> Result<(), StoreError> {
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    sqlx::query(
                        "INSERT INTO access_log (at, consumer_key, jwt_issuer, dossier, action, status, client, request_id) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                    )
                    .bind(to_millis(entry.at))
                    .bind(entry.consumer_key)
                    .bind(entry.jwt_issuer)
                    .bind(entry.dossier)
                    .bind(entry.action)
                    .bind(i64::from(entry.status))
                    .bind(entry.client)
                    .bind(entry.request_id)
                    .execute(&mut *conn)
                    .await?;
                    Ok(())
                })
            })
            .await
    }

    /// Entries for one dossier (or all), at or after `since`, oldest first.
    pub async fn access_log(
        &self,
        dossier: Option<&str>,
        since: Option<DateTime<Utc>>,
    ) -> Result<Vec<AccessEntry>, StoreError> {
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT at, consumer_key, jwt_issuer, dossier, action, status, client, request_id FROM access_log \
             WHERE ($1 = '' OR dossier = $2) AND at >= $3 ORDER BY id",
        )
        .bind(dossier.unwrap_or_default())
        .bind(dossier.unwrap_or_default())
        .bind(since.map_or(i64::MIN, to_millis))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| AccessEntry {
                at: from_millis(r.at),
                consumer_key: r.consumer_key,
                jwt_issuer: r.jwt_issuer,
                dossier: r.dossier,
                action: r.action,
                status: u16::try_from(r.status).unwrap_or_default(),
                client: r.client,
                request_id: r.request_id,
            })
            .collect())
    }
}
