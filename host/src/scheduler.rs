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
use crate::domain::subscription::Subscription;
use crate::store::{Planner, StoreError, TickCounts};

/// How long after expiry the non-response is registered (api.md, Limits).
pub const NON_RESPONSE_DELAY: Duration = Duration::hours(6);

/// Subscriptions (and expired invitations) handled per transaction.
pub const BATCH: usize = 500;

/// Everything due at `now`.
pub async fn tick(app: &AppState, now: DateTime<Utc>) -> Result<TickCounts, StoreError> {
    let counts = app
        .store()
        .tick(now, BATCH, NON_RESPONSE_DELAY, planner(app, now))
        .await?;
    let metrics = app.metrics();
    metrics.inc("outcomes_scheduler_ticks_total", &[("result", "ok")]);
    for (what, n) in [
        ("invitations", counts.invitations),
        ("responses", counts.responses),
        ("missed", counts.missed),
        ("stopped", counts.stopped),
        ("non_responses", counts.non_responses),
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
