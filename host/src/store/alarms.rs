//! Alarms as records (docs/api/alarms.md): raised in the transaction that
//! stores the outcome raising them, whatever path stored it (a POST, a PUT,
//! a fill-out page, a re-scoring), so an acknowledged write's alarm is on
//! disk with it; acknowledged, resolved and escalated each in one
//! transaction with its history row (`alarm_events`) and its access-log
//! row. A deleted response closes its alarms in the DELETE's transaction.
//!
//! `alarm_events` is append-only here: one row per step, its id the
//! step's stable id. A raised alarm and an escalation also queue their
//! delivery (`alarm_deliveries.rs`) in the same transaction. Which
//! outcome raises what, and which step may follow which, is
//! `domain/alarm.rs`'s.

use chrono::{DateTime, Utc};
use sqlx::{AnyConnection, Row as _};

use super::access_log::{self, AccessEntry};
use super::alarm_deliveries;
use super::{Backend, Store, StoreError};
use crate::domain::alarm::{
    Alarm, AlarmAction, AlarmClose, AlarmEvent, AlarmPolicy, AlarmState, Earlier, Raise,
    StepRefused, may_acknowledge, may_resolve, reconcile,
};
use crate::domain::ids::{AlarmId, DossierId, ResponseId};
use crate::domain::outcome::Outcome;
use crate::domain::time::{from_millis, to_millis};

/// The client recorded in the access log for a step no request took (the
/// scheduler's escalation, a re-scoring command).
pub const SERVICE_CLIENT: &str = "service";

/// An outcome just stored, which may raise an alarm.
#[derive(Debug)]
pub(super) struct Raising<'a> {
    pub dossier: DossierId,
    pub epd_id: &'a str,
    pub response: ResponseId,
    pub questionnaire_key: &'a str,
    pub outcome: &'a Outcome,
    pub at: DateTime<Utc>,
    /// The access-log row of the request that stored it (its caller,
    /// client, request id and status); None for a step no request took.
    pub by: Option<&'a AccessEntry>,
}

/// Which alarms a list holds (docs/api/alarms.md#list-alarms).
#[derive(Debug, Clone, Default)]
pub struct AlarmFilter {
    /// Only this dossier's (its EPD id).
    pub dossier: Option<String>,
    pub state: Option<AlarmState>,
    pub questionnaire_key: Option<String>,
    /// Only those waiting for acknowledgement past their deadline at this
    /// time.
    pub overdue_at: Option<DateTime<Utc>>,
    /// Only those after this id.
    pub after: Option<AlarmId>,
    /// At most this many.
    pub limit: Option<u32>,
}

/// What an acknowledgement or resolution came to.
#[derive(Debug)]
pub enum AlarmStep {
    /// Taken; the alarm as it is now.
    Done(Box<Alarm>),
    /// The dossier has no such alarm.
    NotFound,
    /// The alarm is past it.
    Refused(StepRefused),
}

/// Who takes a step: the professional named, their note, and the request's
/// access-log row (its caller and client).
#[derive(Debug, Clone)]
pub struct StepBy {
    pub professional: String,
    pub note: Option<String>,
    pub access: AccessEntry,
}

/// One step of an alarm's history (`alarm_events`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlarmHistory {
    /// The step's own id: stable (its deliveries name it).
    pub id: i64,
    /// `raised`, `acknowledged`, `escalated` or `resolved`.
    pub event: String,
    pub at: DateTime<Utc>,
    /// The caller's token, for a step a request took.
    pub consumer_key: Option<String>,
    pub professional: Option<String>,
    pub note: Option<String>,
    /// Why it was resolved.
    pub reason: Option<String>,
}

#[derive(sqlx::FromRow)]
struct HistoryRow {
    id: i64,
    event: String,
    at: i64,
    consumer_key: Option<String>,
    professional: Option<String>,
    note: Option<String>,
    reason: Option<String>,
}

/// How many alarms wait in each state, and how many of those are overdue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AlarmCounts {
    pub open: u64,
    pub acknowledged: u64,
    pub escalated: u64,
    /// Open or escalated, past their deadline.
    pub overdue: u64,
}

const SELECT: &str = "SELECT a.id, d.epd_id, a.response_id, a.questionnaire_key, a.action, a.question_keys, \
     a.state, a.raised_at, a.deadline, a.acknowledged_at, a.acknowledged_by, a.acknowledged_note, \
     a.escalated_at, a.resolved_at, a.resolved_reason, a.resolved_by, a.resolved_note \
     FROM alarms a JOIN dossiers d ON d.id = a.dossier_id";

#[derive(sqlx::FromRow)]
struct AlarmRow {
    id: i64,
    epd_id: String,
    response_id: i64,
    questionnaire_key: String,
    action: String,
    question_keys: String,
    state: String,
    raised_at: i64,
    deadline: i64,
    acknowledged_at: Option<i64>,
    acknowledged_by: Option<String>,
    acknowledged_note: Option<String>,
    escalated_at: Option<i64>,
    resolved_at: Option<i64>,
    resolved_reason: Option<String>,
    resolved_by: Option<String>,
    resolved_note: Option<String>,
}

impl TryFrom<AlarmRow> for Alarm {
    type Error = StoreError;

    fn try_from(r: AlarmRow) -> Result<Alarm, StoreError> {
        let corrupt = |what: &str| StoreError::Corrupt(format!("alarm {}: {what}", r.id));
        Ok(Alarm {
            id: AlarmId(r.id),
            action: AlarmAction::parse(&r.action).ok_or_else(|| corrupt("its action"))?,
            state: AlarmState::parse(&r.state).ok_or_else(|| corrupt("its state"))?,
            question_keys: serde_json::from_str(&r.question_keys)
                .map_err(|_| corrupt("its question keys"))?,
            dossier: r.epd_id,
            response_id: ResponseId(r.response_id),
            questionnaire_key: r.questionnaire_key,
            raised_at: from_millis(r.raised_at),
            deadline: from_millis(r.deadline),
            acknowledged_at: r.acknowledged_at.map(from_millis),
            acknowledged_by: r.acknowledged_by,
            acknowledged_note: r.acknowledged_note,
            escalated_at: r.escalated_at.map(from_millis),
            resolved_at: r.resolved_at.map(from_millis),
            resolved_reason: r.resolved_reason,
            resolved_by: r.resolved_by,
            resolved_note: r.resolved_note,
        })
    }
}

/// The access-log row of a step of alarm `id` of dossier `epd_id` at `at`:
/// the caller, client and request id of `by` (the request that took it, or
/// none: the service), action `alarm <id> <event>` and what follows.
fn step_row(
    by: Option<&AccessEntry>,
    epd_id: &str,
    at: DateTime<Utc>,
    id: AlarmId,
    event: AlarmEvent,
    detail: &str,
) -> AccessEntry {
    let action = format!("alarm {id} {}{detail}", event.as_str());
    match by {
        Some(by) => AccessEntry {
            at,
            dossier: Some(epd_id.to_owned()),
            action,
            refusals: None,
            ..by.clone()
        },
        None => AccessEntry {
            at,
            dossier: Some(epd_id.to_owned()),
            action,
            status: 0,
            client: SERVICE_CLIENT.to_owned(),
            ..AccessEntry::default()
        },
    }
}

/// One step of an alarm's history.
struct Step<'a> {
    alarm: AlarmId,
    event: AlarmEvent,
    at: DateTime<Utc>,
    consumer_key: Option<&'a str>,
    professional: Option<&'a str>,
    note: Option<&'a str>,
    reason: Option<&'a str>,
}

/// Records `step`; its id.
async fn record(conn: &mut AnyConnection, step: Step<'_>) -> Result<i64, StoreError> {
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO alarm_events (alarm_id, event, at, consumer_key, professional, note, reason) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
    )
    .bind(step.alarm.0)
    .bind(step.event.as_str())
    .bind(to_millis(step.at))
    .bind(step.consumer_key)
    .bind(step.professional)
    .bind(step.note)
    .bind(step.reason)
    .fetch_one(&mut *conn)
    .await?;
    Ok(id)
}

/// Inserts the alarm `raise` of `item`, its history row and its delivery
/// (by `policy`); its access-log row goes into `rows`.
async fn insert_raised(
    conn: &mut AnyConnection,
    policy: &AlarmPolicy,
    item: &Raising<'_>,
    raise: &Raise,
    rows: &mut Vec<AccessEntry>,
) -> Result<AlarmId, StoreError> {
    let keys = serde_json::to_string(&raise.question_keys)
        .map_err(|e| StoreError::Corrupt(format!("question keys: {e}")))?;
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO alarms (dossier_id, response_id, questionnaire_key, action, question_keys, state, raised_at, deadline) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
    )
    .bind(item.dossier.0)
    .bind(item.response.0)
    .bind(item.questionnaire_key)
    .bind(raise.action.as_str())
    .bind(keys)
    .bind(AlarmState::Open.as_str())
    .bind(to_millis(item.at))
    .bind(to_millis(raise.deadline))
    .fetch_one(&mut *conn)
    .await?;
    let id = AlarmId(id);
    let consumer_key = item.by.and_then(|b| b.consumer_key.as_deref());
    let event = record(
        conn,
        Step {
            alarm: id,
            event: AlarmEvent::Raised,
            at: item.at,
            consumer_key,
            professional: None,
            note: None,
            reason: None,
        },
    )
    .await?;
    alarm_deliveries::enqueue(conn, policy, event, consumer_key, item.at).await?;
    let detail = format!(" by response {}", item.response);
    rows.push(step_row(
        item.by,
        item.epd_id,
        item.at,
        id,
        AlarmEvent::Raised,
        &detail,
    ));
    Ok(id)
}

/// Raises the alarms the outcomes just stored raise (by `policy`), in the
/// caller's transaction, with their history and access-log rows. How many.
pub(super) async fn raise(
    conn: &mut AnyConnection,
    backend: Backend,
    policy: &AlarmPolicy,
    items: &[Raising<'_>],
) -> Result<usize, StoreError> {
    let mut rows = Vec::new();
    for item in items {
        if let Some(raise) = policy.raise(item.questionnaire_key, item.outcome, item.at) {
            insert_raised(conn, policy, item, &raise, &mut rows).await?;
        }
    }
    let refs: Vec<&AccessEntry> = rows.iter().collect();
    access_log::insert(conn, backend, &refs).await?;
    Ok(rows.len())
}

/// Resolves alarm `id` (live) with `reason`, recording the step; its
/// access-log row goes into `rows`. False when it was not live any more.
#[allow(clippy::too_many_arguments)]
async fn close(
    conn: &mut AnyConnection,
    id: AlarmId,
    epd_id: &str,
    reason: AlarmClose,
    by: Option<&AccessEntry>,
    professional: Option<&str>,
    note: Option<&str>,
    at: DateTime<Utc>,
    rows: &mut Vec<AccessEntry>,
) -> Result<bool, StoreError> {
    let consumer_key = by.and_then(|b| b.consumer_key.clone());
    let done = sqlx::query(
        "UPDATE alarms SET state = $1, resolved_at = $2, resolved_reason = $3, resolved_by = $4, \
         resolved_note = $5, resolved_token = $6 WHERE id = $7 AND state <> $1",
    )
    .bind(AlarmState::Resolved.as_str())
    .bind(to_millis(at))
    .bind(reason.as_str())
    .bind(professional)
    .bind(note)
    .bind(consumer_key.as_deref())
    .bind(id.0)
    .execute(&mut *conn)
    .await?;
    if done.rows_affected() == 0 {
        return Ok(false);
    }
    record(
        conn,
        Step {
            alarm: id,
            event: AlarmEvent::Resolved,
            at,
            consumer_key: consumer_key.as_deref(),
            professional,
            note,
            reason: Some(reason.as_str()),
        },
    )
    .await?;
    let detail = match professional {
        Some(p) => format!(" ({}) by {p:?}", reason.as_str()),
        None => format!(" ({})", reason.as_str()),
    };
    rows.push(step_row(by, epd_id, at, id, AlarmEvent::Resolved, &detail));
    Ok(true)
}

/// Closes the live alarms of the responses `where_responses` selects (an
/// SQL condition on `responses r`, `$1` and `$2` bound to `params`) with
/// `reason`, in the caller's transaction, before they go: a response
/// deleted. How many.
pub(super) async fn close_of_responses(
    conn: &mut AnyConnection,
    backend: Backend,
    where_responses: &str,
    params: (&str, &str),
    reason: AlarmClose,
    by: Option<&AccessEntry>,
    at: DateTime<Utc>,
) -> Result<usize, StoreError> {
    let sql = format!(
        "SELECT a.id, d.epd_id FROM alarms a JOIN dossiers d ON d.id = a.dossier_id \
         WHERE a.state <> 'resolved' AND a.response_id IN (SELECT r.id FROM responses r WHERE {where_responses}) \
         ORDER BY a.id"
    );
    let live: Vec<(i64, String)> = sqlx::query_as(&sql)
        .bind(params.0)
        .bind(params.1)
        .fetch_all(&mut *conn)
        .await?;
    let mut rows = Vec::new();
    for (id, epd_id) in live {
        close(
            conn,
            AlarmId(id),
            &epd_id,
            reason,
            by,
            None,
            None,
            at,
            &mut rows,
        )
        .await?;
    }
    let refs: Vec<&AccessEntry> = rows.iter().collect();
    access_log::insert(conn, backend, &refs).await?;
    Ok(rows.len())
}

/// After re-scoring response `response` to `outcome` at `at`: opens the
/// alarm the new outcome raises and closes those it no longer raises
/// (`domain::alarm::reconcile`), recorded, in the caller's transaction.
pub(super) async fn rescored(
    conn: &mut AnyConnection,
    backend: Backend,
    policy: &AlarmPolicy,
    response: ResponseId,
    outcome: &Outcome,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let found = sqlx::query(
        "SELECT r.dossier_id, d.epd_id, q.key FROM responses r JOIN dossiers d ON d.id = r.dossier_id \
         JOIN questionnaires q ON q.id = r.questionnaire_id WHERE r.id = $1",
    )
    .bind(response.0)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(found) = found else { return Ok(()) };
    let (dossier, epd_id, key): (i64, String, String) =
        (found.try_get(0)?, found.try_get(1)?, found.try_get(2)?);
    let earlier: Vec<(i64, String, String, Option<String>)> = sqlx::query_as(
        "SELECT id, action, state, resolved_reason FROM alarms WHERE response_id = $1 ORDER BY id",
    )
    .bind(response.0)
    .fetch_all(&mut *conn)
    .await?;
    let earlier: Vec<Earlier> = earlier
        .into_iter()
        .filter_map(|(id, action, state, resolved_reason)| {
            Some(Earlier {
                id: AlarmId(id),
                action: AlarmAction::parse(&action)?,
                state: AlarmState::parse(&state)?,
                resolved_reason,
            })
        })
        .collect();
    let raise = policy.raise(&key, outcome, at);
    let plan = reconcile(raise.as_ref(), &earlier);
    let mut rows = Vec::new();
    for id in plan.close {
        close(
            conn,
            id,
            &epd_id,
            AlarmClose::Rescored,
            None,
            None,
            None,
            at,
            &mut rows,
        )
        .await?;
    }
    if let (true, Some(raise)) = (plan.raise, raise) {
        let item = Raising {
            dossier: DossierId(dossier),
            epd_id: &epd_id,
            response,
            questionnaire_key: &key,
            outcome,
            at,
            by: None,
        };
        insert_raised(conn, policy, &item, &raise, &mut rows).await?;
    }
    let refs: Vec<&AccessEntry> = rows.iter().collect();
    access_log::insert(conn, backend, &refs).await
}

pub(super) async fn alarm_by_id(
    conn: &mut AnyConnection,
    id: AlarmId,
) -> Result<Alarm, StoreError> {
    let row: AlarmRow = sqlx::query_as(&format!("{SELECT} WHERE a.id = $1"))
        .bind(id.0)
        .fetch_one(&mut *conn)
        .await?;
    Alarm::try_from(row)
}

/// Which step a caller asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    Acknowledge,
    Resolve,
}

impl Store {
    /// The alarms `filter` selects, by id.
    pub async fn list_alarms(&self, filter: &AlarmFilter) -> Result<Vec<Alarm>, StoreError> {
        let sql = format!(
            "{SELECT} WHERE ($1 = '' OR d.epd_id = $2) AND ($3 = '' OR a.state = $4) \
             AND ($5 = '' OR a.questionnaire_key = $6) \
             AND ($7 = 0 OR (a.state IN ('open', 'escalated') AND a.deadline <= $8)) \
             AND a.id > $9 ORDER BY a.id LIMIT $10"
        );
        let dossier = filter.dossier.clone().unwrap_or_default();
        let state = filter.state.map_or("", AlarmState::as_str);
        let key = filter.questionnaire_key.clone().unwrap_or_default();
        let rows: Vec<AlarmRow> = sqlx::query_as(&sql)
            .bind(dossier.clone())
            .bind(dossier)
            .bind(state)
            .bind(state)
            .bind(key.clone())
            .bind(key)
            .bind(i64::from(filter.overdue_at.is_some()))
            .bind(filter.overdue_at.map_or(0, to_millis))
            .bind(filter.after.map_or(0, |a| a.0))
            .bind(filter.limit.map_or(i64::MAX, i64::from))
            .fetch_all(&*self.pool)
            .await?;
        rows.into_iter().map(Alarm::try_from).collect()
    }

    /// Alarm `id` of dossier `epd_id`, if the dossier has it.
    pub async fn alarm(&self, epd_id: &str, id: AlarmId) -> Result<Option<Alarm>, StoreError> {
        let row: Option<AlarmRow> =
            sqlx::query_as(&format!("{SELECT} WHERE a.id = $1 AND d.epd_id = $2"))
                .bind(id.0)
                .bind(epd_id)
                .fetch_optional(&*self.pool)
                .await?;
        row.map(Alarm::try_from).transpose()
    }

    /// Acknowledges alarm `id` of dossier `epd_id` at `now`: the
    /// professional, their note and the caller's token recorded, with the
    /// request's access-log row (its status that of the answer) and the
    /// step's, in one transaction.
    pub async fn acknowledge_alarm(
        &self,
        epd_id: String,
        id: AlarmId,
        by: StepBy,
        now: DateTime<Utc>,
    ) -> Result<AlarmStep, StoreError> {
        self.alarm_step(epd_id, id, by, now, Asked::Acknowledge)
            .await
    }

    /// Resolves alarm `id` of dossier `epd_id` at `now`, as
    /// [`Store::acknowledge_alarm`] acknowledges.
    pub async fn resolve_alarm(
        &self,
        epd_id: String,
        id: AlarmId,
        by: StepBy,
        now: DateTime<Utc>,
    ) -> Result<AlarmStep, StoreError> {
        self.alarm_step(epd_id, id, by, now, Asked::Resolve).await
    }

    async fn alarm_step(
        &self,
        epd_id: String,
        id: AlarmId,
        by: StepBy,
        now: DateTime<Utc>,
        asked: Asked,
    ) -> Result<AlarmStep, StoreError> {
        let backend = self.backend;
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let row: Option<AlarmRow> =
                        sqlx::query_as(&format!("{SELECT} WHERE a.id = $1 AND d.epd_id = $2"))
                            .bind(id.0)
                            .bind(&epd_id)
                            .fetch_optional(&mut *conn)
                            .await?;
                    let mut request = by.access.clone();
                    let Some(row) = row else {
                        request.status = 404;
                        access_log::insert(conn, backend, &[&request]).await?;
                        return Ok(AlarmStep::NotFound);
                    };
                    let alarm = Alarm::try_from(row)?;
                    let allowed = match asked {
                        Asked::Acknowledge => may_acknowledge(alarm.state),
                        Asked::Resolve => may_resolve(alarm.state),
                    };
                    let refused = |request: &mut AccessEntry, why| {
                        request.status = 422;
                        AlarmStep::Refused(why)
                    };
                    if let Err(why) = allowed {
                        let step = refused(&mut request, why);
                        access_log::insert(conn, backend, &[&request]).await?;
                        return Ok(step);
                    }
                    request.status = 200;
                    let mut rows = vec![request.clone()];
                    let taken = match asked {
                        Asked::Acknowledge => {
                            acknowledge(conn, &alarm, &by, &request, now, &mut rows).await?
                        }
                        Asked::Resolve => {
                            close(
                                conn,
                                alarm.id,
                                &alarm.dossier,
                                AlarmClose::Resolved,
                                Some(&request),
                                Some(&by.professional),
                                by.note.as_deref(),
                                now,
                                &mut rows,
                            )
                            .await?
                        }
                    };
                    if !taken {
                        // Another host took a step since the read above.
                        let now_state = alarm_by_id(conn, alarm.id).await?.state;
                        let why = match asked {
                            Asked::Acknowledge => may_acknowledge(now_state),
                            Asked::Resolve => may_resolve(now_state),
                        }
                        .err()
                        .unwrap_or(StepRefused::AlreadyResolved);
                        let step = refused(&mut request, why);
                        access_log::insert(conn, backend, &[&request]).await?;
                        return Ok(step);
                    }
                    let refs: Vec<&AccessEntry> = rows.iter().collect();
                    access_log::insert(conn, backend, &refs).await?;
                    alarm_by_id(conn, alarm.id)
                        .await
                        .map(|a| AlarmStep::Done(Box::new(a)))
                })
            })
            .await
    }

    /// Escalates at most `batch` open alarms whose deadline passed by `now`,
    /// each recorded and its delivery queued (to where its raising went:
    /// by the token that stored the response); how many. The batch is
    /// claimed in the transaction that escalates it (PostgreSQL: rows
    /// another host holds are skipped).
    pub async fn escalate_due(
        &self,
        now: DateTime<Utc>,
        batch: usize,
    ) -> Result<usize, StoreError> {
        let (backend, policy) = (self.backend, self.alarms.clone());
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let lock = match backend {
                        Backend::Postgres => " FOR UPDATE OF a SKIP LOCKED",
                        Backend::Sqlite => "",
                    };
                    let due: Vec<(i64, String, Option<String>)> = sqlx::query_as(&format!(
                        "SELECT a.id, d.epd_id, (SELECT e.consumer_key FROM alarm_events e \
                         WHERE e.alarm_id = a.id AND e.event = 'raised' ORDER BY e.id LIMIT 1) \
                         FROM alarms a JOIN dossiers d ON d.id = a.dossier_id \
                         WHERE a.state = 'open' AND a.deadline <= $1 ORDER BY a.id LIMIT $2{lock}"
                    ))
                    .bind(to_millis(now))
                    .bind(i64::try_from(batch).unwrap_or(i64::MAX))
                    .fetch_all(&mut *conn)
                    .await?;
                    let mut rows = Vec::new();
                    for (id, epd_id, raised_by) in due {
                        let done = sqlx::query(
                            "UPDATE alarms SET state = 'escalated', escalated_at = $1 WHERE id = $2 AND state = 'open'",
                        )
                        .bind(to_millis(now))
                        .bind(id)
                        .execute(&mut *conn)
                        .await?;
                        if done.rows_affected() == 0 {
                            continue;
                        }
                        let id = AlarmId(id);
                        let event = record(
                            conn,
                            Step {
                                alarm: id,
                                event: AlarmEvent::Escalated,
                                at: now,
                                consumer_key: None,
                                professional: None,
                                note: None,
                                reason: None,
                            },
                        )
                        .await?;
                        alarm_deliveries::enqueue(conn, &policy, event, raised_by.as_deref(), now)
                            .await?;
                        rows.push(step_row(
                            None,
                            &epd_id,
                            now,
                            id,
                            AlarmEvent::Escalated,
                            " (deadline passed unacknowledged)",
                        ));
                    }
                    let refs: Vec<&AccessEntry> = rows.iter().collect();
                    access_log::insert(conn, backend, &refs).await?;
                    Ok(rows.len())
                })
            })
            .await
    }

    /// How many alarms wait in each state at `now`, and how many are
    /// overdue.
    pub async fn alarm_counts(&self, now: DateTime<Utc>) -> Result<AlarmCounts, StoreError> {
        let rows: Vec<(String, i64, i64)> = sqlx::query_as(
            "SELECT state, COUNT(*), SUM(CASE WHEN deadline <= $1 AND state IN ('open', 'escalated') THEN 1 ELSE 0 END) \
             FROM alarms WHERE state <> 'resolved' GROUP BY state",
        )
        .bind(to_millis(now))
        .fetch_all(&*self.pool)
        .await?;
        let mut counts = AlarmCounts::default();
        for (state, n, overdue) in rows {
            let n = u64::try_from(n).unwrap_or_default();
            match AlarmState::parse(&state) {
                Some(AlarmState::Open) => counts.open = n,
                Some(AlarmState::Acknowledged) => counts.acknowledged = n,
                Some(AlarmState::Escalated) => counts.escalated = n,
                _ => {}
            }
            counts.overdue += u64::try_from(overdue).unwrap_or_default();
        }
        Ok(counts)
    }

    /// The history of alarm `id`: its steps in order. For tests and
    /// operators.
    pub async fn alarm_events(&self, id: AlarmId) -> Result<Vec<AlarmHistory>, StoreError> {
        let rows: Vec<HistoryRow> = sqlx::query_as(
            "SELECT id, event, at, consumer_key, professional, note, reason FROM alarm_events \
             WHERE alarm_id = $1 ORDER BY id",
        )
        .bind(id.0)
        .fetch_all(&*self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| AlarmHistory {
                id: r.id,
                event: r.event,
                at: from_millis(r.at),
                consumer_key: r.consumer_key,
                professional: r.professional,
                note: r.note,
                reason: r.reason,
            })
            .collect())
    }
}

/// Acknowledges `alarm` (open or escalated when read) for `by`; false when
/// another step came first.
async fn acknowledge(
    conn: &mut AnyConnection,
    alarm: &Alarm,
    by: &StepBy,
    request: &AccessEntry,
    now: DateTime<Utc>,
    rows: &mut Vec<AccessEntry>,
) -> Result<bool, StoreError> {
    let done = sqlx::query(
        "UPDATE alarms SET state = 'acknowledged', acknowledged_at = $1, acknowledged_by = $2, \
         acknowledged_note = $3, acknowledged_token = $4 WHERE id = $5 AND state IN ('open', 'escalated')",
    )
    .bind(to_millis(now))
    .bind(by.professional.as_str())
    .bind(by.note.as_deref())
    .bind(request.consumer_key.as_deref())
    .bind(alarm.id.0)
    .execute(&mut *conn)
    .await?;
    if done.rows_affected() == 0 {
        return Ok(false);
    }
    record(
        conn,
        Step {
            alarm: alarm.id,
            event: AlarmEvent::Acknowledged,
            at: now,
            consumer_key: request.consumer_key.as_deref(),
            professional: Some(&by.professional),
            note: by.note.as_deref(),
            reason: None,
        },
    )
    .await?;
    let detail = format!(" by {:?}", by.professional);
    rows.push(step_row(
        Some(request),
        &alarm.dossier,
        now,
        alarm.id,
        AlarmEvent::Acknowledged,
        &detail,
    ));
    Ok(true)
}
