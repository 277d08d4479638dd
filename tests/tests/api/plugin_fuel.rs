//! Fuel that fits the input, and a profile of where it goes. A call gets
//! `fuel + fuel_per_input_byte × input bytes` (host/src/plugins/limits.rs):
//! an input large enough to run a fixed budget out passes once the budget
//! grows with it, and the budget a call reports is the formula's.
//! `outcomes plugin test --profile FILE` writes the guest's profile in the
//! Firefox profiler's format.

use std::sync::Arc;

use host::commands::plugin::{self, PluginCommand};
use host::metrics::Metrics;
use host::plugins::{LimitOverride, LimitSettings, PluginError, PluginSettings, Plugins};
use serde_json::Value;
use tests::json;

fn runtime(scorer: LimitOverride) -> Plugins {
    let settings = PluginSettings {
        dir: tests::built_plugins(),
        cache_dir: None,
        cache_key_file: tests::plugin_cache_key(),
        allow: Vec::new(),
        limits: LimitSettings {
            scorer,
            ..LimitSettings::default()
        },
    };
    Plugins::new(settings, Arc::new(Metrics::default())).expect("the plugin runtime")
}

/// A PHQ-9 fixture's input, and the same input with a 200 KB textvar the
/// scorer must read past.
fn inputs() -> (Vec<u8>, Vec<u8>) {
    let fixture =
        tests::repo_root().join("questionnaires/phq9/fixtures/band_edge_10_moderate.json");
    let fixture: Value =
        serde_json::from_slice(&std::fs::read(fixture).expect("fixture")).expect("JSON");
    let small = serde_json::to_vec(&fixture["input"]).expect("JSON");
    let mut padded = fixture["input"].clone();
    padded["textvars"] = json!({"pad": "x".repeat(200_000)});
    (small, serde_json::to_vec(&padded).expect("JSON"))
}

#[test]
fn a_large_input_gets_fuel_for_its_size() {
    let (small, padded) = inputs();
    let module = tests::plugins::built_module("phq9");
    let used = |plugins: &Plugins, input: &[u8]| {
        let plugin = plugins.load_module(&module).expect("loads");
        plugin.invoke_raw(input)
    };
    let defaults = runtime(LimitOverride::default());
    let small_call = used(&defaults, &small);
    let padded_call = used(&defaults, &padded);
    small_call.result.expect("the small input scores");
    padded_call.result.expect("the padded input scores");
    let (s, p) = (small_call.usage.fuel_used, padded_call.usage.fuel_used);
    assert!(p > s + 100_000, "reading 200 KB costs fuel: {s} vs {p}");
    let l = host::plugins::Limits::SCORER;
    assert_eq!(
        padded_call.usage.fuel_budget,
        l.fuel + l.fuel_per_input_byte * padded.len() as u64,
        "the default budget is the documented formula"
    );

    // A base budget between the two: the small input passes, the large one
    // runs out while nothing scales the budget...
    let base = s + (p - s) / 2;
    let flat = runtime(LimitOverride {
        fuel: Some(base),
        fuel_per_input_byte: Some(0),
        ..LimitOverride::default()
    });
    used(&flat, &small).result.expect("the small input fits");
    let out = used(&flat, &padded);
    assert_eq!(
        out.result.expect_err("out of fuel"),
        PluginError::OutOfFuel { budget: base }
    );
    // ...and passes once every input byte brings fuel.
    let per_byte = (p - base) / padded.len() as u64 + 1;
    let scaled = runtime(LimitOverride {
        fuel: Some(base),
        fuel_per_input_byte: Some(per_byte),
        ..LimitOverride::default()
    });
    let call = used(&scaled, &padded);
    call.result.expect("the large input fits its budget");
    assert_eq!(
        call.usage.fuel_budget,
        base + per_byte * padded.len() as u64
    );
    assert_eq!(call.usage.fuel_used, p, "fuel is deterministic");
}

#[test]
fn plugin_test_writes_a_profile_in_the_firefox_format() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let config = tests::plugin_tool_config(dir.path());
    let file = dir.path().join("phq9.profile.json");
    let run = PluginCommand::Test {
        module: tests::built_plugins().join("phq9/phq9.wasm"),
        fixtures: Vec::new(),
        profile: Some(file.clone()),
    };
    assert!(plugin::run(run, &config).expect("the harness runs"));
    let profile: Value =
        serde_json::from_slice(&std::fs::read(&file).expect("the profile is written"))
            .expect("the profile is JSON");
    // The processed profile format: `meta` (with the sampling interval),
    // `libs` (the profiled module) and `threads` holding the samples.
    assert!(
        profile["meta"]["interval"]
            .as_f64()
            .is_some_and(|i| i > 0.0),
        "{}",
        profile["meta"]
    );
    let libs = profile["libs"].as_array().expect("libs");
    assert!(libs.iter().any(|l| l["name"] == "phq9"), "{libs:?}");
    let threads = profile["threads"].as_array().expect("threads");
    assert!(!threads.is_empty());
    let samples = &threads[0]["samples"];
    let count = samples["length"]
        .as_u64()
        .or_else(|| samples["stack"].as_array().map(|s| s.len() as u64))
        .unwrap_or(0);
    assert!(count > 0, "the profile holds samples: {samples}");
}
