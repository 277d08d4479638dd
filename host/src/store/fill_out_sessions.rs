//! Fill-out sessions: made by the API with a one-time link, or by a
//! respondent's `completing_url`; logged in once; then each submitted page
//! completes a response, and interrupting aborts what is left. Each step
//! that changes responses is one transaction together with its access-log
//! row, so what a respondent did is on disk, and logged, before they are
//! told. A completed page is handed to the completion sink once stored
//! (`completions.rs`).
//!
//! A browser is known by its session cookie, of which only the SHA-256 is
//! kept. Every response query takes the session's dossier, so a session
//! never reaches another dossier's response.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::AnyConnection;

use super::access_log::{self, AccessEntry};
use super::responses::{COLUMNS, FROM, ResponseRow, outcome_json};
use super::{Backend, Scored, Script, Store, StoreError, dossiers};
use crate::domain::answers::Answers;
use crate::domain::fill_out::FillOutSession;
use crate::domain::ids::{DossierId, QuestionnaireId, RespondentId, ResponseId};
use crate::domain::response::{COMPLETER_PATIENT, Response};
use crate::domain::time::{from_millis, to_millis};

/// A session to make (`POST .../fill_out_sessions`), its fields checked.
#[derive(Debug, Clone)]
pub struct NewFillOutSession {
    pub epd_id: String,
    /// Questionnaires to fill out blank; a response each is prepared when
    /// the link is used.
    pub questionnaire_ids: Vec<QuestionnaireId>,
    /// Aborted responses of the dossier to resume, distinct.
    pub resume_ids: Vec<ResponseId>,
    pub return_to: String,
    pub progress_url: Option<String>,
    pub stylesheet: Option<String>,
    /// The language (ISO 639-1) asked for the pages.
    pub language: Option<String>,
    /// The link's key and nonce (random, made by the caller).
    pub link_key: String,
    pub nonce: String,
    pub now: DateTime<Utc>,
}

/// The URLs of a session that its pages' Content-Security-Policy names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionTargets {
    pub return_to: Option<String>,
    pub progress_url: Option<String>,
    pub stylesheet: Option<String>,
}

/// What making a session came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartSessionResult {
    Made,
    /// A response id names no aborted response of the dossier.
    NotResumable,
}

/// What using a session's link came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginResult {
    LoggedIn(FillOutSession),
    /// No session has this key and nonce.
    Unknown,
    /// The link was used before (by the session with this id).
    Spent(i64),
    /// The session ended before its link was used (the respondent's links
    /// were revoked).
    Revoked,
}

/// What opening a respondent's `completing_url` came to.
#[derive(Debug, Clone, PartialEq, Eq)]
// One per login, moved once: boxing the session would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum OpenResult {
    /// A session with every response they can fill out now (possibly
    /// none).
    Opened(FillOutSession),
    /// No such respondent.
    Unknown,
    /// The link names an older link generation: revoked.
    Revoked,
}

/// The part of a response a submitted page changes.
#[derive(Debug, Clone)]
pub struct PageAnswers {
    pub id: ResponseId,
    pub answers: Answers,
    /// When the respondent opened the page.
    pub started_at: DateTime<Utc>,
    /// The key of the page to come back to.
    pub page: String,
}

/// A response that can be filled out at `$1`: not completed, withdrawn or
/// in a non-response, and inside its window.
const FILLABLE: &str = "completed_at IS NULL AND withdrawn_at IS NULL AND non_response_id IS NULL \
    AND (open_till IS NULL OR open_till > $1) AND (open_from IS NULL OR open_from <= $1)";

const SESSION: &str = "SELECT s.id, s.dossier_id, d.epd_id, s.respondent_id, s.response_ids, s.return_to, \
    s.progress_url, s.stylesheet, s.language, s.logged_in_at, s.last_seen_at, s.ended_at \
    FROM fill_out_sessions s JOIN dossiers d ON d.id = s.dossier_id";

#[derive(sqlx::FromRow)]
struct SessionRow {
    id: i64,
    dossier_id: i64,
    epd_id: String,
    respondent_id: i64,
    response_ids: String,
    return_to: Option<String>,
    progress_url: Option<String>,
    stylesheet: Option<String>,
    language: Option<String>,
    logged_in_at: Option<i64>,
    last_seen_at: Option<i64>,
    ended_at: Option<i64>,
}

impl TryFrom<SessionRow> for FillOutSession {
    type Error = StoreError;

    fn try_from(r: SessionRow) -> Result<Self, StoreError> {
        let logged_in_at = r.logged_in_at.ok_or_else(|| {
            StoreError::Corrupt(format!("fill-out session {} is used before login", r.id))
        })?;
        Ok(FillOutSession {
            id: r.id,
            dossier_id: DossierId(r.dossier_id),
            epd_id: r.epd_id,
            respondent_id: RespondentId(r.respondent_id),
            response_ids: ids(r.id, &r.response_ids)?
                .into_iter()
                .map(ResponseId)
                .collect(),
            return_to: r.return_to,
            progress_url: r.progress_url,
            stylesheet: r.stylesheet,
            language: r.language,
            logged_in_at: from_millis(logged_in_at),
            last_seen_at: from_millis(r.last_seen_at.unwrap_or(logged_in_at)),
            ended_at: r.ended_at.map(from_millis),
        })
    }
}

/// A session as its link finds it, before login.
#[derive(sqlx::FromRow)]
struct LinkRow {
    id: i64,
    dossier_id: i64,
    respondent_id: i64,
    questionnaire_ids: String,
    resume_ids: String,
    logged_in_at: Option<i64>,
    ended_at: Option<i64>,
    epd_id: String,
}

fn ids(session: i64, text: &str) -> Result<Vec<i64>, StoreError> {
    serde_json::from_str(text)
        .map_err(|e| StoreError::Corrupt(format!("fill-out session {session}: a list of ids: {e}")))
}

fn ids_json(ids: impl IntoIterator<Item = i64>) -> String {
    Value::from(ids.into_iter().collect::<Vec<_>>()).to_string()
}

impl Store {
    /// The shared secret called `name`: the one stored, or `make()`'s,
    /// stored now. Hosts that start together agree on the first one
    /// stored.
    pub async fn host_secret(
        &self,
        name: &str,
        make: impl FnOnce() -> String,
        now: DateTime<Utc>,
    ) -> Result<String, StoreError> {
        let name = name.to_owned();
        let made = make();
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    sqlx::query(
                        "INSERT INTO host_secrets (name, value, created_at) VALUES ($1, $2, $3) \
                         ON CONFLICT (name) DO NOTHING",
                    )
                    .bind(&name)
                    .bind(&made)
                    .bind(to_millis(now))
                    .execute(&mut *conn)
                    .await?;
                    let (value,): (String,) =
                        sqlx::query_as("SELECT value FROM host_secrets WHERE name = $1")
                            .bind(&name)
                            .fetch_one(&mut *conn)
                            .await?;
                    Ok(value)
                })
            })
            .await
    }

    /// Replaces the stored value of the secret `name` with `new` if it is
    /// still `old` (replacing a secret an older version kept in plain
    /// text; of hosts doing it at once, one does, and all then read the
    /// one it stored).
    pub async fn replace_host_secret(
        &self,
        name: &str,
        old: &str,
        new: String,
    ) -> Result<(), StoreError> {
        let (name, old) = (name.to_owned(), old.to_owned());
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    sqlx::query(
                        "UPDATE host_secrets SET value = $1 WHERE name = $2 AND value = $3",
                    )
                    .bind(&new)
                    .bind(&name)
                    .bind(&old)
                    .execute(&mut *conn)
                    .await?;
                    Ok(())
                })
            })
            .await
    }

    /// Stores `value` as the secret `name`, replacing any stored before.
    pub async fn set_host_secret(
        &self,
        name: &str,
        value: String,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let name = name.to_owned();
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    sqlx::query(
                        "INSERT INTO host_secrets (name, value, created_at) VALUES ($1, $2, $3) \
                         ON CONFLICT (name) DO UPDATE SET value = excluded.value, created_at = excluded.created_at",
                    )
                    .bind(&name)
                    .bind(&value)
                    .bind(to_millis(now))
                    .execute(&mut *conn)
                    .await?;
                    Ok(())
                })
            })
            .await
    }

    /// Makes a session for the dossier's patient (the dossier too, on first
    /// write), after checking that every response to resume is an aborted
    /// response of this dossier that can still be filled out.
    pub async fn start_fill_out_session(
        &self,
        new: NewFillOutSession,
    ) -> Result<StartSessionResult, StoreError> {
        let backend = self.backend;
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    if !new.resume_ids.is_empty() {
                        let Some(dossier) = dossiers::find(conn, &new.epd_id).await? else {
                            return Ok(StartSessionResult::NotResumable);
                        };
                        let resumable = resumable(conn, backend, dossier, &new.resume_ids, new.now).await?;
                        if resumable.len() < new.resume_ids.len() {
                            return Ok(StartSessionResult::NotResumable);
                        }
                    }
                    let (dossier, patient) = dossiers::ensure(conn, &new.epd_id, new.now).await?;
                    sqlx::query(
                        "INSERT INTO fill_out_sessions (dossier_id, respondent_id, link_key, nonce, questionnaire_ids, \
                         resume_ids, return_to, progress_url, stylesheet, created_at, language) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
                    )
                    .bind(dossier.0)
                    .bind(patient.0)
                    .bind(&new.link_key)
                    .bind(&new.nonce)
                    .bind(ids_json(new.questionnaire_ids.iter().map(|q| q.0)))
                    .bind(ids_json(new.resume_ids.iter().map(|r| r.0)))
                    .bind(&new.return_to)
                    .bind(new.progress_url.clone())
                    .bind(new.stylesheet.clone())
                    .bind(to_millis(new.now))
                    .bind(new.language.clone())
                    .execute(&mut *conn)
                    .await?;
                    Ok(StartSessionResult::Made)
                })
            })
            .await
    }

    /// Where the session a link names may send the browser, and its
    /// stylesheet (return_to, progress_url, stylesheet), for the page that
    /// shows the link's button; None when no session has this key and
    /// nonce. Reads nothing of the dossier and spends nothing.
    pub async fn session_targets(
        &self,
        link_key: &str,
        nonce: &str,
    ) -> Result<Option<SessionTargets>, StoreError> {
        let row: Option<(Option<String>, Option<String>, Option<String>)> = sqlx::query_as(
            "SELECT return_to, progress_url, stylesheet FROM fill_out_sessions WHERE link_key = $1 AND nonce = $2",
        )
        .bind(link_key)
        .bind(nonce)
        .fetch_optional(&self.pool)
        .await?;
        Ok(
            row.map(|(return_to, progress_url, stylesheet)| SessionTargets {
                return_to,
                progress_url,
                stylesheet,
            }),
        )
    }

    /// Uses a session's link: spends it, prepares a response for each
    /// blank questionnaire, fixes the flow (the responses to resume that
    /// can still be filled out, then the new ones) and binds the browser
    /// whose cookie hashes to `cookie_sha256`; with the access-log row.
    pub async fn log_in_fill_out_session(
        &self,
        link_key: String,
        nonce: String,
        cookie_sha256: String,
        now: DateTime<Utc>,
        access: AccessEntry,
    ) -> Result<LoginResult, StoreError> {
        let backend = self.backend;
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let row: Option<LinkRow> = sqlx::query_as(
                        "SELECT s.id, s.dossier_id, s.respondent_id, s.questionnaire_ids, s.resume_ids, s.logged_in_at, s.ended_at, d.epd_id \
                         FROM fill_out_sessions s JOIN dossiers d ON d.id = s.dossier_id \
                         WHERE s.link_key = $1 AND s.nonce = $2",
                    )
                    .bind(&link_key)
                    .bind(&nonce)
                    .fetch_optional(&mut *conn)
                    .await?;
                    let Some(LinkRow { id, dossier_id: dossier, respondent_id: respondent, questionnaire_ids: questionnaires, resume_ids: resume, logged_in_at, ended_at, epd_id }) = row else {
                        return Ok(LoginResult::Unknown);
                    };
                    let mut entry = AccessEntry {
                        dossier: Some(epd_id),
                        ..access
                    };
                    if logged_in_at.is_none() && ended_at.is_some() {
                        entry.status = 410;
                        access_log::insert(conn, backend, &[&entry]).await?;
                        return Ok(LoginResult::Revoked);
                    }
                    // Spend the link first: of two logins at once (two hosts,
                    // or PostgreSQL's concurrent writers) one finds it spent.
                    let claimed = logged_in_at.is_none()
                        && sqlx::query(
                            "UPDATE fill_out_sessions SET logged_in_at = $1, last_seen_at = $1, cookie_sha256 = $2 \
                             WHERE id = $3 AND logged_in_at IS NULL AND ended_at IS NULL",
                        )
                        .bind(to_millis(now))
                        .bind(&cookie_sha256)
                        .bind(id)
                        .execute(&mut *conn)
                        .await?
                        .rows_affected()
                            == 1;
                    if !claimed {
                        entry.status = 403;
                        access_log::insert(conn, backend, &[&entry]).await?;
                        return Ok(LoginResult::Spent(id));
                    }
                    let dossier = DossierId(dossier);
                    let resume: Vec<ResponseId> = ids(id, &resume)?.into_iter().map(ResponseId).collect();
                    let mut flow = resumable(conn, backend, dossier, &resume, now).await?;
                    for questionnaire in ids(id, &questionnaires)? {
                        let (response,): (i64,) = sqlx::query_as(
                            "INSERT INTO responses (dossier_id, respondent_id, questionnaire_id, completer_type, created_at, updated_at) \
                             VALUES ($1, $2, $3, $4, $5, $5) RETURNING id",
                        )
                        .bind(dossier.0)
                        .bind(respondent)
                        .bind(questionnaire)
                        .bind(COMPLETER_PATIENT)
                        .bind(to_millis(now))
                        .fetch_one(&mut *conn)
                        .await?;
                        flow.push(ResponseId(response));
                    }
                    sqlx::query("UPDATE fill_out_sessions SET response_ids = $1 WHERE id = $2")
                        .bind(ids_json(flow.iter().map(|r| r.0)))
                        .bind(id)
                        .execute(&mut *conn)
                        .await?;
                    access_log::insert(conn, backend, &[&entry]).await?;
                    session_by_id(conn, id).await.map(LoginResult::LoggedIn)
                })
            })
            .await
    }

    /// Opens a session for a respondent's `completing_url` made in link
    /// generation `generation`: every response of theirs that can be filled
    /// out now, oldest first (possibly none); with the access-log row.
    pub async fn open_respondent_session(
        &self,
        respondent: RespondentId,
        generation: i64,
        cookie_sha256: String,
        now: DateTime<Utc>,
        access: AccessEntry,
    ) -> Result<OpenResult, StoreError> {
        let backend = self.backend;
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let found: Option<(i64, String, i64)> = sqlx::query_as(
                        "SELECT d.id, d.epd_id, r.link_generation FROM respondents r JOIN dossiers d ON d.id = r.dossier_id \
                         WHERE r.id = $1",
                    )
                    .bind(respondent.0)
                    .fetch_optional(&mut *conn)
                    .await?;
                    let Some((dossier, epd_id, current)) = found else {
                        return Ok(OpenResult::Unknown);
                    };
                    if generation != current {
                        let entry = AccessEntry {
                            dossier: Some(epd_id),
                            status: 410,
                            ..access
                        };
                        access_log::insert(conn, backend, &[&entry]).await?;
                        return Ok(OpenResult::Revoked);
                    }
                    let sql = format!(
                        "SELECT id FROM responses WHERE {FILLABLE} AND respondent_id = $2 AND dossier_id = $3 ORDER BY id"
                    );
                    let flow: Vec<(i64,)> = sqlx::query_as(&sql)
                        .bind(to_millis(now))
                        .bind(respondent.0)
                        .bind(dossier)
                        .fetch_all(&mut *conn)
                        .await?;
                    let (id,): (i64,) = sqlx::query_as(
                        "INSERT INTO fill_out_sessions (dossier_id, respondent_id, response_ids, logged_in_at, last_seen_at, \
                         cookie_sha256, created_at) VALUES ($1, $2, $3, $4, $4, $5, $4) RETURNING id",
                    )
                    .bind(dossier)
                    .bind(respondent.0)
                    .bind(ids_json(flow.into_iter().map(|(r,)| r)))
                    .bind(to_millis(now))
                    .bind(&cookie_sha256)
                    .fetch_one(&mut *conn)
                    .await?;
                    let session = session_by_id(conn, id).await?;
                    // Nothing to fill out is answered with a page, not a redirect.
                    let entry = AccessEntry {
                        dossier: Some(epd_id),
                        status: if session.response_ids.is_empty() { 200 } else { access.status },
                        ..access
                    };
                    access_log::insert(conn, backend, &[&entry]).await?;
                    Ok(OpenResult::Opened(session))
                })
            })
            .await
    }

    /// The session of the browser whose cookie hashes to `cookie_sha256`
    /// (live or not: the caller decides).
    pub async fn fill_out_session(
        &self,
        cookie_sha256: &str,
    ) -> Result<Option<FillOutSession>, StoreError> {
        let sql = format!("{SESSION} WHERE s.cookie_sha256 = $1");
        let row: Option<SessionRow> = sqlx::query_as(&sql)
            .bind(cookie_sha256)
            .fetch_optional(&self.pool)
            .await?;
        row.map(FillOutSession::try_from).transpose()
    }

    /// The session's responses that still exist, by id.
    pub async fn session_responses(
        &self,
        session: &FillOutSession,
    ) -> Result<Vec<Response>, StoreError> {
        if session.response_ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut script = Script::new(self.backend);
        script
            .sql(&format!("SELECT {COLUMNS} {FROM} WHERE r.dossier_id = "))
            .bind(session.dossier_id.0)
            .sql(" AND r.withdrawn_at IS NULL AND r.id IN (")
            .list(session.response_ids.iter().map(|r| r.0))
            .sql(") ORDER BY r.id");
        let mut conn = self.pool.acquire().await?;
        script
            .fetch_all(&mut conn)
            .await?
            .iter()
            .map(|row| {
                <ResponseRow as sqlx::FromRow<'_, sqlx::any::AnyRow>>::from_row(row)
                    .map_err(StoreError::from)
                    .and_then(Response::try_from)
            })
            .collect()
    }

    /// Completes a response of the session with a submitted page, if it
    /// can still be filled out: false when it cannot (completed meanwhile,
    /// expired, withdrawn). With the access-log row.
    pub async fn complete_in_session(
        &self,
        session: &FillOutSession,
        id: ResponseId,
        scored: Scored,
        now: DateTime<Utc>,
        access: AccessEntry,
    ) -> Result<bool, StoreError> {
        let backend = self.backend;
        let (session_id, dossier) = (session.id, session.dossier_id);
        let scored = Arc::new(scored);
        let writing = scored.clone();
        let policy = self.alarms.clone();
        let completed = self
            .writer
            .write(move |conn| {
                Box::pin(async move {
                    let completion = &writing.completion;
                    let sql = format!(
                        "UPDATE responses SET answers = $2, started_at = COALESCE(started_at, $3), completed_at = $1, \
                         outcome = $4, outcome_plugin = $5, outcome_plugin_version = $6, outcome_plugin_sha256 = $7, \
                         outcome_computed_at = $1, updated_at = $1, outcome_abi_version = $10, \
                         outcome_definition_sha256 = $11, outcome_input_sha256 = $12, language = $13, \
                         translation_sha256 = $14 \
                         WHERE id = $8 AND dossier_id = $9 AND {FILLABLE}"
                    );
                    let done = sqlx::query(&sql)
                        .bind(to_millis(now))
                        .bind(Value::Object(completion.answers.to_json()).to_string())
                        .bind(completion.started_at.map(to_millis))
                        .bind(outcome_json(&completion.outcome)?)
                        .bind(completion.provenance.plugin.clone())
                        .bind(completion.provenance.version.clone())
                        .bind(completion.provenance.sha256.clone())
                        .bind(id.0)
                        .bind(dossier.0)
                        .bind(completion.provenance.abi_version)
                        .bind(completion.provenance.definition_sha256.clone())
                        .bind(completion.provenance.input_sha256.clone())
                        .bind(completion.language.clone())
                        .bind(completion.translation_sha256.clone())
                        .execute(&mut *conn)
                        .await?;
                    let completed = done.rows_affected() == 1;
                    let mut entry = access;
                    if completed {
                        touch(conn, session_id, now).await?;
                    } else {
                        entry.status = 409;
                    }
                    access_log::insert(conn, backend, &[&entry]).await?;
                    if completed {
                        // The dossier's EPD id is in the session's access row.
                        let epd_id = entry.dossier.clone().unwrap_or_default();
                        let raising = super::alarms::Raising {
                            dossier,
                            epd_id: &epd_id,
                            response: id,
                            questionnaire_key: &writing.definition.key,
                            outcome: &completion.outcome,
                            at: now,
                            by: Some(&entry),
                        };
                        super::alarms::raise(conn, backend, &policy, &[raising]).await?;
                    }
                    Ok(completed)
                })
            })
            .await?;
        if completed {
            self.completions.stored(Scored::stored(scored, id));
        }
        Ok(completed)
    }

    /// Interrupts a session: the page being filled out keeps the answers
    /// given on it, and it and every other response of the session that
    /// could still be filled out become aborted (a new session can resume
    /// them); the session ends. With the access-log row.
    pub async fn interrupt_fill_out_session(
        &self,
        session: &FillOutSession,
        page: Option<PageAnswers>,
        now: DateTime<Utc>,
        access: AccessEntry,
    ) -> Result<(), StoreError> {
        let backend = self.backend;
        let (session_id, dossier) = (session.id, session.dossier_id);
        let responses: Vec<i64> = session.response_ids.iter().map(|r| r.0).collect();
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    if let Some(page) = page {
                        save_page(conn, dossier, &page, now).await?;
                    }
                    if !responses.is_empty() {
                        let mut script = Script::new(backend);
                        script
                            .sql("UPDATE responses SET aborted_at = ")
                            .bind(to_millis(now))
                            .sql(", updated_at = ")
                            .bind(to_millis(now))
                            .sql(" WHERE dossier_id = ")
                            .bind(dossier.0)
                            .sql(" AND id IN (")
                            .list(responses)
                            .sql(") AND completed_at IS NULL AND withdrawn_at IS NULL AND non_response_id IS NULL AND (open_till IS NULL OR open_till > ")
                            .bind(to_millis(now))
                            .sql(") AND (open_from IS NULL OR open_from <= ")
                            .bind(to_millis(now))
                            .sql(")");
                        script.execute(conn).await?;
                    }
                    end(conn, session_id, now).await?;
                    access_log::insert(conn, backend, &[&access]).await?;
                    Ok(())
                })
            })
            .await
    }

    /// Keeps the answers of a page of the session's response `page.id`
    /// and the page to show next, while it can still be filled out: false
    /// when it cannot (completed meanwhile, expired, withdrawn). With the
    /// access-log row.
    pub async fn save_fill_out_page(
        &self,
        session: &FillOutSession,
        page: PageAnswers,
        now: DateTime<Utc>,
        access: AccessEntry,
    ) -> Result<bool, StoreError> {
        let backend = self.backend;
        let (session_id, dossier) = (session.id, session.dossier_id);
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let saved = save_page(conn, dossier, &page, now).await?;
                    let mut entry = access;
                    if saved {
                        touch(conn, session_id, now).await?;
                    } else {
                        entry.status = 409;
                    }
                    access_log::insert(conn, backend, &[&entry]).await?;
                    Ok(saved)
                })
            })
            .await
    }

    /// Marks the session active at `now`, which keeps it from going idle.
    pub async fn touch_fill_out_session(
        &self,
        session: &FillOutSession,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let id = session.id;
        self.writer
            .write(move |conn| Box::pin(async move { touch(conn, id, now).await }))
            .await
    }

    /// Ends a session (its last questionnaire is done): its cookie opens
    /// nothing any more.
    pub async fn end_fill_out_session(
        &self,
        session: &FillOutSession,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let id = session.id;
        self.writer
            .write(move |conn| Box::pin(async move { end(conn, id, now).await }))
            .await
    }
}

/// Stores a page's answers and the page to come back to on a response of
/// `dossier` that can still be filled out; false when it cannot.
async fn save_page(
    conn: &mut AnyConnection,
    dossier: DossierId,
    page: &PageAnswers,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let sql = format!(
        "UPDATE responses SET answers = $2, started_at = COALESCE(started_at, $3), fill_out_page = $6, \
         updated_at = $1 WHERE id = $4 AND dossier_id = $5 AND {FILLABLE}"
    );
    let done = sqlx::query(&sql)
        .bind(to_millis(now))
        .bind(Value::Object(page.answers.to_json()).to_string())
        .bind(to_millis(page.started_at))
        .bind(page.id.0)
        .bind(dossier.0)
        .bind(&page.page)
        .execute(&mut *conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// What makes a fill-out session over, for [`Store::purge_fill_out_sessions`]:
/// each a condition on the time in `$1`, with the column an index serves.
const OVER_BEFORE: [&str; 3] = [
    // Ended (finished, interrupted, revoked).
    "ended_at < $1",
    // Logged in: over at the latest an idle limit after its last use (the
    // caller moves $1 back by that).
    "ended_at IS NULL AND logged_in_at IS NOT NULL AND last_seen_at < $1",
    // A one-time link never used, expired.
    "ended_at IS NULL AND logged_in_at IS NULL AND created_at < $1",
];

impl Store {
    /// Deletes up to `batch` fill-out sessions of each kind that were over
    /// before `cut`: ended before it, idle since `cut - idle`, or never
    /// logged in with a link made before `cut - link_ttl`. How many went.
    /// Nothing refers to a session: responses and the access log keep what
    /// was done in it.
    pub async fn purge_fill_out_sessions(
        &self,
        cut: DateTime<Utc>,
        idle: chrono::Duration,
        link_ttl: chrono::Duration,
        batch: usize,
    ) -> Result<usize, StoreError> {
        let limit = i64::try_from(batch).unwrap_or(i64::MAX);
        let times = [cut, cut - idle, cut - link_ttl];
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let mut deleted = 0;
                    for (condition, before) in OVER_BEFORE.iter().zip(times) {
                        let sql = format!(
                            "DELETE FROM fill_out_sessions WHERE id IN \
                             (SELECT id FROM fill_out_sessions WHERE {condition} LIMIT $2)"
                        );
                        let done = sqlx::query(&sql)
                            .bind(to_millis(before))
                            .bind(limit)
                            .execute(&mut *conn)
                            .await?;
                        deleted += usize::try_from(done.rows_affected()).unwrap_or(usize::MAX);
                    }
                    Ok(deleted)
                })
            })
            .await
    }
}

/// Of `ids`, those that are aborted responses of `dossier` that can be
/// filled out at `now`, in the order given.
async fn resumable(
    conn: &mut AnyConnection,
    backend: Backend,
    dossier: DossierId,
    ids: &[ResponseId],
    now: DateTime<Utc>,
) -> Result<Vec<ResponseId>, StoreError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut script = Script::new(backend);
    script
        .sql("SELECT id FROM responses WHERE dossier_id = ")
        .bind(dossier.0)
        .sql(" AND aborted_at IS NOT NULL AND completed_at IS NULL AND withdrawn_at IS NULL AND non_response_id IS NULL")
        .sql(" AND (open_till IS NULL OR open_till > ")
        .bind(to_millis(now))
        .sql(") AND (open_from IS NULL OR open_from <= ")
        .bind(to_millis(now))
        .sql(") AND id IN (")
        .list(ids.iter().map(|r| r.0))
        .sql(")");
    let found: Vec<i64> = script
        .fetch_all(conn)
        .await?
        .iter()
        .map(|row| sqlx::Row::try_get(row, 0))
        .collect::<Result<_, _>>()?;
    Ok(ids
        .iter()
        .copied()
        .filter(|r| found.contains(&r.0))
        .collect())
}

async fn session_by_id(conn: &mut AnyConnection, id: i64) -> Result<FillOutSession, StoreError> {
    let sql = format!("{SESSION} WHERE s.id = $1");
    let row: SessionRow = sqlx::query_as(&sql).bind(id).fetch_one(&mut *conn).await?;
    FillOutSession::try_from(row)
}

/// Marks activity, which keeps an idle session alive.
async fn touch(conn: &mut AnyConnection, id: i64, now: DateTime<Utc>) -> Result<(), StoreError> {
    sqlx::query("UPDATE fill_out_sessions SET last_seen_at = $1 WHERE id = $2")
        .bind(to_millis(now))
        .bind(id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

async fn end(conn: &mut AnyConnection, id: i64, now: DateTime<Utc>) -> Result<(), StoreError> {
    sqlx::query("UPDATE fill_out_sessions SET ended_at = COALESCE(ended_at, $1) WHERE id = $2")
        .bind(to_millis(now))
        .bind(id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}
