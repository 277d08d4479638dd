//! One plugin version: validated, compiled, pre-instantiated. Loading
//! checks everything the ABI promises before the plugin may serve: imports
//! (only `outcomes.log`), exports and their types, the ABI version, and the
//! manifest it describes itself with.

use std::sync::Arc;

use plugin_sdk::{ABI_VERSION, Manifest, PluginKind};
use sha2::{Digest, Sha256};
use wasmtime::{ExternType, FuncType, InstancePre, Linker, Module, ValType};

use super::cache::{ArtifactCache, Compiled};
use super::call::{self, CallState};
use super::engine::Runtime;
use super::error::PluginError;
use super::limits::Limits;
use super::spare::Spares;

/// Export names fixed by the ABI (plugin-sdk's `guest` module).
pub const EXPORT_MEMORY: &str = "memory";
pub const EXPORT_ABI_VERSION: &str = "outcomes_abi_version";
pub const EXPORT_ALLOC: &str = "outcomes_alloc";
pub const EXPORT_DESCRIBE: &str = "outcomes_describe";
pub const EXPORT_CALL: &str = "outcomes_call";

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
    pub(super) runtime: Runtime,
    pub(super) pre: InstancePre<CallState>,
    /// Instances made ahead of calls (see `spare`).
    pub(super) spares: Spares,
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

/// SHA-256 of `bytes`, hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    super::hex(&Sha256::digest(bytes))
}

impl Plugin {
    /// Validates and compiles `bytes`. `limits_for` gives the limits once
    /// the plugin has said its name and kind; describing itself runs under
    /// the scorer defaults.
    pub fn load(
        runtime: &Runtime,
        cache: &ArtifactCache,
        bytes: &[u8],
        limits_for: &dyn Fn(&str, PluginKind) -> Limits,
    ) -> Result<Plugin, PluginError> {
        let sha256 = sha256_hex(bytes);
        let (module, compiled) = cache.module(runtime, &sha256, bytes)?;
        check_imports(&module)?;
        check_exports(&module)?;
        let pre = linker(runtime)?
            .instantiate_pre(&module)
            .map_err(|e| PluginError::Invalid(format!("{e:#}")))?;
        let mut plugin = Plugin {
            manifest: Manifest {
                name: String::new(),
                kind: PluginKind::Scorer,
                version: String::new(),
                abi_version: 0,
                questionnaires: Vec::new(),
                questions: true,
                answers: true,
            },
            sha256,
            bytes: Arc::from(bytes),
            limits: Limits::SCORER,
            compiled,
            runtime: runtime.clone(),
            pre,
            spares: Spares::new(runtime.workshop.clone()),
        };
        let found = call::abi_version(&plugin)?;
        if found != ABI_VERSION {
            return Err(PluginError::AbiMismatch { found });
        }
        let manifest = call::describe(&plugin)?;
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
        plugin.limits = limits_for(&manifest.name, manifest.kind);
        plugin.manifest = manifest;
        Ok(plugin)
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
}

/// Plugin names follow the key rules of definitions: `[a-z][a-z0-9_]{0,63}`.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// The one import a plugin may use.
fn linker(runtime: &Runtime) -> Result<Linker<CallState>, PluginError> {
    let mut linker = Linker::new(&runtime.engine);
    linker
        .func_wrap("outcomes", "log", call::host_log)
        .map_err(|e| PluginError::Host(format!("{e:#}")))?;
    Ok(linker)
}

fn check_imports(module: &Module) -> Result<(), PluginError> {
    for import in module.imports() {
        let name = format!("{}.{}", import.module(), import.name());
        let allowed = import.module() == "outcomes"
            && import.name() == "log"
            && matches!(import.ty(), ExternType::Func(f) if same_type(&f, &[ValType::I32, ValType::I32, ValType::I32], &[]));
        if !allowed {
            return Err(PluginError::ForbiddenImport(name));
        }
    }
    Ok(())
}

fn check_exports(module: &Module) -> Result<(), PluginError> {
    let func = |name: &str, params: &[ValType], results: &[ValType]| match module.get_export(name) {
        Some(ExternType::Func(f)) if same_type(&f, params, results) => Ok(()),
        Some(_) => Err(PluginError::MissingExport(format!(
            "{name} with type ({params:?}) -> ({results:?})"
        ))),
        None => Err(PluginError::MissingExport(name.to_owned())),
    };
    match module.get_export(EXPORT_MEMORY) {
        Some(ExternType::Memory(m)) if !m.is_64() && !m.is_shared() => {}
        _ => {
            return Err(PluginError::MissingExport(format!(
                "{EXPORT_MEMORY} (a 32-bit memory)"
            )));
        }
    }
    func(EXPORT_ABI_VERSION, &[], &[ValType::I32])?;
    func(EXPORT_ALLOC, &[ValType::I32], &[ValType::I32])?;
    func(EXPORT_DESCRIBE, &[], &[ValType::I64])?;
    func(EXPORT_CALL, &[ValType::I32, ValType::I32], &[ValType::I64])
}

fn same_type(f: &FuncType, params: &[ValType], results: &[ValType]) -> bool {
    let eq = |a: &ValType, b: &ValType| ValType::eq(a, b);
    f.params().len() == params.len()
        && f.results().len() == results.len()
        && f.params().zip(params).all(|(a, b)| eq(&a, b))
        && f.results().zip(results).all(|(a, b)| eq(&a, b))
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
