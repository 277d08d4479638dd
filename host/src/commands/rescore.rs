//! `outcomes rescore`: recomputes stored outcomes with the plugins in the
//! plugin directory (after a scorer fix, say) and reports what changed.
//! With `--exact` it instead recomputes each outcome with the very module
//! version that computed it (archived by hash) and reports any outcome it
//! cannot reproduce; nothing is written then.
#![allow(
    clippy::print_stdout,
    reason = "the command reports on standard output"
)]

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::Context;
use chrono::Utc;
use clap::Args;
use plugin_sdk::PluginKind;

use crate::config::Config;
use crate::definitions;
use crate::domain::outcome::Outcome;
use crate::domain::response::Response;
use crate::domain::time::parse_filter;
use crate::domain::variant::Variant;
use crate::metrics::Metrics;
use crate::plugins::{Plugin, Plugins};
use crate::scoring::{ScoringContext, score_with};
use crate::store::{RescoreFilter, Store};

/// `outcomes rescore` options.
#[derive(Debug, Clone, Args)]
pub struct RescoreArgs {
    /// Only responses to this questionnaire
    #[arg(long, value_name = "KEY")]
    pub questionnaire: Option<String>,
    /// Only responses completed at or after this time (Unix seconds or ISO
    /// 8601, e.g. 2026-01-01)
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Report what would change without writing
    #[arg(long)]
    pub dry_run: bool,
    /// Recompute each outcome with the module version that computed it and
    /// report outcomes that do not come out the same (writes nothing)
    #[arg(long)]
    pub exact: bool,
}

/// Rescoring counts.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    pub seen: usize,
    pub changed: usize,
    /// Responses that could not be recomputed (no scorer, module not
    /// archived); their stored outcome is left alone.
    pub skipped: usize,
}

/// Runs the command; `Ok(false)` when something could not be recomputed
/// (or, with `--exact`, did not come out the same).
pub async fn rescore(store: &Store, config: &Config, args: RescoreArgs) -> anyhow::Result<bool> {
    let since = match &args.since {
        Some(text) => Some(
            parse_filter(text, config.time_zone)
                .with_context(|| format!("--since {text:?}: not a time"))?,
        ),
        None => None,
    };
    let now = Utc::now();
    let defs = definitions::load(&config.questionnaires_dir, &config.protocols_dir)?;
    let catalog = store
        .import_definitions(defs.questionnaires, defs.protocols, now)
        .await?;
    if let Some(key) = &args.questionnaire {
        anyhow::ensure!(
            catalog.questionnaire(key).is_some(),
            "no questionnaire {key:?}"
        );
    }
    let metrics = Arc::new(Metrics::default());
    let plugins = Plugins::new(config.plugins.clone(), metrics.clone())?;
    let report = plugins.reload(now);
    for (folder, why) in &report.failed {
        println!("plugin folder {folder} refused: {why}");
    }
    // Outcomes written below name these versions; keep them addressable.
    if !args.dry_run && !args.exact {
        crate::reload::archive_modules(store, &report.loaded, now).await;
    }
    let filter = RescoreFilter {
        questionnaire_key: args.questionnaire.clone(),
        since,
    };
    let mut archived: HashMap<String, Option<Arc<Plugin>>> = HashMap::new();
    let mut tally = Tally::default();
    let mut after = 0;
    loop {
        let page = store.completed_responses(&filter, after, 500).await?;
        let Some(last) = page.last() else { break };
        after = last.id.0;
        for r in page {
            tally.seen += 1;
            let Some(q) = catalog.questionnaire_by_id(r.questionnaire_id) else {
                tally.skipped += 1;
                continue;
            };
            let plugin = if args.exact {
                archived_plugin(store, &plugins, &mut archived, &r).await
            } else {
                plugins.get(PluginKind::Scorer, &q.def.scorer).ok()
            };
            let Some(plugin) = plugin else {
                println!(
                    "response {} ({}): no scorer to recompute it with; left as stored",
                    r.id.0, q.def.key
                );
                tally.skipped += 1;
                continue;
            };
            let variant = Variant::from_stored(&r.flags, &r.textvars);
            let ctx = ScoringContext {
                completed_at: r.times.completed_at.unwrap_or(now),
                professional: r.completer_type == "profess",
                variant: &variant,
            };
            let answers = r.answers.typed(&q.def, &variant);
            let (outcome, provenance) = score_with(&metrics, &plugin, &q.def, &answers, ctx);
            if outcome == r.outcome && (args.exact || provenance == r.provenance) {
                continue;
            }
            tally.changed += 1;
            println!(
                "response {} ({}): {}; scorer {} -> {} {}",
                r.id.0,
                q.def.key,
                score_changes(&r.outcome, &outcome),
                describe(&r.provenance.plugin, &r.provenance.version),
                plugin.name(),
                plugin.version()
            );
            if !args.dry_run && !args.exact {
                store.set_outcome(r.id, &outcome, &provenance, now).await?;
            }
        }
    }
    if args.exact {
        println!(
            "recomputed {} outcomes with the module versions that computed them: {} reproduced exactly, {} differ, {} skipped",
            tally.seen,
            tally.seen - tally.changed - tally.skipped,
            tally.changed,
            tally.skipped
        );
        return Ok(tally.changed == 0 && tally.skipped == 0);
    }
    println!(
        "rescored {} responses: {} changed{}, {} skipped",
        tally.seen,
        tally.changed,
        if args.dry_run {
            " (dry run: nothing written)"
        } else {
            ""
        },
        tally.skipped
    );
    Ok(tally.skipped == 0)
}

async fn archived_plugin(
    store: &Store,
    plugins: &Plugins,
    cache: &mut HashMap<String, Option<Arc<Plugin>>>,
    r: &Response,
) -> Option<Arc<Plugin>> {
    let sha = r.provenance.sha256.clone()?;
    if let Some(found) = cache.get(&sha) {
        return found.clone();
    }
    let loaded = match store.archived_module(&sha).await {
        Ok(Some(bytes)) => plugins.load_module(&bytes).ok().map(Arc::new),
        _ => None,
    };
    cache.insert(sha, loaded.clone());
    loaded
}

fn describe(plugin: &Option<String>, version: &Option<String>) -> String {
    match (plugin, version) {
        (Some(p), Some(v)) => format!("{p} {v}"),
        (Some(p), None) => format!("{p} (not loaded)"),
        _ => "none".to_owned(),
    }
}

/// `total 11 -> 12, sub 3 -> failed (out_of_fuel)` for the scores that
/// differ, each named once.
fn score_changes(old: &Outcome, new: &Outcome) -> String {
    let show = |o: &Outcome, key: &str| match o.scores.get(key) {
        None => "absent".to_owned(),
        Some(s) => match (s.get("value"), s.get("exception")) {
            (Some(v), _) => v.to_string(),
            (None, Some(e)) => format!("failed ({})", e["code"].as_str().unwrap_or("?")),
            (None, None) => "no value".to_owned(),
        },
    };
    let mut keys: Vec<&String> = old.scores.keys().collect();
    keys.extend(new.scores.keys().filter(|k| !old.scores.contains_key(*k)));
    let changes: Vec<String> = keys
        .into_iter()
        .filter(|k| old.scores.get(*k) != new.scores.get(*k))
        .map(|k| format!("{k} {} -> {}", show(old, k), show(new, k)))
        .collect();
    if changes.is_empty() {
        "flags changed".to_owned()
    } else {
        changes.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_changed_score_is_named_once() {
        let outcome = |v: f64| Outcome {
            scores: json!({"total": {"value": v}, "sub": {"value": 1.0}})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            ..Outcome::empty()
        };
        assert_eq!(
            score_changes(&outcome(11.0), &outcome(12.0)),
            "total 11.0 -> 12.0"
        );
    }
}
