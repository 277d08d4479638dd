//! A second guest language: the PHQ-9 scorer of
//! `examples/assemblyscript-scorer/`, compiled by the tests with the
//! AssemblyScript compiler from npm, against the Rust scorer of
//! `questionnaires/phq9/`. Both answer every fixture, and thousands of
//! generated inputs, with the same bytes; the module passes `outcomes
//! plugin test` and its self-test; over HTTP a host serving it stores
//! outcomes identical to a host serving the Rust scorer. AssemblyScript's
//! `env.abort` traps with the guest's message, also when its arguments are
//! hostile; a module refused at load gets a hint in its own language.

use std::sync::Arc;

use host::commands::plugin::{self, PluginCommand};
use host::metrics::Metrics;
use host::plugins::{LimitSettings, Plugin, PluginSettings, Plugins};
use plugin_sdk::testing::{self, Fixture};
use serde_json::Value;
use tests::plugins::{copy_definition, install_module, two_item_definition, write_definition};
use tests::{Db, TestApp, assemblyscript, db_test, json};

use crate::support::test_protocols;

fn runtime() -> Plugins {
    let settings = PluginSettings {
        dir: tests::built_plugins(),
        cache_dir: None,
        cache_key_file: tests::plugin_cache_key(),
        allow: Vec::new(),
        limits: LimitSettings::default(),
    };
    Plugins::new(settings, Arc::new(Metrics::default())).expect("the plugin runtime")
}

fn phq9_fixtures() -> Vec<Fixture> {
    testing::load_dir(tests::repo_root().join("questionnaires/phq9/fixtures")).expect("fixtures")
}

/// The reply of the AssemblyScript scorer and of the Rust scorer (its
/// native `call_json`, which the golden tests prove equal to its wasm
/// build) to `input`, as the host would send it.
fn both(plugin: &Plugin, input: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let rust = phq9::call_json(input);
    let sent = plugin.manifest.decline_bytes(input);
    let call = plugin.invoke_raw(&sent);
    let asc = call
        .result
        .unwrap_or_else(|e| panic!("the AssemblyScript call failed: {e}"));
    (asc, rust)
}

#[test]
fn the_assemblyscript_scorer_answers_every_fixture_with_the_rust_scorers_bytes() {
    let plugins = runtime();
    let plugin = plugins
        .load_module(&assemblyscript::phq9_scorer())
        .unwrap_or_else(|e| panic!("the AssemblyScript module loads: {e}"));
    let rust = phq9::manifest();
    assert_eq!(plugin.name(), rust.name);
    assert_eq!(plugin.manifest.questionnaires, rust.questionnaires);
    assert_eq!(
        (plugin.manifest.questions, plugin.manifest.answers),
        (rust.questions, rust.answers),
        "both decline the same parts of the input"
    );
    let fixtures = phq9_fixtures();
    assert!(fixtures.len() >= 10);
    for fixture in &fixtures {
        let (asc, native) = both(&plugin, &fixture.input_bytes());
        assert!(
            asc == native,
            "fixture {}: the scorers differ\nassemblyscript: {}\nrust:           {}",
            fixture.name,
            String::from_utf8_lossy(&asc),
            String::from_utf8_lossy(&native)
        );
        if let Err(mismatch) = testing::check(fixture, &asc) {
            panic!("fixture {}: {mismatch}", fixture.name);
        }
    }
}

/// xorshift64: inputs that differ from run to run only if the seed does.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[(self.next() % items.len() as u64) as usize].clone()
    }
}

/// A scorer input with `values` for items 1 to 9, the PHQ-8 flag and the
/// norm of score `total` (or none).
fn input(values: &[Value], phq8: bool, norm: Option<(f64, f64)>) -> Vec<u8> {
    let values: serde_json::Map<String, Value> = values
        .iter()
        .enumerate()
        .map(|(i, v)| (format!("v_{}", i + 1), v.clone()))
        .collect();
    let mut score = json!({"key": "total", "label": "Total score",
        "items": ["v_1","v_2","v_3","v_4","v_5","v_6","v_7","v_8","v_9"], "cutoff": 10.0});
    if let Some((mean, sd)) = norm {
        score["norm"] = json!({"mean": mean, "sd": sd});
    }
    serde_json::to_vec(&json!({
        "questionnaire": {"key": "phq9", "name": "PHQ-9", "questions": [], "scores": [score]},
        "answers": {},
        "values": values,
        "flags": {"phq8": phq8},
        "textvars": {},
        "completed_at": "2026-03-01T09:30:00.000Z",
        "respondent_type": "patient"
    }))
    .expect("input JSON")
}

#[test]
fn the_assemblyscript_scorer_answers_generated_inputs_with_the_rust_scorers_bytes() {
    let plugins = runtime();
    let plugin = plugins
        .load_module(&assemblyscript::phq9_scorer())
        .unwrap_or_else(|e| panic!("the AssemblyScript module loads: {e}"));
    let answers = [Value::Null, json!(0.0), json!(1.0), json!(2.0), json!(3.0)];
    // Beyond the option values: fractions, negatives, large numbers, each
    // a sum of few powers of two, so totals stay short. A result that needs
    // all 17 significant digits (a sum with 1e-7 in it, say) may be written
    // with another last digit than serde_json's for the same double: see
    // examples/assemblyscript-scorer/README.md. The host passes only option
    // values, which never come near.
    let odd = [json!(0.5), json!(2.25), json!(-1.0), json!(1e9)];
    let norms = [
        Some((2.91, 3.52)),
        None,
        Some((0.0, 1.0)),
        Some((5.0, 0.0)),
        Some((-3.0, 2.5)),
        Some((100.0, 0.001)),
        Some((4.4, 7.3)),
    ];
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut compared = 0;
    // Every total of a complete PHQ-9 and of a complete PHQ-8, under the
    // real norm, then random answers, missing items, flags and norms.
    for total in 0..=27u32 {
        let mut values = vec![json!(0.0); 9];
        let mut left = total;
        for v in values.iter_mut() {
            let item = left.min(3);
            *v = json!(f64::from(item));
            left -= item;
        }
        for phq8 in [false, true] {
            let (asc, rust) = both(&plugin, &input(&values, phq8, norms[0]));
            assert!(
                asc == rust,
                "total {total}, phq8 {phq8}:\n{}\n{}",
                String::from_utf8_lossy(&asc),
                String::from_utf8_lossy(&rust)
            );
            compared += 1;
        }
    }
    for case in 0..3000 {
        let values: Vec<Value> = (0..9)
            .map(|_| {
                if rng.next().is_multiple_of(20) {
                    rng.pick(&odd)
                } else {
                    rng.pick(&answers)
                }
            })
            .collect();
        let phq8 = rng.next().is_multiple_of(4);
        let norm = rng.pick(&norms);
        let bytes = input(&values, phq8, norm);
        let (asc, rust) = both(&plugin, &bytes);
        assert!(
            asc == rust,
            "case {case}: the scorers differ on {}\nassemblyscript: {}\nrust:           {}",
            String::from_utf8_lossy(&bytes),
            String::from_utf8_lossy(&asc),
            String::from_utf8_lossy(&rust)
        );
        compared += 1;
    }
    assert_eq!(compared, 56 + 3000);
}

/// The AssemblyScript module in a plugin folder of its own, with the Rust
/// scorer's fixtures beside it; answers the module's path.
fn assemblyscript_folder(dir: &std::path::Path) -> std::path::PathBuf {
    install_module(dir, "phq9", &assemblyscript::phq9_scorer());
    let fixtures = dir.join("phq9/fixtures");
    std::fs::create_dir_all(&fixtures).expect("fixtures folder");
    for fixture in std::fs::read_dir(tests::repo_root().join("questionnaires/phq9/fixtures"))
        .expect("fixtures")
        .flatten()
    {
        std::fs::copy(fixture.path(), fixtures.join(fixture.file_name())).expect("copied");
    }
    dir.join("phq9/phq9.wasm")
}

#[test]
fn plugin_test_passes_the_assemblyscript_scorer_on_the_rust_scorers_fixtures() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let module = assemblyscript_folder(&dir.path().join("plugins"));
    let config =
        tests::plugin_tool_config_in(&dir.path().join("plugins"), &dir.path().join("data"));
    let run = PluginCommand::Test {
        module,
        fixtures: Vec::new(),
        profile: None,
    };
    assert!(plugin::run(run, &config).expect("the harness runs"));
}

/// `outcomes plugin test MODULE` run as the binary, in `dir`: its output.
fn plugin_test_output(dir: &std::path::Path, module: &std::path::Path) -> String {
    let out = std::process::Command::new(tests::processes::outcomes_binary())
        .current_dir(dir)
        .env_clear()
        .args(["plugin", "test"])
        .arg(module)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn plugin_test_names_the_contract_version_a_module_was_built_against() {
    // The AssemblyScript scorer's manifest has no `contract`: the first
    // version, still served, with the input of its time.
    let dir = tempfile::tempdir().expect("temporary folder");
    let module = assemblyscript_folder(&dir.path().join("plugins"));
    let old = plugin_test_output(dir.path(), &module);
    let first_line = old.lines().next().unwrap_or_default();
    assert!(
        first_line.contains(&format!(
            "(scorer, contract 1 of {}: built against an older plugin-sdk",
            plugin_sdk::CONTRACT_VERSION
        )),
        "{old}"
    );
    // A module built with this plugin-sdk declares its version.
    let rust = tests::built_plugins().join("phq9/phq9.wasm");
    let new = plugin_test_output(dir.path(), &rust);
    let first_line = new.lines().next().unwrap_or_default();
    assert!(
        first_line.contains(&format!(
            "(scorer, contract {}),",
            plugin_sdk::CONTRACT_VERSION
        )),
        "{new}"
    );
}

/// A host serving the AssemblyScript scorer as `phq9`, alone.
async fn spawn_assemblyscript(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        let plugins = config.data_dir.join("plugins");
        let questionnaires = config.data_dir.join("questionnaires");
        assemblyscript_folder(&plugins);
        copy_definition(&questionnaires, "phq9");
        config.plugins.dir = plugins;
        config.questionnaires_dir = questionnaires;
        config.protocols_dir = test_protocols();
    })
    .await
}

db_test!(
    /// Every PHQ-9 fixture's answers (and flags) posted to a host serving
    /// the AssemblyScript scorer and to one serving the Rust scorer: the
    /// stored outcomes are the same JSON, number types included.
    async fn over_http_the_assemblyscript_scorer_stores_the_rust_scorers_outcomes(
        app: spawn_assemblyscript,
    ) {
        let status = app.get("/api/v1/plugins").await;
        let phq9 = status.body["plugins"]
            .as_array()
            .and_then(|p| p.iter().find(|p| p["folder"] == "phq9"))
            .cloned()
            .unwrap_or(Value::Null);
        assert_eq!(phq9["state"], "serving", "{}", status.text);
        assert_eq!(phq9["serving"]["version"], "1.1.1+assemblyscript");
        let rust = TestApp::spawn(app.db).await;
        for (n, fixture) in phq9_fixtures().iter().enumerate() {
            let mut body = json!({
                "external_id": format!("f{n}"),
                "questionnaire_key": "phq9",
                "answer_data": fixture.input["answers"],
            });
            if fixture.input["flags"]["phq8"] == true {
                body["flags"] = json!({"phq8": true});
            }
            let path = "/api/v1/dossiers/golden/responses";
            let (asc, native) = tokio::join!(app.post(path, &body), rust.post(path, &body));
            assert_eq!(asc.status, 201, "{}", asc.text);
            assert_eq!(native.status, 201, "{}", native.text);
            let (asc, native) = (&asc.body["outcome"], &native.body["outcome"]);
            assert_eq!(
                asc.to_string(),
                native.to_string(),
                "fixture {}",
                fixture.name
            );
            assert!(asc["scores"]["total"]["exception"].is_null(), "{asc}");
        }
    }
);

/// An AssemblyScript scorer that gives up with an assertion.
const ABORTS: &str = r#"
export function outcomes_abi_version(): i32 { return 1; }
export function outcomes_alloc(len: i32): usize { return heap.alloc(<usize>len); }
function packed(s: string): i64 {
  const b = String.UTF8.encode(s);
  return <i64>((<u64>changetype<usize>(b) << 32) | <u64>b.byteLength);
}
export function outcomes_describe(): i64 {
  return packed('{"name":"aborts","kind":"scorer","version":"1.0.0","abi_version":1}');
}
export function outcomes_call(ptr: usize, len: i32): i64 {
  assert(len < 0, "the scorer gave up on purpose");
  return 0;
}
"#;

/// A module calling `env.abort` with arguments no compiler would pass:
/// a message pointer far outside memory, a file at the end of memory
/// whose length header claims 4 GiB, a negative line.
fn hostile_abort() -> Vec<u8> {
    let manifest = r#"{"name":"hostile_abort","kind":"scorer","version":"1.0.0","abi_version":1}"#;
    let wat = format!(
        r#"(module
  (import "env" "abort" (func $abort (param i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "{manifest}")
  (data (i32.const 65532) "\ff\ff\ff\ff")
  (func (export "outcomes_abi_version") (result i32) (i32.const 1))
  (func (export "outcomes_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "outcomes_describe") (result i64)
    (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const {len})))
  (func (export "outcomes_call") (param i32 i32) (result i64)
    (call $abort (i32.const -16) (i32.const 65536) (i32.const -1) (i32.const 7))
    (i64.const 0)))"#,
        manifest = manifest.replace('"', "\\\""),
        len = manifest.len()
    );
    wat::parse_str(&wat).expect("the module assembles")
}

async fn spawn_aborting(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        let plugins = config.data_dir.join("plugins");
        let questionnaires = config.data_dir.join("questionnaires");
        install_module(&plugins, "aborts", &assemblyscript::compile(ABORTS));
        install_module(&plugins, "hostile_abort", &hostile_abort());
        tests::plugins::copy_built_plugin(&plugins, "phq9");
        copy_definition(&questionnaires, "phq9");
        for key in ["aborts", "hostile_abort"] {
            write_definition(&questionnaires, key, &two_item_definition(key, key));
        }
        config.plugins.dir = plugins;
        config.questionnaires_dir = questionnaires;
        config.protocols_dir = test_protocols();
    })
    .await
}

db_test!(
    /// `env.abort` is a trap whose message is the guest's: the stored
    /// outcome says what the AssemblyScript scorer asserted and where;
    /// hostile arguments give a trap without them; the host serves on.
    async fn an_assemblyscript_abort_is_a_trap_carrying_its_message(app: spawn_aborting) {
        let post = |key: &str, id: &str| {
            let body = json!({"external_id": id, "questionnaire_key": key, "answer_data": {"v_1": "a1", "v_2": "a0"}});
            let app = &app;
            async move { app.post("/api/v1/dossiers/p1/responses", &body).await }
        };
        let aborted = post("aborts", "a1").await;
        assert_eq!(aborted.status, 201, "{}", aborted.text);
        let exception = &aborted.body["outcome"]["scores"]["total"]["exception"];
        assert_eq!(exception["code"], "trap", "{exception}");
        let message = exception["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("abort: the scorer gave up on purpose at ")
                && message.contains("module.ts:"),
            "{message}"
        );

        let hostile = post("hostile_abort", "h1").await;
        assert_eq!(hostile.status, 201, "{}", hostile.text);
        let exception = &hostile.body["outcome"]["scores"]["total"]["exception"];
        assert_eq!(exception["code"], "trap", "{exception}");
        assert_eq!(
            exception["message"], "trapped: abort: (no message)",
            "an unreadable message and file are left out"
        );

        let phq9 = app
            .post(
                "/api/v1/dossiers/p1/responses",
                &json!({"external_id": "q1", "questionnaire_key": "phq9",
                    "answer_data": {"v_1": "a1", "v_2": "a1", "v_3": "a1", "v_4": "a1", "v_5": "a1",
                        "v_6": "a1", "v_7": "a1", "v_8": "a1", "v_9": "a0"}}),
            )
            .await;
        assert_eq!(phq9.body["outcome"]["scores"]["total"]["value"], 8.0);
    }
);

#[test]
fn a_module_refused_at_load_is_told_what_to_change_in_its_own_language() {
    let plugins = runtime();
    // AssemblyScript whose entry call is misnamed.
    let no_call = assemblyscript::compile(&ABORTS.replace(
        "export function outcomes_call",
        "export function outcomes_cal",
    ));
    let error = plugins
        .load_module(&no_call)
        .expect_err("refused")
        .to_string();
    assert!(
        error.contains("missing export outcomes_call") && error.contains("entry file"),
        "{error}"
    );
    assert!(!error.contains("export_scorer!"), "no Rust advice: {error}");

    // A module nothing gives away: a neutral hint.
    let neutral = tests::plugins::hostile_module(
        "scorer",
        "neutral",
        tests::plugins::Behaviour::ForbiddenImport,
    );
    let error = plugins
        .load_module(&neutral)
        .expect_err("refused")
        .to_string();
    assert!(
        error.contains("env.exfiltrate") && error.contains("bare wasm32 target"),
        "{error}"
    );
    assert!(!error.contains("plugin-sdk"), "no Rust advice: {error}");
}
