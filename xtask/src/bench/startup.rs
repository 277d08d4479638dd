//! `--startup`: the server's start with 20 plugin folders, and its idle
//! memory.
//!
//! The 20 folders are the built plugins of `plugins/` dealt out round
//! robin, each copy made distinct by a custom section appended to its
//! module (it behaves the same but hashes differently, so each is compiled
//! and cached on its own), with its golden fixtures, which the host runs
//! as self-tests. A copy whose name another folder serves already is
//! refused after loading, as in `host/benches/plugins.rs`.
//!
//! The server starts once to fill the compiled-module cache (in its data
//! folder), is stopped, and is started `runs` times more on the same
//! database and cache: cold start is the time from spawning the process
//! until /health answers 200 (the plugins are loaded before the server
//! listens, see `App::build` in host/src/lib.rs). Idle memory is the
//! resident set (VmRSS, /proc) of the last start after two idle seconds.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;

use super::server::{Fresh, Server};
use super::{Backend, BenchArgs, median};

/// Plugin folders the goal names.
const FOLDERS: usize = 20;
/// Goals of #20.
const GOAL_START_S: f64 = 1.0;
const GOAL_RSS_MB: f64 = 100.0;

#[derive(Debug)]
pub struct StartupReport {
    /// Seconds from spawn to /health 200, with the cache filled.
    pub warm: Vec<f64>,
    /// The first start, which compiles every module.
    pub first: f64,
    /// Resident memory when idle, in MB.
    pub rss_mb: f64,
    pub plugins: String,
}

impl StartupReport {
    pub fn summary(&self) -> Vec<String> {
        let warm = median(&self.warm);
        vec![
            format!("plugins: {}", self.plugins),
            format!(
                "start with the compiled cache, spawn to /health 200: median {:.3} s (runs {}); the first start (compiling) {:.2} s",
                warm,
                self.warm
                    .iter()
                    .map(|s| format!("{s:.3}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                self.first
            ),
            format!("idle resident memory: {:.1} MB", self.rss_mb),
            format!(
                "Goal: cold start <= {GOAL_START_S} s: {}; idle memory <= {GOAL_RSS_MB} MB: {}",
                if warm <= GOAL_START_S {
                    "met"
                } else {
                    "NOT met"
                },
                if self.rss_mb <= GOAL_RSS_MB {
                    "met"
                } else {
                    "NOT met"
                }
            ),
        ]
    }
}

pub async fn startup_phase(
    _backend: Backend,
    args: &BenchArgs,
    binary: &Path,
    root: &Path,
    fresh: &Fresh,
) -> anyhow::Result<StartupReport> {
    let folder = fresh.scratch("plugins-20");
    twenty_plugins(&root.join("plugins"), &folder)?;
    let mut starts = 0;
    let mut time = async || -> anyhow::Result<(f64, Server)> {
        starts += 1;
        fresh.set_token_key(&format!("bench-start-{starts}"));
        let started = Instant::now();
        let server = Server::start_with_plugins(binary, root, fresh, &folder).await?;
        // Server::start also waits for the token it makes; the start is
        // until /health answered, which it logs.
        Ok((server.health_after(started), server))
    };
    let (first, server) = time().await?;
    server.stop();
    let mut warm = Vec::new();
    let mut last = None;
    for _ in 0..args.startup_runs {
        let (seconds, server) = time().await?;
        warm.push(seconds);
        if let Some(previous) = last.replace(server) {
            previous.stop();
        }
    }
    let server = last.context("--startup-runs must be positive")?;
    let plugins = server.plugins().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss_mb = resident_mb(server.pid()).context("reading the server's VmRSS")?;
    server.stop();
    let report = StartupReport {
        warm,
        first,
        rss_mb,
        plugins,
    };
    for line in report.summary() {
        println!("Start-up: {line}");
    }
    Ok(report)
}

/// VmRSS of a process, in MB (10^6 bytes).
fn resident_mb(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024.0 / 1e6)
}

/// Fills `into` with [`FOLDERS`] plugin folders made from those in `built`.
fn twenty_plugins(built: &Path, into: &Path) -> anyhow::Result<()> {
    let mut sources: Vec<PathBuf> = std::fs::read_dir(built)
        .with_context(|| format!("reading {} (run `cargo xtask plugins`)", built.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    sources.sort();
    anyhow::ensure!(
        !sources.is_empty(),
        "no built plugins in {}",
        built.display()
    );
    for n in 0..FOLDERS {
        let source = &sources[n % sources.len()];
        let name = source
            .file_name()
            .and_then(|n| n.to_str())
            .context("a plugin folder without a name")?;
        let folder = into.join(format!("{name}_{n}"));
        std::fs::create_dir_all(&folder)?;
        for entry in std::fs::read_dir(source)?.flatten() {
            let path = entry.path();
            let target = folder.join(entry.file_name());
            if path.extension().is_some_and(|x| x == "wasm") {
                let bytes = std::fs::read(&path)?;
                let copy = format!("copy {n}");
                std::fs::write(
                    &target,
                    with_custom_section(&bytes, "bench", copy.as_bytes()),
                )?;
            } else if path.is_dir() {
                copy_dir(&path, &target)?;
            } else {
                std::fs::copy(&path, &target)?;
            }
        }
    }
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)?.flatten() {
        let path = entry.path();
        let target = to.join(entry.file_name());
        if path.is_dir() {
            copy_dir(&path, &target)?;
        } else {
            std::fs::copy(&path, &target)?;
        }
    }
    Ok(())
}

/// `bytes` with a custom section appended (WebAssembly core spec 5.5.3:
/// section id 0, its size, the name, the payload).
pub(super) fn with_custom_section(bytes: &[u8], name: &str, payload: &[u8]) -> Vec<u8> {
    let mut body = leb128(name.len() as u64);
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(payload);
    let mut out = bytes.to_vec();
    out.push(0x00);
    out.extend(leb128(body.len() as u64));
    out.extend(body);
    out
}

/// Unsigned LEB128.
fn leb128(mut value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leb128_writes_seven_bits_a_byte() {
        assert_eq!(leb128(5), vec![5]);
        assert_eq!(leb128(300), vec![0xac, 0x02]);
    }
}
