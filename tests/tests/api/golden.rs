//! Golden fixtures through both paths: for every plugin crate and every
//! fixture in its `fixtures/` folder, the crate's native `call_json` and its
//! WebAssembly build called through the host's runtime answer the same
//! bytes, and both pass the fixture. The ABI (allocation, copying in and
//! out, the packed pointer and length) changes nothing. No database: plain
//! tests.

use std::path::PathBuf;
use std::sync::Arc;

use host::metrics::Metrics;
use host::plugins::call::invoke_raw;
use host::plugins::{LimitSettings, PluginSettings, Plugins};
use plugin_sdk::testing::{self, Fixture};

/// The crate folder of a plugin.
fn crate_dir(relative: &str) -> PathBuf {
    tests::repo_root().join(relative)
}

/// Runs every fixture of the crate at `relative` natively through `native`
/// and through `plugins/<name>/<name>.wasm` in the host's runtime, and
/// compares.
fn native_and_wasm_agree(name: &str, relative: &str, native: fn(&[u8]) -> Vec<u8>) {
    let fixtures: Vec<Fixture> = testing::load_dir(crate_dir(relative).join("fixtures"))
        .unwrap_or_else(|e| panic!("fixtures of {name}: {e}"));
    assert!(!fixtures.is_empty(), "{name} ships fixtures");
    let settings = PluginSettings {
        dir: tests::built_plugins(),
        cache_dir: Some(tests::plugin_cache()),
        limits: LimitSettings::default(),
    };
    let plugins = Plugins::new(settings, Arc::new(Metrics::default())).expect("the plugin runtime");
    let module = tests::built_plugins()
        .join(name)
        .join(format!("{name}.wasm"));
    let bytes = std::fs::read(&module).unwrap_or_else(|e| panic!("{}: {e}", module.display()));
    let plugin = plugins
        .load_module(&bytes)
        .unwrap_or_else(|e| panic!("{name}.wasm loads: {e}"));
    assert_eq!(plugin.name(), name);
    for fixture in &fixtures {
        let input = fixture.input_bytes();
        let native_reply = native(&input);
        let call = invoke_raw(&plugin, &input);
        let wasm_reply = call.result.unwrap_or_else(|e| {
            panic!(
                "{name}, fixture {}: the wasm call failed: {e}",
                fixture.name
            )
        });
        assert!(
            native_reply == wasm_reply,
            "{name}, fixture {}: native and wasm differ\nnative: {}\nwasm:   {}",
            fixture.name,
            String::from_utf8_lossy(&native_reply),
            String::from_utf8_lossy(&wasm_reply)
        );
        if let Err(mismatch) = testing::check(fixture, &native_reply) {
            panic!("{name}, fixture {} natively: {mismatch}", fixture.name);
        }
        if let Err(mismatch) = testing::check(fixture, &wasm_reply) {
            panic!("{name}, fixture {} as wasm: {mismatch}", fixture.name);
        }
    }
}

#[test]
fn the_phq9_scorer_answers_every_fixture_byte_for_byte_the_same_natively_and_as_wasm() {
    native_and_wasm_agree("phq9", "questionnaires/phq9", phq9::call_json);
}

#[test]
fn score_series_answers_every_fixture_byte_for_byte_the_same_natively_and_as_wasm() {
    native_and_wasm_agree(
        "score_series",
        "calculators/score_series",
        score_series::call_json,
    );
}

#[test]
fn reliable_change_answers_every_fixture_byte_for_byte_the_same_natively_and_as_wasm() {
    native_and_wasm_agree(
        "reliable_change",
        "calculators/reliable_change",
        reliable_change::call_json,
    );
}

#[test]
fn alarm_summary_answers_every_fixture_byte_for_byte_the_same_natively_and_as_wasm() {
    native_and_wasm_agree(
        "alarm_summary",
        "calculators/alarm_summary",
        alarm_summary::call_json,
    );
}

#[test]
fn every_bundled_plugin_crate_is_covered_by_a_golden_test() {
    // A new plugin crate needs its own test above.
    let mut crates = Vec::new();
    for group in ["questionnaires", "calculators"] {
        for entry in std::fs::read_dir(crate_dir(group))
            .expect("plugin crate folder")
            .flatten()
        {
            if entry.path().join("Cargo.toml").is_file() {
                crates.push(format!("{group}/{}", entry.file_name().to_string_lossy()));
            }
        }
    }
    crates.sort();
    assert_eq!(
        crates,
        [
            "calculators/alarm_summary",
            "calculators/reliable_change",
            "calculators/score_series",
            "questionnaires/phq9",
        ]
    );
}
