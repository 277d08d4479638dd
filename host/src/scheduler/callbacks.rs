//! The step that sends fill-out requests' callbacks: one batch claimed in
//! the store, called at once over HTTP, each outcome recorded (delivered,
//! or the next attempt after a backoff, or given up). The HTTP client is
//! built once at start-up ([`client`]) and kept, with what signs a
//! callback, in the [`Sender`] the scheduler is handed. Knows nothing of
//! the other steps.
//!
//! Each call is signed as Standard Webhooks has it ([`crate::auth::webhook`])
//! and goes only to an allowed address ([`crate::auth::destination`]): an
//! address in the URL is checked here, a host name by the client's
//! resolver ([`super::resolve`]), and the connection is made to the
//! address that was checked. A redirect is never followed, and no proxy
//! is used.
//!
//! A callback hands dossier data out (the dossier id, the respondent's
//! link), so each attempt has its access-log row, stored with the
//! attempt's outcome in one transaction: the token that asked for it, the
//! event, the receiver's origin and status (0: no answer). An attempt
//! whose outcome a crash kept from being stored is made again once its
//! lease runs out, and logged then.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};

use super::resolve::{CheckedResolver, refusal};
use crate::auth::at_rest::SecretsKey;
use crate::auth::destination::Destinations;
use crate::auth::links::Links;
use crate::auth::webhook::WebhookKey;
use crate::metrics::Metrics;
use crate::store::{AccessEntry, ClaimedCallback, Store, StoreError};

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

/// The HTTP client callbacks are sent with, made once at start-up. Host
/// names are looked up by a [`CheckedResolver`] over `destinations`; no
/// proxy is used (one would look names up itself, unchecked).
pub fn client(destinations: Destinations) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(CALLBACK_TIMEOUT)
        // A callback goes where it was registered, nowhere else.
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Arc::new(CheckedResolver::new(destinations)))
        .build()
}

/// What sending callbacks takes, made once at start-up: the client, the
/// addresses it may reach, the key that opens the tokens' webhook
/// secrets, and the links a callback carries.
#[derive(Debug, Clone)]
pub struct Sender {
    client: reqwest::Client,
    destinations: Destinations,
    secrets: Arc<SecretsKey>,
    links: Arc<Links>,
}

impl Sender {
    /// A sender that reaches public addresses and `destinations`' networks.
    pub fn new(
        destinations: Destinations,
        secrets: Arc<SecretsKey>,
        links: Arc<Links>,
    ) -> reqwest::Result<Sender> {
        Ok(Sender {
            client: client(destinations.clone())?,
            destinations,
            secrets,
            links,
        })
    }
}

/// Why a callback call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Failure {
    /// Not sent: its address is not allowed.
    Refused(String),
    /// Sent, or tried to, and not accepted.
    Failed(String),
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
    sender: &Sender,
    metrics: &Metrics,
    store: &Store,
    now: DateTime<Utc>,
) -> Result<Sent, StoreError> {
    let claimed = store
        .claim_callbacks(now, CALLBACK_LEASE, CALLBACK_BATCH)
        .await?;
    let outcomes =
        futures_util::future::join_all(claimed.iter().map(|c| send(sender, c, now))).await;
    let mut delivered = 0;
    for (callback, (answered, outcome)) in claimed.iter().zip(outcomes) {
        let access = access_row(callback, answered, now);
        let outcome = outcome.map_err(|failure| match failure {
            Failure::Refused(why) => {
                metrics.inc("outcomes_callbacks_refused_total", &[]);
                format!("refused: {why}")
            }
            Failure::Failed(why) => why,
        });
        let retry_at = match &outcome {
            Ok(()) => {
                delivered += 1;
                metrics.inc("outcomes_callbacks_total", &[("result", "delivered")]);
                None
            }
            Err(error) => {
                let retry = retry_at(callback.attempts, now);
                let result = if retry.is_some() { "retry" } else { "given_up" };
                metrics.inc("outcomes_callbacks_total", &[("result", result)]);
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
            .record_callback(callback.id, outcome, retry_at, now, access)
            .await?;
    }
    Ok(Sent {
        claimed: claimed.len(),
        delivered,
    })
}

/// The access-log row of an attempt at `now` that the receiver answered
/// with `answered` (None: no answer, or not sent).
fn access_row(
    callback: &ClaimedCallback,
    answered: Option<u16>,
    now: DateTime<Utc>,
) -> AccessEntry {
    let receiver = crate::auth::origin::absolute_url(&callback.url)
        .map_or_else(|| "unknown".to_owned(), |(_, origin)| origin);
    AccessEntry {
        at: now,
        consumer_key: callback.consumer_key.clone(),
        dossier: Some(callback.epd_id.clone()),
        action: format!("POST callback {}", callback.event),
        status: answered.unwrap_or(0),
        client: receiver,
        request_id: Some(callback.event_id.clone()),
        ..AccessEntry::default()
    }
}

/// When a callback that failed its `attempts`-th attempt at `now` is tried
/// again; None: given up.
fn retry_at(attempts: i64, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    usize::try_from(attempts - 1)
        .ok()
        .and_then(|i| CALLBACK_RETRIES.get(i))
        .map(|delay| now + *delay)
}

/// One callback call at `now`: POST JSON, signed; any 2xx within the
/// timeout is success (a redirect is not). `url` is the respondent's
/// `completing_url` while there is something to fill out (null with
/// `expired`); `event_id` is the `webhook-id`, the same on every attempt.
/// The receiver's status when it answered, and how it went.
async fn send(
    sender: &Sender,
    callback: &ClaimedCallback,
    now: DateTime<Utc>,
) -> (Option<u16>, Result<(), Failure>) {
    match request(sender, callback, now) {
        Ok(request) => match request.send().await {
            Ok(answer) if answer.status().is_success() => (Some(answer.status().as_u16()), Ok(())),
            Ok(answer) => (
                Some(answer.status().as_u16()),
                Err(Failure::Failed(format!("answered {}", answer.status()))),
            ),
            Err(e) => (
                None,
                Err(match refusal(&e) {
                    Some(refused) => Failure::Refused(refused.to_string()),
                    None => Failure::Failed(error_chain(&e)),
                }),
            ),
        },
        Err(failure) => (None, Err(failure)),
    }
}

/// The signed request of a callback at `now`, if it may be sent.
fn request(
    sender: &Sender,
    callback: &ClaimedCallback,
    now: DateTime<Utc>,
) -> Result<reqwest::RequestBuilder, Failure> {
    let Sender {
        client,
        destinations,
        secrets,
        links,
    } = sender;
    // An address written in the URL is connected to without a lookup, so
    // the resolver never sees it: check it here, under today's settings.
    let url = url::Url::parse(&callback.url).map_err(|e| Failure::Failed(e.to_string()))?;
    destinations
        .check_literal(&url)
        .map_err(|refused| Failure::Refused(refused.to_string()))?;
    let body = serde_json::json!({
        "dossier_id": callback.epd_id,
        "event": callback.event,
        "fill_out_request_id": callback.fill_out_request_id,
        "url": callback.offers_link().then(|| {
            links.completing_url(callback.respondent_id, callback.link_generation, now)
        }),
        "event_id": callback.event_id,
    });
    let body = serde_json::to_vec(&body).map_err(|e| Failure::Failed(e.to_string()))?;
    let timestamp = now.timestamp();
    let mut request = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header("webhook-id", &callback.event_id)
        .header("webhook-timestamp", timestamp.to_string());
    match &callback.webhook_secret {
        Some(stored) => {
            let key = WebhookKey::unseal(&stored.0, secrets).ok_or_else(|| {
                Failure::Failed(
                    "the token's stored webhook secret does not open with this host's secrets key"
                        .to_owned(),
                )
            })?;
            request = request.header(
                "webhook-signature",
                key.sign(&callback.event_id, timestamp, &body),
            );
        }
        None => tracing::warn!(
            fill_out_request = callback.fill_out_request_id,
            "callback sent unsigned: the token that made the request has no webhook secret \
             (make one with `outcomes token webhook-secret KEY`)"
        ),
    }
    Ok(request.body(body))
}

/// An error with its causes, `: `-separated (reqwest's own message names
/// only the URL).
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        text.push_str(": ");
        text.push_str(&e.to_string());
        cause = e.source();
    }
    text
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
