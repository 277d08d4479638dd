//! Hosts as separate processes: the built `outcomes` binary serving on a
//! port of its own, and HAProxy balancing requests over several of them,
//! as a clinic runs them (docs/operations.md, "Several hosts on one
//! PostgreSQL"). Each is killed when dropped.

use std::future::Future;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::{built_plugins, plugin_cache, plugin_cache_key, repo_root};

/// Waits until `ready` holds, checking every 20 ms, for at most `limit`;
/// panics naming `what` after that. A wait on a condition, not a sleep.
pub async fn wait_until<F, Fut>(limit: Duration, what: &str, mut ready: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while !ready().await {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A free port on 127.0.0.1 (free when asked; nothing holds it after).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// The `outcomes` binary of this build, built once per test run
/// (`cargo build -p host --bin outcomes`, in the target folder the tests
/// run from): a test of processes must run the code under test, not a
/// binary left over from before. `OUTCOMES_TEST_BINARY` names another.
pub fn outcomes_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY
        .get_or_init(|| {
            if let Some(path) = std::env::var_os("OUTCOMES_TEST_BINARY") {
                return PathBuf::from(path);
            }
            // target/<profile>/deps/api-<hash>
            let exe = std::env::current_exe().expect("the test's path");
            let profile_dir = exe
                .parent()
                .and_then(Path::parent)
                .expect("the test runs from target/<profile>/deps");
            let target_dir = profile_dir.parent().expect("target/");
            let release = profile_dir.file_name().is_some_and(|n| n == "release");
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
            let mut build = Command::new(cargo);
            build
                .current_dir(repo_root())
                .args(["build", "-q", "-p", "host", "--bin", "outcomes"])
                .env("CARGO_TARGET_DIR", target_dir);
            if release {
                build.arg("--release");
            }
            let status = build.status().expect("run cargo build");
            assert!(
                status.success(),
                "cargo build -p host --bin outcomes failed"
            );
            profile_dir.join("outcomes")
        })
        .clone()
}

/// `outcomes serve` as a child process on its own loopback port.
#[derive(Debug)]
pub struct ServeProcess {
    child: Child,
    pub port: u16,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    /// Where its /metrics listener is, `http://127.0.0.1:PORT` (a port of
    /// its own unless `extra` named `--metrics-listen`).
    pub metrics_base: String,
    log: PathBuf,
}

impl ServeProcess {
    /// Starts `outcomes serve` on `database_url` with the bundled
    /// definitions and plugins, its data in `data_dir`, and `extra`
    /// arguments; returns once `/health` answers 200.
    pub async fn start(database_url: &str, data_dir: &Path, extra: &[String]) -> ServeProcess {
        ServeProcess::start_on(free_port(), database_url, data_dir, extra).await
    }

    /// [`ServeProcess::start`] on `port` (from [`free_port`]), for a test
    /// that names the address in `extra`.
    pub async fn start_on(
        port: u16,
        database_url: &str,
        data_dir: &Path,
        extra: &[String],
    ) -> ServeProcess {
        std::fs::create_dir_all(data_dir).expect("the host's data folder");
        let log = data_dir.join(format!("serve-{port}.log"));
        let stderr = std::fs::File::create(&log).expect("the host's log file");
        // The default metrics address would be shared by every host.
        let metrics_port = free_port();
        let metrics_listen = if extra.iter().any(|a| a == "--metrics-listen") {
            Vec::new()
        } else {
            vec![
                "--metrics-listen".to_owned(),
                format!("127.0.0.1:{metrics_port}"),
            ]
        };
        let mut command = Command::new(outcomes_binary());
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("OUTCOMES_") || key == "RUST_LOG" {
                command.env_remove(key);
            }
        }
        command
            .arg("serve")
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--database-url")
            .arg(database_url)
            .arg("--data-dir")
            .arg(data_dir)
            .arg("--questionnaires-dir")
            .arg(repo_root().join("questionnaires"))
            .arg("--protocols-dir")
            .arg(repo_root().join("protocols"))
            .arg("--plugins-dir")
            .arg(built_plugins())
            .arg("--plugin-cache-dir")
            .arg(plugin_cache())
            .arg("--plugin-cache-key-file")
            .arg(plugin_cache_key())
            .args(["--watch", "false"])
            .args(metrics_listen)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        let child = command.spawn().expect("start outcomes serve");
        let mut host = ServeProcess {
            child,
            port,
            base: format!("http://127.0.0.1:{port}"),
            metrics_base: format!("http://127.0.0.1:{metrics_port}"),
            log,
        };
        let client = reqwest::Client::new();
        let health = format!("{}/health", host.base);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Some(status)) = host.child.try_wait() {
                panic!("outcomes serve exited ({status}):\n{}", host.log_tail());
            }
            if client
                .get(&health)
                .send()
                .await
                .is_ok_and(|r| r.status() == 200)
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "outcomes serve did not answer /health within 60 s:\n{}",
                host.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        host
    }

    /// Kills the process at once (SIGKILL): no drain, no goodbye.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The last lines the host logged.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// HAProxy in front of some hosts, with the configuration of
/// docs/operations.md ("Several hosts on one PostgreSQL").
#[derive(Debug)]
pub struct Haproxy {
    child: Child,
    pub port: u16,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    _dir: tempfile::TempDir,
}

impl Haproxy {
    /// The configuration balancing over `backends` (ports on loopback),
    /// listening on `port`: `tests/haproxy.cfg` with one server line per
    /// backend.
    pub fn config(port: u16, backends: &[u16]) -> String {
        let mut text = include_str!("../haproxy.cfg").replace("@PORT@", &port.to_string());
        for (n, backend) in backends.iter().enumerate() {
            text.push_str(&format!("    server host{n} 127.0.0.1:{backend}\n"));
        }
        text
    }

    /// Starts HAProxy over these hosts; returns once it accepts
    /// connections. Panics saying how to install it when it is missing.
    pub async fn start(backends: &[u16]) -> Haproxy {
        let program = std::env::var("OUTCOMES_TEST_HAPROXY").unwrap_or_else(|_| "haproxy".into());
        let installed = Command::new(&program)
            .arg("-v")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            installed,
            "this test runs HAProxy as the load balancer and cannot find `{program}`: on Debian \
             `apt-get install haproxy` (`cargo xtask test` installs it as root), elsewhere install \
             HAProxy 2.x or set OUTCOMES_TEST_HAPROXY to its path"
        );
        let dir = tempfile::tempdir().expect("a folder for haproxy.cfg");
        let port = free_port();
        let config = dir.path().join("haproxy.cfg");
        std::fs::write(&config, Haproxy::config(port, backends)).expect("write haproxy.cfg");
        let check = Command::new(&program)
            .arg("-c")
            .arg("-f")
            .arg(&config)
            .output()
            .expect("run haproxy -c");
        assert!(
            check.status.success(),
            "haproxy refuses the configuration: {}",
            String::from_utf8_lossy(&check.stderr)
        );
        let child = Command::new(&program)
            .arg("-db")
            .arg("-f")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start haproxy");
        let proxy = Haproxy {
            child,
            port,
            base: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        };
        let health = format!("{}/health", proxy.base);
        let client = reqwest::Client::new();
        wait_until(Duration::from_secs(30), "HAProxy passes /health on", || {
            let request = client.get(&health).send();
            async move { request.await.is_ok_and(|r| r.status() == 200) }
        })
        .await;
        proxy
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
