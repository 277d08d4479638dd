//! The one wasmtime engine of the process and its configuration: fuel,
//! epoch interruption, NaN canonicalisation, no threads or relaxed SIMD,
//! a capped wasm stack, and a pooling allocator sized for the largest
//! memory cap. Plus the epoch ticker that gives deadlines their clock.

use std::sync::Arc;
use std::time::Duration;

use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::error::PluginError;
use super::spare::{self, Stop, Workshop};

/// How often the epoch advances: the resolution of call deadlines.
pub const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Wasm stack per call. Engine-wide, so not a per-plugin override.
pub const MAX_WASM_STACK: usize = 512 * 1024;

/// Calls that may run at once. Calls beyond this wait for a slot (see
/// `Runtime::slots`), so a burst of requests queues instead of failing.
pub const INSTANCE_SLOTS: u32 = 64;

/// Further pool slots for loading (describe, self-test) and the harness,
/// which do not take a call slot.
const LOAD_SLOTS: u32 = 16;

/// The engine, shared by every plugin version, the slots that bound
/// concurrent instances, and the thread that makes spare instances.
#[derive(Clone)]
pub struct Runtime {
    pub(super) engine: Engine,
    pub(super) slots: Arc<tokio::sync::Semaphore>,
    pub(super) workshop: Arc<Workshop>,
    _stop: Arc<Stop>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").finish_non_exhaustive()
    }
}

impl Runtime {
    /// Builds the engine for plugins whose memory cap is at most
    /// `max_memory_bytes`, and starts its epoch ticker (which stops when the
    /// engine is dropped).
    pub fn new(max_memory_bytes: usize) -> Result<Runtime, PluginError> {
        let mut pool = PoolingAllocationConfig::new();
        let pool_size = INSTANCE_SLOTS + LOAD_SLOTS + spare::SLOTS;
        pool.total_core_instances(pool_size)
            .total_memories(pool_size)
            .total_tables(pool_size)
            .max_memories_per_module(1)
            .max_memory_size(max_memory_bytes)
            .table_elements(100_000)
            // Reset a slot's dirty pages with memset and keep them mapped,
            // instead of handing them back to the kernel after every call:
            // a fresh instance per call then costs no page faults or
            // cross-core TLB flushes for the memory a plugin typically uses
            // (its 256 KiB initial memory; a calculator over many responses
            // grows further).
            .linear_memory_keep_resident(2 * 1024 * 1024)
            // A Rust plugin's table (its indirect-call targets) fits in one
            // page. Keeping only one page resident lets wasmtime reset it
            // with a plain memset instead of a PAGEMAP_SCAN ioctl: one
            // system call less per call.
            .table_keep_resident(4096)
            // On Linux 6.7 or later, reset only the pages a call wrote
            // (found with the PAGEMAP_SCAN ioctl) instead of memset over
            // everything accessible: a call writes a few pages of its
            // stack and heap, far less than its memory's size.
            .pagemap_scan(Enabled::Auto);
        let mut config = Config::new();
        config
            .consume_fuel(true)
            .epoch_interruption(true)
            .cranelift_nan_canonicalization(true)
            // Threads are compiled out (no `threads` feature), so shared
            // memories and atomics-based waiting cannot be used.
            .wasm_relaxed_simd(false)
            .max_wasm_stack(MAX_WASM_STACK)
            // Each slot reserves only its cap (plus a guard), so many
            // engines (one per test app) fit in the address space.
            .memory_reservation(max_memory_bytes as u64)
            .memory_guard_size(2 * 1024 * 1024)
            .memory_reservation_for_growth(0)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&config).map_err(|e| PluginError::Host(e.to_string()))?;
        let weak = engine.weak();
        std::thread::Builder::new()
            .name("plugin-epoch".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(EPOCH_TICK);
                    match weak.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                }
            })
            .map_err(|e| PluginError::Host(format!("starting the epoch ticker: {e}")))?;
        let (workshop, stop) = Workshop::start()?;
        Ok(Runtime {
            engine,
            slots: Arc::new(tokio::sync::Semaphore::new(INSTANCE_SLOTS as usize)),
            workshop,
            _stop: Arc::new(stop),
        })
    }

    /// Ticks of the epoch clock that make up `ms` milliseconds (at least 1).
    pub fn deadline_ticks(ms: u64) -> u64 {
        (ms / EPOCH_TICK.as_millis() as u64).max(1) + 1
    }

    /// A key that changes whenever compiled artifacts of this engine stop
    /// being loadable: the wasmtime version and the engine's configuration.
    pub fn artifact_key(&self) -> String {
        use std::hash::Hash;
        let mut hasher = ShaHasher(sha2::Sha256::default());
        self.engine
            .precompile_compatibility_hash()
            .hash(&mut hasher);
        env!("CARGO_PKG_VERSION").hash(&mut hasher);
        let digest = sha2::Digest::finalize(hasher.0);
        super::hex(&digest[..12])
    }
}

/// Feeds `Hash` output into SHA-256, so the key is stable across processes
/// (std's hashers are seeded or unspecified).
struct ShaHasher(sha2::Sha256);

impl std::hash::Hasher for ShaHasher {
    fn finish(&self) -> u64 {
        0
    }

    fn write(&mut self, bytes: &[u8]) {
        sha2::Digest::update(&mut self.0, bytes);
    }
}
