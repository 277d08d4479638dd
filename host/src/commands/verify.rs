//! `outcomes verify`: recomputes stored outcomes with the module and
//! definition versions that computed them and reports, per response, any
//! that do not come out the same byte for byte, and why
//! (`crate::verify`). Writes nothing.
#![allow(
    clippy::print_stdout,
    reason = "the command reports on standard output"
)]

use std::sync::Arc;

use anyhow::Context;
use clap::Args;

use crate::config::Config;
use crate::domain::time::parse_filter;
use crate::metrics::Metrics;
use crate::plugins::Plugins;
use crate::store::{RescoreFilter, Store};
use crate::trials::Trials;
use crate::verify::{Reason, Verification, Verifier};

/// `outcomes verify` options.
#[derive(Debug, Clone, Args)]
pub struct VerifyArgs {
    /// Only responses to this questionnaire
    #[arg(long, value_name = "KEY")]
    pub questionnaire: Option<String>,
    /// Only responses completed at or after this time (Unix seconds or ISO
    /// 8601, e.g. 2026-01-01)
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
}

/// Verification counts.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    pub checked: usize,
    pub identical: usize,
    /// Recomputed, and not the same (`outcome_differs`, `input_differs`).
    pub differ: usize,
    /// Could not be recomputed (module or definition missing, altered or
    /// refused; scored before outcomes recorded what verifying needs).
    pub unverifiable: usize,
}

/// Runs the command: prints each outcome that does not verify and a
/// summary; the tally (the caller exits non-zero unless all are
/// identical).
pub async fn verify(store: &Store, config: &Config, args: VerifyArgs) -> anyhow::Result<Tally> {
    let since = match &args.since {
        Some(text) => Some(
            parse_filter(text, config.time_zone)
                .with_context(|| format!("--since {text:?}: not a time"))?,
        ),
        None => None,
    };
    // Only to compile archived modules: nothing is loaded from the folder.
    let plugins = Arc::new(
        Plugins::new(config.plugins.clone(), Arc::new(Metrics::default()))
            .context("starting the plugin runtime")?,
    );
    let mut verifier = Verifier::new(store.clone(), Arc::new(Trials::new(plugins)));
    let filter = RescoreFilter {
        questionnaire_key: args.questionnaire.clone(),
        since,
    };
    let mut tally = Tally::default();
    let mut after = 0;
    loop {
        let page = store.responses_to_verify(&filter, after, 500).await?;
        let Some((last, _)) = page.last() else { break };
        after = last.id.0;
        for (response, stored) in page {
            let v = verifier.verify(&response, stored.as_deref()).await?;
            tally.checked += 1;
            if v.identical {
                tally.identical += 1;
                continue;
            }
            let recomputed = v
                .reasons
                .iter()
                .all(|r| matches!(r, Reason::OutcomeDiffers | Reason::InputDiffers));
            if recomputed {
                tally.differ += 1;
            } else {
                tally.unverifiable += 1;
            }
            println!("{}", describe(&response.questionnaire_key, &v));
        }
    }
    println!(
        "verified {} outcomes: {} identical, {} differ, {} could not be recomputed",
        tally.checked, tally.identical, tally.differ, tally.unverifiable
    );
    Ok(tally)
}

/// `response 12 (phq9), phq9 1.0.0 sha256 ab12…: outcome_differs:
/// scores.total.value 9.0 -> 10.0`.
fn describe(questionnaire: &str, v: &Verification) -> String {
    let reasons: Vec<&str> = v.reasons.iter().map(|r| r.code()).collect();
    let fields: Vec<String> = v
        .differences
        .iter()
        .map(|d| format!("{} {} -> {}", d.path, d.stored, d.recomputed))
        .collect();
    format!(
        "response {} ({questionnaire}), {} {} sha256 {}: {}{}",
        v.response_id,
        v.plugin.as_deref().unwrap_or("no scorer"),
        v.version.as_deref().unwrap_or("-"),
        v.module_sha256.as_deref().unwrap_or("-"),
        reasons.join(", "),
        if fields.is_empty() {
            String::new()
        } else {
            format!(": {}", fields.join(", "))
        }
    )
}
