//! Spare instances: every call still runs in an instance nobody used
//! before, but making that instance and throwing it away afterwards happen
//! on a background thread, off the request.
//!
//! A call takes a spare of its plugin version when one is ready, or
//! instantiates inline when none is; when few are left it asks the thread
//! for more, which makes several at once. The used instance goes back to
//! the thread to be dropped, which resets its pool slot's memory; the
//! call's slot (`Runtime::slots`) goes with it and is released only once
//! the instance is gone, so instances alive for calls never outnumber the
//! call slots, however far behind the thread is.
//!
//! Only the calls that run on the request's task use spares (scorers: a
//! small fuel budget, the plugin's own limits). Calculators (on blocking
//! threads), loading, self-tests, the harness and rescoring instantiate as
//! they always did. Spares of a plugin version go when the version goes
//! (hot reload).
//!
//! Knows a plugin version only by what a call needs of it (its pre-linked
//! module and limits): `module` gives each `Plugin` its [`Spares`].
//!
//! Also here: `lower_priority`, how background threads are scheduled,
//! with the crate's other `unsafe` block: nice 10 for the spare thread,
//! `SCHED_IDLE` for shadow scoring.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};

use tokio::sync::OwnedSemaphorePermit;

use wasmtime::InstancePre;

use super::abi::CallState;
use super::call::{self, Call, Session};
use super::engine::SPARE_SLOTS as SLOTS;
use super::error::PluginError;
use super::limits::Limits;

/// Spares kept ready per plugin version: enough for a burst of calls while
/// the thread catches up.
pub const PER_PLUGIN: usize = 8;

/// A call that leaves fewer spares than this asks for a refill: the thread
/// then makes several at once instead of waking for every call.
const LOW_WATER: usize = PER_PLUGIN / 2;

/// Used instances wait until this many are queued (or a refill is asked)
/// before the thread is woken to drop them, for the same reason.
const USED_BATCH: usize = 8;

/// How long the thread lets fewer than [`USED_BATCH`] used instances wait
/// when no call comes to push more.
const LINGER: std::time::Duration = std::time::Duration::from_millis(10);

/// The spares of one plugin version, and what making one takes.
pub struct Spares {
    /// The plugin's name, for the logs.
    name: String,
    pre: InstancePre<CallState>,
    /// The plugin's own limits: spares serve only calls under them.
    limits: Limits,
    ready: Mutex<Vec<Session>>,
    /// A refill of this version waits in the workshop's queue.
    asked: AtomicBool,
    thread: SpareThread,
}

impl std::fmt::Debug for Spares {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spares")
            .field("name", &self.name)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Spares {
    fn ready(&self) -> MutexGuard<'_, Vec<Session>> {
        self.ready.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Calls the plugin under its own limits in a spare instance (or a
    /// fresh one made now when no spare is ready), and hands the used
    /// instance, with `slot`, to the workshop to be dropped.
    pub fn invoke(
        self: &Arc<Self>,
        input: &[u8],
        slot: Option<OwnedSemaphorePermit>,
    ) -> Call<Vec<u8>> {
        let (call, used) = call::run(input, &self.limits, || self.take());
        if let Some(session) = used {
            self.thread
                .workshop
                .push(false, |queue| queue.used.push((session, slot)));
        }
        call
    }

    /// A spare, armed for a call, or a new instance; asks for the spares to
    /// be topped up.
    fn take(self: &Arc<Self>) -> Result<Session, PluginError> {
        let workshop = &self.thread.workshop;
        let (spare, left) = {
            let mut ready = self.ready();
            (ready.pop(), ready.len())
        };
        if left < LOW_WATER && !self.asked.swap(true, Ordering::Relaxed) {
            let weak = Arc::downgrade(self);
            workshop.push(true, |queue| queue.refill.push(weak));
        }
        match spare {
            Some(mut session) => {
                workshop.alive.fetch_sub(1, Ordering::Relaxed);
                session.arm()?;
                Ok(session)
            }
            None => Session::new(&self.pre, self.limits),
        }
    }
}

impl Drop for Spares {
    fn drop(&mut self) {
        let left = self.ready().len();
        self.thread
            .workshop
            .alive
            .fetch_sub(left, Ordering::Relaxed);
    }
}

/// The background thread that makes and drops spare instances, shared by
/// every plugin version of one runtime. It stops when the last handle goes
/// (with the runtime and the last plugin version); instances still queued
/// are dropped with it.
#[derive(Clone)]
pub struct SpareThread {
    workshop: Arc<Workshop>,
    _stop: Arc<Stop>,
}

impl std::fmt::Debug for SpareThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpareThread").finish_non_exhaustive()
    }
}

impl SpareThread {
    /// Starts the thread.
    pub fn start() -> Result<SpareThread, PluginError> {
        let (workshop, stop) = Workshop::start()?;
        Ok(SpareThread {
            workshop,
            _stop: Arc::new(stop),
        })
    }

    /// No spares yet for the plugin `name`, whose calls instantiate `pre`
    /// under `limits`; they are made once it is called.
    pub fn spares(&self, name: &str, pre: InstancePre<CallState>, limits: Limits) -> Arc<Spares> {
        Arc::new(Spares {
            name: name.to_owned(),
            pre,
            limits,
            ready: Mutex::new(Vec::new()),
            asked: AtomicBool::new(false),
            thread: self.clone(),
        })
    }
}

/// The background thread's queue, shared with every plugin version of one
/// runtime.
struct Workshop {
    queue: Mutex<Queue>,
    wake: Condvar,
    /// Spares alive across every plugin version: at most [`SLOTS`].
    alive: AtomicUsize,
}

#[derive(Default)]
struct Queue {
    /// Plugin versions a call took a spare of (or found none).
    refill: Vec<Weak<Spares>>,
    /// Instances a call used, with the call slot each holds.
    used: Vec<(Session, Option<OwnedSemaphorePermit>)>,
    /// What the thread waits for, if it waits.
    waiting: Waiting,
    stop: bool,
}

/// What the thread waits for.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Waiting {
    /// It works.
    #[default]
    No,
    /// Any work: the queue was empty.
    Work,
    /// More used instances, for at most [`LINGER`].
    More,
}

impl Workshop {
    /// Starts the thread. It stops when the returned [`Stop`] is dropped.
    fn start() -> Result<(Arc<Workshop>, Stop), PluginError> {
        let workshop = Arc::new(Workshop {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            alive: AtomicUsize::new(0),
        });
        let worker = workshop.clone();
        std::thread::Builder::new()
            .name("plugin-spares".into())
            .spawn(move || worker.work())
            .map_err(|e| PluginError::Host(format!("starting the spare-instance thread: {e}")))?;
        Ok((workshop.clone(), Stop(workshop)))
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues work and wakes the thread if it waits for it: for any work
    /// when the queue was empty, else only for `urgent` work or a batch of
    /// used instances.
    fn push(&self, urgent: bool, add: impl FnOnce(&mut Queue)) {
        let mut queue = self.queue();
        add(&mut queue);
        let wake = match queue.waiting {
            Waiting::No => false,
            Waiting::Work => true,
            Waiting::More => urgent || queue.used.len() >= USED_BATCH,
        };
        if wake {
            queue.waiting = Waiting::No;
            self.wake.notify_one();
        }
    }

    fn work(&self) {
        lower_priority(Background::Yielding);
        loop {
            let (refill, used) = {
                let mut queue = self.queue();
                while !queue.stop && queue.refill.is_empty() && queue.used.is_empty() {
                    queue.waiting = Waiting::Work;
                    queue = self
                        .wake
                        .wait(queue)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                if !queue.stop && queue.refill.is_empty() && queue.used.len() < USED_BATCH {
                    // A few used instances: wait a moment for more.
                    queue.waiting = Waiting::More;
                    queue = self
                        .wake
                        .wait_timeout(queue, LINGER)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
                queue.waiting = Waiting::No;
                if queue.stop {
                    return;
                }
                (
                    std::mem::take(&mut queue.refill),
                    std::mem::take(&mut queue.used),
                )
            };
            // Used instances first: dropping them frees pool and call slots.
            drop(used);
            for spares in refill.iter().filter_map(Weak::upgrade) {
                self.refill(&spares);
            }
        }
    }

    /// Tops up `spares` while the pool has room for them.
    fn refill(&self, spares: &Spares) {
        // A call from now on asks again.
        spares.asked.store(false, Ordering::Relaxed);
        while spares.ready().len() < PER_PLUGIN {
            if self.alive.fetch_add(1, Ordering::Relaxed) >= SLOTS as usize {
                self.alive.fetch_sub(1, Ordering::Relaxed);
                return;
            }
            match Session::new(&spares.pre, spares.limits) {
                Ok(session) => spares.ready().push(session),
                Err(e) => {
                    // The call that finds no spare instantiates inline and
                    // reports the error; nothing to retry here.
                    self.alive.fetch_sub(1, Ordering::Relaxed);
                    tracing::debug!(plugin = spares.name, error = %e, "no spare instance");
                    return;
                }
            }
        }
    }
}

/// How far a background thread steps back for the threads that serve
/// requests and write to the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Background {
    /// Nice 10: about a tenth of a default thread's share of a busy core.
    /// For work a request comes to wait for only when it falls far
    /// behind: making and dropping instances here, as long as calls find
    /// spares or make their own.
    Yielding,
    /// `SCHED_IDLE`: runs when a core would otherwise idle. For work that
    /// may fall behind and be dropped: scoring with candidates
    /// (`crate::shadow`).
    Idle,
}

/// Lowers the calling thread's priority. On Linux, `setpriority` and
/// `sched_setscheduler` with a thread id change only that thread;
/// elsewhere the thread keeps the process's priority.
pub fn lower_priority(to: Background) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no preconditions; setpriority and
        // sched_setscheduler on our own thread id change only this
        // thread's scheduling, lowering it needs no privilege, and
        // `param` outlives the call that reads it.
        #[allow(unsafe_code)]
        let failed = unsafe {
            let tid = libc::gettid();
            match to {
                Background::Yielding => {
                    libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 10) != 0
                }
                Background::Idle => {
                    let param = libc::sched_param { sched_priority: 0 };
                    libc::sched_setscheduler(tid, libc::SCHED_IDLE, &param) != 0
                }
            }
        };
        if failed {
            tracing::debug!(?to, "a background thread keeps the default priority");
        }
    }
}

/// Stops the workshop's thread when dropped (with the last
/// [`SpareThread`]); instances still queued are dropped with it.
struct Stop(Arc<Workshop>);

impl Drop for Stop {
    fn drop(&mut self) {
        let mut queue = self.0.queue();
        queue.stop = true;
        queue.refill.clear();
        queue.used.clear();
        self.0.wake.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::abi;
    use crate::plugins::engine::{Runtime, sha256_hex};

    /// The smallest module of the ABI: describes itself, answers
    /// `{"ok":{}}`.
    fn module() -> Vec<u8> {
        let manifest = format!(
            r#"{{"name":"spare_test","kind":"scorer","version":"1.0.0","abi_version":{}}}"#,
            plugin_sdk::ABI_VERSION
        );
        let reply = r#"{"ok":{}}"#;
        let packed = |at: u64, len: usize| (at << 32) | len as u64;
        wat::parse_str(format!(
            r#"(module
  (memory (export "memory") 1)
  (data (i32.const 16) "{manifest}")
  (data (i32.const 512) "{reply}")
  (func (export "outcomes_abi_version") (result i32) (i32.const {abi}))
  (func (export "outcomes_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "outcomes_describe") (result i64) (i64.const {describe}))
  (func (export "outcomes_call") (param i32 i32) (result i64) (i64.const {call})))"#,
            manifest = manifest.replace('"', "\\\""),
            reply = reply.replace('"', "\\\""),
            abi = plugin_sdk::ABI_VERSION,
            describe = packed(16, manifest.len()),
            call = packed(512, reply.len()),
        ))
        .expect("the module assembles")
    }

    /// A runtime and its spare thread.
    fn runtime() -> (Runtime, SpareThread) {
        let runtime = Runtime::new(
            Limits::SCORER.memory_bytes,
            None,
            std::sync::Arc::new(crate::metrics::Metrics::default()),
        )
        .expect("the engine");
        (runtime, SpareThread::start().expect("the spare thread"))
    }

    /// The spares of `n` versions of the module, as `module` gives them.
    fn load(runtime: &Runtime, thread: &SpareThread, n: usize) -> Vec<Arc<Spares>> {
        let bytes = module();
        let (module, _) = runtime
            .compile(&sha256_hex(&bytes), &bytes)
            .expect("the module compiles");
        (0..n)
            .map(|_| {
                let pre = abi::linker(runtime.engine())
                    .and_then(|l| {
                        l.instantiate_pre(&module)
                            .map_err(|e| PluginError::Invalid(e.to_string()))
                    })
                    .expect("the module links");
                thread.spares("spare_test", pre, Limits::SCORER)
            })
            .collect()
    }

    fn ready(plugin: &Spares) -> usize {
        plugin.ready().len()
    }

    #[test]
    fn spares_stop_at_the_pool_budget_and_go_with_their_version() {
        let (runtime, thread) = runtime();
        let workshop = &thread.workshop;
        let plugins = load(&runtime, &thread, 5);
        let alive = || workshop.alive.load(Ordering::Relaxed);
        for plugin in &plugins {
            workshop.refill(plugin);
        }
        let full = SLOTS as usize / PER_PLUGIN;
        let counts: Vec<usize> = plugins.iter().map(|p| ready(p)).collect();
        assert_eq!(counts[..full], vec![PER_PLUGIN; full][..]);
        assert_eq!(counts[full..], vec![0; plugins.len() - full][..]);
        assert_eq!(alive(), SLOTS as usize);

        // A version that goes (a reload, the last call done) takes its
        // spares along, and the budget is free for the others.
        let mut plugins = plugins;
        let gone = plugins.remove(0);
        drop(gone);
        assert_eq!(alive(), SLOTS as usize - PER_PLUGIN);
        let last = plugins.last().expect("a plugin");
        workshop.refill(last);
        assert_eq!(ready(last), PER_PLUGIN);
        assert_eq!(alive(), SLOTS as usize);
        drop(plugins);
        assert_eq!(alive(), 0);
    }

    #[test]
    fn a_call_takes_a_spare_and_answers_as_a_fresh_instance_would() {
        let (runtime, thread) = runtime();
        let mut plugins = load(&runtime, &thread, 2);
        let (plugin, without) = (plugins.remove(0), plugins.remove(0));
        thread.workshop.refill(&plugin);
        let call = plugin.invoke(b"{}", None);
        assert_eq!(call.result.expect("the call answers"), br#"{"ok":{}}"#);
        assert_eq!(call.usage.input_bytes, 2);
        assert_eq!(ready(&plugin), PER_PLUGIN - 1);
        assert_eq!(
            thread.workshop.alive.load(Ordering::Relaxed),
            PER_PLUGIN - 1
        );

        // With no spare ready, the call makes its own instance.
        assert_eq!(ready(&without), 0);
        let call = without.invoke(b"{}", None);
        assert_eq!(call.result.expect("the call answers"), br#"{"ok":{}}"#);
    }
}
