//! The server under test: a fresh database for it and the `outcomes serve`
//! child process.

use std::fs::File;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sqlx::{AnyConnection, Connection, Executor};
use tempfile::TempDir;

use super::load::{self, Target};

/// Which engine one run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "SQLite",
            Backend::Postgres => "PostgreSQL",
        }
    }
}

/// A database nobody else uses: a temporary folder for SQLite, a new
/// database on the PostgreSQL server. [`Fresh::remove`] deletes it.
#[derive(Debug)]
pub struct Fresh {
    /// Holds the SQLite file and the server's log.
    pub dir: TempDir,
    postgres: Option<PostgresDatabase>,
    /// The consumer key of the token the server is started with: a copy of
    /// a preloaded database has [`CONSUMER_KEY`] already.
    token_key: std::cell::RefCell<String>,
    /// Whether it is a copy of a preloaded database (else it starts empty).
    pub copied: bool,
}

#[derive(Debug)]
struct PostgresDatabase {
    admin_url: String,
    name: String,
    url: String,
}

impl Fresh {
    pub async fn create(backend: Backend, postgres_url: &str) -> anyhow::Result<Fresh> {
        let dir = tempfile::Builder::new()
            .prefix("outcomes-bench-")
            .tempdir()
            .context("creating a temporary folder")?;
        let postgres = match backend {
            Backend::Sqlite => None,
            Backend::Postgres => Some(PostgresDatabase::create(postgres_url).await?),
        };
        Ok(Fresh {
            dir,
            postgres,
            token_key: std::cell::RefCell::new(CONSUMER_KEY.to_owned()),
            copied: false,
        })
    }

    /// A copy of a database kept by [`Fresh::keep`] (a preloaded one):
    /// its data folder `kept_data` copied (on SQLite, the database in it),
    /// and on PostgreSQL a database made with `kept_database` as its
    /// template.
    pub async fn copy_of(
        kept_data: &Path,
        kept_database: Option<&str>,
        postgres_url: &str,
    ) -> anyhow::Result<Fresh> {
        let mut fresh = Fresh::create(Backend::Sqlite, postgres_url).await?;
        fresh.set_token_key(PRELOADED_CONSUMER_KEY);
        fresh.copied = true;
        let data = fresh.dir.path().join("data");
        std::fs::create_dir_all(&data)?;
        for entry in std::fs::read_dir(kept_data)?.flatten() {
            let path = entry.path();
            if path.is_file() {
                std::fs::copy(&path, data.join(entry.file_name()))
                    .with_context(|| format!("copying {}", path.display()))?;
            }
        }
        if let Some(template) = kept_database {
            fresh.postgres =
                Some(PostgresDatabase::create_from(postgres_url, Some(template)).await?);
        }
        Ok(fresh)
    }

    /// Keeps this database for later runs (the server using it stopped):
    /// the data folder (on SQLite with the database) moved to `data_dir`,
    /// and on PostgreSQL the database renamed to `database`.
    pub async fn keep(
        mut self,
        data_dir: &Path,
        database: Option<&str>,
        postgres_url: &str,
    ) -> anyhow::Result<()> {
        let data = self.dir.path().join("data");
        let dir = data_dir;
        match (database, self.postgres.take()) {
            (None, None) => {
                if dir.exists() {
                    std::fs::remove_dir_all(dir)?;
                }
                if std::fs::rename(&data, dir).is_err() {
                    std::fs::create_dir_all(dir)?;
                    for entry in std::fs::read_dir(&data)?.flatten() {
                        if entry.path().is_file() {
                            std::fs::copy(entry.path(), dir.join(entry.file_name())).with_context(
                                || format!("keeping the preload in {}", dir.display()),
                            )?;
                        }
                    }
                }
            }
            (Some(name), Some(db)) => {
                let mut conn = AnyConnection::connect(postgres_url).await?;
                let renamed = async {
                    conn.execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str())
                        .await?;
                    conn.execute(format!("ALTER DATABASE {} RENAME TO {name}", db.name).as_str())
                        .await
                }
                .await;
                let _ = conn.close().await;
                if let Err(e) = renamed {
                    self.postgres = Some(db);
                    self.remove().await;
                    return Err(e).context("keeping the preload database");
                }
                // The secrets key that opens the secrets kept in it.
                if dir.exists() {
                    std::fs::remove_dir_all(dir)?;
                }
                std::fs::create_dir_all(dir)?;
                for entry in std::fs::read_dir(&data)?.flatten() {
                    if entry.path().is_file() {
                        std::fs::copy(entry.path(), dir.join(entry.file_name()))?;
                    }
                }
            }
            (_, db) => {
                self.postgres = db;
                self.remove().await;
                anyhow::bail!("the cache entry is for another database");
            }
        }
        Ok(())
    }

    pub fn url(&self) -> String {
        match &self.postgres {
            Some(db) => db.url.clone(),
            None => format!("sqlite://{}", self.sqlite_path().display()),
        }
    }

    pub fn sqlite_path(&self) -> PathBuf {
        self.dir.path().join("data").join("outcomes.db")
    }

    /// The consumer key of the token the next server start makes (each
    /// start on one database needs a new one).
    pub fn set_token_key(&self, key: &str) {
        *self.token_key.borrow_mut() = key.to_owned();
    }

    /// A path in the temporary folder, for files of the run.
    pub fn scratch(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// Drops the PostgreSQL database; the folder goes with `self`.
    pub async fn remove(self) {
        if let Some(db) = &self.postgres
            && let Err(e) = db.drop().await
        {
            eprintln!(
                "xtask: could not drop the benchmark database {}: {e:#}",
                db.name
            );
        }
    }
}

impl PostgresDatabase {
    async fn create(admin_url: &str) -> anyhow::Result<PostgresDatabase> {
        PostgresDatabase::create_from(admin_url, None).await
    }

    /// A new database, a copy of `template` if given.
    async fn create_from(
        admin_url: &str,
        template: Option<&str>,
    ) -> anyhow::Result<PostgresDatabase> {
        sqlx::any::install_default_drivers();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!("outcomes_bench_{}_{nanos}", std::process::id());
        let mut conn = AnyConnection::connect(admin_url)
            .await
            .with_context(|| format!("connecting to {admin_url}"))?;
        let template = template.map_or(String::new(), |t| format!(" TEMPLATE {t}"));
        conn.execute(format!("CREATE DATABASE {name}{template}").as_str())
            .await
            .with_context(|| format!("creating database {name}"))?;
        let _ = conn.close().await;
        let url = with_database(admin_url, &name)
            .with_context(|| format!("cannot put a database name into {admin_url}"))?;
        Ok(PostgresDatabase {
            admin_url: admin_url.to_owned(),
            name,
            url,
        })
    }

    async fn drop(&self) -> anyhow::Result<()> {
        let mut conn = AnyConnection::connect(&self.admin_url).await?;
        conn.execute(format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name).as_str())
            .await?;
        let _ = conn.close().await;
        Ok(())
    }
}

/// Creates an API token with every right through `outcomes token create`,
/// as an operator would; its `Authorization` header.
fn create_token(binary: &Path, url: &str, key: &str) -> anyhow::Result<String> {
    let out = Command::new(binary)
        .args([
            "token",
            "create",
            "--key",
            key,
            "--rights",
            "all",
            "--json",
            "--database-url",
        ])
        .arg(url)
        .output()
        .context("running outcomes token create")?;
    anyhow::ensure!(
        out.status.success(),
        "outcomes token create failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let created: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("reading the token")?;
    let secret = created["consumer_secret"]
        .as_str()
        .context("no consumer_secret in the token")?;
    Ok(format!(
        "Basic {}",
        STANDARD.encode(format!("{key}:{secret}"))
    ))
}

/// `url` with its database (path) replaced by `name`.
pub(super) fn with_database(url: &str, name: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    let authority = rest.split('/').next()?;
    let mut out = format!("{scheme}://{authority}/{name}");
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    Some(out)
}

/// `outcomes serve` as a child process. Killed when dropped.
#[derive(Debug)]
pub struct Server {
    child: Child,
    target: Target,
    log: PathBuf,
    /// When /health first answered 200.
    healthy_at: Instant,
}

/// The origin fill-out sessions of the benchmark return to (allowed for
/// every token; nothing listens there, the benchmark never goes).
pub(super) const RETURN_ORIGIN: &str = "http://127.0.0.1:9";

/// Consumer key of the API token the benchmark makes for itself.
pub(super) const CONSUMER_KEY: &str = "bench";
/// The same, on a copy of a preloaded database (which holds `bench`).
const PRELOADED_CONSUMER_KEY: &str = "bench-run";

/// Whether the server scores what it stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scoring {
    /// The bundled scorers (./plugins) serve.
    On,
    /// No scorer loaded: the baseline of the scoring cost.
    Off,
}

impl Server {
    /// Starts the server on a free loopback port, waits until /health
    /// answers 200 (migrations and the definition import are done by then),
    /// and makes an API token with every right with `outcomes token create`,
    /// which the server loads within a few seconds.
    pub async fn start(binary: &Path, root: &Path, fresh: &Fresh) -> anyhow::Result<Server> {
        Server::start_with(binary, root, fresh, Scoring::On).await
    }

    /// [`Server::start`], with or without scorers.
    pub async fn start_with(
        binary: &Path,
        root: &Path,
        fresh: &Fresh,
        scoring: Scoring,
    ) -> anyhow::Result<Server> {
        Server::start_in(binary, root, fresh, scoring, None, &[]).await
    }

    /// [`Server::start`] with more command-line settings of `serve`
    /// (`--name value` pairs and switches, as given).
    pub async fn start_with_args(
        binary: &Path,
        root: &Path,
        fresh: &Fresh,
        extra: &[String],
    ) -> anyhow::Result<Server> {
        Server::start_in(binary, root, fresh, Scoring::On, None, extra).await
    }

    /// [`Server::start`] with the plugins of `plugins_dir`.
    pub async fn start_with_plugins(
        binary: &Path,
        root: &Path,
        fresh: &Fresh,
        plugins_dir: &Path,
    ) -> anyhow::Result<Server> {
        Server::start_in(binary, root, fresh, Scoring::On, Some(plugins_dir), &[]).await
    }

    async fn start_in(
        binary: &Path,
        root: &Path,
        fresh: &Fresh,
        scoring: Scoring,
        plugins_dir: Option<&Path>,
        extra: &[String],
    ) -> anyhow::Result<Server> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let log = fresh.log_path();
        let stderr = File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let mut command = Command::new(binary);
        // Only what the command line says: no settings leak in from the
        // environment of whoever runs the benchmark.
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("OUTCOMES_") || key == "RUST_LOG" {
                command.env_remove(key);
            }
        }
        // From the repository root, so that the default plugin folder
        // (./plugins, built by `cargo xtask plugins`) is the one found
        // whatever folder the benchmark was started from; builds without a
        // plugin runtime ignore it.
        command
            .current_dir(root)
            .arg("serve")
            .arg("--listen")
            .arg(addr.to_string())
            // Each host its own port for /metrics (a binary from before
            // the default address takes this form too).
            .arg("--metrics-listen")
            .arg("127.0.0.1:0")
            .arg("--data-dir")
            .arg(fresh.dir.path().join("data"))
            .arg("--database-url")
            .arg(fresh.url())
            .arg("--questionnaires-dir")
            .arg(root.join("questionnaires"))
            .arg("--protocols-dir")
            .arg(root.join("protocols"))
            .arg("--allowed-origins")
            .arg(RETURN_ORIGIN);
        if let Some(dir) = plugins_dir {
            command.arg("--plugins-dir").arg(dir);
        }
        command.args(extra);
        if scoring == Scoring::Off {
            // An empty plugin folder: every POST is stored with the
            // scorer's absence in its outcome; that failure is not logged,
            // so the run differs from a scored one by the scoring alone.
            let empty = fresh.dir.path().join("no-plugins");
            std::fs::create_dir_all(&empty)?;
            command
                .arg("--plugins-dir")
                .arg(empty)
                .arg("--log")
                .arg("info,host::scoring=off");
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        let child = command
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let mut server = Server {
            child,
            target: Target {
                addr,
                authorization: String::new(),
            },
            log,
            healthy_at: Instant::now(),
        };
        server.wait_until(|target| async move { matches!(load::get_once(&target, "/health").await, Ok((200, _))) }, "/health").await?;
        server.healthy_at = Instant::now();
        server.target.authorization =
            create_token(binary, &fresh.url(), &fresh.token_key.borrow().clone())?;
        // Any dossier will do: the list of an unknown one is empty.
        let probe = |target: Target| async move {
            matches!(
                load::get_once(&target, "/api/v1/dossiers/bench-probe/responses").await,
                Ok((200, _))
            )
        };
        server
            .wait_until(probe, "the API with the benchmark's token")
            .await?;
        Ok(server)
    }

    /// What the server's plugin runtime serves, in one line: a POST is
    /// scored only when the questionnaire's scorer serves.
    pub async fn plugins(&self) -> String {
        match load::get_once(&self.target, "/api/v1/plugins").await {
            Ok((200, body)) => {
                let view: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                let folders = view["plugins"].as_array().cloned().unwrap_or_default();
                let serving: Vec<&str> = folders
                    .iter()
                    .filter(|p| p["state"] == "serving")
                    .filter_map(|p| p["folder"].as_str())
                    .collect();
                format!(
                    "{} of {} plugin folders serve ({})",
                    serving.len(),
                    folders.len(),
                    serving.join(", ")
                )
            }
            Ok((404, _)) => "no plugin runtime in this build (nothing is scored)".to_owned(),
            Ok((status, _)) => format!("the plugin list answered {status}"),
            Err(e) => format!("the plugin list failed: {e:#}"),
        }
    }

    /// Polls `ready` until it holds, for at most 60 s.
    async fn wait_until<F, Fut>(&mut self, ready: F, what: &str) -> anyhow::Result<()>
    where
        F: Fn(Target) -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "the server exited during start-up ({status}):\n{}",
                    self.log_tail()
                );
            }
            if ready(self.target.clone()).await {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "the server did not answer {what} within 60 s:\n{}",
                    self.log_tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Seconds from `started` until /health first answered 200.
    pub fn health_after(&self, started: Instant) -> f64 {
        self.healthy_at.duration_since(started).as_secs_f64()
    }

    /// Where and as whom to send requests.
    pub fn target(&self) -> &Target {
        &self.target
    }

    pub fn addr(&self) -> SocketAddr {
        self.target.addr
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops the server (SIGTERM, then SIGKILL after 5 s).
    pub fn stop(self) {
        drop(self);
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// Stops a child process: SIGTERM first, so that a server closes its
/// database cleanly, then SIGKILL after 5 s.
pub(super) fn stop(child: &mut Child) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .stderr(Stdio::null())
        .status();
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The binary to measure: `given`, else the release build.
pub fn binary(root: &Path, given: Option<&Path>, no_build: bool) -> anyhow::Result<PathBuf> {
    match given {
        Some(path) => {
            anyhow::ensure!(path.exists(), "{} does not exist", path.display());
            Ok(path.to_owned())
        }
        None => build(root, no_build),
    }
}

/// Builds the release binary; its path.
fn build(root: &Path, skip: bool) -> anyhow::Result<PathBuf> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let binary = target
        .join("release")
        .join(format!("outcomes{}", std::env::consts::EXE_SUFFIX));
    if !skip {
        eprintln!(
            "xtask: building the release binary (cargo build --release -p host --bin outcomes)"
        );
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let status = Command::new(cargo)
            .current_dir(root)
            .args([
                "build",
                "--release",
                "--package",
                "host",
                "--bin",
                "outcomes",
            ])
            .status()
            .context("running cargo build")?;
        anyhow::ensure!(status.success(), "cargo build --release failed ({status})");
    }
    anyhow::ensure!(
        binary.exists(),
        "{} does not exist; build it or drop --no-build",
        binary.display()
    );
    Ok(binary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_names_go_into_urls() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432/test", "b").as_deref(),
            Some("postgres://postgres@127.0.0.1:5432/b")
        );
        assert_eq!(
            with_database("postgres://u:p@h/x?sslmode=disable", "b").as_deref(),
            Some("postgres://u:p@h/b?sslmode=disable")
        );
        assert_eq!(
            with_database("postgres://h", "b").as_deref(),
            Some("postgres://h/b")
        );
    }
}
