//! Golden fixtures: the file format, loading one file or a folder of
//! them, and why loading failed; plus [`scorer_input`], the input of a
//! unit test that needs no fixture file.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::contract::{QuestionnaireInfo, ScorerInput};

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
        typed_answers: Default::default(),
        enabled: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
}
