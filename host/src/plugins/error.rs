//! What can go wrong with a plugin, as one typed error. The host never
//! panics or stops serving because of a plugin; every failure ends here.
//!
//! Each variant has a stable `code()`.

use plugin_sdk::{ABI_VERSION, PluginKind};

/// A plugin failure: at load time (validation) or during a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    /// The bytes are not a WebAssembly module wasmtime accepts.
    #[error("not a valid WebAssembly module: {0}")]
    Invalid(String),
    /// The module imports something other than `outcomes.log` and
    /// `env.abort`.
    #[error(
        "imports {0}, which the host does not provide: a plugin may import only outcomes.log \
         and env.abort"
    )]
    ForbiddenImport(String),
    /// An export the ABI requires is absent or has the wrong type.
    #[error("missing export {0}")]
    MissingExport(String),
    /// Built against another ABI major version.
    #[error("built against plugin ABI {found}; this host speaks ABI {ABI_VERSION}")]
    AbiMismatch { found: u32 },
    /// A load error with what to do about it, for the language the module
    /// was written in (`language`): the same code as the error it wraps.
    #[error("{error}: {hint}")]
    Hinted {
        error: Box<PluginError>,
        hint: String,
    },
    /// The manifest is unusable (bad name, wrong kind).
    #[error("manifest: {0}")]
    Manifest(String),
    /// The guest trapped (panic, `unreachable`, out-of-bounds access).
    #[error("trapped: {0}")]
    Trap(String),
    /// The guest used up its fuel.
    #[error("ran out of fuel (budget {budget} per call)")]
    OutOfFuel { budget: u64 },
    /// The guest ran past its wall-clock deadline.
    #[error("ran past its deadline of {ms} ms")]
    Deadline { ms: u64 },
    /// The guest tried to grow its memory past the cap.
    #[error("tried to use more than its memory cap of {cap} bytes")]
    MemoryCap { cap: usize },
    /// The guest exhausted the wasm stack (runaway recursion).
    #[error("exhausted the wasm stack")]
    StackOverflow,
    /// The input is larger than the plugin may receive.
    #[error("input of {len} bytes is over the cap of {cap}")]
    InputTooLarge { len: usize, cap: usize },
    /// The output is larger than the plugin may answer.
    #[error("output of {len} bytes is over the cap of {cap}")]
    OutputTooLarge { len: usize, cap: usize },
    /// The output is not JSON.
    #[error("output is not valid JSON: {0}")]
    InvalidJson(String),
    /// The output is JSON but not what the contract says.
    #[error("output does not match the contract: {0}")]
    Contract(String),
    /// The plugin answered a structured error.
    #[error("refused the input: {0}")]
    Refused(String),
    /// Every instance slot is in use.
    #[error("all plugin instance slots are busy")]
    Busy,
    /// No plugin of that name is loaded.
    #[error("no {kind} plugin named {name:?} is loaded")]
    NotLoaded { kind: PluginKind, name: String },
    /// A host-side failure around the call.
    #[error("host error: {0}")]
    Host(String),
}

impl PluginError {
    /// A stable snake_case code, for metrics and for the `exception` entry
    /// of a failed score.
    pub fn code(&self) -> &'static str {
        match self {
            PluginError::Invalid(_) => "invalid_module",
            PluginError::ForbiddenImport(_) => "forbidden_import",
            PluginError::MissingExport(_) => "missing_export",
            PluginError::AbiMismatch { .. } => "abi_mismatch",
            PluginError::Hinted { error, .. } => error.code(),
            PluginError::Manifest(_) => "invalid_manifest",
            PluginError::Trap(_) => "trap",
            PluginError::OutOfFuel { .. } => "out_of_fuel",
            PluginError::Deadline { .. } => "deadline",
            PluginError::MemoryCap { .. } => "memory_cap",
            PluginError::StackOverflow => "stack_overflow",
            PluginError::InputTooLarge { .. } => "input_too_large",
            PluginError::OutputTooLarge { .. } => "output_too_large",
            PluginError::InvalidJson(_) => "invalid_json",
            PluginError::Contract(_) => "contract_violation",
            PluginError::Refused(_) => "refused",
            PluginError::Busy => "busy",
            PluginError::NotLoaded { .. } => "not_loaded",
            PluginError::Host(_) => "host_error",
        }
    }

    /// What kind of failure a call's error is, for the failure counter of
    /// `/metrics` (docs/operations.md#monitoring): `trap` (the guest
    /// trapped or overflowed its stack), `fuel`, `deadline`, `memory`,
    /// `output` (too large, not JSON or not the contract), `input` (too
    /// large), `refused` (the plugin's own structured error), `busy` (no
    /// instance slot) or `host` (the host's side, or a load-time error).
    pub fn failure(&self) -> &'static str {
        match self {
            PluginError::Trap(_) | PluginError::StackOverflow => "trap",
            PluginError::OutOfFuel { .. } => "fuel",
            PluginError::Deadline { .. } => "deadline",
            PluginError::MemoryCap { .. } => "memory",
            PluginError::OutputTooLarge { .. }
            | PluginError::InvalidJson(_)
            | PluginError::Contract(_) => "output",
            PluginError::InputTooLarge { .. } => "input",
            PluginError::Refused(_) => "refused",
            PluginError::Busy => "busy",
            PluginError::Hinted { error, .. } => error.failure(),
            PluginError::Invalid(_)
            | PluginError::ForbiddenImport(_)
            | PluginError::MissingExport(_)
            | PluginError::AbiMismatch { .. }
            | PluginError::Manifest(_)
            | PluginError::NotLoaded { .. }
            | PluginError::Host(_) => "host",
        }
    }
}
