//! The native runner: a plugin crate's fixtures through its `call_json`,
//! with `cargo test`, and a report of every failing fixture.

use std::path::Path;

use super::diff::{Mismatch, check};
use super::fixtures::{Fixture, load_dir};
use crate::log::{self, Level};

/// Runs every fixture in `crate_dir/fixtures` through `call` (a plugin
/// crate's `call_json`) and panics with a report of every failing fixture:
/// its name, description, what differs and the lines the plugin logged. A
/// plugin panicking on a fixture counts as a failure of that fixture.
///
/// Panics too when the folder is missing, holds an invalid fixture, or holds
/// no fixture at all: every plugin ships at least one, because the host
/// self-tests a module against them before it serves it.
///
/// ```rust,ignore
/// #[test]
/// fn fixtures() {
///     plugin_sdk::testing::check_fixtures(env!("CARGO_MANIFEST_DIR"), call_json);
/// }
/// ```
pub fn check_fixtures(crate_dir: impl AsRef<Path>, call: fn(&[u8]) -> Vec<u8>) {
    let dir = crate_dir.as_ref().join("fixtures");
    let fixtures = match load_dir(&dir) {
        Ok(fixtures) => fixtures,
        Err(e) => panic!("{e}\n(a plugin ships its golden fixtures as fixtures/*.json)"),
    };
    assert!(
        !fixtures.is_empty(),
        "no fixtures in {}: a plugin ships at least one fixtures/*.json \
         ({{\"description\", \"input\", \"output\" or \"error\"}})",
        dir.display()
    );

    let mut failures = Vec::new();
    for fixture in &fixtures {
        log::take();
        let input = fixture.input_bytes();
        let result = std::panic::catch_unwind(|| call(&input));
        let logged = log::take();
        let mismatch = match result {
            Ok(reply) => check(fixture, &reply).err(),
            Err(payload) => Some(Mismatch::new(format!(
                "the plugin panicked: {}",
                panic_message(payload.as_ref())
            ))),
        };
        match mismatch {
            None => eprintln!("fixture {}: ok", fixture.name),
            Some(mismatch) => {
                eprintln!("fixture {}: FAILED", fixture.name);
                failures.push(report(fixture, &mismatch, &logged));
            }
        }
    }

    if !failures.is_empty() {
        panic!(
            "{} of {} fixtures in {} failed:\n\n{}",
            failures.len(),
            fixtures.len(),
            dir.display(),
            failures.join("\n\n")
        );
    }
}

fn report(fixture: &Fixture, mismatch: &Mismatch, logged: &[(Level, String)]) -> String {
    let mut out = format!("--- {}: {}\n{mismatch}", fixture.name, fixture.description);
    if !logged.is_empty() {
        out.push_str("\n  log:");
        for (level, line) in logged {
            out.push_str(&format!("\n    {level:?}: {line}"));
        }
    }
    out
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::{Value, json};

    use super::*;

    fn echo_plugin(input: &[u8]) -> Vec<u8> {
        crate::info!("called with {} bytes", input.len());
        let input: Value = serde_json::from_slice(input).expect("json");
        if input.get("panic").is_some() {
            panic!("asked to panic");
        }
        match input.get("fail") {
            Some(message) => json!({"error": {"message": message}}),
            None => json!({"ok": input}),
        }
        .to_string()
        .into_bytes()
    }

    fn crate_with(fixtures: &[(&str, &str)]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "plugin-sdk-crate-{}-{}",
            std::process::id(),
            fixtures.len()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("fixtures")).expect("temp dir");
        for (name, text) in fixtures {
            std::fs::write(dir.join("fixtures").join(name), text).expect("write");
        }
        dir
    }

    fn panic_text(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
        let payload = std::panic::catch_unwind(f).expect_err("should panic");
        panic_message(payload.as_ref())
    }

    #[test]
    fn check_fixtures_passes_and_reports_failures() {
        let dir = crate_with(&[
            (
                "1-ok.json",
                r#"{"description": "echo", "input": {"a": 1}, "output": {"a": 1.0}}"#,
            ),
            (
                "2-err.json",
                r#"{"description": "refused", "input": {"fail": "bad input"}, "error": "bad"}"#,
            ),
        ]);
        check_fixtures(&dir, echo_plugin);

        let bad = r#"{"description": "wrong value", "input": {"a": 1}, "output": {"a": 2}}"#;
        std::fs::write(dir.join("fixtures/3-bad.json"), bad).expect("write");
        let boom = r#"{"description": "panics", "input": {"panic": 1}, "output": {}}"#;
        std::fs::write(dir.join("fixtures/4-boom.json"), boom).expect("write");
        let text = panic_text(|| check_fixtures(&dir, echo_plugin));
        assert!(text.starts_with("2 of 4 fixtures"), "{text}");
        assert!(text.contains("--- 3-bad: wrong value"), "{text}");
        assert!(text.contains("$.a: expected 2, got 1"), "{text}");
        assert!(text.contains("Info: called with 7 bytes"), "{text}");
        assert!(text.contains("--- 4-boom: panics\nthe plugin panicked: asked to panic"));
        assert!(!text.contains("1-ok"), "{text}");
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn check_fixtures_needs_a_fixture() {
        let dir = crate_with(&[]);
        let text = panic_text(|| check_fixtures(&dir, echo_plugin));
        assert!(text.contains("no fixtures"), "{text}");
        std::fs::remove_dir_all(&dir).expect("clean up");
        let text = panic_text(|| check_fixtures(&dir, echo_plugin));
        assert!(text.contains("cannot list fixtures"), "{text}");
    }
}
