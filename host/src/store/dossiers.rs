//! Dossiers and their respondents. A dossier is made by the first write that
//! names it, together with its patient respondent (decisions.md §3).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::{AnyConnection, Row};

use super::{Script, Store, StoreError};
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

/// Dossiers and respondents the writer has seen, by EPD id, so that storing
/// a response needs no query for them. Sound because neither is ever
/// deleted or changed once made; an entry made in a transaction that does
/// not commit must go, so the writer empties the cache whenever a batch, or
/// part of one, is rolled back. Should that ever change, a stale entry makes
/// the insert fail on its foreign key, and the items are stored one by one
/// without the cache.
#[derive(Debug, Default)]
pub(super) struct DossierCache {
    entries: HashMap<String, DossierRespondents>,
}

/// Entries kept at most (about 100 bytes each); beyond, the cache starts over.
const CACHE_LIMIT: usize = 100_000;

impl DossierCache {
    pub fn get(&self, epd_id: &str) -> Option<DossierRespondents> {
        self.entries.get(epd_id).copied()
    }

    pub fn insert(&mut self, epd_id: String, ids: DossierRespondents) {
        if self.entries.len() >= CACHE_LIMIT && !self.entries.contains_key(&epd_id) {
            self.entries.clear();
        }
        self.entries.insert(epd_id, ids);
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

/// The ids a response of a dossier needs.
#[derive(Debug, Clone, Copy)]
pub(super) struct DossierRespondents {
    pub dossier: DossierId,
    pub patient: RespondentId,
    pub professional: Option<RespondentId>,
}

/// The respondents of the dossiers with these EPD ids (sorted, distinct),
/// in one query appended to `script` (which may hold statements to run
/// first). Dossiers that do not exist or have no patient are missing from
/// the answer: [`ensure`] decides about those.
pub(super) async fn respondents_of<'a>(
    conn: &mut AnyConnection,
    mut script: Script,
    epd_ids: &[&'a str],
) -> Result<HashMap<&'a str, DossierRespondents>, StoreError> {
    script.sql("SELECT d.epd_id, d.id, r.respondent_type, r.id FROM dossiers d JOIN respondents r ON r.dossier_id = d.id AND r.respondent_type IN (");
    script
        .bind(respondent::PATIENT)
        .sql(", ")
        .bind(respondent::PROFESSIONAL)
        .sql(") WHERE d.epd_id IN (");
    for (n, epd_id) in epd_ids.iter().enumerate() {
        script
            .sql(if n == 0 { "" } else { ", " })
            .bind((*epd_id).to_owned());
    }
    script.sql(")");
    let mut found: HashMap<&'a str, (DossierId, Option<RespondentId>, Option<RespondentId>)> =
        HashMap::with_capacity(epd_ids.len());
    for row in script.fetch_all(conn).await? {
        let epd_id: String = row.try_get(0)?;
        let Ok(at) = epd_ids.binary_search(&epd_id.as_str()) else {
            continue;
        };
        let entry = found
            .entry(epd_ids[at])
            .or_insert((DossierId(row.try_get(1)?), None, None));
        let kind: String = row.try_get(2)?;
        let id = RespondentId(row.try_get(3)?);
        if kind == respondent::PATIENT {
            entry.1 = Some(id);
        } else {
            entry.2 = Some(id);
        }
    }
    Ok(found
        .into_iter()
        .filter_map(|(epd_id, (dossier, patient, professional))| {
            Some((
                epd_id,
                DossierRespondents {
                    dossier,
                    patient: patient?,
                    professional,
                },
            ))
        })
        .collect())
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
