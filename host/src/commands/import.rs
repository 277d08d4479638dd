//! `outcomes import FILE`: a clinic's history of responses from its
//! previous system, NDJSON, one response a line, stored as
//! `POST /api/v1/responses/import` stores them (`api/responses/import.rs`):
//! each checked, scored with the serving scorer and stored with its
//! access-log row, idempotent on external ids, so a run that stopped is
//! run again whole (docs/operations.md#migrating-from-another-system).
//! It opens the database itself, as `rescore` does; a service may be
//! serving meanwhile.
//!
//! Responses it stores are not scored in the shadow of a candidate on
//! trial: that is a service's work, on its idle CPU.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the command reports on standard output and its progress on standard error"
)]

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use tokio::sync::mpsc;

use crate::api::import::file_chunks;
use crate::api::responses::import::{Importer, Lines, Report, Summary, check_all, import_all};
use crate::auth::at_rest::SecretsKey;
use crate::clock::{Clock, SystemClock};
use crate::config::Config;
use crate::definitions;
use crate::metrics::Metrics;
use crate::plugins::Plugins;
use crate::shadow::{self, Shadow};
use crate::store::{AccessEntry, Store};
use crate::trials::Trials;

/// The access log's `action` and `client` of the rows this command writes
/// (docs/api/rights.md#access-log).
pub const ACTION: &str = "outcomes import";
pub const CLIENT: &str = "command line";

/// `outcomes import` options.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// NDJSON file: one response a line, each the JSON body of
    /// `POST /api/v1/dossiers/{dossier_id}/responses` plus "dossier_id",
    /// e.g. {"dossier_id": "patient-1", "questionnaire_key": "phq9",
    /// "external_id": "old-42", "completed_at": 1700000000,
    /// "answer_data": {"v_1": "a1", ...}}. "completed_at" is another name
    /// of "filled_out_at" (Unix seconds); both default to now
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Check every line first (against the questionnaires and the
    /// responses stored) and write nothing if any line is bad; without it
    /// bad lines are reported and the good ones stored
    #[arg(long)]
    pub strict: bool,
    /// Print every line's result as JSON, one a line, as
    /// POST /api/v1/responses/import answers (default: only the refused
    /// lines, as text)
    #[arg(long)]
    pub json: bool,
}

/// Runs the command: the summary, once every line was read (or the
/// import stopped: `stopped` says why).
pub async fn import(store: &Store, config: &Config, args: ImportArgs) -> anyhow::Result<Summary> {
    let size = std::fs::metadata(&args.file)
        .with_context(|| format!("reading {}", args.file.display()))?
        .len();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let now = clock.now();
    let defs = definitions::load_with(
        &config.questionnaires_dir,
        &config.protocols_dir,
        config.translations_dir.as_deref(),
        None,
    )?;
    let catalog = store
        .import_definitions(defs.questionnaires, defs.protocols, now)
        .await?;
    let metrics = Arc::new(Metrics::default());
    let plugins = Arc::new(Plugins::new(config.plugins.clone(), metrics.clone())?);
    let report = plugins.reload(now);
    for (folder, why) in &report.failed {
        println!("plugin folder {folder} refused: {why}");
    }
    // Outcomes stored below name these versions; keep them addressable.
    crate::reload::archive_modules(store, &report.loaded, now).await;
    let trials = Arc::new(Trials::new(plugins));
    promoted(store, config, &trials, &metrics, &clock).await?;
    let importer = Arc::new(Importer {
        store: store.clone(),
        catalog: Arc::new(catalog),
        trials,
        metrics,
        clock,
        access: AccessEntry {
            at: now,
            action: ACTION.to_owned(),
            client: CLIENT.to_owned(),
            // One id for the rows of one run.
            request_id: Some(format!("import-{}-{}", now.timestamp(), std::process::id())),
            ..AccessEntry::default()
        },
        only_dossier: None,
        max_line: config.body_limit,
    });
    let mut progress = Progress::new(size, args.json);
    if args.strict {
        let lines = open(&args, &importer).await?;
        let read = lines.bytes_read();
        let checked = pass(&importer, lines, read, &mut progress, "checked", true).await;
        if checked.refused > 0 || checked.stopped.is_some() {
            return Ok(Summary {
                stopped: checked.stopped.or_else(|| Some("strict".to_owned())),
                ..checked
            });
        }
        progress.again();
    }
    let lines = open(&args, &importer).await?;
    let read = lines.bytes_read();
    Ok(pass(&importer, lines, read, &mut progress, "stored", false).await)
}

/// The serving scorers as a service has them: a candidate promoted in the
/// database (its row sealed with the secrets key) serves in place of the
/// folder's version.
async fn promoted(
    store: &Store,
    config: &Config,
    trials: &Arc<Trials>,
    metrics: &Arc<Metrics>,
    clock: &Arc<dyn Clock>,
) -> anyhow::Result<()> {
    if store.candidates().await?.is_empty() {
        return Ok(());
    }
    let key = SecretsKey::load(&config.secrets_key_file).with_context(|| {
        "reading the secrets key, which seals the candidate scorer versions in the database: \
         run this command as the service's user, with the service's settings (secrets_key_file)"
    })?;
    let queue = shadow::Queue::new(trials.clone(), metrics.clone());
    let shadow = Shadow::new(
        queue,
        store.clone(),
        clock.clone(),
        Arc::new(key),
        metrics.clone(),
    );
    shadow::refresh(&shadow).await?;
    Ok(())
}

type FileLines = Lines<
    std::pin::Pin<
        Box<
            dyn futures_util::Stream<
                    Item = Result<bytes::Bytes, crate::api::responses::import::ReadError>,
                > + Send,
        >,
    >,
>;

async fn open(args: &ImportArgs, importer: &Importer) -> anyhow::Result<FileLines> {
    let file = tokio::fs::File::open(&args.file)
        .await
        .with_context(|| format!("opening {}", args.file.display()))?;
    let chunks: std::pin::Pin<Box<dyn futures_util::Stream<Item = _> + Send>> =
        Box::pin(file_chunks(file));
    Ok(Lines::new(chunks, importer.max_line))
}

/// One pass over the file: `checking` the strict check, else the import;
/// the reports printed as they come.
async fn pass(
    importer: &Arc<Importer>,
    lines: FileLines,
    read: Arc<AtomicU64>,
    progress: &mut Progress,
    verb: &'static str,
    checking: bool,
) -> Summary {
    let (out, mut reports) = mpsc::channel(256);
    let work = async move {
        if checking {
            check_all(importer, lines, &out).await
        } else {
            import_all(importer, lines, &out).await
        }
    };
    let print = async {
        while let Some(report) = reports.recv().await {
            progress.report(&report, &read, verb);
        }
    };
    let (summary, ()) = tokio::join!(work, print);
    progress.done(&summary, verb);
    summary
}

/// What the command prints as it goes: refused lines (or every line, as
/// JSON) on standard output; progress on standard error, as one line
/// redrawn on a terminal, else a line every 10 s.
struct Progress {
    size: u64,
    json: bool,
    terminal: bool,
    started: Instant,
    last: Instant,
    tally: Summary,
}

impl Progress {
    fn new(size: u64, json: bool) -> Progress {
        let now = Instant::now();
        Progress {
            size,
            json,
            terminal: std::io::stderr().is_terminal(),
            started: now,
            last: now,
            tally: Summary::default(),
        }
    }

    /// The second pass starts.
    fn again(&mut self) {
        *self = Progress::new(self.size, self.json);
    }

    fn every(&self) -> Duration {
        if self.terminal {
            Duration::from_millis(200)
        } else {
            Duration::from_secs(10)
        }
    }

    fn report(&mut self, report: &Report, read: &AtomicU64, verb: &str) {
        let Report::Line(line) = report else {
            return;
        };
        match line.result {
            "created" => self.tally.created += 1,
            "existing" => self.tally.existing += 1,
            _ => self.tally.refused += 1,
        }
        self.tally.lines = line.line;
        if self.json {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(&report.ndjson());
        } else if line.result == "refused" {
            self.clear();
            println!(
                "line {}: {} (dossier {}, external_id {}): {}",
                line.line,
                line.status,
                line.dossier_id.as_deref().unwrap_or("-"),
                line.external_id.as_deref().unwrap_or("-"),
                line.errors
                    .as_ref()
                    .map_or_else(String::new, ToString::to_string)
            );
        }
        if self.last.elapsed() >= self.every() {
            self.last = Instant::now();
            self.show(read.load(Ordering::Relaxed), verb);
        }
    }

    /// Progress: bytes read of the file, lines, rate.
    fn show(&self, read: u64, verb: &str) {
        let percent = if self.size == 0 {
            100.0
        } else {
            100.0 * read as f64 / self.size as f64
        };
        let seconds = self.started.elapsed().as_secs_f64().max(0.001);
        let text = format!(
            "{percent:5.1}% of the file, line {}: {} {verb}, {} existing, {} refused ({:.0} lines/s)",
            self.tally.lines,
            self.tally.created,
            self.tally.existing,
            self.tally.refused,
            (self.tally.created + self.tally.existing + self.tally.refused) as f64 / seconds
        );
        if self.terminal {
            let bar = bar(percent);
            eprint!("\r\x1b[2K{bar} {text}");
        } else {
            eprintln!("{text}");
        }
    }

    /// Clears the redrawn progress line before other output.
    fn clear(&self) {
        if self.terminal {
            eprint!("\r\x1b[2K");
        }
    }

    fn done(&self, summary: &Summary, verb: &str) {
        self.clear();
        let seconds = self.started.elapsed().as_secs_f64();
        eprintln!(
            "{} lines in {seconds:.1} s: {} {verb}, {} existing, {} refused{}",
            summary.lines,
            if verb == "checked" {
                summary.lines - summary.refused
            } else {
                summary.created
            },
            summary.existing,
            summary.refused,
            summary
                .stopped
                .as_deref()
                .map_or_else(String::new, |why| format!("; stopped: {why}"))
        );
    }
}

/// `[=====>    ]` for `percent`.
fn bar(percent: f64) -> String {
    const WIDTH: usize = 24;
    let full = ((percent / 100.0) * WIDTH as f64)
        .round()
        .clamp(0.0, WIDTH as f64) as usize;
    format!("[{}{}]", "=".repeat(full), " ".repeat(WIDTH - full))
}
