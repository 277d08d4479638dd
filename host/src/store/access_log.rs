//! The access log (NEN 7513): one row per request that touches dossier
//! data, reads and refusals included, and one per dossier for a read of
//! several; refusals come counted, one row per client, route, status and
//! token each minute (`refusals`). Append-only: this module has no update
//! or delete, and the schema's triggers refuse them.
//!
//! Tamper evidence: every row carries the SHA-256 of its fields and of the
//! row before it ([`link_hash`]), in id order, and `access_log_head` holds
//! the last row's hash. Rows are appended only by [`insert`] and
//! [`push_inserts`], which read the head once for all the rows they write
//! (on PostgreSQL locking it, so that the appends of several hosts form one
//! chain) and compute the hashes here, so a batch costs no extra round
//! trip per row. [`Store::verify_access_log`] walks the chain. Id order is
//! append order because the ids come from the log itself as each row is
//! inserted, under that lock: an insert that names an id is refused by
//! the schema (migration 0016).
//!
//! Several PostgreSQL hosts, one lock order. The head stays locked until
//! the writer's batch commits, and a batch holds other row locks too: the
//! rows its writes update (a respondent whose links are revoked, a
//! session, a pending response) and the keys its inserts claim (a POST's
//! external id). Taking the head wherever a batch first appends, two hosts
//! could deadlock: one batch updates a respondent and then waits for the
//! head, while the other host's batch, holding the head after its first
//! write's access row, waits for that respondent in its second write.
//! PostgreSQL breaks the cycle after `deadlock_timeout` by failing one
//! transaction, and with it every request of that batch. So every
//! PostgreSQL batch locks the head first, before anything else
//! ([`BEGIN_LOCKING_HEAD`]): a batch never holds another row while it
//! waits for the head, and batches of several hosts take their turns on
//! it. Nothing else locks the head (verification reads a snapshot). On
//! SQLite a batch holds the database's write lock throughout, which is
//! the same order.

use chrono::{DateTime, Utc};
use futures_util::TryStreamExt;
use sha2::{Digest as _, Sha256};
use sqlx::{AnyConnection, Executor as _, Row as _};

use super::{Backend, Script, Store, StoreError};
use crate::domain::time::{from_millis, to_millis};

/// One access.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessEntry {
    pub at: DateTime<Utc>,
    /// The verified caller: the token's consumer key (Basic) or the JWT's
    /// kid once its signature checked out; None when refused before.
    pub consumer_key: Option<String>,
    /// The verified JWT's `iss`, for bearer callers.
    pub jwt_issuer: Option<String>,
    /// Who a refused caller claimed to be, unverified: the Basic user name
    /// or the JWT's `kid`. None once the identity is verified.
    pub claimed_key: Option<String>,
    /// The `iss` of a refused JWT, unverified.
    pub claimed_issuer: Option<String>,
    /// The `sub` of a refused JWT, unverified.
    pub claimed_subject: Option<String>,
    /// The dossier the request named, or one of those a read of several
    /// answered.
    pub dossier: Option<String>,
    /// Method and route, e.g. `GET /api/v1/dossiers/{dossier_id}/responses`.
    pub action: String,
    /// The HTTP status answered.
    pub status: u16,
    /// The client address as determined for IP allow-lists.
    pub client: String,
    pub request_id: Option<String>,
    /// How many refusals this row counts (the first one's time, request id
    /// and route; docs/api/rights.md#access-log); None for the row of one
    /// request.
    pub refusals: Option<u32>,
}

/// A value covered by a row's hash.
enum Field<'a> {
    Int(i64),
    Text(&'a str),
    /// Left out of the hash altogether, so that a column added later, NULL
    /// in the rows written before it, leaves their hashes as they were.
    Null,
}

impl<'a> Field<'a> {
    fn text(value: &'a Option<String>) -> Field<'a> {
        value.as_deref().map_or(Field::Null, Field::Text)
    }
}

/// The columns a row's hash covers, by name, as stored. Adding a column is
/// one line here: it must be None in the rows written before it (or map
/// its default to [`Field::Null`]), so that their links still verify.
fn hashed_fields(e: &AccessEntry) -> Vec<(&'static str, Field<'_>)> {
    vec![
        ("at", Field::Int(to_millis(e.at))),
        ("consumer_key", Field::text(&e.consumer_key)),
        ("jwt_issuer", Field::text(&e.jwt_issuer)),
        ("claimed_key", Field::text(&e.claimed_key)),
        ("claimed_issuer", Field::text(&e.claimed_issuer)),
        ("claimed_subject", Field::text(&e.claimed_subject)),
        ("dossier", Field::text(&e.dossier)),
        ("action", Field::Text(&e.action)),
        ("status", Field::Int(i64::from(e.status))),
        ("client", Field::Text(&e.client)),
        ("request_id", Field::text(&e.request_id)),
        (
            "refusals",
            e.refusals.map_or(Field::Null, |n| Field::Int(i64::from(n))),
        ),
    ]
}

/// The hash before the first row of the chain.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// A row's hash: SHA-256 (hex) over the previous row's hash and each field
/// that is not NULL as name, type and value, every variable part prefixed
/// with its length (8 bytes, big-endian), so no two rows serialize alike.
pub fn link_hash(prev: &str, entry: &AccessEntry) -> String {
    fn put(h: &mut Sha256, bytes: &[u8]) {
        h.update((bytes.len() as u64).to_be_bytes());
        h.update(bytes);
    }
    let mut h = Sha256::new();
    put(&mut h, prev.as_bytes());
    for (name, value) in hashed_fields(entry) {
        match value {
            Field::Null => continue,
            Field::Int(n) => {
                put(&mut h, name.as_bytes());
                h.update(b"i");
                h.update(n.to_be_bytes());
            }
            Field::Text(s) => {
                put(&mut h, name.as_bytes());
                h.update(b"s");
                put(&mut h, s.as_bytes());
            }
        }
    }
    format!("{:x}", h.finalize())
}

/// The head of the chain while rows are appended: the hash the next row
/// links to.
#[derive(Debug)]
pub(super) struct Chain {
    head: String,
}

impl Chain {
    /// The head as read in the appending transaction.
    pub(super) fn at(head: String) -> Chain {
        Chain { head }
    }

    /// Links `entry`: its previous hash and its own, which becomes the head.
    fn link(&mut self, entry: &AccessEntry) -> (String, String) {
        let hash = link_hash(&self.head, entry);
        (std::mem::replace(&mut self.head, hash.clone()), hash)
    }
}

/// Reads the head inside the appending transaction. On PostgreSQL the
/// row is locked until the transaction ends: another host appending waits,
/// then reads the head this transaction left. On SQLite the transaction
/// already holds the database's write lock. `opening` holds statements to
/// run first, in the same round trip (SQLite only).
pub(super) async fn read_head(
    conn: &mut AnyConnection,
    backend: Backend,
    mut opening: Script,
) -> Result<Chain, StoreError> {
    opening.sql(HEAD_QUERY);
    if backend == Backend::Postgres {
        opening.sql(" FOR UPDATE");
    }
    let row = opening
        .fetch_all(conn)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| StoreError::Corrupt("the access log has no head".into()))?;
    Ok(Chain::at(row.try_get(0)?))
}

/// The head's hash (SQLite: in the same round trip as other queries).
const HEAD_QUERY: &str = "SELECT hash FROM access_log_head WHERE id = 1";

/// How the writer begins a batch's transaction on PostgreSQL: with the
/// head locked before any other row, in the same round trip, so that
/// batches of several hosts cannot deadlock (see the module's docs).
pub(in crate::store) const BEGIN_LOCKING_HEAD: &str =
    "BEGIN; SELECT hash FROM access_log_head WHERE id = 1 FOR UPDATE";

const COLUMNS: &str = "at, consumer_key, jwt_issuer, claimed_key, claimed_issuer, claimed_subject, \
     dossier, action, status, client, request_id, refusals, prev_hash, hash";

#[derive(sqlx::FromRow)]
struct Row {
    id: i64,
    at: i64,
    consumer_key: Option<String>,
    jwt_issuer: Option<String>,
    claimed_key: Option<String>,
    claimed_issuer: Option<String>,
    claimed_subject: Option<String>,
    dossier: Option<String>,
    action: String,
    status: i64,
    client: String,
    request_id: Option<String>,
    refusals: Option<i64>,
    prev_hash: Option<String>,
    hash: Option<String>,
}

impl From<Row> for AccessEntry {
    fn from(r: Row) -> AccessEntry {
        AccessEntry {
            at: from_millis(r.at),
            consumer_key: r.consumer_key,
            jwt_issuer: r.jwt_issuer,
            claimed_key: r.claimed_key,
            claimed_issuer: r.claimed_issuer,
            claimed_subject: r.claimed_subject,
            dossier: r.dossier,
            action: r.action,
            status: u16::try_from(r.status).unwrap_or_default(),
            client: r.client,
            request_id: r.request_id,
            refusals: r.refusals.and_then(|n| u32::try_from(n).ok()),
        }
    }
}

/// What `outcomes access-log verify` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verification {
    /// Every link holds.
    Intact {
        /// Rows in the chain.
        chained: u64,
        /// Rows written before the chain started (migration 0013).
        before_chain: u64,
        /// The last row's hash: kept somewhere the database's owner cannot
        /// write, it shows later that the chain was not rewritten whole.
        head: String,
    },
    /// The first link that does not hold.
    Broken {
        /// The row where it breaks (None: the end of the log).
        id: Option<i64>,
        /// What differs.
        reason: String,
    },
}

impl Store {
    /// Appends one entry; returns once it is durable.
    pub async fn append_access(&self, entry: AccessEntry) -> Result<(), StoreError> {
        self.writer.append_access(vec![entry]).await
    }

    /// Appends entries together (a read of several dossiers: one each);
    /// returns once all are durable.
    pub async fn append_accesses(&self, entries: Vec<AccessEntry>) -> Result<(), StoreError> {
        if entries.is_empty() {
            return Ok(());
        }
        self.writer.append_access(entries).await
    }

    /// Entries for one dossier (or all), at or after `since`, oldest first.
    pub async fn access_log(
        &self,
        dossier: Option<&str>,
        since: Option<DateTime<Utc>>,
    ) -> Result<Vec<AccessEntry>, StoreError> {
        let rows: Vec<Row> = sqlx::query_as(&format!(
            "SELECT id, {COLUMNS} FROM access_log \
             WHERE ($1 = '' OR dossier = $2) AND at >= $3 ORDER BY id"
        ))
        .bind(dossier.unwrap_or_default())
        .bind(dossier.unwrap_or_default())
        .bind(since.map_or(i64::MIN, to_millis))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(AccessEntry::from).collect())
    }

    /// Walks the chain in id order and reports its first broken link: a row
    /// whose fields no longer give its hash (changed), whose `prev_hash` is
    /// not the hash of the row before it (a row removed or put in), without
    /// a hash after the chain started, or a last row that is not the head
    /// (rows removed from the end, or added without moving the head). Reads
    /// the head and the rows in one snapshot, so appends while it runs are
    /// not seen at all.
    pub async fn verify_access_log(&self) -> Result<Verification, StoreError> {
        let mut tx = self.pool.begin().await?;
        if self.backend == Backend::Postgres {
            tx.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                .await?;
        }
        let head = sqlx::query("SELECT hash, chain_start FROM access_log_head WHERE id = 1")
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| StoreError::Corrupt("the access log has no head".into()))?;
        let recorded_head: String = head.try_get(0)?;
        let chain_start: i64 = head.try_get(1)?;
        let query = format!("SELECT id, {COLUMNS} FROM access_log ORDER BY id");
        let verification = {
            let mut rows = sqlx::query_as::<_, Row>(&query).fetch(&mut *tx);
            walk(&mut rows, chain_start, &recorded_head).await?
        };
        tx.rollback().await?;
        Ok(verification)
    }
}

/// [`Store::verify_access_log`]'s walk over the rows, oldest first.
async fn walk(
    rows: &mut (impl futures_util::Stream<Item = Result<Row, sqlx::Error>> + Unpin),
    chain_start: i64,
    recorded_head: &str,
) -> Result<Verification, StoreError> {
    let (mut chained, mut before_chain) = (0u64, 0u64);
    let mut prev = GENESIS.to_owned();
    let broken = |id, reason: String| Verification::Broken {
        id: Some(id),
        reason,
    };
    while let Some(row) = rows.try_next().await? {
        let id = row.id;
        if id <= chain_start {
            before_chain += 1;
            continue;
        }
        let (Some(stored_prev), Some(stored)) = (row.prev_hash.clone(), row.hash.clone()) else {
            return Ok(broken(id, "the row has no hash".into()));
        };
        if stored_prev != prev {
            return Ok(broken(
                id,
                format!(
                    "its prev_hash {stored_prev} is not {prev}, the hash of the row before it: a row was removed or put in before it"
                ),
            ));
        }
        let computed = link_hash(&prev, &AccessEntry::from(row));
        if computed != stored {
            return Ok(broken(
                id,
                format!(
                    "its fields hash to {computed}, not to its stored hash {stored}: the row was changed"
                ),
            ));
        }
        chained += 1;
        prev = stored;
    }
    if prev != recorded_head {
        return Ok(Verification::Broken {
            id: None,
            reason: format!(
                "the last row's hash is {prev}, but the head records {recorded_head}: rows were removed from the end, or added past the service"
            ),
        });
    }
    Ok(Verification::Intact {
        chained,
        before_chain,
        head: prev,
    })
}

/// Rows per multi-row INSERT: 14 parameters each stays below the
/// parameter limits of SQLite (32766) and PostgreSQL (65535), so a read of
/// 10,000 dossiers takes ten statements.
const INSERT_CHUNK: usize = 1000;

/// An entry with its link: the hash before it and its own.
struct Linked<'a> {
    entry: &'a AccessEntry,
    prev: String,
    hash: String,
}

/// Links `entries`, in order, from `chain`'s head on.
fn link_all<'a>(chain: &mut Chain, entries: &[&'a AccessEntry]) -> Vec<Linked<'a>> {
    entries
        .iter()
        .map(|entry| {
            let (prev, hash) = chain.link(entry);
            Linked { entry, prev, hash }
        })
        .collect()
}

/// Appends INSERT statements for `entries`, linked from `chain`, to
/// `script`, then the head's update, ending each with `;` (SQLite only,
/// where a script may hold several). The rows they change: the entries
/// and the head, or none.
pub(super) fn push_inserts(
    script: &mut Script,
    chain: &mut Chain,
    entries: &[&AccessEntry],
) -> usize {
    if entries.is_empty() {
        return 0;
    }
    for chunk in link_all(chain, entries).chunks(INSERT_CHUNK) {
        push_values(script, chunk);
        script.sql("; ");
    }
    script
        .sql("UPDATE access_log_head SET hash = ")
        .bind(chain.head.clone())
        .sql(" WHERE id = 1; ");
    entries.len() + 1
}

/// One multi-row INSERT of `rows`.
fn push_values(script: &mut Script, rows: &[Linked<'_>]) {
    script.sql(&format!("INSERT INTO access_log ({COLUMNS}) VALUES "));
    for (n, row) in rows.iter().enumerate() {
        let entry = row.entry;
        script
            .sql(if n == 0 { "(" } else { ", (" })
            .bind(to_millis(entry.at))
            .sql(", ")
            .bind(entry.consumer_key.clone())
            .sql(", ")
            .bind(entry.jwt_issuer.clone())
            .sql(", ")
            .bind(entry.claimed_key.clone())
            .sql(", ")
            .bind(entry.claimed_issuer.clone())
            .sql(", ")
            .bind(entry.claimed_subject.clone())
            .sql(", ")
            .bind(entry.dossier.clone())
            .sql(", ")
            .bind(entry.action.clone())
            .sql(", ")
            .bind(i64::from(entry.status))
            .sql(", ")
            .bind(entry.client.clone())
            .sql(", ")
            .bind(entry.request_id.clone())
            .sql(", ")
            .bind(entry.refusals.map(i64::from))
            .sql(", ")
            .bind(row.prev.clone())
            .sql(", ")
            .bind(row.hash.clone())
            .sql(")");
    }
}

/// Appends `entries` in the caller's transaction: reads (and on PostgreSQL
/// locks) the head, then inserts them linked, a thousand per statement,
/// and moves the head (on PostgreSQL in the last INSERT's statement).
pub(super) async fn insert(
    conn: &mut AnyConnection,
    backend: Backend,
    entries: &[&AccessEntry],
) -> Result<(), StoreError> {
    if entries.is_empty() {
        return Ok(());
    }
    let mut chain = read_head(conn, backend, Script::new(backend)).await?;
    if backend == Backend::Sqlite {
        let mut script = Script::new(backend);
        push_inserts(&mut script, &mut chain, entries);
        script.execute(conn).await?;
        return Ok(());
    }
    let rows = link_all(&mut chain, entries);
    let chunks: Vec<&[Linked<'_>]> = rows.chunks(INSERT_CHUNK).collect();
    for (n, chunk) in chunks.iter().enumerate() {
        let mut script = Script::new(backend);
        if n + 1 == chunks.len() {
            script
                .sql("WITH head AS (UPDATE access_log_head SET hash = ")
                .bind(chain.head.clone())
                .sql(" WHERE id = 1) ");
        }
        push_values(&mut script, chunk);
        script.execute(conn).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> AccessEntry {
        AccessEntry {
            at: from_millis(1_772_355_600_000),
            consumer_key: Some("epd".into()),
            dossier: Some("d1".into()),
            action: "GET /api/v1/dossiers/{dossier_id}/responses".into(),
            status: 200,
            client: "127.0.0.1".into(),
            ..AccessEntry::default()
        }
    }

    #[test]
    fn every_field_and_the_previous_hash_change_the_hash() {
        let base = link_hash(GENESIS, &entry());
        assert_eq!(base.len(), 64);
        assert_eq!(base, link_hash(GENESIS, &entry()), "deterministic");
        assert_ne!(base, link_hash(&"1".repeat(64), &entry()));
        let changes: [fn(&mut AccessEntry); 11] = [
            |e| e.at += chrono::Duration::milliseconds(1),
            |e| e.consumer_key = None,
            |e| e.jwt_issuer = Some("iss".into()),
            |e| e.claimed_key = Some("epd".into()),
            |e| e.claimed_issuer = Some("iss".into()),
            |e| e.claimed_subject = Some("d1".into()),
            |e| e.dossier = Some("d2".into()),
            |e| e.action.push('x'),
            |e| e.status = 201,
            |e| e.client = "127.0.0.2".into(),
            |e| e.request_id = Some(String::new()),
        ];
        for change in changes {
            let mut changed = entry();
            change(&mut changed);
            assert_ne!(link_hash(GENESIS, &changed), base, "{changed:?}");
        }
    }

    #[test]
    fn a_value_cannot_move_into_its_neighbour() {
        // Length prefixes and names: "ab" + "c" is not "a" + "bc", and the
        // same text in another column is another row.
        let mut one = entry();
        one.consumer_key = Some("ab".into());
        one.jwt_issuer = Some("c".into());
        let mut two = entry();
        two.consumer_key = Some("a".into());
        two.jwt_issuer = Some("bc".into());
        assert_ne!(link_hash(GENESIS, &one), link_hash(GENESIS, &two));
        let mut verified = entry();
        verified.consumer_key = Some("x".into());
        let mut claimed = entry();
        claimed.consumer_key = None;
        claimed.claimed_key = Some("x".into());
        assert_ne!(link_hash(GENESIS, &verified), link_hash(GENESIS, &claimed));
    }

    #[test]
    fn linking_moves_the_head_to_each_rows_hash() {
        let mut chain = Chain::at(GENESIS.to_owned());
        let (prev, first) = chain.link(&entry());
        assert_eq!(prev, GENESIS);
        let (prev, second) = chain.link(&entry());
        assert_eq!(prev, first);
        assert_eq!(second, link_hash(&first, &entry()));
        assert_eq!(chain.head, second);
    }
}
