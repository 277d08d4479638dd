//! `outcomes plugin candidate|promote|discard`, and the candidates part of
//! `outcomes plugin list`: trying a new scorer version on real responses
//! before it serves (docs/operations.md#verifying-outcomes-and-trying-a-new-scorer).
//! Candidates are kept in the database, so every host sharing it shadows
//! with them and a promotion switches every host. What these commands
//! write is sealed with the service's secrets key (`trials::seal`), after
//! the module passed `plugin_allow` and its fixtures: hosts believe no
//! other row.
#![allow(
    clippy::print_stdout,
    reason = "the commands report on standard output"
)]

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use chrono::Utc;
use plugin_sdk::PluginKind;

use crate::auth::at_rest::SecretsKey;
use crate::config::Config;
use crate::domain::questionnaire::sha256_hex;
use crate::domain::time::to_millis;
use crate::metrics::Metrics;
use crate::plugins::{Plugins, selftest};
use crate::store::{ArchivedModule, NewCandidate, Store, StoredCandidate};
use crate::trials::{self, Sealed};
use crate::verify::differences;

/// Differences a refused promotion prints.
const SHOWN: i64 = 20;

/// The secrets key of the service, which seals what these commands write;
/// never made here: a key the hosts do not have would seal nothing they
/// believe.
fn secrets_key(config: &Config) -> anyhow::Result<SecretsKey> {
    SecretsKey::load(&config.secrets_key_file).with_context(|| {
        "reading the secrets key that seals candidate versions: run this command as the \
         service's user, with the service's settings (secrets_key_file)"
    })
}

/// Installs the module at `module` as the candidate of the scorer `name`,
/// tried against the version the plugin folder serves. `Ok(false)` when
/// the module is refused: not in `plugin_allow`, not loadable, or failing
/// its fixtures.
pub async fn install(
    store: &Store,
    config: &Config,
    name: &str,
    module: &Path,
) -> anyhow::Result<bool> {
    let key = secrets_key(config)?;
    let bytes = std::fs::read(module).with_context(|| format!("reading {}", module.display()))?;
    let sha = sha256_hex(&bytes);
    if !config.plugins.allows(&sha) {
        // Refused before it is compiled or run, as a folder's would be.
        println!(
            "REFUSED  {}: {}",
            module.display(),
            Plugins::not_allowed(&sha)
        );
        return Ok(false);
    }
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
    if let Some(promoted) = store.candidates().await?.into_iter().find(|c| {
        c.name == name
            && c.promoted_at.is_some()
            && c.live_sha256 == live.sha256
            && trials::is_sealed(&key, c)
    }) {
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
    let fixtures_passed = i64::try_from(passed).unwrap_or(i64::MAX);
    let seal = trials::seal(
        &key,
        &Sealed {
            name,
            sha256: &candidate.sha256,
            version: candidate.version(),
            live_sha256: &live.sha256,
            live_version: live.version(),
            installed_at: to_millis(now),
            fixtures_passed,
            promoted_at: None,
        },
    );
    store
        .install_candidate(
            NewCandidate {
                name: name.to_owned(),
                sha256: candidate.sha256.clone(),
                version: candidate.version().to_owned(),
                live_sha256: live.sha256.clone(),
                live_version: live.version().to_owned(),
                fixtures_passed,
                seal,
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
/// `accept_differences`; refused (an error) when its row is not sealed
/// with the service's key or `plugin_allow` does not name it.
pub async fn promote(
    store: &Store,
    config: &Config,
    name: &str,
    accept_differences: bool,
) -> anyhow::Result<bool> {
    let key = secrets_key(config)?;
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
    // Promoting seals the row anew: never a row this command did not seal.
    let Some(sealed) = c.seal.as_deref().filter(|_| trials::is_sealed(&key, &c)) else {
        anyhow::bail!(
            "not promoted: the candidate of {name}: {}",
            trials::UNSEALED
        );
    };
    anyhow::ensure!(
        config.plugins.allows(&c.sha256),
        "not promoted: the candidate of {name}: {}",
        Plugins::not_allowed(&c.sha256)
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
    let now = Utc::now();
    let promoted = StoredCandidate {
        promoted_at: Some(now),
        ..c.clone()
    };
    let fields = Sealed::of(&promoted).context("a sealed row has its fixture count")?;
    let seal = trials::seal(&key, &fields);
    anyhow::ensure!(
        store.promote_candidate(name, sealed, seal, now).await?,
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

/// Prints the candidates with their counts over every host; a row whose
/// seal does not check under `key`, or whose module `plugin_allow` does
/// not name, as `REFUSED` with why (hosts use neither). Without a key the
/// seals are not checked, and the listing says so.
pub async fn list(
    store: &Store,
    key: Result<&SecretsKey, String>,
    config: &Config,
) -> anyhow::Result<()> {
    let candidates = store.candidates().await?;
    for c in &candidates {
        let refused = match &key {
            Ok(key) if !trials::is_sealed(key, c) => Some(trials::UNSEALED.to_owned()),
            _ if !config.plugins.allows(&c.sha256) => Some(Plugins::not_allowed(&c.sha256)),
            _ => None,
        };
        let state = match (&refused, c.promoted_at) {
            (Some(_), _) => "REFUSED",
            (None, Some(_)) => "promoted",
            (None, None) => "shadowing",
        };
        println!(
            "candidate  {:<20} {} sha256 {} {state}, tried against {}: {} calls, {} differences, {} dropped",
            c.name,
            c.version,
            &c.sha256[..16.min(c.sha256.len())],
            c.live_version,
            c.calls,
            c.differences,
            c.dropped
        );
        if let Some(why) = refused {
            println!("           serves nothing: {why}");
        }
    }
    if let (Err(why), false) = (&key, candidates.is_empty()) {
        println!("candidates: seals not checked: {why}");
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
    let key = SecretsKey::load(&config.secrets_key_file).map_err(|e| e.to_string());
    let listed = match store.migrate().await {
        Ok(()) => list(&store, key.as_ref().map_err(Clone::clone), config).await,
        Err(e) => Err(e.into()),
    };
    store.close().await;
    if let Err(e) = listed {
        println!("candidates: not read from the database: {e:#}");
    }
}
