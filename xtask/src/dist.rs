//! `cargo xtask dist`: runs `deploy/build-dist.sh` (the build steps of the
//! Dockerfile), then checks what it assembled as an operator would use it,
//! so the image's contents are tested where no container engine runs:
//!
//! 1. the layout: binary, entrypoint, health check, definitions, plugins;
//! 2. `deploy/outcomes.service` with `systemd-analyze verify`, in a scratch
//!    root where the unit's paths lead into this folder (skipped, saying
//!    so, where systemd-analyze is missing);
//! 3. a first start on an empty data folder through the entrypoint
//!    (migrate, then serve): `/health` answers, SIGTERM stops it cleanly;
//! 4. a token made as the install guide makes one, `token list` through
//!    the entrypoint, a second start: every plugin serves, a PHQ-9 response
//!    is scored by its plugin, the image's health check script passes
//!    (where curl is installed), SIGTERM stops it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};

/// How long a start may take: the first one compiles every plugin (a dev
/// build of wasmtime is slow at it) on a machine busy with other builds.
const START_DEADLINE: Duration = Duration::from_secs(240);
/// How long a stop may take after SIGTERM.
const STOP_DEADLINE: Duration = Duration::from_secs(30);

#[derive(Debug, clap::Args)]
pub struct DistArgs {
    /// Cargo profile of the host binary: release (as the image) or dev
    /// (CI: reuses what the tests built)
    #[arg(long, default_value = "release")]
    profile: String,
    /// Folder to assemble into [default: <target dir>/dist]
    #[arg(long)]
    out: Option<PathBuf>,
    /// Only assemble, do not start the result
    #[arg(long)]
    no_check: bool,
}

pub fn run(args: DistArgs) -> anyhow::Result<()> {
    crate::prerequisites::wasm_target()?;
    let root = crate::prerequisites::workspace_root();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let out = args.out.unwrap_or_else(|| target.join("dist"));
    crate::run(
        Command::new(root.join("deploy/build-dist.sh"))
            .current_dir(&root)
            .args(["--profile", &args.profile, "--out"])
            .arg(&out),
    )
    .context("deploy/build-dist.sh")?;
    if args.no_check {
        return Ok(());
    }
    let out = out.canonicalize().context("the assembled folder")?;
    check_layout(&out)?;
    verify_unit(&out)?;
    let data = tempfile::tempdir().context("a data folder")?;
    first_start(&out, data.path())?;
    second_start(&out, data.path())?;
    eprintln!("dist: {} passed every check", out.display());
    Ok(())
}

fn check_layout(dist: &Path) -> anyhow::Result<()> {
    for file in [
        "bin/outcomes",
        "bin/outcomes-entrypoint",
        "bin/outcomes-healthcheck",
    ] {
        let meta = std::fs::metadata(dist.join(file)).with_context(|| format!("dist: {file}"))?;
        ensure!(
            std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0,
            "dist: {file} is not executable"
        );
    }
    for file in [
        "questionnaires/phq9/questionnaire.toml",
        "protocols/rom_monthly.toml",
        "plugins/phq9/phq9.wasm",
        "deploy/outcomes.service",
        "deploy/outcomes.toml",
        "deploy/postgres-roles.sql",
        "deploy/postgres-grants.sql",
    ] {
        ensure!(dist.join(file).is_file(), "dist: {file} is missing");
    }
    Ok(())
}

/// `systemd-analyze verify` of the unit in a scratch root holding the
/// system's own unit files (for the targets it names) and this folder
/// where the unit expects it, `/opt/outcomes`.
fn verify_unit(dist: &Path) -> anyhow::Result<()> {
    let Ok(version) = Command::new("systemd-analyze").arg("--version").output() else {
        eprintln!("dist: skipping `systemd-analyze verify`: systemd-analyze is not installed");
        return Ok(());
    };
    ensure!(version.status.success(), "systemd-analyze --version failed");
    let system_units = Path::new("/usr/lib/systemd/system");
    if !system_units.is_dir() {
        eprintln!(
            "dist: skipping `systemd-analyze verify`: no {}",
            system_units.display()
        );
        return Ok(());
    }
    let scratch = tempfile::tempdir()?;
    let root = scratch.path();
    let units = root.join("usr/lib/systemd/system");
    std::fs::create_dir_all(&units)?;
    for entry in std::fs::read_dir(system_units)?.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            std::fs::copy(entry.path(), units.join(entry.file_name()))?;
        }
    }
    let bin = root.join("opt/outcomes/bin");
    std::fs::create_dir_all(&bin)?;
    let binary = dist.join("bin/outcomes");
    if std::fs::hard_link(&binary, bin.join("outcomes")).is_err() {
        std::fs::copy(&binary, bin.join("outcomes"))?;
    }
    let etc = root.join("etc/systemd/system");
    std::fs::create_dir_all(&etc)?;
    std::fs::copy(
        dist.join("deploy/outcomes.service"),
        etc.join("outcomes.service"),
    )?;
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(format!("--root={}", root.display()))
        .arg("outcomes.service")
        .output()
        .context("running systemd-analyze verify")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Warnings (an unknown key, a bad value) leave the exit code at 0.
    let ours: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("outcomes.service"))
        .collect();
    ensure!(
        out.status.success() && ours.is_empty(),
        "systemd-analyze verify deploy/outcomes.service ({}):\n{stderr}",
        out.status
    );
    eprintln!("dist: systemd-analyze verify deploy/outcomes.service: no findings");
    Ok(())
}

/// An empty data folder: the entrypoint migrates and serves; `/health`
/// answers; SIGTERM stops it with success.
fn first_start(dist: &Path, data: &Path) -> anyhow::Result<()> {
    let mut server = Server::start(dist, data)?;
    ensure!(
        server.saw("migrations applied"),
        "the entrypoint did not migrate first:\n{}",
        server.log()
    );
    let (status, body) = http(server.addr, "GET", "/health", None, None)?;
    ensure!(
        status == 200 && body.contains("\"status\":\"ok\""),
        "/health answered {status}: {body}"
    );
    server.stop()?;
    eprintln!("dist: first start on an empty data folder: migrated, served /health, stopped");
    Ok(())
}

/// A token made as the install guide makes one (docs/operations.md#install,
/// step 8: the environment file sourced, the configuration file named),
/// `token list` through the entrypoint as `docker run IMAGE token list`
/// does, then a second start on the same data: plugins serve and score,
/// the health check script passes.
fn second_start(dist: &Path, data: &Path) -> anyhow::Result<()> {
    let etc = tempfile::tempdir()?;
    let config = etc.path().join("outcomes.toml");
    std::fs::write(
        &config,
        format!(
            "data_dir = {:?}\nlog_format = \"json\"\n",
            data.display().to_string()
        ),
    )?;
    let env_file = etc.path().join("outcomes.env");
    std::fs::write(&env_file, "OUTCOMES_TIME_ZONE=Europe/Amsterdam\n")?;
    let made = Command::new("sh")
        .current_dir(dist)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .arg("-c")
        .arg(format!(
            "set -a; . {env}; exec {bin} --config {config} token create --key dist-check --rights all --json",
            env = env_file.display(),
            bin = dist.join("bin/outcomes").display(),
            config = config.display(),
        ))
        .output()
        .context("outcomes token create")?;
    ensure!(
        made.status.success(),
        "outcomes token create: {}",
        String::from_utf8_lossy(&made.stderr)
    );
    let token: Value = serde_json::from_slice(&made.stdout).context("token create --json")?;
    let secret = token["consumer_secret"]
        .as_str()
        .context("token create --json printed no consumer_secret")?;
    let basic = format!("dist-check:{secret}");
    let listed = Command::new(dist.join("bin/outcomes-entrypoint"))
        .current_dir(dist)
        .env_clear()
        .envs(environment(data))
        .args(["token", "list"])
        .output()
        .context("outcomes-entrypoint token list")?;
    ensure!(
        listed.status.success() && String::from_utf8_lossy(&listed.stdout).contains("dist-check"),
        "outcomes-entrypoint token list: {}{}",
        String::from_utf8_lossy(&listed.stdout),
        String::from_utf8_lossy(&listed.stderr)
    );

    let mut server = Server::start(dist, data)?;
    let (status, body) = http(server.addr, "GET", "/api/v1/plugins", Some(&basic), None)?;
    ensure!(
        status == 200,
        "GET /api/v1/plugins answered {status}: {body}"
    );
    let listed: Value = serde_json::from_str(&body)?;
    let plugins = listed["plugins"].as_array().context("no plugin list")?;
    let shipped = std::fs::read_dir(dist.join("plugins"))?.count();
    ensure!(
        plugins.len() == shipped && plugins.iter().all(|p| p["state"] == "serving"),
        "not every one of the {shipped} plugins serves: {body}"
    );
    let answers = json!({
        "questionnaire_key": "phq9",
        "external_id": "dist-check-1",
        "answer_data": {"v_1": "a1", "v_2": "a2", "v_3": "a0", "v_4": "a1", "v_5": "a0",
                        "v_6": "a0", "v_7": "a1", "v_8": "a0", "v_9": "a0"}
    });
    let (status, body) = http(
        server.addr,
        "POST",
        "/api/v1/dossiers/dist-check/responses",
        Some(&basic),
        Some(&answers),
    )?;
    ensure!(
        status == 201,
        "POST a PHQ-9 response answered {status}: {body}"
    );
    let stored: Value = serde_json::from_str(&body)?;
    ensure!(
        stored["outcome"]["scores"]["total"]["value"].as_f64() == Some(5.0),
        "the PHQ-9 scorer did not compute the total 5: {body}"
    );
    healthcheck(dist, server.addr)?;
    server.stop()?;
    eprintln!("dist: second start: {shipped} plugins serving, a PHQ-9 response scored, stopped");
    Ok(())
}

/// The image's health check script against the running service.
fn healthcheck(dist: &Path, addr: SocketAddr) -> anyhow::Result<()> {
    if Command::new("curl").arg("--version").output().is_err() {
        eprintln!("dist: skipping bin/outcomes-healthcheck: curl is not installed");
        return Ok(());
    }
    let status = Command::new(dist.join("bin/outcomes-healthcheck"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("OUTCOMES_LISTEN", addr.to_string())
        .status()
        .context("running bin/outcomes-healthcheck")?;
    ensure!(
        status.success(),
        "bin/outcomes-healthcheck failed ({status})"
    );
    Ok(())
}

/// The environment of the service: the caller's PATH and nothing of its
/// OUTCOMES_* settings; the data folder, any free loopback port, JSON logs.
fn environment(data: &Path) -> Vec<(String, String)> {
    vec![
        (
            "PATH".into(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
        ),
        ("OUTCOMES_DATA_DIR".into(), data.display().to_string()),
        ("OUTCOMES_LISTEN".into(), "127.0.0.1:0".into()),
        ("OUTCOMES_METRICS_LISTEN".into(), "127.0.0.1:0".into()),
        ("OUTCOMES_LOG_FORMAT".into(), "json".into()),
    ]
}

/// The service started through the entrypoint, its log lines collected.
struct Server {
    child: Option<Child>,
    addr: SocketAddr,
    lines: Vec<String>,
    receiver: mpsc::Receiver<String>,
}

impl Server {
    /// Starts it and waits until it logs the address it listens on.
    fn start(dist: &Path, data: &Path) -> anyhow::Result<Server> {
        let mut child = Command::new(dist.join("bin/outcomes-entrypoint"))
            .current_dir(dist)
            .env_clear()
            .envs(environment(data))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting bin/outcomes-entrypoint")?;
        let stderr = child.stderr.take().context("the entrypoint's stderr")?;
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let mut server = Server {
            child: Some(child),
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            lines: Vec::new(),
            receiver,
        };
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = server.receiver.recv_timeout(left) else {
                bail!(
                    "the service did not log its address within {START_DEADLINE:?}:\n{}",
                    server.log()
                );
            };
            let found = listening_address(&line);
            server.lines.push(line);
            if let Some(addr) = found {
                server.addr = addr;
                return Ok(server);
            }
        }
    }

    /// The lines still in the pipe, up to its end (the process exited).
    fn drain(&mut self, deadline: Instant) {
        while let Ok(line) = self
            .receiver
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            self.lines.push(line);
        }
    }

    fn saw(&self, text: &str) -> bool {
        self.lines.iter().any(|l| l.contains(text))
    }

    fn log(&self) -> String {
        self.lines.join("\n")
    }

    /// SIGTERM, then waits for a successful exit.
    fn stop(&mut self) -> anyhow::Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let pid = child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status()?;
        ensure!(sent.success(), "kill -TERM {pid} failed");
        let deadline = Instant::now() + STOP_DEADLINE;
        loop {
            if let Some(status) = child.try_wait()? {
                self.drain(deadline);
                ensure!(
                    status.success(),
                    "the service exited with {status} after SIGTERM:\n{}",
                    self.log()
                );
                ensure!(
                    self.saw("stopped"),
                    "no `stopped` in the log:\n{}",
                    self.log()
                );
                return Ok(());
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!("the service did not stop within {STOP_DEADLINE:?} of SIGTERM");
            }
            // Waiting for the process to exit: nothing to be woken by.
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The address in the service's `listening on http://ADDR` line.
fn listening_address(line: &str) -> Option<SocketAddr> {
    let rest = &line[line.find("listening on http")?..];
    let addr = rest.split("://").nth(1)?;
    let end = addr
        .find(|c: char| c == '"' || c.is_whitespace())
        .unwrap_or(addr.len());
    addr[..end].parse().ok()
}

/// One HTTP/1.1 request over a fresh connection: status and body.
fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    basic: Option<&str>,
    body: Option<&Value>,
) -> anyhow::Result<(u16, String)> {
    use base64::Engine as _;
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(basic) = basic {
        let encoded = base64::engine::general_purpose::STANDARD.encode(basic);
        request.push_str(&format!("Authorization: Basic {encoded}\r\n"));
    }
    if !body.is_empty() {
        request.push_str("Content-Type: application/json\r\n");
    }
    request.push_str("\r\n");
    request.push_str(&body);
    stream.write_all(request.as_bytes())?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("{method} {path}: no status in {answer:?}"))?;
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_is_read_from_a_json_log_line() {
        let line = r#"{"timestamp":"…","level":"INFO","fields":{"message":"listening on http://127.0.0.1:40123","backend":"SQLite"}}"#;
        assert_eq!(
            listening_address(line),
            Some(SocketAddr::from(([127, 0, 0, 1], 40123)))
        );
        assert_eq!(
            listening_address("listening on https://[::1]:8443 now"),
            Some("[::1]:8443".parse().expect("address"))
        );
        assert_eq!(listening_address("migrations applied"), None);
    }
}
