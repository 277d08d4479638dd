//! Modules written in AssemblyScript, compiled by the tests with the
//! `assemblyscript` compiler that `examples/assemblyscript-scorer/`
//! installs from npm (`cargo xtask test` runs `npm ci` there first): the
//! example PHQ-9 scorer, and small modules a test writes.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The example's folder.
pub fn example_dir() -> PathBuf {
    crate::repo_root().join("examples/assemblyscript-scorer")
}

/// Compiles the AssemblyScript file `source` (a path) with the options of
/// the example's `asconfig.json` target `release` and answers the module.
fn asc(source: &std::path::Path, extra: &[&str]) -> Result<Vec<u8>, String> {
    let compiler = example_dir().join("node_modules/assemblyscript/bin/asc.js");
    if !compiler.is_file() {
        return Err(format!(
            "{} is missing: run the tests with `cargo xtask test`, which installs the \
             AssemblyScript compiler (or run `npm ci` in examples/assemblyscript-scorer)",
            compiler.display()
        ));
    }
    let out = tempfile::tempdir().map_err(|e| e.to_string())?;
    let wasm = out.path().join("module.wasm");
    let output = Command::new("node")
        .arg(&compiler)
        .arg(source)
        .args([
            "--config",
            "asconfig.json",
            "--target",
            "release",
            "--outFile",
        ])
        .arg(&wasm)
        .args(extra)
        .current_dir(example_dir())
        .output()
        .map_err(|e| format!("running node (Node.js is needed to compile AssemblyScript): {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "asc failed on {}:\n{}{}",
            source.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    std::fs::read(&wasm).map_err(|e| format!("{}: {e}", wasm.display()))
}

/// The example PHQ-9 scorer, compiled once per test run.
pub fn phq9_scorer() -> Vec<u8> {
    static MODULE: OnceLock<Result<Vec<u8>, String>> = OnceLock::new();
    MODULE
        .get_or_init(|| asc(&example_dir().join("assembly/index.ts"), &[]))
        .clone()
        .unwrap_or_else(|why| panic!("{why}"))
}

/// Compiles `source`, AssemblyScript text, as an entry file of its own.
pub fn compile(source: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("temporary folder");
    let file = dir.path().join("module.ts");
    std::fs::write(&file, source).expect("source written");
    asc(&file, &[]).unwrap_or_else(|why| panic!("{why}"))
}
