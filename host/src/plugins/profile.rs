//! A plugin's calls sampled with wasmtime's guest profiler, written in the
//! Firefox profiler's processed format (open it at profiler.firefox.com),
//! so an author sees which of their functions the fuel goes to. For the
//! author harness (`outcomes plugin test --profile`), never for calls that
//! serve: a profiled call has no wall-clock deadline (its fuel still
//! bounds it) and costs a backtrace per sample.
//!
//! Samples are taken when the epoch passes the call's deadline, at
//! function entries and loop heads (wasmtime's epoch checks). A scoring
//! call lasts tens of microseconds, far less than the engine's 5 ms epoch,
//! so while profiling a thread of its own advances the epoch every
//! [`INTERVAL`], and each input is called again, in a fresh instance every
//! time, until [`PER_INPUT`] has passed: a profile of many calls, not of
//! the one or two samples a single call would give.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use wasmtime::{GuestProfiler, UpdateDeadline};

use super::call::{self, Session};
use super::error::PluginError;
use super::module::Plugin;

/// How often the epoch advances while profiling: the sampling interval.
pub const INTERVAL: Duration = Duration::from_micros(100);

/// How long each input is called again and again.
pub const PER_INPUT: Duration = Duration::from_millis(200);

/// At most this many calls per input, however fast they are.
const MAX_CALLS: usize = 20_000;

/// What a profile holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profiled {
    /// Calls made, over all inputs.
    pub calls: usize,
    /// Samples taken.
    pub samples: usize,
}

/// Advances `engine`'s epoch every [`INTERVAL`] until dropped.
struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ticker {
    fn start(engine: wasmtime::Engine) -> Result<Ticker, PluginError> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("plugin-profile-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(INTERVAL);
                    engine.increment_epoch();
                }
            })
            .map_err(|e| PluginError::Host(format!("starting the profiling ticker: {e}")))?;
        Ok(Ticker {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Calls `plugin` on each of `inputs` (raw input JSON) again and again
/// under its own limits, sampling every call, and writes the profile to
/// `out`. Failing calls are profiled too (a trap or running out of fuel is
/// worth seeing); the harness reports their results separately.
pub fn profile(
    plugin: &Plugin,
    inputs: &[Vec<u8>],
    out: impl std::io::Write,
) -> Result<Profiled, PluginError> {
    let pre = plugin.pre();
    let module = pre.module().clone();
    let engine = module.engine().clone();
    let title = format!("{} {}", plugin.name(), plugin.version());
    let profiler = GuestProfiler::new(
        &engine,
        &title,
        INTERVAL,
        [(plugin.name().to_owned(), module)],
    )
    .map_err(|e| PluginError::Host(format!("starting the guest profiler: {e:#}")))?;
    let profiler = Arc::new(Mutex::new(profiler));
    let samples = Arc::new(AtomicUsize::new(0));
    let mut calls = 0;
    {
        let _ticker = Ticker::start(engine.clone())?;
        for input in inputs {
            let started = Instant::now();
            let mut n = 0;
            while n == 0 || (started.elapsed() < PER_INPUT && n < MAX_CALLS) {
                let hook = |session: &mut Session| {
                    let profiler = profiler.clone();
                    let samples = samples.clone();
                    let mut last = Instant::now();
                    let store = session.store_mut();
                    store.epoch_deadline_callback(move |ctx| {
                        let now = Instant::now();
                        profiler
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .sample(&ctx, now - last);
                        last = now;
                        samples.fetch_add(1, Ordering::Relaxed);
                        Ok(UpdateDeadline::Continue(1))
                    });
                    store.set_epoch_deadline(1);
                };
                let (_call, _used) = call::run(input, &plugin.limits, || {
                    let mut session = Session::new(pre, plugin.limits)?;
                    hook(&mut session);
                    Ok(session)
                });
                n += 1;
            }
            calls += n;
        }
    }
    let profiler = Arc::try_unwrap(profiler)
        .map_err(|_| PluginError::Host("the profiler is still in use".into()))?
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    profiler
        .finish(out)
        .map_err(|e| PluginError::Host(format!("writing the profile: {e:#}")))?;
    Ok(Profiled {
        calls,
        samples: samples.load(Ordering::Relaxed),
    })
}
