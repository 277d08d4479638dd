//! Per-dossier counters (docs/api/stats.md#answer), counted by the database
//! in three grouped queries over indexed columns, whatever the number of
//! dossiers.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sqlx::Row;

use super::responses::status_condition;
use super::{Backend, Script, Store, StoreError};
use crate::domain::response::Status;
use crate::domain::time::to_millis;

/// The counters of one dossier. Every count leaves out withdrawn rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DossierStats {
    pub responses: ResponseCounts,
    pub invitations: InvitationCounts,
    pub protocol_subscriptions: SubscriptionCounts,
}

/// Responses by status at the moment asked (the status rule of
/// `domain::response::Status::at`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResponseCounts {
    pub total: i64,
    pub completed: i64,
    pub aborted: i64,
    pub expired: i64,
    /// scheduled + open.
    pub pending: i64,
    pub scheduled: i64,
    pub open: i64,
}

/// Invitations (batches of responses prepared together).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InvitationCounts {
    pub total: i64,
    /// Open now: opened and not yet closed.
    pub active: i64,
    /// Closed: `open_till` passed.
    pub expired: i64,
    /// Not closed: active, or not open yet.
    pub unexpired: i64,
}

/// Protocol subscriptions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SubscriptionCounts {
    /// Every subscription the dossier had, stopped ones included.
    pub total: i64,
    /// Active, with measurements still to prepare.
    pub to_be_prepared: i64,
    /// Active, with a stop date: they stop by themselves.
    pub to_be_stopped: i64,
}

/// Dossiers per `IN (...)` list: every statement is a round trip that
/// PostgreSQL parses and plans anew, so few long lists beat many short
/// ones; far below both databases' parameter limits.
const CHUNK: usize = 5000;

impl Store {
    /// The counters at `now` of the dossiers named by `epd_ids` that exist
    /// (an unknown id is left out), or of every dossier when None; keyed by
    /// EPD id.
    pub async fn stats(
        &self,
        epd_ids: Option<&[String]>,
        now: DateTime<Utc>,
    ) -> Result<BTreeMap<String, DossierStats>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        let mut out: BTreeMap<String, DossierStats> = BTreeMap::new();
        // The dossiers: their internal ids, to group by.
        let mut ids: BTreeMap<i64, String> = BTreeMap::new();
        match epd_ids {
            // Unknown ids are left out of the answer: only dossiers that
            // exist get an entry (zeros until a count says otherwise).
            Some(epd_ids) => {
                for chunk in epd_ids.chunks(CHUNK) {
                    let mut script = Script::new(self.backend);
                    script.sql("SELECT id, epd_id FROM dossiers WHERE epd_id IN (");
                    script.list(chunk.iter().cloned());
                    script.sql(")");
                    for row in script.fetch_all(&mut conn).await? {
                        let epd_id: String = row.try_get(1)?;
                        out.insert(epd_id.clone(), DossierStats::default());
                        ids.insert(row.try_get(0)?, epd_id);
                    }
                }
            }
            None => {
                let rows: Vec<(i64, String)> = sqlx::query_as("SELECT id, epd_id FROM dossiers")
                    .fetch_all(&mut *conn)
                    .await?;
                for (id, epd_id) in rows {
                    out.insert(epd_id.clone(), DossierStats::default());
                    ids.insert(id, epd_id);
                }
            }
        }
        if ids.is_empty() {
            return Ok(out);
        }
        let now = to_millis(now);
        // Without a list of dossiers, every row counts: no IN at all.
        let chunks: Vec<Option<Vec<i64>>> = match epd_ids {
            None => vec![None],
            Some(_) => ids
                .keys()
                .copied()
                .collect::<Vec<_>>()
                .chunks(CHUNK)
                .map(|c| Some(c.to_vec()))
                .collect(),
        };
        for dossiers in &chunks {
            for row in counted(self.backend, &response_counts(), "responses", now, dossiers)
                .fetch_all(&mut conn)
                .await?
            {
                let Some(epd_id) = ids.get(&row.try_get::<i64, _>(0)?) else {
                    continue;
                };
                let n = |i: usize| row.try_get::<i64, _>(i);
                let r = &mut out.entry(epd_id.clone()).or_default().responses;
                *r = ResponseCounts {
                    total: n(1)?,
                    completed: n(2)?,
                    aborted: n(3)?,
                    expired: n(4)?,
                    scheduled: n(5)?,
                    open: n(6)?,
                    pending: n(5)? + n(6)?,
                };
            }
            for row in counted(self.backend, INVITATIONS, "invitations", now, dossiers)
                .fetch_all(&mut conn)
                .await?
            {
                let Some(epd_id) = ids.get(&row.try_get::<i64, _>(0)?) else {
                    continue;
                };
                let n = |i: usize| row.try_get::<i64, _>(i);
                let total = n(1)?;
                let expired = n(3)?;
                out.entry(epd_id.clone()).or_default().invitations = InvitationCounts {
                    total,
                    active: n(2)?,
                    expired,
                    unexpired: total - expired,
                };
            }
            for row in counted(
                self.backend,
                SUBSCRIPTIONS,
                "protocol_subscriptions",
                now,
                dossiers,
            )
            .fetch_all(&mut conn)
            .await?
            {
                let Some(epd_id) = ids.get(&row.try_get::<i64, _>(0)?) else {
                    continue;
                };
                let n = |i: usize| row.try_get::<i64, _>(i);
                out.entry(epd_id.clone())
                    .or_default()
                    .protocol_subscriptions = SubscriptionCounts {
                    total: n(1)?,
                    to_be_prepared: n(2)?,
                    to_be_stopped: n(3)?,
                };
            }
        }
        Ok(out)
    }
}

/// `SELECT dossier_id, <counts> FROM <table> r WHERE [dossier_id IN (...)]
/// GROUP BY dossier_id`, with `$now` in `counts` bound to `now`.
fn counted(
    backend: Backend,
    counts: &str,
    table: &str,
    now: i64,
    dossiers: &Option<Vec<i64>>,
) -> Script {
    let mut script = Script::new(backend);
    script.sql("SELECT r.dossier_id");
    // Each `$now` in the text is its own parameter (SQLite's `?` are
    // numbered in order).
    let mut parts = counts.split("$now");
    if let Some(first) = parts.next() {
        script.sql(first);
    }
    for part in parts {
        script.bind(now).sql(part);
    }
    script.sql(" FROM ").sql(table).sql(" r");
    match dossiers {
        Some(ids) => {
            script.sql(" WHERE r.dossier_id IN (");
            script.list(ids.iter().copied());
            script.sql(") AND ");
        }
        None => {
            script.sql(" WHERE ");
        }
    }
    script.sql(match table {
        "protocol_subscriptions" => "1 = 1",
        _ => "r.withdrawn_at IS NULL",
    });
    script.sql(" GROUP BY r.dossier_id");
    script
}

/// The response counters, with the conditions the responses list filters
/// by status with (the rule of `Status::at`).
fn response_counts() -> String {
    let count = |status| {
        format!(
            ", SUM(CASE WHEN {} THEN 1 ELSE 0 END)",
            status_condition(status, "$now")
        )
    };
    format!(
        ", COUNT(*){}{}{}{}{}",
        count(Status::Completed),
        count(Status::Aborted),
        count(Status::Expired),
        count(Status::Scheduled),
        count(Status::Open),
    )
}

const INVITATIONS: &str = ", COUNT(*), \
    SUM(CASE WHEN r.open_from <= $now AND (r.open_till IS NULL OR r.open_till > $now) THEN 1 ELSE 0 END), \
    SUM(CASE WHEN r.open_till IS NOT NULL AND r.open_till <= $now THEN 1 ELSE 0 END)";

const SUBSCRIPTIONS: &str = ", COUNT(*), \
    SUM(CASE WHEN r.stopped_at IS NULL AND r.next_due_at IS NOT NULL AND (r.stop_at IS NULL OR r.next_due_at < r.stop_at) THEN 1 ELSE 0 END), \
    SUM(CASE WHEN r.stopped_at IS NULL AND r.stop_at IS NOT NULL THEN 1 ELSE 0 END)";
