//! Plugins made by the tests: hostile modules written in WebAssembly text
//! and assembled here (hostile test plugins live with the tests and are
//! built by them: docs/design.md#sandbox), variants of built modules, and
//! plugin and definition folders laid out for one test app.

use std::path::Path;

/// What a hostile module does when called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// `loop br 0`: never returns.
    InfiniteLoop,
    /// Grows memory until refused, then traps.
    MemoryBomb,
    /// Calls itself until the wasm stack is exhausted.
    DeepRecursion,
    /// Executes `unreachable`.
    Trap,
    /// Answers bytes that are not JSON.
    InvalidJson,
    /// Answers 2.2 MB, over the 1 MiB output cap of a scorer.
    HugeOutput,
    /// Declares ABI version 99.
    WrongAbi,
    /// Imports a function the host does not offer.
    ForbiddenImport,
    /// Answers this reply (a valid plugin, for reload tests).
    Reply(&'static str),
    /// Counts its calls in a global and in its memory and answers both
    /// counts (`value` and `tscore` of score `total`): a module that tries
    /// to carry state from one call (one patient) to the next. In a fresh
    /// instance both are 1.
    CountsCalls,
}

/// A module exporting the plugin ABI, named `name`, of `kind` (`scorer` or
/// `calculator`), that behaves as `behaviour` when called.
pub fn hostile_module(kind: &str, name: &str, behaviour: Behaviour) -> Vec<u8> {
    let abi = if behaviour == Behaviour::WrongAbi {
        99
    } else {
        1
    };
    let manifest =
        format!(r#"{{"name":"{name}","kind":"{kind}","version":"6.6.6","abi_version":{abi}}}"#);
    let import = match behaviour {
        Behaviour::ForbiddenImport => r#"(import "env" "exfiltrate" (func $x (param i32)))"#,
        _ => r#"(import "outcomes" "log" (func $log (param i32 i32 i32)))"#,
    };
    let (data, body) = match behaviour {
        Behaviour::InfiniteLoop => (String::new(), "(loop $l (br $l)) (i64.const 0)".to_owned()),
        Behaviour::MemoryBomb => (
            String::new(),
            "(loop $l (if (i32.eq (memory.grow (i32.const 16)) (i32.const -1)) (then unreachable)) (br $l)) (i64.const 0)"
                .to_owned(),
        ),
        Behaviour::DeepRecursion => (
            String::new(),
            "(drop (call $rec (i32.const 0))) (i64.const 0)".to_owned(),
        ),
        Behaviour::Trap => (String::new(), "unreachable".to_owned()),
        Behaviour::InvalidJson => reply_at("this is not JSON {"),
        Behaviour::HugeOutput => (
            String::new(),
            // 40 more pages, then claim 2.2 MB of them as the answer.
            "(drop (memory.grow (i32.const 40))) (i64.const 2200000)".to_owned(),
        ),
        Behaviour::Reply(json) => reply_at(json),
        Behaviour::CountsCalls => counts_calls(),
        Behaviour::WrongAbi | Behaviour::ForbiddenImport => {
            (String::new(), "(i64.const 0)".to_owned())
        }
    };
    let wat = format!(
        r#"(module
  {import}
  (memory (export "memory") 2)
  (global $heap (mut i32) (i32.const 65536))
  (global $calls (mut i32) (i32.const 0))
  (data (i32.const 16) "{manifest_text}")
  {data}
  (func (export "outcomes_abi_version") (result i32) (i32.const {abi}))
  (func (export "outcomes_alloc") (param $len i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $len)))
    (block $done
      (loop $more
        (br_if $done (i32.le_u (global.get $heap) (i32.mul (memory.size) (i32.const 65536))))
        (drop (memory.grow (i32.const 1)))
        (br $more)))
    (local.get $p))
  (func (export "outcomes_describe") (result i64)
    (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const {manifest_len})))
  (func $rec (param i32) (result i32)
    (i32.add (call $rec (i32.add (local.get 0) (i32.const 1))) (i32.const 1)))
  (func (export "outcomes_call") (param i32 i32) (result i64)
    {body}))"#,
        manifest_text = escape(&manifest),
        manifest_len = manifest.len(),
    );
    wat::parse_str(&wat).expect("the hostile module assembles")
}

/// A data segment at 4096 holding `reply` and a body answering it.
fn reply_at(reply: &str) -> (String, String) {
    (
        format!(r#"(data (i32.const 4096) "{}")"#, escape(reply)),
        format!(
            "(i64.or (i64.shl (i64.const 4096) (i64.const 32)) (i64.const {}))",
            reply.len()
        ),
    )
}

/// [`Behaviour::CountsCalls`]: the reply at 4096 with its two digits
/// written by the call: the global count and the count kept in memory at
/// 8192.
fn counts_calls() -> (String, String) {
    const REPLY: &str = r#"{"ok":{"scores":{"total":{"value":0,"tscore":0}}}}"#;
    let global_digit = 4096 + REPLY.find("0,").expect("a digit");
    let memory_digit = 4096 + REPLY.find("0}").expect("a digit");
    let (data, answer) = reply_at(REPLY);
    let body = format!(
        "(global.set $calls (i32.add (global.get $calls) (i32.const 1)))
    (i32.store8 (i32.const 8192) (i32.add (i32.load8_u (i32.const 8192)) (i32.const 1)))
    (i32.store8 (i32.const {global_digit}) (i32.add (i32.const 48) (global.get $calls)))
    (i32.store8 (i32.const {memory_digit}) (i32.add (i32.const 48) (i32.load8_u (i32.const 8192))))
    {answer}"
    );
    (data, body)
}

/// Escapes text for a WebAssembly text string literal.
fn escape(text: &str) -> String {
    text.bytes().map(|b| format!("\\{b:02x}")).collect()
}

/// `module` with a custom section appended: the same code under another
/// hash, so the host sees a new version.
pub fn with_custom_section(module: &[u8], tag: &str) -> Vec<u8> {
    host::plugins::sections::with_custom_section(module, "outcomes-test", tag.as_bytes())
}

/// Writes `bytes` as the module of plugin folder `folder` under
/// `plugins_dir`, atomically (aside, then renamed), as a deploy would.
pub fn install_module(plugins_dir: &Path, folder: &str, bytes: &[u8]) {
    let dir = plugins_dir.join(folder);
    std::fs::create_dir_all(&dir).expect("plugin folder");
    let tmp = dir.join(format!("{folder}.wasm.partial"));
    std::fs::write(&tmp, bytes).expect("module written");
    std::fs::rename(&tmp, dir.join(format!("{folder}.wasm"))).expect("module renamed");
}

/// Copies a built plugin (module and fixtures) into `plugins_dir`.
pub fn copy_built_plugin(plugins_dir: &Path, name: &str) {
    let from = crate::built_plugins().join(name);
    let fixtures = plugins_dir.join(name).join("fixtures");
    std::fs::create_dir_all(&fixtures).expect("fixtures folder");
    for entry in std::fs::read_dir(from.join("fixtures"))
        .expect("built fixtures")
        .flatten()
    {
        std::fs::copy(entry.path(), fixtures.join(entry.file_name())).expect("fixture copied");
    }
    let module = std::fs::read(from.join(format!("{name}.wasm"))).expect("built module");
    install_module(plugins_dir, name, &module);
}

/// The bytes of a built plugin module.
pub fn built_module(name: &str) -> Vec<u8> {
    std::fs::read(
        crate::built_plugins()
            .join(name)
            .join(format!("{name}.wasm")),
    )
    .expect("built module")
}

/// Writes a questionnaire definition folder `key` under `dir`.
pub fn write_definition(dir: &Path, key: &str, toml: &str) {
    let folder = dir.join(key);
    std::fs::create_dir_all(&folder).expect("definition folder");
    std::fs::write(folder.join("questionnaire.toml"), toml).expect("definition written");
}

/// Copies a questionnaire definition of the repository into `dir`.
pub fn copy_definition(dir: &Path, key: &str) {
    let text = std::fs::read_to_string(
        crate::repo_root()
            .join("questionnaires")
            .join(key)
            .join("questionnaire.toml"),
    )
    .expect("definition");
    write_definition(dir, key, &text);
}

/// A two-question questionnaire scored by the plugin `scorer`.
pub fn two_item_definition(key: &str, scorer: &str) -> String {
    format!(
        r#"key = "{key}"
name = "{key}"
short_description = "Two items"
language = "en"
licence = "test"
scorer = "{scorer}"

[option_sets]
yn = [{{ key = "a0", value = 0, description = "No" }}, {{ key = "a1", value = 1, description = "Yes" }}]

[[questions]]
key = "v_1"
title = "One"
type = "radio"
options = "yn"

[[questions]]
key = "v_2"
title = "Two"
type = "radio"
options = "yn"

[[scores]]
key = "total"
label = "Total"
items = ["v_1", "v_2"]
"#
    )
}
