//! Plugin authors outside this repository: `outcomes plugin new --out`
//! scaffolds a crate into a temporary folder outside the workspace, which
//! then builds to wasm with cargo on its own (its own Cargo.toml, profile
//! and `.cargo/config.toml`; plugin-sdk by path), passes its native tests
//! and `outcomes plugin test`, and once dropped into a running host's
//! plugin folder is hot-reloaded and scores a response over HTTP. And
//! `cargo package -p plugin-sdk` makes a crate archive that builds.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use host::commands::plugin::{self, PluginCommand};
use serde_json::Value;
use tests::plugins::{copy_built_plugin, copy_definition, install_module, write_definition};
use tests::{Db, TestApp, db_test, json};

use crate::support::test_protocols;

/// How long a reload may take before the test gives up (a bound, not a
/// wait: the test goes on as soon as the host serves the plugin).
const RELOAD_BOUND: Duration = Duration::from_secs(60);

/// cargo as the outer cargo is, with the toolchain this repository pins
/// (rust-toolchain.toml), for crates outside the repository where rustup
/// would not read that file.
fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    let pinned = std::fs::read_to_string(tests::repo_root().join("rust-toolchain.toml"))
        .ok()
        .and_then(|t| t.parse::<toml::Table>().ok())
        .and_then(|t| Some(t.get("toolchain")?.get("channel")?.as_str()?.to_owned()));
    if let Some(channel) = pinned {
        cmd.env("RUSTUP_TOOLCHAIN", channel);
    }
    cmd
}

/// Runs `cmd`, failing the test with its output when it fails.
fn run(cmd: &mut Command, what: &str) {
    let output = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run: {e}"));
    assert!(
        output.status.success(),
        "{what} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A target folder the scaffolded crates share across tests and runs, so
/// their dependencies compile once.
fn shared_target() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("standalone-plugins")
}

/// A scorer `mood4` scaffolded with `--out` into `dir/mood4` (outside the
/// workspace), tested natively and built to wasm there with cargo, and
/// passed by `outcomes plugin test`. Answers the crate folder and the
/// module's bytes.
fn scaffold_and_build(dir: &Path) -> (PathBuf, Vec<u8>) {
    let out = dir.join("mood4");
    assert!(
        !out.starts_with(tests::repo_root().canonicalize().expect("repository")),
        "the crate is scaffolded outside the workspace"
    );
    let config = tests::plugin_tool_config(&dir.join("data"));
    let new = PluginCommand::New {
        kind: "scorer".into(),
        name: "mood4".into(),
        root: PathBuf::from("."),
        out: Some(out.clone()),
        sdk_path: Some(tests::repo_root().join("plugin-sdk")),
        sdk_git: None,
    };
    assert!(plugin::run(new, &config).expect("scaffolded"));
    let manifest = std::fs::read_to_string(out.join("Cargo.toml")).expect("Cargo.toml");
    assert!(!manifest.contains(".workspace"), "{manifest}");
    for file in [
        ".cargo/config.toml",
        "README.md",
        "src/lib.rs",
        "fixtures/example.json",
    ] {
        assert!(out.join(file).is_file(), "{file} is written");
    }
    let readme = std::fs::read_to_string(out.join("README.md")).expect("README.md");
    for command in [
        "cargo test",
        "cargo build --release --target wasm32-unknown-unknown",
        "outcomes plugin test target/wasm32-unknown-unknown/release/mood4.wasm",
        "git = ",
        "path = ",
    ] {
        assert!(readme.contains(command), "README.md names `{command}`");
    }
    // The repository's lock file: the versions it tested, and no registry
    // look-up (--offline) for what is already on this machine.
    std::fs::copy(
        tests::repo_root().join("Cargo.lock"),
        out.join("Cargo.lock"),
    )
    .expect("lock file copied");
    let target = shared_target();
    run(
        cargo()
            .args(["test", "--offline", "--quiet"])
            .current_dir(&out)
            .env("CARGO_TARGET_DIR", &target),
        "cargo test of the scaffolded crate",
    );
    run(
        cargo()
            .args([
                "build",
                "--offline",
                "--quiet",
                "--release",
                "--target",
                "wasm32-unknown-unknown",
            ])
            .current_dir(&out)
            .env("CARGO_TARGET_DIR", &target),
        "cargo build of the scaffolded crate to wasm",
    );
    let module = target.join("wasm32-unknown-unknown/release/mood4.wasm");
    let test = PluginCommand::Test {
        module: module.clone(),
        fixtures: vec![out.join("fixtures")],
        profile: None,
    };
    assert!(
        plugin::run(test, &config).expect("the harness runs"),
        "outcomes plugin test passes the scaffolded module"
    );
    let bytes = std::fs::read(&module).expect("the module");
    (out, bytes)
}

/// The status of plugin folder `folder` at GET /api/v1/plugins.
async fn status(app: &TestApp, folder: &str) -> Value {
    let answer = app.get("/api/v1/plugins").await;
    answer.body["plugins"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["folder"] == folder))
        .cloned()
        .unwrap_or(Value::Null)
}

/// A watching host with the scaffolded scorer's questionnaire, and the
/// scorer built (in `authoring/` of the app's folder), not yet deployed.
async fn spawn_with_scaffolded(db: Db) -> TestApp {
    let dir = tempfile::tempdir().expect("temporary folder");
    let (crate_dir, module) = scaffold_and_build(dir.path());
    let definition =
        std::fs::read_to_string(crate_dir.join("questionnaire.toml")).expect("definition");
    let fixture = std::fs::read(crate_dir.join("fixtures/example.json")).expect("fixture");
    TestApp::spawn_with(db, |config| {
        let plugins = config.data_dir.join("plugins");
        let questionnaires = config.data_dir.join("questionnaires");
        let built = config.data_dir.join("authoring");
        std::fs::create_dir_all(&built).expect("folder");
        std::fs::write(built.join("mood4.wasm"), &module).expect("module kept");
        std::fs::write(built.join("example.json"), &fixture).expect("fixture kept");
        copy_built_plugin(&plugins, "phq9");
        copy_definition(&questionnaires, "phq9");
        write_definition(&questionnaires, "mood4", &definition);
        config.plugins.dir = plugins;
        config.questionnaires_dir = questionnaires;
        config.protocols_dir = test_protocols();
        config.watch = true;
    })
    .await
}

db_test!(
    async fn a_plugin_scaffolded_outside_the_repository_builds_and_scores_over_http(
        app: spawn_with_scaffolded,
    ) {
        assert_eq!(app.get("/health").await.status, 200);
        assert!(status(&app, "mood4").await.is_null(), "not there yet");

        // Drop it in as a deploy would: fixtures first, then the module,
        // renamed into place.
        let built = app.dir().join("authoring");
        let plugins = app.state.config().plugins.dir.clone();
        let mut generation = app.state.plugins().subscribe();
        generation.borrow_and_update();
        let fixtures = plugins.join("mood4/fixtures");
        std::fs::create_dir_all(&fixtures).expect("fixtures folder");
        std::fs::copy(built.join("example.json"), fixtures.join("example.json"))
            .expect("fixture copied");
        install_module(
            &plugins,
            "mood4",
            &std::fs::read(built.join("mood4.wasm")).expect("module"),
        );
        let deadline = tokio::time::Instant::now() + RELOAD_BOUND;
        while status(&app, "mood4").await["state"] != "serving" {
            tokio::time::timeout_at(deadline, generation.changed())
                .await
                .unwrap_or_else(|_| panic!("the host serves mood4 within {RELOAD_BOUND:?}"))
                .expect("the host is running");
        }
        let serving = status(&app, "mood4").await;
        assert_eq!(serving["serving"]["fixtures_passed"], 1, "{serving}");

        let answer = app
            .post(
                "/api/v1/dossiers/author/responses",
                &json!({"external_id": "m1", "questionnaire_key": "mood4",
                    "answer_data": {"v_1": "a1", "v_2": "a2"}}),
            )
            .await;
        assert_eq!(answer.status, 201, "{}", answer.text);
        let outcome = &answer.body["outcome"];
        assert_eq!(outcome["scores"]["total"]["value"], 3.0, "{outcome}");
        assert_eq!(outcome["alarm"], json!(["v_2"]), "{outcome}");
    }
);

#[test]
fn plugin_sdk_packages_as_a_crate_of_its_own() {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("package-plugin-sdk");
    run(
        cargo()
            .args(["package", "-p", "plugin-sdk", "--allow-dirty", "--offline"])
            .current_dir(tests::repo_root())
            .env("CARGO_TARGET_DIR", &target),
        "cargo package -p plugin-sdk",
    );
    let version = plugin_sdk_version();
    let archive = target.join(format!("package/plugin-sdk-{version}.crate"));
    assert!(archive.is_file(), "{} is written", archive.display());
    let manifest =
        std::fs::read_to_string(target.join(format!("package/plugin-sdk-{version}/Cargo.toml")))
            .expect("the packaged manifest");
    let table: toml::Table = manifest.parse().expect("TOML");
    let package = &table["package"];
    assert_eq!(package["license"].as_str(), Some("EUPL-1.2"));
    assert!(package.get("description").is_some() && package.get("readme").is_some());
    for (name, dep) in table["dependencies"].as_table().expect("dependencies") {
        assert!(
            dep.get("version").is_some() || dep.as_str().is_some(),
            "dependency {name} has a version: {dep:?}"
        );
        assert!(dep.get("path").is_none(), "no path-only dependency: {name}");
    }
}

fn plugin_sdk_version() -> String {
    let text = std::fs::read_to_string(tests::repo_root().join("plugin-sdk/Cargo.toml"))
        .expect("plugin-sdk/Cargo.toml");
    let table: toml::Table = text.parse().expect("TOML");
    table["package"]["version"]
        .as_str()
        .expect("a version")
        .to_owned()
}
