//! `cargo xtask bench-hosts`: POST throughput through HAProxy with one and
//! with two `outcomes serve` processes on one PostgreSQL database
//! (docs/operations.md, "Several hosts on one PostgreSQL"), each
//! configuration on a fresh database, the same load as `cargo xtask bench`
//! (`load::post_load`: closed loop, keep-alive connections, unique
//! external ids). Also one host without the balancer, to show what the
//! balancer costs. HAProxy's configuration is the tests' (Debian's
//! `haproxy` must be installed).

// The report is the task's output.
#![allow(clippy::print_stdout)]

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use clap::Args;

use super::load::{self, Target, median};
use super::server::{Backend, Fresh, binary};
use crate::prerequisites;

#[derive(Debug, Clone, Args)]
pub struct HostsArgs {
    /// Measured seconds of POST load per run (after the warm-up)
    #[arg(long, default_value_t = 10)]
    seconds: u64,

    /// Warm-up seconds before each run is measured
    #[arg(long, default_value_t = 2)]
    warmup: u64,

    /// Concurrent keep-alive connections posting responses
    #[arg(long, default_value_t = 64)]
    clients: usize,

    /// Dossiers the posted responses are spread over
    #[arg(long, default_value_t = 1000)]
    dossiers: usize,

    /// Runs per configuration; the median is reported
    #[arg(long, default_value_t = 1)]
    rounds: usize,

    /// PostgreSQL server to create the benchmark databases on
    #[arg(
        long,
        env = "OUTCOMES_TEST_POSTGRES_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/test"
    )]
    postgres_url: String,

    /// Use target/release/outcomes as it is instead of building it first
    #[arg(long)]
    no_build: bool,

    /// Benchmark this `outcomes` binary instead of building one
    #[arg(long, value_name = "FILE", conflicts_with = "no_build")]
    binary: Option<PathBuf>,
}

/// How requests reach the hosts.
#[derive(Debug, Clone, Copy)]
struct Setup {
    hosts: usize,
    balanced: bool,
}

impl Setup {
    fn name(self) -> String {
        match (self.hosts, self.balanced) {
            (1, false) => "1 host, direct".to_owned(),
            (1, true) => "1 host behind HAProxy".to_owned(),
            (n, _) => format!("{n} hosts behind HAProxy"),
        }
    }
}

pub fn run(args: HostsArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.clients > 0 && args.seconds > 0 && args.rounds > 0 && args.dossiers > 0,
        "--clients, --seconds, --rounds and --dossiers must be positive"
    );
    prerequisites::postgres_at(&args.postgres_url)?;
    prerequisites::haproxy()?;
    let root = prerequisites::workspace_root();
    let binary = binary(&root, args.binary.as_deref(), args.no_build)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let setups = [
        Setup {
            hosts: 1,
            balanced: false,
        },
        Setup {
            hosts: 1,
            balanced: true,
        },
        Setup {
            hosts: 2,
            balanced: true,
        },
    ];
    let mut figures = vec![Vec::new(); setups.len()];
    for round in 0..args.rounds {
        for (n, setup) in setups.iter().enumerate() {
            println!(
                "== round {} of {}: {} ==",
                round + 1,
                args.rounds,
                setup.name()
            );
            let fresh = runtime.block_on(Fresh::create(Backend::Postgres, &args.postgres_url))?;
            let result = runtime.block_on(measure(*setup, &args, &binary, &root, &fresh));
            runtime.block_on(fresh.remove());
            figures[n].push(result?);
        }
    }
    println!();
    println!(
        "Summary: POST/s on PostgreSQL, {} clients, {} s per run, median of {} ({} cores, load generator on the same machine)",
        args.clients,
        args.seconds,
        args.rounds,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    for (setup, runs) in setups.iter().zip(&figures) {
        let list: Vec<String> = runs.iter().map(|f| format!("{f:.0}")).collect();
        println!(
            "  {:<24} {:>8.0}   (runs {})",
            setup.name(),
            median(runs),
            list.join(", ")
        );
    }
    Ok(())
}

/// One run: the hosts (and the balancer) on `fresh`, the load, the check
/// that every 201 is stored.
async fn measure(
    setup: Setup,
    args: &HostsArgs,
    binary: &Path,
    root: &Path,
    fresh: &Fresh,
) -> anyhow::Result<f64> {
    let dir = tempfile::Builder::new()
        .prefix("outcomes-bench-hosts-")
        .tempdir()?;
    let key_file = dir.path().join("secrets.key");
    let mut hosts = Vec::new();
    for n in 0..setup.hosts {
        hosts.push(Process::serve(binary, root, &fresh.url(), dir.path(), n, &key_file).await?);
    }
    let authorization = create_token(binary, &fresh.url(), &key_file)?;
    let balancer = if setup.balanced {
        let ports: Vec<u16> = hosts.iter().map(|h| h.addr.port()).collect();
        Some(Process::haproxy(dir.path(), &ports).await?)
    } else {
        None
    };
    let addr = balancer.as_ref().map_or(hosts[0].addr, |b| b.addr);
    let target = Target {
        addr,
        authorization,
    };
    // The hosts read the new token within 2 s.
    wait_until(
        &target,
        "/api/v1/dossiers/probe/responses",
        "the API with the token",
    )
    .await?;
    let report = load::post_load(
        &target,
        hosts[0].child.id(),
        args.clients,
        args.dossiers,
        Duration::from_secs(args.warmup),
        Duration::from_secs(args.seconds),
        // Closed loop, as the single-host rounds of `bench`; the report says so.
        load::Pace::Closed,
    )
    .await?;
    println!("{}", report.describe());
    drop(balancer);
    drop(hosts);
    let stored = super::seed::count_responses(&fresh.url()).await?;
    anyhow::ensure!(
        stored == report.ok_total,
        "answered 201 {} times but the database holds {stored} responses",
        report.ok_total
    );
    Ok(report.throughput())
}

/// `outcomes token create` with every right, with the hosts' secrets key;
/// the `Authorization` header.
fn create_token(binary: &Path, url: &str, key_file: &Path) -> anyhow::Result<String> {
    let out = Command::new(binary)
        .args([
            "token",
            "create",
            "--key",
            "bench-hosts",
            "--rights",
            "all",
            "--json",
        ])
        .arg("--database-url")
        .arg(url)
        .arg("--secrets-key-file")
        .arg(key_file)
        .output()
        .context("running outcomes token create")?;
    anyhow::ensure!(
        out.status.success(),
        "outcomes token create failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let created: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let secret = created["consumer_secret"]
        .as_str()
        .context("no consumer_secret")?;
    Ok(format!(
        "Basic {}",
        STANDARD.encode(format!("bench-hosts:{secret}"))
    ))
}

/// Polls `path` until it answers 200, for at most 60 s.
async fn wait_until(target: &Target, path: &str, what: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if matches!(load::get_once(target, path).await, Ok((200, _))) {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{what} did not answer 200 within 60 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A child process (a host or HAProxy), killed when dropped.
struct Process {
    child: Child,
    addr: SocketAddr,
}

impl Process {
    async fn serve(
        binary: &Path,
        root: &Path,
        url: &str,
        dir: &Path,
        n: usize,
        key_file: &Path,
    ) -> anyhow::Result<Process> {
        let addr = free_addr()?;
        let data = dir.join(format!("host-{n}"));
        let log = std::fs::File::create(dir.join(format!("host-{n}.log")))?;
        let mut command = Command::new(binary);
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("OUTCOMES_") || key == "RUST_LOG" {
                command.env_remove(key);
            }
        }
        let child = command
            .current_dir(root)
            .arg("serve")
            .arg("--listen")
            .arg(addr.to_string())
            // Each host its own port for /metrics (a binary from before
            // the default address takes this form too).
            .arg("--metrics-listen")
            .arg("127.0.0.1:0")
            .arg("--data-dir")
            .arg(&data)
            .arg("--database-url")
            .arg(url)
            .arg("--secrets-key-file")
            .arg(key_file)
            .arg("--questionnaires-dir")
            .arg(root.join("questionnaires"))
            .arg("--protocols-dir")
            .arg(root.join("protocols"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let process = Process { child, addr };
        let target = Target {
            addr,
            authorization: String::new(),
        };
        wait_until(&target, "/health", &format!("host {n}")).await?;
        Ok(process)
    }

    /// HAProxy with the configuration of `tests/src/processes.rs`.
    async fn haproxy(dir: &Path, ports: &[u16]) -> anyhow::Result<Process> {
        let addr = free_addr()?;
        let config = dir.join("haproxy.cfg");
        std::fs::write(&config, tests_config(addr.port(), ports))?;
        let program = std::env::var("OUTCOMES_TEST_HAPROXY").unwrap_or_else(|_| "haproxy".into());
        let child = Command::new(program)
            .arg("-db")
            .arg("-f")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting haproxy")?;
        let process = Process { child, addr };
        let target = Target {
            addr,
            authorization: String::new(),
        };
        wait_until(&target, "/health", "HAProxy").await?;
        Ok(process)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        super::server::stop(&mut self.child);
    }
}

fn free_addr() -> anyhow::Result<SocketAddr> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?)
}

/// The HAProxy configuration the tests run (`tests/haproxy.cfg`), listening
/// on `port`, with one server line per backend.
fn tests_config(port: u16, backends: &[u16]) -> String {
    let mut text = include_str!("../../../tests/haproxy.cfg").replace("@PORT@", &port.to_string());
    for (n, backend) in backends.iter().enumerate() {
        text.push_str(&format!("    server host{n} 127.0.0.1:{backend}\n"));
    }
    text
}
