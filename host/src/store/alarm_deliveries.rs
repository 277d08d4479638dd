//! The outbox of alarm deliveries (docs/api/alarms.md#delivery): a row per
//! (alarm event, destination) for each raised alarm and each escalation,
//! written by `alarms.rs` in the transaction that records the event, so an
//! alarm on disk is delivered eventually whatever happens to the host
//! after its commit.
//!
//! The destination is chosen when the event is recorded: the endpoint of
//! the token that stored the response (`api_tokens.alarm_webhook_url`), or
//! else the global one (`alarm_webhook_url`); with neither, nothing is
//! queued. The signing key is read when each attempt is claimed: the
//! token's webhook key, or for the global endpoint the host secret
//! `alarm_webhook_secret` (`outcomes alarm webhook-secret`), so a new key
//! signs queued deliveries too.
//!
//! Claiming, leases and recording are the callbacks' (`outbox.rs`): a
//! claim counts an attempt and pushes `next_attempt_at` past a lease in a
//! short transaction of its own (PostgreSQL: rows another host holds are
//! skipped), so two hosts never send the same delivery at once.

use chrono::{DateTime, Duration, Utc};
use sqlx::AnyConnection;

use super::access_log::AccessEntry;
use super::alarms::alarm_by_id;
use super::outbox::{Outbox, event_id};
use super::{Backend, Store, StoreError, StoredSecret};
use crate::domain::alarm::{Alarm, AlarmEvent, AlarmPolicy};
use crate::domain::ids::AlarmId;
use crate::domain::time::{from_millis, to_millis};

/// The host secret (`host_secrets`) that signs deliveries to the global
/// endpoint.
pub const ALARM_WEBHOOK_SECRET: &str = "alarm_webhook_secret";

/// A delivery claimed for sending.
#[derive(Debug, Clone)]
pub struct ClaimedDelivery {
    pub id: i64,
    /// The step delivered: raised or escalated.
    pub event: AlarmEvent,
    /// When the step was taken.
    pub at: DateTime<Utc>,
    /// The alarm as it is when claimed.
    pub alarm: Alarm,
    pub url: String,
    /// Attempts so far, this one included.
    pub attempts: i64,
    /// The message id receivers deduplicate on: the same on every attempt.
    pub event_id: String,
    /// The key that signs it (sealed): the token's webhook key, or the
    /// global endpoint's; None when there is none.
    pub webhook_secret: Option<StoredSecret>,
    /// The consumer key of the token whose endpoint it goes to; None for
    /// the global endpoint.
    pub consumer_key: Option<String>,
}

/// A due delivery: id, alarm, event, when, URL, attempts so far, event
/// id, signing key, consumer key.
type DeliveryRow = (
    i64,
    i64,
    String,
    i64,
    String,
    i64,
    String,
    Option<String>,
    Option<String>,
);

/// Queues the delivery of alarm event `alarm_event` (just recorded, at
/// `at`) in the caller's transaction: to the endpoint of the token
/// `consumer_key` (the one that stored the response) if it is live and has
/// one, else to `policy`'s global endpoint, else nowhere. Whether one was
/// queued.
pub(super) async fn enqueue(
    conn: &mut AnyConnection,
    policy: &AlarmPolicy,
    alarm_event: i64,
    consumer_key: Option<&str>,
    at: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let token: Option<(i64, Option<String>)> = match consumer_key {
        Some(key) => {
            sqlx::query_as(
                "SELECT id, alarm_webhook_url FROM api_tokens WHERE consumer_key = $1 AND revoked_at IS NULL",
            )
            .bind(key)
            .fetch_optional(&mut *conn)
            .await?
        }
        None => None,
    };
    let destination = match token {
        Some((id, Some(url))) => Some((Some(id), url)),
        _ => policy.webhook_url.clone().map(|url| (None, url)),
    };
    let Some((token, url)) = destination else {
        return Ok(false);
    };
    sqlx::query(
        "INSERT INTO alarm_deliveries (alarm_event_id, token_id, url, event_id, next_attempt_at) \
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(alarm_event)
    .bind(token)
    .bind(url)
    .bind(event_id())
    .bind(to_millis(at))
    .execute(&mut *conn)
    .await?;
    Ok(true)
}

impl Store {
    /// Claims up to `limit` alarm deliveries due at `now`: counts the
    /// attempt and holds each for `lease` (another claim skips it
    /// meanwhile); each with its alarm as it is now.
    pub async fn claim_alarm_deliveries(
        &self,
        now: DateTime<Utc>,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<ClaimedDelivery>, StoreError> {
        let lock = match self.backend {
            Backend::Postgres => " FOR UPDATE OF o SKIP LOCKED",
            Backend::Sqlite => "",
        };
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let sql = format!(
                        "SELECT o.id, e.alarm_id, e.event, e.at, o.url, o.attempts, o.event_id, \
                         CASE WHEN o.token_id IS NULL THEN h.value ELSE t.webhook_secret END, t.consumer_key \
                         FROM alarm_deliveries o JOIN alarm_events e ON e.id = o.alarm_event_id \
                         LEFT JOIN api_tokens t ON t.id = o.token_id \
                         LEFT JOIN host_secrets h ON h.name = '{ALARM_WEBHOOK_SECRET}' \
                         WHERE o.next_attempt_at <= $1 ORDER BY o.next_attempt_at, o.id LIMIT $2{lock}"
                    );
                    let rows: Vec<DeliveryRow> = sqlx::query_as(&sql)
                        .bind(to_millis(now))
                        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
                        .fetch_all(&mut *conn)
                        .await?;
                    let mut claimed = Vec::with_capacity(rows.len());
                    for (id, alarm, event, at, url, attempts, event_id, secret, consumer_key) in rows {
                        sqlx::query("UPDATE alarm_deliveries SET attempts = attempts + 1, next_attempt_at = $1 WHERE id = $2")
                            .bind(to_millis(now + lease))
                            .bind(id)
                            .execute(&mut *conn)
                            .await?;
                        let event = AlarmEvent::parse(&event).ok_or_else(|| {
                            StoreError::Corrupt(format!("alarm delivery {id}: its event {event:?}"))
                        })?;
                        claimed.push(ClaimedDelivery {
                            id,
                            event,
                            at: from_millis(at),
                            alarm: alarm_by_id(conn, AlarmId(alarm)).await?,
                            url,
                            attempts: attempts + 1,
                            event_id,
                            webhook_secret: secret.map(StoredSecret),
                            consumer_key,
                        });
                    }
                    Ok(claimed)
                })
            })
            .await
    }

    /// Whether an alarm delivery is due at `now` (a read, to claim only
    /// when there is something to claim).
    pub async fn alarm_deliveries_due(&self, now: DateTime<Utc>) -> Result<bool, StoreError> {
        let due: Option<(i64,)> =
            sqlx::query_as("SELECT id FROM alarm_deliveries WHERE next_attempt_at <= $1 LIMIT 1")
                .bind(to_millis(now))
                .fetch_optional(&*self.pool)
                .await?;
        Ok(due.is_some())
    }

    /// Records how an attempt at delivery `id` went, as
    /// [`Store::record_callback`] does for a callback.
    pub async fn record_alarm_delivery(
        &self,
        id: i64,
        outcome: Result<(), String>,
        retry_at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
        access: AccessEntry,
    ) -> Result<(), StoreError> {
        self.record_attempt(Outbox::AlarmDeliveries, id, outcome, retry_at, now, access)
            .await
    }

    /// Sets the key (sealed) that signs deliveries to the global endpoint,
    /// replacing any: queued deliveries are signed with it from now on.
    pub async fn set_alarm_webhook_secret(
        &self,
        sealed: StoredSecret,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.set_host_secret(ALARM_WEBHOOK_SECRET, sealed.0, now)
            .await
    }
}
