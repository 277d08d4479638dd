//! The host side of the plugin ABI (plugin-sdk's `guest` module is the
//! other): the export names and types a module must have, the imports it
//! may use (`outcomes.log`, and AssemblyScript's `env.abort`, which traps
//! with the guest's message) and the linker that provides them, and the
//! state a call keeps in its store. Checks a module's shape; never runs
//! one (calls are `call`'s).
//!
//! **Invariant:** what a guest passes to an import is bounds-checked: a bad
//! pointer drops a log line or an abort's text, never reads outside guest
//! memory.

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

/// Longest abort message or file name kept, in UTF-16 code units.
pub const MAX_ABORT_UNITS: usize = 512;

/// What `env.abort` raises: the guest gave up, saying why. `call` turns it
/// into a trap carrying this text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestAbort(pub String);

impl std::fmt::Display for GuestAbort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for GuestAbort {}

/// AssemblyScript's `env.abort(message, file, line, column)`, which its
/// compiler imports by default and calls on a failed assertion, a bounds
/// check or a `throw`. Traps the call with the guest's message and place,
/// read from guest memory as AssemblyScript lays out a string: UTF-16
/// code units, their byte length as a `u32` just before them (the
/// object header's `rtSize`; `std/assembly/rt/common.ts` of the
/// AssemblyScript compiler). Every pointer and length is the guest's word
/// and is checked: a string outside memory, or absent (a null pointer),
/// reads as missing; a long one is cut at [`MAX_ABORT_UNITS`]; control
/// characters become spaces, so the text is safe in a log line.
fn host_abort(
    mut caller: Caller<'_, CallState>,
    message: i32,
    file: i32,
    line: i32,
    column: i32,
) -> wasmtime::Result<()> {
    let memory = caller
        .get_export(EXPORT_MEMORY)
        .and_then(|e| e.into_memory());
    let data = memory.map(|m| m.data(&caller)).unwrap_or(&[]);
    let text = abort_text(
        assemblyscript_string(data, message as u32),
        assemblyscript_string(data, file as u32),
        line as u32,
        column as u32,
    );
    Err(wasmtime::Error::new(GuestAbort(text)))
}

/// The text of an abort: `abort: MESSAGE at FILE:LINE:COLUMN`, leaving out
/// what the guest did not give.
pub fn abort_text(message: Option<String>, file: Option<String>, line: u32, column: u32) -> String {
    let mut text = format!("abort: {}", message.as_deref().unwrap_or("(no message)"));
    if let Some(file) = file {
        text.push_str(&format!(" at {file}:{line}:{column}"));
    }
    text
}

/// The AssemblyScript string at `ptr` in `memory` (see [`host_abort`]),
/// or `None` when there is none to read there.
pub fn assemblyscript_string(memory: &[u8], ptr: u32) -> Option<String> {
    let ptr = ptr as usize;
    if ptr < 4 {
        return None;
    }
    let header = memory.get(ptr - 4..ptr)?;
    let bytes = u32::from_le_bytes(header.try_into().ok()?) as usize;
    let units = (bytes / 2).min(MAX_ABORT_UNITS);
    let raw = memory.get(ptr..ptr.checked_add(units * 2)?)?;
    let utf16: Vec<u16> = raw
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let mut text: String = String::from_utf16_lossy(&utf16)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if bytes / 2 > MAX_ABORT_UNITS {
        text.push_str("...");
    }
    Some(text)
}

/// The imports a plugin may use.
pub fn linker(engine: &Engine) -> Result<Linker<CallState>, PluginError> {
    let mut linker = Linker::new(engine);
    linker
        .func_wrap("outcomes", "log", host_log)
        .and_then(|l| l.func_wrap("env", "abort", host_abort))
        .map_err(|e| PluginError::Host(format!("{e:#}")))?;
    Ok(linker)
}

/// Splits an export's `(ptr << 32) | len` answer into where its bytes lie
/// in guest memory and how many there are.
pub fn unpack(packed: i64) -> (usize, usize) {
    let packed = packed as u64;
    ((packed >> 32) as usize, (packed & 0xffff_ffff) as usize)
}

/// Checks that `module` imports only `outcomes.log` and `env.abort` and
/// exports what the ABI requires, with the types it requires.
pub fn check(module: &Module) -> Result<(), PluginError> {
    check_imports(module)?;
    check_exports(module)
}

fn check_imports(module: &Module) -> Result<(), PluginError> {
    for import in module.imports() {
        let name = format!("{}.{}", import.module(), import.name());
        let i32s = |n: usize| vec![ValType::I32; n];
        let allowed = match (import.module(), import.name()) {
            ("outcomes", "log") => {
                matches!(import.ty(), ExternType::Func(f) if same_type(&f, &i32s(3), &[]))
            }
            ("env", "abort") => {
                matches!(import.ty(), ExternType::Func(f) if same_type(&f, &i32s(4), &[]))
            }
            _ => false,
        };
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

    /// Memory holding the AssemblyScript string `text` at 16 (its byte
    /// length at 12), with room after it.
    fn memory_with(text: &str) -> Vec<u8> {
        let units: Vec<u16> = text.encode_utf16().collect();
        let mut memory = vec![0u8; 16];
        memory[12..16].copy_from_slice(&((units.len() * 2) as u32).to_le_bytes());
        for u in units {
            memory.extend_from_slice(&u.to_le_bytes());
        }
        memory.extend_from_slice(&[0; 8]);
        memory
    }

    #[test]
    fn an_assemblyscript_string_is_read_from_its_header_and_utf16_units() {
        let memory = memory_with("index out of range: naïve ☃");
        assert_eq!(
            assemblyscript_string(&memory, 16).as_deref(),
            Some("index out of range: naïve ☃")
        );
        assert_eq!(
            abort_text(Some("x".into()), Some("assembly/index.ts".into()), 3, 7),
            "abort: x at assembly/index.ts:3:7"
        );
        assert_eq!(abort_text(None, None, 0, 0), "abort: (no message)");
    }

    #[test]
    fn hostile_abort_arguments_read_as_missing_or_cut() {
        let memory = memory_with("ok");
        // Null, inside the header, past the end, at the very end.
        for ptr in [0, 1, 3, memory.len() as u32 + 4, u32::MAX] {
            assert_eq!(assemblyscript_string(&memory, ptr), None, "ptr {ptr}");
        }
        // A length that runs past the end of memory.
        let mut long = memory.clone();
        long[12..16].copy_from_slice(&200u32.to_le_bytes());
        assert_eq!(assemblyscript_string(&long, 16), None);
        // A length of 4 GiB is cut to what is kept, which must fit.
        let mut huge = vec![0x41u8; 4 + 2 * MAX_ABORT_UNITS + 8];
        huge[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
        let text = assemblyscript_string(&huge, 4).expect("cut, not refused");
        assert_eq!(text.chars().count(), MAX_ABORT_UNITS + 3);
        assert!(text.ends_with("..."));
        // An odd length, a lone surrogate and control characters.
        let mut odd = memory_with("a\u{1}b\nc");
        odd[12..16].copy_from_slice(&11u32.to_le_bytes());
        assert_eq!(assemblyscript_string(&odd, 16).as_deref(), Some("a b c"));
        let mut lone = vec![0u8; 4];
        lone[0..4].copy_from_slice(&4u32.to_le_bytes());
        lone.extend_from_slice(&0xd800u16.to_le_bytes());
        lone.extend_from_slice(&0x0041u16.to_le_bytes());
        assert_eq!(
            assemblyscript_string(&lone, 4).as_deref(),
            Some("\u{fffd}A")
        );
    }
}
