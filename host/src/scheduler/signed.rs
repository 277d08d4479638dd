//! One signed webhook call, as the scheduler's outbox senders make them
//! (fill-out callbacks, `callbacks.rs`; alarm deliveries,
//! `alarm_delivery.rs`): the HTTP client made once at start-up, the
//! [`Sender`] that holds it with what signs, one POST of a JSON body, the
//! retry schedule, and the access-log row of an attempt. Knows nothing of
//! what is sent.
//!
//! Each call is signed as Standard Webhooks has it ([`crate::auth::webhook`])
//! and goes only to an allowed address ([`crate::auth::destination`]): an
//! address in the URL is checked here, a host name by the client's
//! resolver ([`super::resolve`]), and the connection is made to the
//! address that was checked. A redirect is never followed, and no proxy
//! is used. Any 2xx within the timeout is success (a redirect is not).

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};

use super::resolve::{CheckedResolver, refusal};
use crate::auth::at_rest::SecretsKey;
use crate::auth::destination::Destinations;
use crate::auth::links::Links;
use crate::auth::webhook::WebhookKey;
use crate::metrics::Metrics;
use crate::store::{AccessEntry, StoredSecret};

/// How long a call may take.
const CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How long a claimed message is held for its sender: well past the call's
/// timeout, so another host does not send it meanwhile.
pub const LEASE: Duration = Duration::minutes(5);

/// The HTTP client webhooks are sent with, made once at start-up. Host
/// names are looked up by a [`CheckedResolver`] over `destinations`; no
/// proxy is used (one would look names up itself, unchecked).
pub fn client(destinations: Destinations) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(CALL_TIMEOUT)
        // A webhook goes where it was registered, nowhere else.
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Arc::new(CheckedResolver::new(destinations)))
        .build()
}

/// What sending webhooks takes, made once at start-up: the client, the
/// addresses it may reach, the key that opens the stored webhook secrets,
/// and the links a callback carries.
#[derive(Debug, Clone)]
pub struct Sender {
    client: reqwest::Client,
    destinations: Destinations,
    secrets: Arc<SecretsKey>,
    /// Makes the respondent's link a callback carries.
    pub links: Arc<Links>,
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

    /// The webhook key `stored` (sealed) holds; a failure when it does not
    /// open with this host's secrets key.
    pub fn key(&self, stored: &StoredSecret) -> Result<WebhookKey, Failure> {
        WebhookKey::unseal(&stored.0, &self.secrets).ok_or_else(|| {
            Failure::Failed(
                "the stored webhook secret does not open with this host's secrets key".to_owned(),
            )
        })
    }
}

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Not sent: its address is not allowed.
    Refused(String),
    /// Sent, or tried to, and not accepted.
    Failed(String),
}

/// One message to POST.
#[derive(Debug)]
pub struct Message<'a> {
    pub url: &'a str,
    /// `webhook-id`: the same on every attempt.
    pub event_id: &'a str,
    pub body: &'a serde_json::Value,
    /// Signs it; None: sent unsigned.
    pub key: Option<&'a WebhookKey>,
}

/// POSTs `message` at `now`. The receiver's status when it answered, and
/// how it went.
pub async fn post(
    sender: &Sender,
    message: &Message<'_>,
    now: DateTime<Utc>,
) -> (Option<u16>, Result<(), Failure>) {
    let request = match request(sender, message, now) {
        Ok(request) => request,
        Err(failure) => return (None, Err(failure)),
    };
    match request.send().await {
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
    }
}

/// The signed request of `message` at `now`, if it may be sent.
fn request(
    sender: &Sender,
    message: &Message<'_>,
    now: DateTime<Utc>,
) -> Result<reqwest::RequestBuilder, Failure> {
    // An address written in the URL is connected to without a lookup, so
    // the resolver never sees it: check it here, under today's settings.
    let url = url::Url::parse(message.url).map_err(|e| Failure::Failed(e.to_string()))?;
    sender
        .destinations
        .check_literal(&url)
        .map_err(|refused| Failure::Refused(refused.to_string()))?;
    let body = serde_json::to_vec(message.body).map_err(|e| Failure::Failed(e.to_string()))?;
    let timestamp = now.timestamp();
    let mut request = sender
        .client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header("webhook-id", message.event_id)
        .header("webhook-timestamp", timestamp.to_string());
    if let Some(key) = message.key {
        request = request.header(
            "webhook-signature",
            key.sign(message.event_id, timestamp, &body),
        );
    }
    Ok(request.body(body))
}

/// The metric families an outbox counts its attempts in: every attempt
/// by result (`delivered`, `retry`, `given_up`), and those refused for
/// their address.
#[derive(Debug, Clone, Copy)]
pub struct Counted {
    pub attempts: &'static str,
    pub refused: &'static str,
}

/// How the `attempts`-th attempt, which went `outcome` at `now`, is
/// recorded: the outcome as stored, and when it is tried again by
/// `schedule` (None: delivered, or given up). Counted in `counted`.
pub fn settle(
    metrics: &Metrics,
    counted: Counted,
    schedule: &[Duration],
    attempts: i64,
    outcome: Result<(), Failure>,
    now: DateTime<Utc>,
) -> (Result<(), String>, Option<DateTime<Utc>>) {
    let outcome = outcome.map_err(|failure| match failure {
        Failure::Refused(why) => {
            metrics.inc(counted.refused, &[]);
            format!("refused: {why}")
        }
        Failure::Failed(why) => why,
    });
    let retry = match &outcome {
        Ok(()) => None,
        Err(_) => retry_at(schedule, attempts, now),
    };
    let result = match (&outcome, retry) {
        (Ok(()), _) => "delivered",
        (Err(_), Some(_)) => "retry",
        (Err(_), None) => "given_up",
    };
    metrics.inc(counted.attempts, &[("result", result)]);
    (outcome, retry)
}

/// When a message that failed its `attempts`-th attempt at `now` is tried
/// again by `schedule` (the delay after each failure); None: given up.
pub fn retry_at(schedule: &[Duration], attempts: i64, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    usize::try_from(attempts - 1)
        .ok()
        .and_then(|i| schedule.get(i))
        .map(|delay| now + *delay)
}

/// The access-log row of an attempt at `now` to `url` that the receiver
/// answered with `answered` (None: no answer, or not sent): the caller
/// `consumer_key`, the dossier, `action`, the receiver's origin as the
/// client and the event id as the request id.
pub fn access_row(
    url: &str,
    answered: Option<u16>,
    now: DateTime<Utc>,
    consumer_key: Option<String>,
    dossier: &str,
    action: String,
    event_id: &str,
) -> AccessEntry {
    let receiver = crate::auth::origin::absolute_url(url)
        .map_or_else(|| "unknown".to_owned(), |(_, origin)| origin);
    AccessEntry {
        at: now,
        consumer_key,
        dossier: Some(dossier.to_owned()),
        action,
        status: answered.unwrap_or(0),
        client: receiver,
        request_id: Some(event_id.to_owned()),
        ..AccessEntry::default()
    }
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
