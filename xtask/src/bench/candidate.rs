//! `--shadow-candidate`: before the POST load, a candidate version of the
//! PHQ-9 scorer is installed with `outcomes plugin candidate`, as an
//! operator would, so every scored POST is scored again in the shadow
//! (docs/operations.md#verifying-outcomes-and-trying-a-new-scorer). The
//! candidate is the built module with a custom section appended: the same
//! code under another hash, so it finds no difference and the run measures
//! what shadow scoring itself costs.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::load;
use super::server::{Fresh, Server};

/// Installs the candidate and waits until the server shadows with it.
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
    // Hosts read candidates every 2 s.
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if counts(server)
            .await
            .is_some_and(|c| c.contains("shadowing"))
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    anyhow::bail!("the server did not take up the candidate within 30 s")
}

/// The PHQ-9 candidate's state and counts at GET /api/v1/plugins.
pub async fn counts(server: &Server) -> Option<String> {
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
    c.is_object().then(|| {
        format!(
            "{} {}: {} calls, {} differences, {} dropped",
            c["state"].as_str().unwrap_or("?"),
            c["version"].as_str().unwrap_or("?"),
            c["calls"],
            c["differences"],
            c["dropped"]
        )
    })
}
