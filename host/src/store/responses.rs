//! Responses: listing with the API's filters, completing a pending one
//! (PUT, handed to the completion sink once stored: `completions.rs`),
//! preparing, aborting and deleting by external id. Storing a POSTed one
//! is `create`'s; the row type and its reads are shared with it.
//!
//! A page is a keyset query (`id > after … LIMIT size + 1` on the
//! `responses_dossier (dossier_id, id)` index), never an OFFSET.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use sqlx::AnyConnection;

use super::access_log::AccessEntry;
use super::alarms::{self, Raising};
use super::{Scored, Store, StoreError, dossiers, placeholders};
use crate::domain::alarm::AlarmClose;
use crate::domain::answers::{Answers, StoredAnswers};
use crate::domain::ids::{
    DossierId, MeasurementId, NonResponseId, QuestionnaireId, RespondentId, ResponseId,
    SubscriptionId,
};
use crate::domain::outcome::{Outcome, Provenance};
use crate::domain::response::{COMPLETER_PATIENT, Response, ResponseTimes, Status};
use crate::domain::time::{from_millis, to_millis};

/// Filters of the response list; all optional, all combined with AND.
#[derive(Debug, Clone, Default)]
pub struct ResponseFilter {
    pub questionnaire_keys: Option<Vec<String>>,
    pub completed_before: Option<DateTime<Utc>>,
    pub completed_after: Option<DateTime<Utc>>,
    pub completer_type: Option<String>,
    pub status: Option<Status>,
    pub protocol_subscription_id: Option<i64>,
    pub respondent_id: Option<i64>,
}

/// A page of the response list: at most `size` responses, those with ids
/// above `after` (docs/api/responses.md#pages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub size: u32,
    pub after: Option<ResponseId>,
}

/// What one page holds, and whether responses follow it.
#[derive(Debug, Default)]
pub struct ResponsePage {
    pub responses: Vec<Response>,
    pub more: bool,
}

/// A response the service prepares for later completion (invitations,
/// protocol subscriptions): the dossier's patient fills it out.
#[derive(Debug, Clone, Default)]
pub struct Preparation {
    pub questionnaire_id: QuestionnaireId,
    pub open_from: Option<DateTime<Utc>>,
    pub open_till: Option<DateTime<Utc>>,
    pub measurement_id: Option<MeasurementId>,
    pub protocol_subscription_id: Option<SubscriptionId>,
    pub flags: Map<String, Value>,
    pub textvars: Map<String, Value>,
    /// EPD ids of the requesting professionals.
    pub requesters: Vec<String>,
}

/// Why a PUT could not complete a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompleteError {
    NotFound,
    AlreadyCompleted,
    /// The response is of another questionnaire than the body names.
    OtherQuestionnaire,
}

pub(super) const COLUMNS: &str = "r.id, r.dossier_id, r.respondent_id, r.questionnaire_id, q.key AS questionnaire_key, \
    q.name AS questionnaire_name, r.external_id, r.completer_type, r.flags, r.textvars, r.measurement_id, \
    r.protocol_subscription_id, r.non_response_id, r.open_from, r.open_till, r.started_at, r.completed_at, \
    r.aborted_at, r.answers, r.outcome, r.outcome_plugin, r.outcome_plugin_version, r.outcome_plugin_sha256, \
    r.outcome_abi_version, r.outcome_definition_sha256, r.outcome_input_sha256, r.language, r.translation_sha256, r.fill_out_page, r.fill_out_language, r.requesters, r.entered_by, r.created_at, \
    (SELECT p.link_generation FROM respondents p WHERE p.id = r.respondent_id) AS link_generation";

pub(super) const FROM: &str = "FROM responses r JOIN questionnaires q ON q.id = r.questionnaire_id";

#[derive(sqlx::FromRow)]
pub(super) struct ResponseRow {
    pub id: i64,
    pub dossier_id: i64,
    pub respondent_id: i64,
    pub questionnaire_id: i64,
    pub questionnaire_key: String,
    pub questionnaire_name: String,
    pub external_id: Option<String>,
    pub completer_type: String,
    pub flags: String,
    pub textvars: String,
    pub measurement_id: Option<i64>,
    pub protocol_subscription_id: Option<i64>,
    pub non_response_id: Option<i64>,
    pub open_from: Option<i64>,
    pub open_till: Option<i64>,
    pub started_at: Option<i64>,
    pub completed_at: Option<i64>,
    pub aborted_at: Option<i64>,
    pub answers: String,
    pub outcome: Option<String>,
    pub outcome_plugin: Option<String>,
    pub outcome_plugin_version: Option<String>,
    pub outcome_plugin_sha256: Option<String>,
    pub outcome_abi_version: Option<i64>,
    pub outcome_definition_sha256: Option<String>,
    pub outcome_input_sha256: Option<String>,
    pub language: Option<String>,
    pub translation_sha256: Option<String>,
    pub fill_out_page: Option<String>,
    pub fill_out_language: Option<String>,
    pub requesters: String,
    pub entered_by: Option<String>,
    pub created_at: i64,
    pub link_generation: Option<i64>,
}

fn json<T: serde::de::DeserializeOwned>(
    id: i64,
    column: &str,
    text: &str,
) -> Result<T, StoreError> {
    serde_json::from_str(text)
        .map_err(|e| StoreError::Corrupt(format!("response {id}: column {column}: {e}")))
}

impl TryFrom<ResponseRow> for Response {
    type Error = StoreError;

    fn try_from(r: ResponseRow) -> Result<Self, StoreError> {
        let at = |ms: Option<i64>| ms.map(from_millis);
        Ok(Response {
            id: ResponseId(r.id),
            dossier_id: DossierId(r.dossier_id),
            respondent_id: RespondentId(r.respondent_id),
            questionnaire_id: QuestionnaireId(r.questionnaire_id),
            questionnaire_key: r.questionnaire_key,
            questionnaire_name: r.questionnaire_name,
            external_id: r.external_id,
            completer_type: r.completer_type,
            flags: json(r.id, "flags", &r.flags)?,
            textvars: json(r.id, "textvars", &r.textvars)?,
            measurement_id: r.measurement_id.map(MeasurementId),
            non_response_id: r.non_response_id.map(NonResponseId),
            protocol_subscription_id: r.protocol_subscription_id.map(SubscriptionId),
            times: ResponseTimes {
                open_from: at(r.open_from),
                open_till: at(r.open_till),
                started_at: at(r.started_at),
                completed_at: at(r.completed_at),
                aborted_at: at(r.aborted_at),
            },
            answers: StoredAnswers::from_json(json::<Map<String, Value>>(
                r.id, "answers", &r.answers,
            )?),
            language: r.language,
            translation_sha256: r.translation_sha256,
            fill_out_page: r.fill_out_page,
            fill_out_language: r.fill_out_language,
            outcome: match r.outcome {
                Some(text) => json(r.id, "outcome", &text)?,
                None => Outcome::empty(),
            },
            provenance: Provenance {
                plugin: r.outcome_plugin,
                version: r.outcome_plugin_version,
                sha256: r.outcome_plugin_sha256,
                abi_version: r.outcome_abi_version,
                definition_sha256: r.outcome_definition_sha256,
                input_sha256: r.outcome_input_sha256,
            },
            requesters: json(r.id, "requesters", &r.requesters)?,
            entered_by: r.entered_by,
            created_at: from_millis(r.created_at),
            link_generation: r.link_generation,
        })
    }
}

/// A value bound to a numbered placeholder of a query built at run time.
enum Bind {
    Int(i64),
    Text(String),
}

/// The SQL condition that selects responses of `status` at `$now`.
pub(super) fn status_condition(status: Status, now: &str) -> String {
    let not_done = "r.completed_at IS NULL";
    let window_open = format!("(r.open_till IS NULL OR r.open_till > {now})");
    match status {
        Status::Completed => "r.completed_at IS NOT NULL".to_owned(),
        Status::Expired => {
            format!("{not_done} AND r.open_till IS NOT NULL AND r.open_till <= {now}")
        }
        Status::Aborted => format!("{not_done} AND {window_open} AND r.aborted_at IS NOT NULL"),
        Status::Scheduled => {
            format!("{not_done} AND {window_open} AND r.aborted_at IS NULL AND r.open_from > {now}")
        }
        Status::Open => {
            format!(
                "{not_done} AND {window_open} AND r.aborted_at IS NULL AND (r.open_from IS NULL OR r.open_from <= {now})"
            )
        }
    }
}

impl Store {
    /// The responses of a dossier that pass `filter`, by id. An unknown
    /// dossier has none.
    pub async fn list_responses(
        &self,
        epd_id: &str,
        filter: &ResponseFilter,
        now: DateTime<Utc>,
    ) -> Result<Vec<Response>, StoreError> {
        Ok(self
            .select_responses(epd_id, filter, None, now)
            .await?
            .responses)
    }

    /// One page of [`Store::list_responses`]: at most `page.size` responses
    /// with ids above `page.after`, and whether more follow.
    ///
    /// Keyset pagination: the next page starts after the last id seen, on
    /// the `responses_dossier (dossier_id, id)` index
    /// (migrations/*/0001_initial.sql), so a page deep into a long diary
    /// costs what the first does, and rows added or deleted between pages
    /// neither repeat nor skip a row (an OFFSET would do both).
    pub async fn list_responses_page(
        &self,
        epd_id: &str,
        filter: &ResponseFilter,
        page: Page,
        now: DateTime<Utc>,
    ) -> Result<ResponsePage, StoreError> {
        self.select_responses(epd_id, filter, Some(page), now).await
    }

    async fn select_responses(
        &self,
        epd_id: &str,
        filter: &ResponseFilter,
        page: Option<Page>,
        now: DateTime<Utc>,
    ) -> Result<ResponsePage, StoreError> {
        let mut binds = vec![Bind::Text(epd_id.to_owned())];
        let mut sql = format!(
            "SELECT {COLUMNS} {FROM} WHERE r.dossier_id = (SELECT id FROM dossiers WHERE epd_id = $1) AND r.withdrawn_at IS NULL"
        );
        if let Some(keys) = &filter.questionnaire_keys {
            if keys.is_empty() {
                return Ok(ResponsePage::default());
            }
            sql.push_str(&format!(
                " AND q.key IN ({})",
                placeholders(binds.len() + 1, keys.len())
            ));
            binds.extend(keys.iter().cloned().map(Bind::Text));
        }
        let mut push = |sql: &mut String, condition: &str, value: Bind| {
            binds.push(value);
            sql.push_str(&format!(" AND {condition} ${}", binds.len()));
        };
        if let Some(t) = filter.completed_before {
            push(&mut sql, "r.completed_at <", Bind::Int(to_millis(t)));
        }
        if let Some(t) = filter.completed_after {
            push(&mut sql, "r.completed_at >", Bind::Int(to_millis(t)));
        }
        if let Some(kind) = &filter.completer_type {
            push(&mut sql, "r.completer_type =", Bind::Text(kind.clone()));
        }
        if let Some(id) = filter.protocol_subscription_id {
            push(&mut sql, "r.protocol_subscription_id =", Bind::Int(id));
        }
        if let Some(id) = filter.respondent_id {
            push(&mut sql, "r.respondent_id =", Bind::Int(id));
        }
        if let Some(ResponseId(after)) = page.and_then(|p| p.after) {
            push(&mut sql, "r.id >", Bind::Int(after));
        }
        if let Some(status) = filter.status {
            binds.push(Bind::Int(to_millis(now)));
            sql.push_str(&format!(
                " AND {}",
                status_condition(status, &format!("${}", binds.len()))
            ));
        }
        sql.push_str(" ORDER BY r.id");
        // One row more than the page holds says whether another page follows.
        if let Some(page) = page {
            binds.push(Bind::Int(i64::from(page.size) + 1));
            sql.push_str(&format!(" LIMIT ${}", binds.len()));
        }

        let mut query = sqlx::query_as::<_, ResponseRow>(&sql);
        for bind in binds {
            query = match bind {
                Bind::Int(v) => query.bind(v),
                Bind::Text(v) => query.bind(v),
            };
        }
        let mut rows = query.fetch_all(&self.pool).await?;
        let more = page.is_some_and(|p| rows.len() > p.size as usize);
        if let Some(page) = page {
            rows.truncate(page.size as usize);
        }
        let responses = rows
            .into_iter()
            .map(Response::try_from)
            .collect::<Result<_, _>>()?;
        Ok(ResponsePage { responses, more })
    }

    /// One response of a dossier by id.
    pub async fn response(
        &self,
        epd_id: &str,
        id: ResponseId,
    ) -> Result<Option<Response>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} {FROM} JOIN dossiers d ON d.id = r.dossier_id WHERE d.epd_id = $1 AND r.id = $2 AND r.withdrawn_at IS NULL"
        );
        let row: Option<ResponseRow> = sqlx::query_as(&sql)
            .bind(epd_id)
            .bind(id.0)
            .fetch_optional(&self.pool)
            .await?;
        row.map(Response::try_from).transpose()
    }

    /// The response a PUT with `segment` would complete, if any (read
    /// before scoring: its flags and textvars decide what is scored).
    pub async fn response_to_complete(
        &self,
        epd_id: &str,
        segment: &str,
    ) -> Result<Option<Response>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        let Some(dossier) = dossiers::find(&mut conn, epd_id).await? else {
            return Ok(None);
        };
        by_segment(&mut conn, dossier, segment).await
    }

    /// The response of dossier `epd_id` stored under `external_id`, if
    /// any: what a POST with that external id would find (`outcomes import
    /// --strict` reads it before anything is written).
    pub async fn response_by_external_id(
        &self,
        epd_id: &str,
        external_id: &str,
    ) -> Result<Option<Response>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        let Some(dossier) = dossiers::find(&mut conn, epd_id).await? else {
            return Ok(None);
        };
        by_external_id(&mut conn, dossier, external_id).await
    }

    /// Completes a pending response (PUT): `segment` is matched against the
    /// dossier's external ids, then, if it is a number, against the ids of
    /// responses the service prepared
    /// (docs/api/responses.md#which-response-a-put-names). The alarm its
    /// outcome raises is stored with it, recorded with `by`'s caller (the
    /// request's access-log row).
    pub async fn complete_response(
        &self,
        epd_id: String,
        segment: String,
        scored: Scored,
        now: DateTime<Utc>,
        by: Option<AccessEntry>,
    ) -> Result<Result<Response, CompleteError>, StoreError> {
        let scored = Arc::new(scored);
        let writing = scored.clone();
        let (backend, policy) = (self.backend, self.alarms.clone());
        let result = self
            .writer
            .write(move |conn| {
                Box::pin(async move {
                    let completion = &writing.completion;
                    let Some(dossier) = dossiers::find(conn, &epd_id).await? else {
                        return Ok(Err(CompleteError::NotFound));
                    };
                    let Some(response) = by_segment(conn, dossier, &segment).await? else {
                        return Ok(Err(CompleteError::NotFound));
                    };
                    if response.times.completed_at.is_some() {
                        return Ok(Err(CompleteError::AlreadyCompleted));
                    }
                    if response.questionnaire_id != completion.questionnaire_id {
                        return Ok(Err(CompleteError::OtherQuestionnaire));
                    }
                    // Only while still pending: another host sharing the
                    // database (or a respondent's form submit) may have
                    // completed it since the read above. Under READ
                    // COMMITTED the second UPDATE waits for the first and
                    // then finds the row completed: no acknowledged answers
                    // are overwritten.
                    let updated = sqlx::query(
                        "UPDATE responses SET answers = $1, started_at = COALESCE($2, started_at), completed_at = $3, \
                         outcome = $4, outcome_plugin = $5, outcome_plugin_version = $6, outcome_plugin_sha256 = $7, \
                         outcome_computed_at = $8, external_id = COALESCE(external_id, $9), updated_at = $8, \
                         outcome_abi_version = $11, outcome_definition_sha256 = $12, outcome_input_sha256 = $13, \
                         language = $14, translation_sha256 = $15 \
                         WHERE id = $10 AND completed_at IS NULL",
                    )
                    .bind(Value::Object(completion.answers.to_json()).to_string())
                    .bind(completion.started_at.map(to_millis))
                    .bind(to_millis(completion.completed_at))
                    .bind(outcome_json(&completion.outcome)?)
                    .bind(completion.provenance.plugin.clone())
                    .bind(completion.provenance.version.clone())
                    .bind(completion.provenance.sha256.clone())
                    .bind(to_millis(now))
                    .bind(&segment)
                    .bind(response.id.0)
                    .bind(completion.provenance.abi_version)
                    .bind(completion.provenance.definition_sha256.clone())
                    .bind(completion.provenance.input_sha256.clone())
                    .bind(completion.language.clone())
                    .bind(completion.translation_sha256.clone())
                    .execute(&mut *conn)
                    .await?;
                    if updated.rows_affected() == 0 {
                        return Ok(Err(CompleteError::AlreadyCompleted));
                    }
                    let stored = fetch(conn, response.id).await?;
                    let by = by.map(|entry| AccessEntry { status: 200, ..entry });
                    let raising = Raising {
                        dossier,
                        epd_id: &epd_id,
                        response: stored.id,
                        questionnaire_key: &writing.definition.key,
                        outcome: &stored.outcome,
                        at: now,
                        by: by.as_ref(),
                    };
                    alarms::raise(conn, backend, &policy, &[raising]).await?;
                    Ok(Ok(stored))
                })
            })
            .await?;
        if let Ok(response) = &result {
            self.completions.stored(Scored::stored(scored, response.id));
        }
        Ok(result)
    }

    /// Prepares responses for the dossier's patient, making the dossier on
    /// first write; returns them in the order given.
    pub async fn prepare_responses(
        &self,
        epd_id: String,
        items: Vec<Preparation>,
        now: DateTime<Utc>,
    ) -> Result<Vec<Response>, StoreError> {
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let (dossier, patient) = dossiers::ensure(conn, &epd_id, now).await?;
                    let mut out = Vec::with_capacity(items.len());
                    for p in items {
                        let row: (i64,) = sqlx::query_as(
                            "INSERT INTO responses (dossier_id, respondent_id, questionnaire_id, completer_type, flags, textvars, \
                             measurement_id, protocol_subscription_id, open_from, open_till, requesters, created_at, updated_at) \
                             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12) RETURNING id",
                        )
                        .bind(dossier.0)
                        .bind(patient.0)
                        .bind(p.questionnaire_id.0)
                        .bind(COMPLETER_PATIENT)
                        .bind(Value::Object(p.flags).to_string())
                        .bind(Value::Object(p.textvars).to_string())
                        .bind(p.measurement_id.map(|m| m.0))
                        .bind(p.protocol_subscription_id.map(|s| s.0))
                        .bind(p.open_from.map(to_millis))
                        .bind(p.open_till.map(to_millis))
                        .bind(serde_json::to_string(&p.requesters).unwrap_or_else(|_| "[]".to_owned()))
                        .bind(to_millis(now))
                        .fetch_one(&mut *conn)
                        .await?;
                        out.push(fetch(conn, ResponseId(row.0)).await?);
                    }
                    Ok(out)
                })
            })
            .await
    }

    /// Marks a pending response aborted, keeping the answers given so far.
    /// None when the dossier has no such response or it is completed.
    pub async fn abort_response(
        &self,
        epd_id: String,
        id: ResponseId,
        answers: Answers,
        now: DateTime<Utc>,
    ) -> Result<Option<Response>, StoreError> {
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let Some(dossier) = dossiers::find(conn, &epd_id).await? else { return Ok(None) };
                    let done = sqlx::query(
                        "UPDATE responses SET aborted_at = $1, answers = $2, updated_at = $1 \
                         WHERE id = $3 AND dossier_id = $4 AND completed_at IS NULL AND withdrawn_at IS NULL",
                    )
                    .bind(to_millis(now))
                    .bind(Value::Object(answers.to_json()).to_string())
                    .bind(id.0)
                    .bind(dossier.0)
                    .execute(&mut *conn)
                    .await?;
                    if done.rows_affected() == 0 {
                        return Ok(None);
                    }
                    fetch(conn, id).await.map(Some)
                })
            })
            .await
    }

    /// Deletes the response with this external id; false when there is none.
    /// Its alarms are resolved first (`response_deleted`), recorded with
    /// `by`'s caller, in the same transaction.
    pub async fn delete_response(
        &self,
        epd_id: String,
        external_id: String,
        now: DateTime<Utc>,
        by: Option<AccessEntry>,
    ) -> Result<bool, StoreError> {
        let backend = self.backend;
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let by = by.map(|entry| AccessEntry { status: 204, ..entry });
                    alarms::close_of_responses(
                        conn,
                        backend,
                        "r.dossier_id = (SELECT id FROM dossiers WHERE epd_id = $1) AND r.external_id = $2",
                        (epd_id.as_str(), external_id.as_str()),
                        AlarmClose::ResponseDeleted,
                        by.as_ref(),
                        now,
                    )
                    .await?;
                    let done = sqlx::query(
                        "DELETE FROM responses WHERE dossier_id = (SELECT id FROM dossiers WHERE epd_id = $1) AND external_id = $2",
                    )
                    .bind(&epd_id)
                    .bind(&external_id)
                    .execute(&mut *conn)
                    .await?;
                    Ok(done.rows_affected() > 0)
                })
            })
            .await
    }
}

pub(super) fn outcome_json(outcome: &Outcome) -> Result<String, StoreError> {
    serde_json::to_string(outcome).map_err(|e| StoreError::Corrupt(format!("outcome: {e}")))
}

pub(super) async fn fetch(
    conn: &mut AnyConnection,
    id: ResponseId,
) -> Result<Response, StoreError> {
    let sql = format!("SELECT {COLUMNS} {FROM} WHERE r.id = $1");
    let row: ResponseRow = sqlx::query_as(&sql)
        .bind(id.0)
        .fetch_one(&mut *conn)
        .await?;
    Response::try_from(row)
}

pub(super) async fn by_external_id(
    conn: &mut AnyConnection,
    dossier: DossierId,
    external_id: &str,
) -> Result<Option<Response>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} {FROM} WHERE r.dossier_id = $1 AND r.external_id = $2 AND r.withdrawn_at IS NULL"
    );
    let row: Option<ResponseRow> = sqlx::query_as(&sql)
        .bind(dossier.0)
        .bind(external_id)
        .fetch_optional(&mut *conn)
        .await?;
    row.map(Response::try_from).transpose()
}

/// What a PUT path segment names: a response by external id, else, if it is
/// a number, a response the service prepared by its id
/// (docs/api/responses.md#which-response-a-put-names).
async fn by_segment(
    conn: &mut AnyConnection,
    dossier: DossierId,
    segment: &str,
) -> Result<Option<Response>, StoreError> {
    let found = by_external_id(conn, dossier, segment).await?;
    if found.is_some()
        || segment.is_empty()
        || segment.len() > 18
        || !segment.bytes().all(|b| b.is_ascii_digit())
    {
        return Ok(found);
    }
    prepared_by_id(conn, dossier, segment).await
}

/// A response the service prepared (it has no external id) by its id
/// (`segment`, all digits). A PUT by id gives the response that id as its
/// external id, so one completed since the caller's first look is found
/// too, and answered as completed rather than unknown.
async fn prepared_by_id(
    conn: &mut AnyConnection,
    dossier: DossierId,
    segment: &str,
) -> Result<Option<Response>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} {FROM} WHERE r.dossier_id = $1 AND r.id = $2 \
         AND (r.external_id IS NULL OR r.external_id = $3) AND r.withdrawn_at IS NULL"
    );
    let row: Option<ResponseRow> = sqlx::query_as(&sql)
        .bind(dossier.0)
        .bind(segment.parse::<i64>().unwrap_or_default())
        .bind(segment)
        .fetch_optional(&mut *conn)
        .await?;
    row.map(Response::try_from).transpose()
}
