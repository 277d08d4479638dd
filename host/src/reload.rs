//! Hot reload while serving (docs/design.md#hot-reload): watches the
//! plugin, questionnaire, protocol and
//! translation folders (notify), waits until changes
//! settle (debounce: `DEBOUNCE`, 100 ms of quiet), then reloads what
//! changed. Plugins: `Plugins::reload` validates, compiles and self-tests,
//! then swaps atomically. Definitions: re-read and re-imported, then the
//! catalog is swapped; invalid files are logged and counted and the old
//! catalog keeps serving. Every module version loaded is archived by hash
//! ([`archive_modules`]), so what it computes can be recomputed exactly
//! later.
//!
//! Given what it reloads at start-up ([`Reloader`]); must not reach for
//! the application state.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use chrono::{DateTime, Utc};
use notify::{RecursiveMode, Watcher};
use tokio::sync::{mpsc, watch};

use crate::clock::Clock;
use crate::definitions;
use crate::domain::catalog::Catalog;
use crate::metrics::Metrics;
use crate::plugins::{Plugin, Plugins, ReloadReport};
use crate::store::{self, Store};

/// How long the folders must be quiet before a reload: an editor's save or
/// a build writes several files in quick succession.
pub const DEBOUNCE: Duration = Duration::from_millis(100);

/// What reloads read and swap, handed over at start-up.
#[derive(Debug)]
pub struct Reloader {
    pub plugins: Arc<Plugins>,
    pub store: Store,
    pub clock: Arc<dyn Clock>,
    pub metrics: Arc<Metrics>,
    /// The catalog in use, swapped whole by a definitions reload.
    pub catalog: Arc<ArcSwap<Catalog>>,
    pub questionnaires_dir: PathBuf,
    pub protocols_dir: PathBuf,
    /// A licensee's translation overlays outside the definitions' folders.
    pub translations_dir: Option<PathBuf>,
    /// Counts definition reloads, successful or not, for whoever waits on
    /// one (tests; the watcher's callers).
    pub definition_reloads: watch::Sender<u64>,
}

impl Reloader {
    /// Reloads the plugin directory (blocking work on a blocking thread)
    /// and archives every serving module version by hash, so outcomes it
    /// computes can be recomputed exactly later.
    pub async fn reload_plugins(&self) -> ReloadReport {
        let plugins = self.plugins.clone();
        let now = self.clock.now();
        let report = tokio::task::spawn_blocking(move || plugins.reload(now))
            .await
            .unwrap_or_default();
        archive_modules(&self.store, &report.loaded, now).await;
        report
    }

    /// Tells of every definition reload attempt (the count so far).
    pub fn subscribe_definition_reloads(&self) -> watch::Receiver<u64> {
        self.definition_reloads.subscribe()
    }

    /// Re-reads and re-imports the questionnaire and protocol definitions
    /// and swaps the catalog. Invalid definitions are logged and counted;
    /// the catalog in use stays.
    pub async fn reload_definitions(&self) -> bool {
        // The catalog serving so far: an overlay refused now keeps its
        // previous version serving while that still fits its definition.
        let previous = self.catalog.load_full();
        let result = match definitions::load_with(
            &self.questionnaires_dir,
            &self.protocols_dir,
            self.translations_dir.as_deref(),
            Some(&previous),
        ) {
            Ok(defs) => self
                .store
                .import_definitions(defs.questionnaires, defs.protocols, self.clock.now())
                .await
                .map_err(anyhow::Error::from),
            Err(e) => Err(anyhow::Error::from(e)),
        };
        let loaded = match result {
            Ok(catalog) => {
                self.catalog.store(Arc::new(catalog));
                tracing::info!("definitions reloaded");
                self.metrics
                    .inc("outcomes_definition_reloads_total", &[("result", "loaded")]);
                true
            }
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), "definitions not reloaded; the previous ones stay in use");
                self.metrics
                    .inc("outcomes_definition_reloads_total", &[("result", "failed")]);
                false
            }
        };
        // After the swap, so a waiter sees the new catalog.
        self.definition_reloads.send_modify(|n| *n += 1);
        loaded
    }
}

/// Archives module versions by hash (a no-op for versions already
/// archived), so any outcome they compute can be recomputed exactly
/// (`outcomes rescore --exact`). A failure is logged: it costs
/// reproducibility later, never a response now.
pub async fn archive_modules(store: &Store, plugins: &[Arc<Plugin>], now: DateTime<Utc>) {
    for plugin in plugins {
        let module = store::ArchivedModule {
            sha256: plugin.sha256.clone(),
            name: plugin.name().to_owned(),
            kind: plugin.kind().to_string(),
            version: plugin.version().to_owned(),
            bytes: plugin.bytes.to_vec(),
        };
        if let Err(e) = store.archive_module(module, now).await {
            tracing::warn!(plugin = plugin.name(), error = %e, "could not archive the plugin module");
        }
    }
}

/// A running watch; dropping it stops watching.
pub struct Watch {
    _watcher: notify::RecommendedWatcher,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch").finish_non_exhaustive()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts watching. Folders that do not exist yet are created (the plugin
/// folder) or skipped (protocols).
pub fn start(reloader: Arc<Reloader>) -> notify::Result<Watch> {
    let _ = std::fs::create_dir_all(reloader.plugins.dir());
    let plugins_dir = absolute(reloader.plugins.dir());
    let definition_dirs = [
        absolute(&reloader.questionnaires_dir),
        absolute(&reloader.protocols_dir),
        absolute(
            reloader
                .translations_dir
                .as_deref()
                .unwrap_or(&reloader.questionnaires_dir),
        ),
    ];
    let (tx, rx) = mpsc::unbounded_channel::<PathBuf>();
    let mut watcher =
        notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
            Ok(event) if !event.kind.is_access() => {
                for path in event.paths {
                    let _ = tx.send(path);
                }
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "file watcher error"),
        })?;
    for dir in std::iter::once(&plugins_dir).chain(&definition_dirs) {
        if dir.is_dir() {
            watcher.watch(dir, RecursiveMode::Recursive)?;
        }
    }
    let task = tokio::spawn(run(reloader, rx, plugins_dir, definition_dirs));
    Ok(Watch {
        _watcher: watcher,
        task,
    })
}

async fn run(
    reloader: Arc<Reloader>,
    mut rx: mpsc::UnboundedReceiver<PathBuf>,
    plugins_dir: PathBuf,
    definition_dirs: [PathBuf; 3],
) {
    while let Some(first) = rx.recv().await {
        let mut paths = vec![first];
        loop {
            match tokio::time::timeout(DEBOUNCE, rx.recv()).await {
                Ok(Some(path)) => paths.push(path),
                Ok(None) => return,
                Err(_quiet) => break,
            }
        }
        let touches = |dir: &Path| paths.iter().any(|p| p.starts_with(dir));
        if touches(&plugins_dir) {
            let report = reloader.reload_plugins().await;
            if report.changed() {
                let loaded: Vec<String> = report
                    .loaded
                    .iter()
                    .map(|p| format!("{} {}", p.name(), p.version()))
                    .collect();
                tracing::info!(?loaded, refused = report.failed.len(), removed = ?report.removed, "plugins reloaded");
            }
        }
        if definition_dirs.iter().any(|d| touches(d)) {
            reloader.reload_definitions().await;
        }
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|cwd| cwd.join(path))
            .unwrap_or_else(|_| path.to_owned())
    })
}
