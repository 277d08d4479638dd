//! `outcomes plugin candidate|promote|discard`, and the candidates part of
//! `outcomes plugin list`: trying a new scorer version on real responses
//! before it serves (docs/operations.md#verifying-outcomes-and-trying-a-new-scorer).
//! Candidates are kept in the database, so every host sharing it shadows
//! with them and a promotion switches every host.
#![allow(
    clippy::print_stdout,
    reason = "the commands report on standard output"
)]

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use chrono::Utc;
use plugin_sdk::PluginKind;

use crate::config::Config;
use crate::metrics::Metrics;
use crate::plugins::{Plugins, selftest};
use crate::store::{ArchivedModule, NewCandidate, Store};
use crate::verify::differences;

/// Differences a refused promotion prints.
const SHOWN: i64 = 20;

/// Installs the module at `module` as the candidate of the scorer `name`,
/// tried against the version the plugin folder serves. `Ok(false)` when
/// the module is refused.
pub async fn install(
    store: &Store,
    config: &Config,
    name: &str,
    module: &Path,
) -> anyhow::Result<bool> {
    let bytes = std::fs::read(module).with_context(|| format!("reading {}", module.display()))?;
    let plugins = Plugins::new(config.plugins.clone(), Arc::new(Metrics::default()))
        .context("starting the plugin runtime")?;
    let now = Utc::now();
    let fixtures = module.parent().unwrap_or(Path::new(".")).join("fixtures");
    // Compiling blocks; a command has its thread to itself.
    let candidate = plugins
        .load_module(&bytes)
        .map_err(|e| e.to_string())
        .and_then(|c| selftest::self_test(&c, &fixtures).map(|passed| (c, passed)));
    let report = plugins.reload(now);
    let (candidate, passed) = match candidate {
        Ok(found) => found,
        Err(why) => {
            println!("REFUSED  {}: {why}", module.display());
            return Ok(false);
        }
    };
    anyhow::ensure!(
        candidate.name() == name && candidate.kind() == PluginKind::Scorer,
        "{} is the {} {}, not the scorer {name}",
        module.display(),
        candidate.kind(),
        candidate.name()
    );
    let Some(live) = plugins.registry().get(PluginKind::Scorer, name).cloned() else {
        let refused: Vec<String> = report
            .failed
            .iter()
            .map(|(f, why)| format!("{f}: {why}"))
            .collect();
        anyhow::bail!(
            "no scorer {name} serves from the plugin folder {}: a candidate is tried against the \
             serving version{}",
            plugins.dir().display(),
            if refused.is_empty() {
                String::new()
            } else {
                format!(" (refused: {})", refused.join("; "))
            }
        );
    };
    anyhow::ensure!(
        live.sha256 != candidate.sha256,
        "{} is the version that serves already ({} {})",
        module.display(),
        live.name(),
        live.version()
    );
    if let Some(promoted) = store
        .candidates()
        .await?
        .into_iter()
        .find(|c| c.name == name && c.promoted_at.is_some() && c.live_sha256 == live.sha256)
    {
        anyhow::bail!(
            "{name} {} was promoted and serves in place of {}: put its module in the plugin \
             folders first, or withdraw the promotion with `outcomes plugin discard {name}`",
            promoted.version,
            promoted.live_version
        );
    }
    store
        .archive_module(
            ArchivedModule {
                sha256: candidate.sha256.clone(),
                name: candidate.name().to_owned(),
                kind: candidate.kind().to_string(),
                version: candidate.version().to_owned(),
                bytes: bytes.clone(),
            },
            now,
        )
        .await?;
    store
        .install_candidate(
            NewCandidate {
                name: name.to_owned(),
                sha256: candidate.sha256.clone(),
                version: candidate.version().to_owned(),
                live_sha256: live.sha256.clone(),
                live_version: live.version().to_owned(),
            },
            now,
        )
        .await?;
    println!(
        "candidate {name} {} (sha256 {}, {passed} fixtures passed) installed; it scores every \
         response {name} {} scores, on every host of this database within a few seconds",
        candidate.version(),
        &candidate.sha256[..16],
        live.version()
    );
    Ok(true)
}

/// Promotes the candidate of `name`: it serves in place of the version it
/// was tried against, on every host. Refused (`Ok(false)`, the
/// differences printed) while it has recorded differences, unless
/// `accept_differences`.
pub async fn promote(store: &Store, name: &str, accept_differences: bool) -> anyhow::Result<bool> {
    let Some(c) = store
        .candidates()
        .await?
        .into_iter()
        .find(|c| c.name == name)
    else {
        anyhow::bail!("no candidate of {name} is installed");
    };
    anyhow::ensure!(
        c.promoted_at.is_none(),
        "{name} {} is promoted already",
        c.version
    );
    if c.differences > 0 && !accept_differences {
        println!(
            "{name} {} scored {} of {} responses otherwise than {}:",
            c.version, c.differences, c.calls, c.live_version
        );
        for d in store.shadow_differences(name, SHOWN).await? {
            let live = serde_json::from_str(&d.live_outcome).unwrap_or_default();
            let candidate = serde_json::from_str(&d.candidate_outcome).unwrap_or_default();
            let fields: Vec<String> = differences(&live, &candidate)
                .into_iter()
                .map(|f| format!("{} {} -> {}", f.path, f.stored, f.recomputed))
                .collect();
            println!("  response {}: {}", d.response_id, fields.join(", "));
        }
        println!(
            "not promoted: explain the differences, then promote with --accept-differences, or \
             `outcomes plugin discard {name}`"
        );
        return Ok(false);
    }
    if c.calls == 0 {
        println!("note: {name} {} has not scored any response yet", c.version);
    }
    anyhow::ensure!(
        store.promote_candidate(name, Utc::now()).await?,
        "the candidate of {name} changed meanwhile; look again with `outcomes plugin list`"
    );
    println!(
        "promoted: {name} {} (sha256 {}) serves in place of {} on every host of this database \
         within a few seconds, while their plugin folders hold {}; put its module in the plugin \
         folders to keep it, `outcomes plugin discard {name}` to go back",
        c.version,
        &c.sha256[..16],
        c.live_version,
        c.live_version
    );
    Ok(true)
}

/// Drops the candidate of `name` and its differences (a promoted one:
/// the promotion is withdrawn).
pub async fn discard(store: &Store, name: &str) -> anyhow::Result<bool> {
    let found = store
        .candidates()
        .await?
        .into_iter()
        .find(|c| c.name == name);
    anyhow::ensure!(
        store.discard_candidate(name).await?,
        "no candidate of {name} is installed"
    );
    if let Some(c) = found {
        println!(
            "discarded: {name} {}{}",
            c.version,
            if c.promoted_at.is_some() {
                format!(
                    "; the plugin folders' version serves again ({})",
                    c.live_version
                )
            } else {
                String::new()
            }
        );
    }
    Ok(true)
}

/// Prints the candidates with their counts over every host.
pub async fn list(store: &Store) -> anyhow::Result<()> {
    for c in store.candidates().await? {
        println!(
            "candidate  {:<20} {} sha256 {} {}, tried against {}: {} calls, {} differences, {} dropped",
            c.name,
            c.version,
            &c.sha256[..16.min(c.sha256.len())],
            if c.promoted_at.is_some() {
                "promoted"
            } else {
                "shadowing"
            },
            c.live_version,
            c.calls,
            c.differences,
            c.dropped
        );
    }
    Ok(())
}

/// Prints the candidates of the configured database, or why they cannot
/// be read (an author's checkout may have no database): the second half of
/// `outcomes plugin list`.
pub async fn list_configured(config: &Config) {
    let store =
        match Store::connect(&config.database_url, &crate::store::StoreOptions::default()).await {
            Ok(store) => store,
            Err(e) => {
                println!("candidates: the database cannot be reached: {e}");
                return;
            }
        };
    let listed = match store.migrate().await {
        Ok(()) => list(&store).await,
        Err(e) => Err(e.into()),
    };
    store.close().await;
    if let Err(e) = listed {
        println!("candidates: not read from the database: {e:#}");
    }
}
