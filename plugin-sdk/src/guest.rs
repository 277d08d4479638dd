//! The guest side of the ABI, hidden behind
//! [`export_scorer!`](crate::export_scorer) and
//! [`export_calculator!`](crate::export_calculator). On `wasm32` the macros emit the exports the host
//! looks for; on every other target they emit nothing, so plugin crates
//! build and test natively.
//!
//! The exports (all names fixed by the ABI):
//!
//! | export | signature | what it does |
//! |---|---|---|
//! | `memory` | memory | the guest's linear memory |
//! | `outcomes_abi_version` | `() -> i32` | [`ABI_VERSION`](crate::ABI_VERSION) |
//! | `outcomes_alloc` | `(len: i32) -> i32` | reserves `len` bytes for the input |
//! | `outcomes_describe` | `() -> i64` | the [`Manifest`] as JSON |
//! | `outcomes_call` | `(ptr: i32, len: i32) -> i64` | input JSON in, [`Reply`] JSON out |
//!
//! An `i64` result packs a pointer (high 32 bits) and a length (low 32
//! bits) of bytes in guest memory. The only import is
//! `outcomes.log(level: i32, ptr: i32, len: i32)`.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::contract::{Manifest, PluginError, Reply, ScorerOutput};

/// What a plugin function may return: its output, or a `Result` whose error
/// becomes a [`PluginError`].
pub trait IntoReply<T> {
    /// Converts into the reply the host receives.
    fn into_reply(self) -> Reply<T>;
}

impl IntoReply<ScorerOutput> for ScorerOutput {
    fn into_reply(self) -> Reply<ScorerOutput> {
        Reply::Ok(self)
    }
}

impl<T, E: std::fmt::Display> IntoReply<T> for Result<T, E> {
    fn into_reply(self) -> Reply<T> {
        match self {
            Ok(output) => Reply::Ok(output),
            Err(e) => Reply::Error(PluginError::new(e.to_string())),
        }
    }
}

/// Runs a plugin function on JSON input and answers JSON: the one code path
/// behind the wasm export and the native test harness, so both see the same
/// bytes.
pub fn call_json<I, O, R>(input: &[u8], f: impl FnOnce(I) -> R) -> Vec<u8>
where
    I: DeserializeOwned,
    O: Serialize,
    R: IntoReply<O>,
{
    let reply = match serde_json::from_slice::<I>(input) {
        Ok(input) => f(input).into_reply(),
        Err(e) => Reply::Error(PluginError::new(format!(
            "input does not match the contract: {e}"
        ))),
    };
    to_json(&reply)
}

/// Serializes a value the guest hands back. Serialization of the contract
/// types cannot fail except for non-string map keys, which they do not have;
/// should it fail anyway, the host receives a structured error.
pub fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_else(|e| {
        let reply: Reply<()> =
            Reply::Error(PluginError::new(format!("output not serializable: {e}")));
        serde_json::to_vec(&reply).unwrap_or_default()
    })
}

/// Wraps a calculator's own results type as the contract's output.
#[derive(Debug, Serialize)]
pub struct Results<T> {
    /// The calculator's results.
    pub results: T,
}

/// The manifest JSON of a plugin.
pub fn manifest_json(manifest: &Manifest) -> Vec<u8> {
    to_json(manifest)
}

/// Every plugin built for `wasm32` allocates with [`wasm::Bump`], unless it
/// turns off the SDK's `bump-allocator` feature.
#[cfg(all(target_arch = "wasm32", feature = "bump-allocator"))]
#[global_allocator]
static ALLOCATOR: wasm::Bump = wasm::Bump::new();

/// Raw-memory glue used by the macros' expansion on `wasm32`.
#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
#[allow(unsafe_code)]
pub mod wasm {
    use std::alloc::{GlobalAlloc, Layout};
    use std::cell::Cell;

    const PAGE: usize = 64 * 1024;

    unsafe extern "C" {
        /// Where the linker put the end of the module's stack and data.
        static __heap_base: u8;
    }

    /// The allocator of a plugin: a bump of a pointer. The host runs every
    /// call in a fresh instance and throws its memory away afterwards, so
    /// nothing needs to be freed for reuse, and a general-purpose allocator's
    /// bookkeeping (its first call and every later one) is work the guest
    /// does for nothing, under fuel. Memory grows by whole pages when the
    /// bump passes its end; the last allocation can grow or be given back
    /// in place, which keeps a vector that grows at the top cheap.
    #[derive(Debug)]
    pub struct Bump {
        next: Cell<usize>,
        end: Cell<usize>,
    }

    // SAFETY: a plugin instance runs on one thread (no threads in the
    // engine, no `atomics` in the target), so the cells are never shared.
    unsafe impl Sync for Bump {}

    impl Bump {
        /// An allocator that takes its first page on first use.
        pub const fn new() -> Bump {
            Bump {
                next: Cell::new(0),
                end: Cell::new(0),
            }
        }

        /// Makes room up to `to` (exclusive); false when memory cannot grow.
        fn reserve(&self, to: usize) -> bool {
            if self.end.get() == 0 {
                // Memory past the module's own (stack, data) is ours: from
                // the linker's `__heap_base` to the end of the initial
                // memory, then whatever is grown. A call that fits in the
                // initial memory never grows it, which spares the host
                // changing page protections (and flushing TLBs on every
                // core) when it resets the instance's memory.
                // (Taking the address of an extern static reads nothing.)
                let base = &raw const __heap_base as usize;
                self.next.set(base);
                self.end.set(core::arch::wasm32::memory_size(0) * PAGE);
                if to == 0 {
                    return true;
                }
            }
            if to <= self.end.get() {
                return true;
            }
            let pages = (to - self.end.get()).div_ceil(PAGE);
            if core::arch::wasm32::memory_grow(0, pages) == usize::MAX {
                return false;
            }
            self.end.set(self.end.get() + pages * PAGE);
            true
        }
    }

    impl Default for Bump {
        fn default() -> Self {
            Bump::new()
        }
    }

    // SAFETY: every block handed out lies inside memory this instance owns
    // (grown before it is handed out), is aligned as asked, and is never
    // handed out twice: `next` only moves back over the block just freed.
    unsafe impl GlobalAlloc for Bump {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            if !self.reserve(0) {
                return std::ptr::null_mut();
            }
            let start = self.next.get().next_multiple_of(layout.align());
            let Some(end) = start.checked_add(layout.size()) else {
                return std::ptr::null_mut();
            };
            if !self.reserve(end) {
                return std::ptr::null_mut();
            }
            self.next.set(end);
            start as *mut u8
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // Only the last block can be taken back.
            if ptr as usize + layout.size() == self.next.get() {
                self.next.set(ptr as usize);
            }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            let at = ptr as usize;
            if at + layout.size() == self.next.get() {
                // The last block grows or shrinks where it is.
                let Some(end) = at.checked_add(new_size) else {
                    return std::ptr::null_mut();
                };
                if !self.reserve(end) {
                    return std::ptr::null_mut();
                }
                self.next.set(end);
                return ptr;
            }
            if new_size <= layout.size() {
                return ptr;
            }
            // SAFETY: the layout's alignment is valid and the size was
            // checked by the caller (GlobalAlloc's contract).
            let moved =
                unsafe { self.alloc(Layout::from_size_align_unchecked(new_size, layout.align())) };
            if !moved.is_null() {
                // SAFETY: both blocks are ours and do not overlap (the new
                // one lies past `next`, the old one before it).
                unsafe { std::ptr::copy_nonoverlapping(ptr, moved, layout.size()) };
            }
            moved
        }
    }

    /// Reserves `len` bytes and hands their address to the host.
    pub fn alloc(len: u32) -> u32 {
        let mut buf = Vec::<u8>::with_capacity(len as usize);
        let ptr = buf.as_mut_ptr();
        std::mem::forget(buf);
        ptr as u32
    }

    /// The bytes the host wrote at `ptr`.
    pub fn input<'a>(ptr: u32, len: u32) -> &'a [u8] {
        if len == 0 {
            return &[];
        }
        // SAFETY: the host wrote `len` bytes into the buffer `alloc(len)`
        // returned; the instance lives for one call, so nothing frees it.
        unsafe { std::slice::from_raw_parts(ptr as *const u8, len as usize) }
    }

    /// Leaks `bytes` and packs their address and length for the host.
    pub fn output(bytes: Vec<u8>) -> u64 {
        let bytes = bytes.into_boxed_slice();
        let len = bytes.len() as u64;
        let ptr = Box::leak(bytes).as_ptr() as u64;
        (ptr << 32) | len
    }

    /// Sends panics to the host log before the module traps.
    pub fn install_panic_hook() {
        std::panic::set_hook(Box::new(|info| {
            crate::log::emit(crate::log::Level::Error, &info.to_string());
        }));
    }
}

/// Exports a scorer: `fn(ScorerInput) -> ScorerOutput` (or a `Result` of it).
///
/// ```ignore
/// plugin_sdk::export_scorer!(score, questionnaires = ["phq9"]);
/// // A scorer that works on `input.values` alone, and so needs neither the
/// // questions (titles, options) nor the option keys answered: every call
/// // is cheaper.
/// plugin_sdk::export_scorer!(score, questionnaires = ["phq9"], questions = false, answers = false);
/// ```
///
/// The plugin's name and version are the crate's name and version.
#[macro_export]
macro_rules! export_scorer {
    ($score:path, questionnaires = [$($q:literal),* $(,)?] $(, questions = $questions:literal)? $(, answers = $answers:literal)? $(,)?) => {
        $crate::__export!(
            $crate::__manifest!(
                $crate::PluginKind::Scorer,
                ::std::vec![$(::std::string::String::from($q)),*],
                $crate::__or_true!($($questions)?),
                $crate::__or_true!($($answers)?)
            ),
            |input: &[u8]| $crate::guest::call_json::<$crate::ScorerInput, $crate::ScorerOutput, _>(input, $score)
        );
        /// The manifest this crate exports, for native tests.
        #[allow(dead_code)]
        pub fn manifest() -> $crate::Manifest {
            $crate::__manifest!(
                $crate::PluginKind::Scorer,
                ::std::vec![$(::std::string::String::from($q)),*],
                $crate::__or_true!($($questions)?),
                $crate::__or_true!($($answers)?)
            )
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __or_true {
    () => {
        true
    };
    ($value:literal) => {
        $value
    };
}

/// Exports a calculator: `fn(CalculatorInput) -> Result<R, E>` where `R`
/// serializes to a JSON object and `E` displays. `R` becomes the `results`
/// of the report calculation; an `E` becomes the plugin's error answer.
///
/// ```ignore
/// plugin_sdk::export_calculator!(calculate);
/// // One that works on stored outcomes alone: no questions in the
/// // definitions, no answers in the responses (a smaller input).
/// plugin_sdk::export_calculator!(calculate, questions = false, answers = false);
/// ```
#[macro_export]
macro_rules! export_calculator {
    ($calculate:path $(, questions = $questions:literal)? $(, answers = $answers:literal)? $(,)?) => {
        $crate::__export!(
            $crate::__manifest!(
                $crate::PluginKind::Calculator,
                ::std::vec::Vec::new(),
                $crate::__or_true!($($questions)?),
                $crate::__or_true!($($answers)?)
            ),
            |input: &[u8]| $crate::guest::call_json::<$crate::CalculatorInput, _, _>(input, |i| {
                $calculate(i).map(|results| $crate::guest::Results { results })
            })
        );
        /// The manifest this crate exports, for native tests.
        #[allow(dead_code)]
        pub fn manifest() -> $crate::Manifest {
            $crate::__manifest!(
                $crate::PluginKind::Calculator,
                ::std::vec::Vec::new(),
                $crate::__or_true!($($questions)?),
                $crate::__or_true!($($answers)?)
            )
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __manifest {
    ($kind:expr, $questionnaires:expr, $questions:expr) => {
        $crate::__manifest!($kind, $questionnaires, $questions, true)
    };
    ($kind:expr, $questionnaires:expr, $questions:expr, $answers:expr) => {
        $crate::Manifest {
            name: ::std::string::String::from(::std::env!("CARGO_PKG_NAME")),
            kind: $kind,
            version: ::std::string::String::from(::std::env!("CARGO_PKG_VERSION")),
            abi_version: $crate::ABI_VERSION,
            questionnaires: $questionnaires,
            questions: $questions,
            answers: $answers,
            contract: $crate::CONTRACT_VERSION,
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __export {
    ($manifest:expr, $call:expr) => {
        #[cfg(target_arch = "wasm32")]
        #[allow(unsafe_code)]
        #[unsafe(no_mangle)]
        extern "C" fn outcomes_abi_version() -> u32 {
            $crate::ABI_VERSION
        }

        #[cfg(target_arch = "wasm32")]
        #[allow(unsafe_code)]
        #[unsafe(no_mangle)]
        extern "C" fn outcomes_alloc(len: u32) -> u32 {
            $crate::guest::wasm::alloc(len)
        }

        #[cfg(target_arch = "wasm32")]
        #[allow(unsafe_code)]
        #[unsafe(no_mangle)]
        extern "C" fn outcomes_describe() -> u64 {
            $crate::guest::wasm::output($crate::guest::manifest_json(&$manifest))
        }

        #[cfg(target_arch = "wasm32")]
        #[allow(unsafe_code)]
        #[unsafe(no_mangle)]
        extern "C" fn outcomes_call(ptr: u32, len: u32) -> u64 {
            $crate::guest::wasm::install_panic_hook();
            let call = $call;
            $crate::guest::wasm::output(call($crate::guest::wasm::input(ptr, len)))
        }

        /// Runs the exported function on JSON bytes, natively: what the
        /// host gets from the wasm build, for tests and the fixture runner.
        /// The parts of the input the manifest declines are left out first,
        /// as the service does.
        #[allow(dead_code)]
        pub fn call_json(input: &[u8]) -> ::std::vec::Vec<u8> {
            let call = $call;
            call(&$manifest.decline_bytes(input))
        }
    };
}
