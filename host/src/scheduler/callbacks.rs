//! The step that sends fill-out requests' callbacks: one batch claimed in
//! the store, called at once over HTTP, each outcome recorded (delivered,
//! or the next attempt after a backoff, or given up). The call itself, its
//! signature and the destinations it may reach are `signed.rs`'s, shared
//! with the alarm deliveries. Knows nothing of the other steps.
//!
//! A callback hands dossier data out (the dossier id, the respondent's
//! link), so each attempt has its access-log row, stored with the
//! attempt's outcome in one transaction: the token that asked for it, the
//! event, the receiver's origin and status (0: no answer). An attempt
//! whose outcome a crash kept from being stored is made again once its
//! lease runs out, and logged then.

use chrono::{DateTime, Duration, Utc};

use super::signed::{self, Counted, Failure, LEASE, Message, Sender};
use crate::metrics::Metrics;
use crate::metrics::families::{CALLBACKS, CALLBACKS_REFUSED};
use crate::store::{ClaimedCallback, Store, StoreError};

/// Delays before the next attempt after a failed callback: after the first
/// failure 1 minute, then 5 and 30 minutes, 2 and 6 hours; after the sixth
/// failure the callback is given up (logged and counted).
pub const CALLBACK_RETRIES: [Duration; 5] = [
    Duration::minutes(1),
    Duration::minutes(5),
    Duration::minutes(30),
    Duration::hours(2),
    Duration::hours(6),
];

/// Callbacks sent at once.
pub const CALLBACK_BATCH: usize = 50;

/// What sending one batch did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// Callbacks claimed (at most [`CALLBACK_BATCH`]).
    pub claimed: usize,
    /// Of those, the ones the receiver accepted.
    pub delivered: usize,
}

/// Claims the callbacks due at `now` (one batch) in `store`, sends them at
/// once and records each outcome.
pub async fn send_batch(
    sender: &Sender,
    metrics: &Metrics,
    store: &Store,
    now: DateTime<Utc>,
) -> Result<Sent, StoreError> {
    let claimed = store.claim_callbacks(now, LEASE, CALLBACK_BATCH).await?;
    let outcomes =
        futures_util::future::join_all(claimed.iter().map(|c| send(sender, c, now))).await;
    let counted = Counted {
        attempts: CALLBACKS,
        refused: CALLBACKS_REFUSED,
    };
    let mut delivered = 0;
    for (callback, (answered, outcome)) in claimed.iter().zip(outcomes) {
        let access = signed::access_row(
            &callback.url,
            answered,
            now,
            callback.consumer_key.clone(),
            &callback.epd_id,
            format!("POST callback {}", callback.event),
            &callback.event_id,
        );
        let (outcome, retry_at) = signed::settle(
            metrics,
            counted,
            &CALLBACK_RETRIES,
            callback.attempts,
            outcome,
            now,
        );
        match &outcome {
            Ok(()) => delivered += 1,
            Err(error) => tracing::warn!(
                fill_out_request = callback.fill_out_request_id,
                event = %callback.event,
                attempts = callback.attempts,
                error = %error,
                given_up = retry_at.is_none(),
                "a callback failed"
            ),
        }
        store
            .record_callback(callback.id, outcome, retry_at, now, access)
            .await?;
    }
    Ok(Sent {
        claimed: claimed.len(),
        delivered,
    })
}

/// One callback call at `now`: POST JSON, signed with the key of the token
/// that made the request. `url` is the respondent's `completing_url` while
/// there is something to fill out (null with `expired`); `event_id` is the
/// `webhook-id`, the same on every attempt. The receiver's status when it
/// answered, and how it went.
async fn send(
    sender: &Sender,
    callback: &ClaimedCallback,
    now: DateTime<Utc>,
) -> (Option<u16>, Result<(), Failure>) {
    let key = match &callback.webhook_secret {
        Some(stored) => match sender.key(stored) {
            Ok(key) => Some(key),
            Err(failure) => return (None, Err(failure)),
        },
        None => {
            tracing::warn!(
                fill_out_request = callback.fill_out_request_id,
                "callback sent unsigned: the token that made the request has no webhook secret \
                 (make one with `outcomes token webhook-secret KEY`)"
            );
            None
        }
    };
    let body = serde_json::json!({
        "dossier_id": callback.epd_id,
        "event": callback.event,
        "fill_out_request_id": callback.fill_out_request_id,
        "url": callback.offers_link().then(|| {
            sender.links.completing_url(callback.respondent_id, callback.link_generation, now)
        }),
        "event_id": callback.event_id,
    });
    let message = Message {
        url: &callback.url,
        event_id: &callback.event_id,
        body: &body,
        key: key.as_ref(),
    };
    signed::post(sender, &message, now).await
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn failed_callbacks_back_off_and_are_given_up_after_the_sixth_attempt() {
        let now = Utc
            .with_ymd_and_hms(2027, 1, 1, 12, 0, 0)
            .single()
            .expect("a time");
        let delays: Vec<Option<Duration>> = (1..=6)
            .map(|attempts| signed::retry_at(&CALLBACK_RETRIES, attempts, now).map(|at| at - now))
            .collect();
        assert_eq!(
            delays,
            [
                Some(Duration::minutes(1)),
                Some(Duration::minutes(5)),
                Some(Duration::minutes(30)),
                Some(Duration::hours(2)),
                Some(Duration::hours(6)),
                None,
            ]
        );
        assert_eq!(signed::retry_at(&CALLBACK_RETRIES, 0, now), None);
    }
}
