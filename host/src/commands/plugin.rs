//! `outcomes plugin ...`: the plugin author's and operator's tools. `test`
//! runs a module under production limits against fixtures and reports what
//! each call used; `list` loads the plugin directory as the service would
//! and says what serves and what is refused; `new` scaffolds a crate;
//! `fixtures` fills in fixtures' inputs (`fixtures.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use clap::Subcommand;
use plugin_sdk::testing::{self, Fixture};

use crate::config::Config;
use crate::metrics::Metrics;
use crate::plugins::{PluginSettings, Plugins, profile, selftest};

#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Run a module under the production limits against golden fixtures
    /// and print the contract version it was built against (older ones
    /// get the input of their version) and, per fixture: pass or fail with a JSON diff, fuel used vs
    /// budget, peak memory vs cap, input and output size vs caps, wall time
    /// and the plugin's log lines. Exits non-zero when any fixture fails.
    Test {
        /// The .wasm module
        module: PathBuf,
        /// Fixture files or folders [default: fixtures/ beside the module]
        fixtures: Vec<PathBuf>,
        /// Also profile the module on the fixtures (each called again and
        /// again for a moment, sampled by wasmtime's guest profiler) and
        /// write the profile to FILE, in the Firefox profiler's format:
        /// open it at https://profiler.firefox.com to see which functions
        /// the fuel goes to
        #[arg(long, value_name = "FILE")]
        profile: Option<PathBuf>,
    },
    /// Load every plugin folder as the service does (validate, compile,
    /// self-test) and list what would serve and what is refused, then the
    /// candidate versions in the database (REFUSED: a row whose seal does
    /// not check under the secrets key, or a module plugin_allow does not
    /// list; hosts use neither). Exits non-zero when any module is refused.
    /// A running service shows its own state at GET /api/v1/plugins.
    List,
    /// Fill in each scorer fixture's input from the questionnaire
    /// definition: authors write `input.answers` (as a client POSTs them;
    /// flags and textvars if the case needs them) and the expected output
    /// by hand; this adds the questionnaire part, the option values and
    /// the flags exactly as the service sends them. Rewrites
    /// DIR/fixtures/*.json.
    Fixtures {
        /// The scorer's folder, holding questionnaire.toml and fixtures/
        dir: PathBuf,
        /// Change nothing; exit non-zero when a fixture is not filled in
        /// or out of date with the definition
        #[arg(long)]
        check: bool,
    },
    /// Scaffold a plugin crate with one fixture (a scorer also with a
    /// two-question definition to start from). With --out, a crate that
    /// builds on its own anywhere: its own Cargo.toml, wasm build settings
    /// and README, and plugin-sdk as a path dependency (inside a checkout
    /// of this repository, or --sdk-path) or else a git dependency
    /// (--sdk-git). Without --out, a crate of this repository's workspace:
    /// questionnaires/NAME/ or calculators/NAME/ under --root.
    New {
        /// scorer or calculator
        #[arg(value_parser = ["scorer", "calculator"])]
        kind: String,
        /// Plugin name: lower-case letters, digits and _, starting with a letter
        name: String,
        /// Repository root to create it in [default: .]
        #[arg(long, default_value = ".", conflicts_with = "out")]
        root: PathBuf,
        /// Write a standalone crate into this folder (made; refused when
        /// it exists and is not empty)
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// The plugin-sdk folder to depend on by path [default: the
        /// plugin-sdk of the checkout of this repository the current
        /// folder is in, if it is in one]
        #[arg(long, value_name = "DIR", requires = "out", conflicts_with = "sdk_git")]
        sdk_path: Option<PathBuf>,
        /// The git repository to take plugin-sdk from when there is no
        /// path [default: a placeholder to replace, named in the README]
        #[arg(long, value_name = "URL", requires = "out")]
        sdk_git: Option<String>,
    },
    // (#21 verify)
    /// Install a new version of a scorer as a candidate: refused unless
    /// plugin_allow (when set) lists its SHA-256, checked and self-tested
    /// with the fixtures/ beside it, kept in the database sealed with the
    /// secrets key (run it as the service's user, with its settings), and
    /// from then on it scores every response the serving version scores, in
    /// the background on every host of the database, without touching
    /// stored outcomes; responses it scores otherwise are recorded with
    /// both outcomes. Replaces an earlier candidate of that scorer. Hosts
    /// use no candidate row without a valid seal, nor one whose module
    /// their own plugin_allow does not list.
    Candidate {
        /// The scorer's name
        name: String,
        /// The candidate .wasm module
        module: PathBuf,
    },
    /// Let the candidate of a scorer serve in place of the version it was
    /// tried against, on every host of the database within seconds.
    /// Refused, listing them, while it has recorded differences; refused
    /// when its row is not sealed with the secrets key (not installed by
    /// `outcomes plugin candidate`) or plugin_allow does not list it.
    Promote {
        /// The scorer's name
        name: String,
        /// Promote although it scored some responses otherwise
        #[arg(long)]
        accept_differences: bool,
    },
    /// Drop the candidate of a scorer and its recorded differences; a
    /// promoted one stops serving, and the plugin folder's version serves
    /// again.
    Discard {
        /// The scorer's name
        name: String,
    },
}

impl PluginCommand {
    /// Whether the command works on the database (candidates) rather than
    /// files alone.
    pub fn uses_database(&self) -> bool {
        matches!(
            self,
            PluginCommand::Candidate { .. }
                | PluginCommand::Promote { .. }
                | PluginCommand::Discard { .. }
        )
    }
}

/// Runs a plugin command that works on the database; `Ok(false)` means
/// "done, but exit non-zero".
pub async fn run_with_store(
    command: PluginCommand,
    store: &crate::store::Store,
    config: &Config,
) -> anyhow::Result<bool> {
    use super::candidate;
    match command {
        PluginCommand::Candidate { name, module } => {
            candidate::install(store, config, &name, &module).await
        }
        PluginCommand::Promote {
            name,
            accept_differences,
        } => candidate::promote(store, config, &name, accept_differences).await,
        PluginCommand::Discard { name } => candidate::discard(store, &name).await,
        other => tokio::task::block_in_place(|| run(other, config)),
    }
}

/// Runs a plugin command; `Ok(false)` means "done, but exit non-zero".
pub fn run(command: PluginCommand, config: &Config) -> anyhow::Result<bool> {
    match command {
        PluginCommand::Test {
            module,
            fixtures,
            profile,
        } => test(config, &module, &fixtures, profile.as_deref()),
        PluginCommand::List => list(config),
        PluginCommand::Fixtures { dir, check } => fixtures(&dir, check),
        PluginCommand::New {
            kind,
            name,
            root,
            out: None,
            ..
        } => {
            super::scaffold::create(&root, &kind, &name)?;
            Ok(true)
        }
        PluginCommand::New {
            kind,
            name,
            out: Some(out),
            sdk_path,
            sdk_git,
            ..
        } => {
            let sdk = super::standalone::Sdk::choose(sdk_path, sdk_git)?;
            super::standalone::create(&out, &kind, &name, &sdk)?;
            Ok(true)
        }
        PluginCommand::Candidate { .. }
        | PluginCommand::Promote { .. }
        | PluginCommand::Discard { .. } => {
            anyhow::bail!("this plugin command works on the database: see run_with_store")
        }
    }
}

#[allow(clippy::print_stdout)]
fn fixtures(dir: &Path, check: bool) -> anyhow::Result<bool> {
    let filled = super::fixtures::fill_dir(dir, check)?;
    let stale = filled.iter().filter(|f| f.changed).count();
    for f in &filled {
        let state = match (f.changed, check) {
            (false, _) => "up to date",
            (true, false) => "filled in",
            (true, true) => "OUT OF DATE",
        };
        println!("{state:<12} {}", f.path.display());
    }
    if check && stale > 0 {
        println!(
            "{stale} fixture(s) out of date: run `outcomes plugin fixtures {}`",
            dir.display()
        );
    }
    Ok(!(check && stale > 0))
}

/// What `plugin test` adds to the contract version a module declares: an
/// older one still serves, with the input of its time.
fn contract_note(contract: u32) -> String {
    use std::cmp::Ordering;
    match contract.cmp(&plugin_sdk::CONTRACT_VERSION) {
        Ordering::Equal => String::new(),
        Ordering::Less => format!(
            " of {}: built against an older plugin-sdk; it gets the input of contract \
             {contract} ({}); rebuild with the current plugin-sdk to get them",
            plugin_sdk::CONTRACT_VERSION,
            if contract < 2 {
                "no typed answers, no enabled questions, no episode thresholds"
            } else {
                "no episode thresholds"
            }
        ),
        Ordering::Greater => format!(
            " of {}: newer than this service knows; it gets the input of contract {}",
            plugin_sdk::CONTRACT_VERSION,
            plugin_sdk::CONTRACT_VERSION
        ),
    }
}

fn runtime(config: &Config) -> anyhow::Result<Plugins> {
    let settings = PluginSettings {
        cache_dir: None,
        ..config.plugins.clone()
    };
    Plugins::new(settings, Arc::new(Metrics::default())).context("starting the plugin runtime")
}

#[allow(clippy::print_stdout)]
fn test(
    config: &Config,
    module: &Path,
    fixture_args: &[PathBuf],
    profile_to: Option<&Path>,
) -> anyhow::Result<bool> {
    let bytes = std::fs::read(module).with_context(|| format!("reading {}", module.display()))?;
    let plugins = runtime(config)?;
    let plugin = match plugins.load_module(&bytes) {
        Ok(p) => p,
        Err(e) => {
            println!("REFUSED  {}: {e}", module.display());
            return Ok(false);
        }
    };
    let l = plugin.limits;
    println!(
        "{} {} ({}, contract {}{}), sha256 {}, limits: fuel {} + {} per input byte, memory {}, input {}, output {}, deadline {} ms",
        plugin.name(),
        plugin.version(),
        plugin.kind(),
        plugin.manifest.contract,
        contract_note(plugin.manifest.contract),
        plugin.sha256,
        l.fuel,
        l.fuel_per_input_byte,
        bytes_text(l.memory_bytes),
        bytes_text(l.input_bytes),
        bytes_text(l.output_bytes),
        l.deadline_ms
    );
    let fixtures = load_fixtures(module, fixture_args)?;
    anyhow::ensure!(
        !fixtures.is_empty(),
        "no fixtures found; give fixture files or put them in fixtures/ beside the module"
    );
    let mut failed = 0;
    let mut inputs = Vec::new();
    for fixture in fixtures {
        let run = selftest::run(&plugin, fixture);
        inputs.push(run.input.clone());
        let u = &run.call.usage;
        let verdict = if run.failure.is_none() {
            "PASS"
        } else {
            "FAIL"
        };
        println!(
            "{verdict}  {}  {}",
            run.fixture.name, run.fixture.description
        );
        println!(
            "      fuel {} / {} ({:.1}%)  memory {} / {}  input {} / {}  output {} / {}  wall {:.3} ms",
            u.fuel_used,
            u.fuel_budget,
            100.0 * u.fuel_used as f64 / u.fuel_budget.max(1) as f64,
            bytes_text(u.peak_memory),
            bytes_text(l.memory_bytes),
            bytes_text(u.input_bytes),
            bytes_text(l.input_bytes),
            bytes_text(u.output_bytes),
            bytes_text(l.output_bytes),
            u.wall.as_secs_f64() * 1000.0
        );
        for line in &run.call.logs {
            println!("      log [{}] {}", line.level, line.message);
        }
        if let Some(why) = run.failure {
            failed += 1;
            for line in why.lines() {
                println!("      {line}");
            }
        }
    }
    println!(
        "{}",
        if failed == 0 {
            "all fixtures pass".to_owned()
        } else {
            format!("{failed} fixture(s) failed")
        }
    );
    if let Some(path) = profile_to {
        let file =
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let mut out = std::io::BufWriter::new(file);
        let profiled = profile::profile(&plugin, &inputs, &mut out)?;
        std::io::Write::flush(&mut out).with_context(|| format!("writing {}", path.display()))?;
        println!(
            "profile: {} calls, {} samples, written to {} (open it at https://profiler.firefox.com)",
            profiled.calls,
            profiled.samples,
            path.display()
        );
    }
    Ok(failed == 0)
}

fn load_fixtures(module: &Path, args: &[PathBuf]) -> anyhow::Result<Vec<Fixture>> {
    let default = [module.parent().unwrap_or(Path::new(".")).join("fixtures")];
    let sources = if args.is_empty() { &default[..] } else { args };
    let mut fixtures = Vec::new();
    for source in sources {
        if source.is_dir() {
            fixtures.extend(testing::load_dir(source).map_err(|e| anyhow::anyhow!("{e}"))?);
        } else {
            fixtures.push(Fixture::load(source).map_err(|e| anyhow::anyhow!("{e}"))?);
        }
    }
    Ok(fixtures)
}

#[allow(clippy::print_stdout)]
fn list(config: &Config) -> anyhow::Result<bool> {
    let plugins = runtime(config)?;
    plugins.reload(chrono::Utc::now());
    let registry = plugins.registry();
    let statuses = registry.statuses();
    if statuses.is_empty() {
        println!("no plugin folders in {}", plugins.dir().display());
    }
    let mut ok = true;
    for s in statuses {
        match &s.serving {
            Some(v) => println!(
                "{:<10} {:<20} {} {} {} sha256 {} fixtures passed {}",
                s.state,
                s.folder,
                v.kind,
                v.name,
                v.version,
                &v.sha256[..16],
                v.fixtures_passed
            ),
            None => println!("{:<10} {:<20}", s.state, s.folder),
        }
        if let Some(e) = &s.error {
            ok = false;
            println!("           refused: {e}");
        }
    }
    Ok(ok)
}

fn bytes_text(n: usize) -> String {
    const KIB: f64 = 1024.0;
    let f = n as f64;
    if f >= KIB * KIB {
        format!("{:.1} MiB", f / KIB / KIB)
    } else if f >= KIB {
        format!("{:.1} KiB", f / KIB)
    } else {
        format!("{n} B")
    }
}
