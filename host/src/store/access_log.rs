//! The access log (NEN 7513): one row per request that touches dossier
//! data, reads and refusals included; refusals without valid credentials
//! come counted, one row per client, route and status each minute
//! (`refusals`). Append-only: this module has no update or delete, and the
//! schema's triggers refuse them.

use chrono::{DateTime, Utc};

use sqlx::AnyConnection;

use super::{Backend, Script, Store, StoreError};
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
    /// How many refusals without valid credentials this row counts (the
    /// first one's time, request id and route; docs/api/rights.md#access-log);
    /// None for the row of one request.
    pub refusals: Option<u32>,
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
    refusals: Option<i64>,
}

impl Store {
    /// Appends one entry; returns once it is durable.
    pub async fn append_access(&self, entry: AccessEntry) -> Result<(), StoreError> {
        self.writer.append_access(entry).await
    }

    /// Appends `entries` together in one write; returns once they are
    /// durable.
    pub async fn append_accesses(&self, entries: Vec<AccessEntry>) -> Result<(), StoreError> {
        if entries.is_empty() {
            return Ok(());
        }
        let backend = self.backend;
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let refs: Vec<&AccessEntry> = entries.iter().collect();
                    insert(conn, backend, &refs).await
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
            "SELECT at, consumer_key, jwt_issuer, dossier, action, status, client, request_id, refusals FROM access_log \
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
                refusals: r.refusals.and_then(|n| u32::try_from(n).ok()),
            })
            .collect())
    }
}

/// Rows per multi-row INSERT (9 parameters each).
const INSERT_CHUNK: usize = 256;

/// Appends INSERT statements for `entries` to `script`, ending each with
/// `;` (several only on SQLite, where a script may hold several). The writer
/// appends all entries of a batch so, or, if that fails, each alone in its
/// own savepoint.
pub(super) fn push_inserts(script: &mut Script, entries: &[&AccessEntry]) {
    for chunk in entries.chunks(INSERT_CHUNK) {
        script.sql("INSERT INTO access_log (at, consumer_key, jwt_issuer, dossier, action, status, client, request_id, refusals) VALUES ");
        for (n, entry) in chunk.iter().enumerate() {
            script
                .sql(if n == 0 { "(" } else { ", (" })
                .bind(to_millis(entry.at))
                .sql(", ")
                .bind(entry.consumer_key.clone())
                .sql(", ")
                .bind(entry.jwt_issuer.clone())
                .sql(", ")
                .bind(entry.dossier.clone())
                .sql(", ")
                .bind(entry.action.clone())
                .sql(", ")
                .bind(i64::from(entry.status))
                .sql(", ")
                .bind(entry.client.clone())
                .sql(", ")
                .bind(entry.request_id.clone())
                .sql(", ")
                .bind(entry.refusals.map(i64::from))
                .sql(")");
        }
        script.sql("; ");
    }
}

/// Appends `entries` (on PostgreSQL, one INSERT per few hundred).
pub(super) async fn insert(
    conn: &mut AnyConnection,
    backend: Backend,
    entries: &[&AccessEntry],
) -> Result<(), StoreError> {
    let chunk = match backend {
        Backend::Sqlite => entries.len().max(1),
        Backend::Postgres => INSERT_CHUNK,
    };
    for part in entries.chunks(chunk) {
        let mut script = Script::new(backend);
        push_inserts(&mut script, part);
        script.execute(conn).await?;
    }
    Ok(())
}
