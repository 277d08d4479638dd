//! The one wasmtime engine of the host and what it compiles: the engine's
//! configuration (fuel, epoch interruption, NaN canonicalisation, no
//! threads or relaxed SIMD, a capped wasm stack, a pooling allocator sized
//! for the largest memory cap), the epoch ticker that gives deadlines their
//! clock, and the compiled-module cache on disk. Knows nothing of the
//! plugin ABI or of calls.
//!
//! Compiled artifacts are keyed by module content hash and an engine key,
//! so a restart does not recompile. Files are written to a temporary name
//! and renamed, so a reader never sees half a file; an artifact that fails
//! to load is recompiled and replaced.

use std::path::{Path, PathBuf};
use std::time::Duration;

use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, Module, PoolingAllocationConfig,
};

use super::error::PluginError;

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
    cache_dir: Option<PathBuf>,
    /// Changes whenever artifacts of this engine stop being loadable.
    key: String,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("cache_dir", &self.cache_dir)
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
    /// engine is dropped). Compiled modules are kept in `cache_dir`.
    pub fn new(
        max_memory_bytes: usize,
        cache_dir: Option<PathBuf>,
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
            cache_dir,
            key,
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

    /// The module for `bytes` (whose SHA-256 is `sha256`), from the cache or
    /// compiled now.
    pub fn compile(&self, sha256: &str, bytes: &[u8]) -> Result<(Module, Compiled), PluginError> {
        let path = self
            .cache_dir
            .as_ref()
            .map(|d| d.join(format!("{sha256}-{}.cwasm", self.key)));
        if let Some(path) = path.as_ref().filter(|p| p.is_file()) {
            match load(self, path) {
                Ok(module) => return Ok((module, Compiled::Cached)),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "compiled artifact unusable; recompiling")
                }
            }
        }
        let module = Module::from_binary(&self.engine, bytes)
            .map_err(|e| PluginError::Invalid(format!("{e:#}")))?;
        if let Some(path) = path
            && let Err(e) = store(&module, &path)
        {
            tracing::warn!(path = %path.display(), error = %e, "could not cache the compiled module");
        }
        Ok((module, Compiled::Fresh))
    }
}

#[allow(unsafe_code)]
fn load(runtime: &Runtime, path: &Path) -> Result<Module, String> {
    // SAFETY: wasmtime requires that the file be an artifact it produced and
    // that nobody changes it while mapped. Only hosts write into the cache
    // folder (under the data directory), always to a temporary name renamed
    // into place: a rename replaces the directory entry, never the bytes of
    // a file already mapped. The file name binds it to the module's hash and
    // this engine's configuration, and wasmtime itself checks the version
    // and configuration header before using it.
    unsafe { Module::deserialize_file(&runtime.engine, path) }.map_err(|e| format!("{e:#}"))
}

fn store(module: &Module, path: &Path) -> std::io::Result<()> {
    let bytes = module
        .serialize()
        .map_err(|e| std::io::Error::other(format!("{e:#}")))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// A key that changes whenever compiled artifacts of `engine` stop being
/// loadable: the wasmtime version and the engine's configuration.
fn artifact_key(engine: &Engine) -> String {
    use std::hash::Hash;
    let mut hasher = ShaHasher(sha2::Sha256::default());
    engine.precompile_compatibility_hash().hash(&mut hasher);
    env!("CARGO_PKG_VERSION").hash(&mut hasher);
    let digest = sha2::Digest::finalize(hasher.0);
    hex(&digest[..12])
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
    hex(&sha2::Sha256::digest(bytes))
}

/// Lower-case hex.
fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}
