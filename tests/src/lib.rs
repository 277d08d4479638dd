//! The black-box test harness: [`TestApp::spawn`] starts the real host (the
//! same [`host::startup::App::build`] the binary uses) on 127.0.0.1:0 with a fresh
//! database, and talks HTTP to it as a client would. Time comes from a
//! [`ManualClock`] the test sets; nothing sleeps.
//!
//! Every test runs on both databases through [`db_test!`]. PostgreSQL is the
//! server at `OUTCOMES_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`); each test creates its own
//! database there and drops it afterwards.

pub mod assemblyscript;
pub mod browser;
pub mod own_postgres;
pub mod plugins;
pub mod processes;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use chrono::{DateTime, TimeZone, Utc};
use host::AppState;
use host::clock::ManualClock;
use host::config::{Config, FileSettings, Settings};
use host::startup::App;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use sqlx::{Connection, Executor, PgConnection};
use tokio::sync::oneshot;

pub use reqwest;
pub use serde_json::json;

/// Which database a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Db {
    Sqlite,
    Postgres,
}

/// The moment every test starts at: 2026-03-01 09:00 UTC.
pub fn start_time() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 9, 0, 0)
        .single()
        .unwrap_or_default()
}

/// The repository root, where the bundled definitions live.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The admin URL of the PostgreSQL server tests use.
pub fn postgres_url() -> String {
    std::env::var("OUTCOMES_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// A running host with its own database.
#[derive(Debug)]
pub struct TestApp {
    /// `http://127.0.0.1:PORT`
    pub base: String,
    pub client: reqwest::Client,
    pub clock: Arc<ManualClock>,
    pub state: AppState,
    pub db: Db,
    /// The consumer secret of the [`TEST_KEY`] token.
    pub secret: String,
    /// The URL of this test's own database.
    pub database_url: String,
    /// The configuration the host was built with.
    pub config: Config,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
    /// The PostgreSQL database to drop afterwards; None for a second host
    /// on another's database.
    postgres_db: Option<String>,
    /// Shared with a second host on the same database.
    dir: Arc<tempfile::TempDir>,
}

/// An HTTP answer: status, headers and the body parsed as JSON (Null when
/// empty or not JSON; `text` keeps it as sent).
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
    pub text: String,
}

/// The configuration of `outcomes plugin ...` on the built plugins, with
/// `data_dir` for what it writes (no database is touched).
pub fn plugin_tool_config(data_dir: &Path) -> Config {
    plugin_tool_config_in(&built_plugins(), data_dir)
}

/// [`plugin_tool_config`] on the plugins of `plugins_dir`.
pub fn plugin_tool_config_in(plugins_dir: &Path, data_dir: &Path) -> Config {
    let mut settings = Settings::default();
    settings.plugins.plugins_dir = Some(plugins_dir.to_owned());
    settings.storage.data_dir = Some(data_dir.to_owned());
    Config::resolve(settings, FileSettings::default()).expect("a valid configuration")
}

impl TestApp {
    /// The host with default test configuration on `db`.
    pub async fn spawn(db: Db) -> TestApp {
        TestApp::spawn_with(db, |_| {}).await
    }

    /// The host on `db`, with `adjust` applied to the configuration first.
    pub async fn spawn_with(db: Db, adjust: impl FnOnce(&mut Config)) -> TestApp {
        let dir = tempfile::tempdir().expect("temporary folder");
        let (database_url, postgres_db) = match db {
            Db::Sqlite => (
                format!("sqlite://{}", dir.path().join("outcomes.db").display()),
                None,
            ),
            Db::Postgres => {
                let name = create_postgres_database().await;
                (replace_database(&postgres_url(), &name), Some(name))
            }
        };
        TestApp::spawn_at(db, dir, database_url, postgres_db, adjust).await
    }

    /// The host on a PostgreSQL database the test made itself (on a server
    /// of its own, [`own_postgres::OwnPostgres`]), which the test removes.
    pub async fn spawn_on_postgres(
        database_url: String,
        adjust: impl FnOnce(&mut Config),
    ) -> TestApp {
        let dir = tempfile::tempdir().expect("temporary folder");
        TestApp::spawn_at(Db::Postgres, dir, database_url, None, adjust).await
    }

    async fn spawn_at(
        db: Db,
        dir: tempfile::TempDir,
        database_url: String,
        postgres_db: Option<String>,
        adjust: impl FnOnce(&mut Config),
    ) -> TestApp {
        let mut settings = Settings::default();
        settings.server.listen = Some("127.0.0.1:0".parse().expect("address"));
        settings.storage.data_dir = Some(dir.path().to_owned());
        settings.storage.database_url = Some(database_url.clone());
        settings.definitions.questionnaires_dir = Some(repo_root().join("questionnaires"));
        settings.definitions.protocols_dir = Some(repo_root().join("protocols"));
        settings.plugins.plugins_dir = Some(built_plugins());
        settings.plugin_cache.plugin_cache_dir = Some(plugin_cache());
        settings.plugin_cache.plugin_cache_key_file = Some(plugin_cache_key());
        // Tests that exercise hot reload turn it on with their own folders.
        settings.server.watch = Some(false);
        settings.pool.max_connections = Some(4);
        // Tests drive the scheduler with `scheduler::tick` at explicit times.
        settings.scheduler.scheduler_interval = Some(0);
        // /metrics on a port of its own per host (the default one would be
        // shared by every test), as `metrics_addr` tells.
        settings.server.metrics_listen = Some("127.0.0.1:0".parse().expect("address"));
        let mut config =
            Config::resolve(settings, FileSettings::default()).expect("test configuration");
        adjust(&mut config);
        let clock = Arc::new(ManualClock::new(start_time()));
        let app = App::build(config.clone(), clock.clone())
            .await
            .expect("the host starts");
        let port = app.local_addr().expect("bound").port();
        // Over TLS, name the host the test certificates are made for.
        let base = if app.is_tls() {
            format!("https://localhost:{port}")
        } else {
            format!("http://127.0.0.1:{port}")
        };
        let state = app.state();
        let secret = create_token(&state, TEST_KEY, "all").await;
        let (shutdown, stop) = oneshot::channel::<()>();
        let server = tokio::spawn(app.run(async move {
            let _ = stop.await;
        }));
        TestApp {
            base,
            client: reqwest::Client::new(),
            clock,
            state,
            db,
            secret,
            database_url,
            config,
            shutdown: Some(shutdown),
            server: Some(server),
            postgres_db,
            dir: Arc::new(dir),
        }
    }

    /// A second real host on this one's database (and data folder, so it
    /// shares the secrets key), with its own port and the same clock: how
    /// several hosts share one PostgreSQL database (on SQLite, one file).
    /// Its `secret` is this one's: the token is in the shared database.
    pub async fn another_host(&self) -> TestApp {
        let app = App::build(self.config.clone(), self.clock.clone())
            .await
            .expect("the second host starts");
        let port = app.local_addr().expect("bound").port();
        let base = if app.is_tls() {
            format!("https://localhost:{port}")
        } else {
            format!("http://127.0.0.1:{port}")
        };
        let state = app.state();
        let (shutdown, stop) = oneshot::channel::<()>();
        let server = tokio::spawn(app.run(async move {
            let _ = stop.await;
        }));
        TestApp {
            base,
            client: reqwest::Client::new(),
            clock: self.clock.clone(),
            state,
            db: self.db,
            secret: self.secret.clone(),
            database_url: self.database_url.clone(),
            config: self.config.clone(),
            shutdown: Some(shutdown),
            server: Some(server),
            postgres_db: None,
            dir: self.dir.clone(),
        }
    }

    /// The temporary folder of this test app (its SQLite file, and room for
    /// plugin and definition folders a test builds).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The configuration an operator's command (`outcomes rescore`,
    /// `verify`, `plugin candidate`, ...) resolves for this app's database,
    /// definitions and the built plugins.
    pub fn command_config(&self) -> Config {
        let served = self.state.config();
        let mut settings = Settings::default();
        settings.storage.database_url = Some(self.database_url.clone());
        settings.storage.data_dir = Some(self.dir().into());
        settings.definitions.questionnaires_dir = Some(served.questionnaires_dir.clone());
        settings.definitions.protocols_dir = Some(served.protocols_dir.clone());
        settings.plugins.plugins_dir = Some(built_plugins());
        settings.plugin_cache.plugin_cache_dir = Some(plugin_cache());
        settings.plugin_cache.plugin_cache_key_file = Some(plugin_cache_key());
        Config::resolve(settings, FileSettings::default()).expect("a valid configuration")
    }

    /// The absolute URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Sends a request with an optional raw body and content type.
    pub async fn send(&self, method: Method, path: &str, body: Option<(Vec<u8>, &str)>) -> Answer {
        let authorization = self.basic_header();
        self.send_as(method, path, body, Some(&authorization)).await
    }

    /// The `Authorization` header of the token every test app starts with
    /// (consumer key [`TEST_KEY`], all rights).
    pub fn basic_header(&self) -> String {
        basic(TEST_KEY, &self.secret)
    }

    /// Sends a request with the given `Authorization` header, or none.
    pub async fn send_as(
        &self,
        method: Method,
        path: &str,
        body: Option<(Vec<u8>, &str)>,
        authorization: Option<&str>,
    ) -> Answer {
        let mut req = self.client.request(method, self.url(path));
        if let Some(value) = authorization {
            req = req.header("authorization", value);
        }
        if let Some((bytes, content_type)) = body {
            req = req.header("content-type", content_type).body(bytes);
        }
        let res = req.send().await.expect("the host answers");
        let status = res.status();
        let headers = res.headers().clone();
        let text = res.text().await.unwrap_or_default();
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Answer {
            status,
            headers,
            body,
            text,
        }
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.send(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Answer {
        self.send(
            Method::POST,
            path,
            Some((body.to_string().into_bytes(), "application/json")),
        )
        .await
    }

    pub async fn put(&self, path: &str, body: &Value) -> Answer {
        self.send(
            Method::PUT,
            path,
            Some((body.to_string().into_bytes(), "application/json")),
        )
        .await
    }

    pub async fn delete(&self, path: &str) -> Answer {
        self.send(Method::DELETE, path, None).await
    }

    /// Runs one SQL statement on this test's database, outside the host, and
    /// returns the first column of its first row as an integer, if any (use
    /// `RETURNING id`). For arranging state that no public API creates yet;
    /// tests assert through HTTP only.
    /// Runs a query on the test's database directly and returns its first
    /// column as text, every row.
    pub async fn sql_strings(&self, statement: &str) -> Vec<String> {
        sqlx::any::install_default_drivers();
        let mut conn = sqlx::AnyConnection::connect(&self.database_url)
            .await
            .expect("connect to the test database");
        let rows = sqlx::query_scalar::<_, String>(statement)
            .fetch_all(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("SQL failed: {statement}: {e}"));
        let _ = conn.close().await;
        rows
    }

    pub async fn sql(&self, statement: &str) -> Option<i64> {
        sqlx::any::install_default_drivers();
        let mut conn = sqlx::AnyConnection::connect(&self.database_url)
            .await
            .expect("connect to the test database");
        let row = sqlx::query_scalar::<_, i64>(statement)
            .fetch_optional(&mut conn)
            .await;
        let row = row.unwrap_or_else(|e| panic!("SQL failed: {statement}: {e}"));
        let _ = conn.close().await;
        row
    }

    /// Stops the server gracefully and waits for it.
    pub async fn stop(mut self) {
        self.shut_down().await;
    }

    /// Stops the server gracefully and waits for it, keeping its database
    /// for the test to read with [`TestApp::sql`].
    pub async fn shut_down(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(server) = self.server.take() {
            server
                .await
                .expect("server task")
                .expect("server stopped cleanly");
        }
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(name) = self.postgres_db.take() {
            drop_postgres_database(name);
        }
    }
}

/// Drops PostgreSQL database `name`, forcing off the connections a host
/// still holds. Called from `Drop`, outside async: it runs on a thread of
/// its own.
fn drop_postgres_database(name: String) {
    let _ = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            if let Ok(mut conn) = PgConnection::connect(&postgres_url()).await {
                let _ = conn
                    .execute(format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)").as_str())
                    .await;
            }
        });
    })
    .join();
}

/// A database of a test's own for hosts and commands it runs as processes
/// ([`processes::ServeProcess`], the `outcomes` binary): an SQLite file in
/// a given folder, or a new PostgreSQL database, dropped with this value.
#[derive(Debug)]
pub struct ScratchDatabase {
    /// The database URL to give `--database-url`.
    pub url: String,
    postgres_db: Option<String>,
}

impl ScratchDatabase {
    /// A new, empty database on `db`; the SQLite file goes in `dir`.
    pub async fn create(db: Db, dir: &Path) -> ScratchDatabase {
        match db {
            Db::Sqlite => ScratchDatabase {
                url: format!("sqlite://{}", dir.join("outcomes.db").display()),
                postgres_db: None,
            },
            Db::Postgres => {
                let name = create_postgres_database().await;
                ScratchDatabase {
                    url: replace_database(&postgres_url(), &name),
                    postgres_db: Some(name),
                }
            }
        }
    }
}

impl Drop for ScratchDatabase {
    fn drop(&mut self) {
        if let Some(name) = self.postgres_db.take() {
            drop_postgres_database(name);
        }
    }
}

/// Consumer key of the token every test app starts with.
pub const TEST_KEY: &str = "test";

/// `Basic base64(key:secret)`.
pub fn basic(key: &str, secret: &str) -> String {
    use base64::Engine;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{key}:{secret}"))
    )
}

/// Creates an API token with these rights (comma-separated, or `all`) the
/// way `outcomes token create` does, makes the host see it, and returns its
/// secret.
pub async fn create_token(state: &AppState, key: &str, rights: &str) -> String {
    create_token_with(state, key, rights, "", "").await
}

/// As [`create_token`], with an IP allow-list and allowed origins.
pub async fn create_token_with(
    state: &AppState,
    key: &str,
    rights: &str,
    ip_allow: &str,
    origins: &str,
) -> String {
    use host::auth::{ip, origin, rights as r, secret};
    let secret = secret::generate();
    let token = host::store::NewToken {
        consumer_key: key.to_owned(),
        secret_sha256: secret::to_hex(&secret::hash(&secret)),
        rights: r::to_list(&r::parse_list(rights).expect("rights")),
        ip_allow: ip::to_list(&ip::parse_list(ip_allow).expect("ip allow-list")),
        allowed_origins: origin::parse_list(origins).expect("origins").join(","),
        jwt_only: false,
        webhook_secret: host::store::StoredSecret(
            host::auth::webhook::WebhookKey::generate().sealed(state.secrets_key()),
        ),
    };
    assert!(
        state
            .store()
            .create_token(token, state.now())
            .await
            .expect("store"),
        "token {key} already exists"
    );
    state.reload_tokens().await.expect("reload tokens");
    secret
}

async fn create_postgres_database() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "outcomes_test_{}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        Utc::now().timestamp_subsec_nanos()
    );
    let mut conn = PgConnection::connect(&postgres_url())
        .await
        .unwrap_or_else(|e| {
            panic!(
                "PostgreSQL is not reachable at {} ({e}). Start it (on Debian: \
             pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start) \
             or set OUTCOMES_TEST_POSTGRES_URL.",
                postgres_url()
            )
        });
    conn.execute(format!("CREATE DATABASE \"{name}\"").as_str())
        .await
        .expect("create test database");
    name
}

/// `url` with its database name replaced by `name`.
fn replace_database(url: &str, name: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let cut = base.rfind('/').unwrap_or(base.len());
    let mut out = format!("{}/{name}", &base[..cut]);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// Declares a test that runs twice, once on SQLite and once on PostgreSQL:
/// `name::sqlite` and `name::postgres`.
///
/// ```text
/// db_test!(async fn unknown_dossier_lists_nothing(app) {
///     assert_eq!(app.get("/api/v1/dossiers/x/responses").await.body, json!([]));
/// });
/// // started by `support::spawn_with_mini(db: Db) -> TestApp` instead:
/// db_test!(async fn other_questionnaire_is_refused(app: support::spawn_with_mini) { ... });
/// ```
#[macro_export]
macro_rules! db_test {
    ($(#[$meta:meta])* async fn $name:ident($app:ident) $body:block) => {
        $crate::db_test!($(#[$meta])* async fn $name($app: $crate::TestApp::spawn) $body);
    };
    // With a function `async fn(Db) -> TestApp` that starts the host, for
    // tests that need other configuration or definitions.
    ($(#[$meta:meta])* async fn $name:ident($app:ident: $spawn:path $(,)?) $body:block) => {
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test]
            async fn sqlite() {
                let $app = $spawn($crate::Db::Sqlite).await;
                $body
            }

            #[tokio::test]
            async fn postgres() {
                let $app = $spawn($crate::Db::Postgres).await;
                $body
            }
        }
    };
}

/// The plugin folder `cargo xtask plugins` (run by `cargo xtask test`)
/// builds: every plugin crate compiled to wasm, with its fixtures.
pub fn built_plugins() -> PathBuf {
    let dir = repo_root().join("plugins");
    assert!(
        dir.join("phq9").is_dir(),
        "{} holds no built plugins: run the tests with `cargo xtask test`, which builds them \
         (or build them once with `cargo xtask plugins`)",
        dir.display()
    );
    dir
}

/// Compiled plugin code shared by every test app of the run: each app has
/// its own engine, but compiling the same modules again for each test would
/// dominate the suite's time. Artifacts are keyed by module hash and engine
/// configuration, authenticated with [`plugin_cache_key`] and written
/// atomically, so sharing is safe. (`-v2`: artifacts carry a MAC since.)
pub fn plugin_cache() -> PathBuf {
    std::env::temp_dir().join("outcomes-test-plugin-cache-v2")
}

/// The key of [`plugin_cache`], the same for every test app (each has its
/// own data folder, where the key would otherwise be made): with a key per
/// app, every app would refuse the others' artifacts and recompile.
pub fn plugin_cache_key() -> PathBuf {
    std::env::temp_dir().join("outcomes-test-plugin-cache-v2.key")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_names_are_replaced_in_urls() {
        assert_eq!(
            replace_database("postgres://u@h:5432/test", "x"),
            "postgres://u@h:5432/x"
        );
        assert_eq!(
            replace_database("postgres://u@h/test?sslmode=disable", "x"),
            "postgres://u@h/x?sslmode=disable"
        );
    }
}
