//! Candidate scorer versions and what shadow scoring found
//! (docs/operations.md#verifying-outcomes-and-trying-a-new-scorer). Kept
//! in the database, so every host sharing it shadows with the same
//! candidate and the counts are summed over all of them; the module
//! itself is in `plugin_modules` (store/outcomes.rs). A row's `seal` is
//! kept and read here, never made or checked (`trials.rs` does): whoever
//! can write these tables can write a row, not a seal.

use chrono::{DateTime, Utc};
use sqlx::Row;

use super::{Store, StoreError};
use crate::domain::time::{from_millis, to_millis};

/// A candidate to install: the version it is and the serving version it
/// is tried against.
#[derive(Debug, Clone)]
pub struct NewCandidate {
    pub name: String,
    pub sha256: String,
    pub version: String,
    pub live_sha256: String,
    pub live_version: String,
    /// Fixtures it passed when installed.
    pub fixtures_passed: i64,
    /// The seal over the row as installed (`trials::seal`).
    pub seal: String,
}

/// An installed candidate with its counts over every host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCandidate {
    pub name: String,
    pub sha256: String,
    pub version: String,
    pub live_sha256: String,
    pub live_version: String,
    pub installed_at: DateTime<Utc>,
    /// Responses it scored in the shadow of the serving version.
    pub calls: i64,
    /// Responses it was not given because a host's queue was full.
    pub dropped: i64,
    /// Responses it scored otherwise than the serving version.
    pub differences: i64,
    /// Set once promoted: it then serves in place of `live_sha256`.
    pub promoted_at: Option<DateTime<Utc>>,
    /// Fixtures it passed when installed; None in rows older than seals.
    pub fixtures_passed: Option<i64>,
    /// The seal over the row (`trials::seal`); None in rows older than
    /// seals, or written by other means than `outcomes plugin candidate`.
    pub seal: Option<String>,
}

/// A response a candidate scored otherwise than the serving version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShadowDifference {
    pub plugin: String,
    pub candidate_sha256: String,
    pub live_sha256: Option<String>,
    pub response_id: i64,
    /// Both outcomes as the JSON text they serialize to.
    pub live_outcome: String,
    pub candidate_outcome: String,
}

/// What a host's shadow worker did with one batch, for one candidate.
#[derive(Debug, Clone, Default)]
pub struct ShadowTally {
    pub plugin: String,
    pub candidate_sha256: String,
    pub calls: i64,
    pub dropped: i64,
}

impl Store {
    /// Installs `candidate` in place of any candidate of that name (its
    /// differences go with it).
    pub async fn install_candidate(
        &self,
        candidate: NewCandidate,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    sqlx::query("DELETE FROM shadow_differences WHERE plugin = $1")
                        .bind(&candidate.name)
                        .execute(&mut *conn)
                        .await?;
                    sqlx::query("DELETE FROM plugin_candidates WHERE name = $1")
                        .bind(&candidate.name)
                        .execute(&mut *conn)
                        .await?;
                    sqlx::query(
                        "INSERT INTO plugin_candidates (name, sha256, version, live_sha256, live_version, \
                         installed_at, fixtures_passed, seal) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                    )
                    .bind(candidate.name)
                    .bind(candidate.sha256)
                    .bind(candidate.version)
                    .bind(candidate.live_sha256)
                    .bind(candidate.live_version)
                    .bind(to_millis(now))
                    .bind(candidate.fixtures_passed)
                    .bind(candidate.seal)
                    .execute(&mut *conn)
                    .await?;
                    Ok(())
                })
            })
            .await
    }

    /// Every installed candidate, by name.
    pub async fn candidates(&self) -> Result<Vec<StoredCandidate>, StoreError> {
        let rows = sqlx::query(
            "SELECT c.name, c.sha256, c.version, c.live_sha256, c.live_version, c.installed_at, c.calls, \
             c.dropped, c.promoted_at, c.fixtures_passed, c.seal, (SELECT COUNT(*) FROM shadow_differences d \
             WHERE d.plugin = c.name AND d.candidate_sha256 = c.sha256) AS differences \
             FROM plugin_candidates c ORDER BY c.name",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| -> Result<StoredCandidate, StoreError> {
                Ok(StoredCandidate {
                    name: row.try_get("name")?,
                    sha256: row.try_get("sha256")?,
                    version: row.try_get("version")?,
                    live_sha256: row.try_get("live_sha256")?,
                    live_version: row.try_get("live_version")?,
                    installed_at: from_millis(row.try_get("installed_at")?),
                    calls: row.try_get("calls")?,
                    dropped: row.try_get("dropped")?,
                    differences: row.try_get("differences")?,
                    promoted_at: row
                        .try_get::<Option<i64>, _>("promoted_at")?
                        .map(from_millis),
                    fixtures_passed: row.try_get("fixtures_passed")?,
                    seal: row.try_get("seal")?,
                })
            })
            .collect()
    }

    /// Up to `limit` differences the candidate `name` recorded, oldest
    /// first.
    pub async fn shadow_differences(
        &self,
        name: &str,
        limit: i64,
    ) -> Result<Vec<ShadowDifference>, StoreError> {
        let rows = sqlx::query(
            "SELECT d.plugin, d.candidate_sha256, d.live_sha256, d.response_id, d.live_outcome, d.candidate_outcome \
             FROM shadow_differences d JOIN plugin_candidates c ON c.name = d.plugin AND c.sha256 = d.candidate_sha256 \
             WHERE d.plugin = $1 ORDER BY d.id LIMIT $2",
        )
        .bind(name)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| -> Result<ShadowDifference, StoreError> {
                Ok(ShadowDifference {
                    plugin: row.try_get("plugin")?,
                    candidate_sha256: row.try_get("candidate_sha256")?,
                    live_sha256: row.try_get("live_sha256")?,
                    response_id: row.try_get("response_id")?,
                    live_outcome: row.try_get("live_outcome")?,
                    candidate_outcome: row.try_get("candidate_outcome")?,
                })
            })
            .collect()
    }

    /// Marks the candidate `name` promoted at `now`, with the seal of the
    /// promoted row; false when there is no candidate of that name still
    /// on trial with the seal `sealed` (the row the promotion was decided
    /// on).
    pub async fn promote_candidate(
        &self,
        name: &str,
        sealed: &str,
        seal: String,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let (name, sealed) = (name.to_owned(), sealed.to_owned());
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let done = sqlx::query(
                        "UPDATE plugin_candidates SET promoted_at = $2, seal = $3 \
                         WHERE name = $1 AND promoted_at IS NULL AND seal = $4",
                    )
                    .bind(name)
                    .bind(to_millis(now))
                    .bind(seal)
                    .bind(sealed)
                    .execute(&mut *conn)
                    .await?;
                    Ok(done.rows_affected() == 1)
                })
            })
            .await
    }

    /// Drops the candidate `name` (promoted or not) and its differences;
    /// false when there was none.
    pub async fn discard_candidate(&self, name: &str) -> Result<bool, StoreError> {
        let name = name.to_owned();
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    sqlx::query("DELETE FROM shadow_differences WHERE plugin = $1")
                        .bind(&name)
                        .execute(&mut *conn)
                        .await?;
                    let done = sqlx::query("DELETE FROM plugin_candidates WHERE name = $1")
                        .bind(&name)
                        .execute(&mut *conn)
                        .await?;
                    Ok(done.rows_affected() == 1)
                })
            })
            .await
    }

    /// Adds a shadow worker's counts and differences, in one write. Counts
    /// and differences of a candidate discarded or replaced meanwhile are
    /// left out.
    pub async fn record_shadow(
        &self,
        tallies: Vec<ShadowTally>,
        differences: Vec<ShadowDifference>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    for t in &tallies {
                        sqlx::query(
                            "UPDATE plugin_candidates SET calls = calls + $1, dropped = dropped + $2 \
                             WHERE name = $3 AND sha256 = $4 AND promoted_at IS NULL",
                        )
                        .bind(t.calls)
                        .bind(t.dropped)
                        .bind(&t.plugin)
                        .bind(&t.candidate_sha256)
                        .execute(&mut *conn)
                        .await?;
                    }
                    for d in &differences {
                        sqlx::query(
                            "INSERT INTO shadow_differences (plugin, candidate_sha256, live_sha256, response_id, \
                             live_outcome, candidate_outcome, recorded_at) \
                             SELECT $1, $2, $3, $4, $5, $6, $7 WHERE EXISTS (SELECT 1 FROM plugin_candidates \
                             WHERE name = $1 AND sha256 = $2 AND promoted_at IS NULL)",
                        )
                        .bind(&d.plugin)
                        .bind(&d.candidate_sha256)
                        .bind(d.live_sha256.clone())
                        .bind(d.response_id)
                        .bind(&d.live_outcome)
                        .bind(&d.candidate_outcome)
                        .bind(to_millis(now))
                        .execute(&mut *conn)
                        .await?;
                    }
                    Ok(())
                })
            })
            .await
    }
}
