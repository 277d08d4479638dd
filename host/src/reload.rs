//! Hot reload while serving (docs/design.md#hot-reload): watches the plugin,
//! questionnaire, protocol and translation folders (notify), waits until changes settle
//! (debounce), then reloads what changed. Plugins: `Plugins::reload`
//! validates, compiles and self-tests, then swaps atomically. Definitions:
//! re-read and re-imported, then the catalog is swapped; invalid files are
//! logged and counted and the old catalog keeps serving.

use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::AppState;

/// How long the folders must be quiet before a reload: an editor's save or
/// a build writes several files in quick succession.
pub const DEBOUNCE: Duration = Duration::from_millis(100);

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
pub fn start(state: AppState) -> notify::Result<Watch> {
    let config = state.config();
    let _ = std::fs::create_dir_all(&config.plugins.dir);
    let plugins_dir = absolute(&config.plugins.dir);
    let definition_dirs = [
        absolute(&config.questionnaires_dir),
        absolute(&config.protocols_dir),
        absolute(
            config
                .translations_dir
                .as_deref()
                .unwrap_or(&config.questionnaires_dir),
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
    let task = tokio::spawn(run(state, rx, plugins_dir, definition_dirs));
    Ok(Watch {
        _watcher: watcher,
        task,
    })
}

async fn run(
    state: AppState,
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
            let report = state.reload_plugins().await;
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
            state.reload_definitions().await;
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
