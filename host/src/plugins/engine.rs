//! The one wasmtime engine of the host and what it compiles: the engine's
//! configuration (fuel, epoch interruption, NaN canonicalisation, no
//! threads or relaxed SIMD, a capped wasm stack, a pooling allocator sized
//! for the largest memory cap), the epoch ticker that gives deadlines their
//! clock, and compiling through the artifact cache (`cache`). Knows nothing
//! of the plugin ABI or of calls.
//!
//! Compiled artifacts are named by module content hash and an engine key,
//! so a restart does not recompile. One is used only once the cache has
//! verified its MAC; an artifact refused or failing to load is counted,
//! recompiled and replaced.
//!
//! Holds one of the crate's two `unsafe` blocks: `Module::deserialize`,
//! only of bytes whose MAC the cache verified.

use std::sync::Arc;
use std::time::Duration;

use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, Module, PoolingAllocationConfig,
};

use super::cache::{ArtifactCache, Lookup};
use super::error::PluginError;
use crate::metrics::Metrics;

/// How often the epoch advances: the resolution of call deadlines.
pub const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Wasm stack per call. Engine-wide, so not a per-plugin override.
pub const MAX_WASM_STACK: usize = 512 * 1024;

/// Largest table an instance may have, in elements.
pub const MAX_TABLE_ELEMENTS: usize = 100_000;

/// Calls that may run at once. Calls beyond this wait for a call slot
/// (`Plugins` holds them), so a burst of requests queues instead of failing.
pub const INSTANCE_SLOTS: u32 = 64;

/// Further pool slots for loading (describe, self-test) and the harness,
/// which do not take a call slot.
const LOAD_SLOTS: u32 = 16;

/// Spares of all plugin versions together (see `spare`); each holds a pool
/// slot, and the pool has this many slots for them. Only plugins that are
/// called get spares, so a few busy ones share these.
pub const SPARE_SLOTS: u32 = 32;

/// The engine, shared by every plugin version, and where its compiled
/// modules are kept.
pub struct Runtime {
    engine: Engine,
    /// Compiled artifacts; `None` compiles every time.
    cache: Option<ArtifactCache>,
    /// Changes whenever artifacts of this engine stop being loadable.
    key: String,
    metrics: Arc<Metrics>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("cache", &self.cache)
            .finish_non_exhaustive()
    }
}

/// Whether a module came from the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compiled {
    Cached,
    Fresh,
}

impl Runtime {
    /// Builds the engine for plugins whose memory cap is at most
    /// `max_memory_bytes`, and starts its epoch ticker (which stops when the
    /// engine is dropped). Compiled modules are kept in `cache`; refused
    /// artifacts are counted in `metrics`.
    pub fn new(
        max_memory_bytes: usize,
        cache: Option<ArtifactCache>,
        metrics: Arc<Metrics>,
    ) -> Result<Runtime, PluginError> {
        let mut pool = PoolingAllocationConfig::new();
        let pool_size = INSTANCE_SLOTS + LOAD_SLOTS + SPARE_SLOTS;
        pool.total_core_instances(pool_size)
            .total_memories(pool_size)
            .total_tables(pool_size)
            .max_memories_per_module(1)
            .max_memory_size(max_memory_bytes)
            .table_elements(MAX_TABLE_ELEMENTS)
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
        let key = artifact_key(&engine);
        Ok(Runtime {
            engine,
            cache,
            key,
            metrics,
        })
    }

    /// The engine, for linking and instantiating its modules.
    pub(super) fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Ticks of the epoch clock that make up `ms` milliseconds (at least 1).
    pub fn deadline_ticks(ms: u64) -> u64 {
        (ms / EPOCH_TICK.as_millis() as u64).max(1) + 1
    }

    /// The module for `bytes` (whose SHA-256 is `sha256`), from a verified
    /// cached artifact or compiled now (and cached).
    pub fn compile(&self, sha256: &str, bytes: &[u8]) -> Result<(Module, Compiled), PluginError> {
        let name = format!("{sha256}-{}.cwasm", self.key);
        if let Some(cache) = &self.cache {
            match cache.read(&name) {
                Lookup::Verified(artifact) => match deserialize(&self.engine, &artifact) {
                    Ok(module) => return Ok((module, Compiled::Cached)),
                    Err(why) => self.refused(&name, "unloadable", &why),
                },
                Lookup::Refused(why) => self.refused(&name, "unverified", &why),
                Lookup::Missing => {}
            }
        }
        let module = Module::from_binary(&self.engine, bytes)
            .map_err(|e| PluginError::Invalid(format!("{e:#}")))?;
        if let Some(cache) = &self.cache {
            let written = module
                .serialize()
                .map_err(|e| std::io::Error::other(format!("{e:#}")))
                .and_then(|artifact| cache.write(&name, &artifact));
            if let Err(e) = written {
                tracing::warn!(artifact = %name, error = %e, "could not cache the compiled module");
            }
        }
        Ok((module, Compiled::Fresh))
    }

    /// Counts and logs an artifact that is not used; it is recompiled.
    fn refused(&self, name: &str, reason: &str, why: &str) {
        tracing::warn!(artifact = %name, reason, error = %why, "compiled artifact refused; recompiling");
        self.metrics.inc(
            "outcomes_plugin_artifacts_refused_total",
            &[("reason", reason)],
        );
    }
}

#[allow(unsafe_code)]
fn deserialize(engine: &Engine, verified: &[u8]) -> Result<Module, String> {
    // SAFETY: `Module::deserialize` runs the native code it is given without
    // checking it, so it must be given only what `Module::serialize` of an
    // engine configured like this one produced. These bytes are:
    // `ArtifactCache::read` hands them out only after checking, in constant
    // time, their HMAC-SHA256 under the cache key (a 0600 file of this
    // service's user, never in the cache folder) over the artifact's name
    // and exactly these bytes; a host holding that key computed it when it
    // wrote the output of `serialize`. The name binds the module's hash and
    // the engine key (wasmtime's compatibility hash, this crate's version,
    // the artifact format), so another module's artifact, or one of another
    // engine, does not verify under it. The file was read once into memory
    // and the check and this call use that one buffer, which wasmtime copies
    // into a mapping of its own: a change to the file after the check
    // cannot reach the code. wasmtime checks its version header as well.
    unsafe { Module::deserialize(engine, verified) }.map_err(|e| format!("{e:#}"))
}

/// A key that changes whenever compiled artifacts of `engine` stop being
/// loadable: the wasmtime version and the engine's configuration.
fn artifact_key(engine: &Engine) -> String {
    use std::hash::Hash;
    let mut hasher = ShaHasher(sha2::Sha256::default());
    engine.precompile_compatibility_hash().hash(&mut hasher);
    env!("CARGO_PKG_VERSION").hash(&mut hasher);
    // Format 2: the artifact followed by its MAC (`cache`).
    2u32.hash(&mut hasher);
    let digest = sha2::Digest::finalize(hasher.0);
    hex::encode(&digest[..12])
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

/// SHA-256 of `bytes`, hex: a module's identity (and its artifact's name).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}
