//! `outcomes report episode_outcome`: the episode outcomes of one
//! questionnaire over every dossier, as counts and rates a quality officer
//! reports (docs/operations.md#episode-outcomes). Each dossier's completed
//! responses go to the `episode_outcome` calculator exactly as a
//! `report_calculations` request would send them (the serving module, the
//! thresholds of the questionnaire definition); the episodes whose
//! baseline lies in the period are counted. Writes nothing but the report;
//! names no dossier.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

use anyhow::{Context, bail};
use chrono::{DateTime, SecondsFormat, Utc};
use clap::{Args, Subcommand, ValueEnum};
use plugin_sdk::{CalculatorInput, CalculatorOutput, PluginKind, ResponseInfo};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::Config;
use crate::definitions;
use crate::domain::time::parse_filter;
use crate::metrics::Metrics;
use crate::plugins::Plugins;
use crate::scoring::{calculator_input_for, questionnaire_info, response_info};
use crate::store::{RescoreFilter, Store};

/// The calculator this report runs.
pub const EPISODE_OUTCOME: &str = "episode_outcome";

/// `outcomes report ...`
#[derive(Debug, Clone, Subcommand)]
pub enum ReportCommand {
    /// Episode outcomes of one questionnaire over every dossier: how many
    /// episodes began in the period, how many had a follow-up in the
    /// window, and how many of those responded, remitted and improved
    /// reliably, with the rates.
    ///
    /// Runs the `episode_outcome` calculator the service serves over each
    /// dossier's completed responses to the questionnaire, with the
    /// thresholds and follow-up window of its definition (each score's
    /// `[scores.episode]` block; the report names their version and
    /// source). An episode counts when its baseline (its first response)
    /// was completed in [--since, --until); its follow-up may come later.
    /// Rates are of the episodes with a follow-up; the episodes without one
    /// are counted apart, those whose window has not closed yet too.
    /// Names no dossier. Writes nothing.
    ///
    /// Example: outcomes report episode_outcome --questionnaire phq9
    /// --since 2026-01-01 --until 2027-01-01 --format csv
    #[command(name = "episode_outcome")]
    EpisodeOutcome(EpisodeReportArgs),
}

/// `outcomes report episode_outcome` options.
#[derive(Debug, Clone, Args)]
pub struct EpisodeReportArgs {
    /// The questionnaire, e.g. phq9 or gad7; its definition must name
    /// episode thresholds
    #[arg(long, value_name = "KEY")]
    pub questionnaire: String,
    /// Count the episodes whose baseline was completed at or after this
    /// time (Unix seconds or ISO 8601, e.g. 2026-01-01: midnight in the
    /// configured time zone)
    #[arg(long, value_name = "TIME")]
    pub since: String,
    /// ... and before this time (same forms); default: no end
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// json: one object; csv: a header line and a line per score
    #[arg(long, value_enum, default_value_t = Format::Json)]
    pub format: Format,
}

/// How the report is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Json,
    Csv,
}

/// The report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpisodeReport {
    /// `episode_outcome`.
    pub calculator: String,
    /// The version of the calculator module that ran.
    pub calculator_version: String,
    pub questionnaire_key: String,
    /// The period the baselines lie in (UTC).
    pub since: String,
    pub until: Option<String>,
    /// When the report was made (UTC); windows still open are open at it.
    pub generated_at: String,
    /// Dossiers with a completed response to the questionnaire.
    pub dossiers: usize,
    /// Dossiers whose calculation failed (their episodes are not counted).
    pub dossiers_failed: usize,
    /// One entry per score with episode thresholds.
    pub scores: Vec<ScoreCounts>,
}

/// The counts of one score.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScoreCounts {
    pub score_key: String,
    /// The definition of the metrics, as the calculator reports it
    /// (version, response, remission, window_days, reliable_change,
    /// source).
    pub definition: Value,
    /// Episodes whose baseline lies in the period.
    pub episodes: usize,
    /// ... with a follow-up in the window.
    pub with_follow_up: usize,
    /// ... without one (`episodes` − `with_follow_up`).
    pub without_follow_up: usize,
    /// ... of which the window is still open at `generated_at`: a
    /// follow-up may yet come.
    pub without_follow_up_window_open: usize,
    /// Episodes with a follow-up that responded.
    pub responders: usize,
    /// `responders` / (`with_follow_up` − `response_not_defined`).
    pub response_rate: Option<f64>,
    /// Episodes with a follow-up whose response is not defined (a
    /// baseline of 0, or below the definition's eligibility cut-off).
    pub response_not_defined: usize,
    /// Episodes with a follow-up in remission.
    pub remitters: usize,
    /// `remitters` / (`with_follow_up` − `remission_not_defined`).
    pub remission_rate: Option<f64>,
    /// Episodes with a follow-up whose remission is not judged (a
    /// baseline below the definition's eligibility cut-off).
    pub remission_not_defined: usize,
    /// Episodes with a follow-up that improved reliably (Jacobson &
    /// Truax).
    pub reliable_improvement: usize,
    /// `reliable_improvement` / (`with_follow_up` −
    /// `reliable_change_not_defined`).
    pub reliable_improvement_rate: Option<f64>,
    /// Episodes with a follow-up that deteriorated reliably.
    pub reliable_deterioration: usize,
    /// Episodes with a follow-up without reliable change (the definition
    /// lacks reliability or SD).
    pub reliable_change_not_defined: usize,
}

/// A completed response with its completion time, to order by.
type Completed = (Option<DateTime<Utc>>, ResponseInfo);

/// What the command reads of the calculator's results.
#[derive(Debug, Deserialize)]
struct Results {
    #[serde(default)]
    scores: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
struct Entry {
    questionnaire_key: String,
    score_key: Option<String>,
    #[serde(default)]
    definition: Value,
    #[serde(default)]
    episodes: Vec<Episode>,
}

#[derive(Debug, Deserialize)]
struct Episode {
    baseline: Point,
    follow_up: Option<Point>,
    response: Option<bool>,
    remission: Option<bool>,
    reliable_change: Option<Reliable>,
}

#[derive(Debug, Deserialize)]
struct Point {
    completed_at: String,
}

#[derive(Debug, Deserialize)]
struct Reliable {
    reliable: bool,
    direction: String,
}

/// Runs `outcomes report ...`, printing to `out`; `now` is when windows
/// are judged open.
pub async fn run(
    store: &Store,
    config: &Config,
    command: ReportCommand,
    now: DateTime<Utc>,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let ReportCommand::EpisodeOutcome(args) = command;
    let format = args.format;
    let report = episode_report(store, config, args, now).await?;
    match format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, &report)?;
            writeln!(out)?;
        }
        Format::Csv => out.write_all(csv(&report).as_bytes())?,
    }
    if report.dossiers_failed > 0 {
        bail!(
            "the calculation failed for {} of {} dossiers (logged); their episodes are not counted",
            report.dossiers_failed,
            report.dossiers
        );
    }
    Ok(())
}

/// Counts the episodes of `args.questionnaire` over every dossier.
pub async fn episode_report(
    store: &Store,
    config: &Config,
    args: EpisodeReportArgs,
    now: DateTime<Utc>,
) -> anyhow::Result<EpisodeReport> {
    let time = |flag: &str, text: &str| {
        parse_filter(text, config.time_zone)
            .with_context(|| format!("--{flag} {text:?}: not a time"))
    };
    let since = time("since", &args.since)?;
    let until = args
        .until
        .as_deref()
        .map(|t| time("until", t))
        .transpose()?;
    if let Some(until) = until {
        anyhow::ensure!(until > since, "--until must be later than --since");
    }
    let key = args.questionnaire.trim();
    let defs = definitions::load(&config.questionnaires_dir, &config.protocols_dir)?;
    let Some(q) = defs.questionnaires.iter().find(|q| q.def.key == key) else {
        bail!(
            "no questionnaire {key:?} in {}",
            config.questionnaires_dir.display()
        );
    };
    anyhow::ensure!(
        q.def.scores.iter().any(|s| s.episode.is_some()),
        "the definition of {key:?} names no episode thresholds (a [scores.episode] block, \
         docs/questionnaire-format.md#episode-outcomes)"
    );
    let info = questionnaire_info(&q.def);

    let plugins = Plugins::new(config.plugins.clone(), Arc::new(Metrics::default()))
        .context("starting the plugin runtime")?;
    let loaded = plugins.reload(now);
    let plugin = plugins
        .get(PluginKind::Calculator, EPISODE_OUTCOME)
        .with_context(|| {
            let refused = loaded
                .failed
                .iter()
                .find(|(folder, _)| folder == EPISODE_OUTCOME)
                .map(|(_, why)| format!(": refused, {why}"))
                .unwrap_or_default();
            format!(
                "no calculator {EPISODE_OUTCOME} in {}{refused}",
                config.plugins.dir.display()
            )
        })?;

    // Every completed response to the questionnaire, by dossier: the
    // baselines before `since` matter too (they decide where episodes
    // begin).
    let filter = RescoreFilter {
        questionnaire_key: Some(key.to_owned()),
        since: None,
    };
    let mut by_dossier: BTreeMap<i64, Vec<Completed>> = BTreeMap::new();
    let mut after = 0;
    loop {
        let page = store.completed_responses(&filter, after, 500).await?;
        let Some(last) = page.last() else { break };
        after = last.id.0;
        for r in page {
            let mut info = response_info(&r);
            // The calculator declines the answers: no need to hold them.
            info.values.clear();
            by_dossier
                .entry(r.dossier_id.0)
                .or_default()
                .push((r.times.completed_at, info));
        }
    }

    let calculate = |responses: Vec<ResponseInfo>| {
        let input = calculator_input_for(
            &plugin,
            CalculatorInput {
                responses,
                questionnaires: BTreeMap::from([(key.to_owned(), info.clone())]),
            },
        );
        let (plugins, plugin) = (&plugins, plugin.clone());
        async move {
            let call = plugins.call::<_, CalculatorOutput>(plugin, &input).await;
            call.result.map_err(|e| e.to_string()).and_then(|output| {
                serde_json::from_value::<Results>(Value::Object(output.results))
                    .map_err(|e| format!("results not of episode_outcome's shape: {e}"))
            })
        }
    };

    // The scores and their definitions, as the calculator reports them
    // with no responses: every score is reported, without episodes too.
    let mut counts: BTreeMap<String, ScoreCounts> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let empty = calculate(Vec::new())
        .await
        .map_err(|e| anyhow::anyhow!("the calculator {EPISODE_OUTCOME} failed: {e}"))?;
    for entry in empty.scores {
        if let Some(score_key) = entry.score_key.filter(|_| entry.questionnaire_key == key) {
            order.push(score_key.clone());
            counts.insert(
                score_key.clone(),
                ScoreCounts::new(score_key, entry.definition),
            );
        }
    }

    let mut failed = 0;
    let dossiers = by_dossier.len();
    for (_, mut responses) in by_dossier {
        // Oldest first (by completion time, then id), as the endpoint
        // hands them over.
        responses.sort_by_key(|(at, r)| (*at, r.id));
        let results = match calculate(responses.into_iter().map(|(_, r)| r).collect()).await {
            Ok(results) => results,
            Err(e) => {
                tracing::error!(
                    calculator = plugin.name(),
                    version = plugin.version(),
                    error = %e,
                    "episode report: a dossier's calculation failed"
                );
                failed += 1;
                continue;
            }
        };
        for entry in results.scores {
            let Some(score_key) = entry.score_key.filter(|_| entry.questionnaire_key == key) else {
                continue;
            };
            if !order.contains(&score_key) {
                order.push(score_key.clone());
            }
            let tally = counts
                .entry(score_key.clone())
                .or_insert_with(|| ScoreCounts::new(score_key, entry.definition.clone()));
            let window_end = entry
                .definition
                .pointer("/window_days/1")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            for episode in &entry.episodes {
                let Some(baseline) = parse_time(&episode.baseline.completed_at) else {
                    continue;
                };
                if baseline < since || until.is_some_and(|until| baseline >= until) {
                    continue;
                }
                tally.add(episode, baseline, window_end, now);
            }
        }
    }
    let mut scores: Vec<ScoreCounts> = order.iter().filter_map(|key| counts.remove(key)).collect();
    scores.iter_mut().for_each(ScoreCounts::finish);
    Ok(EpisodeReport {
        calculator: EPISODE_OUTCOME.to_owned(),
        calculator_version: plugin.version().to_owned(),
        questionnaire_key: key.to_owned(),
        since: utc(since),
        until: until.map(utc),
        generated_at: utc(now),
        dossiers,
        dossiers_failed: failed,
        scores,
    })
}

impl ScoreCounts {
    fn new(score_key: String, definition: Value) -> ScoreCounts {
        ScoreCounts {
            score_key,
            definition,
            episodes: 0,
            with_follow_up: 0,
            without_follow_up: 0,
            without_follow_up_window_open: 0,
            responders: 0,
            response_rate: None,
            response_not_defined: 0,
            remitters: 0,
            remission_rate: None,
            remission_not_defined: 0,
            reliable_improvement: 0,
            reliable_improvement_rate: None,
            reliable_deterioration: 0,
            reliable_change_not_defined: 0,
        }
    }

    fn add(
        &mut self,
        episode: &Episode,
        baseline: DateTime<Utc>,
        window_end: i64,
        now: DateTime<Utc>,
    ) {
        self.episodes += 1;
        if episode.follow_up.is_none() {
            self.without_follow_up += 1;
            if baseline + chrono::Duration::days(window_end + 1) > now {
                self.without_follow_up_window_open += 1;
            }
            return;
        }
        self.with_follow_up += 1;
        match episode.response {
            Some(true) => self.responders += 1,
            Some(false) => {}
            None => self.response_not_defined += 1,
        }
        match episode.remission {
            Some(true) => self.remitters += 1,
            Some(false) => {}
            None => self.remission_not_defined += 1,
        }
        match &episode.reliable_change {
            Some(change) if change.reliable && change.direction == "improved" => {
                self.reliable_improvement += 1;
            }
            Some(change) if change.reliable && change.direction == "deteriorated" => {
                self.reliable_deterioration += 1;
            }
            Some(_) => {}
            None => self.reliable_change_not_defined += 1,
        }
    }

    fn finish(&mut self) {
        let rate = |part: usize, whole: usize| {
            // Counts of episodes: far below 2^52, exact as f64.
            #[allow(clippy::cast_precision_loss)]
            let fraction = part as f64 / whole as f64;
            (whole > 0).then(|| (fraction * 10_000.0).round() / 10_000.0)
        };
        self.response_rate = rate(
            self.responders,
            self.with_follow_up - self.response_not_defined,
        );
        self.remission_rate = rate(
            self.remitters,
            self.with_follow_up - self.remission_not_defined,
        );
        self.reliable_improvement_rate = rate(
            self.reliable_improvement,
            self.with_follow_up - self.reliable_change_not_defined,
        );
    }
}

/// The CSV columns, in order.
const CSV_COLUMNS: [&str; 23] = [
    "questionnaire_key",
    "score_key",
    "since",
    "until",
    "generated_at",
    "dossiers",
    "episodes",
    "with_follow_up",
    "without_follow_up",
    "without_follow_up_window_open",
    "responders",
    "response_rate",
    "response_not_defined",
    "remitters",
    "remission_rate",
    "remission_not_defined",
    "reliable_improvement",
    "reliable_improvement_rate",
    "reliable_deterioration",
    "reliable_change_not_defined",
    "definition_version",
    "window_days",
    "source",
];

/// The report as CSV (RFC 4180: comma-separated, CRLF line ends, fields
/// with a comma, quote or line break quoted): a header line and a line
/// per score.
pub fn csv(report: &EpisodeReport) -> String {
    let mut text = CSV_COLUMNS.join(",");
    text.push_str("\r\n");
    for s in &report.scores {
        let count = |n: usize| n.to_string();
        let rate = |r: Option<f64>| r.map(|r| r.to_string()).unwrap_or_default();
        let definition = |path: &str| match s.definition.pointer(path) {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Array(days)) => days
                .iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join("-"),
            _ => String::new(),
        };
        let fields = [
            report.questionnaire_key.clone(),
            s.score_key.clone(),
            report.since.clone(),
            report.until.clone().unwrap_or_default(),
            report.generated_at.clone(),
            count(report.dossiers),
            count(s.episodes),
            count(s.with_follow_up),
            count(s.without_follow_up),
            count(s.without_follow_up_window_open),
            count(s.responders),
            rate(s.response_rate),
            count(s.response_not_defined),
            count(s.remitters),
            rate(s.remission_rate),
            count(s.remission_not_defined),
            count(s.reliable_improvement),
            rate(s.reliable_improvement_rate),
            count(s.reliable_deterioration),
            count(s.reliable_change_not_defined),
            definition("/version"),
            definition("/window_days"),
            definition("/source"),
        ];
        let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
        text.push_str(&line.join(","));
        text.push_str("\r\n");
    }
    text
}

/// One CSV field, quoted when it must be.
fn csv_field(field: &str) -> String {
    if field.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}

fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn utc(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn episode(
        follow_up: bool,
        response: Option<bool>,
        remission: Option<bool>,
        reliable: Option<(bool, &str)>,
    ) -> Episode {
        Episode {
            baseline: Point {
                completed_at: "2026-01-01T00:00:00Z".into(),
            },
            follow_up: follow_up.then(|| Point {
                completed_at: "2026-03-01T00:00:00Z".into(),
            }),
            response,
            remission,
            reliable_change: reliable.map(|(reliable, direction)| Reliable {
                reliable,
                direction: direction.into(),
            }),
        }
    }

    #[test]
    fn rates_are_of_the_episodes_with_a_follow_up_where_the_metric_is_defined() {
        let baseline = parse_time("2026-01-01T00:00:00Z").unwrap_or_default();
        let now = parse_time("2026-05-01T00:00:00Z").unwrap_or_default();
        let mut counts = ScoreCounts::new("total".into(), Value::Null);
        counts.add(
            &episode(true, Some(true), Some(true), Some((true, "improved"))),
            baseline,
            180,
            now,
        );
        counts.add(
            &episode(true, Some(false), Some(false), Some((false, "improved"))),
            baseline,
            180,
            now,
        );
        counts.add(
            &episode(true, None, Some(true), Some((true, "deteriorated"))),
            baseline,
            180,
            now,
        );
        counts.add(&episode(false, None, None, None), baseline, 180, now);
        // A baseline below the eligibility cut-off: neither response nor
        // remission is judged, so it is in neither rate.
        counts.add(
            &episode(true, None, None, Some((false, "improved"))),
            baseline,
            180,
            now,
        );
        // The window of a baseline 200 days before `now` has closed.
        let old = parse_time("2025-10-13T00:00:00Z").unwrap_or_default();
        counts.add(&episode(false, None, None, None), old, 180, now);
        counts.finish();
        assert_eq!(
            (
                counts.episodes,
                counts.with_follow_up,
                counts.without_follow_up
            ),
            (6, 4, 2)
        );
        assert_eq!(counts.without_follow_up_window_open, 1);
        assert_eq!((counts.responders, counts.response_not_defined), (1, 2));
        assert_eq!(counts.response_rate, Some(0.5));
        assert_eq!((counts.remitters, counts.remission_not_defined), (2, 1));
        assert_eq!(counts.remission_rate, Some(0.6667));
        assert_eq!(
            (counts.reliable_improvement, counts.reliable_deterioration),
            (1, 1)
        );
        assert_eq!(counts.reliable_improvement_rate, Some(0.25));
    }

    #[test]
    fn no_episode_with_a_follow_up_is_no_rate_rather_than_zero() {
        let mut counts = ScoreCounts::new("total".into(), Value::Null);
        counts.finish();
        assert_eq!(counts.response_rate, None);
        assert_eq!(counts.remission_rate, None);
    }

    #[test]
    fn csv_fields_with_commas_or_quotes_are_quoted() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a, b"), "\"a, b\"");
        assert_eq!(csv_field("say \"x\""), "\"say \"\"x\"\"\"");
    }
}
