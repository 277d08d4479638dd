//! The step that sends fill-out requests' callbacks: one batch claimed in
//! the store, called at once over HTTP, each outcome recorded (delivered,
//! or the next attempt after a backoff, or given up). The HTTP client is
//! built once at start-up ([`client`]) and kept in the app state. Knows
//! nothing of the other steps.

use chrono::{DateTime, Duration, Utc};

use crate::AppState;
use crate::auth::links::Links;
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

/// How long a callback call may take.
const CALLBACK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How long a claimed callback is held for its sender: well past the call's
/// timeout, so another host does not send it meanwhile.
const CALLBACK_LEASE: Duration = Duration::minutes(5);

/// Callbacks sent at once.
pub const CALLBACK_BATCH: usize = 50;

/// The HTTP client callbacks are sent with, made once at start-up.
pub fn client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(CALLBACK_TIMEOUT)
        // A callback goes where it was registered, nowhere else.
        .redirect(reqwest::redirect::Policy::none())
        .build()
}

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
    app: &AppState,
    store: &Store,
    now: DateTime<Utc>,
) -> Result<Sent, StoreError> {
    let claimed = store
        .claim_callbacks(now, CALLBACK_LEASE, CALLBACK_BATCH)
        .await?;
    let client = app.callback_client();
    let outcomes =
        futures_util::future::join_all(claimed.iter().map(|c| send(client, c, app.links(), now)))
            .await;
    let mut delivered = 0;
    for (callback, outcome) in claimed.iter().zip(outcomes) {
        let retry_at = match &outcome {
            Ok(()) => {
                delivered += 1;
                app.metrics()
                    .inc("outcomes_callbacks_total", &[("result", "delivered")]);
                None
            }
            Err(error) => {
                let retry = retry_at(callback.attempts, now);
                let result = if retry.is_some() { "retry" } else { "given_up" };
                app.metrics()
                    .inc("outcomes_callbacks_total", &[("result", result)]);
                tracing::warn!(
                    fill_out_request = callback.fill_out_request_id,
                    event = %callback.event,
                    attempts = callback.attempts,
                    error = %error,
                    given_up = retry.is_none(),
                    "a callback failed"
                );
                retry
            }
        };
        store
            .record_callback(callback.id, outcome, retry_at, now)
            .await?;
    }
    Ok(Sent {
        claimed: claimed.len(),
        delivered,
    })
}

/// When a callback that failed its `attempts`-th attempt at `now` is tried
/// again; None: given up.
fn retry_at(attempts: i64, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    usize::try_from(attempts - 1)
        .ok()
        .and_then(|i| CALLBACK_RETRIES.get(i))
        .map(|delay| now + *delay)
}

/// One callback call: POST JSON, any 2xx within the timeout is success.
/// `url` is the respondent's `completing_url` while there is something to
/// fill out (null with `expired`).
async fn send(
    client: &reqwest::Client,
    callback: &ClaimedCallback,
    links: &Links,
    now: DateTime<Utc>,
) -> Result<(), String> {
    let body = serde_json::json!({
        "dossier_id": callback.epd_id,
        "event": callback.event,
        "fill_out_request_id": callback.fill_out_request_id,
        "url": callback.offers_link().then(|| {
            links.completing_url(callback.respondent_id, callback.link_generation, now)
        }),
    });
    match client.post(&callback.url).json(&body).send().await {
        Ok(answer) if answer.status().is_success() => Ok(()),
        Ok(answer) => Err(format!("answered {}", answer.status())),
        Err(e) => Err(e.to_string()),
    }
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
            .map(|attempts| retry_at(attempts, now).map(|at| at - now))
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
        assert_eq!(retry_at(0, now), None);
    }
}
