//! Verifying stored outcomes: each is recomputed with the module version
//! that computed it (archived by hash, `plugin_modules`) and the
//! questionnaire definition version it was scored with (archived by hash,
//! `questionnaire_versions`), on the input rebuilt from the stored
//! response, and compared with the stored outcome byte for byte
//! (docs/operations.md#verifying-outcomes-and-trying-a-new-scorer). The
//! rebuilt input is itself checked against the hash recorded when the
//! outcome was computed, so a verification never compares against a guess.
//! `outcomes verify` and `GET .../responses/:id/verification` share it.
//! Reads only; writes nothing. A module version on trial or serving
//! (`trials.rs`) is used as loaded rather than compiled again.

use std::collections::HashMap;
use std::sync::Arc;

use plugin_sdk::PluginKind;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::domain::questionnaire::{self, Questionnaire, sha256_hex};
use crate::domain::response::Response;
use crate::domain::variant::Variant;
use crate::metrics::Metrics;
use crate::plugins::Plugin;
use crate::scoring::{ScoringContext, score_with};
use crate::store::{Store, StoreError};
use crate::trials::Trials;

/// Why an outcome did not verify. The codes are stable (the API sends
/// them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The response is not completed: it has no outcome to verify.
    NotCompleted,
    /// Scored before outcomes recorded their definition and input hashes.
    NotRecorded,
    /// No module computed it (the scorer was not loaded).
    NoModule,
    /// No module with the recorded hash is archived.
    ModuleMissing,
    /// The archived module's bytes no longer hash to the recorded hash.
    ModuleHashMismatch,
    /// The archived module no longer loads in this host.
    ModuleRefused,
    /// No definition with the recorded hash is archived.
    DefinitionMissing,
    /// The archived definition's text no longer hashes to the recorded hash.
    DefinitionHashMismatch,
    /// The archived definition no longer parses.
    DefinitionInvalid,
    /// The input rebuilt from the stored response does not hash to the
    /// recorded input hash.
    InputDiffers,
    /// The recomputed outcome differs from the stored one.
    OutcomeDiffers,
}

impl Reason {
    pub fn code(self) -> &'static str {
        match self {
            Reason::NotCompleted => "not_completed",
            Reason::NotRecorded => "not_recorded",
            Reason::NoModule => "no_module",
            Reason::ModuleMissing => "module_missing",
            Reason::ModuleHashMismatch => "module_hash_mismatch",
            Reason::ModuleRefused => "module_refused",
            Reason::DefinitionMissing => "definition_missing",
            Reason::DefinitionHashMismatch => "definition_hash_mismatch",
            Reason::DefinitionInvalid => "definition_invalid",
            Reason::InputDiffers => "input_differs",
            Reason::OutcomeDiffers => "outcome_differs",
        }
    }
}

/// One field of an outcome that differs: its path (`scores.total.value`;
/// array elements by index) and both values (null where absent).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct FieldDifference {
    pub path: String,
    #[schema(value_type = Object)]
    pub stored: Value,
    #[schema(value_type = Object)]
    pub recomputed: Value,
}

/// What verifying one stored outcome found.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Verification {
    /// The response's id.
    pub response_id: i64,
    /// Whether recomputing gave the stored outcome byte for byte.
    pub identical: bool,
    /// Why not (empty when identical).
    pub reasons: Vec<Reason>,
    /// The scorer that computed the stored outcome.
    pub plugin: Option<String>,
    pub version: Option<String>,
    /// SHA-256 of its module.
    pub module_sha256: Option<String>,
    /// The plugin ABI version it declared.
    pub abi_version: Option<i64>,
    /// SHA-256 of the questionnaire definition it was scored with.
    pub definition_sha256: Option<String>,
    /// SHA-256 of the exact input the scorer read.
    pub input_sha256: Option<String>,
    /// The stored outcome, when it differs from the recomputed one.
    #[schema(value_type = Option<Object>)]
    pub stored_outcome: Option<Value>,
    /// The recomputed outcome, when it differs from the stored one.
    #[schema(value_type = Option<Object>)]
    pub recomputed_outcome: Option<Value>,
    /// The fields that differ.
    pub differences: Vec<FieldDifference>,
}

impl Verification {
    fn of(response: &Response) -> Verification {
        let p = &response.provenance;
        Verification {
            response_id: response.id.0,
            identical: false,
            reasons: Vec::new(),
            plugin: p.plugin.clone(),
            version: p.version.clone(),
            module_sha256: p.sha256.clone(),
            abi_version: p.abi_version,
            definition_sha256: p.definition_sha256.clone(),
            input_sha256: p.input_sha256.clone(),
            stored_outcome: None,
            recomputed_outcome: None,
            differences: Vec::new(),
        }
    }

    fn refused(mut self, reason: Reason) -> Verification {
        self.reasons.push(reason);
        self
    }
}

/// Verifies outcomes, keeping each module and definition version it loads
/// for the next.
pub struct Verifier {
    store: Store,
    /// The runtime, and the versions on trial (a candidate's module is
    /// used as it is loaded rather than compiled again).
    trials: Arc<Trials>,
    /// Scoring failures met while recomputing are not the service's: they
    /// are counted here, apart from its metrics.
    metrics: Metrics,
    modules: HashMap<String, Result<Arc<Plugin>, Reason>>,
    definitions: HashMap<String, Result<Arc<Questionnaire>, Reason>>,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("modules", &self.modules.len())
            .finish_non_exhaustive()
    }
}

impl Verifier {
    pub fn new(store: Store, trials: Arc<Trials>) -> Verifier {
        Verifier {
            store,
            trials,
            metrics: Metrics::default(),
            modules: HashMap::new(),
            definitions: HashMap::new(),
        }
    }

    /// Verifies the stored outcome of `response`, `stored` being its text
    /// as stored.
    pub async fn verify(
        &mut self,
        response: &Response,
        stored: Option<&str>,
    ) -> Result<Verification, StoreError> {
        let result = Verification::of(response);
        let (Some(completed_at), Some(stored)) = (response.times.completed_at, stored) else {
            return Ok(result.refused(Reason::NotCompleted));
        };
        let p = &response.provenance;
        let Some(module_sha) = &p.sha256 else {
            return Ok(result.refused(Reason::NoModule));
        };
        let (Some(definition_sha), Some(input_sha)) = (&p.definition_sha256, &p.input_sha256)
        else {
            return Ok(result.refused(Reason::NotRecorded));
        };
        let plugin = match self.module(module_sha).await? {
            Ok(plugin) => plugin,
            Err(reason) => return Ok(result.refused(reason)),
        };
        let q = match self
            .definition(definition_sha, &response.questionnaire_key)
            .await?
        {
            Ok(q) => q,
            Err(reason) => return Ok(result.refused(reason)),
        };
        let variant = Variant::from_stored(&response.flags, &response.textvars);
        let ctx = ScoringContext {
            completed_at,
            professional: response.completer_type == "profess",
            variant: &variant,
        };
        let answers = response.answers.typed(&q, &variant);
        let (outcome, provenance) = score_with(&self.metrics, &plugin, &q, &answers, ctx);
        let mut result = result;
        if provenance.input_sha256.as_deref() != Some(input_sha.as_str()) {
            result.reasons.push(Reason::InputDiffers);
        }
        let recomputed = serde_json::to_string(&outcome).map_err(|e| {
            StoreError::Corrupt(format!("outcome of response {}: {e}", response.id.0))
        })?;
        if recomputed != stored {
            result.reasons.push(Reason::OutcomeDiffers);
            let stored_value =
                serde_json::from_str(stored).unwrap_or_else(|_| Value::String(stored.to_owned()));
            let recomputed_value = serde_json::to_value(&outcome).unwrap_or(Value::Null);
            result.differences = differences(&stored_value, &recomputed_value);
            result.stored_outcome = Some(stored_value);
            result.recomputed_outcome = Some(recomputed_value);
        }
        result.identical = result.reasons.is_empty();
        Ok(result)
    }

    /// The module with hash `sha`: from the archive, its bytes checked
    /// against the hash; the serving version itself when it is that one
    /// (the same bytes, so no second compile).
    async fn module(&mut self, sha: &str) -> Result<Result<Arc<Plugin>, Reason>, StoreError> {
        if let Some(found) = self.modules.get(sha) {
            return Ok(found.clone());
        }
        let found = match self.store.archived_module(sha).await? {
            None => Err(Reason::ModuleMissing),
            Some(bytes) if sha256_hex(&bytes) != sha => Err(Reason::ModuleHashMismatch),
            Some(bytes) => match self.serving(sha) {
                Some(plugin) => Ok(plugin),
                None => {
                    let plugins = self.trials.plugins().clone();
                    tokio::task::spawn_blocking(move || plugins.load_module(&bytes))
                        .await
                        .ok()
                        .and_then(Result::ok)
                        .map(Arc::new)
                        .ok_or(Reason::ModuleRefused)
                }
            },
        };
        self.modules.insert(sha.to_owned(), found.clone());
        Ok(found)
    }

    fn serving(&self, sha: &str) -> Option<Arc<Plugin>> {
        let registry = self.trials.plugins().registry();
        let trials = self.trials.on_trial();
        registry
            .plugins()
            .chain(trials.candidates.values())
            .chain(trials.promoted.values().map(|(_, p)| p))
            .find(|p| p.sha256 == sha && p.kind() == PluginKind::Scorer)
            .cloned()
    }

    /// The definition version with hash `sha`, from the archive, its text
    /// checked against the hash.
    async fn definition(
        &mut self,
        sha: &str,
        key: &str,
    ) -> Result<Result<Arc<Questionnaire>, Reason>, StoreError> {
        if let Some(found) = self.definitions.get(sha) {
            return Ok(found.clone());
        }
        let found = match self.store.definition_version(sha).await? {
            None => Err(Reason::DefinitionMissing),
            Some(text) if sha256_hex(text.as_bytes()) != sha => Err(Reason::DefinitionHashMismatch),
            Some(text) => questionnaire::parse(&text, key)
                .map(Arc::new)
                .map_err(|_| Reason::DefinitionInvalid),
        };
        self.definitions.insert(sha.to_owned(), found.clone());
        Ok(found)
    }
}

/// The fields where `stored` and `recomputed` differ, depth first, in the
/// stored order and then the recomputed one's extra keys.
pub fn differences(stored: &Value, recomputed: &Value) -> Vec<FieldDifference> {
    let mut found = Vec::new();
    walk("", stored, recomputed, &mut found);
    found
}

fn walk(path: &str, a: &Value, b: &Value, found: &mut Vec<FieldDifference>) {
    let join = |key: &str| {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (key, value) in x {
                walk(&join(key), value, y.get(key).unwrap_or(&Value::Null), found);
            }
            for (key, value) in y.iter().filter(|(k, _)| !x.contains_key(*k)) {
                walk(&join(key), &Value::Null, value, found);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (n, (p, q)) in x.iter().zip(y).enumerate() {
                walk(&join(&n.to_string()), p, q, found);
            }
        }
        // Compared as the text they serialize to: 1 and 1.0 differ there.
        _ if {
            let (a, b) = (a.to_string(), b.to_string());
            a == b
        } => {}
        _ => found.push(FieldDifference {
            path: path.to_owned(),
            stored: a.clone(),
            recomputed: b.clone(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn differences_name_each_field_by_its_path() {
        let stored = json!({"scores": {"total": {"value": 9.0, "label": "T"}}, "action": null, "alarm": ["v_9"]});
        let recomputed = json!({"scores": {"total": {"value": 10.0, "label": "T"}}, "action": "alarm", "alarm": ["v_9"], "extra": 1});
        let found = differences(&stored, &recomputed);
        let paths: Vec<&str> = found.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["scores.total.value", "action", "extra"]);
        assert_eq!(found[0].stored, json!(9.0));
        assert_eq!(found[0].recomputed, json!(10.0));
        assert!(differences(&stored, &stored).is_empty());
    }

    #[test]
    fn a_number_written_otherwise_is_a_difference() {
        let found = differences(&json!({"v": 1}), &json!({"v": 1.0}));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path, "v");
    }
}
