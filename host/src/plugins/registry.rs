//! The plugins that serve, by kind and name, and what became of every
//! plugin folder. A registry is immutable: reloading builds a new one and
//! swaps it in whole (`Plugins::reload`), so a request sees one consistent
//! set and calls in flight finish on the version they started with.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use plugin_sdk::PluginKind;
use serde::Serialize;

use super::cache::Compiled;
use super::module::Plugin;

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
