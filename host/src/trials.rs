//! Scorer versions on trial
//! (docs/operations.md#verifying-outcomes-and-trying-a-new-scorer): which
//! version of a scorer serves (the plugin folder's, or a candidate
//! promoted in its place) and which candidate scores in its shadow.
//!
//! Owns the promote policy, between the plugin runtime (which only loads
//! and calls modules) and scoring (which asks here which version to call).
//! The versions are set by the shadow (`shadow/`), which reads them from
//! the database; this file reads no database, calls no plugin and knows
//! nothing of requests.

use std::collections::HashMap;
use std::sync::Arc;

use arc_swap::ArcSwap;
use plugin_sdk::PluginKind;

use crate::plugins::{Plugin, PluginError, Plugins};

/// The scorer versions on trial: candidates that score in the shadow of
/// the serving version, and promoted candidates that serve in its place.
#[derive(Debug, Default)]
pub struct OnTrial {
    /// By plugin name.
    pub candidates: HashMap<String, Arc<Plugin>>,
    /// By plugin name: the promoted version and the SHA-256 of the folder
    /// version it replaces. It serves only while that version is the one
    /// the folder serves: a newer module put in the folder wins.
    pub promoted: HashMap<String, (String, Arc<Plugin>)>,
}

/// The plugin runtime seen through the trials: the version that serves a
/// name, and the candidate of a scorer.
pub struct Trials {
    plugins: Arc<Plugins>,
    /// As the database last said; empty unless an operator installed a
    /// candidate.
    current: ArcSwap<OnTrial>,
}

impl std::fmt::Debug for Trials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trials")
            .field("current", &self.current.load())
            .finish_non_exhaustive()
    }
}

impl Trials {
    /// Nothing on trial: every name served by its folder's version.
    pub fn new(plugins: Arc<Plugins>) -> Trials {
        Trials {
            plugins,
            current: ArcSwap::from_pointee(OnTrial::default()),
        }
    }

    /// The plugin runtime.
    pub fn plugins(&self) -> &Arc<Plugins> {
        &self.plugins
    }

    /// The serving plugin of `kind` named `name`: the plugin folder's
    /// version, or a candidate promoted in its place.
    pub fn serving(&self, kind: PluginKind, name: &str) -> Result<Arc<Plugin>, PluginError> {
        let live = self.plugins.get(kind, name)?;
        let current = self.current.load();
        match current.promoted.get(name) {
            Some((replaces, promoted)) if *replaces == live.sha256 && promoted.kind() == kind => {
                Ok(promoted.clone())
            }
            _ => Ok(live),
        }
    }

    /// The candidate version of the scorer `name`, if one is installed.
    pub fn candidate(&self, name: &str) -> Option<Arc<Plugin>> {
        let current = self.current.load();
        if current.candidates.is_empty() {
            return None;
        }
        current.candidates.get(name).cloned()
    }

    /// The versions on trial.
    pub fn on_trial(&self) -> Arc<OnTrial> {
        self.current.load_full()
    }

    /// Replaces the versions on trial (`shadow/` reads them from the
    /// database).
    pub fn set(&self, on_trial: OnTrial) {
        self.current.store(Arc::new(on_trial));
    }
}
