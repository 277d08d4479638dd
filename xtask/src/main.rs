//! Project tasks, run as `cargo xtask <task>` (an alias in .cargo/config.toml):
//!
//! - `serve`: build the plugins, then start the service on embedded SQLite
//!   with the bundled questionnaires, protocols, scorers and calculators.
//! - `test`: build the plugins, then run every test, on SQLite and on
//!   PostgreSQL, the fill-out pages also in headless Chromium.
//! - `plugins`: build every plugin crate to wasm into `plugins/` (a running
//!   service hot-reloads them).
//! - `dist`: assemble the installable folder (`deploy/build-dist.sh`, the
//!   container image's build steps), then start it and probe it.
//! - `bench`: the HTTP benchmark (POST throughput, list latency at 1k and
//!   1M rows), on SQLite and on PostgreSQL.
//! - `bench-hosts`: POST throughput through HAProxy with one and with two
//!   hosts on one PostgreSQL database.
//!
//! Each task checks what it needs first and says how to fix what is missing.

mod bench;
mod dist;
mod plugins;
mod prerequisites;

use std::process::{Command, ExitCode};

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "cargo xtask", about = "Project tasks for the outcomes service")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Debug, Subcommand)]
enum Task {
    /// Build the plugins and start the service (SQLite under ./data,
    /// http://127.0.0.1:8080).
    /// Arguments after `--` go to `outcomes serve`, e.g. `-- --listen 0.0.0.0:8080`.
    Serve {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Build the plugins and run all tests of the workspace; every storage
    /// test runs on SQLite and PostgreSQL, the fill-out pages also in
    /// headless Chromium (installed on Debian when missing, with axe-core
    /// from npm), the AssemblyScript scorer built with its compiler from
    /// npm, the OpenAPI document checked against the service by
    /// Schemathesis from PyPI. Arguments after `--` go to `cargo test`.
    Test {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Build every plugin crate to wasm (one cargo invocation) into
    /// plugins/<name>/ with its fixtures; a running service reloads them.
    Plugins,
    /// Benchmark the release build over HTTP: POST throughput with concurrent
    /// clients, and list latency with 1k and 1M responses in the database.
    Bench(bench::BenchArgs),
    /// Benchmark the release build on PostgreSQL: POST throughput through
    /// HAProxy with one and with two `outcomes serve` processes on one
    /// database (and one host without the balancer, for reference).
    BenchHosts(bench::hosts::HostsArgs),
    /// Assemble the installable folder as the container image does
    /// (deploy/build-dist.sh: binary, plugins, definitions, entrypoint,
    /// systemd unit), then check it: `systemd-analyze verify` of the unit,
    /// and two starts through the entrypoint on a fresh data folder
    /// (migrate, serve, /health, plugins scoring, the health check script,
    /// SIGTERM).
    Dist(dist::DistArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.task {
        Task::Serve { args } => serve(&args),
        Task::Test { args } => test(&args),
        Task::Plugins => {
            build_plugins().map(|dir| eprintln!("plugins installed in {}", dir.display()))
        }
        Task::Bench(args) => bench::run(args),
        Task::BenchHosts(args) => bench::hosts::run(args),
        Task::Dist(args) => dist::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn build_plugins() -> anyhow::Result<std::path::PathBuf> {
    prerequisites::wasm_target()?;
    plugins::build(&prerequisites::workspace_root())
}

fn serve(args: &[String]) -> anyhow::Result<()> {
    build_plugins()?;
    let root = prerequisites::workspace_root();
    run(Command::new(cargo())
        .current_dir(&root)
        .args([
            "run",
            "--package",
            "host",
            "--bin",
            "outcomes",
            "--",
            "serve",
        ])
        .args(args))
}

fn test(args: &[String]) -> anyhow::Result<()> {
    build_plugins()?;
    prerequisites::postgres()?;
    prerequisites::browser()?;
    prerequisites::promtool()?;
    prerequisites::axe()?;
    prerequisites::haproxy()?;
    prerequisites::assemblyscript()?;
    let schemathesis = prerequisites::schemathesis()?;
    let root = prerequisites::workspace_root();
    run(Command::new(cargo())
        .current_dir(&root)
        .env("OUTCOMES_TEST_SCHEMATHESIS", schemathesis)
        .args(["test", "--workspace"])
        .args(args))
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

fn run(cmd: &mut Command) -> anyhow::Result<()> {
    let status = cmd
        .status()
        .map_err(|e| anyhow::anyhow!("cannot run {:?}: {e}", cmd.get_program()))?;
    anyhow::ensure!(
        status.success(),
        "{:?} failed ({status})",
        cmd.get_program()
    );
    Ok(())
}
