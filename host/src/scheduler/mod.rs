//! The scheduler: [`tick`] does everything due at one moment, and [`run`]
//! calls it every `scheduler_interval` while the host serves
//! (docs/design.md#time-and-scheduling). Tests call [`tick`] with explicit
//! times.
//!
//! A tick is a list of steps ([`steps::STEPS`]), each done a batch at a
//! time until a batch comes back short: prepare the due occurrences of
//! every active subscription (an invitation with a response per
//! questionnaire, open from the occurrence for the measurement's window)
//! and stop subscriptions that reached their stop; settle each occurrence
//! that expired [`NON_RESPONSE_DELAY`] ago, registering one non-response
//! with code 04 where responses were not filled out; send the fill-out
//! requests' callbacks that are due; delete the fill-out sessions over for
//! longer than their retention; escalate the alarms past their deadline;
//! deliver the alarm events that are due. Response status needs no tick:
//! it is derived from the stored times.
//!
//! Work is idempotent and shared safely between hosts (see the store's
//! `subscriptions` module). A host that was down catches up on its first
//! tick: occurrences still open are prepared; those whose window closed
//! while it was down are counted as missed and not prepared, since nobody
//! was offered them.
//!
//! The scheduler is handed what it works with at start-up ([`Scheduler`]:
//! store, catalog, time zone, clock, metrics, heartbeat, the webhooks'
//! sender, the API's view of an alarm); it must not reach for the
//! application state or the HTTP edge.
//!
//! [`NON_RESPONSE_DELAY`] is 6 hours. Between passes [`run`] also delivers
//! alarms every [`DELIVERY_POLL`], when any are due, so a raised alarm
//! leaves within seconds rather than at the next pass. On shutdown [`run`]
//! lets a pass in progress finish.

pub mod alarm_delivery;
pub mod callbacks;
pub mod heartbeat;
pub mod resolve;
pub mod signed;
pub mod steps;

use std::sync::Arc;

use chrono::{DateTime, Utc};

pub use alarm_delivery::ALARM_RETRIES;
pub use callbacks::CALLBACK_RETRIES;
pub use signed::Sender;
pub use steps::{
    BATCH, NON_RESPONSE_DELAY, Pass, STEPS, Scheduler, SessionRetention, TickCounts, planner,
};

use crate::metrics::families::SCHEDULER_LAST;
use crate::store::StoreError;

/// Everything due at `now`; what each step did.
pub async fn tick(scheduler: &Scheduler, now: DateTime<Utc>) -> Result<TickCounts, StoreError> {
    let counts = Pass::new(scheduler, now).run().await?;
    // Only a pass that finished counts for readiness (`/readyz`).
    scheduler.heartbeat.beat(now);
    let metrics = &scheduler.metrics;
    metrics.inc("outcomes_scheduler_ticks_total", &[("result", "ok")]);
    metrics.set(SCHEDULER_LAST, &[], now.timestamp_millis() as f64 / 1000.0);
    for (what, n) in [
        ("invitations", counts.invitations),
        ("responses", counts.responses),
        ("missed", counts.missed),
        ("stopped", counts.stopped),
        ("non_responses", counts.non_responses),
        ("callbacks", counts.callbacks),
        ("sessions_purged", counts.sessions_purged),
        ("alarms_escalated", counts.alarms_escalated),
        ("alarms_delivered", counts.alarms_delivered),
    ] {
        metrics.add("outcomes_scheduler_work_total", &[("what", what)], n as u64);
    }
    if counts.missed > 0 {
        tracing::warn!(
            missed = counts.missed,
            "occurrences whose window closed before they could be prepared were skipped (was the scheduler down?)"
        );
    }
    Ok(counts)
}

/// How often [`run`] looks for alarm deliveries that are due between
/// passes: a read of an index, and a claim only when one is.
pub const DELIVERY_POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// Delivers the alarms due at `now` between passes, batch by batch, if any
/// are, for about one [`DELIVERY_POLL`] at most: a backlog (a receiver that
/// was down) is worked off poll by poll, so the pass that escalates is not
/// held up behind it (the hold-up `cargo xtask bench --alarms` found is in
/// docs/benchmarks.md). How many were delivered.
pub async fn deliver_alarms(
    scheduler: &Scheduler,
    now: DateTime<Utc>,
) -> Result<usize, StoreError> {
    let started = std::time::Instant::now();
    let mut delivered = 0;
    while started.elapsed() < DELIVERY_POLL && scheduler.store.alarm_deliveries_due(now).await? {
        let batch = alarm_delivery::send_batch(
            &scheduler.callbacks,
            &scheduler.metrics,
            &scheduler.store,
            scheduler.alarm_payload(),
            now,
        )
        .await?;
        delivered += batch.delivered;
        if batch.claimed < alarm_delivery::DELIVERY_BATCH {
            break;
        }
    }
    Ok(delivered)
}

/// Ticks every `every` until `shutdown` resolves, and delivers due alarms
/// every [`DELIVERY_POLL`] in between; a tick in progress finishes first.
/// A failed tick is logged and retried at the next one.
pub async fn run(
    scheduler: Arc<Scheduler>,
    every: std::time::Duration,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let mut interval = tokio::time::interval(every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut poll = tokio::time::interval(DELIVERY_POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => return,
            _ = interval.tick() => {}
            _ = poll.tick() => {
                if let Err(e) = deliver_alarms(&scheduler, scheduler.clock.now()).await {
                    tracing::warn!(error = %e, "delivering alarms failed; trying again shortly");
                }
                continue;
            }
        }
        if let Err(e) = tick(&scheduler, scheduler.clock.now()).await {
            scheduler
                .metrics
                .inc("outcomes_scheduler_ticks_total", &[("result", "failed")]);
            tracing::error!(error = %e, "scheduler tick failed; trying again at the next");
        }
    }
}
