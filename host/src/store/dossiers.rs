//! Dossiers and their respondents. A dossier is made by the first write that
//! names it, together with its patient respondent
//! (docs/api/conventions.md#dossiers).
//!
//! Revoking a respondent's links adds one to their link generation (every
//! `completing_url` handed out names an older one) and ends their fill-out
//! sessions.

use chrono::{DateTime, Utc};
use sqlx::{AnyConnection, Row};

use super::access_log::{self, AccessEntry};
use super::{Store, StoreError};
use crate::domain::ids::{DossierId, RespondentId};
use crate::domain::respondent::{self, Respondent};
use crate::domain::time::to_millis;

/// The dossier with this EPD id and its patient, made if new.
pub(super) async fn ensure(
    conn: &mut AnyConnection,
    epd_id: &str,
    now: DateTime<Utc>,
) -> Result<(DossierId, RespondentId), StoreError> {
    if let Some(found) = find_with_patient(conn, epd_id).await? {
        return Ok(found);
    }
    // Another host may make the same dossier at the same moment: let the
    // unique key decide, then read back whichever row won.
    let now = to_millis(now);
    let inserted = sqlx::query("INSERT INTO dossiers (epd_id, created_at) VALUES ($1, $2) ON CONFLICT (epd_id) DO NOTHING RETURNING id")
        .bind(epd_id)
        .bind(now)
        .fetch_optional(&mut *conn)
        .await?;
    if let Some(row) = inserted {
        let dossier = DossierId(row.try_get(0)?);
        let patient = insert_respondent(conn, dossier, respondent::PATIENT, now).await?;
        return Ok((dossier, patient));
    }
    find_with_patient(conn, epd_id).await?.ok_or_else(|| {
        StoreError::Corrupt(format!("dossier {epd_id:?} exists without its patient"))
    })
}

async fn find_with_patient(
    conn: &mut AnyConnection,
    epd_id: &str,
) -> Result<Option<(DossierId, RespondentId)>, StoreError> {
    let row = sqlx::query(
        "SELECT d.id, r.id FROM dossiers d JOIN respondents r ON r.dossier_id = d.id AND r.respondent_type = 'patient' \
         WHERE d.epd_id = $1",
    )
    .bind(epd_id)
    .fetch_optional(&mut *conn)
    .await?;
    row.map(|r| Ok((DossierId(r.try_get(0)?), RespondentId(r.try_get(1)?))))
        .transpose()
}

/// The dossier's professional respondent, made on first use.
pub(super) async fn ensure_professional(
    conn: &mut AnyConnection,
    dossier: DossierId,
    now: DateTime<Utc>,
) -> Result<RespondentId, StoreError> {
    let found =
        sqlx::query("SELECT id FROM respondents WHERE dossier_id = $1 AND respondent_type = $2")
            .bind(dossier.0)
            .bind(respondent::PROFESSIONAL)
            .fetch_optional(&mut *conn)
            .await?;
    match found {
        Some(row) => Ok(RespondentId(row.try_get(0)?)),
        None => insert_respondent(conn, dossier, respondent::PROFESSIONAL, to_millis(now)).await,
    }
}

async fn insert_respondent(
    conn: &mut AnyConnection,
    dossier: DossierId,
    kind: &str,
    now: i64,
) -> Result<RespondentId, StoreError> {
    let row = sqlx::query("INSERT INTO respondents (dossier_id, respondent_type, label, created_at) VALUES ($1, $2, $3, $4) RETURNING id")
        .bind(dossier.0)
        .bind(kind)
        .bind(respondent::default_label(kind))
        .bind(now)
        .fetch_one(&mut *conn)
        .await?;
    Ok(RespondentId(row.try_get(0)?))
}

/// The dossier id of an EPD id, if the dossier exists.
pub(super) async fn find(
    conn: &mut AnyConnection,
    epd_id: &str,
) -> Result<Option<DossierId>, StoreError> {
    let row = sqlx::query("SELECT id FROM dossiers WHERE epd_id = $1")
        .bind(epd_id)
        .fetch_optional(&mut *conn)
        .await?;
    row.map(|r| Ok(DossierId(r.try_get(0)?))).transpose()
}

#[derive(sqlx::FromRow)]
struct RespondentRow {
    id: i64,
    dossier_id: i64,
    respondent_type: String,
    label: String,
}

impl From<RespondentRow> for Respondent {
    fn from(r: RespondentRow) -> Self {
        Respondent {
            id: RespondentId(r.id),
            dossier_id: DossierId(r.dossier_id),
            respondent_type: r.respondent_type,
            label: r.label,
        }
    }
}

const RESPONDENTS: &str = "SELECT r.id, r.dossier_id, r.respondent_type, r.label FROM respondents r \
                           JOIN dossiers d ON d.id = r.dossier_id WHERE d.epd_id = $1 AND r.respondent_type <> 'profess'";

impl Store {
    /// The listed respondents of a dossier (never the professional), by id.
    pub async fn respondents(&self, epd_id: &str) -> Result<Vec<Respondent>, StoreError> {
        let rows: Vec<RespondentRow> = sqlx::query_as(&format!("{RESPONDENTS} ORDER BY r.id"))
            .bind(epd_id)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.into_iter().map(Respondent::from).collect())
    }

    /// One listed respondent of a dossier; None when it belongs to another
    /// dossier, is the professional, or does not exist.
    pub async fn respondent(
        &self,
        epd_id: &str,
        id: RespondentId,
    ) -> Result<Option<Respondent>, StoreError> {
        let row: Option<RespondentRow> = sqlx::query_as(&format!("{RESPONDENTS} AND r.id = $2"))
            .bind(epd_id)
            .bind(id.0)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(Respondent::from))
    }
}

impl Store {
    /// Revokes every link of a listed respondent of the dossier: their
    /// link generation moves on (each `completing_url` handed out so far
    /// names an older one), and their fill-out sessions end, whether
    /// logged in or still waiting for their one-time link. The access-log
    /// row, when given, is stored in the same commit (with 204, or 404 when
    /// the dossier has no such respondent). False in that case.
    pub async fn revoke_respondent_links(
        &self,
        epd_id: &str,
        id: RespondentId,
        now: DateTime<Utc>,
        access: Option<AccessEntry>,
    ) -> Result<bool, StoreError> {
        let epd_id = epd_id.to_owned();
        let backend = self.backend;
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let found: Option<RespondentRow> =
                        sqlx::query_as(&format!("{RESPONDENTS} AND r.id = $2"))
                            .bind(&epd_id)
                            .bind(id.0)
                            .fetch_optional(&mut *conn)
                            .await?;
                    if found.is_some() {
                        sqlx::query(
                            "UPDATE respondents SET link_generation = link_generation + 1 WHERE id = $1",
                        )
                        .bind(id.0)
                        .execute(&mut *conn)
                        .await?;
                        sqlx::query(
                            "UPDATE fill_out_sessions SET ended_at = $1 WHERE respondent_id = $2 AND ended_at IS NULL",
                        )
                        .bind(to_millis(now))
                        .bind(id.0)
                        .execute(&mut *conn)
                        .await?;
                    }
                    if let Some(mut entry) = access {
                        entry.status = if found.is_some() { 204 } else { 404 };
                        access_log::insert(conn, backend, &[&entry]).await?;
                    }
                    Ok(found.is_some())
                })
            })
            .await
    }
}
