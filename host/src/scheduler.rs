//! The scheduler: [`tick`] does everything due at one moment, and [`run`]
//! calls it every `scheduler_interval` while the host serves (design.md,
//! "Time and scheduling"). Tests call [`tick`] with explicit times.
//!
//! One tick prepares the due occurrences of every active subscription (an
//! invitation with a response per questionnaire, open from the occurrence
//! for the measurement's window), stops subscriptions that reached their
//! stop, and registers one non-response with code 04 for each occurrence
//! that expired [`NON_RESPONSE_DELAY`] ago with responses not filled out.
//! Response status needs no tick: it is derived from the stored times.
//!
//! Work is idempotent and shared safely between hosts (see the store's
//! `subscriptions` module). A host that was down catches up on its first
//! tick: occurrences still open are prepared; those whose window closed
//! while it was down are counted as missed and not prepared, since nobody
//! was offered them.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};

use crate::AppState;
use crate::auth::links::Links;
use crate::domain::subscription::Subscription;
use crate::store::{ClaimedCallback, Planner, StoreError, TickCounts};

/// How long after expiry the non-response is registered (api.md, Limits).
pub const NON_RESPONSE_DELAY: Duration = Duration::hours(6);

/// Subscriptions (and expired invitations) handled per transaction.
pub const BATCH: usize = 500;

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
const CALLBACK_BATCH: usize = 50;

/// Everything due at `now`.
pub async fn tick(app: &AppState, now: DateTime<Utc>) -> Result<TickCounts, StoreError> {
    let mut counts = app
        .store()
        .tick(now, BATCH, NON_RESPONSE_DELAY, planner(app, now))
        .await?;
    counts.callbacks = deliver_callbacks(app, now).await?;
    let metrics = app.metrics();
    metrics.inc("outcomes_scheduler_ticks_total", &[("result", "ok")]);
    for (what, n) in [
        ("invitations", counts.invitations),
        ("responses", counts.responses),
        ("missed", counts.missed),
        ("stopped", counts.stopped),
        ("non_responses", counts.non_responses),
        ("callbacks", counts.callbacks),
    ] {
        metrics.add("outcomes_scheduler_work_total", &[("what", what)], n as f64);
    }
    if counts.missed > 0 {
        tracing::warn!(
            missed = counts.missed,
            "occurrences whose window closed before they could be prepared were skipped (was the scheduler down?)"
        );
    }
    if counts != TickCounts::default() {
        tracing::info!(
            subscriptions = counts.subscriptions,
            invitations = counts.invitations,
            responses = counts.responses,
            stopped = counts.stopped,
            non_responses = counts.non_responses,
            callbacks = counts.callbacks,
            "scheduler tick"
        );
    }
    Ok(counts)
}

/// The scheduler's rule at `now`, over the current catalog.
pub fn planner(app: &AppState, now: DateTime<Utc>) -> Planner {
    let catalog = app.catalog();
    let zone = app.config().time_zone;
    Arc::new(move |s: &Subscription| s.plan(&catalog, zone, now))
}

/// Ticks every `every` until `shutdown` resolves; a tick in progress
/// finishes first. A failed tick is logged and retried at the next one.
pub async fn run(
    app: AppState,
    every: std::time::Duration,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let mut interval = tokio::time::interval(every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => return,
            _ = interval.tick() => {}
        }
        if let Err(e) = tick(&app, app.now()).await {
            app.metrics()
                .inc("outcomes_scheduler_ticks_total", &[("result", "failed")]);
            tracing::error!(error = %e, "scheduler tick failed; trying again at the next");
        }
    }
}

/// Sends the callbacks due at `now`, a batch at a time, each batch's calls
/// at once; records each outcome. The number delivered.
async fn deliver_callbacks(app: &AppState, now: DateTime<Utc>) -> Result<usize, StoreError> {
    let store = app.store();
    let mut delivered = 0;
    loop {
        let claimed = store
            .claim_callbacks(now, CALLBACK_LEASE, CALLBACK_BATCH)
            .await?;
        let outcomes =
            futures_util::future::join_all(claimed.iter().map(|c| send(c, app.links()))).await;
        for (callback, outcome) in claimed.iter().zip(outcomes) {
            let retry_at = match &outcome {
                Ok(()) => {
                    delivered += 1;
                    None
                }
                Err(error) => {
                    let retry = usize::try_from(callback.attempts - 1)
                        .ok()
                        .and_then(|i| CALLBACK_RETRIES.get(i))
                        .map(|delay| now + *delay);
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
            if outcome.is_ok() {
                app.metrics()
                    .inc("outcomes_callbacks_total", &[("result", "delivered")]);
            }
            store
                .record_callback(callback.id, outcome, retry_at, now)
                .await?;
        }
        if claimed.len() < CALLBACK_BATCH {
            return Ok(delivered);
        }
    }
}

/// One callback call: POST JSON, any 2xx within the timeout is success.
/// `url` is the respondent's `completing_url` while there is something to
/// fill out (null with `expired`).
async fn send(callback: &ClaimedCallback, links: &Links) -> Result<(), String> {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    let client = CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .timeout(CALLBACK_TIMEOUT)
            // A callback goes where it was registered, nowhere else.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default()
    });
    let body = serde_json::json!({
        "dossier_id": callback.epd_id,
        "event": callback.event,
        "fill_out_request_id": callback.fill_out_request_id,
        "url": callback.offers_link().then(|| links.completing_url(callback.respondent_id)),
    });
    match client.post(&callback.url).json(&body).send().await {
        Ok(answer) if answer.status().is_success() => Ok(()),
        Ok(answer) => Err(format!("answered {}", answer.status())),
        Err(e) => Err(e.to_string()),
    }
}
