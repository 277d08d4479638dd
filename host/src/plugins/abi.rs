//! The host side of the plugin ABI (plugin-sdk's `guest` module is the
//! other): the export names and types a module must have, the one import
//! it may use (`outcomes.log`) and the linker that provides it, and the
//! state a call keeps in its store. Checks a module's shape; never runs
//! one (calls are `call`'s).

use plugin_sdk::log::{Level, MAX_LINE_BYTES, MAX_LINES};
use serde::Serialize;
use wasmtime::{Caller, Engine, ExternType, FuncType, Linker, Module, ResourceLimiter, ValType};

use super::engine::MAX_TABLE_ELEMENTS;
use super::error::PluginError;

/// Export names fixed by the ABI (plugin-sdk's `guest` module).
pub const EXPORT_MEMORY: &str = "memory";
pub const EXPORT_ABI_VERSION: &str = "outcomes_abi_version";
pub const EXPORT_ALLOC: &str = "outcomes_alloc";
pub const EXPORT_DESCRIBE: &str = "outcomes_describe";
pub const EXPORT_CALL: &str = "outcomes_call";

/// Per-call state the host keeps in the store.
#[derive(Debug)]
pub struct CallState {
    memory_cap: usize,
    cap_hit: bool,
    peak_memory: usize,
    logs: Vec<LogLine>,
    logs_dropped: usize,
}

impl CallState {
    /// A call's state before it runs, its memory capped at `memory_cap`.
    pub fn new(memory_cap: usize) -> CallState {
        CallState {
            memory_cap,
            cap_hit: false,
            peak_memory: 0,
            logs: Vec::new(),
            logs_dropped: 0,
        }
    }

    /// Whether the guest tried to grow its memory past the cap.
    pub fn cap_hit(&self) -> bool {
        self.cap_hit
    }

    /// Records a memory size the guest reached.
    pub fn note_memory(&mut self, size: usize) {
        self.peak_memory = self.peak_memory.max(size);
    }

    /// The largest memory the guest reached.
    pub fn peak_memory(&self) -> usize {
        self.peak_memory
    }

    /// The lines the guest logged, with one more saying how many were
    /// dropped, if any were.
    pub fn take_logs(&mut self) -> Vec<LogLine> {
        let mut logs = std::mem::take(&mut self.logs);
        if self.logs_dropped > 0 {
            logs.push(LogLine {
                level: "warn",
                message: format!(
                    "{} further log lines dropped (cap {MAX_LINES} per call)",
                    self.logs_dropped
                ),
            });
        }
        logs
    }
}

impl ResourceLimiter for CallState {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_cap {
            self.cap_hit = true;
            return Ok(false);
        }
        self.note_memory(desired);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}

/// A line the guest logged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogLine {
    pub level: &'static str,
    pub message: String,
}

/// The `outcomes.log` import: copies at most [`MAX_LINES`] lines of at most
/// [`MAX_LINE_BYTES`] bytes per call into the call state; anything else is
/// counted and dropped. Never traps on bad pointers: the line is dropped.
fn host_log(mut caller: Caller<'_, CallState>, level: i32, ptr: i32, len: i32) {
    if caller.data().logs.len() >= MAX_LINES {
        caller.data_mut().logs_dropped += 1;
        return;
    }
    let Some(memory) = caller
        .get_export(EXPORT_MEMORY)
        .and_then(|e| e.into_memory())
    else {
        return;
    };
    let (start, len) = (
        ptr as u32 as usize,
        (len as u32 as usize).min(MAX_LINE_BYTES),
    );
    let message = memory
        .data(&caller)
        .get(start..start.saturating_add(len))
        .map(|b| String::from_utf8_lossy(b).into_owned());
    let state = caller.data_mut();
    match message {
        Some(message) => state.logs.push(LogLine {
            level: match Level::from_raw(level as u32) {
                Level::Debug => "debug",
                Level::Info => "info",
                Level::Warn => "warn",
                Level::Error => "error",
            },
            message,
        }),
        None => state.logs_dropped += 1,
    }
}

/// The one import a plugin may use.
pub fn linker(engine: &Engine) -> Result<Linker<CallState>, PluginError> {
    let mut linker = Linker::new(engine);
    linker
        .func_wrap("outcomes", "log", host_log)
        .map_err(|e| PluginError::Host(format!("{e:#}")))?;
    Ok(linker)
}

/// Splits an export's `(ptr << 32) | len` answer into where its bytes lie
/// in guest memory and how many there are.
pub fn unpack(packed: i64) -> (usize, usize) {
    let packed = packed as u64;
    ((packed >> 32) as usize, (packed & 0xffff_ffff) as usize)
}

/// Checks that `module` imports only `outcomes.log` and exports what the
/// ABI requires, with the types it requires.
pub fn check(module: &Module) -> Result<(), PluginError> {
    check_imports(module)?;
    check_exports(module)
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
