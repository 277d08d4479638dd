//! The plugins that serve, by kind and name, and what became of every
//! plugin folder. A registry is immutable: reloading builds a new one
//! ([`Reload`], folder by folder) and swaps it in whole (`Plugins::reload`),
//! so a request sees one consistent set and calls in flight finish on the
//! version they started with. Reads no files and loads no modules: it is
//! told what each folder's module came to.
//!
//! Two folders serving one kind and name are both refused, whatever their
//! order or which came first: neither serves until one is removed or
//! renamed (docs/operations.md#plugins).

use std::collections::{BTreeMap, BTreeSet, HashMap};
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
    /// Refused only because another folder serves the same kind and name;
    /// it serves again once that is no longer so.
    #[serde(skip)]
    pub conflict: bool,
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

/// A folder's plugin as a reload left it, with what it serves as.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub plugin: Arc<Plugin>,
    pub serving: Serving,
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
    previous: &'a HashMap<String, Loaded>,
    /// The serving registry's generation.
    generation: u64,
    statuses: BTreeMap<String, PluginStatus>,
    report: ReloadReport,
    next: HashMap<String, Loaded>,
    metrics: &'a Metrics,
}

/// What a reload built.
#[derive(Debug)]
pub struct Reloaded {
    /// The registry to serve, when anything changed (or nothing served yet).
    pub registry: Option<Registry>,
    /// Each folder's plugin, for the next reload (a folder refused for a
    /// name another folder serves too keeps its plugin here).
    pub by_folder: HashMap<String, Loaded>,
    pub report: ReloadReport,
}

impl<'a> Reload<'a> {
    /// A reload from `serving`, whose plugins came from the folders of
    /// `previous`.
    pub fn new(
        serving: &Registry,
        previous: &'a HashMap<String, Loaded>,
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
        if previous.is_some_and(|p| p.plugin.sha256 == sha256) || refused_before {
            if let Some(p) = previous {
                self.next.insert(folder.to_owned(), p.clone());
            }
            return true;
        }
        false
    }

    /// `plugin`, loaded from `folder` and self-tested with
    /// `fixtures_passed` fixtures, serves from now on, unless another
    /// folder serves a plugin of its kind and name too (see `finish`).
    pub fn serve(
        &mut self,
        folder: &str,
        plugin: Plugin,
        fixtures_passed: usize,
        now: DateTime<Utc>,
    ) {
        tracing::info!(folder, plugin = plugin.name(), version = plugin.version(), sha256 = %plugin.sha256, fixtures = fixtures_passed, "plugin loaded");
        self.metrics.inc(
            "outcomes_plugin_reloads_total",
            &[("folder", folder), ("result", "loaded")],
        );
        let plugin = Arc::new(plugin);
        let serving = Serving::of(&plugin, fixtures_passed, now);
        self.report.loaded.push(plugin.clone());
        self.statuses.insert(
            folder.to_owned(),
            PluginStatus {
                folder: folder.to_owned(),
                state: "serving",
                serving: Some(serving.clone()),
                error: None,
                refused_sha256: None,
                conflict: false,
            },
        );
        self.next
            .insert(folder.to_owned(), Loaded { plugin, serving });
    }

    /// `folder`'s module (whose SHA-256 is `sha256`, when it could be read)
    /// was refused for `why`; its previous version, if any, keeps serving.
    pub fn refuse(&mut self, folder: &str, sha256: Option<String>, why: String) {
        let previous = self.previous.get(folder);
        tracing::error!(folder, error = %why, keeps_serving = previous.map(|p| p.plugin.version()), "plugin refused");
        self.metrics.inc(
            "outcomes_plugin_reloads_total",
            &[("folder", folder), ("result", "failed")],
        );
        self.report.failed.push((folder.to_owned(), why.clone()));
        self.statuses.insert(
            folder.to_owned(),
            PluginStatus {
                folder: folder.to_owned(),
                state: "failed",
                serving: previous.map(|p| p.serving.clone()),
                error: Some(why),
                refused_sha256: sha256,
                conflict: false,
            },
        );
        if let Some(p) = previous {
            self.next.insert(folder.to_owned(), p.clone());
        }
    }

    /// Ends the reload: folders not in `present` are gone; folders that
    /// would serve the same kind and name are all refused; a new registry
    /// is built when anything changed.
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
        let conflicting = self.settle_conflicts();
        let registry = (self.report.changed() || self.generation == 0).then(|| Registry {
            plugins: self
                .next
                .iter()
                .filter(|(folder, _)| !conflicting.contains(folder.as_str()))
                .map(|(_, l)| {
                    (
                        (l.plugin.kind(), l.plugin.name().to_owned()),
                        l.plugin.clone(),
                    )
                })
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

    /// Refuses every folder whose plugin has the kind and name of another
    /// folder's, each status naming the others, and lets a folder refused
    /// so before serve again once it is alone. Answers the refused folders.
    fn settle_conflicts(&mut self) -> BTreeSet<String> {
        let mut by_name: BTreeMap<(String, String), BTreeSet<&str>> = BTreeMap::new();
        for (folder, l) in &self.next {
            let key = (l.plugin.kind().to_string(), l.plugin.name().to_owned());
            by_name.entry(key).or_default().insert(folder.as_str());
        }
        let mut conflicting = BTreeSet::new();
        for ((kind, name), folders) in by_name.iter().filter(|(_, f)| f.len() > 1) {
            for folder in folders {
                let others: Vec<&str> = folders.iter().copied().filter(|f| f != folder).collect();
                let why = format!(
                    "{kind} {name} is also served from folder {}: two folders cannot serve one \
                     name, so neither serves; remove or rename one",
                    others.join(", ")
                );
                let status = PluginStatus {
                    folder: (*folder).to_owned(),
                    state: "failed",
                    serving: None,
                    error: Some(why.clone()),
                    refused_sha256: Some(self.next[*folder].plugin.sha256.clone()),
                    conflict: true,
                };
                if self.statuses.get(*folder) != Some(&status) {
                    tracing::error!(folder, error = %why, "plugin refused");
                    self.metrics.inc(
                        "outcomes_plugin_reloads_total",
                        &[("folder", folder), ("result", "failed")],
                    );
                    self.report.failed.push(((*folder).to_owned(), why));
                }
                self.statuses.insert((*folder).to_owned(), status);
                conflicting.insert((*folder).to_owned());
            }
        }
        self.report.loaded.retain(|p| {
            by_name
                .get(&(p.kind().to_string(), p.name().to_owned()))
                .is_none_or(|f| f.len() == 1)
        });
        for (folder, l) in &self.next {
            let alone = !conflicting.contains(folder);
            if alone && self.statuses.get(folder).is_some_and(|s| s.conflict) {
                tracing::info!(
                    folder,
                    plugin = l.plugin.name(),
                    "no other folder serves this plugin now; it serves"
                );
                self.statuses.insert(
                    folder.clone(),
                    PluginStatus {
                        folder: folder.clone(),
                        state: "serving",
                        serving: Some(l.serving.clone()),
                        error: None,
                        refused_sha256: None,
                        conflict: false,
                    },
                );
            }
        }
        conflicting
    }
}
