//! `--peer`: the same POST load against a peer an integrator might stand up
//! instead of this service: Medplum's FHIR router on its in-memory
//! repository (`xtask/peer/server.mjs`, packages pinned in
//! `xtask/peer/package.json`, installed from npm with Node.js 22 as the
//! npm package `node`). It keeps nothing on disk, scores nothing and
//! writes no access log.
//!
//! The peer is installed once into `<target>/bench-peer/` (`npm install`,
//! again when `package.json` changes) and started fresh, empty, for each
//! round, on a free loopback port; it gets one FHIR QuestionnaireResponse
//! per PHQ-9 response the service gets (nine items, a unique identifier,
//! the same dossiers as subjects), from the same load generator with the
//! same connections, pace and duration.

use std::fs::File;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hyper::Method;
use hyper::body::Bytes;

use super::load::{self, LoadReport, MakeRequest, Pace, Target};

/// The files that make the peer, kept in the repository.
const PACKAGE_JSON: &str = include_str!("../../peer/package.json");
const SERVER_MJS: &str = include_str!("../../peer/server.mjs");
const USER: &str = "bench";
const PASSWORD: &str = "bench-peer";

/// Installs the peer's packages when they are missing or changed; the
/// folder it runs from.
pub fn install(root: &Path) -> anyhow::Result<PathBuf> {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("bench-peer");
    std::fs::create_dir_all(&dir)?;
    let manifest = dir.join("package.json");
    let node = node_binary(&dir);
    let current = std::fs::read_to_string(&manifest).ok();
    if current.as_deref() != Some(PACKAGE_JSON) || !node.exists() {
        std::fs::write(&manifest, PACKAGE_JSON)?;
        eprintln!(
            "xtask: installing the peer (npm install in {})",
            dir.display()
        );
        let status = Command::new("npm")
            .current_dir(&dir)
            .args(["install", "--no-audit", "--no-fund", "--loglevel=error"])
            .status()
            .context("running npm install (the peer needs Node.js and npm)")?;
        anyhow::ensure!(
            status.success(),
            "npm install of the peer failed ({status})"
        );
        anyhow::ensure!(
            node.exists(),
            "npm install left no {}: the `node` package's install script did not run",
            node.display()
        );
    }
    std::fs::write(dir.join("server.mjs"), SERVER_MJS)?;
    Ok(dir)
}

fn node_binary(dir: &Path) -> PathBuf {
    dir.join("node_modules").join(".bin").join("node")
}

/// The running peer. Killed when dropped.
pub struct Peer {
    child: Child,
    target: Target,
    log: PathBuf,
}

impl Peer {
    /// Starts the peer from `dir` (see [`install`]) on a free loopback port
    /// and waits until it answers.
    pub async fn start(dir: &Path) -> anyhow::Result<Peer> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let log = dir.join("server.log");
        let stderr = File::create(&log)?;
        let child = Command::new(node_binary(dir))
            .current_dir(dir)
            .arg("server.mjs")
            .env("PORT", port.to_string())
            .env("PEER_USER", USER)
            .env("PEER_PASSWORD", PASSWORD)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .context("starting the peer")?;
        let mut peer = Peer {
            child,
            target: Target {
                addr,
                authorization: format!("Basic {}", STANDARD.encode(format!("{USER}:{PASSWORD}"))),
            },
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = peer.child.try_wait()? {
                bail!(
                    "the peer exited during start-up ({status}): {}",
                    std::fs::read_to_string(&peer.log).unwrap_or_default()
                );
            }
            if matches!(load::get_once(&peer.target, "/ready").await, Ok((204, _))) {
                return Ok(peer);
            }
            if Instant::now() > deadline {
                bail!("the peer did not answer within 60 s");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The POST load of `load::post_load`, as FHIR: request n posts a
/// completed PHQ-9 QuestionnaireResponse with identifier `b<n>` for
/// `Patient/bench-<n mod dossiers>`, the same answers as the service's
/// request n; a 201 is a success.
pub async fn post_load(
    peer: &Peer,
    clients: usize,
    dossiers: usize,
    warmup: Duration,
    duration: Duration,
    pace: Pace,
) -> anyhow::Result<LoadReport> {
    let make: MakeRequest = Arc::new(move |n| {
        let items: Vec<serde_json::Value> = (1..=9)
            .map(|q| {
                serde_json::json!({
                    "linkId": format!("v_{q}"),
                    "answer": [{"valueInteger": (n + q) % 4}],
                })
            })
            .collect();
        let body = serde_json::json!({
            "resourceType": "QuestionnaireResponse",
            "status": "completed",
            "questionnaire": "Questionnaire/phq9",
            "subject": {"reference": format!("Patient/bench-{}", n % dossiers)},
            "identifier": {"system": "urn:bench", "value": format!("b{n}")},
            "authored": "2026-01-01T10:00:00Z",
            "item": items,
        });
        (
            Method::POST,
            "/fhir/R4/QuestionnaireResponse".to_owned(),
            Some(Bytes::from(body.to_string())),
        )
    });
    load::run_load(
        "POST (peer)",
        &peer.target,
        peer.pid(),
        clients,
        warmup,
        duration,
        201,
        make,
        pace,
    )
    .await
}
