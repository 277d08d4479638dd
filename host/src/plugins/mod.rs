//! The plugin runtime: the only place that knows wasmtime. Scorers and
//! calculators are core WebAssembly modules exchanging versioned JSON
//! (plugin-sdk holds the contract); each call runs in a fresh instance under
//! limits; the serving set is swapped atomically on reload.
//!
//! Layout on disk: the plugin directory holds one folder per plugin, each
//! with one `.wasm` module and its golden fixtures in `fixtures/`.

mod cache;
pub mod call;
mod engine;
pub mod error;
pub mod limits;
pub mod module;
pub mod registry;
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

pub use call::{Call, LogLine, Usage};
pub use engine::Runtime;
pub use error::PluginError;
pub use limits::{LimitOverride, LimitSettings, Limits};
pub use module::Plugin;
pub use registry::{PluginStatus, Registry, Serving};

use crate::metrics::Metrics;
use cache::ArtifactCache;

/// Calls whose fuel budget is at most this run on the request's own task
/// (a few milliseconds of wasm at most, the scorer default is 10 million);
/// larger budgets (calculators) run on a blocking thread.
pub const INLINE_FUEL: u64 = 20_000_000;

/// Where plugins come from and what they may use.
#[derive(Debug, Clone)]
pub struct PluginSettings {
    /// One folder per plugin.
    pub dir: PathBuf,
    /// Compiled artifacts; `None` compiles on every start.
    pub cache_dir: Option<PathBuf>,
    pub limits: LimitSettings,
}

/// The plugin runtime of one host.
pub struct Plugins {
    runtime: Runtime,
    cache: ArtifactCache,
    settings: PluginSettings,
    current: ArcSwap<Registry>,
    /// One reload at a time; a watcher event during a reload waits.
    reloading: Mutex<HashMap<String, Arc<Plugin>>>,
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

/// What one reload did.
#[derive(Debug, Default, Clone)]
pub struct ReloadReport {
    /// Every plugin version (re)loaded.
    pub loaded: Vec<Arc<Plugin>>,
    /// Folder and reason of every module refused.
    pub failed: Vec<(String, String)>,
    /// Folders removed from the serving set.
    pub removed: Vec<String>,
}

impl ReloadReport {
    pub fn changed(&self) -> bool {
        !self.loaded.is_empty() || !self.failed.is_empty() || !self.removed.is_empty()
    }
}

impl Plugins {
    /// Builds the engine. Loads nothing: call [`Plugins::reload`].
    pub fn new(settings: PluginSettings, metrics: Arc<Metrics>) -> Result<Plugins, PluginError> {
        settings.limits.validate().map_err(PluginError::Host)?;
        let runtime = Runtime::new(settings.limits.max_memory_bytes())?;
        let cache = ArtifactCache::new(&runtime, settings.cache_dir.clone());
        Ok(Plugins {
            runtime,
            cache,
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

    /// The serving plugin of `kind` named `name`.
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

    /// Validates and compiles a module without registering it: the author
    /// harness, and recomputing an outcome with an old version by hash.
    pub fn load_module(&self, bytes: &[u8]) -> Result<Plugin, PluginError> {
        let limits = &self.settings.limits;
        Plugin::load(&self.runtime, &self.cache, bytes, &|name, kind| {
            limits.limits(name, kind)
        })
    }

    /// Re-reads the plugin directory: every folder whose module changed is
    /// validated, compiled and self-tested, then the new serving set is
    /// swapped in at once. A refused module leaves the folder's previous
    /// version serving. Blocking (compiles); run it off the async threads.
    pub fn reload(&self, now: DateTime<Utc>) -> ReloadReport {
        let mut by_folder = self.reloading.lock().unwrap_or_else(|p| p.into_inner());
        let old = self.current.load_full();
        let mut report = ReloadReport::default();
        let mut statuses = old.statuses.clone();
        let mut next: HashMap<String, Arc<Plugin>> = HashMap::new();

        let folders = plugin_folders(&self.settings.dir);
        for (folder, path) in &folders {
            let previous = by_folder.get(folder).cloned();
            let bytes = match module_file(path)
                .and_then(|f| std::fs::read(&f).map_err(|e| format!("{}: {e}", f.display())))
            {
                Ok(bytes) => bytes,
                Err(why) => {
                    self.refuse(
                        (&mut statuses, &mut report, &mut next),
                        folder,
                        previous,
                        None,
                        why,
                    );
                    continue;
                }
            };
            let sha = module::sha256_hex(&bytes);
            if let Some(p) = previous.as_ref().filter(|p| p.sha256 == sha) {
                next.insert(folder.clone(), p.clone());
                continue;
            }
            if statuses
                .get(folder)
                .and_then(|s| s.refused_sha256.as_deref())
                == Some(sha.as_str())
            {
                // Refused before, unchanged since: keep what serves.
                if let Some(p) = previous {
                    next.insert(folder.clone(), p);
                }
                continue;
            }
            let loaded = self.load_module(&bytes).and_then(|plugin| {
                let passed = selftest::self_test(&plugin, &path.join("fixtures"))
                    .map_err(PluginError::Host)?;
                Ok((plugin, passed))
            });
            match loaded {
                Ok((plugin, passed)) => {
                    let taken = next.iter().find(|(f, p)| {
                        *f != folder && p.kind() == plugin.kind() && p.name() == plugin.name()
                    });
                    if let Some((other, _)) = taken {
                        let why = format!(
                            "{} {} is already served from folder {other}",
                            plugin.kind(),
                            plugin.name()
                        );
                        self.refuse(
                            (&mut statuses, &mut report, &mut next),
                            folder,
                            previous,
                            Some(sha),
                            why,
                        );
                        continue;
                    }
                    tracing::info!(folder, plugin = plugin.name(), version = plugin.version(), sha256 = %plugin.sha256, fixtures = passed, "plugin loaded");
                    self.metrics.inc(
                        "outcomes_plugin_reloads_total",
                        &[("folder", folder), ("result", "loaded")],
                    );
                    let plugin = Arc::new(plugin);
                    report.loaded.push(plugin.clone());
                    statuses.insert(
                        folder.clone(),
                        PluginStatus {
                            folder: folder.clone(),
                            state: "serving",
                            serving: Some(Serving::of(&plugin, passed, now)),
                            error: None,
                            refused_sha256: None,
                        },
                    );
                    next.insert(folder.clone(), plugin);
                }
                Err(e) => {
                    let why = e.to_string();
                    self.refuse(
                        (&mut statuses, &mut report, &mut next),
                        folder,
                        previous,
                        Some(sha),
                        why,
                    );
                }
            }
        }
        for folder in by_folder
            .keys()
            .filter(|f| !folders.iter().any(|(g, _)| g == *f))
        {
            tracing::info!(folder, "plugin folder removed; its plugin no longer serves");
            report.removed.push(folder.clone());
        }
        statuses.retain(|f, _| folders.iter().any(|(g, _)| g == f));

        if report.changed() || old.generation == 0 {
            let generation = old.generation + 1;
            let registry = Registry {
                plugins: next
                    .values()
                    .map(|p| ((p.kind(), p.name().to_owned()), p.clone()))
                    .collect(),
                statuses,
                generation,
            };
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

    /// Records that `folder`'s module was refused, and keeps its previous
    /// version (if any) in the set being built.
    fn refuse(
        &self,
        (statuses, report, next): Reloading<'_>,
        folder: &str,
        previous: Option<Arc<Plugin>>,
        sha256: Option<String>,
        why: String,
    ) {
        tracing::error!(folder, error = %why, keeps_serving = previous.as_ref().map(|p| p.version()), "plugin refused");
        self.metrics.inc(
            "outcomes_plugin_reloads_total",
            &[("folder", folder), ("result", "failed")],
        );
        report.failed.push((folder.to_owned(), why.clone()));
        let serving = statuses
            .get(folder)
            .and_then(|s| s.serving.clone())
            .filter(|_| previous.is_some());
        statuses.insert(
            folder.to_owned(),
            PluginStatus {
                folder: folder.to_owned(),
                state: "failed",
                serving,
                error: Some(why),
                refused_sha256: sha256,
            },
        );
        if let Some(p) = previous {
            next.insert(folder.to_owned(), p);
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
        let permit = self.runtime.slots.clone().acquire_owned().await;
        let call = if plugin.limits.fuel <= INLINE_FUEL {
            // A scoring call takes tens of microseconds; handing it to a
            // blocking thread would cost more than the call. Its fuel bounds
            // how long it can hold this worker. The slot is released once
            // the used instance is dropped.
            spare::invoke(&plugin, &input, permit.ok()).parsed::<O>()
        } else {
            let p = plugin.clone();
            tokio::task::spawn_blocking(move || {
                let _slot = permit;
                call::invoke_json::<O>(&p, &input)
            })
            .await
            .unwrap_or_else(|e| {
                Call::refused(PluginError::Host(format!("plugin call thread failed: {e}")))
            })
        };
        call::emit_logs(&plugin, &call.logs);
        let result = match &call.result {
            Ok(_) => "ok",
            Err(e) => e.code(),
        };
        let kind = plugin.kind().to_string();
        self.metrics.inc(
            "outcomes_plugin_calls_total",
            &[
                ("plugin", plugin.name()),
                ("kind", &kind),
                ("result", result),
            ],
        );
        call
    }
}

/// What a reload builds: folder statuses, its report, the next serving set.
type Reloading<'a> = (
    &'a mut std::collections::BTreeMap<String, PluginStatus>,
    &'a mut ReloadReport,
    &'a mut HashMap<String, Arc<Plugin>>,
);

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

/// The one `.wasm` file of a plugin folder.
fn module_file(folder: &Path) -> Result<PathBuf, String> {
    let mut wasm: Vec<PathBuf> = std::fs::read_dir(folder)
        .map_err(|e| format!("{}: {e}", folder.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "wasm") && p.is_file())
        .collect();
    match wasm.len() {
        1 => Ok(wasm.remove(0)),
        0 => Err(format!("{}: no .wasm module", folder.display())),
        n => Err(format!(
            "{}: {n} .wasm modules, expected one",
            folder.display()
        )),
    }
}

/// Lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}
