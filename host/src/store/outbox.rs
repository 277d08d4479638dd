//! What the outboxes share: the callbacks of fill-out requests
//! (`fill_out_requests.rs`) and the alarm deliveries
//! (`alarm_deliveries.rs`). Each is a table with a row per message to send,
//! claimed a few at a time by pushing `next_attempt_at` past a lease, sent
//! outside any transaction, and recorded here: delivered, tried again at a
//! later time, or given up, with the attempt's access-log row in the same
//! transaction. Every row has an event id, made with it and the same on
//! every attempt (`webhook-id`), so a receiver can drop a repeat.

use chrono::{DateTime, Utc};
use rand::RngCore;

use super::access_log::{self, AccessEntry};
use super::{Store, StoreError};
use crate::domain::time::to_millis;

/// An outbox table: both have `delivered_at`, `given_up_at`,
/// `next_attempt_at` and `last_error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outbox {
    Callbacks,
    AlarmDeliveries,
}

impl Outbox {
    fn table(self) -> &'static str {
        match self {
            Outbox::Callbacks => "callbacks",
            Outbox::AlarmDeliveries => "alarm_deliveries",
        }
    }
}

/// A new message's event id: `msg_` and 128 random bits in hex.
pub(super) fn event_id() -> String {
    let mut bytes = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("msg_{hex}")
}

impl Store {
    /// Records how an attempt at row `id` of `outbox` went: delivered; or
    /// failed, to be tried again at `retry_at`, or given up when that is
    /// None. With the access-log row of the attempt (`access`): what left,
    /// to whom, and how it was answered.
    pub(super) async fn record_attempt(
        &self,
        outbox: Outbox,
        id: i64,
        outcome: Result<(), String>,
        retry_at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
        access: AccessEntry,
    ) -> Result<(), StoreError> {
        let backend = self.backend;
        let table = outbox.table();
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let now = to_millis(now);
                    let (sql, at, error) = match (&outcome, retry_at) {
                        (Ok(()), _) => (
                            "delivered_at = $1, next_attempt_at = NULL, last_error = $2",
                            now,
                            None,
                        ),
                        (Err(error), Some(at)) => (
                            "next_attempt_at = $1, last_error = $2",
                            to_millis(at),
                            Some(error.clone()),
                        ),
                        (Err(error), None) => (
                            "given_up_at = $1, next_attempt_at = NULL, last_error = $2",
                            now,
                            Some(error.clone()),
                        ),
                    };
                    sqlx::query(&format!("UPDATE {table} SET {sql} WHERE id = $3"))
                        .bind(at)
                        .bind(error)
                        .bind(id)
                        .execute(&mut *conn)
                        .await?;
                    access_log::insert(conn, backend, &[&access]).await?;
                    Ok(())
                })
            })
            .await
    }
}
