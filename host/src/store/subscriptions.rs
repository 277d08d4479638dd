//! Protocol subscriptions and the scheduler's writes: starting and stopping
//! subscriptions, preparing due occurrences (an invitation and its
//! responses each), and registering non-responses for expired ones.
//!
//! The scheduler's work is claimed a batch at a time, in the transaction
//! that does it: on PostgreSQL with `FOR UPDATE SKIP LOCKED`, so that two
//! hosts ticking at once share the work instead of doing it twice; on
//! SQLite the writer's transaction holds the database's one write lock. An
//! occurrence is prepared at most once in any case: the invitations table
//! is unique on (subscription, measurement, open_from), and responses are
//! only made for the invitations an INSERT actually made.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use sqlx::{AnyConnection, Row};

use super::non_responses::insert_non_response;
use super::responses::{COLUMNS, FROM, ResponseRow};
use super::{Backend, Script, Store, StoreError, dossiers};
use crate::domain::ids::{DossierId, ProtocolId, RespondentId, ResponseId, SubscriptionId};
use crate::domain::response::{COMPLETER_PATIENT, Response};
use crate::domain::subscription::{Plan, PlannedOccurrence, Subscription};
use crate::domain::time::{from_millis, to_millis};
use crate::domain::variant::Variant;

/// Decides what to do with a subscription now (the scheduler's rule, with
/// the catalog and time zone it closes over).
pub type Planner = Arc<dyn Fn(&Subscription) -> Plan + Send + Sync>;

/// A subscription to start.
#[derive(Debug, Clone)]
pub struct NewSubscription {
    pub epd_id: String,
    pub protocol_id: ProtocolId,
    pub start_at: DateTime<Utc>,
    pub stop_at: Option<DateTime<Utc>>,
    pub daily_start_time: u32,
    pub variant: Variant,
    /// When it first needs the scheduler ([`Subscription::first_due`]).
    pub first_due: Option<DateTime<Utc>>,
    pub now: DateTime<Utc>,
}

impl NewSubscription {
    /// The subscription this would make, before it has an id: what its
    /// first due moment ([`Subscription::first_due`]) is computed from.
    pub fn draft(&self) -> Subscription {
        Subscription {
            id: SubscriptionId::default(),
            dossier_id: DossierId::default(),
            protocol_id: self.protocol_id,
            respondent_id: RespondentId::default(),
            start_at: self.start_at,
            stop_at: self.stop_at,
            daily_start_time: self.daily_start_time,
            variant: self.variant.clone(),
            stopped_at: None,
            next_due_at: None,
            created_at: self.now,
        }
    }
}

/// What starting a subscription came to.
#[derive(Debug)]
pub enum StartResult {
    /// Started, with the responses prepared at once.
    Started(Subscription, Vec<Response>),
    /// The dossier has an active subscription to this protocol.
    AlreadySubscribed,
}

/// What preparing a batch of due subscriptions did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Prepared {
    /// Subscriptions claimed (at most the batch asked for).
    pub subscriptions: usize,
    /// Occurrences prepared (invitations made).
    pub invitations: usize,
    pub responses: usize,
    /// Occurrences whose window had closed before they could be prepared.
    pub missed: usize,
    /// Subscriptions that reached their stop.
    pub stopped: usize,
}

/// What settling a batch of expired invitations did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Settled {
    /// Expired invitations claimed and marked settled (at most the batch
    /// asked for).
    pub invitations: usize,
    /// Non-responses registered: one per invitation with responses left.
    pub non_responses: usize,
}

/// The reason code of the non-response registered for expired responses
/// ("the patient does not return the instrument";
/// docs/api/non-responses.md#expired-responses).
pub const EXPIRED_REASON: &str = "04";

const SUBSCRIPTION_COLUMNS: &str = "s.id, s.dossier_id, s.protocol_id, s.respondent_id, s.start_at, s.stop_at, \
    s.daily_start_time, s.flags, s.textvars, s.stopped_at, s.next_due_at, s.created_at";

#[derive(sqlx::FromRow)]
struct SubscriptionRow {
    id: i64,
    dossier_id: i64,
    protocol_id: i64,
    respondent_id: i64,
    start_at: i64,
    stop_at: Option<i64>,
    daily_start_time: i64,
    flags: String,
    textvars: String,
    stopped_at: Option<i64>,
    next_due_at: Option<i64>,
    created_at: i64,
}

impl TryFrom<SubscriptionRow> for Subscription {
    type Error = StoreError;

    fn try_from(r: SubscriptionRow) -> Result<Self, StoreError> {
        let object = |column: &str, text: &str| {
            serde_json::from_str::<Map<String, Value>>(text).map_err(|e| {
                StoreError::Corrupt(format!(
                    "protocol subscription {}: column {column}: {e}",
                    r.id
                ))
            })
        };
        Ok(Subscription {
            id: SubscriptionId(r.id),
            dossier_id: DossierId(r.dossier_id),
            protocol_id: ProtocolId(r.protocol_id),
            respondent_id: RespondentId(r.respondent_id),
            start_at: from_millis(r.start_at),
            stop_at: r.stop_at.map(from_millis),
            daily_start_time: u32::try_from(r.daily_start_time).map_err(|_| {
                StoreError::Corrupt(format!("protocol subscription {}: daily_start_time", r.id))
            })?,
            variant: Variant::from_stored(
                &object("flags", &r.flags)?,
                &object("textvars", &r.textvars)?,
            ),
            stopped_at: r.stopped_at.map(from_millis),
            next_due_at: r.next_due_at.map(from_millis),
            created_at: from_millis(r.created_at),
        })
    }
}

fn subscriptions(rows: Vec<SubscriptionRow>) -> Result<Vec<Subscription>, StoreError> {
    rows.into_iter().map(Subscription::try_from).collect()
}

impl Store {
    /// The dossier's active subscriptions, by id. An unknown dossier has
    /// none.
    pub async fn active_subscriptions(
        &self,
        epd_id: &str,
    ) -> Result<Vec<Subscription>, StoreError> {
        let sql = format!(
            "SELECT {SUBSCRIPTION_COLUMNS} FROM protocol_subscriptions s \
             WHERE s.dossier_id = (SELECT id FROM dossiers WHERE epd_id = $1) AND s.stopped_at IS NULL ORDER BY s.id"
        );
        let rows: Vec<SubscriptionRow> = sqlx::query_as(&sql)
            .bind(epd_id)
            .fetch_all(&self.pool)
            .await?;
        subscriptions(rows)
    }

    /// Starts a subscription for the dossier's patient (making the dossier
    /// on first write) and prepares what `planner` finds due at once, in one
    /// transaction.
    pub async fn start_subscription(
        &self,
        new: NewSubscription,
        planner: Planner,
    ) -> Result<StartResult, StoreError> {
        let backend = self.backend;
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let now = new.now;
                    let (dossier, patient) = dossiers::ensure(conn, &new.epd_id, now).await?;
                    let active: Option<(i64,)> = sqlx::query_as(
                        "SELECT id FROM protocol_subscriptions WHERE dossier_id = $1 AND protocol_id = $2 AND stopped_at IS NULL",
                    )
                    .bind(dossier.0)
                    .bind(new.protocol_id.0)
                    .fetch_optional(&mut *conn)
                    .await?;
                    if active.is_some() {
                        return Ok(StartResult::AlreadySubscribed);
                    }
                    let (id,): (i64,) = sqlx::query_as(
                        "INSERT INTO protocol_subscriptions (dossier_id, protocol_id, respondent_id, start_at, stop_at, \
                         daily_start_time, flags, textvars, next_due_at, created_at) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
                    )
                    .bind(dossier.0)
                    .bind(new.protocol_id.0)
                    .bind(patient.0)
                    .bind(to_millis(new.start_at))
                    .bind(new.stop_at.map(to_millis))
                    .bind(i64::from(new.daily_start_time))
                    .bind(Value::Object(new.variant.flags_json()).to_string())
                    .bind(Value::Object(new.variant.textvars_json()).to_string())
                    .bind(new.first_due.map(to_millis))
                    .bind(to_millis(now))
                    .fetch_one(&mut *conn)
                    .await?;
                    let subscription = Subscription {
                        id: SubscriptionId(id),
                        dossier_id: dossier,
                        protocol_id: new.protocol_id,
                        respondent_id: patient,
                        start_at: new.start_at,
                        stop_at: new.stop_at,
                        daily_start_time: new.daily_start_time,
                        variant: new.variant,
                        stopped_at: None,
                        next_due_at: new.first_due,
                        created_at: now,
                    };
                    let plan = planner(&subscription);
                    apply(conn, backend, &[(&subscription, &plan)], now).await?;
                    let sql = format!("SELECT {COLUMNS} {FROM} WHERE r.protocol_subscription_id = $1 ORDER BY r.id");
                    let rows: Vec<ResponseRow> = sqlx::query_as(&sql).bind(id).fetch_all(&mut *conn).await?;
                    let responses = rows.into_iter().map(Response::try_from).collect::<Result<_, _>>()?;
                    let subscription = Subscription {
                        next_due_at: plan.next_due_at,
                        stopped_at: plan.stopped_at,
                        ..subscription
                    };
                    Ok(StartResult::Started(subscription, responses))
                })
            })
            .await
    }

    /// Stops an active subscription of the dossier: no more occurrences, and
    /// its responses that are not open yet are withdrawn; open ones stay
    /// completable until they expire
    /// (docs/api/protocols-and-subscriptions.md#stop-a-subscription). None
    /// when the dossier has no such active subscription.
    pub async fn stop_subscription(
        &self,
        epd_id: String,
        id: SubscriptionId,
        now: DateTime<Utc>,
    ) -> Result<Option<Subscription>, StoreError> {
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let sql = format!(
                        "SELECT {SUBSCRIPTION_COLUMNS} FROM protocol_subscriptions s JOIN dossiers d ON d.id = s.dossier_id \
                         WHERE d.epd_id = $1 AND s.id = $2 AND s.stopped_at IS NULL"
                    );
                    let row: Option<SubscriptionRow> =
                        sqlx::query_as(&sql).bind(&epd_id).bind(id.0).fetch_optional(&mut *conn).await?;
                    let Some(row) = row else { return Ok(None) };
                    let now_ms = to_millis(now);
                    // Each with $1 = now, $2 = the subscription.
                    for sql in [
                        "UPDATE protocol_subscriptions SET stopped_at = $1, next_due_at = NULL WHERE id = $2",
                        "UPDATE responses SET withdrawn_at = $1, updated_at = $1 WHERE protocol_subscription_id = $2 \
                         AND completed_at IS NULL AND withdrawn_at IS NULL AND open_from > $1",
                        "UPDATE invitations SET withdrawn_at = $1, settled_at = $1 WHERE protocol_subscription_id = $2 \
                         AND withdrawn_at IS NULL AND open_from > $1",
                    ] {
                        sqlx::query(sql).bind(now_ms).bind(id.0).execute(&mut *conn).await?;
                    }
                    let stopped = Subscription {
                        stopped_at: Some(now),
                        next_due_at: None,
                        ..Subscription::try_from(row)?
                    };
                    Ok(Some(stopped))
                })
            })
            .await
    }

    /// The scheduler's first step, one batch: claims up to `batch`
    /// subscriptions due at `now` and prepares what `planner` finds due
    /// for each, in one transaction. Fewer than `batch` claimed: nothing
    /// else is due.
    pub async fn prepare_due(
        &self,
        now: DateTime<Utc>,
        batch: usize,
        planner: Planner,
    ) -> Result<Prepared, StoreError> {
        let backend = self.backend;
        self.writer
            .write(move |conn| {
                Box::pin(async move { prepare_due(conn, backend, now, batch, &planner).await })
            })
            .await
    }

    /// The scheduler's second step, one batch: claims up to `batch`
    /// invitations whose window closed at or before `closed_before` and
    /// settles them at `now` (a non-response with code 04 for each with
    /// responses not filled out), in one transaction. Fewer than `batch`
    /// claimed: nothing else is due.
    pub async fn settle_expired(
        &self,
        closed_before: DateTime<Utc>,
        now: DateTime<Utc>,
        batch: usize,
    ) -> Result<Settled, StoreError> {
        let backend = self.backend;
        self.writer
            .write(move |conn| {
                Box::pin(
                    async move { settle_expired(conn, backend, closed_before, now, batch).await },
                )
            })
            .await
    }
}

/// What makes a SELECT claim its rows for this transaction: on PostgreSQL
/// a row lock that other transactions skip instead of waiting for; on
/// SQLite nothing, as the transaction holds the one write lock.
fn claim(backend: Backend) -> &'static str {
    match backend {
        Backend::Postgres => " FOR UPDATE SKIP LOCKED",
        Backend::Sqlite => "",
    }
}

/// Claims up to `batch` due subscriptions and does their work.
async fn prepare_due(
    conn: &mut AnyConnection,
    backend: Backend,
    now: DateTime<Utc>,
    batch: usize,
    planner: &Planner,
) -> Result<Prepared, StoreError> {
    let lock = claim(backend);
    let sql = format!(
        "SELECT {SUBSCRIPTION_COLUMNS} FROM protocol_subscriptions s \
         WHERE s.next_due_at <= $1 AND s.stopped_at IS NULL ORDER BY s.next_due_at, s.id LIMIT $2{lock}"
    );
    let rows: Vec<SubscriptionRow> = sqlx::query_as(&sql)
        .bind(to_millis(now))
        .bind(i64::try_from(batch).unwrap_or(i64::MAX))
        .fetch_all(&mut *conn)
        .await?;
    let due = subscriptions(rows)?;
    let plans: Vec<Plan> = due.iter().map(|s| planner(s)).collect();
    let work: Vec<(&Subscription, &Plan)> = due.iter().zip(&plans).collect();
    let mut counts = apply(conn, backend, &work, now).await?;
    counts.subscriptions = due.len();
    Ok(counts)
}

/// Rows per multi-row INSERT: invitations have 7 parameters, responses 14,
/// far below the parameter limits of both databases.
const CHUNK: usize = 256;

/// Prepares the plans' occurrences and records when each subscription next
/// needs the scheduler.
async fn apply(
    conn: &mut AnyConnection,
    backend: Backend,
    work: &[(&Subscription, &Plan)],
    now: DateTime<Utc>,
) -> Result<Prepared, StoreError> {
    let now_ms = to_millis(now);
    let mut counts = Prepared::default();
    // Invitations: one per occurrence; those already there (another tick
    // got to them) come back from no INSERT and get no responses.
    let occurrences: Vec<(&Subscription, &PlannedOccurrence)> = work
        .iter()
        .flat_map(|(s, plan)| plan.occurrences.iter().map(move |o| (*s, o)))
        .collect();
    let mut made: HashMap<(i64, i64, i64), i64> = HashMap::with_capacity(occurrences.len());
    for chunk in occurrences.chunks(CHUNK) {
        let mut script = Script::new(backend);
        script.sql(
            "INSERT INTO invitations (dossier_id, respondent_id, protocol_subscription_id, measurement_id, open_from, open_till, created_at) VALUES ",
        );
        for (n, (s, o)) in chunk.iter().enumerate() {
            script
                .sql(if n == 0 { "(" } else { ", (" })
                .bind(s.dossier_id.0)
                .sql(", ")
                .bind(s.respondent_id.0)
                .sql(", ")
                .bind(s.id.0)
                .sql(", ")
                .bind(o.measurement_id.0)
                .sql(", ")
                .bind(to_millis(o.open_from))
                .sql(", ")
                .bind(to_millis(o.open_till))
                .sql(", ")
                .bind(now_ms)
                .sql(")");
        }
        script.sql(
            " ON CONFLICT (protocol_subscription_id, measurement_id, open_from) DO NOTHING \
             RETURNING id, protocol_subscription_id, measurement_id, open_from",
        );
        for row in script.fetch_all(conn).await? {
            made.insert(
                (row.try_get(1)?, row.try_get(2)?, row.try_get(3)?),
                row.try_get(0)?,
            );
        }
    }
    counts.invitations = made.len();

    // Responses: one per questionnaire of each invitation made.
    let mut rows = Vec::new();
    for (s, o) in &occurrences {
        let key = (s.id.0, o.measurement_id.0, to_millis(o.open_from));
        if let Some(invitation) = made.get(&key) {
            for questionnaire in &o.questionnaire_ids {
                rows.push((*s, *o, *invitation, questionnaire.0));
            }
        }
    }
    counts.responses = rows.len();
    let variants: HashMap<i64, (String, String)> = work
        .iter()
        .map(|(s, _)| {
            (
                s.id.0,
                (
                    Value::Object(s.variant.flags_json()).to_string(),
                    Value::Object(s.variant.textvars_json()).to_string(),
                ),
            )
        })
        .collect();
    for chunk in rows.chunks(CHUNK) {
        let mut script = Script::new(backend);
        script.sql(
            "INSERT INTO responses (dossier_id, respondent_id, questionnaire_id, completer_type, flags, textvars, \
             measurement_id, protocol_subscription_id, invitation_id, open_from, open_till, requesters, created_at, updated_at) VALUES ",
        );
        for (n, (s, o, invitation, questionnaire)) in chunk.iter().enumerate() {
            let (flags, textvars) = variants.get(&s.id.0).cloned().unwrap_or_default();
            script
                .sql(if n == 0 { "(" } else { ", (" })
                .bind(s.dossier_id.0)
                .sql(", ")
                .bind(s.respondent_id.0)
                .sql(", ")
                .bind(*questionnaire)
                .sql(", ")
                .bind(COMPLETER_PATIENT)
                .sql(", ")
                .bind(flags)
                .sql(", ")
                .bind(textvars)
                .sql(", ")
                .bind(o.measurement_id.0)
                .sql(", ")
                .bind(s.id.0)
                .sql(", ")
                .bind(*invitation)
                .sql(", ")
                .bind(to_millis(o.open_from))
                .sql(", ")
                .bind(to_millis(o.open_till))
                .sql(", '[]', ")
                .bind(now_ms)
                .sql(", ")
                .bind(now_ms)
                .sql(")");
        }
        script.execute(conn).await?;
    }

    // When each subscription next needs the scheduler, and which stopped:
    // one UPDATE per chunk, CASE by id, so that both databases find the
    // rows through the primary key.
    for chunk in work.chunks(CHUNK) {
        let mut script = Script::new(backend);
        script.sql("UPDATE protocol_subscriptions SET next_due_at = ");
        case_by_id(&mut script, chunk, |plan| plan.next_due_at);
        script.sql(", stopped_at = COALESCE(stopped_at, ");
        case_by_id(&mut script, chunk, |plan| plan.stopped_at);
        script
            .sql(") WHERE id IN (")
            .list(chunk.iter().map(|(s, _)| s.id.0))
            .sql(")");
        script.execute(conn).await?;
    }
    counts.missed = work.iter().map(|(_, p)| p.missed).sum();
    counts.stopped = work.iter().filter(|(_, p)| p.stopped_at.is_some()).count();
    Ok(counts)
}

/// `CASE id WHEN <subscription> THEN <time> ... END` over `chunk`, the
/// time each plan gives.
fn case_by_id(
    script: &mut Script,
    chunk: &[(&Subscription, &Plan)],
    time: impl Fn(&Plan) -> Option<DateTime<Utc>>,
) {
    script.sql("CASE id");
    for (s, plan) in chunk {
        script
            .sql(" WHEN ")
            .bind(s.id.0)
            .sql(" THEN ")
            .bind(time(plan).map(to_millis));
    }
    script.sql(" END");
}

/// Claims up to `batch` invitations whose window closed at or before
/// `closed_before` and are not yet settled; registers a non-response with
/// code 04 for each that has responses neither completed nor withdrawn,
/// covering those responses; marks them settled at `now`.
async fn settle_expired(
    conn: &mut AnyConnection,
    backend: Backend,
    closed_before: DateTime<Utc>,
    now: DateTime<Utc>,
    batch: usize,
) -> Result<Settled, StoreError> {
    let lock = claim(backend);
    let sql = format!(
        "SELECT id, dossier_id FROM invitations WHERE settled_at IS NULL AND open_till IS NOT NULL AND open_till <= $1 \
         ORDER BY open_till, id LIMIT $2{lock}"
    );
    let expired: Vec<(i64, i64)> = sqlx::query_as(&sql)
        .bind(to_millis(closed_before))
        .bind(i64::try_from(batch).unwrap_or(i64::MAX))
        .fetch_all(&mut *conn)
        .await?;
    let mut counts = Settled {
        invitations: expired.len(),
        non_responses: 0,
    };
    if expired.is_empty() {
        return Ok(counts);
    }
    let mut unfilled: HashMap<i64, Vec<ResponseId>> = HashMap::new();
    for chunk in expired.chunks(CHUNK) {
        let mut script = Script::new(backend);
        script.sql(
            "SELECT id, invitation_id FROM responses WHERE completed_at IS NULL AND withdrawn_at IS NULL \
             AND non_response_id IS NULL AND invitation_id IN (",
        );
        script
            .list(chunk.iter().map(|(invitation, _)| *invitation))
            .sql(") ORDER BY id");
        for row in script.fetch_all(conn).await? {
            unfilled
                .entry(row.try_get(1)?)
                .or_default()
                .push(ResponseId(row.try_get(0)?));
        }
    }
    for (invitation, dossier) in &expired {
        if let Some(responses) = unfilled.get(invitation) {
            insert_non_response(
                conn,
                DossierId(*dossier),
                EXPIRED_REASON,
                "",
                now,
                responses,
            )
            .await?;
            counts.non_responses += 1;
        }
    }
    for chunk in expired.chunks(CHUNK) {
        let mut script = Script::new(backend);
        script
            .sql("UPDATE invitations SET settled_at = ")
            .bind(to_millis(now))
            .sql(" WHERE id IN (");
        script
            .list(chunk.iter().map(|(invitation, _)| *invitation))
            .sql(")");
        script.execute(conn).await?;
    }
    Ok(counts)
}
