//! A write batch's POSTed responses stored together, in a few statements,
//! with the outcome [`create_one`](super::create_one) would give each.

use std::collections::{HashMap, HashSet};

use serde_json::Value;
use sqlx::{AnyConnection, Row};

use super::cache::{self, DossierCache, DossierRespondents};
use super::{CreateResult, NewResponse};
use crate::domain::ids::{DossierId, RespondentId};
use crate::domain::response::{COMPLETER_PATIENT, COMPLETER_PROFESSIONAL, Response};
use crate::domain::time::to_millis;
use crate::store::access_log::Chain;
use crate::store::responses::{ResponseRow, outcome_json};
use crate::store::{Backend, Script, StoreError, dossiers};

/// Rows per multi-row INSERT: 24 parameters each stays far below the
/// parameter limits of SQLite (32766) and PostgreSQL (65535).
const INSERT_CHUNK: usize = 128;

/// A row a [`Plan`] inserts: which item, and the columns it computed.
struct NewRow<'a> {
    index: usize,
    item: &'a NewResponse,
    dossier: DossierId,
    respondent: RespondentId,
    completer: &'static str,
    answers: String,
    outcome: String,
    flags: String,
    textvars: String,
}

/// How the POSTed responses of one write batch are stored together, in a
/// few statements for all of them where [`create_one`](super::create_one) takes four or more
/// for each, with the same outcome. [`Plan::make`] finds the dossiers (most
/// in the writer's cache) and makes the missing ones, and in one query finds
/// which external ids are taken and the questionnaires' names; then every
/// new response is inserted in one multi-row INSERT, and the responses are
/// built from what was inserted instead of being read back.
///
/// Items whose external id is taken, or repeated in the batch, are left for
/// [`create_one`](super::create_one) ([`Plan::leaves_some`]), to be decided exactly as one by
/// one: a retry or taken.
pub(in crate::store) struct Plan<'a> {
    backend: Backend,
    rows: Vec<NewRow<'a>>,
    items: usize,
    questionnaires: HashMap<i64, (String, String)>,
    /// SQLite: the id of the first row, as AUTOINCREMENT would give it.
    first_id: Option<i64>,
    /// Whether it made dossiers or respondents.
    made: bool,
    /// SQLite: the access log's head, read in the same query.
    access_head: Option<String>,
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
            for (epd_id, ids) in cache::respondents_of(conn, script, &missing).await? {
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
                    DossierRespondents {
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
                    flags: Value::Object(c.variant.flags_json()).to_string(),
                    textvars: Value::Object(c.variant.textvars_json()).to_string(),
                });
            }
        }

        // One query for: the external ids already used (normally none, so
        // few rows come back), the key and name of each questionnaire (as a
        // read back would join them), and on SQLite the largest response id
        // ever handed out, and the access log's head (for the POSTs'
        // rows, linked in the same batch). With `find_taken` false the INSERT finds what is
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
        script.list(questionnaire_ids.iter().copied()).sql(")");
        if backend == Backend::Sqlite {
            // AUTOINCREMENT's rule: one more than the largest id ever used.
            script.sql(
                " UNION ALL SELECT 'sequence', MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'responses'), 0), \
                 COALESCE((SELECT MAX(id) FROM responses), 0)), NULL, NULL",
            );
            script.sql(" UNION ALL SELECT 'head', 0, hash, NULL FROM access_log_head WHERE id = 1");
        }
        let mut taken: HashSet<(i64, String)> = HashSet::new();
        let mut questionnaires: HashMap<i64, (String, String)> =
            HashMap::with_capacity(questionnaire_ids.len());
        let mut sequence = None;
        let mut access_head = None;
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
                "head" => access_head = Some(found.try_get(2)?),
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
            access_head,
        })
    }

    /// SQLite: the access log's head as the plan's query read it, inside
    /// the batch's transaction.
    pub fn access_log_head(&self) -> Result<Chain, StoreError> {
        self.access_head
            .clone()
            .map(Chain::at)
            .ok_or_else(|| StoreError::Corrupt("the access log has no head".into()))
    }

    /// Whether some items are left for [`create_one`](super::create_one).
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
    /// items left for [`create_one`](super::create_one) stay None.
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
     flags, textvars, started_at, completed_at, answers, outcome, outcome_plugin, outcome_plugin_version, outcome_plugin_sha256, \
     outcome_computed_at, entered_by, created_at, updated_at, outcome_abi_version, outcome_definition_sha256, \
     outcome_input_sha256, language, translation_sha256) VALUES ";
const INSERT_ROWS_WITH_ID: &str = "INSERT INTO responses (id, dossier_id, respondent_id, questionnaire_id, external_id, completer_type, \
     flags, textvars, started_at, completed_at, answers, outcome, outcome_plugin, outcome_plugin_version, outcome_plugin_sha256, \
     outcome_computed_at, entered_by, created_at, updated_at, outcome_abi_version, outcome_definition_sha256, \
     outcome_input_sha256, language, translation_sha256) VALUES ";

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
        .bind(row.flags.clone())
        .sql(", ")
        .bind(row.textvars.clone())
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
        .bind(now)
        .sql(", ")
        .bind(c.provenance.abi_version)
        .sql(", ")
        .bind(c.provenance.definition_sha256.clone())
        .sql(", ")
        .bind(c.provenance.input_sha256.clone())
        .sql(", ")
        .bind(c.language.clone())
        .sql(", ")
        .bind(c.translation_sha256.clone());
}

/// The row a read back of a response a [`Plan`] inserted would return: what
/// it bound, the columns' defaults for what it did not (requesters), and the questionnaire's key and name. The test
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
        flags: row.flags.clone(),
        textvars: row.textvars.clone(),
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
        outcome_abi_version: c.provenance.abi_version,
        outcome_definition_sha256: c.provenance.definition_sha256.clone(),
        outcome_input_sha256: c.provenance.input_sha256.clone(),
        language: Some(c.language.clone()),
        translation_sha256: c.translation_sha256.clone(),
        fill_out_page: None,
        fill_out_language: None,
        requesters: "[]".to_owned(),
        entered_by: row.item.entered_by.clone(),
        created_at: to_millis(row.item.now),
        // Not read: a POSTed response is completed, and no completing_url
        // is made for it.
        link_generation: None,
    }
}
