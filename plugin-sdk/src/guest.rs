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

/// Raw-memory glue used by the macros' expansion on `wasm32`.
#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
#[allow(unsafe_code)]
pub mod wasm {
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
/// // A scorer that works on `input.values` alone, and so does not need the
/// // questions (titles, options) in its input: every call is cheaper.
/// plugin_sdk::export_scorer!(score, questionnaires = ["phq9"], questions = false);
/// ```
///
/// The plugin's name and version are the crate's name and version.
#[macro_export]
macro_rules! export_scorer {
    ($score:path, questionnaires = [$($q:literal),* $(,)?] $(, questions = $questions:literal)? $(,)?) => {
        $crate::__export!(
            $crate::__manifest!(
                $crate::PluginKind::Scorer,
                ::std::vec![$(::std::string::String::from($q)),*],
                $crate::__or_true!($($questions)?)
            ),
            |input: &[u8]| $crate::guest::call_json::<$crate::ScorerInput, $crate::ScorerOutput, _>(input, $score)
        );
        /// The manifest this crate exports, for native tests.
        #[allow(dead_code)]
        pub fn manifest() -> $crate::Manifest {
            $crate::__manifest!(
                $crate::PluginKind::Scorer,
                ::std::vec![$(::std::string::String::from($q)),*],
                $crate::__or_true!($($questions)?)
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
        #[allow(dead_code)]
        pub fn call_json(input: &[u8]) -> ::std::vec::Vec<u8> {
            let call = $call;
            call(input)
        }
    };
}
