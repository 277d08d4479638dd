//! The native fixture runner: a plugin's golden fixtures, checked with
//! plain `cargo test`.
//!
//! A fixture is a file `fixtures/NAME.json` in the plugin crate:
//!
//! ```json
//! {
//!   "description": "all items answered, moderate depression",
//!   "input": { "questionnaire": { "key": "phq9" }, "answers": {}, "values": {},
//!              "completed_at": "2024-05-01T09:00:00Z", "respondent_type": "patient" },
//!   "output": { "scores": { "total": { "value": 12 } }, "alarm": [], "completion": 1 }
//! }
//! ```
//!
//! `input` is what the host sends (a [`ScorerInput`](crate::ScorerInput) or
//! a [`CalculatorInput`](crate::CalculatorInput)); `output` is the `ok`
//! value the plugin must answer. Instead of `output`, `"error": "text"`
//! says the plugin must answer an error whose message contains `text`.
//!
//! A plugin crate runs its fixtures with one test:
//!
//! ```rust,ignore
//! #[test]
//! fn fixtures() {
//!     plugin_sdk::testing::check_fixtures(env!("CARGO_MANIFEST_DIR"), call_json);
//! }
//! ```
//!
//! `call_json` is the function [`export_scorer!`](crate::export_scorer) and
//! [`export_calculator!`](crate::export_calculator) define: the same JSON
//! in, JSON out path the WebAssembly export takes. The host loads the same
//! files with [`load_dir`] and compares its sandboxed calls' replies with
//! [`check`], so a fixture means the same thing natively and in the host.
//!
//! Comparison is structural JSON equality, with one allowance: numbers are
//! equal when their values are, so a fixture's `12` matches the `12.0` a
//! plugin's `f64` serializes to. Object key order does not matter; array
//! order does.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Number, Value};

use crate::contract::{PluginError, QuestionnaireInfo, Reply, ScorerInput};
use crate::log::{self, Level};

/// What a fixture expects the plugin to answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Expected {
    /// The `ok` value of the reply.
    Output(Value),
    /// A text the reply's error message must contain.
    Error(String),
}

/// One golden fixture: an input and the expected answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Fixture {
    /// The file name without `.json` (`example` for `fixtures/example.json`).
    pub name: String,
    /// What the case is about.
    pub description: String,
    /// The input JSON the plugin is called with.
    pub input: Value,
    /// What the plugin must answer.
    pub expected: Expected,
}

/// The file format; `deny_unknown_fields` catches a misspelt `output`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FixtureFile {
    description: String,
    input: Value,
    #[serde(default)]
    output: Option<Value>,
    #[serde(default)]
    error: Option<String>,
}

impl Fixture {
    /// Reads and parses one fixture file; its name is the file stem.
    pub fn load(path: impl AsRef<Path>) -> Result<Fixture, FixtureError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| FixtureError::Read {
            path: path.to_owned(),
            source,
        })?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Fixture::parse(&name, &bytes).map_err(|reason| FixtureError::Invalid {
            path: path.to_owned(),
            reason,
        })
    }

    /// Parses a fixture from its JSON text, naming it `name`; the error
    /// says what is wrong with the text.
    pub fn parse(name: &str, json: &[u8]) -> Result<Fixture, String> {
        let file: FixtureFile = serde_json::from_slice(json).map_err(|e| e.to_string())?;
        let expected = match (file.output, file.error) {
            (Some(output), None) => Expected::Output(output),
            (None, Some(error)) if error.is_empty() => {
                return Err(
                    "\"error\" is empty: give a text the error message must contain".into(),
                );
            }
            (None, Some(error)) => Expected::Error(error),
            (Some(_), Some(_)) => {
                return Err("has both \"output\" and \"error\": give one of them".into());
            }
            (None, None) => {
                return Err(
                    "has neither \"output\" (the expected ok value) nor \"error\" (a text the \
                     error message must contain)"
                        .into(),
                );
            }
        };
        Ok(Fixture {
            name: name.to_owned(),
            description: file.description,
            input: file.input,
            expected,
        })
    }

    /// The input as the bytes the plugin is called with.
    pub fn input_bytes(&self) -> Vec<u8> {
        // A `Value` has only string keys, so serializing it cannot fail.
        serde_json::to_vec(&self.input).unwrap_or_default()
    }
}

/// Loads every `*.json` file in `dir`, sorted by file name. Other files are
/// ignored; an empty folder gives an empty list (whether that is acceptable
/// is the caller's call). Fails on the first unreadable or invalid file,
/// naming it.
pub fn load_dir(dir: impl AsRef<Path>) -> Result<Vec<Fixture>, FixtureError> {
    let dir = dir.as_ref();
    let dir_error = |source| FixtureError::Dir {
        path: dir.to_owned(),
        source,
    };
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(dir_error)? {
        let path = entry.map_err(dir_error)?.path();
        if path.extension().is_some_and(|e| e == "json") && !path.is_dir() {
            paths.push(path);
        }
    }
    paths.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    paths.iter().map(Fixture::load).collect()
}

/// Why fixtures could not be loaded.
#[derive(Debug)]
pub enum FixtureError {
    /// The fixtures folder could not be listed (missing, for instance).
    Dir {
        /// The folder.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A fixture file could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A fixture file is not a valid fixture.
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

impl FixtureError {
    /// The folder or file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            FixtureError::Dir { path, .. }
            | FixtureError::Read { path, .. }
            | FixtureError::Invalid { path, .. } => path,
        }
    }
}

impl fmt::Display for FixtureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FixtureError::Dir { path, source } => {
                write!(f, "cannot list fixtures in {}: {source}", path.display())
            }
            FixtureError::Read { path, source } => {
                write!(f, "cannot read fixture {}: {source}", path.display())
            }
            FixtureError::Invalid { path, reason } => {
                write!(f, "invalid fixture {}: {reason}", path.display())
            }
        }
    }
}

impl std::error::Error for FixtureError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FixtureError::Dir { source, .. } | FixtureError::Read { source, .. } => Some(source),
            FixtureError::Invalid { .. } => None,
        }
    }
}

/// How a reply differs from a fixture's expectation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// One line saying what went wrong.
    pub summary: String,
    /// The differences, one line each with its JSON path (see
    /// [`json_diff`]); empty when the summary says it all.
    pub diff: Vec<String>,
}

impl Mismatch {
    fn new(summary: impl Into<String>) -> Mismatch {
        Mismatch {
            summary: summary.into(),
            diff: Vec::new(),
        }
    }
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary)?;
        for line in &self.diff {
            write!(f, "\n  {line}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Mismatch {}

/// Checks a plugin's reply (the bytes its entry call returned) against a
/// fixture's expectation. The reply must be JSON of the shape
/// `{"ok": ...}` or `{"error": {"message": ...}}`.
pub fn check(fixture: &Fixture, reply_bytes: &[u8]) -> Result<(), Mismatch> {
    let reply: Value = serde_json::from_slice(reply_bytes).map_err(|e| {
        Mismatch::new(format!(
            "the reply is not JSON ({e}): {}",
            preview(&String::from_utf8_lossy(reply_bytes))
        ))
    })?;
    let reply = Reply::<Value>::deserialize(&reply).map_err(|_| {
        Mismatch::new(format!(
            "the reply is neither {{\"ok\": ...}} nor {{\"error\": {{\"message\": ...}}}}: {}",
            preview(&reply.to_string())
        ))
    })?;
    match (&fixture.expected, reply) {
        (Expected::Output(expected), Reply::Ok(actual)) => {
            let diff = json_diff(expected, &actual);
            if diff.is_empty() {
                Ok(())
            } else {
                Err(Mismatch {
                    summary: format!(
                        "the output differs from the fixture's in {} place{}",
                        diff.len(),
                        if diff.len() == 1 { "" } else { "s" }
                    ),
                    diff,
                })
            }
        }
        (Expected::Output(_), Reply::Error(PluginError { message })) => Err(Mismatch::new(
            format!("expected an output, the plugin answered the error {message:?}"),
        )),
        (Expected::Error(text), Reply::Ok(actual)) => Err(Mismatch::new(format!(
            "expected an error containing {text:?}, the plugin answered the output {}",
            preview(&actual.to_string())
        ))),
        (Expected::Error(text), Reply::Error(PluginError { message })) => {
            if message.contains(text.as_str()) {
                Ok(())
            } else {
                Err(Mismatch::new(format!(
                    "expected an error containing {text:?}, the plugin answered the error \
                     {message:?}"
                )))
            }
        }
    }
}

/// The differences between two JSON values, one line per difference, each
/// starting with the JSON path where it is (`$` is the whole value):
///
/// - `$.scores.total.value: expected 12, got 11`
/// - `$.scores.total.tscore: missing (expected 61.2)`
/// - `$.scores.total.status: unexpected (got "alarm")`
/// - `$.alarm: expected 1 element, got 2`, followed by the differences of
///   the elements both have and a line per missing or extra element.
///
/// Numbers are equal when their values are (`12` and `12.0`); object key
/// order is ignored. Equal values give no lines.
pub fn json_diff(expected: &Value, actual: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    diff_at("$", expected, actual, &mut lines);
    lines
}

fn diff_at(path: &str, expected: &Value, actual: &Value, lines: &mut Vec<String>) {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => diff_objects(path, e, a, lines),
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                lines.push(format!(
                    "{path}: expected {} element{}, got {}",
                    e.len(),
                    if e.len() == 1 { "" } else { "s" },
                    a.len()
                ));
            }
            for (i, (e, a)) in e.iter().zip(a).enumerate() {
                diff_at(&format!("{path}[{i}]"), e, a, lines);
            }
            for (i, e) in e.iter().enumerate().skip(a.len()) {
                lines.push(format!(
                    "{path}[{i}]: missing (expected {})",
                    preview_value(e)
                ));
            }
            for (i, a) in a.iter().enumerate().skip(e.len()) {
                lines.push(format!(
                    "{path}[{i}]: unexpected (got {})",
                    preview_value(a)
                ));
            }
        }
        (Value::Number(e), Value::Number(a)) => {
            if !numbers_equal(e, a) {
                lines.push(format!("{path}: expected {e}, got {a}"));
            }
        }
        _ => {
            if expected != actual {
                lines.push(format!(
                    "{path}: expected {}, got {}",
                    preview_value(expected),
                    preview_value(actual)
                ));
            }
        }
    }
}

fn diff_objects(
    path: &str,
    expected: &Map<String, Value>,
    actual: &Map<String, Value>,
    lines: &mut Vec<String>,
) {
    for (key, e) in expected {
        let key_path = member_path(path, key);
        match actual.get(key) {
            Some(a) => diff_at(&key_path, e, a, lines),
            None => lines.push(format!(
                "{key_path}: missing (expected {})",
                preview_value(e)
            )),
        }
    }
    for (key, a) in actual {
        if !expected.contains_key(key) {
            lines.push(format!(
                "{}: unexpected (got {})",
                member_path(path, key),
                preview_value(a)
            ));
        }
    }
}

/// `$.key` for identifier-like keys, `$["odd key"]` otherwise.
fn member_path(path: &str, key: &str) -> String {
    let plain = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        format!("{path}.{key}")
    } else {
        format!("{path}[{}]", Value::from(key))
    }
}

/// Integers compare exactly; anything involving a float compares as `f64`.
fn numbers_equal(a: &Number, b: &Number) -> bool {
    if let (Some(a), Some(b)) = (a.as_i64(), b.as_i64()) {
        return a == b;
    }
    if let (Some(a), Some(b)) = (a.as_u64(), b.as_u64()) {
        return a == b;
    }
    if (a.is_f64() || b.is_f64())
        && let (Some(a), Some(b)) = (a.as_f64(), b.as_f64())
    {
        return a == b;
    }
    false
}

const PREVIEW_CHARS: usize = 200;

fn preview_value(value: &Value) -> String {
    preview(&value.to_string())
}

/// `text` cut to [`PREVIEW_CHARS`] characters, with an ellipsis when cut.
fn preview(text: &str) -> String {
    match text.char_indices().nth(PREVIEW_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// A scorer input for a unit test: questionnaire `key` (no questions, no
/// score definitions), these values (question key to value, `None`
/// unanswered), no answers, flags or textvars, completed by the patient at
/// 2026-03-01T09:30:00Z. Set further fields on the result as a test needs.
///
/// ```rust
/// let input = plugin_sdk::testing::scorer_input("mood4", [("v_1", Some(2.0)), ("v_2", None)]);
/// assert_eq!(input.value("v_1"), Some(2.0));
/// assert_eq!(input.value("v_2"), None);
/// ```
pub fn scorer_input<'a>(
    key: &str,
    values: impl IntoIterator<Item = (&'a str, Option<f64>)>,
) -> ScorerInput {
    ScorerInput {
        questionnaire: QuestionnaireInfo {
            key: key.to_owned(),
            name: key.to_owned(),
            questions: Vec::new(),
            scores: Vec::new(),
        },
        answers: Default::default(),
        values: values.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        flags: Default::default(),
        textvars: Default::default(),
        completed_at: "2026-03-01T09:30:00Z".to_owned(),
        respondent_type: "patient".to_owned(),
        patient: Default::default(),
    }
}

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
    use serde_json::json;

    use super::*;

    fn fixture(expected: Expected) -> Fixture {
        Fixture {
            name: "case".into(),
            description: "a case".into(),
            input: json!({}),
            expected,
        }
    }

    fn output(value: Value) -> Fixture {
        fixture(Expected::Output(value))
    }

    #[test]
    fn parse_reads_output_and_error_fixtures() {
        let f = Fixture::parse(
            "a",
            br#"{"description": "d", "input": {"x": 1}, "output": {"y": 2}}"#,
        )
        .expect("valid");
        assert_eq!(f.name, "a");
        assert_eq!(f.description, "d");
        assert_eq!(f.input, json!({"x": 1}));
        assert_eq!(f.expected, Expected::Output(json!({"y": 2})));
        assert_eq!(f.input_bytes(), br#"{"x":1}"#);

        let f = Fixture::parse("b", br#"{"description": "d", "input": [], "error": "no"}"#)
            .expect("valid");
        assert_eq!(f.expected, Expected::Error("no".into()));
    }

    #[test]
    fn parse_refuses_malformed_fixtures() {
        let refused = |json: &str| Fixture::parse("x", json.as_bytes()).expect_err(json);
        assert!(refused(r#"{"description": "d", "input": {}}"#).contains("neither"));
        assert!(
            refused(r#"{"description": "d", "input": {}, "output": {}, "error": "e"}"#)
                .contains("both")
        );
        assert!(refused(r#"{"description": "d", "input": {}, "error": ""}"#).contains("empty"));
        assert!(refused(r#"{"description": "d", "input": {}, "ouput": {}}"#).contains("ouput"));
        assert!(refused(r#"{"input": {}, "output": {}}"#).contains("description"));
        assert!(refused(r#"{"description": "d", "output": {}}"#).contains("input"));
        assert!(refused("{").contains("EOF"));
    }

    #[test]
    fn load_dir_sorts_by_name_and_names_bad_files() {
        let dir = std::env::temp_dir().join(format!("plugin-sdk-fixtures-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).expect("write");
        write(
            "b.json",
            r#"{"description": "second", "input": {}, "output": {}}"#,
        );
        write(
            "a.json",
            r#"{"description": "first", "input": {}, "error": "e"}"#,
        );
        write("notes.txt", "not a fixture");

        let fixtures = load_dir(&dir).expect("loads");
        let names: Vec<_> = fixtures.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);

        write("c.json", r#"{"description": "third", "input": {}}"#);
        let error = load_dir(&dir).expect_err("c.json is invalid");
        assert!(matches!(error, FixtureError::Invalid { .. }));
        assert_eq!(error.path(), dir.join("c.json"));
        assert!(error.to_string().contains("c.json"), "{error}");

        std::fs::remove_dir_all(&dir).expect("clean up");
        let error = load_dir(&dir).expect_err("folder is gone");
        assert!(matches!(error, FixtureError::Dir { .. }));
        assert!(error.to_string().contains("plugin-sdk-fixtures"), "{error}");
    }

    #[test]
    fn json_diff_of_equal_values_is_empty() {
        let v = json!({"scores": {"total": {"value": 12}}, "alarm": ["v_9"], "x": null});
        assert!(json_diff(&v, &v).is_empty());
        // Integers match the floats plugins serialize, key order is free.
        assert!(json_diff(&json!({"a": 12, "b": 1}), &json!({"b": 1.0, "a": 12.0})).is_empty());
        assert!(json_diff(&json!(-3), &json!(-3.0)).is_empty());
        assert!(json_diff(&json!(u64::MAX), &json!(u64::MAX)).is_empty());
    }

    #[test]
    fn json_diff_names_each_difference_by_path() {
        let expected = json!({
            "scores": {"total": {"value": 12, "interpretation": "moderate"}},
            "alarm": ["v_9"],
            "completion": 1,
        });
        let actual = json!({
            "scores": {"total": {"value": 11.0, "status": "alarm"}},
            "alarm": ["v_8", "v_9"],
            "completion": "1",
        });
        assert_eq!(
            json_diff(&expected, &actual),
            [
                "$.scores.total.value: expected 12, got 11.0",
                "$.scores.total.interpretation: missing (expected \"moderate\")",
                "$.scores.total.status: unexpected (got \"alarm\")",
                "$.alarm: expected 1 element, got 2",
                "$.alarm[0]: expected \"v_9\", got \"v_8\"",
                "$.alarm[1]: unexpected (got \"v_9\")",
                "$.completion: expected 1, got \"1\"",
            ]
        );
    }

    #[test]
    fn json_diff_paths_and_shapes() {
        assert_eq!(json_diff(&json!(1), &json!(2)), ["$: expected 1, got 2"]);
        assert_eq!(
            json_diff(&json!({"odd key": 1}), &json!({"odd key": 2})),
            ["$[\"odd key\"]: expected 1, got 2"]
        );
        assert_eq!(
            json_diff(&json!([[1, 2]]), &json!([[1]])),
            [
                "$[0]: expected 2 elements, got 1",
                "$[0][1]: missing (expected 2)"
            ]
        );
        assert_eq!(
            json_diff(&json!({"a": [1]}), &json!({"a": {"0": 1}})),
            ["$.a: expected [1], got {\"0\":1}"]
        );
        assert_eq!(
            json_diff(&json!(null), &json!(0)),
            ["$: expected null, got 0"]
        );
        assert_eq!(
            json_diff(&json!(1.5), &json!(1)),
            ["$: expected 1.5, got 1"]
        );
        let long = "x".repeat(500);
        let line = &json_diff(&json!(1), &json!(long))[0];
        assert!(line.ends_with('…') && line.len() < 300, "{line}");
    }

    #[test]
    fn check_accepts_matching_replies() {
        let f = output(json!({"scores": {"total": {"value": 3}}}));
        check(&f, br#"{"ok": {"scores": {"total": {"value": 3.0}}}}"#).expect("matches");
        let f = fixture(Expected::Error("missing".into()));
        check(&f, br#"{"error": {"message": "item v_1 is missing"}}"#).expect("contains");
    }

    #[test]
    fn check_reports_each_kind_of_mismatch() {
        let f = output(json!({"value": 3}));
        let m = check(&f, br#"{"ok": {"value": 4}}"#).expect_err("differs");
        assert_eq!(m.diff, ["$.value: expected 3, got 4"]);
        assert!(
            m.to_string().contains("\n  $.value: expected 3, got 4"),
            "{m}"
        );

        let m = check(&f, b"not json").expect_err("not json");
        assert!(m.summary.contains("not JSON") && m.summary.contains("not json"));
        let m = check(&f, br#"{"value": 3}"#).expect_err("no envelope");
        assert!(m.summary.contains("neither"), "{m}");
        let m = check(&f, br#"{"error": {"message": "boom"}}"#).expect_err("error");
        assert!(m.summary.contains("\"boom\""), "{m}");

        let f = fixture(Expected::Error("missing".into()));
        let m = check(&f, br#"{"ok": {"value": 3}}"#).expect_err("ok");
        assert!(m.summary.contains("{\"value\":3}"), "{m}");
        let m = check(&f, br#"{"error": {"message": "boom"}}"#).expect_err("other error");
        assert!(m.summary.contains("\"missing\"") && m.summary.contains("\"boom\""));
    }

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
