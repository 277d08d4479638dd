//! How a reply differs from a fixture's expectation: [`check`] says
//! whether it meets it, [`json_diff`] lists the differences of two JSON
//! values by path. Reads no files and runs no plugin.

use std::fmt;

use serde::Deserialize;
use serde_json::{Map, Number, Value};

use super::fixtures::{Expected, Fixture};
use crate::contract::{PluginError, Reply};

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
    pub(super) fn new(summary: impl Into<String>) -> Mismatch {
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
}
