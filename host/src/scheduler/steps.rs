//! The steps of a scheduler pass, in order, and what they did. A step does
//! one batch of one kind of work (a store call, or a claim and its HTTP
//! calls) and says whether the batch was full; [`Pass::run`] repeats it
//! until one is not, then moves to the next step. A new rule is a step
//! function and one line in [`STEPS`]. What a pass works with is the
//! [`Scheduler`], handed over at start-up; a step must not reach for the
//! application state.

use std::ops::AddAssign;
use std::sync::Arc;

use arc_swap::ArcSwap;
use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use futures_util::future::BoxFuture;

use super::alarm_delivery::{self, AlarmJson, Payload};
use super::callbacks::{self, CALLBACK_BATCH};
use super::heartbeat::Heartbeat;
use super::signed::Sender;
use crate::clock::Clock;
use crate::domain::catalog::Catalog;
use crate::domain::fill_out::IDLE_LIMIT;
use crate::domain::subscription::Subscription;
use crate::metrics::Metrics;
use crate::metrics::families::{ALARMS, ALARMS_OVERDUE, SCHEDULER_BATCHES, SCHEDULER_STEP};
use crate::store::{Planner, Prepared, Settled, Store, StoreError};

/// How long after expiry the non-response is registered
/// (docs/api/non-responses.md#expired-responses).
pub const NON_RESPONSE_DELAY: Duration = Duration::hours(6);

/// Subscriptions (and expired invitations) handled per transaction.
pub const BATCH: usize = 500;

/// The steps of a pass, in the order they run.
pub const STEPS: [Step; 6] = [
    Step::new("prepare_due", prepare_due),
    Step::new("settle_expired", settle_expired),
    Step::new("send_callbacks", send_callbacks),
    Step::new("purge_sessions", purge_sessions),
    Step::new("escalate_alarms", escalate_alarms),
    Step::new("deliver_alarms", deliver_alarms),
];

/// Prepares the due occurrences of a batch of subscriptions (an invitation
/// with a response per questionnaire each), and stops those that reached
/// their stop.
fn prepare_due<'t>(pass: &'t Pass<'t>) -> BoxFuture<'t, Result<Batch, StoreError>> {
    Box::pin(async move {
        let prepared = pass
            .store
            .prepare_due(pass.now, pass.batch, pass.planner.clone())
            .await?;
        Ok(Batch {
            full: prepared.subscriptions >= pass.batch,
            counts: prepared.into(),
        })
    })
}

/// Settles a batch of invitations that expired [`NON_RESPONSE_DELAY`] ago:
/// a non-response with code 04 for each with responses not filled out.
fn settle_expired<'t>(pass: &'t Pass<'t>) -> BoxFuture<'t, Result<Batch, StoreError>> {
    Box::pin(async move {
        let settled = pass
            .store
            .settle_expired(pass.now - NON_RESPONSE_DELAY, pass.now, pass.batch)
            .await?;
        Ok(Batch {
            full: settled.invitations >= pass.batch,
            counts: settled.into(),
        })
    })
}

/// Sends a batch of the fill-out requests' callbacks that are due.
fn send_callbacks<'t>(pass: &'t Pass<'t>) -> BoxFuture<'t, Result<Batch, StoreError>> {
    Box::pin(async move {
        let scheduler = pass.scheduler;
        let sent = callbacks::send_batch(
            &scheduler.callbacks,
            &scheduler.metrics,
            pass.store,
            pass.now,
        )
        .await?;
        Ok(Batch {
            full: sent.claimed >= CALLBACK_BATCH,
            counts: TickCounts {
                callbacks: sent.delivered,
                ..TickCounts::default()
            },
        })
    })
}

/// Deletes a batch of fill-out sessions over for longer than the
/// retention (docs/operations.md#patient-links).
fn purge_sessions<'t>(pass: &'t Pass<'t>) -> BoxFuture<'t, Result<Batch, StoreError>> {
    Box::pin(async move {
        let retention = &pass.scheduler.sessions;
        let purged = pass
            .store
            .purge_fill_out_sessions(
                pass.now - retention.retention,
                IDLE_LIMIT,
                retention.link_ttl,
                pass.batch,
            )
            .await?;
        Ok(Batch {
            full: purged >= pass.batch,
            counts: TickCounts {
                sessions_purged: purged,
                ..TickCounts::default()
            },
        })
    })
}

/// Escalates a batch of open alarms whose deadline passed, each recorded
/// (docs/api/alarms.md#deadlines); after the last batch, counts the
/// alarms waiting for the metrics.
fn escalate_alarms<'t>(pass: &'t Pass<'t>) -> BoxFuture<'t, Result<Batch, StoreError>> {
    Box::pin(async move {
        let escalated = pass.store.escalate_due(pass.now, pass.batch).await?;
        let full = escalated >= pass.batch;
        if !full {
            let counts = pass.store.alarm_counts(pass.now).await?;
            let metrics = &pass.scheduler.metrics;
            for (state, n) in [
                ("open", counts.open),
                ("acknowledged", counts.acknowledged),
                ("escalated", counts.escalated),
            ] {
                metrics.set(ALARMS, &[("state", state)], n as f64);
            }
            metrics.set(ALARMS_OVERDUE, &[], counts.overdue as f64);
        }
        Ok(Batch {
            full,
            counts: TickCounts {
                alarms_escalated: escalated,
                ..TickCounts::default()
            },
        })
    })
}

/// Delivers a batch of the alarm events that are due (raised and
/// escalated alarms; docs/api/alarms.md#delivery), after the escalations
/// this pass made. One batch only: a backlog is left to the poll between
/// passes (`mod.rs`, `deliver_alarms`), which works it off a second at a
/// time, so that no pass, and so no escalation, waits behind it.
fn deliver_alarms<'t>(pass: &'t Pass<'t>) -> BoxFuture<'t, Result<Batch, StoreError>> {
    Box::pin(async move {
        let scheduler = pass.scheduler;
        let sent = alarm_delivery::send_batch(
            &scheduler.callbacks,
            &scheduler.metrics,
            pass.store,
            scheduler.alarm_payload(),
            pass.now,
        )
        .await?;
        Ok(Batch {
            full: false,
            counts: TickCounts {
                alarms_delivered: sent.delivered,
                ..TickCounts::default()
            },
        })
    })
}

/// What a pass did. Each field is filled by one step.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TickCounts {
    /// `prepare_due`: subscriptions it looked at.
    pub subscriptions: usize,
    /// `prepare_due`: occurrences prepared (invitations made).
    pub invitations: usize,
    /// `prepare_due`: responses made for them.
    pub responses: usize,
    /// `prepare_due`: occurrences whose window had closed before they could
    /// be prepared.
    pub missed: usize,
    /// `prepare_due`: subscriptions that reached their stop.
    pub stopped: usize,
    /// `settle_expired`: expired invitations dealt with.
    pub settled: usize,
    /// `settle_expired`: non-responses registered.
    pub non_responses: usize,
    /// `send_callbacks`: callbacks of fill-out requests delivered.
    pub callbacks: usize,
    /// `purge_sessions`: fill-out sessions deleted.
    pub sessions_purged: usize,
    /// `escalate_alarms`: alarms escalated (their deadline passed
    /// unacknowledged).
    pub alarms_escalated: usize,
    /// `deliver_alarms`: alarm events delivered.
    pub alarms_delivered: usize,
}

impl AddAssign for TickCounts {
    fn add_assign(&mut self, other: TickCounts) {
        self.subscriptions += other.subscriptions;
        self.invitations += other.invitations;
        self.responses += other.responses;
        self.missed += other.missed;
        self.stopped += other.stopped;
        self.settled += other.settled;
        self.non_responses += other.non_responses;
        self.callbacks += other.callbacks;
        self.sessions_purged += other.sessions_purged;
        self.alarms_escalated += other.alarms_escalated;
        self.alarms_delivered += other.alarms_delivered;
    }
}

impl From<Prepared> for TickCounts {
    fn from(p: Prepared) -> TickCounts {
        TickCounts {
            subscriptions: p.subscriptions,
            invitations: p.invitations,
            responses: p.responses,
            missed: p.missed,
            stopped: p.stopped,
            ..TickCounts::default()
        }
    }
}

impl From<Settled> for TickCounts {
    fn from(s: Settled) -> TickCounts {
        TickCounts {
            settled: s.invitations,
            non_responses: s.non_responses,
            ..TickCounts::default()
        }
    }
}

/// What one batch of a step did, and whether it was full (so that more
/// may be due).
#[derive(Debug, Clone, Copy)]
pub struct Batch {
    pub counts: TickCounts,
    pub full: bool,
}

/// One batch of a step's work.
type Run = for<'t> fn(&'t Pass<'t>) -> BoxFuture<'t, Result<Batch, StoreError>>;

/// One kind of the scheduler's work, done a batch at a time.
#[derive(Clone, Copy)]
pub struct Step {
    /// What it is called in logs.
    pub name: &'static str,
    run: Run,
}

impl Step {
    const fn new(name: &'static str, run: Run) -> Step {
        Step { name, run }
    }
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Step").field("name", &self.name).finish()
    }
}

/// The scheduler's rule at `now`, over `catalog` in `zone`.
pub fn planner(catalog: Arc<Catalog>, zone: Tz, now: DateTime<Utc>) -> Planner {
    Arc::new(move |s: &Subscription| s.plan(&catalog, zone, now))
}

/// What the scheduler works with, handed to it at start-up.
#[derive(Debug)]
pub struct Scheduler {
    pub store: Store,
    /// The catalog in use (a reload swaps it); each pass plans over the
    /// one it finds at its start.
    pub catalog: Arc<ArcSwap<Catalog>>,
    /// Where days and months begin (`daily_start_time`, DST).
    pub time_zone: Tz,
    pub clock: Arc<dyn Clock>,
    pub metrics: Arc<Metrics>,
    /// When this process's scheduler last finished a pass (`/readyz`).
    pub heartbeat: Heartbeat,
    /// Sends the fill-out requests' callbacks and the alarm deliveries.
    pub callbacks: Sender,
    /// The alarm as the API shows it, for the deliveries' bodies.
    pub alarm_view: AlarmJson,
    /// When fill-out sessions are deleted.
    pub sessions: SessionRetention,
}

impl Scheduler {
    /// How alarm deliveries' bodies are made: the API's view, times in
    /// the configured zone.
    pub fn alarm_payload(&self) -> Payload {
        Payload {
            view: self.alarm_view,
            zone: self.time_zone,
        }
    }
}

/// How long fill-out sessions are kept once over.
#[derive(Debug, Clone, Copy)]
pub struct SessionRetention {
    /// Kept this long after they are over (`fill_out_session_retention`).
    pub retention: Duration,
    /// A one-time link is usable this long (`fill_out_link_ttl`): its
    /// session, never used, is over then.
    pub link_ttl: Duration,
}

/// One pass of the scheduler at a moment: what its steps work with.
pub struct Pass<'a> {
    pub scheduler: &'a Scheduler,
    /// The store written: the scheduler's (a test of two hosts sharing a
    /// database gives the second host's).
    pub store: &'a Store,
    pub now: DateTime<Utc>,
    /// The scheduler's rule at `now`.
    pub planner: Planner,
    /// Items per batch of `prepare_due` and `settle_expired`.
    pub batch: usize,
}

impl std::fmt::Debug for Pass<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pass")
            .field("now", &self.now)
            .field("batch", &self.batch)
            .finish_non_exhaustive()
    }
}

impl<'a> Pass<'a> {
    /// A pass of `scheduler` at `now`, over its current catalog.
    pub fn new(scheduler: &'a Scheduler, now: DateTime<Utc>) -> Pass<'a> {
        Pass {
            scheduler,
            store: &scheduler.store,
            now,
            planner: planner(scheduler.catalog.load_full(), scheduler.time_zone, now),
            batch: BATCH,
        }
    }

    /// Runs each step in turn until nothing it does is due; what they did.
    /// Each step's time and batches are recorded in the scheduler's metrics.
    pub async fn run(self) -> Result<TickCounts, StoreError> {
        let mut total = TickCounts::default();
        for step in &STEPS {
            let started = std::time::Instant::now();
            let metrics = &self.scheduler.metrics;
            let batches = metrics.counter(SCHEDULER_BATCHES, &[("step", step.name)]);
            let mut counts = TickCounts::default();
            loop {
                let batch = match (step.run)(&self).await {
                    Ok(batch) => batch,
                    Err(e) => {
                        metrics
                            .histogram(SCHEDULER_STEP, &[("step", step.name), ("result", "failed")])
                            .record(started.elapsed().as_secs_f64());
                        return Err(e);
                    }
                };
                batches.increment(1);
                counts += batch.counts;
                if !batch.full {
                    break;
                }
            }
            metrics
                .histogram(SCHEDULER_STEP, &[("step", step.name), ("result", "ok")])
                .record(started.elapsed().as_secs_f64());
            if counts != TickCounts::default() {
                tracing::info!(step = step.name, ?counts, "scheduler step");
            }
            total += counts;
        }
        Ok(total)
    }
}
