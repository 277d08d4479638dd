//! Storing a POSTed response: the store's one create path. A response goes
//! to the group-commit writer, which stores those of a batch together
//! ([`plan::Plan`]) or one by one ([`one::create_one`]); an external id
//! already used in the dossier is decided there, in the transaction that
//! would insert it (a retry, or taken), so two requests with one external
//! id cannot both store theirs.
//!
//! A response created is handed to the store's completion sink once its
//! batch is committed (`writer/commit.rs`, `completions.rs`); the alarm its
//! outcome raises is stored in the same transaction ([`raise_alarms`]).
//!
//! Order of use: `cache` (the writer's dossier ids) → `one` → `plan` → this
//! file (the types and the [`Store`] entry points).

mod cache;
mod one;
mod plan;

use std::sync::Arc;

use chrono::{DateTime, Utc};

pub(super) use cache::DossierCache;
#[cfg(test)]
pub(super) use cache::DossierRespondents;
pub(super) use one::create_one;
pub(super) use plan::Plan;

use sqlx::AnyConnection;

use super::access_log::AccessEntry;
use super::alarms::{self, Raising};
use super::{Backend, Store, StoreError};
use crate::domain::alarm::AlarmPolicy;
use crate::domain::questionnaire::Questionnaire;
use crate::domain::response::{Completion, Response};

/// A completed response to store (POST), scored.
#[derive(Debug)]
pub struct NewResponse {
    /// The dossier's EPD id; the dossier and its patient are made on first
    /// write.
    pub epd_id: String,
    pub external_id: String,
    /// Filled out by the professional, not the patient.
    pub professional: bool,
    pub entered_by: Option<String>,
    pub completion: Completion,
    /// The definition the answers were checked against and scored with:
    /// handed with the completion to the store's sink once stored
    /// (`completions.rs`).
    pub definition: Arc<Questionnaire>,
    pub now: DateTime<Utc>,
    /// The request's access-log row, stored in the same transaction with the
    /// status the result is answered with ([`CreateResult::status`]); its
    /// own `status` is not used.
    pub access: Option<AccessEntry>,
}

impl NewResponse {
    /// The access-log row to store with this item, answered with `status`.
    pub(super) fn access_row(&self, status: u16) -> Option<AccessEntry> {
        self.access.as_ref().map(|entry| AccessEntry {
            status,
            ..entry.clone()
        })
    }
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

impl CreateResult {
    /// The status of a POST that stored its response.
    pub const CREATED: u16 = 201;

    /// The HTTP status the POST is answered with: 201, 200 for a retry,
    /// 422 when the external id is taken. The access-log row the writer
    /// stores with the response records it.
    pub fn status(&self) -> u16 {
        match self {
            CreateResult::Created(_) => Self::CREATED,
            CreateResult::Retry(_) => 200,
            CreateResult::Taken => 422,
        }
    }

    /// What a POST of `completion` is, given the response `stored` under
    /// its external id: a retry when the questionnaire and the answers
    /// given are the same (the outcome is not compared: it is computed),
    /// else taken.
    fn of_earlier(stored: Response, completion: &Completion) -> CreateResult {
        if CreateResult::is_retry(&stored, completion) {
            CreateResult::Retry(stored)
        } else {
            CreateResult::Taken
        }
    }
}

impl CreateResult {
    /// Whether storing `completion` under the external id of `stored` is
    /// a retry of it (the same questionnaire and answers given), not
    /// taken.
    pub fn is_retry(stored: &Response, completion: &Completion) -> bool {
        stored.questionnaire_id == completion.questionnaire_id
            && stored.answers.same_as(&completion.answers)
    }
}

/// Raises, in the batch's transaction, the alarms of the responses just
/// created (`results`, in the order of `items`; those not created are
/// skipped), each recorded with its POST's caller.
pub(super) async fn raise_alarms(
    conn: &mut AnyConnection,
    backend: Backend,
    policy: &AlarmPolicy,
    items: &[&NewResponse],
    results: &[Option<Result<CreateResult, StoreError>>],
) -> Result<usize, StoreError> {
    let rows: Vec<Option<AccessEntry>> = items
        .iter()
        .map(|item| item.access_row(CreateResult::CREATED))
        .collect();
    let raising: Vec<Raising<'_>> = items
        .iter()
        .zip(results)
        .zip(&rows)
        .filter_map(|((item, result), row)| match result {
            Some(Ok(CreateResult::Created(response))) if response.outcome.action.is_some() => {
                Some(Raising {
                    dossier: response.dossier_id,
                    epd_id: &item.epd_id,
                    response: response.id,
                    questionnaire_key: &item.definition.key,
                    outcome: &response.outcome,
                    at: item.now,
                    by: row.as_ref(),
                })
            }
            _ => None,
        })
        .collect();
    if raising.is_empty() {
        return Ok(0);
    }
    alarms::raise(conn, backend, policy, &raising).await
}

impl Store {
    /// Stores a completed, scored response (POST). The dossier and its
    /// patient are made on first write. An external id already used in the
    /// dossier is a retry (same questionnaire and answers given: the stored
    /// response is returned) or taken.
    /// `new.access`, the request's access-log row, is stored in the same
    /// transaction with the status of the result: when this returns `Ok`,
    /// it is on disk with the response, and the POST waits for one commit,
    /// not two.
    pub async fn create_response(&self, new: NewResponse) -> Result<CreateResult, StoreError> {
        self.writer.create(new).await
    }
}
