//! The authenticated-GET phase: the same GETs with HTTP Basic and with an
//! RS256 JWT, under load, so the cost of authentication shows in
//! throughput and in server CPU per request. Two GETs: a questionnaire (no
//! patient data, so nothing written: authentication is the largest share
//! it can be) and a dossier's response list (patient data: the access-log
//! row is committed before the answer, as on every dossier read).

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use hyper::Method;
use jsonwebtoken::{Algorithm, EncodingKey, Header};

use super::args::BenchArgs;
use super::load::{self, LoadReport, MakeRequest, Target};
use super::server::{Backend, CONSUMER_KEY, Fresh, Server};

/// The dossier the JWT is for (`sub`) and whose list is read.
const DOSSIER: &str = "bench-auth";

/// The RSA key pair of the test suite: the JWT is signed with the private
/// key, the public key is registered for the benchmark's token.
const PRIVATE_KEY: &str = "tests/fixtures/keys/rsa2048.pem";
const PUBLIC_KEY: &str = "tests/fixtures/keys/rsa2048.pub.pem";

/// The GETs measured, each with Basic and with a JWT.
const GETS: [(&str, &str); 2] = [
    (
        "questionnaire",
        "/api/v1/questionnaires/phq9?use_legacy_keys=false",
    ),
    ("dossier list", "/api/v1/dossiers/bench-auth/responses"),
];

/// The load runs of the phase: per GET, Basic then JWT.
#[derive(Debug)]
pub struct AuthReport {
    pub runs: Vec<(&'static str, LoadReport, LoadReport)>,
}

pub async fn auth_phase(
    backend: Backend,
    args: &BenchArgs,
    binary: &Path,
    root: &Path,
    fresh: &Fresh,
) -> anyhow::Result<AuthReport> {
    let server = Server::start(binary, root, fresh).await?;
    register_public_key(binary, root, fresh)?;
    let basic = server.target().clone();
    let jwt = Target {
        authorization: format!("Bearer {}", sign(root)?),
        ..basic.clone()
    };
    // One response in the dossier, so its list is not empty.
    let body = r#"{"questionnaire_key":"phq9","external_id":"auth-1","answer_data":{"v_1":"a1"}}"#;
    let (status, text) = load::post_once(
        &basic,
        &format!("/api/v1/dossiers/{DOSSIER}/responses"),
        body.into(),
    )
    .await?;
    anyhow::ensure!(
        status == 201,
        "seeding the dossier: HTTP {status}: {}",
        String::from_utf8_lossy(&text)
    );
    wait_for_jwt(&jwt).await?;
    println!(
        "Auth: {} connections, {} s warm-up + {} s measured per run ({} at {})",
        args.clients,
        args.warmup,
        args.seconds,
        backend.name(),
        server.addr()
    );
    let mut runs = Vec::new();
    for (name, path) in GETS {
        let make: MakeRequest = Arc::new(move |_| (Method::GET, path.to_owned(), None));
        let measure = async |scheme: &str, target: &Target| -> anyhow::Result<LoadReport> {
            let report = load::run_load(
                &format!("GET {name}, {scheme}"),
                target,
                server.pid(),
                args.clients,
                Duration::from_secs(args.warmup),
                Duration::from_secs(args.seconds),
                200,
                make.clone(),
                load::Pace::Closed,
            )
            .await?;
            println!("{}", report.describe());
            Ok(report)
        };
        let with_basic = measure("Basic", &basic).await?;
        let with_jwt = measure("RS256 JWT", &jwt).await?;
        runs.push((name, with_basic, with_jwt));
    }
    server.stop();
    Ok(AuthReport { runs })
}

/// `outcomes token add-key`, as an operator registers an EPD's key.
fn register_public_key(binary: &Path, root: &Path, fresh: &Fresh) -> anyhow::Result<()> {
    let out = Command::new(binary)
        .args(["token", "add-key", CONSUMER_KEY, "--public-key"])
        .arg(root.join(PUBLIC_KEY))
        .args(["--algorithm", "RS256"])
        .arg("--database-url")
        .arg(fresh.url())
        .output()
        .context("running outcomes token add-key")?;
    anyhow::ensure!(
        out.status.success(),
        "outcomes token add-key failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// An RS256 JWT for the benchmark's token and dossier, valid for an hour.
fn sign(root: &Path) -> anyhow::Result<String> {
    let pem = std::fs::read(root.join(PRIVATE_KEY)).context("reading the private key")?;
    let key = EncodingKey::from_rsa_pem(&pem).context("the private key")?;
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(CONSUMER_KEY.to_owned());
    let now = chrono::Utc::now().timestamp();
    let claims = serde_json::json!({
        "iss": "bench", "aud": "api", "iat": now, "exp": now + 3600, "sub": DOSSIER,
    });
    jsonwebtoken::encode(&header, &claims, &key).context("signing the JWT")
}

/// The server reloads its token table every few seconds: waits until the
/// JWT is accepted.
async fn wait_for_jwt(jwt: &Target) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let path = format!("/api/v1/dossiers/{DOSSIER}/responses");
    loop {
        match load::get_once(jwt, &path).await {
            Ok((200, _)) => return Ok(()),
            answer if Instant::now() > deadline => {
                anyhow::bail!("the server does not accept the benchmark's JWT: {answer:?}")
            }
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

impl AuthReport {
    /// The summary lines: per GET, throughput and server CPU per request
    /// with each scheme, and what the JWT costs beyond Basic.
    pub fn summary(&self) -> Vec<String> {
        let cpu = |r: &LoadReport| {
            r.server_cpu_micros()
                .map_or("-".into(), |c| format!("{c:.0}"))
        };
        self.runs
            .iter()
            .map(|(name, basic, jwt)| {
                let extra = match (basic.server_cpu_micros(), jwt.server_cpu_micros()) {
                    (Some(b), Some(j)) => format!("{:+.0}", j - b),
                    _ => "-".into(),
                };
                format!(
                    "{name:<14} Basic {:>7.0} req/s {:>5} µs CPU | JWT {:>7.0} req/s {:>5} µs CPU | JWT - Basic {extra} µs CPU per request",
                    basic.throughput(),
                    cpu(basic),
                    jwt.throughput(),
                    cpu(jwt),
                )
            })
            .collect()
    }
}
