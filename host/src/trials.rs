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
//!
//! Others may write the database (the PostgreSQL service role, whoever
//! edits or restores a backup), so a candidate row is believed only with
//! its seal ([`seal`]): a MAC under the secrets key over every field that
//! decides what serves, made by `outcomes plugin candidate|promote` after
//! the module passed the allow-list and its fixtures. A row without a
//! valid seal serves nothing, not even in the shadow.

use std::collections::HashMap;
use std::sync::Arc;

use arc_swap::ArcSwap;
use plugin_sdk::PluginKind;
use serde_json::json;

use crate::auth::at_rest::SecretsKey;
use crate::domain::time::to_millis;
use crate::plugins::{Plugin, PluginError, Plugins};
use crate::store::StoredCandidate;

/// What a candidate row's seal is made for (a MAC of another purpose never
/// checks as a seal).
const SEAL_PURPOSE: &str = "plugin_candidates v1";

/// The fields of a candidate row its seal covers: all that decide whether
/// and in place of what it serves. Not the counts, which every host adds
/// to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sealed<'a> {
    pub name: &'a str,
    pub sha256: &'a str,
    pub version: &'a str,
    pub live_sha256: &'a str,
    pub live_version: &'a str,
    /// Milliseconds since the epoch, as stored.
    pub installed_at: i64,
    pub fixtures_passed: i64,
    /// Milliseconds since the epoch, as stored; None while shadowing.
    pub promoted_at: Option<i64>,
}

impl<'a> Sealed<'a> {
    /// The sealed fields of a stored row; None when it has no count of
    /// fixtures passed (a row older than seals).
    pub fn of(c: &'a StoredCandidate) -> Option<Sealed<'a>> {
        Some(Sealed {
            name: &c.name,
            sha256: &c.sha256,
            version: &c.version,
            live_sha256: &c.live_sha256,
            live_version: &c.live_version,
            installed_at: to_millis(c.installed_at),
            fixtures_passed: c.fixtures_passed?,
            promoted_at: c.promoted_at.map(to_millis),
        })
    }

    /// The bytes the MAC is over: a JSON array, so no field can run into
    /// the next.
    fn message(&self) -> Vec<u8> {
        json!([
            self.name,
            self.sha256,
            self.version,
            self.live_sha256,
            self.live_version,
            self.installed_at,
            self.fixtures_passed,
            self.promoted_at,
        ])
        .to_string()
        .into_bytes()
    }
}

/// The seal of a candidate row with these fields.
pub fn seal(key: &SecretsKey, fields: &Sealed<'_>) -> String {
    key.mac(SEAL_PURPOSE, &fields.message())
}

/// Whether the stored row `c` carries the seal of its fields.
pub fn is_sealed(key: &SecretsKey, c: &StoredCandidate) -> bool {
    match (Sealed::of(c), &c.seal) {
        (Some(fields), Some(tag)) => key.mac_matches(SEAL_PURPOSE, &fields.message(), tag),
        _ => false,
    }
}

/// Why a candidate row whose seal does not check serves nothing.
pub const UNSEALED: &str = "its row does not carry a valid seal of this service's secrets key: \
     written by other means than `outcomes plugin candidate|promote` (or before seals existed); \
     install it again with `outcomes plugin candidate`";

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
    /// By plugin name: why its candidate row serves nothing (unsealed, not
    /// in `plugin_allow`, the module missing or refused).
    pub refused: HashMap<String, String>,
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

    /// Why the candidate row of `name` serves nothing, if it does not.
    pub fn refusal(&self, name: &str) -> Option<String> {
        self.current.load().refused.get(name).cloned()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> SecretsKey {
        let dir = tempfile::tempdir().expect("a folder");
        let path = dir.path().join("secrets.key");
        std::fs::write(&path, hex::encode([byte; 32])).expect("key written");
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        SecretsKey::load(&path).expect("the key")
    }

    fn row(seal: Option<String>) -> StoredCandidate {
        StoredCandidate {
            name: "phq9".into(),
            sha256: "c".repeat(64),
            version: "1.3.0".into(),
            live_sha256: "l".repeat(64),
            live_version: "1.2.0".into(),
            installed_at: crate::domain::time::from_millis(1_700_000_000_000),
            calls: 0,
            dropped: 0,
            differences: 0,
            promoted_at: None,
            fixtures_passed: Some(4),
            seal,
        }
    }

    #[test]
    fn a_seal_checks_for_the_row_it_was_made_for_under_its_key_only() {
        let key = key(1);
        let mut c = row(None);
        assert!(!is_sealed(&key, &c), "no seal");
        c.seal = Some(seal(&key, &Sealed::of(&c).expect("fields")));
        assert!(is_sealed(&key, &c));
        assert!(!is_sealed(&self::key(2), &c), "another key");
        // Counts are not sealed: hosts add to them.
        c.calls = 10;
        c.differences = 3;
        assert!(is_sealed(&key, &c));
        // Every field that decides what serves is.
        let changes: [fn(&mut StoredCandidate); 8] = [
            |c| c.name = "gad7".into(),
            |c| c.sha256 = "e".repeat(64),
            |c| c.version = "1.3.1".into(),
            |c| c.live_sha256 = "m".repeat(64),
            |c| c.live_version = "1.2.1".into(),
            |c| c.installed_at += chrono::Duration::milliseconds(1),
            |c| c.fixtures_passed = Some(5),
            |c| c.promoted_at = Some(c.installed_at),
        ];
        for change in changes {
            let mut changed = c.clone();
            change(&mut changed);
            assert!(!is_sealed(&key, &changed), "{changed:?}");
        }
        // A row older than seals has no fixture count: never sealed.
        let mut old = c.clone();
        old.fixtures_passed = None;
        assert!(!is_sealed(&key, &old));
    }

    #[test]
    fn a_promoted_row_needs_the_seal_of_its_promotion() {
        let key = key(1);
        let mut c = row(None);
        c.seal = Some(seal(&key, &Sealed::of(&c).expect("fields")));
        let shadowing = c.seal.clone();
        c.promoted_at = Some(c.installed_at + chrono::Duration::minutes(5));
        assert!(
            !is_sealed(&key, &c),
            "the candidate's seal does not promote"
        );
        c.seal = Some(seal(&key, &Sealed::of(&c).expect("fields")));
        assert!(is_sealed(&key, &c));
        assert_ne!(c.seal, shadowing);
    }
}
