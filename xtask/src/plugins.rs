//! Builds every plugin crate (`questionnaires/<key>/` with a Cargo.toml,
//! `calculators/<name>/`) to WebAssembly in one cargo invocation and lays
//! the modules out where the host loads them: `plugins/<name>/<name>.wasm`
//! with the crate's `fixtures/` beside it. A running host hot-reloads what
//! changed, so `cargo xtask plugins` while `cargo xtask serve` runs is the
//! whole deploy loop for a plugin author.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

/// Folders holding plugin crates.
const PLUGIN_PARENTS: [&str; 2] = ["questionnaires", "calculators"];

/// A plugin crate: its package name and folder.
#[derive(Debug)]
struct Crate {
    name: String,
    dir: PathBuf,
}

fn crates(root: &Path) -> anyhow::Result<Vec<Crate>> {
    let mut found = Vec::new();
    for parent in PLUGIN_PARENTS {
        let Ok(entries) = std::fs::read_dir(root.join(parent)) else {
            continue;
        };
        for entry in entries.flatten() {
            let dir = entry.path();
            if !dir.join("Cargo.toml").is_file() {
                continue;
            }
            // Folder name = package name (house style).
            let name = entry.file_name().to_string_lossy().into_owned();
            found.push(Crate { name, dir });
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

/// Builds every plugin and installs it into `root/plugins`. Returns the
/// plugin directory.
pub fn build(root: &Path) -> anyhow::Result<PathBuf> {
    let crates = crates(root)?;
    anyhow::ensure!(
        !crates.is_empty(),
        "no plugin crates under questionnaires/ or calculators/"
    );
    let mut cmd = Command::new(super::cargo());
    cmd.current_dir(root).args([
        "build",
        "--quiet",
        "--target",
        "wasm32-unknown-unknown",
        "--profile",
        "plugin",
    ]);
    for c in &crates {
        cmd.args(["--package", &c.name]);
    }
    super::run(&mut cmd).context("building the plugins to wasm")?;

    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let out = target.join("wasm32-unknown-unknown").join("plugin");
    let plugins = root.join("plugins");
    for c in &crates {
        let module = out.join(format!("{}.wasm", c.name.replace('-', "_")));
        install(
            &module,
            &c.dir.join("fixtures"),
            &plugins.join(&c.name),
            &c.name,
        )
        .with_context(|| format!("installing plugin {}", c.name))?;
    }
    Ok(plugins)
}

/// Copies the fixtures, then the module, each replaced atomically (written
/// aside, renamed into place), and only when its bytes changed, so a
/// watching host reloads what changed and never reads half a file.
fn install(module: &Path, fixtures: &Path, into: &Path, name: &str) -> anyhow::Result<()> {
    let dest_fixtures = into.join("fixtures");
    std::fs::create_dir_all(&dest_fixtures)?;
    let mut wanted = Vec::new();
    if fixtures.is_dir() {
        for entry in std::fs::read_dir(fixtures)?.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "json") {
                let file = entry.file_name();
                replace_if_changed(&std::fs::read(&path)?, &dest_fixtures.join(&file))?;
                wanted.push(file);
            }
        }
    }
    for entry in std::fs::read_dir(&dest_fixtures)?.flatten() {
        if !wanted.contains(&entry.file_name()) {
            std::fs::remove_file(entry.path())?;
        }
    }
    let bytes = std::fs::read(module).with_context(|| format!("reading {}", module.display()))?;
    replace_if_changed(&bytes, &into.join(format!("{name}.wasm")))
}

fn replace_if_changed(bytes: &[u8], dest: &Path) -> anyhow::Result<()> {
    if std::fs::read(dest).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    let tmp = dest.with_extension("tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, dest)?;
    Ok(())
}
