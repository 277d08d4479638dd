//! Golden fixtures through both paths: for every plugin crate and every
//! fixture in its `fixtures/` folder, the crate's native `call_json` and its
//! WebAssembly build called through the host's runtime answer the same
//! bytes, and both pass the fixture. The ABI (allocation, copying in and
//! out, the packed pointer and length) changes nothing. No database: plain
//! tests.

use std::path::PathBuf;
use std::sync::Arc;

use host::metrics::Metrics;
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
        cache_key_file: tests::plugin_cache_key(),
        allow: Vec::new(),
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
        let call = plugin.invoke_raw(&input);
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

/// One test per plugin crate: `golden!(test_name, crate, "folder/name")`.
macro_rules! golden {
    ($($test:ident: $krate:ident in $group:literal;)*) => {
        $(
            #[test]
            fn $test() {
                native_and_wasm_agree(
                    stringify!($krate),
                    concat!($group, "/", stringify!($krate)),
                    $krate::call_json,
                );
            }
        )*

        /// Every crate the macro covers, as `folder/name`.
        const COVERED: &[&str] = &[$(concat!($group, "/", stringify!($krate))),*];
    };
}

golden! {
    phq9_answers_every_fixture_the_same_natively_and_as_wasm: phq9 in "questionnaires";
    gad7_answers_every_fixture_the_same_natively_and_as_wasm: gad7 in "questionnaires";
    who5_answers_every_fixture_the_same_natively_and_as_wasm: who5 in "questionnaires";
    k10_answers_every_fixture_the_same_natively_and_as_wasm: k10 in "questionnaires";
    pcl5_answers_every_fixture_the_same_natively_and_as_wasm: pcl5 in "questionnaires";
    dass21_answers_every_fixture_the_same_natively_and_as_wasm: dass21 in "questionnaires";
    audit_answers_every_fixture_the_same_natively_and_as_wasm: audit in "questionnaires";
    mood_diary_answers_every_fixture_the_same_natively_and_as_wasm: mood_diary in "questionnaires";
    intake_answers_every_fixture_the_same_natively_and_as_wasm: intake in "questionnaires";
    diary_answers_every_fixture_the_same_natively_and_as_wasm: diary in "questionnaires";
    score_series_answers_every_fixture_the_same_natively_and_as_wasm: score_series in "calculators";
    reliable_change_answers_every_fixture_the_same_natively_and_as_wasm: reliable_change in "calculators";
    alarm_summary_answers_every_fixture_the_same_natively_and_as_wasm: alarm_summary in "calculators";
    episode_outcome_answers_every_fixture_the_same_natively_and_as_wasm: episode_outcome in "calculators";
}

#[test]
fn every_bundled_plugin_crate_is_covered_by_a_golden_test() {
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
    let mut covered: Vec<String> = COVERED.iter().map(|c| c.to_string()).collect();
    covered.sort();
    assert_eq!(
        crates, covered,
        "a new plugin crate needs a line in golden! above"
    );
}
