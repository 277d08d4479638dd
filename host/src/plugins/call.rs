//! One call into a module: a fresh instance from its `InstancePre`, fuel
//! and an epoch deadline set, memory growth capped, the input copied in,
//! the output copied out and checked. Everything the guest can do wrong
//! becomes a [`PluginError`]; what the call used is measured for the
//! author harness and the logs. Works on a pre-linked module and limits,
//! not on a `Plugin` (which `module` builds later, from calls made here).

use std::time::{Duration, Instant};

use plugin_sdk::{Manifest, Reply};
use serde::Serialize;
use serde::de::DeserializeOwned;
use wasmtime::{Instance, InstancePre, ResourceLimiter, Store, Trap};

pub use super::abi::LogLine;
use super::abi::{
    self, CallState, EXPORT_ABI_VERSION, EXPORT_ALLOC, EXPORT_CALL, EXPORT_DESCRIBE, EXPORT_MEMORY,
    GuestAbort,
};
use super::engine::Runtime;
use super::error::PluginError;
use super::limits::Limits;

/// What a call used, for the harness and the logs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub fuel_used: u64,
    /// The fuel the call was given (it grows with the input: see
    /// [`Limits::fuel_for`]).
    pub fuel_budget: u64,
    pub peak_memory: usize,
    pub input_bytes: usize,
    pub output_bytes: usize,
    #[serde(serialize_with = "micros")]
    pub wall: Duration,
}

fn micros<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_micros() as u64)
}

/// The result of one call with what it used and logged.
#[derive(Debug)]
pub struct Call<T> {
    pub result: Result<T, PluginError>,
    pub usage: Usage,
    pub logs: Vec<LogLine>,
}

/// A fresh instance of a module with `limits` applied.
pub(super) struct Session {
    store: Store<CallState>,
    instance: Instance,
    limits: Limits,
    /// The fuel this call was given: the base budget, then the budget for
    /// its input ([`Limits::fuel_for`]).
    budget: u64,
}

impl Session {
    /// A fresh instance of `pre` under `limits`, armed for a call.
    /// Instantiation itself runs under the budget and deadline (a module's
    /// start function runs then); a spare made ahead of its call is armed
    /// again when the call takes it ([`Session::arm`]).
    pub(super) fn new(
        pre: &InstancePre<CallState>,
        limits: Limits,
    ) -> Result<Session, PluginError> {
        let mut store = Store::new(pre.module().engine(), CallState::new(limits.memory_bytes));
        store.limiter(|s| s as &mut dyn ResourceLimiter);
        store.epoch_deadline_trap();
        arm(&mut store, &limits)?;
        let instance = pre
            .instantiate(&mut store)
            .map_err(|e| classify(&e, &store, &limits, limits.fuel))?;
        if let Some(memory) = instance.get_memory(&mut store, EXPORT_MEMORY) {
            let size = memory.data_size(&store);
            store.data_mut().note_memory(size);
        }
        Ok(Session {
            store,
            instance,
            limits,
            budget: limits.fuel,
        })
    }

    /// Gives the call its whole fuel budget and its deadline from now.
    pub(super) fn arm(&mut self) -> Result<(), PluginError> {
        self.budget = self.limits.fuel;
        arm(&mut self.store, &self.limits)
    }

    /// Gives the call the fuel its input of `input_len` bytes allows
    /// ([`Limits::fuel_for`]), in place of the base budget it was armed
    /// with: instantiation ran under the base budget, the call gets the
    /// whole of its own.
    fn fund(&mut self, input_len: usize) -> Result<(), PluginError> {
        self.budget = self.limits.fuel_for(input_len);
        self.store
            .set_fuel(self.budget)
            .map_err(|e| PluginError::Host(format!("{e:#}")))
    }

    /// The store, for the profiler (`profile`) to hook into.
    pub(super) fn store_mut(&mut self) -> &mut Store<CallState> {
        &mut self.store
    }

    fn func<P: wasmtime::WasmParams, R: wasmtime::WasmResults>(
        &mut self,
        name: &str,
    ) -> Result<wasmtime::TypedFunc<P, R>, PluginError> {
        self.instance
            .get_typed_func::<P, R>(&mut self.store, name)
            .map_err(|_| PluginError::MissingExport(name.to_owned()))
    }

    fn fail(&self, e: &wasmtime::Error) -> PluginError {
        classify(e, &self.store, &self.limits, self.budget)
    }

    /// Reads `(ptr << 32) | len` bytes out of guest memory.
    fn read_packed(&mut self, packed: i64) -> Result<Vec<u8>, PluginError> {
        let (ptr, len) = abi::unpack(packed);
        if len > self.limits.output_bytes {
            return Err(PluginError::OutputTooLarge {
                len,
                cap: self.limits.output_bytes,
            });
        }
        let memory = self
            .instance
            .get_memory(&mut self.store, EXPORT_MEMORY)
            .ok_or_else(|| PluginError::MissingExport(EXPORT_MEMORY.into()))?;
        memory
            .data(&self.store)
            .get(ptr..ptr.saturating_add(len))
            .map(<[u8]>::to_vec)
            .ok_or_else(|| {
                PluginError::Contract(format!("output at {ptr}+{len} lies outside guest memory"))
            })
    }

    fn finish<T>(
        &mut self,
        result: Result<T, PluginError>,
        started: Instant,
        input_bytes: usize,
        output_bytes: usize,
    ) -> Call<T> {
        let fuel_left = self.store.get_fuel().unwrap_or(0);
        let state = self.store.data_mut();
        Call {
            result,
            logs: state.take_logs(),
            usage: Usage {
                fuel_used: self.budget.saturating_sub(fuel_left),
                fuel_budget: self.budget,
                peak_memory: state.peak_memory(),
                input_bytes,
                output_bytes,
                wall: started.elapsed(),
            },
        }
    }
}

/// Sets `store`'s fuel to the whole budget of `limits` and its deadline to
/// theirs from now.
fn arm(store: &mut Store<CallState>, limits: &Limits) -> Result<(), PluginError> {
    store
        .set_fuel(limits.fuel)
        .map_err(|e| PluginError::Host(format!("{e:#}")))?;
    store.set_epoch_deadline(Runtime::deadline_ticks(limits.deadline_ms));
    Ok(())
}

/// Turns a wasmtime error into the typed error, looking at the trap code
/// and at whether the memory cap was hit just before (a failed grow makes
/// Rust guests abort, which traps as `unreachable`). An `env.abort` is a
/// trap with the guest's message, whatever that message says.
fn classify(
    e: &wasmtime::Error,
    store: &Store<CallState>,
    limits: &Limits,
    budget: u64,
) -> PluginError {
    if store.data().cap_hit() {
        return PluginError::MemoryCap {
            cap: limits.memory_bytes,
        };
    }
    if let Some(abort) = e.downcast_ref::<GuestAbort>() {
        return PluginError::Trap(abort.to_string());
    }
    match e.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => PluginError::OutOfFuel { budget },
        Some(Trap::Interrupt) => PluginError::Deadline {
            ms: limits.deadline_ms,
        },
        Some(Trap::StackOverflow) => PluginError::StackOverflow,
        Some(trap) => PluginError::Trap(trap.to_string()),
        None if e.to_string().contains("concurrent") || e.to_string().contains("pool") => {
            PluginError::Busy
        }
        None => PluginError::Trap(format!("{e:#}")),
    }
}

/// Runs the entry call of `pre` under `limits` on raw input bytes, in a
/// fresh instance, and returns raw output bytes.
pub(super) fn invoke_raw(
    pre: &InstancePre<CallState>,
    limits: Limits,
    input: &[u8],
) -> Call<Vec<u8>> {
    run(input, &limits, || Session::new(pre, limits)).0
}

/// Runs the entry call on raw input bytes in the session `session` makes
/// (once the input is known to fit `limits`). Answers the call and, when
/// one was made, the used session, for the caller to drop.
pub(super) fn run(
    input: &[u8],
    limits: &Limits,
    session: impl FnOnce() -> Result<Session, PluginError>,
) -> (Call<Vec<u8>>, Option<Session>) {
    let started = Instant::now();
    let failed = |result: PluginError| Call {
        result: Err(result),
        usage: Usage {
            input_bytes: input.len(),
            wall: started.elapsed(),
            ..Usage::default()
        },
        logs: Vec::new(),
    };
    let too_large = |cap| {
        let len = input.len();
        (failed(PluginError::InputTooLarge { len, cap }), None)
    };
    if input.len() > limits.input_bytes {
        return too_large(limits.input_bytes);
    }
    let Ok(len) = i32::try_from(input.len()) else {
        return too_large(i32::MAX as usize);
    };
    let mut session = match session() {
        Ok(s) => s,
        Err(e) => return (failed(e), None),
    };
    let result = (|| {
        session.fund(input.len())?;
        let alloc = session.func::<i32, i32>(EXPORT_ALLOC)?;
        let ptr = alloc
            .call(&mut session.store, len)
            .map_err(|e| session.fail(&e))?;
        let memory = session
            .instance
            .get_memory(&mut session.store, EXPORT_MEMORY)
            .ok_or_else(|| PluginError::MissingExport(EXPORT_MEMORY.into()))?;
        memory
            .write(&mut session.store, ptr as u32 as usize, input)
            .map_err(|_| {
                PluginError::Contract(format!(
                    "{EXPORT_ALLOC} returned {ptr}, outside guest memory"
                ))
            })?;
        let entry = session.func::<(i32, i32), i64>(EXPORT_CALL)?;
        let packed = entry
            .call(&mut session.store, (ptr, len))
            .map_err(|e| session.fail(&e))?;
        session.read_packed(packed)
    })();
    let output_bytes = match &result {
        Ok(bytes) => bytes.len(),
        Err(PluginError::OutputTooLarge { len, .. }) => *len,
        Err(_) => 0,
    };
    let call = session.finish(result, started, input.len(), output_bytes);
    (call, Some(session))
}

/// `input` as the JSON a plugin reads.
pub fn input_bytes<I: Serialize>(input: &I) -> Result<Vec<u8>, PluginError> {
    serde_json::to_vec(input).map_err(|e| PluginError::Host(format!("serializing the input: {e}")))
}

impl Call<Vec<u8>> {
    /// The call with its output bytes parsed as the typed reply.
    pub fn parsed<O: DeserializeOwned>(self) -> Call<O> {
        Call {
            result: self.result.and_then(|out| parse_reply(&out)),
            usage: self.usage,
            logs: self.logs,
        }
    }
}

impl<T> Call<T> {
    /// A call that never reached the plugin.
    pub fn refused(error: PluginError) -> Call<T> {
        Call {
            result: Err(error),
            usage: Usage::default(),
            logs: Vec::new(),
        }
    }
}

/// Parses a reply: the `Reply` envelope and the output type in one pass
/// (the common case); only when that fails, again step by step, to say
/// whether the bytes were not JSON, not an envelope, or not the output.
pub fn parse_reply<O: DeserializeOwned>(bytes: &[u8]) -> Result<O, PluginError> {
    match serde_json::from_slice::<Reply<O>>(bytes) {
        Ok(Reply::Ok(out)) => Ok(out),
        Ok(Reply::Error(e)) => Err(PluginError::Refused(e.message)),
        Err(_) => Err(explain_reply::<O>(bytes)),
    }
}

/// What is wrong with a reply that did not parse.
fn explain_reply<O: DeserializeOwned>(bytes: &[u8]) -> PluginError {
    let value: serde_json::Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => return PluginError::InvalidJson(e.to_string()),
    };
    match serde_json::from_value::<Reply<serde_json::Value>>(value) {
        Err(e) => PluginError::Contract(format!(
            "not a reply envelope ({{\"ok\": ...}} or {{\"error\": ...}}): {e}"
        )),
        Ok(Reply::Ok(out)) => match serde_json::from_value::<O>(out) {
            Err(e) => PluginError::Contract(e.to_string()),
            // Parses step by step but not in one pass: say so rather than
            // guess.
            Ok(_) => PluginError::Contract("the reply does not parse in one pass".to_owned()),
        },
        Ok(Reply::Error(e)) => PluginError::Refused(e.message),
    }
}

/// Calls `outcomes_abi_version` on a fresh instance under scorer limits.
pub(super) fn abi_version(pre: &InstancePre<CallState>) -> Result<u32, PluginError> {
    let mut session = Session::new(pre, Limits::SCORER)?;
    let f = session.func::<(), i32>(EXPORT_ABI_VERSION)?;
    let v = f
        .call(&mut session.store, ())
        .map_err(|e| session.fail(&e))?;
    Ok(v as u32)
}

/// Calls `outcomes_describe` on a fresh instance under scorer limits.
pub(super) fn describe(pre: &InstancePre<CallState>) -> Result<Manifest, PluginError> {
    let mut session = Session::new(pre, Limits::SCORER)?;
    let f = session.func::<(), i64>(EXPORT_DESCRIBE)?;
    let packed = f
        .call(&mut session.store, ())
        .map_err(|e| session.fail(&e))?;
    let bytes = session.read_packed(packed)?;
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| PluginError::InvalidJson(format!("manifest: {e}")))?;
    serde_json::from_value(value).map_err(|e| PluginError::Manifest(e.to_string()))
}
