//! The step that delivers alarms (docs/api/alarms.md#delivery): one batch
//! of the alarm deliveries due claimed in the store (queued when an alarm
//! was raised or escalated), POSTed at once as signed webhooks
//! (`signed.rs`, as the callbacks are), each outcome recorded: delivered,
//! the next attempt after a backoff ([`ALARM_RETRIES`]), or given up. The
//! event id (`webhook-id`) is the delivery's own, the same on every
//! attempt. Knows nothing of the other steps.
//!
//! Always signed: with the key of the token whose endpoint it goes to, or
//! for the global endpoint with the host secret `outcomes alarm
//! webhook-secret` made; without a key an attempt fails (and is retried,
//! so making the key late still delivers).
//!
//! Each attempt hands dossier data out, so each has its access-log row,
//! in the transaction that records its outcome: `alarm <id> delivered
//! (<type>)` when the receiver took it, `alarm <id> delivery failed
//! (<type>)` when not, with the receiver's origin as the client, its
//! status (0: no answer) and the event id as the request id.

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;

use super::signed::{self, Counted, Failure, LEASE, Message, Sender};
use crate::domain::alarm::Alarm;
use crate::metrics::Metrics;
use crate::metrics::families::{ALARM_DELIVERIES, ALARM_DELIVERIES_REFUSED};
use crate::store::{ClaimedDelivery, Store, StoreError};

/// Delays before the next attempt after a failed delivery: 10 seconds,
/// then 1, 2, 5, 10 and 30 minutes, 1, 2, 6 and 12 hours; after the
/// eleventh failure (about 22 hours on) it is given up. Short at first, so
/// a receiver that was down for minutes has its alarms minutes later.
pub const ALARM_RETRIES: [Duration; 10] = [
    Duration::seconds(10),
    Duration::minutes(1),
    Duration::minutes(2),
    Duration::minutes(5),
    Duration::minutes(10),
    Duration::minutes(30),
    Duration::hours(1),
    Duration::hours(2),
    Duration::hours(6),
    Duration::hours(12),
];

/// The alarm as the API shows it at a moment, its times in a zone: the
/// `data` of a delivery. Handed over at start-up (the API's own view), as
/// the scheduler does not name the HTTP edge.
pub type AlarmJson = fn(&Alarm, Tz, DateTime<Utc>) -> serde_json::Value;

/// How a delivery's body is made: the alarm's view and the zone its times
/// are written in.
#[derive(Debug, Clone, Copy)]
pub struct Payload {
    pub view: AlarmJson,
    pub zone: Tz,
}

/// Deliveries sent at once.
pub const DELIVERY_BATCH: usize = 50;

/// What delivering one batch did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivered {
    /// Deliveries claimed (at most [`DELIVERY_BATCH`]).
    pub claimed: usize,
    /// Of those, the ones the receiver accepted.
    pub delivered: usize,
}

/// Claims the alarm deliveries due at `now` (one batch) in `store`, sends
/// them at once, their bodies made by `payload`, and records each outcome.
pub async fn send_batch(
    sender: &Sender,
    metrics: &Metrics,
    store: &Store,
    payload: Payload,
    now: DateTime<Utc>,
) -> Result<Delivered, StoreError> {
    let claimed = store
        .claim_alarm_deliveries(now, LEASE, DELIVERY_BATCH)
        .await?;
    let outcomes =
        futures_util::future::join_all(claimed.iter().map(|d| send(sender, d, payload, now))).await;
    let counted = Counted {
        attempts: ALARM_DELIVERIES,
        refused: ALARM_DELIVERIES_REFUSED,
    };
    let mut delivered = 0;
    for (delivery, (answered, outcome)) in claimed.iter().zip(outcomes) {
        let (outcome, retry_at) = signed::settle(
            metrics,
            counted,
            &ALARM_RETRIES,
            delivery.attempts,
            outcome,
            now,
        );
        let step = match &outcome {
            Ok(()) => {
                delivered += 1;
                "delivered"
            }
            Err(error) => {
                tracing::warn!(
                    alarm = delivery.alarm.id.0,
                    event = webhook_type(delivery),
                    attempts = delivery.attempts,
                    error = %error,
                    given_up = retry_at.is_none(),
                    "an alarm delivery failed"
                );
                "delivery failed"
            }
        };
        let access = signed::access_row(
            &delivery.url,
            answered,
            now,
            delivery.consumer_key.clone(),
            &delivery.alarm.dossier,
            format!(
                "alarm {} {step} ({})",
                delivery.alarm.id,
                webhook_type(delivery)
            ),
            &delivery.event_id,
        );
        store
            .record_alarm_delivery(delivery.id, outcome, retry_at, now, access)
            .await?;
    }
    Ok(Delivered {
        claimed: claimed.len(),
        delivered,
    })
}

fn webhook_type(delivery: &ClaimedDelivery) -> &'static str {
    delivery.event.webhook_type().unwrap_or("alarm")
}

/// The body of a delivery at `now`: its type, when the step was taken,
/// the event id, and the alarm as the API shows it now (`data`).
fn body(delivery: &ClaimedDelivery, payload: Payload, now: DateTime<Utc>) -> serde_json::Value {
    serde_json::json!({
        "type": webhook_type(delivery),
        "timestamp": crate::domain::time::format(delivery.at, payload.zone),
        "event_id": delivery.event_id,
        "data": (payload.view)(&delivery.alarm, payload.zone, now),
    })
}

/// One delivery at `now`: POST the payload, signed. The receiver's status
/// when it answered, and how it went.
async fn send(
    sender: &Sender,
    delivery: &ClaimedDelivery,
    payload: Payload,
    now: DateTime<Utc>,
) -> (Option<u16>, Result<(), Failure>) {
    let key = match &delivery.webhook_secret {
        Some(stored) => match sender.key(stored) {
            Ok(key) => key,
            Err(failure) => return (None, Err(failure)),
        },
        None => {
            let make = match delivery.consumer_key {
                Some(ref token) => format!("outcomes token webhook-secret {token}"),
                None => "outcomes alarm webhook-secret".to_owned(),
            };
            return (
                None,
                Err(Failure::Failed(format!(
                    "no key to sign it with: make one with `{make}`"
                ))),
            );
        }
    };
    let body = body(delivery, payload, now);
    let message = Message {
        url: &delivery.url,
        event_id: &delivery.event_id,
        body: &body,
        key: Some(&key),
    };
    signed::post(sender, &message, now).await
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn failed_deliveries_back_off_and_are_given_up_after_the_eleventh_attempt() {
        let now = Utc
            .with_ymd_and_hms(2027, 1, 1, 12, 0, 0)
            .single()
            .expect("a time");
        let at = |attempts| signed::retry_at(&ALARM_RETRIES, attempts, now).map(|at| at - now);
        assert_eq!(at(1), Some(Duration::seconds(10)));
        assert_eq!(at(10), Some(Duration::hours(12)));
        assert_eq!(at(11), None);
        // A receiver down for ten minutes has its alarm within ten more.
        let tried: Vec<Duration> = (1..=5)
            .scan(Duration::zero(), |total, attempts| {
                *total += at(attempts).expect("a retry");
                Some(*total)
            })
            .collect();
        assert!(
            tried
                .iter()
                .any(|t| *t >= Duration::minutes(10) && *t <= Duration::minutes(20)),
            "{tried:?}"
        );
        let total = ALARM_RETRIES
            .iter()
            .fold(Duration::zero(), |sum, d| sum + *d);
        assert!(
            total > Duration::hours(21) && total < Duration::hours(23),
            "{total}"
        );
    }
}
