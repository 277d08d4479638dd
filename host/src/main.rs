//! `outcomes`: the service binary. Parses the command line, reads the
//! configuration, starts logging and runs the chosen command. Holds no
//! service logic: start-up is `host::startup`.
//!
//! Allocates with mimalloc, and turns transparent huge pages off for the
//! process before the heap grows: with them its idle memory nearly doubled.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};
use host::clock::SystemClock;
use host::commands::backup::{BackupArgs, RestoreArgs};
use host::commands::import::ImportArgs;
use host::commands::plugin::PluginCommand;
use host::commands::report::ReportCommand;
use host::commands::rescore::RescoreArgs;
use host::commands::verify::VerifyArgs;
use host::commands::{self, AlarmCommand, RespondentCommand, TokenCommand};
use host::config::{
    AccessLogSettings, Config, FileSettings, ImportSettings, PluginToolSettings, RescoreSettings,
    Settings, StoreSettings, TokenSettings,
};
use host::startup::App;
use host::store::{Store, StoreOptions};
use host::telemetry;

/// mimalloc, not the system allocator: a request allocates and frees many
/// small JSON values, often on another thread than the one that made them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Routine outcome monitoring: questionnaire responses, outcomes and
/// protocols for electronic patient record systems.
///
/// Every setting can be given as a flag, as an OUTCOMES_* environment
/// variable, or in the TOML file named by --config (keys as the flag names
/// with _ for -); flags win over the environment, which wins over the file.
#[derive(Debug, Parser)]
#[command(name = "outcomes", version = host::build_info::long_version())]
struct Cli {
    /// TOML configuration file
    #[arg(long, env = "OUTCOMES_CONFIG", global = true, value_name = "FILE")]
    config: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

// `access-log verify` carries its own settings, so they can follow it on
// the command line; the enum is parsed once.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the REST API (applies migrations and loads definitions first).
    ///
    /// With no configuration: http://127.0.0.1:8080, SQLite under ./data,
    /// questionnaires from ./questionnaires and protocols from ./protocols.
    /// Stops gracefully on SIGINT or SIGTERM, finishing requests in flight.
    Serve {
        #[command(flatten)]
        settings: Settings,
    },
    /// Apply database migrations and exit; --check only reports them.
    ///
    /// `serve` applies pending migrations too; run this first when several
    /// hosts share one database (docs/operations.md#upgrades).
    Migrate {
        /// Apply nothing: print the database's migration level and the
        /// migrations this version would apply; exit 1 when there are any
        /// (or some were changed or failed), 0 when none
        #[arg(long)]
        check: bool,
        #[command(flatten)]
        settings: StoreSettings,
    },
    /// Copy the database to a file while the service serves and writes.
    ///
    /// SQLite: a consistent copy (one snapshot) in one file, mode 0600.
    /// PostgreSQL: a pg_dump archive in custom format, when pg_dump is
    /// installed; else it prints the command to run. The secrets key file is
    /// not in the copy: keep a copy of it apart (docs/operations.md#backup-and-restore).
    Backup {
        #[command(flatten)]
        args: BackupArgs,
        #[command(flatten)]
        settings: StoreSettings,
    },
    /// Put a copy made by `backup` in place of the configured database.
    ///
    /// The copy is checked first (SQLite's integrity check; its migration
    /// level: not newer than this version; older ones are migrated when the
    /// service starts). SQLite: refused while a service or another program
    /// has the database open, unless --force; the replaced file is kept as
    /// <name>.replaced-<time>. PostgreSQL: restores into an empty database
    /// with pg_restore; refused while other sessions are connected, unless
    /// --force.
    Restore {
        #[command(flatten)]
        args: RestoreArgs,
        #[command(flatten)]
        settings: StoreSettings,
    },
    /// Manage API tokens: create, list, revoke, register JWT keys.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
        #[command(flatten)]
        settings: TokenSettings,
    },
    /// Alarms: make the secret that signs those sent to alarm_webhook_url.
    Alarm {
        #[command(subcommand)]
        command: AlarmCommand,
        #[command(flatten)]
        settings: TokenSettings,
    },
    /// Respondents: revoke the links handed out for one.
    Respondent {
        #[command(subcommand)]
        command: RespondentCommand,
        #[command(flatten)]
        settings: StoreSettings,
    },
    /// Plugin tools: test a module against fixtures under production
    /// limits, list what the plugin directory would serve, scaffold a crate
    Plugin {
        #[command(subcommand)]
        command: PluginCommand,
        #[command(flatten)]
        settings: PluginToolSettings,
    },
    /// Recompute stored outcomes with the current plugins and report what
    /// changed (--exact: with the module versions that computed them)
    Rescore {
        #[command(flatten)]
        args: RescoreArgs,
        #[command(flatten)]
        settings: RescoreSettings,
    },
    /// Import responses from another system: an NDJSON file, one response
    /// a line (a POST body of /api/v1/dossiers/{dossier_id}/responses plus
    /// "dossier_id").
    ///
    /// Each line is checked, scored and stored as that POST would be, with
    /// its access-log row. A line whose external id its dossier already
    /// holds with the same questionnaire and answers is counted as
    /// existing and not stored again: after a crash or an interruption,
    /// run the same command again. Bad lines are printed with their line
    /// number and errors (the good ones are stored, unless --strict);
    /// progress goes to standard error. Exits non-zero when a line was
    /// refused or the import stopped (docs/operations.md#migrating-from-another-system).
    Import {
        #[command(flatten)]
        args: ImportArgs,
        #[command(flatten)]
        settings: ImportSettings,
    },
    // (#21 verify)
    /// Recompute stored outcomes with the module and questionnaire
    /// definition versions that computed them, on the same input, and
    /// report each that is not the same byte for byte, and why; exits
    /// non-zero unless all are. Writes nothing.
    Verify {
        #[command(flatten)]
        args: VerifyArgs,
        #[command(flatten)]
        settings: RescoreSettings,
    },
    /// Reports over every dossier for quality officers: episode_outcome
    /// (response, remission and reliable change rates of a questionnaire's
    /// episodes of care), as JSON or CSV. Writes nothing.
    Report {
        #[command(subcommand)]
        command: ReportCommand,
        #[command(flatten)]
        settings: RescoreSettings,
    },
    /// Print the access log of a dossier (NEN 7513): every request that
    /// touched its data, refusals included; `verify` checks its hash chain.
    #[command(subcommand_negates_reqs = true, args_conflicts_with_subcommands = true)]
    AccessLog {
        #[command(subcommand)]
        command: Option<AccessLogCommand>,
        /// The dossier (the EPD's identifier)
        #[arg(long, required = true)]
        dossier: Option<String>,
        /// Only entries at or after this time (Unix seconds or ISO 8601)
        #[arg(long)]
        since: Option<String>,
        /// Print one JSON object per line
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        settings: AccessLogSettings,
    },
}

#[derive(Debug, Subcommand)]
enum AccessLogCommand {
    /// Check the hash chain of the whole access log: prints the rows checked
    /// and the last hash, or the first broken link (row id and what differs)
    /// and exits non-zero.
    Verify {
        #[command(flatten)]
        settings: StoreSettings,
    },
}

fn main() -> ExitCode {
    no_huge_pages();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Turns transparent huge pages off for this process, before the heap
/// grows. mimalloc commits its arena eagerly, and where the kernel backs
/// such memory with 2 MiB pages (THP `always`, or `madvise`), touching a
/// few bytes of it makes 2 MiB resident: idle, with 11 plugins serving,
/// the process held 80.7 MB with huge pages and about 47 MB without
/// (docs/benchmarks.md#start-up-and-idle-memory). A kernel without the
/// flag (Linux before 3.15) keeps its own policy.
fn no_huge_pages() {
    let _ = rustix::thread::disable_transparent_huge_pages(true);
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let file = read_file(cli.config.as_deref())?;
    match cli.command {
        Command::Serve { settings } => {
            let config = Config::resolve(settings, file)?;
            telemetry::init(config.log_format, &config.log);
            let backend = if config.database_url.starts_with("sqlite:") {
                "SQLite"
            } else {
                "PostgreSQL"
            };
            let app = App::build(config, Arc::new(SystemClock)).await?;
            let scheme = if app.is_tls() { "https" } else { "http" };
            tracing::info!(backend, "listening on {scheme}://{}", app.local_addr()?);
            app.run(shutdown_signal()).await?;
            tracing::info!("stopped");
            Ok(())
        }
        Command::Migrate {
            check: true,
            settings,
        } => {
            let config = Config::resolve(settings.into(), file)?;
            telemetry::init(config.log_format, &config.log);
            let (report, nothing_to_do) = commands::migrate::check(&config).await?;
            commands::print_line(&report);
            anyhow::ensure!(nothing_to_do, "the database needs migrating; see above");
            Ok(())
        }
        Command::Migrate {
            check: false,
            settings,
        } => {
            let (store, _) = open_store(settings.into(), file).await?;
            store.close().await;
            tracing::info!("migrations applied");
            Ok(())
        }
        Command::Backup { args, settings } => {
            let config = Config::resolve(settings.into(), file)?;
            telemetry::init(config.log_format, &config.log);
            let report = commands::backup::backup(&config, &args).await?;
            commands::print_line(&report);
            Ok(())
        }
        Command::Restore { args, settings } => {
            let config = Config::resolve(settings.into(), file)?;
            telemetry::init(config.log_format, &config.log);
            let report = commands::backup::restore(&config, &args, chrono::Utc::now()).await?;
            commands::print_line(&report);
            Ok(())
        }
        Command::Token { command, settings } => {
            let (store, config) = open_store(settings.into(), file).await?;
            // Webhook keys are kept sealed with the service's secrets key:
            // run token commands as the service's user, with its settings.
            let secrets = host::auth::at_rest::SecretsKey::load_or_create(&config.secrets_key_file)
                .context("reading the secrets key")?;
            let result = commands::token(&store, &secrets, command, config.time_zone).await;
            store.close().await;
            result
        }
        Command::Alarm { command, settings } => {
            let (store, config) = open_store(settings.into(), file).await?;
            // Kept sealed with the service's secrets key, as token keys are.
            let secrets = host::auth::at_rest::SecretsKey::load_or_create(&config.secrets_key_file)
                .context("reading the secrets key")?;
            let result = commands::alarm(&store, &secrets, command).await;
            store.close().await;
            result
        }
        Command::Respondent { command, settings } => {
            let (store, _) = open_store(settings.into(), file).await?;
            let result = commands::respondent(&store, command, chrono::Utc::now()).await;
            store.close().await;
            result
        }
        Command::Plugin { command, settings } if command.uses_database() => {
            let (store, config) = open_store(settings.into(), file).await?;
            let result = commands::plugin::run_with_store(command, &store, &config).await;
            store.close().await;
            anyhow::ensure!(result?, "see above");
            Ok(())
        }
        Command::Plugin { command, settings } => {
            let config = Config::resolve(settings.into(), file)?;
            telemetry::init(config.log_format, &config.log);
            let listing = matches!(command, PluginCommand::List);
            let ok = tokio::task::block_in_place(|| commands::plugin::run(command, &config))?;
            if listing {
                commands::candidate::list_configured(&config).await;
            }
            anyhow::ensure!(ok, "see above");
            Ok(())
        }
        Command::Verify { args, settings } => {
            let (store, config) = open_store(settings.into(), file).await?;
            let result = commands::verify::verify(&store, &config, args).await;
            store.close().await;
            let tally = result?;
            anyhow::ensure!(
                tally.identical == tally.checked,
                "{} of {} outcomes did not verify; see above",
                tally.checked - tally.identical,
                tally.checked
            );
            Ok(())
        }
        Command::Rescore { args, settings } => {
            let (store, config) = open_store(settings.into(), file).await?;
            let result = commands::rescore::rescore(&store, &config, args).await;
            store.close().await;
            anyhow::ensure!(result?, "some outcomes could not be recomputed; see above");
            Ok(())
        }
        Command::Import { args, settings } => {
            let (store, config) = open_store(settings.into(), file).await?;
            let result = commands::import::import(&store, &config, args).await;
            store.close().await;
            let summary = result?;
            anyhow::ensure!(
                summary.stopped.as_deref() != Some("strict"),
                "{} of {} lines are bad; nothing was written (--strict)",
                summary.refused,
                summary.lines
            );
            if let Some(why) = &summary.stopped {
                anyhow::bail!(
                    "the import stopped ({why}) after {} lines; run it again to go on",
                    summary.lines
                );
            }
            anyhow::ensure!(
                summary.refused == 0,
                "{} of {} lines were refused; see above",
                summary.refused,
                summary.lines
            );
            Ok(())
        }
        Command::Report { command, settings } => {
            let (store, config) = open_store(settings.into(), file).await?;
            let mut out = Vec::new();
            let result =
                commands::report::run(&store, &config, command, chrono::Utc::now(), &mut out).await;
            store.close().await;
            // The report, also when some dossiers failed (then after it the
            // error, and a non-zero exit).
            std::io::Write::write_all(&mut std::io::stdout().lock(), &out)?;
            result
        }
        Command::AccessLog {
            command: Some(AccessLogCommand::Verify { settings }),
            ..
        } => {
            let (store, _) = open_store(settings.into(), file).await?;
            let result = commands::verify_access_log(&store).await;
            store.close().await;
            commands::print_line(&result?);
            Ok(())
        }
        Command::AccessLog {
            command: None,
            dossier,
            since,
            json,
            settings,
        } => {
            let (store, config) = open_store(settings.into(), file).await?;
            let dossier = dossier.unwrap_or_default();
            let result =
                commands::access_log(&store, &dossier, since.as_deref(), json, config.time_zone)
                    .await;
            store.close().await;
            result
        }
    }
}

/// Connects to the configured database and brings its schema up to date.
async fn open_store(settings: Settings, file: FileSettings) -> anyhow::Result<(Store, Config)> {
    let config = Config::resolve(settings, file)?;
    telemetry::init(config.log_format, &config.log);
    // Re-scoring opens and closes alarms by the configured rules.
    let options = StoreOptions {
        alarms: std::sync::Arc::new(config.alarms.clone()),
        ..StoreOptions::default()
    };
    let store = Store::connect(&config.database_url, &options).await?;
    store.migrate().await?;
    Ok((store, config))
}

fn read_file(path: Option<&Path>) -> anyhow::Result<FileSettings> {
    let Some(path) = path else {
        return Ok(FileSettings::default());
    };
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("{}", path.display()))
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM.
async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
    tracing::info!("shutting down: finishing requests in flight");
}
