//! One plugin version: a module probed, then built into a [`Plugin`] from
//! what the probe found. Probing checks everything the ABI promises before
//! the plugin may serve: imports (only `outcomes.log` and `env.abort`),
//! exports and their types, the ABI version (from the export and the
//! manifest), and the manifest the module describes itself with. A
//! `Plugin` exists only once all of that passed. A refusal carries a hint
//! in the module's own language (`language`).

use std::sync::Arc;

use plugin_sdk::{ABI_VERSION, Manifest, PluginKind};
use serde::Serialize;
use serde::de::DeserializeOwned;
use wasmtime::InstancePre;

use super::abi::{self, CallState};
use super::call::{self, Call, LogLine};
pub use super::engine::sha256_hex;
use super::engine::{Compiled, Runtime};
use super::error::PluginError;
use super::language::Language;
use super::limits::{LimitSettings, Limits};
use super::spare::{SpareThread, Spares};

/// What probing a module found: a module that keeps the ABI, and the
/// manifest it describes itself with.
struct Probe {
    sha256: String,
    compiled: Compiled,
    pre: InstancePre<CallState>,
    manifest: Manifest,
}

/// Compiles `bytes` (or takes them from the cache), checks them against the
/// ABI and asks the module who it is. Describing itself runs under the
/// scorer defaults: its own limits depend on what it says.
fn probe(runtime: &Runtime, bytes: &[u8]) -> Result<Probe, PluginError> {
    let sha256 = sha256_hex(bytes);
    let (module, compiled) = runtime.compile(&sha256, bytes)?;
    let (pre, manifest) = check(runtime, &module).map_err(|e| {
        // Say what to change in the module's own language.
        let imports: Vec<String> = module
            .imports()
            .map(|i| format!("{}.{}", i.module(), i.name()))
            .collect();
        let imports: Vec<&str> = imports.iter().map(String::as_str).collect();
        let exports: Vec<&str> = module.exports().map(|e| e.name()).collect();
        let language = Language::detect(bytes, &imports, &exports);
        language.explain(e)
    })?;
    Ok(Probe {
        sha256,
        compiled,
        pre,
        manifest,
    })
}

/// The ABI checks of `probe` on a compiled module.
fn check(
    runtime: &Runtime,
    module: &wasmtime::Module,
) -> Result<(InstancePre<CallState>, Manifest), PluginError> {
    abi::check(module)?;
    let pre = abi::linker(runtime.engine())?
        .instantiate_pre(module)
        .map_err(|e| PluginError::Invalid(format!("{e:#}")))?;
    let found = call::abi_version(&pre)?;
    if found != ABI_VERSION {
        return Err(PluginError::AbiMismatch { found });
    }
    let manifest = call::describe(&pre)?;
    if manifest.abi_version != ABI_VERSION {
        return Err(PluginError::AbiMismatch {
            found: manifest.abi_version,
        });
    }
    if !valid_name(&manifest.name) {
        return Err(PluginError::Manifest(format!(
            "name {:?} must be 1 to 64 lower-case letters, digits and underscores, starting with a letter",
            manifest.name
        )));
    }
    if manifest.version.trim().is_empty() {
        return Err(PluginError::Manifest("version is blank".into()));
    }
    Ok((pre, manifest))
}

/// A loaded plugin version. Cheap to share; calls create a fresh instance
/// each, so one patient's data never meets another's.
pub struct Plugin {
    pub manifest: Manifest,
    /// SHA-256 of the module bytes, hex.
    pub sha256: String,
    /// The module bytes, kept so the version stays addressable by hash.
    pub bytes: Arc<[u8]>,
    pub limits: Limits,
    pub compiled: Compiled,
    pre: InstancePre<CallState>,
    /// Instances made ahead of calls (see `spare`).
    pub(super) spares: Arc<Spares>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("manifest", &self.manifest)
            .field("sha256", &self.sha256)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Plugin {
    /// Probes and compiles `bytes`; the plugin gets the limits `limits`
    /// sets for the name and kind it describes itself with, and its spares
    /// from `spares`.
    pub fn load(
        runtime: &Runtime,
        spares: &SpareThread,
        bytes: &[u8],
        limits: &LimitSettings,
    ) -> Result<Plugin, PluginError> {
        let Probe {
            sha256,
            compiled,
            pre,
            manifest,
        } = probe(runtime, bytes)?;
        let limits = limits.limits(&manifest.name, manifest.kind);
        Ok(Plugin {
            spares: spares.spares(&manifest.name, pre.clone(), limits),
            manifest,
            sha256,
            bytes: Arc::from(bytes),
            limits,
            compiled,
            pre,
        })
    }

    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    pub fn kind(&self) -> PluginKind {
        self.manifest.kind
    }

    pub fn version(&self) -> &str {
        &self.manifest.version
    }

    /// Runs the entry call on raw input bytes in a fresh instance under the
    /// plugin's limits, and returns raw output bytes.
    pub fn invoke_raw(&self, input: &[u8]) -> Call<Vec<u8>> {
        call::invoke_raw(&self.pre, self.limits, input)
    }

    /// Calls the plugin with typed input and parses its typed reply.
    pub fn invoke<I: Serialize, O: DeserializeOwned>(&self, input: &I) -> Call<O> {
        match call::input_bytes(input) {
            Ok(bytes) => self.invoke_json(&bytes),
            Err(e) => Call::refused(e),
        }
    }

    /// Calls the plugin with input already serialized and parses its typed
    /// reply.
    pub fn invoke_json<O: DeserializeOwned>(&self, input: &[u8]) -> Call<O> {
        self.invoke_raw(input).parsed()
    }

    /// The pre-linked module, for the profiler (`profile`).
    pub(super) fn pre(&self) -> &InstancePre<CallState> {
        &self.pre
    }

    /// Asks a fresh instance (under scorer limits) which ABI it speaks;
    /// costs little more than instantiating (the benches measure that
    /// with it).
    pub fn abi_version(&self) -> Result<u32, PluginError> {
        call::abi_version(&self.pre)
    }

    /// Re-emits a call's log lines through tracing with the plugin's
    /// identity.
    pub fn emit_logs(&self, logs: &[LogLine]) {
        let (name, version) = (self.name(), self.version());
        for line in logs {
            match line.level {
                "error" => tracing::error!(plugin = name, version, "{}", line.message),
                "warn" => tracing::warn!(plugin = name, version, "{}", line.message),
                "debug" => tracing::debug!(plugin = name, version, "{}", line.message),
                _ => tracing::info!(plugin = name, version, "{}", line.message),
            }
        }
    }
}

/// Plugin names follow the key rules of definitions: `[a-z][a-z0-9_]{0,63}`.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_names_follow_the_key_rules() {
        assert!(valid_name("phq9"));
        assert!(valid_name("score_series"));
        assert!(!valid_name(""));
        assert!(!valid_name("9phq"));
        assert!(!valid_name("Phq9"));
        assert!(!valid_name("a-b"));
        assert!(!valid_name(&"a".repeat(65)));
    }
}
