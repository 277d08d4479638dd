//! The plugin runtime: the only place that knows wasmtime. Scorers and
//! calculators are core WebAssembly modules exchanging versioned JSON
//! (plugin-sdk holds the contract); each call runs in a fresh instance under
//! limits; the serving set is swapped atomically on reload.
//!
//! Layout on disk: the plugin directory holds one folder per plugin, each
//! with one `.wasm` module and its golden fixtures in `fixtures/`.
//!
//! Imports run one way: each file uses only those before it in this list.
//!
//! 1. `error`: the one error type. Uses nothing of ours.
//!    `sections`: the section layout of a module's bytes (reading a custom
//!    section, appending one). Uses nothing of ours.
//! 2. `limits`: what a call may use, as data. Uses nothing of ours.
//!    `language`: which language wrote a module, and its hint for a load
//!    error. Uses `error` and `sections`.
//! 3. `cache`: the compiled-module cache on disk: its folder and key, and
//!    artifacts read and written with their MAC.
//! 4. `engine`: the wasmtime engine, its epoch ticker, compiling through
//!    the cache.
//! 5. `abi`: export names and types, the `outcomes.log` import and its
//!    linker, the state a call keeps.
//! 6. `call`: one call into a pre-linked module under limits.
//! 7. `spare`: instances made ahead of calls, and the thread that makes
//!    and drops them.
//! 8. `module`: probes a module, then builds the `Plugin` from what the
//!    probe found.
//! 9. `selftest`: a plugin's golden fixtures, run before it may serve.
//!    `profile`: a plugin's calls sampled by wasmtime's guest profiler,
//!    for the author harness (`outcomes plugin test --profile`).
//! 10. `registry`: the serving set, and a reload's bookkeeping that builds
//!     the next one.
//! 11. this file: assembles the runtime ([`Plugins`]): reads the plugin
//!     directory, reloads, and calls under the call slots.
//!
//! The runtime loads and calls modules; it holds no policy about which
//! version of a scorer serves while a candidate is on trial
//! (`crate::trials` does).
//!
//! A module whose SHA-256 is not in `plugin_allow` (when that is set) is
//! refused before it is compiled: a folder's here, a candidate's by its
//! loader (`shadow/`, `outcomes plugin candidate`) through
//! [`Plugins::allows`].

mod abi;
mod cache;
pub mod call;
mod engine;
pub mod error;
pub mod language;
pub mod limits;
pub mod module;
pub mod profile;
pub mod registry;
pub mod sections;
pub mod selftest;
mod spare;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use chrono::{DateTime, Utc};
use plugin_sdk::PluginKind;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::Semaphore;

pub use call::{Call, LogLine, Usage};
pub use engine::Runtime;
pub use error::PluginError;
pub use limits::{LimitOverride, LimitSettings, Limits};
pub use module::Plugin;
pub use registry::{PluginStatus, Registry, ReloadReport, Serving};
pub use spare::{Background, lower_priority};

use crate::metrics::Metrics;
use crate::metrics::families::SHADOW_CALLS;
use crate::metrics::plugins::Failed;
use cache::ArtifactCache;
use registry::{Loaded, Reload, Reloaded};
use spare::SpareThread;

/// Calls whose fuel budget (for their input: `Limits::fuel_for`) is at
/// most this run on the request's own task (a few milliseconds of wasm at
/// most; a scorer with a typical input of a few KiB gets about 10
/// million); larger budgets (calculators) run on a blocking thread.
pub const INLINE_FUEL: u64 = 20_000_000;

/// Where plugins come from and what they may use.
#[derive(Debug, Clone)]
pub struct PluginSettings {
    /// One folder per plugin.
    pub dir: PathBuf,
    /// Compiled artifacts; `None` compiles on every start.
    pub cache_dir: Option<PathBuf>,
    /// The key that authenticates compiled artifacts (64 hex digits, made
    /// when missing); only this service's user may read it.
    pub cache_key_file: PathBuf,
    /// SHA-256 (lower-case hex) of every module allowed to serve; empty:
    /// any module that passes its checks.
    pub allow: Vec<String>,
    pub limits: LimitSettings,
}

impl PluginSettings {
    /// Whether `plugin_allow` lets the module with this SHA-256 serve (an
    /// empty list lets any module). The one check for folder, candidate and
    /// promoted versions alike.
    pub fn allows(&self, sha256: &str) -> bool {
        self.allow.is_empty() || self.allow.iter().any(|a| a == sha256)
    }
}

/// The plugin runtime of one host.
pub struct Plugins {
    runtime: Runtime,
    spares: SpareThread,
    /// Call slots: calls that may run at once (see `engine::INSTANCE_SLOTS`).
    slots: Arc<Semaphore>,
    settings: PluginSettings,
    current: ArcSwap<Registry>,
    /// One reload at a time; a watcher event during a reload waits.
    reloading: Mutex<HashMap<String, Loaded>>,
    generation: tokio::sync::watch::Sender<u64>,
    metrics: Arc<Metrics>,
}

impl std::fmt::Debug for Plugins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugins")
            .field("dir", &self.settings.dir)
            .finish_non_exhaustive()
    }
}

impl Plugins {
    /// Builds the engine and starts the spare-instance thread. Loads
    /// nothing: call [`Plugins::reload`]. A cache folder or key that cannot
    /// be trusted is not used (logged): modules are then compiled in
    /// memory on every start.
    pub fn new(settings: PluginSettings, metrics: Arc<Metrics>) -> Result<Plugins, PluginError> {
        settings.limits.validate().map_err(PluginError::Host)?;
        let cache = settings.cache_dir.as_deref().and_then(|dir| {
            ArtifactCache::open(dir, &settings.cache_key_file)
                .inspect_err(|why| {
                    tracing::warn!(error = %why, "compiled plugin code is not cached: every start compiles every plugin");
                })
                .ok()
        });
        metrics.set(
            "outcomes_plugin_cache_used",
            &[],
            if cache.is_some() { 1.0 } else { 0.0 },
        );
        let runtime = Runtime::new(settings.limits.max_memory_bytes(), cache, metrics.clone())?;
        Ok(Plugins {
            runtime,
            spares: SpareThread::start()?,
            slots: Arc::new(Semaphore::new(engine::INSTANCE_SLOTS as usize)),
            settings,
            current: ArcSwap::from_pointee(Registry::default()),
            reloading: Mutex::new(HashMap::new()),
            generation: tokio::sync::watch::Sender::new(0),
            metrics,
        })
    }

    /// The plugin directory.
    pub fn dir(&self) -> &Path {
        &self.settings.dir
    }

    /// The serving set. Hold it for one request.
    pub fn registry(&self) -> Arc<Registry> {
        self.current.load_full()
    }

    /// The plugin of `kind` named `name` that the plugin folder serves.
    /// Which version serves a scorer on trial is not the runtime's to say
    /// (`crate::trials`).
    pub fn get(&self, kind: PluginKind, name: &str) -> Result<Arc<Plugin>, PluginError> {
        self.current
            .load()
            .get(kind, name)
            .cloned()
            .ok_or_else(|| PluginError::NotLoaded {
                kind,
                name: name.to_owned(),
            })
    }

    /// Tells of every reload that changed the serving set (its generation).
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Whether `plugin_allow` lets the module with this SHA-256 serve
    /// ([`PluginSettings::allows`]).
    pub fn allows(&self, sha256: &str) -> bool {
        self.settings.allows(sha256)
    }

    /// Why `plugin_allow` refuses the module with this SHA-256.
    pub fn not_allowed(sha256: &str) -> String {
        format!("module sha256 {sha256} is not in plugin_allow")
    }

    /// Validates and compiles a module without registering it: the author
    /// harness, and recomputing an outcome with an old version by hash.
    pub fn load_module(&self, bytes: &[u8]) -> Result<Plugin, PluginError> {
        Plugin::load(&self.runtime, &self.spares, bytes, &self.settings.limits)
    }

    /// Re-reads the plugin directory: every folder whose module changed is
    /// validated, compiled and self-tested, then the new serving set is
    /// swapped in at once. A refused module leaves the folder's previous
    /// version serving. Blocking (compiles); run it off the async threads.
    pub fn reload(&self, now: DateTime<Utc>) -> ReloadReport {
        let mut by_folder = self.reloading.lock().unwrap_or_else(|p| p.into_inner());
        let folders = plugin_folders(&self.settings.dir);
        let Reloaded {
            registry,
            by_folder: next,
            report,
        } = {
            let mut reload = Reload::new(&self.current.load(), &by_folder, &self.metrics);
            for (folder, path) in &folders {
                self.reload_folder(&mut reload, folder, path, now);
            }
            let present: Vec<&str> = folders.iter().map(|(f, _)| f.as_str()).collect();
            reload.finish(&present)
        };
        if let Some(registry) = registry {
            let generation = registry.generation;
            self.metrics.set(
                "outcomes_plugins_serving",
                &[],
                registry.plugins.len() as f64,
            );
            let failed = registry
                .statuses
                .values()
                .filter(|s| s.state == "failed")
                .count();
            self.metrics
                .set("outcomes_plugins_failed", &[], failed as f64);
            self.current.store(Arc::new(registry));
            *by_folder = next;
            self.generation.send_replace(generation);
        }
        report
    }

    /// Tells `reload` what became of `folder` (at `path`): its module
    /// unchanged, loaded and self-tested, or refused.
    fn reload_folder(
        &self,
        reload: &mut Reload<'_>,
        folder: &str,
        path: &Path,
        now: DateTime<Utc>,
    ) {
        let bytes = match module_file(path).and_then(|f| {
            std::fs::read(&f).map_err(|e| format!("{}: {e}", relative(&f, &self.settings.dir)))
        }) {
            Ok(bytes) => bytes,
            Err(why) => return reload.refuse(folder, None, why),
        };
        let sha = module::sha256_hex(&bytes);
        if reload.keeps(folder, &sha) {
            return;
        }
        if !self.allows(&sha) {
            // Refused before it is compiled or run.
            let why = Plugins::not_allowed(&sha);
            return reload.refuse(folder, Some(sha), why);
        }
        let loaded = self.load_module(&bytes).and_then(|plugin| {
            let passed =
                selftest::self_test(&plugin, &path.join("fixtures")).map_err(PluginError::Host)?;
            Ok((plugin, passed))
        });
        match loaded {
            Ok((plugin, passed)) => reload.serve(folder, plugin, passed, now),
            // What a status says names files within the plugin directory,
            // never where that directory is.
            Err(e) => {
                let dir = self.settings.dir.display().to_string();
                let why = e
                    .to_string()
                    .replace(&format!("{dir}/"), "")
                    .replace(&dir, "");
                reload.refuse(folder, Some(sha), why)
            }
        }
    }

    /// Calls `plugin` with `input` once a call slot is free (inline for small
    /// fuel budgets, else on a blocking thread); counts the result and
    /// re-emits the guest's log lines.
    pub async fn call<I, O>(&self, plugin: Arc<Plugin>, input: &I) -> Call<O>
    where
        I: Serialize,
        O: DeserializeOwned + Send + 'static,
    {
        match call::input_bytes(input) {
            Ok(bytes) => self.call_json(plugin, bytes).await,
            Err(e) => Call::refused(e),
        }
    }

    /// [`Plugins::call`] with the input already serialized.
    pub async fn call_json<O>(&self, plugin: Arc<Plugin>, input: Vec<u8>) -> Call<O>
    where
        O: DeserializeOwned + Send + 'static,
    {
        self.call_counted(plugin, input, false).await
    }

    /// A candidate's call in the shadow of the serving version: as
    /// [`Plugins::call_json`], counted apart so the serving version's
    /// counts stay its own.
    pub async fn shadow_call<O>(&self, plugin: Arc<Plugin>, input: Vec<u8>) -> Call<O>
    where
        O: DeserializeOwned + Send + 'static,
    {
        self.call_counted(plugin, input, true).await
    }

    async fn call_counted<O>(&self, plugin: Arc<Plugin>, input: Vec<u8>, shadow: bool) -> Call<O>
    where
        O: DeserializeOwned + Send + 'static,
    {
        let permit = self.slots.clone().acquire_owned().await;
        let started = std::time::Instant::now();
        let call = if plugin.limits.fuel_for(input.len()) <= INLINE_FUEL {
            // A scoring call takes tens of microseconds; handing it to a
            // blocking thread would cost more than the call. Its fuel bounds
            // how long it can hold this worker. The slot is released once
            // the used instance is dropped.
            plugin.spares.invoke(&input, permit.ok()).parsed::<O>()
        } else {
            let p = plugin.clone();
            tokio::task::spawn_blocking(move || {
                let _slot = permit;
                p.invoke_json::<O>(&input)
            })
            .await
            .unwrap_or_else(|e| {
                Call::refused(PluginError::Host(format!("plugin call thread failed: {e}")))
            })
        };
        let took = started.elapsed();
        plugin.emit_logs(&call.logs);
        if shadow {
            let result = match &call.result {
                Ok(_) => "ok",
                Err(e) => e.code(),
            };
            let kind = plugin.kind().to_string();
            self.metrics.inc(
                SHADOW_CALLS,
                &[
                    ("plugin", plugin.name()),
                    ("kind", &kind),
                    ("result", result),
                ],
            );
        } else {
            let failed = call.result.as_ref().err().map(|e| Failed {
                code: e.code(),
                failure: e.failure(),
            });
            self.metrics
                .plugin_call(plugin.name(), plugin.kind(), took, failed);
        }
        call
    }
}

/// Folders of the plugin directory, by name (sorted).
fn plugin_folders(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut folders: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .filter_map(|p| Some((p.file_name()?.to_str()?.to_owned(), p)))
        .filter(|(name, _)| !name.starts_with('.'))
        .collect();
    folders.sort();
    folders
}

/// The one `.wasm` file of a plugin folder; a refusal names the folder by
/// its name only.
fn module_file(folder: &Path) -> Result<PathBuf, String> {
    let name = folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut wasm: Vec<PathBuf> = std::fs::read_dir(folder)
        .map_err(|e| format!("{name}: {e}"))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "wasm") && p.is_file())
        .collect();
    match wasm.len() {
        1 => Ok(wasm.remove(0)),
        0 => Err(format!("{name}: no .wasm module")),
        n => Err(format!("{name}: {n} .wasm modules, expected one")),
    }
}

/// `path` relative to the plugin directory `dir`, for what a status says.
fn relative(path: &Path, dir: &Path) -> String {
    path.strip_prefix(dir).unwrap_or(path).display().to_string()
}
