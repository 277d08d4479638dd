//! The plugins that serve, by kind and name, and what became of every
//! plugin folder. A registry is immutable: reloading builds a new one
//! ([`Reload`], folder by folder) and swaps it in whole (`Plugins::reload`),
//! so a request sees one consistent set and calls in flight finish on the
//! version they started with. Reads no files and loads no modules: it is
//! told what each folder's module came to.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use plugin_sdk::PluginKind;
use serde::Serialize;

use super::engine::Compiled;
use super::module::Plugin;
use crate::metrics::Metrics;

/// The serving set.
#[derive(Debug, Default)]
pub struct Registry {
    pub(super) plugins: HashMap<(PluginKind, String), Arc<Plugin>>,
    pub(super) statuses: BTreeMap<String, PluginStatus>,
    /// Increases with every reload that changed something.
    pub generation: u64,
}

impl Registry {
    /// The plugin of `kind` named `name`.
    pub fn get(&self, kind: PluginKind, name: &str) -> Option<&Arc<Plugin>> {
        self.plugins.get(&(kind, name.to_owned()))
    }

    /// Every plugin folder's status, by folder name.
    pub fn statuses(&self) -> Vec<PluginStatus> {
        self.statuses.values().cloned().collect()
    }

    /// The serving plugins.
    pub fn plugins(&self) -> impl Iterator<Item = &Arc<Plugin>> {
        self.plugins.values()
    }
}

/// What an operator sees of one plugin folder (`outcomes plugin list`,
/// `GET /api/v1/plugins`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PluginStatus {
    /// Folder under the plugin directory.
    pub folder: String,
    /// `serving`: the folder's module serves. `failed`: the folder's module
    /// was refused; `serving` below says whether an older version still
    /// serves.
    pub state: &'static str,
    /// The version that serves, if any.
    pub serving: Option<Serving>,
    /// Why the folder's current module was refused.
    pub error: Option<String>,
    /// SHA-256 of the refused module.
    pub refused_sha256: Option<String>,
}

/// A serving plugin version.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Serving {
    pub name: String,
    pub kind: PluginKind,
    pub version: String,
    pub sha256: String,
    /// Fixtures it passed when it was loaded (0: it ships none).
    pub fixtures_passed: usize,
    /// Whether its compiled code came from the artifact cache.
    pub from_cache: bool,
    /// When it was loaded, RFC 3339.
    pub loaded_at: String,
}

impl Serving {
    pub fn of(plugin: &Plugin, fixtures_passed: usize, loaded_at: DateTime<Utc>) -> Serving {
        Serving {
            name: plugin.name().to_owned(),
            kind: plugin.kind(),
            version: plugin.version().to_owned(),
            sha256: plugin.sha256.clone(),
            fixtures_passed,
            from_cache: plugin.compiled == Compiled::Cached,
            loaded_at: loaded_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        }
    }
}

/// What one reload did.
#[derive(Debug, Default, Clone)]
pub struct ReloadReport {
    /// Every plugin version (re)loaded.
    pub loaded: Vec<Arc<Plugin>>,
    /// Folder and reason of every module refused.
    pub failed: Vec<(String, String)>,
    /// Folders removed from the serving set.
    pub removed: Vec<String>,
}

impl ReloadReport {
    pub fn changed(&self) -> bool {
        !self.loaded.is_empty() || !self.failed.is_empty() || !self.removed.is_empty()
    }
}

/// One reload's bookkeeping: told what became of each plugin folder, it
/// builds the folder statuses, the report and the next serving set, in
/// which a folder whose new module is refused keeps its previous version.
#[derive(Debug)]
pub struct Reload<'a> {
    /// Each folder's plugin as the last reload left it.
    previous: &'a HashMap<String, Arc<Plugin>>,
    /// The serving registry's generation.
    generation: u64,
    statuses: BTreeMap<String, PluginStatus>,
    report: ReloadReport,
    next: HashMap<String, Arc<Plugin>>,
    metrics: &'a Metrics,
}

/// What a reload built.
#[derive(Debug)]
pub struct Reloaded {
    /// The registry to serve, when anything changed (or nothing served yet).
    pub registry: Option<Registry>,
    /// Each folder's plugin, for the next reload.
    pub by_folder: HashMap<String, Arc<Plugin>>,
    pub report: ReloadReport,
}

impl<'a> Reload<'a> {
    /// A reload from `serving`, whose plugins came from the folders of
    /// `previous`.
    pub fn new(
        serving: &Registry,
        previous: &'a HashMap<String, Arc<Plugin>>,
        metrics: &'a Metrics,
    ) -> Reload<'a> {
        Reload {
            previous,
            generation: serving.generation,
            statuses: serving.statuses.clone(),
            report: ReloadReport::default(),
            next: HashMap::new(),
            metrics,
        }
    }

    /// Keeps what serves from `folder` when its module, whose SHA-256 is
    /// `sha256`, is the one serving or one refused before and unchanged
    /// since; says whether it did (if not, the module is to be loaded).
    pub fn keeps(&mut self, folder: &str, sha256: &str) -> bool {
        let previous = self.previous.get(folder);
        let refused_before = self
            .statuses
            .get(folder)
            .and_then(|s| s.refused_sha256.as_deref())
            == Some(sha256);
        if previous.is_some_and(|p| p.sha256 == sha256) || refused_before {
            if let Some(p) = previous {
                self.next.insert(folder.to_owned(), p.clone());
            }
            return true;
        }
        false
    }

    /// `plugin`, loaded from `folder` and self-tested with
    /// `fixtures_passed` fixtures, serves from now on, unless another
    /// folder already serves a plugin of its kind and name.
    pub fn serve(
        &mut self,
        folder: &str,
        plugin: Plugin,
        fixtures_passed: usize,
        now: DateTime<Utc>,
    ) {
        let taken = self
            .next
            .iter()
            .find(|(f, p)| *f != folder && p.kind() == plugin.kind() && p.name() == plugin.name());
        if let Some((other, _)) = taken {
            let why = format!(
                "{} {} is already served from folder {other}",
                plugin.kind(),
                plugin.name()
            );
            return self.refuse(folder, Some(plugin.sha256.clone()), why);
        }
        tracing::info!(folder, plugin = plugin.name(), version = plugin.version(), sha256 = %plugin.sha256, fixtures = fixtures_passed, "plugin loaded");
        self.metrics.inc(
            "outcomes_plugin_reloads_total",
            &[("folder", folder), ("result", "loaded")],
        );
        let plugin = Arc::new(plugin);
        self.report.loaded.push(plugin.clone());
        self.statuses.insert(
            folder.to_owned(),
            PluginStatus {
                folder: folder.to_owned(),
                state: "serving",
                serving: Some(Serving::of(&plugin, fixtures_passed, now)),
                error: None,
                refused_sha256: None,
            },
        );
        self.next.insert(folder.to_owned(), plugin);
    }

    /// `folder`'s module (whose SHA-256 is `sha256`, when it could be read)
    /// was refused for `why`; its previous version, if any, keeps serving.
    pub fn refuse(&mut self, folder: &str, sha256: Option<String>, why: String) {
        let previous = self.previous.get(folder);
        tracing::error!(folder, error = %why, keeps_serving = previous.map(|p| p.version()), "plugin refused");
        self.metrics.inc(
            "outcomes_plugin_reloads_total",
            &[("folder", folder), ("result", "failed")],
        );
        self.report.failed.push((folder.to_owned(), why.clone()));
        let serving = self
            .statuses
            .get(folder)
            .and_then(|s| s.serving.clone())
            .filter(|_| previous.is_some());
        self.statuses.insert(
            folder.to_owned(),
            PluginStatus {
                folder: folder.to_owned(),
                state: "failed",
                serving,
                error: Some(why),
                refused_sha256: sha256,
            },
        );
        if let Some(p) = previous {
            self.next.insert(folder.to_owned(), p.clone());
        }
    }

    /// Ends the reload: folders not in `present` are gone, and a new
    /// registry is built when anything changed.
    pub fn finish(mut self, present: &[&str]) -> Reloaded {
        for folder in self
            .previous
            .keys()
            .filter(|f| !present.contains(&f.as_str()))
        {
            tracing::info!(folder, "plugin folder removed; its plugin no longer serves");
            self.report.removed.push(folder.clone());
        }
        self.statuses.retain(|f, _| present.contains(&f.as_str()));
        let registry = (self.report.changed() || self.generation == 0).then(|| Registry {
            plugins: self
                .next
                .values()
                .map(|p| ((p.kind(), p.name().to_owned()), p.clone()))
                .collect(),
            statuses: self.statuses,
            generation: self.generation + 1,
        });
        Reloaded {
            registry,
            by_folder: self.next,
            report: self.report,
        }
    }
}
