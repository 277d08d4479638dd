//! Fill-out requests: an invitation of questionnaires for a dossier's
//! patient, made on request, and the outbox of callbacks that tell the EPD
//! when it opens, at each reminder, and when it expires.
//!
//! Callbacks are claimed a few at a time: a claim counts an attempt and
//! pushes `next_attempt_at` past a lease, in a short transaction of its
//! own; the HTTP call happens outside any transaction, and its outcome is
//! recorded afterwards (delivered, or the next attempt after a backoff). So
//! two hosts never send the same callback at once, and a callback that was
//! accepted is not sent again; only a host that dies between a successful
//! call and recording it can cause a repeat, after the lease. Each callback
//! has an event id, made with it and the same on every attempt, so a
//! receiver can drop such a repeat. What this outbox shares with the alarm
//! deliveries' is `outbox.rs`'s.

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use super::access_log::AccessEntry;
use super::outbox::{Outbox, event_id};
use super::{Store, StoreError, StoredSecret, dossiers};
use crate::domain::ids::{QuestionnaireId, RespondentId};
use crate::domain::response::COMPLETER_PATIENT;
use crate::domain::time::to_millis;

/// A fill-out request to make, its fields checked.
#[derive(Debug, Clone)]
pub struct NewFillOutRequest {
    pub epd_id: String,
    /// The API token making the request: its webhook key signs the
    /// callbacks.
    pub consumer_key: String,
    pub questionnaire_ids: Vec<QuestionnaireId>,
    /// The respondent named by the request; None: the dossier's patient.
    pub respondent_id: Option<RespondentId>,
    pub callback_url: Option<String>,
    /// Seconds after `open_from`.
    pub reminders: Vec<i64>,
    pub open_from: DateTime<Utc>,
    pub open_till: DateTime<Utc>,
    /// The language (ISO 639-1) asked for the fill-out pages.
    pub language: Option<String>,
    pub now: DateTime<Utc>,
}

/// What making a fill-out request came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FillOutRequestResult {
    /// Made, with its id, for this respondent, whose link generation is
    /// the last number.
    Made(i64, RespondentId, i64),
    /// `respondent_id` is not a respondent of the dossier who can be asked.
    NoSuchRespondent,
}

/// A callback claimed for sending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedCallback {
    pub id: i64,
    pub fill_out_request_id: i64,
    pub epd_id: String,
    pub event: String,
    pub url: String,
    /// Attempts so far, this one included.
    pub attempts: i64,
    /// Who was asked: the callback carries their `completing_url`.
    pub respondent_id: RespondentId,
    /// The message id receivers deduplicate on: the same on every attempt.
    pub event_id: String,
    /// The webhook signing key of the token that made the request; None
    /// when it has none (made before keys existed, and not given one since).
    pub webhook_secret: Option<StoredSecret>,
    /// Their link generation, which the `completing_url` names.
    pub link_generation: i64,
    /// The consumer key of the token that made the request (the access
    /// log's caller of a callback); None if that token is gone.
    pub consumer_key: Option<String>,
}

impl ClaimedCallback {
    /// Whether the callback tells of something still to fill out (all
    /// but `expired`), so it carries the respondent's link.
    pub fn offers_link(&self) -> bool {
        self.event != EXPIRED
    }
}

/// A due callback with what sending it needs: id, request, EPD id, event,
/// callback URL, attempts so far, respondent, event id, webhook key, the
/// respondent's link generation, the token's consumer key.
type CallbackRow = (
    i64,
    i64,
    String,
    String,
    Option<String>,
    i64,
    i64,
    String,
    Option<String>,
    i64,
    Option<String>,
);

/// The events a fill-out request reports.
pub const OPENED: &str = "opened";
pub const REMINDER: &str = "reminder";
pub const EXPIRED: &str = "expired";

impl Store {
    /// Makes a fill-out request: the dossier and its patient on first
    /// write, one invitation with a response per questionnaire, and its
    /// callbacks, in one transaction.
    pub async fn create_fill_out_request(
        &self,
        new: NewFillOutRequest,
    ) -> Result<FillOutRequestResult, StoreError> {
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let now = to_millis(new.now);
                    // A named respondent must be the patient of an existing
                    // dossier; nothing is made otherwise.
                    if let Some(respondent) = new.respondent_id {
                        let found: Option<(i64,)> = sqlx::query_as(
                            "SELECT r.id FROM respondents r JOIN dossiers d ON d.id = r.dossier_id \
                             WHERE d.epd_id = $1 AND r.id = $2 AND r.respondent_type = 'patient'",
                        )
                        .bind(&new.epd_id)
                        .bind(respondent.0)
                        .fetch_optional(&mut *conn)
                        .await?;
                        if found.is_none() {
                            return Ok(FillOutRequestResult::NoSuchRespondent);
                        }
                    }
                    let (dossier, patient) = dossiers::ensure(conn, &new.epd_id, new.now).await?;
                    let (open_from, open_till) = (to_millis(new.open_from), to_millis(new.open_till));
                    let (request,): (i64,) = sqlx::query_as(
                        "INSERT INTO fill_out_requests (dossier_id, respondent_id, callback_url, reminders, open_from, open_till, created_at, \
                         token_id) VALUES ($1, $2, $3, $4, $5, $6, $7, (SELECT id FROM api_tokens WHERE consumer_key = $8)) RETURNING id",
                    )
                    .bind(dossier.0)
                    .bind(patient.0)
                    .bind(new.callback_url.clone())
                    .bind(Value::from(new.reminders.clone()).to_string())
                    .bind(open_from)
                    .bind(open_till)
                    .bind(now)
                    .bind(&new.consumer_key)
                    .fetch_one(&mut *conn)
                    .await?;
                    let (invitation,): (i64,) = sqlx::query_as(
                        "INSERT INTO invitations (dossier_id, respondent_id, fill_out_request_id, open_from, open_till, created_at) \
                         VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
                    )
                    .bind(dossier.0)
                    .bind(patient.0)
                    .bind(request)
                    .bind(open_from)
                    .bind(open_till)
                    .bind(now)
                    .fetch_one(&mut *conn)
                    .await?;
                    for questionnaire in &new.questionnaire_ids {
                        sqlx::query(
                            "INSERT INTO responses (dossier_id, respondent_id, questionnaire_id, completer_type, invitation_id, \
                             open_from, open_till, created_at, updated_at, fill_out_language) \
                             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9)",
                        )
                        .bind(dossier.0)
                        .bind(patient.0)
                        .bind(questionnaire.0)
                        .bind(COMPLETER_PATIENT)
                        .bind(invitation)
                        .bind(open_from)
                        .bind(open_till)
                        .bind(now)
                        .bind(new.language.clone())
                        .execute(&mut *conn)
                        .await?;
                    }
                    if new.callback_url.is_some() {
                        for (event, due) in callback_times(&new) {
                            sqlx::query(
                                "INSERT INTO callbacks (fill_out_request_id, event, due_at, next_attempt_at, event_id) VALUES ($1, $2, $3, $3, $4)",
                            )
                            .bind(request)
                            .bind(event)
                            .bind(due)
                            .bind(event_id())
                            .execute(&mut *conn)
                            .await?;
                        }
                    }
                    let (generation,): (i64,) =
                        sqlx::query_as("SELECT link_generation FROM respondents WHERE id = $1")
                            .bind(patient.0)
                            .fetch_one(&mut *conn)
                            .await?;
                    Ok(FillOutRequestResult::Made(request, patient, generation))
                })
            })
            .await
    }

    /// Withdraws a fill-out request of the dossier: its responses not
    /// completed are withdrawn and its callbacks not yet sent cancelled.
    /// False when the dossier has no such request (or it was withdrawn).
    pub async fn withdraw_fill_out_request(
        &self,
        epd_id: String,
        id: i64,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let found: Option<(i64,)> = sqlx::query_as(
                        "SELECT f.id FROM fill_out_requests f JOIN dossiers d ON d.id = f.dossier_id \
                         WHERE d.epd_id = $1 AND f.id = $2 AND f.withdrawn_at IS NULL",
                    )
                    .bind(&epd_id)
                    .bind(id)
                    .fetch_optional(&mut *conn)
                    .await?;
                    if found.is_none() {
                        return Ok(false);
                    }
                    // Each with $1 = now, $2 = the request.
                    for sql in [
                        "UPDATE fill_out_requests SET withdrawn_at = $1 WHERE id = $2",
                        "UPDATE responses SET withdrawn_at = $1, updated_at = $1 WHERE completed_at IS NULL AND withdrawn_at IS NULL \
                         AND invitation_id IN (SELECT id FROM invitations WHERE fill_out_request_id = $2)",
                        "UPDATE invitations SET withdrawn_at = $1, settled_at = $1 WHERE fill_out_request_id = $2",
                        "UPDATE callbacks SET cancelled_at = $1, next_attempt_at = NULL WHERE fill_out_request_id = $2 \
                         AND next_attempt_at IS NOT NULL",
                    ] {
                        sqlx::query(sql).bind(to_millis(now)).bind(id).execute(&mut *conn).await?;
                    }
                    Ok(true)
                })
            })
            .await
    }

    /// Claims up to `limit` callbacks due at `now`: counts the attempt and
    /// holds each for `lease` (another claim skips it meanwhile).
    pub async fn claim_callbacks(
        &self,
        now: DateTime<Utc>,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<ClaimedCallback>, StoreError> {
        // The joined rows are only read: lock the callbacks alone.
        let lock = match self.backend {
            super::Backend::Postgres => " FOR UPDATE OF c SKIP LOCKED",
            super::Backend::Sqlite => "",
        };
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let sql = format!(
                        "SELECT c.id, c.fill_out_request_id, d.epd_id, c.event, f.callback_url, c.attempts, f.respondent_id, \
                         COALESCE(c.event_id, 'msg_' || c.id), t.webhook_secret, \
                         (SELECT p.link_generation FROM respondents p WHERE p.id = f.respondent_id), t.consumer_key FROM callbacks c \
                         JOIN fill_out_requests f ON f.id = c.fill_out_request_id JOIN dossiers d ON d.id = f.dossier_id \
                         LEFT JOIN api_tokens t ON t.id = f.token_id WHERE c.next_attempt_at <= $1 ORDER BY c.next_attempt_at, c.id LIMIT $2{lock}"
                    );
                    let rows: Vec<CallbackRow> = sqlx::query_as(&sql)
                        .bind(to_millis(now))
                        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
                        .fetch_all(&mut *conn)
                        .await?;
                    let mut claimed = Vec::with_capacity(rows.len());
                    for (id, request, epd_id, event, url, attempts, respondent, event_id, secret, link_generation, consumer_key) in rows {
                        sqlx::query("UPDATE callbacks SET attempts = attempts + 1, next_attempt_at = $1 WHERE id = $2")
                            .bind(to_millis(now + lease))
                            .bind(id)
                            .execute(&mut *conn)
                            .await?;
                        if let Some(url) = url {
                            claimed.push(ClaimedCallback {
                                id,
                                fill_out_request_id: request,
                                epd_id,
                                event,
                                url,
                                attempts: attempts + 1,
                                respondent_id: RespondentId(respondent),
                                event_id,
                                webhook_secret: secret.map(StoredSecret),
                                link_generation,
                                consumer_key,
                            });
                        }
                    }
                    Ok(claimed)
                })
            })
            .await
    }

    /// Records how an attempt went: delivered; or failed, to be tried again
    /// at `retry_at`, or given up when that is None.
    /// With the access-log row of the attempt (`access`): what left, to
    /// whom, and how it was answered.
    pub async fn record_callback(
        &self,
        id: i64,
        outcome: Result<(), String>,
        retry_at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
        access: AccessEntry,
    ) -> Result<(), StoreError> {
        self.record_attempt(Outbox::Callbacks, id, outcome, retry_at, now, access)
            .await
    }
}

/// When each callback of a request is due: opened at `open_from`, each
/// reminder that falls inside the window, expired at `open_till`.
fn callback_times(new: &NewFillOutRequest) -> Vec<(&'static str, i64)> {
    let mut times = vec![(OPENED, to_millis(new.open_from))];
    let mut reminders = new.reminders.clone();
    reminders.sort_unstable();
    reminders.dedup();
    for seconds in reminders {
        let at = new.open_from + Duration::seconds(seconds);
        if at < new.open_till {
            times.push((REMINDER, to_millis(at)));
        }
    }
    times.push((EXPIRED, to_millis(new.open_till)));
    times
}
