//! `--shadow-candidate`: before the POST load, a candidate version of the
//! PHQ-9 scorer is installed with `outcomes plugin candidate`, as an
//! operator would, so every scored POST is scored again in the shadow
//! (docs/operations.md#verifying-outcomes-and-trying-a-new-scorer). The
//! candidate is the built module with a custom section appended: the same
//! code under another hash, so it finds no difference and the run measures
//! what shadow scoring itself costs.
//!
//! It reports only what it measured: the load starts once the server has
//! shadow-scored a probe response (not when the candidate's row exists),
//! and the run fails unless the candidate's calls plus the dropped jobs
//! come out at the responses answered 201.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::load;
use super::server::{Fresh, Server};

/// Installs the candidate and waits until the server shadows with it: a
/// probe response it stored was scored by the candidate.
pub async fn install(
    binary: &Path,
    root: &Path,
    fresh: &Fresh,
    server: &Server,
) -> anyhow::Result<()> {
    let built = root.join("plugins").join("phq9");
    let dir = fresh.dir.path().join("candidate");
    std::fs::create_dir_all(dir.join("fixtures"))?;
    for entry in std::fs::read_dir(built.join("fixtures"))
        .context("the built PHQ-9 fixtures (cargo xtask plugins)")?
        .flatten()
    {
        std::fs::copy(entry.path(), dir.join("fixtures").join(entry.file_name()))?;
    }
    let module = std::fs::read(built.join("phq9.wasm")).context("the built PHQ-9 module")?;
    let file = dir.join("phq9.wasm");
    std::fs::write(
        &file,
        host::plugins::sections::with_custom_section(&module, "outcomes-bench", b"bench-candidate"),
    )?;
    let out = Command::new(binary)
        .current_dir(root)
        .args(["plugin", "candidate", "phq9"])
        .arg(&file)
        .arg("--database-url")
        .arg(fresh.url())
        .arg("--data-dir")
        .arg(fresh.dir.path().join("data"))
        .output()
        .context("running outcomes plugin candidate")?;
    anyhow::ensure!(
        out.status.success(),
        "outcomes plugin candidate failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The row says "shadowing" at once, but a server takes the candidate
    // up only at its next read of the rows (every 2 s): until then it
    // shadows nothing. Only a response the candidate scored shows that
    // the server shadows, so POST one at a time until one is counted.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut probes = 0;
    while Instant::now() < deadline {
        let (status, body) = load::post_once(server.target(), PROBE_PATH, probe(probes)).await?;
        anyhow::ensure!(
            status == 201,
            "a probe POST was answered {status}: {}",
            String::from_utf8_lossy(&body)
        );
        probes += 1;
        let given = Instant::now() + Duration::from_secs(2);
        while Instant::now() < given {
            if counts(server).await.is_some_and(|c| c.calls > 0) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    anyhow::bail!("the server shadowed none of {probes} probe POSTs within 30 s")
}

/// Where the probes of [`install`] go: a dossier of their own.
const PROBE_PATH: &str = "/api/v1/dossiers/bench-probe/responses";

/// The `n`th probe POST's body.
fn probe(n: u32) -> String {
    format!(
        r#"{{"questionnaire_key":"phq9","external_id":"probe-{n}","answer_data":{{"v_1":"a1","v_2":"a1","v_3":"a0","v_4":"a0","v_5":"a0","v_6":"a0","v_7":"a0","v_8":"a0","v_9":"a0"}}}}"#
    )
}

/// The PHQ-9 candidate as GET /api/v1/plugins lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counts {
    pub state: String,
    pub version: String,
    pub calls: u64,
    pub differences: u64,
    pub dropped: u64,
}

impl Counts {
    /// The responses the shadow has dealt with: scored or dropped.
    pub fn handled(&self) -> u64 {
        self.calls + self.dropped
    }

    pub fn describe(&self) -> String {
        format!(
            "{} {}: {} calls, {} differences, {} dropped",
            self.state, self.version, self.calls, self.differences, self.dropped
        )
    }
}

/// The PHQ-9 candidate's state and counts at GET /api/v1/plugins.
pub async fn counts(server: &Server) -> Option<Counts> {
    let (status, body) = load::get_once(server.target(), "/api/v1/plugins")
        .await
        .ok()?;
    if status != 200 {
        return None;
    }
    let view: serde_json::Value = serde_json::from_slice(&body).ok()?;
    let c = view["plugins"]
        .as_array()?
        .iter()
        .find(|p| p["folder"] == "phq9")?["candidate"]
        .clone();
    c.is_object().then(|| Counts {
        state: c["state"].as_str().unwrap_or("?").to_owned(),
        version: c["version"].as_str().unwrap_or("?").to_owned(),
        calls: c["calls"].as_u64().unwrap_or(0),
        differences: c["differences"].as_u64().unwrap_or(0),
        dropped: c["dropped"].as_u64().unwrap_or(0),
    })
}

/// The counts once they stop changing (read 2.5 s apart, longer than a
/// host takes to write what its worker did and what it dropped): the
/// baseline the load's responses are counted from.
pub async fn settled(server: &Server) -> anyhow::Result<Counts> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = counts(server).await;
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(2500)).await;
        let now = counts(server).await;
        if let (Some(a), Some(b)) = (&last, &now)
            && a == b
        {
            return Ok(b.clone());
        }
        last = now;
    }
    anyhow::bail!("the candidate's counts did not settle within 30 s before the load")
}

/// Waits until the shadow has dealt with `expected` responses since
/// `before`: each scored by the candidate or counted as dropped. Its
/// worker scores on idle CPU after the load, and a host writes its dropped
/// count every 2 s, so the counts may still grow for a while; they must
/// come out at exactly `expected`, within a minute, or the run fails.
pub async fn drained(server: &Server, before: &Counts, expected: u64) -> anyhow::Result<Counts> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last: Option<Counts> = None;
    loop {
        if let Some(now) = counts(server).await {
            let handled = now.handled().saturating_sub(before.handled());
            anyhow::ensure!(
                handled <= expected,
                "the shadow dealt with {handled} responses ({}), more than the {expected} answered 201",
                now.describe()
            );
            if handled == expected {
                return Ok(now);
            }
            last = Some(now);
        }
        if Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let (handled, last) = last.map_or((0, "not listed".to_owned()), |c| {
        (c.handled().saturating_sub(before.handled()), c.describe())
    });
    anyhow::bail!(
        "after a minute the shadow has scored or dropped {handled} of the {expected} responses answered 201 ({last}; before the load: {})",
        before.describe()
    )
}
