//! Bulk seeding for the list benchmark, in SQL on the server's database
//! (after the server has migrated it): a few seconds for a million rows,
//! where HTTP would take minutes.
//!
//! Every seeded response is a copy of one the server stored itself (a
//! template posted over HTTP and deleted again), so the rows look exactly
//! like real ones. Each stage adds dossiers of `per_dossier` responses each,
//! with the rows of the stage dealt out round robin: every dossier's rows
//! are spread evenly over the stage's id range, as when many patients answer
//! over months, not stored next to each other.

use anyhow::Context;
use sqlx::{AnyConnection, Connection, Executor, Row};

use super::load;
use super::server::Backend;

#[derive(Debug)]
pub struct Seeder {
    backend: Backend,
    conn: AnyConnection,
    template: Template,
}

/// The columns a seeded response copies from the template.
#[derive(Debug)]
struct Template {
    questionnaire_id: i64,
    completer_type: String,
    started_at: Option<i64>,
    completed_at: Option<i64>,
    answers: String,
    outcome: Option<String>,
    outcome_plugin: Option<String>,
    outcome_plugin_version: Option<String>,
    outcome_plugin_sha256: Option<String>,
    created_at: i64,
}

const TEMPLATE_DOSSIER: &str = "seed-template";
const TEMPLATE_ID: &str = "seed-template-1";

impl Seeder {
    /// Connects to the server's database and takes the template from a
    /// response posted to the server.
    pub async fn connect(
        backend: Backend,
        url: &str,
        target: &load::Target,
    ) -> anyhow::Result<Seeder> {
        sqlx::any::install_default_drivers();
        let mut conn = AnyConnection::connect(url)
            .await
            .context("connecting the seeder to the database")?;
        if backend == Backend::Sqlite {
            // The server holds the file open; a big cache keeps the bulk
            // insert's index updates in memory.
            conn.execute("PRAGMA busy_timeout = 10000; PRAGMA cache_size = -262144;")
                .await?;
        }
        let body = format!(
            r#"{{"questionnaire_key":"phq9","external_id":"{TEMPLATE_ID}","answer_data":{{"v_1":"a1","v_2":"a2","v_3":"a0","v_4":"a3","v_5":"a1","v_6":"a0","v_7":"a2","v_8":"a1","v_9":"a0"}}}}"#
        );
        let (status, text) = load::post_once(
            target,
            &format!("/api/v1/dossiers/{TEMPLATE_DOSSIER}/responses"),
            body,
        )
        .await?;
        anyhow::ensure!(
            status == 201,
            "posting the template response: HTTP {status}: {}",
            String::from_utf8_lossy(&text)
        );
        let row = sqlx::query(
            "SELECT questionnaire_id, completer_type, started_at, completed_at, answers, outcome, outcome_plugin, \
             outcome_plugin_version, outcome_plugin_sha256, created_at FROM responses WHERE external_id = $1",
        )
        .bind(TEMPLATE_ID)
        .fetch_one(&mut conn)
        .await
        .context("reading the template response")?;
        let template = Template {
            questionnaire_id: row.try_get(0)?,
            completer_type: row.try_get(1)?,
            started_at: row.try_get(2)?,
            completed_at: row.try_get(3)?,
            answers: row.try_get(4)?,
            outcome: row.try_get(5)?,
            outcome_plugin: row.try_get(6)?,
            outcome_plugin_version: row.try_get(7)?,
            outcome_plugin_sha256: row.try_get(8)?,
            created_at: row.try_get(9)?,
        };
        sqlx::query("DELETE FROM responses WHERE external_id = $1")
            .bind(TEMPLATE_ID)
            .execute(&mut conn)
            .await?;
        Ok(Seeder {
            backend,
            conn,
            template,
        })
    }

    /// Adds dossiers of `per_dossier` responses until the database holds
    /// `rows` responses; the EPD id of a dossier in the middle of the stage.
    pub async fn grow_to(
        &mut self,
        rows: u64,
        per_dossier: u64,
        stage: &str,
    ) -> anyhow::Result<String> {
        let current: i64 = sqlx::query("SELECT COUNT(*) FROM responses")
            .fetch_one(&mut self.conn)
            .await?
            .try_get(0)?;
        let current = u64::try_from(current)?;
        anyhow::ensure!(
            rows > current,
            "the database holds {current} responses already, more than {rows}"
        );
        let add = rows - current;
        anyhow::ensure!(
            add.is_multiple_of(per_dossier),
            "{add} rows to add is not a multiple of {per_dossier}"
        );
        let dossiers = i64::try_from(add / per_dossier)?;
        let add = i64::try_from(add)?;
        let prefix = format!("{stage}-");
        let t = &self.template;
        let (insert_dossiers, insert_responses) = match self.backend {
            Backend::Sqlite => (SQLITE_DOSSIERS, SQLITE_RESPONSES),
            Backend::Postgres => (POSTGRES_DOSSIERS, POSTGRES_RESPONSES),
        };

        let mut tx = self.conn.begin().await?;
        let before: i64 = sqlx::query("SELECT COALESCE(MAX(id), 0) FROM dossiers")
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
        sqlx::query(insert_dossiers)
            .bind(dossiers)
            .bind(&prefix)
            .bind(t.created_at)
            .execute(&mut *tx)
            .await
            .context("seeding dossiers")?;
        sqlx::query(
            "INSERT INTO respondents (dossier_id, respondent_type, label, created_at) \
             SELECT id, $1, $2, created_at FROM dossiers WHERE id > $3 ORDER BY id",
        )
        .bind(host::domain::respondent::PATIENT)
        .bind(host::domain::respondent::default_label(
            host::domain::respondent::PATIENT,
        ))
        .bind(before)
        .execute(&mut *tx)
        .await
        .context("seeding respondents")?;
        sqlx::query(insert_responses)
            .bind(add)
            .bind(&prefix)
            .bind(dossiers)
            .bind(t.questionnaire_id)
            .bind(&t.completer_type)
            .bind(t.started_at)
            .bind(t.completed_at)
            .bind(&t.answers)
            .bind(&t.outcome)
            .bind(&t.outcome_plugin)
            .bind(&t.outcome_plugin_version)
            .bind(&t.outcome_plugin_sha256)
            .bind(t.created_at)
            .execute(&mut *tx)
            .await
            .context("seeding responses")?;
        tx.commit().await?;

        match self.backend {
            // Fold the WAL into the database file, as the server's own
            // checkpoints would have done over time.
            Backend::Sqlite => self
                .conn
                .execute("PRAGMA wal_checkpoint(TRUNCATE)")
                .await
                .map(drop)?,
            // Statistics, as autovacuum would have gathered them.
            Backend::Postgres => self.conn.execute("ANALYZE").await.map(drop)?,
        }
        let total: i64 = sqlx::query("SELECT COUNT(*) FROM responses")
            .fetch_one(&mut self.conn)
            .await?
            .try_get(0)?;
        anyhow::ensure!(
            u64::try_from(total)? == rows,
            "seeding left {total} responses, not {rows}"
        );
        Ok(format!("{prefix}{}", dossiers / 2))
    }

    pub async fn close(self) {
        let _ = self.conn.close().await;
    }
}

/// $1 count, $2 EPD id prefix, $3 time.
const SQLITE_DOSSIERS: &str = "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < $1) \
     INSERT INTO dossiers (epd_id, created_at) SELECT $2 || i, $3 FROM n";
const POSTGRES_DOSSIERS: &str = "INSERT INTO dossiers (epd_id, created_at) SELECT $2 || i, $3 FROM generate_series(0, $1 - 1) AS n(i) ORDER BY i";

/// $1 rows, $2 EPD id prefix, $3 dossiers; the template's columns follow.
/// Row k goes to dossier k mod $3, in order of k (SQLite's CROSS JOIN keeps
/// n as the outer loop).
const SQLITE_RESPONSES: &str = "WITH RECURSIVE n(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM n WHERE k + 1 < $1) \
     INSERT INTO responses (dossier_id, respondent_id, questionnaire_id, external_id, completer_type, started_at, \
     completed_at, answers, outcome, outcome_plugin, outcome_plugin_version, outcome_plugin_sha256, outcome_computed_at, \
     created_at, updated_at) \
     SELECT d.id, r.id, $4, $2 || 'r' || n.k, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13, $13 \
     FROM n CROSS JOIN dossiers d CROSS JOIN respondents r \
     WHERE d.epd_id = $2 || (n.k % $3) AND r.dossier_id = d.id AND r.respondent_type = 'patient'";
const POSTGRES_RESPONSES: &str = "INSERT INTO responses (dossier_id, respondent_id, questionnaire_id, external_id, completer_type, \
     started_at, completed_at, answers, outcome, outcome_plugin, outcome_plugin_version, outcome_plugin_sha256, \
     outcome_computed_at, created_at, updated_at) \
     SELECT d.id, r.id, $4, $2 || 'r' || n.k, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13, $13 \
     FROM generate_series(0, $1 - 1) AS n(k) \
     JOIN dossiers d ON d.epd_id = $2 || (n.k % $3) \
     JOIN respondents r ON r.dossier_id = d.id AND r.respondent_type = 'patient' \
     ORDER BY n.k";

/// The number of responses in the database at `url`.
pub async fn count_responses(url: &str) -> anyhow::Result<u64> {
    sqlx::any::install_default_drivers();
    let mut conn = AnyConnection::connect(url)
        .await
        .context("connecting to count responses")?;
    let count: i64 = sqlx::query("SELECT COUNT(*) FROM responses")
        .fetch_one(&mut conn)
        .await?
        .try_get(0)?;
    let _ = conn.close().await;
    Ok(u64::try_from(count)?)
}
