//! Compiled plugin code on disk (docs/operations.md#files-and-permissions):
//! an artifact is native code, so one that was tampered with, belongs to
//! another module or sits behind a symbolic link is refused, counted and
//! recompiled, and the plugin still scores; a cache folder or key others
//! may use is not used; the data folder, the cache and the SQLite files are
//! private to the service's user. Each test keeps its own cache folder and
//! key, so what it tampers with is its own.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use host::config::Config;
use host::plugins::module::sha256_hex;
use serde_json::Value;
use tests::plugins::{built_module, copy_built_plugin, copy_definition};
use tests::{Db, TestApp, db_test};

use crate::support::*;

/// The cache folder of a test's own cache under `root`.
fn cache_dir(root: &Path) -> PathBuf {
    root.join("cache")
}

/// The plugins the tests here serve.
const PLUGINS: [&str; 2] = ["phq9", "gad7"];

/// Serves [`PLUGINS`] with the PHQ-9 definition, and keeps compiled code in
/// the cache under `root` with its key beside it.
fn own_cache(config: &mut Config, root: &Path) {
    let plugin_dir = config.data_dir.join("plugins");
    if !plugin_dir.is_dir() {
        for plugin in PLUGINS {
            copy_built_plugin(&plugin_dir, plugin);
        }
    }
    let questionnaires = config.data_dir.join("questionnaires");
    copy_definition(&questionnaires, "phq9");
    config.questionnaires_dir = questionnaires;
    config.protocols_dir = test_protocols();
    config.plugins.dir = plugin_dir;
    config.plugins.cache_dir = Some(cache_dir(root));
    config.plugins.cache_key_file = root.join("cache.key");
}

/// The host with a cache of its own in its own folder: the first of the
/// hosts a test starts, which the others share the cache with.
async fn spawn_caching(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        let root = config.data_dir.clone();
        own_cache(config, &root);
    })
    .await
}

/// Another host on `first`'s cache (a fresh database, the same folder of
/// compiled code and key): a restart, as far as the cache can tell.
async fn restart(first: &TestApp) -> TestApp {
    let root = first.dir().to_owned();
    TestApp::spawn_with(first.db, |config| own_cache(config, &root)).await
}

/// The cached artifact of built plugin `name` in the cache under `root`.
fn artifact(root: &Path, name: &str) -> PathBuf {
    let sha = sha256_hex(&built_module(name));
    let found: Vec<PathBuf> = std::fs::read_dir(cache_dir(root))
        .expect("the cache folder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&sha) && n.ends_with(".cwasm"))
        })
        .collect();
    assert_eq!(found.len(), 1, "one artifact of {name}: {found:?}");
    found[0].clone()
}

/// What GET /api/v1/plugins says of folder `folder`.
async fn status(app: &TestApp, folder: &str) -> Value {
    let answer = app.get("/api/v1/plugins").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.body["plugins"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["folder"] == folder))
        .cloned()
        .unwrap_or(Value::Null)
}

/// Asserts that `folder` serves built plugin `folder`, compiled now or
/// taken from the cache as `from_cache` says.
async fn assert_serves(app: &TestApp, folder: &str, from_cache: bool) {
    let status = status(app, folder).await;
    assert_eq!(status["state"], "serving", "{status}");
    assert_eq!(
        status["serving"]["sha256"],
        sha256_hex(&built_module(folder)),
        "{status}"
    );
    assert_eq!(status["serving"]["from_cache"], from_cache, "{status}");
}

/// Artifacts of this app refused, by reason.
async fn refused(app: &TestApp, reason: &str) -> f64 {
    let series = format!("outcomes_plugin_artifacts_refused_total{{reason=\"{reason}\"}}");
    metric(&metrics_text(app).await, &series).unwrap_or(0.0)
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

db_test!(
    async fn a_tampered_or_foreign_artifact_is_refused_recompiled_and_the_plugin_scores(
        first: spawn_caching,
    ) {
        let root = first.dir().to_owned();
        assert_serves(&first, "phq9", false).await;
        let expected = posted(&first, "d1", "e1").await["outcome"].clone();
        assert_eq!(expected["scores"]["total"]["value"], 9.0, "{expected}");
        let phq9 = artifact(&root, "phq9");
        let gad7 = artifact(&root, "gad7");

        // Flipped bytes in the middle of the compiled code.
        let mut flipped = std::fs::read(&phq9).expect("the artifact");
        let middle = flipped.len() / 2;
        for b in &mut flipped[middle..middle + 16] {
            *b ^= 0xff;
        }
        // Another module's artifact, made by this very host with its key,
        // under phq9's name.
        let foreign = std::fs::read(&gad7).expect("gad7's artifact");
        for tampered in [flipped, foreign] {
            std::fs::write(&phq9, &tampered).expect("tampered");
            let app = restart(&first).await;
            assert_serves(&app, "phq9", false).await;
            assert_serves(&app, "gad7", true).await;
            assert_eq!(refused(&app, "unverified").await, 1.0);
            assert_eq!(posted(&app, "d1", "e1").await["outcome"], expected);
            app.stop().await;
        }
        // The recompiled artifact replaced the refused one and is used.
        let app = restart(&first).await;
        assert_serves(&app, "phq9", true).await;
        assert_eq!(refused(&app, "unverified").await, 0.0);
        assert_eq!(posted(&app, "d1", "e1").await["outcome"], expected);
    }
);

db_test!(
    async fn a_symbolic_link_in_the_cache_is_neither_followed_nor_written_through(
        first: spawn_caching,
    ) {
        let root = first.dir().to_owned();
        let phq9 = artifact(&root, "phq9");
        // The attacker's file: a copy of the genuine artifact (MAC and all),
        // elsewhere, linked in under the artifact's name.
        let elsewhere = root.join("elsewhere.cwasm");
        std::fs::rename(&phq9, &elsewhere).expect("moved away");
        let genuine = std::fs::read(&elsewhere).expect("the artifact");
        std::os::unix::fs::symlink(&elsewhere, &phq9).expect("link planted");
        // Links planted where this host once wrote its temporary file
        // (`<artifact>.tmp<pid>`), pointing at a file to overwrite.
        let victim = root.join("victim");
        std::fs::write(&victim, "precious").expect("victim");
        let mut planted = phq9.clone().into_os_string();
        planted.push(format!(".tmp{}", std::process::id()));
        std::os::unix::fs::symlink(&victim, &planted).expect("link planted");

        let app = restart(&first).await;
        assert_serves(&app, "phq9", false).await;
        assert_eq!(refused(&app, "unverified").await, 1.0);
        assert_eq!(
            posted(&app, "d1", "e1").await["outcome"]["scores"]["total"]["value"],
            9.0
        );
        // The link was replaced by a file, not written through.
        let meta = std::fs::symlink_metadata(&phq9).expect("the artifact");
        assert!(meta.file_type().is_file(), "{meta:?}");
        assert_eq!(mode(&phq9), 0o600);
        assert_eq!(std::fs::read(&elsewhere).expect("still there"), genuine);
        assert_eq!(
            std::fs::read_to_string(&victim).expect("victim"),
            "precious"
        );
        // No temporary file is left behind.
        let left: Vec<String> = std::fs::read_dir(cache_dir(&root))
            .expect("the cache")
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
);

db_test!(
    async fn a_cache_folder_or_key_others_may_use_is_not_used_and_plugins_still_serve(
        first: spawn_caching,
    ) {
        let root = first.dir().to_owned();
        assert_eq!(mode(&cache_dir(&root)), 0o700);
        assert_eq!(mode(&root.join("cache.key")), 0o600);
        let cached = std::fs::read_dir(cache_dir(&root))
            .expect("the cache")
            .count();
        assert_eq!(cached, PLUGINS.len());
        // Others may write into the folder: an artifact could have been
        // put there by anyone.
        std::fs::set_permissions(cache_dir(&root), std::fs::Permissions::from_mode(0o777))
            .expect("chmod");
        let app = restart(&first).await;
        assert_serves(&app, "phq9", false).await;
        let metrics = metrics_text(&app).await;
        assert_eq!(
            metric(&metrics, "outcomes_plugin_cache_used"),
            Some(0.0),
            "{metrics}"
        );
        assert_eq!(
            posted(&app, "d1", "e1").await["outcome"]["scores"]["total"]["value"],
            9.0
        );
        app.stop().await;
        let after = std::fs::read_dir(cache_dir(&root))
            .expect("the cache")
            .count();
        assert_eq!(after, cached, "nothing written into it");
        // The folder private again, but others may read the key.
        std::fs::set_permissions(cache_dir(&root), std::fs::Permissions::from_mode(0o700))
            .expect("chmod");
        std::fs::set_permissions(
            root.join("cache.key"),
            std::fs::Permissions::from_mode(0o644),
        )
        .expect("chmod");
        let app = restart(&first).await;
        assert_serves(&app, "phq9", false).await;
        assert_eq!(
            metric(&metrics_text(&app).await, "outcomes_plugin_cache_used"),
            Some(0.0)
        );
        app.stop().await;
        // Both private: the cache is used.
        std::fs::set_permissions(
            root.join("cache.key"),
            std::fs::Permissions::from_mode(0o600),
        )
        .expect("chmod");
        let app = restart(&first).await;
        assert_serves(&app, "phq9", true).await;
        assert_eq!(
            metric(&metrics_text(&app).await, "outcomes_plugin_cache_used"),
            Some(1.0)
        );
    }
);

/// The host with a data folder it makes itself (`data` in the test's
/// folder), holding its SQLite database, its plugin cache and the key.
async fn spawn_with_new_data_folder(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        let data = config.data_dir.join("data");
        let plugin_dir = config.data_dir.join("plugins");
        copy_built_plugin(&plugin_dir, "phq9");
        let questionnaires = config.data_dir.join("questionnaires");
        copy_definition(&questionnaires, "phq9");
        config.questionnaires_dir = questionnaires;
        config.protocols_dir = test_protocols();
        config.plugins.dir = plugin_dir;
        config.plugins.cache_dir = Some(data.join("plugin-cache"));
        config.plugins.cache_key_file = data.join("plugin-cache.key");
        if config.database_url.starts_with("sqlite:") {
            config.database_url = format!("sqlite://{}", data.join("outcomes.db").display());
        }
        config.data_dir = data;
    })
    .await
}

db_test!(
    async fn temporary_files_a_crash_left_in_the_cache_are_removed_at_start(app: spawn_caching) {
        let cache = cache_dir(app.dir());
        let day_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(24 * 3600);
        let plant = |name: &str, changed: Option<std::time::SystemTime>| {
            let path = cache.join(name);
            std::fs::write(&path, b"half an artifact").expect("written");
            if let Some(changed) = changed {
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .expect("open");
                file.set_modified(changed).expect("its time");
            }
            path
        };
        // Written under a temporary name by a host that died before the
        // rename, a day ago.
        let left = plant(".0123abcd.cwasm.0123456789abcdef.tmp", Some(day_ago));
        // Another host's write in progress, and files not the cache's own.
        let writing = plant(".4567cdef.cwasm.fedcba9876543210.tmp", None);
        let others = [
            plant("notes.tmp", Some(day_ago)),
            plant(".x.tmp", Some(day_ago)),
        ];
        let app = restart(&app).await;
        assert!(!left.exists(), "the crash's file is removed");
        assert!(writing.exists(), "a write in progress is left");
        for other in others {
            assert!(other.exists(), "{}", other.display());
        }
        assert_serves(&app, "phq9", true).await;
        app.stop().await;
    }
);

db_test!(
    async fn the_data_folder_the_cache_and_the_database_files_are_private(
        app: spawn_with_new_data_folder,
    ) {
        posted(&app, "d1", "e1").await;
        let data = app.dir().join("data");
        assert_eq!(mode(&data), 0o700);
        assert_eq!(mode(&data.join("plugin-cache")), 0o700);
        assert_eq!(mode(&data.join("plugin-cache.key")), 0o600);
        for entry in std::fs::read_dir(data.join("plugin-cache"))
            .expect("the cache")
            .flatten()
        {
            assert_eq!(mode(&entry.path()), 0o600, "{}", entry.path().display());
        }
        if app.db == Db::Sqlite {
            for file in ["outcomes.db", "outcomes.db-wal", "outcomes.db-shm"] {
                assert_eq!(mode(&data.join(file)), 0o600, "{file}");
            }
        }
    }
);
