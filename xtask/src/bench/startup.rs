//! `--startup`: the server's start with 20 plugin folders, and its idle
//! memory.
//!
//! The 20 folders are the built plugins of `plugins/` dealt out round
//! robin, with their golden fixtures, which the host runs as self-tests.
//! Two folders serving one name are both refused
//! (host/src/plugins/registry.rs), so the folders after the built ones
//! hold renamed copies: the SDK's manifest takes the crate's name, a
//! string in the module's data section, and a copy has it replaced there
//! by another of the same length, which keeps the module valid. Only
//! plugins whose name is in their data exactly once are copied (rustc
//! writes a name of four bytes into the code, as a constant; a name that
//! begins an output key cannot be told apart from it). A copy
//! is also made distinct by a custom section appended to its module, so
//! each is compiled and cached on its own. The summary says how many
//! folders serve.
//!
//! The server starts once to fill the compiled-module cache (in its data
//! folder), is stopped, and is started `runs` times more on the same
//! database and cache: cold start is the time from spawning the process
//! until /health answers 200 (the plugins are loaded before the server
//! listens, see `App::build` in host/src/lib.rs). Idle memory is the
//! resident set (VmRSS, /proc) of the last start after two idle seconds.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;

use host::plugins::sections::{DATA, sections, with_custom_section};

use super::args::BenchArgs;
use super::load::median;
use super::server::{Backend, Fresh, Server};

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
    let mut sources = Vec::new();
    for entry in std::fs::read_dir(built)
        .with_context(|| format!("reading {} (run `cargo xtask plugins`)", built.display()))?
        .flatten()
    {
        let folder = entry.path();
        let Some(name) = folder.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let module = folder.join(format!("{name}.wasm"));
        if folder.is_dir() && module.is_file() {
            let renamable = name_in_data(&std::fs::read(&module)?, name).is_ok();
            sources.push((folder.clone(), name.to_owned(), renamable));
        }
    }
    sources.sort();
    anyhow::ensure!(
        !sources.is_empty(),
        "no built plugins in {}",
        built.display()
    );
    // The copies come from the plugins whose name is in their data once:
    // rustc writes a name of four bytes into the code, as a constant.
    let renamable: Vec<_> = sources.iter().filter(|s| s.2).collect();
    anyhow::ensure!(
        sources.len() >= FOLDERS || !renamable.is_empty(),
        "no built plugin has its name in its data section to be copied under another"
    );
    for n in 0..FOLDERS {
        let (source, name, _) = match sources.get(n) {
            Some(original) => original,
            None => renamable[n % renamable.len()],
        };
        let folder = into.join(format!("{name}_{n}"));
        std::fs::create_dir_all(&folder)?;
        for entry in std::fs::read_dir(source)?.flatten() {
            let path = entry.path();
            let target = folder.join(entry.file_name());
            if path.extension().is_some_and(|x| x == "wasm") {
                let mut bytes = std::fs::read(&path)?;
                if n >= sources.len() {
                    rename_in_data(&mut bytes, name, &copy_name(name, n))?;
                }
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

/// The name of the `n`th copy of plugin `name`: as long as it, and another
/// plugin name (host/src/plugins/module.rs, `valid_name`): its last
/// character replaced by one that depends on `n`.
fn copy_name(name: &str, n: usize) -> String {
    const LAST: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut out = name.as_bytes().to_vec();
    let last = out.len() - 1;
    let mut pick = n % LAST.len();
    if LAST[pick] == out[last] {
        pick = (pick + 1) % LAST.len();
    }
    out[last] = LAST[pick];
    String::from_utf8(out).expect("ASCII")
}

/// Where `name` is in the data section of module `bytes`. Fails unless it
/// is there exactly once: where it is part of other strings too
/// (`reliable_change_threshold`, an output key), it cannot be told apart.
fn name_in_data(bytes: &[u8], name: &str) -> anyhow::Result<usize> {
    let data = sections(bytes)
        .find(|(id, _)| *id == DATA)
        .map(|(_, range)| range)
        .context("a module without a data section")?;
    let found: Vec<usize> = bytes[data.clone()]
        .windows(name.len())
        .enumerate()
        .filter(|(_, w)| *w == name.as_bytes())
        .map(|(at, _)| data.start + at)
        .collect();
    match found[..] {
        [at] => Ok(at),
        _ => anyhow::bail!(
            "the name {name} is {} times in the module's data, not once",
            found.len()
        ),
    }
}

/// Replaces `from` in the data section of module `bytes` by `to`, which
/// is as long (a data segment's length does not change); `from` must be
/// there once ([`name_in_data`]).
fn rename_in_data(bytes: &mut [u8], from: &str, to: &str) -> anyhow::Result<()> {
    anyhow::ensure!(from.len() == to.len(), "{to} is not as long as {from}");
    let at = name_in_data(bytes, from)?;
    bytes[at..at + to.len()].copy_from_slice(to.as_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use host::plugins::sections::PREAMBLE;

    use super::*;

    #[test]
    fn copies_get_other_names_of_the_same_length() {
        assert_eq!(copy_name("phq9", 11), "phql");
        assert_eq!(copy_name("gad7", 0), "gada");
        assert_eq!(copy_name("who5", 23), "whox");
        // Never the name it came from.
        assert_eq!(copy_name("k10", 26), "k11");
    }

    #[test]
    fn a_name_is_replaced_in_the_data_section_only() {
        // A custom section holding the name, a data section holding it
        // once.
        let mut module = with_custom_section(&PREAMBLE, "x", b"phq");
        module.extend([DATA, 8]);
        module.extend(b"_phq_ab_");
        rename_in_data(&mut module, "phq", "phz").expect("renames");
        assert_eq!(&module[10..15], &[1, b'x', b'p', b'h', b'q']);
        assert_eq!(&module[17..], b"_phz_ab_");
        // Missing, or there more than once.
        assert!(rename_in_data(&mut module, "abc", "abd").is_err());
        assert!(rename_in_data(&mut module, "_", "-").is_err());
    }
}
