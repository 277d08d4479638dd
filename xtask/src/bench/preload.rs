//! `--preload N`: a database that already holds N responses, as a clinic's
//! does after years of use, made with SQL (not HTTP) and kept for later
//! runs.
//!
//! What it holds, beside what the server makes itself:
//! - dossiers `bench-0`, `bench-1`, … each with its patient respondent;
//!   how many responses a dossier holds follows a heavy-tailed (Pareto,
//!   shape 1.2) law from 2 up to 5,000, so most dossiers hold a handful and
//!   a few (diaries) thousands. The POST load's dossiers (`bench-0` to
//!   `bench-<--dossiers - 1>`) are among them: new responses go to dossiers
//!   that already hold some, as they do in a clinic.
//! - N completed responses, each a copy of one of several responses the
//!   server scored and stored itself at the start (several answer sets for
//!   each of several questionnaires, so answers and outcomes have their
//!   real sizes), under a new id, dossier, external id and time. Their rows
//!   are in time order, the dossiers mixed: a dossier's responses are spread
//!   over the whole table, as when many patients answer over two years.
//! - dossier `preload-list` with exactly 100 of them, evenly spread: the
//!   list benchmark's dossier.
//! - one access-log row per response, as the POST that stored it would
//!   have written (the template POST's consumer key, action and client),
//!   linked into the hash chain with the service's own
//!   [`host::store::link_hash`], and the chain's head moved to the last, so
//!   `outcomes access-log verify` finds the chain intact.
//!
//! The rows are written in multi-row INSERTs (500 rows each), 50,000 rows
//! per transaction, with the server stopped; on SQLite without the
//! rollback journal, fsync or foreign-key checks (a failed build is thrown
//! away), on PostgreSQL with `synchronous_commit` off.
//!
//! A built database is kept under `<target>/bench-preload/` (SQLite: the
//! server's data folder) or on the PostgreSQL server (a database named
//! `outcomes_preload_<N>_<schema>`), keyed by N and by a hash of the
//! migrations and of this format, and copied for each run (SQLite: the
//! folder; PostgreSQL: `CREATE DATABASE … TEMPLATE`). `--rebuild-preload`
//! builds it again.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use chrono::Utc;
use sha2::{Digest, Sha256};
use sqlx::any::AnyArguments;
use sqlx::{AnyConnection, Arguments, Connection, Executor, Row};

use super::load;
use super::server::{Backend, Fresh, Server};
use host::domain::time::from_millis;
use host::store::{AccessEntry, link_hash};

/// Bump when what a preload holds changes: old caches are then not used.
const FORMAT: &str = "preload-1";
/// The dossier the list benchmark reads, and how many responses it holds.
pub const LIST_DOSSIER: &str = "preload-list";
pub const LIST_SIZE: u64 = 100;
/// Where the template responses are posted.
const TEMPLATE_DOSSIER: &str = "preload-templates";
/// Answer sets posted per questionnaire.
const VARIANTS: usize = 6;
/// The questionnaires and how often each is answered (per mille).
const MIX: &[(&str, u32)] = &[
    ("phq9", 350),
    ("gad7", 250),
    ("who5", 120),
    ("k10", 100),
    ("dass21", 80),
    ("pcl5", 60),
    ("audit", 40),
];
/// Rows per INSERT and per transaction.
const ROWS_PER_INSERT: usize = 500;
const ROWS_PER_TRANSACTION: usize = 50_000;
/// Responses per dossier: Pareto with this shape and minimum, capped.
const PARETO_SHAPE: f64 = 1.2;
const PARETO_MIN: f64 = 2.0;
const PER_DOSSIER_CAP: u64 = 5_000;
/// The preloaded responses span this much time before the build.
const SPAN_MS: i64 = 2 * 365 * 24 * 3600 * 1000;

/// A preloaded database in the cache.
#[derive(Debug, Clone)]
pub struct Cached {
    /// SQLite: the server's data folder (the database and the secrets key
    /// that opens the secrets kept in it).
    pub sqlite: Option<PathBuf>,
    /// The server's data folder: the secrets key (and on SQLite the
    /// database).
    pub data: PathBuf,
    /// PostgreSQL: the database's name.
    pub postgres: Option<String>,
    /// Responses it holds in all (the templates included).
    pub responses: u64,
}

/// The cache entry for `n` responses on `backend`, built if missing (or if
/// `rebuild`).
pub async fn ensure(
    backend: Backend,
    n: u64,
    binary: &Path,
    root: &Path,
    postgres_url: &str,
    rebuild: bool,
) -> anyhow::Result<Cached> {
    anyhow::ensure!(
        n >= LIST_SIZE * 10,
        "--preload must be at least {}",
        LIST_SIZE * 10
    );
    sqlx::any::install_default_drivers();
    let key = schema_key(root, backend)?;
    let dir = cache_dir(root);
    std::fs::create_dir_all(&dir)?;
    let cached = match backend {
        Backend::Sqlite => Cached {
            sqlite: Some(dir.join(format!("sqlite-{n}-{key}"))),
            data: dir.join(format!("sqlite-{n}-{key}")),
            postgres: None,
            responses: 0,
        },
        Backend::Postgres => Cached {
            sqlite: None,
            data: dir.join(format!("postgres-{n}-{key}")),
            postgres: Some(format!("outcomes_preload_{n}_{key}")),
            responses: 0,
        },
    };
    if !rebuild && let Some(responses) = cached_count(&cached, postgres_url).await? {
        println!(
            "Preload: using the cached database of {n} responses ({})",
            cached.describe()
        );
        return Ok(Cached {
            responses,
            ..cached
        });
    }
    println!(
        "Preload: building a database of {n} responses ({}); it is kept for later runs",
        cached.describe()
    );
    let started = Instant::now();
    let fresh = Fresh::create(backend, postgres_url).await?;
    let built = build(backend, n, binary, root, &fresh).await;
    let responses = match built {
        Ok(responses) => responses,
        Err(e) => {
            fresh.remove().await;
            return Err(e);
        }
    };
    fresh
        .keep(&cached.data, cached.postgres.as_deref(), postgres_url)
        .await?;
    println!("Preload: built in {:.0} s", started.elapsed().as_secs_f64());
    Ok(Cached {
        responses,
        ..cached
    })
}

impl Cached {
    /// A copy of this database for one run.
    pub async fn copy(&self, postgres_url: &str) -> anyhow::Result<Fresh> {
        Fresh::copy_of(&self.data, self.postgres.as_deref(), postgres_url).await
    }

    fn describe(&self) -> String {
        match (&self.sqlite, &self.postgres) {
            (Some(file), _) => file.display().to_string(),
            (_, Some(name)) => format!("PostgreSQL database {name}"),
            _ => String::new(),
        }
    }
}

/// `<target>/bench-preload`.
fn cache_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("bench-preload")
}

/// The first 12 hex digits of SHA-256 over the backend's migrations (names
/// and contents, in order) and [`FORMAT`].
fn schema_key(root: &Path, backend: Backend) -> anyhow::Result<String> {
    let folder = root.join("migrations").join(match backend {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    });
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .with_context(|| format!("reading {}", folder.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "sql"))
        .collect();
    files.sort();
    let mut h = Sha256::new();
    h.update(FORMAT.as_bytes());
    for file in files {
        h.update(file.file_name().unwrap_or_default().as_encoded_bytes());
        h.update(std::fs::read(&file)?);
    }
    Ok(format!("{:x}", h.finalize())[..12].to_owned())
}

/// The responses a cached database holds, None if there is none.
async fn cached_count(cached: &Cached, postgres_url: &str) -> anyhow::Result<Option<u64>> {
    let url = match (&cached.sqlite, &cached.postgres) {
        (Some(dir), _) if dir.join("outcomes.db").exists() => {
            format!("sqlite://{}", dir.join("outcomes.db").display())
        }
        (_, Some(name)) if cached.data.exists() => {
            let mut admin = AnyConnection::connect(postgres_url).await?;
            let exists = sqlx::query("SELECT 1 FROM pg_database WHERE datname = $1")
                .bind(name.as_str())
                .fetch_optional(&mut admin)
                .await?
                .is_some();
            let _ = admin.close().await;
            if !exists {
                return Ok(None);
            }
            super::server::with_database(postgres_url, name)
                .context("cannot put a database name into the PostgreSQL URL")?
        }
        _ => return Ok(None),
    };
    let mut conn = AnyConnection::connect(&url).await?;
    let count: i64 = sqlx::query("SELECT COUNT(*) FROM responses")
        .fetch_one(&mut conn)
        .await?
        .try_get(0)?;
    let _ = conn.close().await;
    Ok(Some(u64::try_from(count)?))
}

/// A response the server stored, to copy.
#[derive(Debug)]
struct Template {
    questionnaire_id: i64,
    completer_type: String,
    flags: String,
    textvars: String,
    /// Before created_at, in ms.
    started_before: Option<i64>,
    completed_before: Option<i64>,
    answers: String,
    outcome: Option<String>,
    outcome_plugin: Option<String>,
    outcome_plugin_version: Option<String>,
    outcome_plugin_sha256: Option<String>,
    entered_by: Option<String>,
    /// Per mille of the responses.
    weight: u32,
}

/// The access-log row of a template POST.
#[derive(Debug)]
struct AccessTemplate {
    consumer_key: Option<String>,
    jwt_issuer: Option<String>,
    action: String,
    client: String,
    /// Whether it has a request id (`<8 hex digits>-<counter>`, the
    /// digits new at each start of the server: host/src/telemetry.rs).
    request_id: bool,
}

/// Builds the preload in `fresh`; the responses it holds in all.
async fn build(
    backend: Backend,
    n: u64,
    binary: &Path,
    root: &Path,
    fresh: &Fresh,
) -> anyhow::Result<u64> {
    let mut rng = SplitMix(0x6f75_7463_6f6d_6573);
    let server = Server::start(binary, root, fresh).await?;
    let posted = post_templates(&server, root, &mut rng).await?;
    server.stop();
    println!("Preload: {posted} template responses scored and stored by the server");

    sqlx::any::install_default_drivers();
    let mut conn = AnyConnection::connect(&fresh.url()).await?;
    match backend {
        Backend::Sqlite => {
            conn.execute(
                "PRAGMA foreign_keys = OFF; PRAGMA synchronous = OFF; PRAGMA journal_mode = MEMORY; \
                 PRAGMA cache_size = -1000000; PRAGMA temp_store = MEMORY;",
            )
            .await?;
        }
        Backend::Postgres => {
            conn.execute("SET synchronous_commit = off").await?;
        }
    }
    let templates = read_templates(&mut conn).await?;
    let access = read_access_template(&mut conn).await?;
    let plan = Plan::make(n, &mut rng);
    println!(
        "Preload: {} dossiers; responses per dossier {} to {}",
        plan.dossiers, plan.smallest, plan.largest
    );
    let started = Instant::now();
    let ids = write_dossiers(&mut conn, backend, &plan).await?;
    write_rows(
        &mut conn, backend, &plan, &ids, &templates, &access, &mut rng,
    )
    .await?;
    println!(
        "Preload: {n} responses and access-log rows written in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    match backend {
        Backend::Sqlite => {
            conn.execute("PRAGMA journal_mode = WAL").await?;
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").await?;
        }
        Backend::Postgres => {
            // Access-log ids come from the log's own sequence (migration 0016).
            for table in ["dossiers", "respondents", "responses"] {
                conn.execute(
                    format!(
                        "SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT MAX(id) FROM {table}))"
                    )
                    .as_str(),
                )
                .await?;
            }
            // Statistics, as autovacuum would have gathered them.
            conn.execute("ANALYZE").await?;
        }
    }
    let total: i64 = sqlx::query("SELECT COUNT(*) FROM responses")
        .fetch_one(&mut conn)
        .await?
        .try_get(0)?;
    let _ = conn.close().await;
    verify_chain(binary, &fresh.url())?;
    Ok(u64::try_from(total)?)
}

/// `outcomes access-log verify` on the built database: the chain must hold.
fn verify_chain(binary: &Path, url: &str) -> anyhow::Result<()> {
    let started = Instant::now();
    let out = std::process::Command::new(binary)
        .args(["access-log", "verify", "--database-url", url])
        .output()
        .context("running outcomes access-log verify")?;
    let text = String::from_utf8_lossy(&out.stdout);
    anyhow::ensure!(
        out.status.success(),
        "outcomes access-log verify failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!(
        "Preload: outcomes access-log verify ({:.0} s): {}",
        started.elapsed().as_secs_f64(),
        text.trim()
    );
    Ok(())
}

/// Posts [`VARIANTS`] answer sets for each questionnaire of [`MIX`] the
/// server has, with answers drawn from each question's options.
async fn post_templates(server: &Server, root: &Path, rng: &mut SplitMix) -> anyhow::Result<usize> {
    let defs = host::definitions::load(&root.join("questionnaires"), &root.join("protocols"))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut posted = 0;
    for (key, _) in MIX {
        let Some(def) = defs.questionnaires.iter().find(|q| q.def.key == *key) else {
            continue;
        };
        for variant in 0..VARIANTS {
            let mut answers = serde_json::Map::new();
            for q in &def.def.questions {
                if q.options.is_empty() {
                    continue;
                }
                let pick = &q.options[rng.below(q.options.len() as u64) as usize];
                answers.insert(q.key.clone(), serde_json::Value::String(pick.key.clone()));
            }
            let body = serde_json::json!({
                "questionnaire_key": key,
                "external_id": format!("t-{key}-{variant}"),
                "answer_data": answers,
            });
            let (status, text) = load::post_once(
                server.target(),
                &format!("/api/v1/dossiers/{TEMPLATE_DOSSIER}/responses"),
                body.to_string(),
            )
            .await?;
            anyhow::ensure!(
                status == 201,
                "posting a {key} template: HTTP {status}: {}",
                String::from_utf8_lossy(&text)
            );
            posted += 1;
        }
    }
    anyhow::ensure!(posted > 0, "none of the questionnaires {MIX:?} is served");
    Ok(posted)
}

async fn read_templates(conn: &mut AnyConnection) -> anyhow::Result<Vec<Template>> {
    let rows = sqlx::query(
        "SELECT r.questionnaire_id, r.completer_type, r.flags, r.textvars, r.started_at, r.completed_at, r.answers, \
         r.outcome, r.outcome_plugin, r.outcome_plugin_version, r.outcome_plugin_sha256, r.entered_by, r.created_at, q.key \
         FROM responses r JOIN dossiers d ON d.id = r.dossier_id JOIN questionnaires q ON q.id = r.questionnaire_id \
         WHERE d.epd_id = $1 ORDER BY r.id",
    )
    .bind(TEMPLATE_DOSSIER)
    .fetch_all(&mut *conn)
    .await?;
    let mut templates = Vec::with_capacity(rows.len());
    for row in rows {
        let created: i64 = row.try_get(12)?;
        let key: String = row.try_get(13)?;
        let weight = MIX.iter().find(|(k, _)| *k == key).map_or(0, |(_, w)| *w);
        templates.push(Template {
            questionnaire_id: row.try_get(0)?,
            completer_type: row.try_get(1)?,
            flags: row.try_get(2)?,
            textvars: row.try_get(3)?,
            started_before: row.try_get::<Option<i64>, _>(4)?.map(|t| created - t),
            completed_before: row.try_get::<Option<i64>, _>(5)?.map(|t| created - t),
            answers: row.try_get(6)?,
            outcome: row.try_get(7)?,
            outcome_plugin: row.try_get(8)?,
            outcome_plugin_version: row.try_get(9)?,
            outcome_plugin_sha256: row.try_get(10)?,
            entered_by: row.try_get(11)?,
            weight,
        });
    }
    anyhow::ensure!(!templates.is_empty(), "no template responses stored");
    Ok(templates)
}

async fn read_access_template(conn: &mut AnyConnection) -> anyhow::Result<AccessTemplate> {
    let row = sqlx::query(
        "SELECT consumer_key, jwt_issuer, action, client, request_id FROM access_log \
         WHERE dossier = $1 AND status = 201 ORDER BY id LIMIT 1",
    )
    .bind(TEMPLATE_DOSSIER)
    .fetch_one(&mut *conn)
    .await
    .context("reading the access-log row of a template POST")?;
    Ok(AccessTemplate {
        consumer_key: row.try_get(0)?,
        jwt_issuer: row.try_get(1)?,
        action: row.try_get(2)?,
        client: row.try_get(3)?,
        request_id: row.try_get::<Option<String>, _>(4)?.is_some(),
    })
}

/// Which dossier each preloaded response goes to, in time order.
struct Plan {
    /// Responses in all.
    n: u64,
    /// Dossiers `bench-i` (the list dossier comes after them).
    dossiers: u64,
    /// The dossier of each response (index into the dossiers; `dossiers`
    /// is the list dossier).
    order: Vec<u32>,
    smallest: u64,
    largest: u64,
}

impl Plan {
    fn make(n: u64, rng: &mut SplitMix) -> Plan {
        let rest = n - LIST_SIZE;
        let mut counts: Vec<u64> = Vec::new();
        let mut total = 0;
        while total < rest {
            // Inverse transform of a Pareto law.
            let u = rng.unit().max(1e-12);
            let draw = (PARETO_MIN / u.powf(1.0 / PARETO_SHAPE)).floor() as u64;
            let count = draw
                .clamp(PARETO_MIN as u64, PER_DOSSIER_CAP)
                .min(rest - total);
            counts.push(count);
            total += count;
        }
        let dossiers = counts.len() as u64;
        let mut others: Vec<u32> = Vec::with_capacity(rest as usize);
        for (d, &c) in counts.iter().enumerate() {
            others.extend(std::iter::repeat_n(d as u32, c as usize));
        }
        // Fisher-Yates: the dossiers' responses mixed over time.
        for i in (1..others.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            others.swap(i, j);
        }
        // The list dossier's 100 at even steps.
        let step = n / LIST_SIZE;
        let mut order = Vec::with_capacity(n as usize);
        let mut rest_iter = others.into_iter();
        for k in 0..n {
            if k % step == step / 2 && k / step < LIST_SIZE {
                order.push(dossiers as u32);
            } else if let Some(d) = rest_iter.next() {
                order.push(d);
            }
        }
        Plan {
            n,
            dossiers,
            order,
            smallest: counts.iter().copied().min().unwrap_or(0),
            largest: counts.iter().copied().max().unwrap_or(0),
        }
    }

    fn epd_id(&self, d: u32) -> String {
        if u64::from(d) == self.dossiers {
            LIST_DOSSIER.to_owned()
        } else {
            format!("bench-{d}")
        }
    }
}

/// The first dossier id and first respondent id of the plan's dossiers
/// (dossier i has id `first + i`, its patient `first_respondent + i`).
struct Ids {
    dossier: i64,
    respondent: i64,
}

/// Inserts the plan's dossiers and their patients.
async fn write_dossiers(
    conn: &mut AnyConnection,
    backend: Backend,
    plan: &Plan,
) -> anyhow::Result<Ids> {
    let max = async |conn: &mut AnyConnection, table: &str| -> anyhow::Result<i64> {
        Ok(
            sqlx::query(&format!("SELECT COALESCE(MAX(id), 0) FROM {table}"))
                .fetch_one(conn)
                .await?
                .try_get(0)?,
        )
    };
    let ids = Ids {
        dossier: max(conn, "dossiers").await? + 1,
        respondent: max(conn, "respondents").await? + 1,
    };
    let created = Utc::now().timestamp_millis() - SPAN_MS;
    let patient = host::domain::respondent::PATIENT;
    let label = host::domain::respondent::default_label(patient);
    let all = plan.dossiers + 1;
    let mut tx = conn.begin().await?;
    let mut d = 0u64;
    while d < all {
        let chunk = (all - d).min(ROWS_PER_INSERT as u64);
        let mut args = AnyArguments::default();
        for i in d..d + chunk {
            let _ = args.add(ids.dossier + i as i64);
            let _ = args.add(plan.epd_id(i as u32));
            let _ = args.add(created);
        }
        sqlx::query_with(
            &insert_sql(
                backend,
                "dossiers",
                "id, epd_id, created_at",
                3,
                chunk as usize,
            ),
            args,
        )
        .execute(&mut *tx)
        .await
        .context("inserting dossiers")?;
        let mut args = AnyArguments::default();
        for i in d..d + chunk {
            let _ = args.add(ids.respondent + i as i64);
            let _ = args.add(ids.dossier + i as i64);
            let _ = args.add(patient);
            let _ = args.add(label);
            let _ = args.add(created);
        }
        sqlx::query_with(
            &insert_sql(
                backend,
                "respondents",
                "id, dossier_id, respondent_type, label, created_at",
                5,
                chunk as usize,
            ),
            args,
        )
        .execute(&mut *tx)
        .await
        .context("inserting respondents")?;
        d += chunk;
    }
    tx.commit().await?;
    Ok(ids)
}

const RESPONSE_COLUMNS: &str = "id, dossier_id, respondent_id, questionnaire_id, external_id, completer_type, flags, textvars, \
     started_at, completed_at, answers, outcome, outcome_plugin, outcome_plugin_version, outcome_plugin_sha256, \
     outcome_computed_at, entered_by, created_at, updated_at";
/// No `id`: the log gives its rows their ids itself, in the order they are
/// inserted, and refuses one given (migration 0016).
const ACCESS_COLUMNS: &str =
    "at, consumer_key, jwt_issuer, dossier, action, status, client, request_id, prev_hash, hash";

/// Inserts the responses and their access-log rows, in time order, and
/// moves the chain's head.
async fn write_rows(
    conn: &mut AnyConnection,
    backend: Backend,
    plan: &Plan,
    ids: &Ids,
    templates: &[Template],
    access: &AccessTemplate,
    rng: &mut SplitMix,
) -> anyhow::Result<()> {
    let max = async |conn: &mut AnyConnection, table: &str| -> anyhow::Result<i64> {
        Ok(
            sqlx::query(&format!("SELECT COALESCE(MAX(id), 0) FROM {table}"))
                .fetch_one(conn)
                .await?
                .try_get(0)?,
        )
    };
    let mut response_id = max(conn, "responses").await?;
    if backend == Backend::Sqlite {
        // AUTOINCREMENT: past every id ever handed out.
        let seq: Option<i64> =
            sqlx::query("SELECT seq FROM sqlite_sequence WHERE name = 'responses'")
                .fetch_optional(&mut *conn)
                .await?
                .map(|r| r.try_get(0))
                .transpose()?;
        response_id = response_id.max(seq.unwrap_or(0));
    }
    let mut head: String = sqlx::query("SELECT hash FROM access_log_head WHERE id = 1")
        .fetch_one(&mut *conn)
        .await?
        .try_get(0)?;
    // Template choice by weight.
    let total_weight: u32 = templates.iter().map(|t| t.weight.max(1)).sum();
    let pick = |r: u64| -> &Template {
        let mut x = (r % u64::from(total_weight)) as u32;
        for t in templates {
            let w = t.weight.max(1);
            if x < w {
                return t;
            }
            x -= w;
        }
        &templates[0]
    };
    let start = Utc::now().timestamp_millis() - SPAN_MS;
    let n = plan.n;
    let response_sql = insert_sql(backend, "responses", RESPONSE_COLUMNS, 19, ROWS_PER_INSERT);
    let access_sql = insert_sql(backend, "access_log", ACCESS_COLUMNS, 10, ROWS_PER_INSERT);
    let started = Instant::now();
    let mut prefix = 0u32;
    let mut k = 0u64;
    while k < n {
        let mut tx = conn.begin().await?;
        let end = (k + ROWS_PER_TRANSACTION as u64).min(n);
        while k < end {
            let chunk = (end - k).min(ROWS_PER_INSERT as u64);
            let mut responses = AnyArguments::default();
            let mut accesses = AnyArguments::default();
            for i in k..k + chunk {
                let d = plan.order[i as usize];
                let epd_id = plan.epd_id(d);
                let t = pick(rng.next());
                let created = start + (i as i128 * SPAN_MS as i128 / n as i128) as i64;
                response_id += 1;
                let _ = responses.add(response_id);
                let _ = responses.add(ids.dossier + i64::from(d));
                let _ = responses.add(ids.respondent + i64::from(d));
                let _ = responses.add(t.questionnaire_id);
                let _ = responses.add(format!("p{i}"));
                let _ = responses.add(t.completer_type.as_str());
                let _ = responses.add(t.flags.as_str());
                let _ = responses.add(t.textvars.as_str());
                let _ = responses.add(t.started_before.map(|b| created - b));
                let _ = responses.add(t.completed_before.map(|b| created - b));
                let _ = responses.add(t.answers.as_str());
                let _ = responses.add(t.outcome.as_deref());
                let _ = responses.add(t.outcome_plugin.as_deref());
                let _ = responses.add(t.outcome_plugin_version.as_deref());
                let _ = responses.add(t.outcome_plugin_sha256.as_deref());
                let _ = responses.add(created);
                let _ = responses.add(t.entered_by.as_deref());
                let _ = responses.add(created);
                let _ = responses.add(created);

                let entry = AccessEntry {
                    at: from_millis(created),
                    consumer_key: access.consumer_key.clone(),
                    jwt_issuer: access.jwt_issuer.clone(),
                    dossier: Some(epd_id),
                    action: access.action.clone(),
                    status: 201,
                    client: access.client.clone(),
                    // A server start every 100,000 requests.
                    request_id: access.request_id.then(|| {
                        if i % 100_000 == 0 {
                            prefix = rng.next() as u32;
                        }
                        format!("{prefix:08x}-{}", i % 100_000)
                    }),
                    ..AccessEntry::default()
                };
                let hash = link_hash(&head, &entry);
                let _ = accesses.add(created);
                let _ = accesses.add(entry.consumer_key);
                let _ = accesses.add(entry.jwt_issuer);
                let _ = accesses.add(entry.dossier);
                let _ = accesses.add(entry.action);
                let _ = accesses.add(i64::from(entry.status));
                let _ = accesses.add(entry.client);
                let _ = accesses.add(entry.request_id);
                let _ = accesses.add(std::mem::replace(&mut head, hash.clone()));
                let _ = accesses.add(hash);
            }
            let (rsql, asql) = if chunk as usize == ROWS_PER_INSERT {
                (response_sql.clone(), access_sql.clone())
            } else {
                (
                    insert_sql(backend, "responses", RESPONSE_COLUMNS, 19, chunk as usize),
                    insert_sql(backend, "access_log", ACCESS_COLUMNS, 10, chunk as usize),
                )
            };
            sqlx::query_with(&rsql, responses)
                .execute(&mut *tx)
                .await
                .context("inserting responses")?;
            sqlx::query_with(&asql, accesses)
                .execute(&mut *tx)
                .await
                .context("inserting access-log rows")?;
            k += chunk;
        }
        sqlx::query("UPDATE access_log_head SET hash = $1 WHERE id = 1")
            .bind(head.as_str())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        if k % 1_000_000 < ROWS_PER_TRANSACTION as u64 || k == n {
            let secs = started.elapsed().as_secs_f64();
            eprintln!(
                "Preload: {k} of {n} ({:.0} rows/s)",
                k as f64 / secs.max(0.001)
            );
        }
    }
    Ok(())
}

/// `INSERT INTO table (columns) VALUES ($1, …), …` for `rows` rows of
/// `width` values; on SQLite with `?` (bound in order: SQLite's driver
/// looks a numbered parameter up by its name, for each of thousands).
fn insert_sql(backend: Backend, table: &str, columns: &str, width: usize, rows: usize) -> String {
    let mut sql = format!("INSERT INTO {table} ({columns}) VALUES ");
    let mut p = 1;
    for r in 0..rows {
        sql.push_str(if r == 0 { "(" } else { ", (" });
        for c in 0..width {
            if c > 0 {
                sql.push_str(", ");
            }
            if backend == Backend::Sqlite {
                sql.push('?');
            } else {
                sql.push('$');
                sql.push_str(&p.to_string());
            }
            p += 1;
        }
        sql.push(')');
    }
    sql
}

/// SplitMix64 (Steele, Lea and Flood, 2014): small, fast, and the same
/// sequence on every machine, so a preload is the same wherever it is
/// built.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [0, n).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_puts_every_response_somewhere_and_100_in_the_list_dossier() {
        let plan = Plan::make(10_000, &mut SplitMix(1));
        assert_eq!(plan.order.len(), 10_000);
        let list = plan
            .order
            .iter()
            .filter(|&&d| u64::from(d) == plan.dossiers)
            .count();
        assert_eq!(list as u64, LIST_SIZE);
        assert!(plan.largest <= PER_DOSSIER_CAP && plan.smallest >= 1);
        assert!(plan.dossiers > 100, "{} dossiers", plan.dossiers);
    }

    #[test]
    fn insert_statements_number_their_parameters() {
        assert_eq!(
            insert_sql(Backend::Postgres, "t", "a, b", 2, 2),
            "INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4)"
        );
    }
}
