//! The writes given as data, POSTed responses and access-log entries,
//! stored together in a few statements: on SQLite in one script when the
//! batch holds nothing else ([`scripted`]), else in one savepoint of the
//! batch's transaction ([`run_items`]); each alone in its own savepoint
//! when that fails, or for a response the [`Plan`] leaves.

use sqlx::{AnyConnection, Connection, Executor};

use crate::domain::alarm::AlarmPolicy;
use crate::store::access_log::{self, AccessEntry};
use crate::store::create::{self, CreateResult, DossierCache, NewResponse, Plan};
use crate::store::{Backend, Script, StoreError};

/// The results of a batch's items given as data, in order.
#[derive(Debug, Default)]
pub(super) struct Results {
    pub created: Vec<Result<CreateResult, StoreError>>,
    pub accessed: Vec<Result<(), StoreError>>,
}

/// SQLite, a batch of data items only (the common case under load), in the
/// fewest round trips, each a hop to the driver's thread: `BEGIN IMMEDIATE`
/// with the queries of the [`Plan`]; every INSERT; and `COMMIT` on its own,
/// so that a failed commit is known as such. The plan does not look for
/// taken external ids: the INSERT skips their rows, which shows in its
/// count. No savepoints: if a statement fails before the commit, or an item
/// needs [`create::create_one`] (external id taken or repeated in the
/// batch), the transaction is rolled back and None returned, and the batch
/// takes the common path. A failed commit fails the batch.
pub(super) async fn scripted(
    conn: &mut AnyConnection,
    cache: &mut DossierCache,
    creates: &[&NewResponse],
    accesses: &[&[AccessEntry]],
    alarms: &AlarmPolicy,
) -> Result<Option<Results>, StoreError> {
    let mut made = false;
    let attempt = async {
        let mut opening = Script::new(Backend::Sqlite);
        opening.sql("BEGIN IMMEDIATE; ");
        let mut plan = None;
        // The access log's head comes with the plan's last query, or alone.
        let mut chain = if creates.is_empty() {
            access_log::read_head(conn, Backend::Sqlite, opening).await?
        } else {
            let made_plan =
                Plan::make(conn, Backend::Sqlite, cache, creates, opening, false).await?;
            made = made_plan.made_dossiers();
            if made_plan.leaves_some() {
                return Ok(None);
            }
            let chain = made_plan.access_log_head()?;
            plan = Some(made_plan);
            chain
        };
        let mut inserts = Script::new(Backend::Sqlite);
        // Every item of a plan that leaves none is created: the POSTs'
        // access-log rows say 201, and go with the batch's other rows.
        let logged: Vec<AccessEntry> = creates
            .iter()
            .filter_map(|c| c.access_row(CreateResult::CREATED))
            .collect();
        let entries: Vec<&AccessEntry> =
            accesses.iter().copied().flatten().chain(&logged).collect();
        let mut rows = 0;
        if let Some(plan) = &plan {
            plan.push_inserts(&mut inserts)?;
            rows += creates.len();
        }
        rows += access_log::push_inserts(&mut inserts, &mut chain, &entries);
        let done = inserts.execute(conn).await?;
        if done.rows_affected() != rows as u64 {
            // An external id was taken, and its row skipped: start over on
            // the common path, which decides such items one by one.
            return Ok(None);
        }
        let mut created: Vec<Option<Result<CreateResult, StoreError>>> =
            creates.iter().map(|_| None).collect();
        if let Some(plan) = plan {
            let ids = plan.sqlite_ids();
            plan.finish(ids, &mut created)?;
        }
        create::raise_alarms(conn, Backend::Sqlite, alarms, creates, &created).await?;
        let created = created
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|| Err(StoreError::Corrupt("a response was not stored".into())))
            })
            .collect();
        Ok::<_, StoreError>(Some(Results {
            created,
            accessed: accesses.iter().map(|_| Ok(())).collect(),
        }))
    }
    .await;
    match attempt {
        Ok(Some(results)) => {
            conn.execute("COMMIT").await?;
            Ok(Some(results))
        }
        Ok(None) | Err(_) => {
            if let Err(e) = &attempt {
                tracing::debug!(error = %e, "storing a batch in one go failed; storing it with savepoints");
            }
            if made || attempt.is_err() {
                // It may name dossiers the rollback takes back.
                cache.clear();
            }
            // There may be no transaction to roll back, if BEGIN failed.
            let _ = conn.execute("ROLLBACK").await;
            Ok(None)
        }
    }
}

/// Stores the batch's writes given as data inside the batch's transaction:
/// all together in one savepoint (responses by a [`Plan`], access-log
/// entries, theirs included, in one INSERT), or, if that fails, each alone
/// in its own savepoint, a response with its access-log row. Creates the
/// plan leaves (external id taken or repeated) are decided one by one
/// afterwards. An error is one the transaction cannot
/// survive.
pub(super) async fn run_items(
    conn: &mut AnyConnection,
    backend: Backend,
    cache: &mut DossierCache,
    creates: &[&NewResponse],
    accesses: &[&[AccessEntry]],
    alarms: &AlarmPolicy,
) -> Result<Results, StoreError> {
    let mut created: Vec<Option<Result<CreateResult, StoreError>>> =
        creates.iter().map(|_| None).collect();
    let mut accessed: Vec<Result<(), StoreError>> = Vec::with_capacity(accesses.len());

    let mut savepoint = conn.begin().await?;
    let fast = async {
        let mut logged = Vec::new();
        if !creates.is_empty() {
            let plan = Plan::make(
                &mut savepoint,
                backend,
                cache,
                creates,
                Script::new(backend),
                true,
            )
            .await?;
            let ids = plan.insert(&mut savepoint).await?;
            plan.finish(ids, &mut created)?;
            // The access-log rows of the POSTs stored; those the plan left
            // go with their items, one by one.
            logged = creates
                .iter()
                .zip(&created)
                .filter_map(|(item, result)| match result {
                    Some(Ok(result)) => item.access_row(result.status()),
                    _ => None,
                })
                .collect();
        }
        let entries: Vec<&AccessEntry> =
            accesses.iter().copied().flatten().chain(&logged).collect();
        if !entries.is_empty() {
            access_log::insert(&mut savepoint, backend, &entries).await?;
        }
        create::raise_alarms(&mut savepoint, backend, alarms, creates, &created).await?;
        Ok::<_, StoreError>(())
    }
    .await;
    match fast {
        Ok(()) => {
            savepoint.commit().await?;
            accessed.extend(accesses.iter().map(|_| Ok(())));
        }
        Err(e) => {
            savepoint.rollback().await?;
            // It may name dossiers made in the savepoint.
            cache.clear();
            created.iter_mut().for_each(|r| *r = None);
            tracing::debug!(error = %e, creates = creates.len(), accesses = accesses.len(), "storing writes together failed; storing them one by one");
            for entries in accesses {
                let entries: Vec<&AccessEntry> = entries.iter().collect();
                accessed.push(
                    alone(conn, async |c| {
                        access_log::insert(c, backend, &entries).await
                    })
                    .await?,
                );
            }
        }
    }
    for (item, result) in creates
        .iter()
        .zip(created.iter_mut())
        .filter(|(_, r)| r.is_none())
    {
        *result = Some(
            alone(conn, async |c| {
                create::create_one(c, backend, item, alarms).await
            })
            .await?,
        );
    }
    let created = created
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(StoreError::Corrupt("a response was not stored".into()))))
        .collect();
    Ok(Results { created, accessed })
}

/// Runs `write` in a savepoint of its own, kept if it succeeds. The outer
/// error is one the transaction cannot survive.
async fn alone<T>(
    conn: &mut AnyConnection,
    write: impl AsyncFnOnce(&mut AnyConnection) -> Result<T, StoreError>,
) -> Result<Result<T, StoreError>, StoreError> {
    let mut savepoint = conn.begin().await?;
    let result = write(&mut savepoint).await;
    if result.is_ok() {
        savepoint.commit().await?;
    } else {
        savepoint.rollback().await?;
    }
    Ok(result)
}
