//! Responses: listing with the API's filters, storing (POST), completing a
//! pending one (PUT) and deleting by external id.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use sqlx::{AnyConnection, Row};

use super::dossiers::DossierCache;
use super::{Backend, Script, Store, StoreError, dossiers, placeholders};
use crate::domain::answers::Answers;
use crate::domain::ids::{
    DossierId, MeasurementId, NonResponseId, QuestionnaireId, RespondentId, ResponseId,
    SubscriptionId,
};
use crate::domain::outcome::{Outcome, Provenance};
use crate::domain::response::{
    COMPLETER_PATIENT, COMPLETER_PROFESSIONAL, Completion, Response, ResponseTimes, Status,
};
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

/// What a POST of a response came to.
#[derive(Debug)]
pub enum CreateResult {
    /// Stored now.
    Created(Response),
    /// The same external id, questionnaire and answers were stored before:
    /// a retry, answered with the stored response.
    Retry(Response),
    /// The external id is used in this dossier for other data.
    Taken,
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
    r.requesters, r.entered_by, r.created_at";

pub(super) const FROM: &str = "FROM responses r JOIN questionnaires q ON q.id = r.questionnaire_id";

#[derive(sqlx::FromRow)]
pub(super) struct ResponseRow {
    id: i64,
    dossier_id: i64,
    respondent_id: i64,
    questionnaire_id: i64,
    questionnaire_key: String,
    questionnaire_name: String,
    external_id: Option<String>,
    completer_type: String,
    flags: String,
    textvars: String,
    measurement_id: Option<i64>,
    protocol_subscription_id: Option<i64>,
    non_response_id: Option<i64>,
    open_from: Option<i64>,
    open_till: Option<i64>,
    started_at: Option<i64>,
    completed_at: Option<i64>,
    aborted_at: Option<i64>,
    answers: String,
    outcome: Option<String>,
    outcome_plugin: Option<String>,
    outcome_plugin_version: Option<String>,
    outcome_plugin_sha256: Option<String>,
    requesters: String,
    entered_by: Option<String>,
    created_at: i64,
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
            answers: Answers::from_json(&json::<Map<String, Value>>(r.id, "answers", &r.answers)?),
            outcome: match r.outcome {
                Some(text) => json(r.id, "outcome", &text)?,
                None => Outcome::empty(),
            },
            provenance: Provenance {
                plugin: r.outcome_plugin,
                version: r.outcome_plugin_version,
                sha256: r.outcome_plugin_sha256,
            },
            requesters: json(r.id, "requesters", &r.requesters)?,
            entered_by: r.entered_by,
            created_at: from_millis(r.created_at),
        })
    }
}

/// A value bound to a numbered placeholder of a query built at run time.
enum Bind {
    Int(i64),
    Text(String),
}

/// The SQL condition that selects responses of `status` at `$now`.
fn status_condition(status: Status, now: &str) -> String {
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
        let mut binds = vec![Bind::Text(epd_id.to_owned())];
        let mut sql = format!(
            "SELECT {COLUMNS} {FROM} WHERE r.dossier_id = (SELECT id FROM dossiers WHERE epd_id = $1) AND r.withdrawn_at IS NULL"
        );
        if let Some(keys) = &filter.questionnaire_keys {
            if keys.is_empty() {
                return Ok(Vec::new());
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
        if let Some(status) = filter.status {
            binds.push(Bind::Int(to_millis(now)));
            sql.push_str(&format!(
                " AND {}",
                status_condition(status, &format!("${}", binds.len()))
            ));
        }
        sql.push_str(" ORDER BY r.id");

        let mut query = sqlx::query_as::<_, ResponseRow>(&sql);
        for bind in binds {
            query = match bind {
                Bind::Int(v) => query.bind(v),
                Bind::Text(v) => query.bind(v),
            };
        }
        query
            .fetch_all(&self.pool)
            .await?
            .into_iter()
            .map(Response::try_from)
            .collect()
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

    /// Stores a completed response under `external_id` (POST). The dossier
    /// and its patient are made on first write.
    pub async fn create_response(
        &self,
        epd_id: String,
        external_id: String,
        professional: bool,
        entered_by: Option<String>,
        completion: Completion,
        now: DateTime<Utc>,
    ) -> Result<CreateResult, StoreError> {
        self.writer
            .create(NewResponse {
                epd_id,
                external_id,
                professional,
                entered_by,
                completion,
                now,
            })
            .await
    }

    /// Completes a pending response (PUT): `segment` is matched against the
    /// dossier's external ids, then, if it is a number, against the ids of
    /// responses the service prepared (decisions.md §4).
    pub async fn complete_response(
        &self,
        epd_id: String,
        segment: String,
        completion: Completion,
        now: DateTime<Utc>,
    ) -> Result<Result<Response, CompleteError>, StoreError> {
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let Some(dossier) = dossiers::find(conn, &epd_id).await? else {
                        return Ok(Err(CompleteError::NotFound));
                    };
                    let mut found = by_external_id(conn, dossier, &segment).await?;
                    if found.is_none() && !segment.is_empty() && segment.len() <= 18 && segment.bytes().all(|b| b.is_ascii_digit()) {
                        found = prepared_by_id(conn, dossier, segment.parse().unwrap_or_default()).await?;
                    }
                    let Some(response) = found else { return Ok(Err(CompleteError::NotFound)) };
                    if response.times.completed_at.is_some() {
                        return Ok(Err(CompleteError::AlreadyCompleted));
                    }
                    if response.questionnaire_id != completion.questionnaire_id {
                        return Ok(Err(CompleteError::OtherQuestionnaire));
                    }
                    sqlx::query(
                        "UPDATE responses SET answers = $1, started_at = COALESCE($2, started_at), completed_at = $3, \
                         outcome = $4, outcome_plugin = $5, outcome_plugin_version = $6, outcome_plugin_sha256 = $7, \
                         outcome_computed_at = $8, external_id = COALESCE(external_id, $9), updated_at = $8 WHERE id = $10",
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
                    .execute(&mut *conn)
                    .await?;
                    fetch(conn, response.id).await.map(Ok)
                })
            })
            .await
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
    pub async fn delete_response(
        &self,
        epd_id: String,
        external_id: String,
    ) -> Result<bool, StoreError> {
        self.writer
            .write(move |conn| {
                Box::pin(async move {
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

/// A POSTed response waiting for the writer.
#[derive(Debug)]
pub(super) struct NewResponse {
    pub epd_id: String,
    pub external_id: String,
    pub professional: bool,
    pub entered_by: Option<String>,
    pub completion: Completion,
    pub now: DateTime<Utc>,
}

/// Rows per multi-row INSERT: 17 parameters each stays far below the
/// parameter limits of SQLite (32766) and PostgreSQL (65535).
const INSERT_CHUNK: usize = 128;

/// One POSTed response: the dossier and its patient are made on first write;
/// an external id already used in the dossier is a retry (same questionnaire
/// and answers) or taken. Four statements or more; the writer uses it for
/// the items a [`Plan`] leaves, and when storing a batch together fails.
pub(super) async fn create_one(
    conn: &mut AnyConnection,
    item: &NewResponse,
) -> Result<CreateResult, StoreError> {
    let (dossier, patient) = dossiers::ensure(conn, &item.epd_id, item.now).await?;
    if let Some(existing) = by_external_id(conn, dossier, &item.external_id).await? {
        let same = existing.questionnaire_id == item.completion.questionnaire_id
            && answered(&existing.answers) == answered(&item.completion.answers);
        return Ok(if same {
            CreateResult::Retry(existing)
        } else {
            CreateResult::Taken
        });
    }
    let (respondent, completer) = if item.professional {
        (
            dossiers::ensure_professional(conn, dossier, item.now).await?,
            COMPLETER_PROFESSIONAL,
        )
    } else {
        (patient, COMPLETER_PATIENT)
    };
    let id = insert_completed(
        conn,
        dossier,
        respondent,
        completer,
        &item.external_id,
        item.entered_by.as_deref(),
        &item.completion,
        item.now,
    )
    .await?;
    fetch(conn, id).await.map(CreateResult::Created)
}

/// A row a [`Plan`] inserts: which item, and the columns it computed.
struct NewRow<'a> {
    index: usize,
    item: &'a NewResponse,
    dossier: DossierId,
    respondent: RespondentId,
    completer: &'static str,
    answers: String,
    outcome: String,
}

/// How the POSTed responses of one write batch are stored together, in a
/// few statements for all of them where [`create_one`] takes four or more
/// for each, with the same outcome. [`Plan::make`] finds the dossiers (most
/// in the writer's cache) and makes the missing ones, and in one query finds
/// which external ids are taken and the questionnaires' names; then every
/// new response is inserted in one multi-row INSERT, and the responses are
/// built from what was inserted instead of being read back.
///
/// Items whose external id is taken, or repeated in the batch, are left for
/// [`create_one`] ([`Plan::leaves_some`]), to be decided exactly as one by
/// one: a retry or taken.
pub(super) struct Plan<'a> {
    backend: Backend,
    rows: Vec<NewRow<'a>>,
    items: usize,
    questionnaires: HashMap<i64, (String, String)>,
    /// SQLite: the id of the first row, as AUTOINCREMENT would give it.
    first_id: Option<i64>,
    /// Whether it made dossiers or respondents.
    made: bool,
}

impl<'a> Plan<'a> {
    /// Runs the plan's queries for `items`. `opening` holds statements to run
    /// first, in the same round trip (SQLite only; the writer opens its
    /// transaction so).
    pub async fn make(
        conn: &mut AnyConnection,
        backend: Backend,
        cache: &mut DossierCache,
        items: &[&'a NewResponse],
        opening: Script,
        find_taken: bool,
    ) -> Result<Plan<'a>, StoreError> {
        let mut opening = Some(opening);
        let mut made = false;
        // Dossiers and respondents: from the cache, else one query for all
        // the batch's other dossiers; what does not exist is made as
        // create_one would make it.
        let mut missing: Vec<&str> = items
            .iter()
            .map(|i| i.epd_id.as_str())
            .filter(|epd| cache.get(epd).is_none())
            .collect();
        missing.sort_unstable();
        missing.dedup();
        if !missing.is_empty() {
            let script = opening.take().unwrap_or_else(|| Script::new(backend));
            for (epd_id, ids) in dossiers::respondents_of(conn, script, &missing).await? {
                cache.insert(epd_id.to_owned(), ids);
            }
        }
        let mut rows: Vec<NewRow<'a>> = Vec::with_capacity(items.len());
        let mut first: HashSet<(&str, &str)> = HashSet::with_capacity(items.len());
        for (index, item) in items.iter().copied().enumerate() {
            let mut ids = match cache.get(&item.epd_id) {
                Some(ids) => ids,
                None => {
                    made = true;
                    let (dossier, patient) = dossiers::ensure(conn, &item.epd_id, item.now).await?;
                    dossiers::DossierRespondents {
                        dossier,
                        patient,
                        professional: None,
                    }
                }
            };
            let (respondent, completer) = if item.professional {
                let professional = match ids.professional {
                    Some(id) => id,
                    None => {
                        made = true;
                        dossiers::ensure_professional(conn, ids.dossier, item.now).await?
                    }
                };
                ids.professional = Some(professional);
                (professional, COMPLETER_PROFESSIONAL)
            } else {
                (ids.patient, COMPLETER_PATIENT)
            };
            cache.insert(item.epd_id.clone(), ids);
            // A repeated external id is decided after the first is stored,
            // by create_one.
            if first.insert((item.epd_id.as_str(), item.external_id.as_str())) {
                let c = &item.completion;
                rows.push(NewRow {
                    index,
                    item,
                    dossier: ids.dossier,
                    respondent,
                    completer,
                    answers: Value::Object(c.answers.to_json()).to_string(),
                    outcome: outcome_json(&c.outcome)?,
                });
            }
        }

        // One query for: the external ids already used (normally none, so
        // few rows come back), the key and name of each questionnaire (as a
        // read back would join them), and on SQLite the largest response id
        // ever handed out. With `find_taken` false the INSERT finds what is
        // taken: it skips those rows, and the caller, seeing fewer rows
        // inserted than planned, starts over.
        let mut script = opening.take().unwrap_or_else(|| Script::new(backend));
        if rows.is_empty() {
            return Err(StoreError::Corrupt(
                "a batch without responses to store".into(),
            ));
        }
        // OR of pairs, not a row-value IN: SQLite looks each pair up in the
        // unique index only so.
        script.sql("SELECT 'taken', dossier_id, external_id, NULL FROM responses WHERE ");
        if !find_taken {
            script.sql("0 = 1");
        }
        for (n, row) in rows.iter().enumerate().filter(|_| find_taken) {
            script.sql(if n == 0 {
                "(dossier_id = "
            } else {
                " OR (dossier_id = "
            });
            script
                .bind(row.dossier.0)
                .sql(" AND external_id = ")
                .bind(row.item.external_id.clone())
                .sql(")");
        }
        let mut questionnaire_ids: Vec<i64> = rows
            .iter()
            .map(|r| r.item.completion.questionnaire_id.0)
            .collect();
        questionnaire_ids.sort_unstable();
        questionnaire_ids.dedup();
        script.sql(
            " UNION ALL SELECT 'questionnaire', id, key, name FROM questionnaires WHERE id IN (",
        );
        for (n, id) in questionnaire_ids.iter().enumerate() {
            script.sql(if n == 0 { "" } else { ", " }).bind(*id);
        }
        script.sql(")");
        if backend == Backend::Sqlite {
            // AUTOINCREMENT's rule: one more than the largest id ever used.
            script.sql(
                " UNION ALL SELECT 'sequence', MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'responses'), 0), \
                 COALESCE((SELECT MAX(id) FROM responses), 0)), NULL, NULL",
            );
        }
        let mut taken: HashSet<(i64, String)> = HashSet::new();
        let mut questionnaires: HashMap<i64, (String, String)> =
            HashMap::with_capacity(questionnaire_ids.len());
        let mut sequence = None;
        for found in script.fetch_all(conn).await? {
            let kind: String = found.try_get(0)?;
            let id: i64 = found.try_get(1)?;
            match kind.as_str() {
                "taken" => {
                    taken.insert((id, found.try_get(2)?));
                }
                "questionnaire" => {
                    questionnaires.insert(id, (found.try_get(2)?, found.try_get(3)?));
                }
                _ => sequence = Some(id),
            }
        }
        if !taken.is_empty() {
            rows.retain(|row| !taken.contains(&(row.dossier.0, row.item.external_id.clone())));
        }
        Ok(Plan {
            backend,
            rows,
            items: items.len(),
            questionnaires,
            first_id: sequence.map(|s| s + 1),
            made,
        })
    }

    /// Whether some items are left for [`create_one`].
    pub fn leaves_some(&self) -> bool {
        self.rows.len() < self.items
    }

    /// Whether making the plan made dossiers or respondents, which a rollback
    /// takes back.
    pub fn made_dossiers(&self) -> bool {
        self.made
    }

    /// SQLite: appends the INSERT statements to `script`, ending each with
    /// `;`. The rows get the ids from [`Plan::first_id`] on: the ids
    /// AUTOINCREMENT would give them, since the batch holds the write lock;
    /// the table's sequence follows. A row whose external id is taken is
    /// skipped (`ON CONFLICT DO NOTHING`): the caller compares the rows
    /// inserted with those planned.
    pub fn push_inserts(&self, script: &mut Script) -> Result<(), StoreError> {
        let Some(first_id) = self.first_id else {
            return Err(StoreError::Corrupt("no response id to start from".into()));
        };
        for (chunk_index, chunk) in self.rows.chunks(INSERT_CHUNK).enumerate() {
            script.sql(INSERT_ROWS_WITH_ID);
            for (n, row) in chunk.iter().enumerate() {
                let id = first_id + (chunk_index * INSERT_CHUNK + n) as i64;
                script
                    .sql(if n == 0 { "(" } else { ", (" })
                    .bind(id)
                    .sql(", ");
                push_values(script, row);
                script.sql(")");
            }
            script.sql(" ON CONFLICT (dossier_id, external_id) DO NOTHING; ");
        }
        Ok(())
    }

    /// Inserts the rows: on SQLite with [`Plan::push_inserts`], on
    /// PostgreSQL with RETURNING. Their ids, in order.
    pub async fn insert(&self, conn: &mut AnyConnection) -> Result<Vec<i64>, StoreError> {
        if self.rows.is_empty() {
            return Ok(Vec::new());
        }
        if self.backend == Backend::Sqlite {
            let mut script = Script::new(self.backend);
            self.push_inserts(&mut script)?;
            let done = script.execute(conn).await?;
            if done.rows_affected() != self.rows.len() as u64 {
                return Err(StoreError::Corrupt(format!(
                    "inserted {} responses, not {}",
                    done.rows_affected(),
                    self.rows.len()
                )));
            }
            return Ok(self.sqlite_ids());
        }
        let mut ids: HashMap<(i64, String), i64> = HashMap::with_capacity(self.rows.len());
        for chunk in self.rows.chunks(INSERT_CHUNK) {
            let mut script = Script::new(self.backend);
            script.sql(INSERT_ROWS);
            for (n, row) in chunk.iter().enumerate() {
                script.sql(if n == 0 { "(" } else { ", (" });
                push_values(&mut script, row);
                script.sql(")");
            }
            script.sql(" RETURNING id, dossier_id, external_id");
            for found in script.fetch_all(conn).await? {
                ids.insert((found.try_get(1)?, found.try_get(2)?), found.try_get(0)?);
            }
        }
        // RETURNING promises no order: match the ids to the rows by key.
        self.rows
            .iter()
            .map(|row| {
                ids.get(&(row.dossier.0, row.item.external_id.clone()))
                    .copied()
                    .ok_or_else(|| {
                        StoreError::Corrupt(format!(
                            "no id returned for the response {:?}",
                            row.item.external_id
                        ))
                    })
            })
            .collect()
    }

    /// The ids [`Plan::push_inserts`] gave, in order.
    pub fn sqlite_ids(&self) -> Vec<i64> {
        let first = self.first_id.unwrap_or_default();
        (first..first + self.rows.len() as i64).collect()
    }

    /// The results of the stored items, given their `ids` in order; the
    /// items left for [`create_one`] stay None.
    pub fn finish(
        self,
        ids: Vec<i64>,
        results: &mut [Option<Result<CreateResult, StoreError>>],
    ) -> Result<(), StoreError> {
        for (row, id) in self.rows.iter().zip(ids) {
            let questionnaire = row.item.completion.questionnaire_id.0;
            let (key, name) = self
                .questionnaires
                .get(&questionnaire)
                .cloned()
                .ok_or_else(|| {
                    StoreError::Corrupt(format!("questionnaire {questionnaire} does not exist"))
                })?;
            results[row.index] = Some(Ok(CreateResult::Created(Response::try_from(stored_row(
                row, id, key, name,
            ))?)));
        }
        Ok(())
    }
}

const INSERT_ROWS: &str = "INSERT INTO responses (dossier_id, respondent_id, questionnaire_id, external_id, completer_type, \
     started_at, completed_at, answers, outcome, outcome_plugin, outcome_plugin_version, outcome_plugin_sha256, \
     outcome_computed_at, entered_by, created_at, updated_at) VALUES ";
const INSERT_ROWS_WITH_ID: &str = "INSERT INTO responses (id, dossier_id, respondent_id, questionnaire_id, external_id, completer_type, \
     started_at, completed_at, answers, outcome, outcome_plugin, outcome_plugin_version, outcome_plugin_sha256, \
     outcome_computed_at, entered_by, created_at, updated_at) VALUES ";

/// The values of a row for [`INSERT_ROWS`], as create_one's INSERT binds them.
fn push_values(script: &mut Script, row: &NewRow<'_>) {
    let c = &row.item.completion;
    let now = to_millis(row.item.now);
    script
        .bind(row.dossier.0)
        .sql(", ")
        .bind(row.respondent.0)
        .sql(", ")
        .bind(c.questionnaire_id.0)
        .sql(", ")
        .bind(row.item.external_id.clone())
        .sql(", ")
        .bind(row.completer)
        .sql(", ")
        .bind(c.started_at.map(to_millis))
        .sql(", ")
        .bind(to_millis(c.completed_at))
        .sql(", ")
        .bind(row.answers.clone())
        .sql(", ")
        .bind(row.outcome.clone())
        .sql(", ")
        .bind(c.provenance.plugin.clone())
        .sql(", ")
        .bind(c.provenance.version.clone())
        .sql(", ")
        .bind(c.provenance.sha256.clone())
        .sql(", ")
        .bind(now)
        .sql(", ")
        .bind(row.item.entered_by.clone())
        .sql(", ")
        .bind(now)
        .sql(", ")
        .bind(now);
}

/// The row a read back of a response a [`Plan`] inserted would return: what
/// it bound, the columns' defaults for what it did not (flags, textvars,
/// requesters), and the questionnaire's key and name. The test
/// `batches_answer_as_a_read_back` holds it to that.
fn stored_row(
    row: &NewRow<'_>,
    id: i64,
    questionnaire_key: String,
    questionnaire_name: String,
) -> ResponseRow {
    let c = &row.item.completion;
    ResponseRow {
        id,
        dossier_id: row.dossier.0,
        respondent_id: row.respondent.0,
        questionnaire_id: c.questionnaire_id.0,
        questionnaire_key,
        questionnaire_name,
        external_id: Some(row.item.external_id.clone()),
        completer_type: row.completer.to_owned(),
        flags: "{}".to_owned(),
        textvars: "{}".to_owned(),
        measurement_id: None,
        protocol_subscription_id: None,
        non_response_id: None,
        open_from: None,
        open_till: None,
        started_at: c.started_at.map(to_millis),
        completed_at: Some(to_millis(c.completed_at)),
        aborted_at: None,
        answers: row.answers.clone(),
        outcome: Some(row.outcome.clone()),
        outcome_plugin: c.provenance.plugin.clone(),
        outcome_plugin_version: c.provenance.version.clone(),
        outcome_plugin_sha256: c.provenance.sha256.clone(),
        requesters: "[]".to_owned(),
        entered_by: row.item.entered_by.clone(),
        created_at: to_millis(row.item.now),
    }
}

/// The answered entries, for comparing a retry with what was stored.
fn answered(answers: &Answers) -> Vec<(&str, &str)> {
    let mut pairs: Vec<_> = answers
        .0
        .iter()
        .filter_map(|(k, v)| v.as_deref().map(|v| (k.as_str(), v)))
        .collect();
    pairs.sort_unstable();
    pairs
}

fn outcome_json(outcome: &Outcome) -> Result<String, StoreError> {
    serde_json::to_string(outcome).map_err(|e| StoreError::Corrupt(format!("outcome: {e}")))
}

#[allow(clippy::too_many_arguments)]
async fn insert_completed(
    conn: &mut AnyConnection,
    dossier: DossierId,
    respondent: RespondentId,
    completer: &str,
    external_id: &str,
    entered_by: Option<&str>,
    c: &Completion,
    now: DateTime<Utc>,
) -> Result<ResponseId, StoreError> {
    let row: (i64,) = sqlx::query_as(
        "INSERT INTO responses (dossier_id, respondent_id, questionnaire_id, external_id, completer_type, \
         started_at, completed_at, answers, outcome, outcome_plugin, outcome_plugin_version, outcome_plugin_sha256, \
         outcome_computed_at, entered_by, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $13, $13) RETURNING id",
    )
    .bind(dossier.0)
    .bind(respondent.0)
    .bind(c.questionnaire_id.0)
    .bind(external_id)
    .bind(completer)
    .bind(c.started_at.map(to_millis))
    .bind(to_millis(c.completed_at))
    .bind(Value::Object(c.answers.to_json()).to_string())
    .bind(outcome_json(&c.outcome)?)
    .bind(c.provenance.plugin.clone())
    .bind(c.provenance.version.clone())
    .bind(c.provenance.sha256.clone())
    .bind(to_millis(now))
    .bind(entered_by)
    .fetch_one(&mut *conn)
    .await?;
    Ok(ResponseId(row.0))
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

async fn by_external_id(
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

/// A response the service prepared (it has no external id) by its id.
async fn prepared_by_id(
    conn: &mut AnyConnection,
    dossier: DossierId,
    id: i64,
) -> Result<Option<Response>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} {FROM} WHERE r.dossier_id = $1 AND r.id = $2 AND r.external_id IS NULL AND r.withdrawn_at IS NULL"
    );
    let row: Option<ResponseRow> = sqlx::query_as(&sql)
        .bind(dossier.0)
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?;
    row.map(Response::try_from).transpose()
}
