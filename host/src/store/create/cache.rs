//! The dossier and respondent ids the writer has seen, and the one query
//! that finds those of a batch's other dossiers: what lets a batch of
//! POSTed responses be stored without a query per dossier.

use std::collections::HashMap;

use sqlx::{AnyConnection, Row};

use crate::domain::ids::{DossierId, RespondentId};
use crate::domain::respondent;
use crate::store::{Script, StoreError};

/// Dossiers and respondents the writer has seen, by EPD id, so that storing
/// a response needs no query for them. Sound because neither is ever
/// deleted or changed once made; an entry made in a transaction that does
/// not commit must go, so the writer empties the cache whenever a batch, or
/// part of one, is rolled back. Should that ever change, a stale entry makes
/// the insert fail on its foreign key, and the items are stored one by one
/// without the cache.
#[derive(Debug, Default)]
pub(in crate::store) struct DossierCache {
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
pub(in crate::store) struct DossierRespondents {
    pub dossier: DossierId,
    pub patient: RespondentId,
    pub professional: Option<RespondentId>,
}

/// The respondents of the dossiers with these EPD ids (sorted, distinct),
/// in one query appended to `script` (which may hold statements to run
/// first). Dossiers that do not exist or have no patient are missing from
/// the answer: [`crate::store::dossiers::ensure`] decides about those.
pub(in crate::store) async fn respondents_of<'a>(
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
