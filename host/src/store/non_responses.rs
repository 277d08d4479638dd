//! Non-responses (docs/api/non-responses.md): a dossier's list, one by id, a
//! professional's registration, and [`insert_non_response`], the step a
//! registration shares with the scheduler (code `04` for expired responses,
//! inside the scheduler's own transaction).
//!
//! Every read takes the dossier, so another dossier's non-response is not
//! found. A non-response's responses are those whose `non_response_id`
//! names it; `responses_non_response` (migration 0005) finds them.

use chrono::{DateTime, Utc};
use sqlx::{AnyConnection, Connection};

use super::access_log::{self, AccessEntry};
use super::{Store, StoreError, dossiers, placeholders};
use crate::domain::ids::{DossierId, NonResponseId, ResponseId};
use crate::domain::non_response::NonResponse;
use crate::domain::time::{from_millis, to_millis};

/// A registration by a professional, its fields already checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewNonResponse {
    /// A code of the reason table.
    pub reason_code: String,
    /// Free text; empty when none.
    pub reason_other: String,
    /// The responses it is for: at least one, distinct.
    pub response_ids: Vec<ResponseId>,
}

/// What a registration came to.
#[derive(Debug)]
pub enum RegisterResult {
    /// Stored; its responses are withdrawn.
    Registered(NonResponse),
    /// A response id names no response of the dossier, or a withdrawn one.
    NotFound,
    /// A response is completed or already in a non-response.
    NotPending,
}

impl RegisterResult {
    /// The HTTP status the POST is answered with; the access-log row stored
    /// with the registration records it.
    pub fn status(&self) -> u16 {
        match self {
            RegisterResult::Registered(_) => 201,
            RegisterResult::NotFound => 404,
            RegisterResult::NotPending => 422,
        }
    }
}

/// One non-response with one of its responses (or none): rows of the same
/// non-response come together, its responses in ascending order.
const SELECT: &str = "SELECT n.id, n.dossier_id, n.reason_code, n.reason_other, n.non_response_at, \
    r.id AS response_id FROM non_responses n LEFT JOIN responses r ON r.non_response_id = n.id";

#[derive(sqlx::FromRow)]
struct Row {
    id: i64,
    dossier_id: i64,
    reason_code: String,
    reason_other: String,
    non_response_at: i64,
    response_id: Option<i64>,
}

/// Folds the rows of [`SELECT`] into non-responses, keeping their order.
fn fold(rows: Vec<Row>) -> Vec<NonResponse> {
    let mut out: Vec<NonResponse> = Vec::new();
    for row in rows {
        if out.last().is_none_or(|n| n.id.0 != row.id) {
            out.push(NonResponse {
                id: NonResponseId(row.id),
                dossier_id: DossierId(row.dossier_id),
                reason_code: row.reason_code,
                reason_other: row.reason_other,
                at: from_millis(row.non_response_at),
                response_ids: Vec::new(),
            });
        }
        if let (Some(last), Some(response)) = (out.last_mut(), row.response_id) {
            last.response_ids.push(ResponseId(response));
        }
    }
    out
}

impl Store {
    /// The non-responses of a dossier by id (oldest first). An unknown
    /// dossier has none.
    pub async fn non_responses(&self, epd_id: &str) -> Result<Vec<NonResponse>, StoreError> {
        let sql = format!(
            "{SELECT} WHERE n.dossier_id = (SELECT id FROM dossiers WHERE epd_id = $1) ORDER BY n.id, r.id"
        );
        let rows: Vec<Row> = sqlx::query_as(&sql)
            .bind(epd_id)
            .fetch_all(&self.pool)
            .await?;
        Ok(fold(rows))
    }

    /// One non-response of a dossier; None for another dossier's.
    pub async fn non_response(
        &self,
        epd_id: &str,
        id: NonResponseId,
    ) -> Result<Option<NonResponse>, StoreError> {
        let sql = format!(
            "{SELECT} WHERE n.id = $2 AND n.dossier_id = (SELECT id FROM dossiers WHERE epd_id = $1) ORDER BY r.id"
        );
        let rows: Vec<Row> = sqlx::query_as(&sql)
            .bind(epd_id)
            .bind(id.0)
            .fetch_all(&self.pool)
            .await?;
        Ok(fold(rows).pop())
    }

    /// Registers a professional's non-response for pending responses of
    /// the dossier and withdraws them (they leave the response list), in
    /// one transaction. `access`, the request's access-log row, is stored
    /// in it with the status of the result ([`RegisterResult::status`]).
    pub async fn register_non_response(
        &self,
        epd_id: String,
        new: NewNonResponse,
        now: DateTime<Utc>,
        access: Option<AccessEntry>,
    ) -> Result<RegisterResult, StoreError> {
        let backend = self.backend;
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let result = register(conn, &epd_id, &new, now).await?;
                    if let Some(mut entry) = access {
                        entry.status = result.status();
                        access_log::insert(conn, backend, &[&entry]).await?;
                    }
                    Ok(result)
                })
            })
            .await
    }
}

async fn register(
    conn: &mut AnyConnection,
    epd_id: &str,
    new: &NewNonResponse,
    now: DateTime<Utc>,
) -> Result<RegisterResult, StoreError> {
    let Some(dossier) = dossiers::find(conn, epd_id).await? else {
        return Ok(RegisterResult::NotFound);
    };
    let mut ids = new.response_ids.clone();
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        return Ok(RegisterResult::NotFound);
    }
    let sql = format!(
        "SELECT id, completed_at, non_response_id FROM responses \
         WHERE dossier_id = $1 AND withdrawn_at IS NULL AND id IN ({})",
        placeholders(2, ids.len())
    );
    let mut query = sqlx::query_as::<_, (i64, Option<i64>, Option<i64>)>(&sql)
        .persistent(false)
        .bind(dossier.0);
    for id in &ids {
        query = query.bind(id.0);
    }
    let found = query.fetch_all(&mut *conn).await?;
    if found.len() < ids.len() {
        return Ok(RegisterResult::NotFound);
    }
    if found
        .iter()
        .any(|(_, completed, non_response)| completed.is_some() || non_response.is_some())
    {
        return Ok(RegisterResult::NotPending);
    }
    // In a savepoint: should another host link a response between the
    // check and the link (PostgreSQL), nothing of this one is kept.
    let mut savepoint = conn.begin().await?;
    let id = match insert_non_response(
        &mut savepoint,
        dossier,
        &new.reason_code,
        &new.reason_other,
        now,
        &ids,
    )
    .await
    {
        Ok(id) => id,
        Err(StoreError::Conflict(_)) => {
            savepoint.rollback().await?;
            return Ok(RegisterResult::NotPending);
        }
        Err(e) => return Err(e),
    };
    sqlx::query(
        "UPDATE responses SET withdrawn_at = $1, updated_at = $1 WHERE non_response_id = $2",
    )
    .bind(to_millis(now))
    .bind(id.0)
    .execute(&mut *savepoint)
    .await?;
    savepoint.commit().await?;
    let sql = format!("{SELECT} WHERE n.id = $1 ORDER BY r.id");
    let rows: Vec<Row> = sqlx::query_as(&sql)
        .bind(id.0)
        .fetch_all(&mut *conn)
        .await?;
    fold(rows)
        .pop()
        .map(RegisterResult::Registered)
        .ok_or_else(|| StoreError::Corrupt(format!("non-response {id} vanished")))
}

/// Inserts a non-response of `dossier` registered `at` and links
/// `responses` to it (their `non_response_id`). Their `withdrawn_at` is left
/// alone: the scheduler's expired responses stay listed as expired, while a
/// professional's registration withdraws its responses itself.
///
/// Each response must be one of the dossier's, not withdrawn, not
/// completed and in no non-response yet; if any is not, this answers
/// [`StoreError::Conflict`] and the caller's transaction must not be kept
/// (the non-response row is already inserted). Runs on the caller's
/// connection, inside the caller's transaction.
pub(crate) async fn insert_non_response(
    conn: &mut AnyConnection,
    dossier: DossierId,
    reason_code: &str,
    reason_other: &str,
    at: DateTime<Utc>,
    responses: &[ResponseId],
) -> Result<NonResponseId, StoreError> {
    let at = to_millis(at);
    let row: (i64,) = sqlx::query_as(
        "INSERT INTO non_responses (dossier_id, reason_code, reason_other, non_response_at) \
         VALUES ($1, $2, $3, $4) RETURNING id",
    )
    .bind(dossier.0)
    .bind(reason_code)
    .bind(reason_other)
    .bind(at)
    .fetch_one(&mut *conn)
    .await?;
    let id = NonResponseId(row.0);
    let mut ids = responses.to_vec();
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        return Ok(id);
    }
    let sql = format!(
        "UPDATE responses SET non_response_id = $1, updated_at = $2 \
         WHERE dossier_id = $3 AND non_response_id IS NULL AND completed_at IS NULL \
         AND withdrawn_at IS NULL AND id IN ({})",
        placeholders(4, ids.len())
    );
    let mut query = sqlx::query(&sql)
        .persistent(false)
        .bind(id.0)
        .bind(at)
        .bind(dossier.0);
    for response in &ids {
        query = query.bind(response.0);
    }
    let linked = query.execute(&mut *conn).await?.rows_affected();
    if linked != ids.len() as u64 {
        return Err(StoreError::Conflict(format!(
            "non-response {id} of dossier {dossier}: {linked} of {} responses could be linked",
            ids.len()
        )));
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ids::QuestionnaireId;
    use crate::domain::response::Status;
    use crate::store::{Preparation, ResponseFilter};

    /// A migrated SQLite store with one questionnaire.
    async fn store() -> (tempfile::TempDir, Store) {
        let (dir, store, _) = crate::store::testing::sqlite_store().await;
        (dir, store)
    }

    fn now() -> DateTime<Utc> {
        from_millis(1_700_000_000_000)
    }

    /// `n` responses prepared for the dossier, each open for an hour.
    async fn prepared(store: &Store, epd_id: &str, n: usize) -> Vec<ResponseId> {
        let items = (0..n)
            .map(|_| Preparation {
                questionnaire_id: QuestionnaireId(7),
                open_till: Some(now() + chrono::Duration::hours(1)),
                ..Preparation::default()
            })
            .collect();
        store
            .prepare_responses(epd_id.to_owned(), items, now())
            .await
            .expect("prepared")
            .iter()
            .map(|r| r.id)
            .collect()
    }

    async fn dossier(store: &Store, epd_id: &str) -> DossierId {
        let id: i64 = sqlx::query_scalar("SELECT id FROM dossiers WHERE epd_id = $1")
            .bind(epd_id)
            .fetch_one(&store.pool)
            .await
            .expect("the dossier exists");
        DossierId(id)
    }

    /// What the scheduler does: code 04 in a write of its own.
    async fn insert(
        store: &Store,
        dossier: DossierId,
        ids: Vec<ResponseId>,
        at: DateTime<Utc>,
    ) -> Result<NonResponseId, StoreError> {
        store
            .writer
            .write(move |conn| {
                Box::pin(
                    async move { insert_non_response(conn, dossier, "04", "", at, &ids).await },
                )
            })
            .await
    }

    #[tokio::test]
    async fn the_schedulers_step_links_responses_without_withdrawing_them() {
        let (_dir, store) = store().await;
        let ids = prepared(&store, "d1", 3).await;
        let d1 = dossier(&store, "d1").await;
        let later = now() + chrono::Duration::hours(7);
        let id = insert(&store, d1, vec![ids[2], ids[0], ids[2]], later)
            .await
            .expect("inserted");
        let listed = store.non_responses("d1").await.expect("lists");
        assert_eq!(
            listed,
            [NonResponse {
                id,
                dossier_id: d1,
                reason_code: "04".to_owned(),
                reason_other: String::new(),
                at: later,
                response_ids: vec![ids[0], ids[2]],
            }]
        );
        assert_eq!(
            store.non_response("d1", id).await.expect("reads"),
            listed.first().cloned()
        );
        // Still listed, as expired, now with their non-response.
        let responses = store
            .list_responses("d1", &ResponseFilter::default(), later)
            .await
            .expect("lists");
        let linked: Vec<(ResponseId, Option<NonResponseId>, Status)> = responses
            .iter()
            .map(|r| (r.id, r.non_response_id, Status::at(&r.times, later)))
            .collect();
        assert_eq!(
            linked,
            [
                (ids[0], Some(id), Status::Expired),
                (ids[1], None, Status::Expired),
                (ids[2], Some(id), Status::Expired),
            ]
        );
    }

    #[tokio::test]
    async fn responses_it_may_not_link_leave_nothing_behind() {
        let (_dir, store) = store().await;
        let own = prepared(&store, "d1", 1).await[0];
        let foreign = prepared(&store, "d2", 1).await[0];
        let d1 = dossier(&store, "d1").await;
        let refused = insert(&store, d1, vec![own, foreign], now()).await;
        assert!(
            matches!(refused, Err(StoreError::Conflict(_))),
            "{refused:?}"
        );
        assert_eq!(store.non_responses("d1").await.expect("lists"), []);
        let first = insert(&store, d1, vec![own], now())
            .await
            .expect("inserted");
        // Already in a non-response.
        let again = insert(&store, d1, vec![own], now()).await;
        assert!(matches!(again, Err(StoreError::Conflict(_))), "{again:?}");
        let listed = store.non_responses("d1").await.expect("lists");
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].id, first);
        // Another dossier's non-response is not found in this one.
        assert_eq!(store.non_response("d2", first).await.expect("reads"), None);
        assert_eq!(store.non_responses("d2").await.expect("lists"), []);
        assert_eq!(store.non_responses("nobody").await.expect("lists"), []);
    }

    #[tokio::test]
    async fn registering_withdraws_pending_responses_and_refuses_others() {
        let (_dir, store) = store().await;
        let ids = prepared(&store, "d1", 3).await;
        let register = |response_ids: Vec<ResponseId>| {
            let store = store.clone();
            async move {
                let new = NewNonResponse {
                    reason_code: "10".to_owned(),
                    reason_other: "verhuisd".to_owned(),
                    response_ids,
                };
                store
                    .register_non_response("d1".to_owned(), new, now(), None)
                    .await
                    .expect("answers")
            }
        };
        let RegisterResult::Registered(made) = register(vec![ids[1], ids[0]]).await else {
            panic!("not registered")
        };
        assert_eq!(made.response_ids, [ids[0], ids[1]]);
        assert_eq!(made.reason_other, "verhuisd");
        // Withdrawn: gone from the list, and not found when named again.
        let left: Vec<ResponseId> = store
            .list_responses("d1", &ResponseFilter::default(), now())
            .await
            .expect("lists")
            .iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(left, [ids[2]]);
        assert!(matches!(
            register(vec![ids[0], ids[2]]).await,
            RegisterResult::NotFound
        ));
        assert!(matches!(
            register(vec![ResponseId(9999)]).await,
            RegisterResult::NotFound
        ));
        assert_eq!(store.non_responses("d1").await.expect("lists"), [made]);
    }

    #[tokio::test]
    async fn sqlite_reads_non_responses_through_indexes() {
        let (_dir, store) = store().await;
        let sql = format!(
            "EXPLAIN QUERY PLAN {SELECT} WHERE n.dossier_id = (SELECT id FROM dossiers WHERE epd_id = $1) ORDER BY n.id, r.id"
        );
        let rows: Vec<(i64, i64, i64, String)> = sqlx::query_as(&sql)
            .bind("d1")
            .fetch_all(&store.pool)
            .await
            .expect("plan");
        let plan: Vec<&str> = rows.iter().map(|r| r.3.as_str()).collect();
        assert!(
            plan.iter()
                .any(|p| p.contains("INDEX non_responses_dossier")),
            "{plan:?}"
        );
        assert!(
            plan.iter()
                .any(|p| p.contains("INDEX responses_non_response")),
            "{plan:?}"
        );
        assert!(!plan.iter().any(|p| p.starts_with("SCAN")), "{plan:?}");
    }
}
