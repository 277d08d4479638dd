//! `outcomes plugin fixtures DIR`: fills in the mechanical part of a
//! scorer's golden fixtures from its questionnaire definition.
//!
//! An author writes what a case is about: the answers (option keys, as a
//! client POSTs them), flags and textvars if the case needs them, and the
//! expected output worked out by hand. What the host sends the scorer for
//! those answers (the questionnaire part, the option values, every declared
//! flag) is derived here with the same code the service scores with, so a
//! fixture's input is exactly a real call's input and never drifts from the
//! definition: `--check` (and the test suite) fails when it would change.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::domain::answers::GivenAnswers;
use crate::domain::questionnaire::{self, DEFINITION_FILE, Questionnaire};
use crate::domain::variant::Variant;
use crate::scoring::{ScoringContext, scorer_input};

/// `completed_at` of a fixture that gives none: fixed, so inputs are
/// stable.
const DEFAULT_COMPLETED_AT: &str = "2026-03-01T09:30:00Z";

/// What filling did to one fixture file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filled {
    pub path: PathBuf,
    /// Whether the file's content differs from the filled-in one.
    pub changed: bool,
}

/// Reads the definition in `dir` and fills in every `dir/fixtures/*.json`:
/// writes the files that change unless `check`. Fails on an invalid
/// definition or fixture, naming it.
pub fn fill_dir(dir: &Path, check: bool) -> anyhow::Result<Vec<Filled>> {
    let q = definition(dir)?;
    let fixtures = dir.join("fixtures");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .with_context(|| format!("reading {}", fixtures.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    let mut filled = Vec::with_capacity(paths.len());
    for path in paths {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let new = fill(&q, &text).with_context(|| format!("{}", path.display()))?;
        let changed = new != text;
        if changed && !check {
            std::fs::write(&path, &new).with_context(|| format!("writing {}", path.display()))?;
        }
        filled.push(Filled { path, changed });
    }
    Ok(filled)
}

/// The questionnaire defined in `dir` (its folder name is its key).
pub fn definition(dir: &Path) -> anyhow::Result<Questionnaire> {
    let file = dir.join(DEFINITION_FILE);
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let folder = dir
        .canonicalize()
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    questionnaire::parse(&text, &folder).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))
}

/// One fixture's text with its input filled in, pretty-printed.
pub fn fill(q: &Questionnaire, text: &str) -> anyhow::Result<String> {
    let Value::Object(mut fixture) = serde_json::from_str(text)? else {
        bail!("a fixture is a JSON object");
    };
    let Some(Value::Object(input)) = fixture.get("input") else {
        bail!("\"input\" must be an object");
    };
    let input = filled_input(q, input)?;
    fixture.insert("input".into(), input);
    // Keep description first and the expectation last, whatever the order
    // the author wrote.
    let mut ordered = Map::new();
    for key in ["description", "input", "output", "error"] {
        if let Some(v) = fixture.remove(key) {
            ordered.insert(key.into(), v);
        }
    }
    ordered.extend(fixture);
    let mut out = serde_json::to_string_pretty(&Value::Object(ordered))?;
    out.push('\n');
    Ok(out)
}

/// The answers a fixture gives: `answers` as its author wrote them (each in
/// the form a client POSTs), with the answers a filled-in `answers` cannot
/// hold (a list of options, a number: only in `typed_answers`) taken from
/// `typed_answers`, so that filling a filled fixture changes nothing.
fn given_answers(input: &Map<String, Value>) -> anyhow::Result<Map<String, Value>> {
    let Some(Value::Object(answers)) = input.get("answers") else {
        bail!("input.answers must be an object of question key to answer");
    };
    let mut given = answers.clone();
    if let Some(Value::Object(typed)) = input.get("typed_answers") {
        for (key, value) in typed {
            let only_typed = matches!(value, Value::Array(_) | Value::Number(_));
            if only_typed && given.get(key).is_none_or(Value::is_null) {
                given.insert(key.clone(), value.clone());
            }
        }
    }
    Ok(given)
}

fn filled_input(q: &Questionnaire, input: &Map<String, Value>) -> anyhow::Result<Value> {
    let given = given_answers(input)?;
    let given = GivenAnswers::check(q, &given).map_err(|bad| {
        let list: Vec<String> = bad
            .iter()
            .map(|(k, e)| format!("{k}: {}", e.code()))
            .collect();
        anyhow::anyhow!("input.answers: {}", list.join(", "))
    })?;
    let variant = Variant::check([q], input.get("flags"), input.get("textvars")).map_err(|e| {
        let codes: Vec<&str> = e.iter().map(|e| e.code()).collect();
        anyhow::anyhow!("input.flags/textvars: {}", codes.join(", "))
    })?;
    // As the service stores them: answers to questions that are not
    // enabled are taken out (a fixture may give them, to show they count
    // for nothing).
    let answers = given.enabled(q, &variant).answers;
    let completed_at = match input.get("completed_at") {
        None => DEFAULT_COMPLETED_AT,
        Some(Value::String(s)) => s,
        Some(_) => bail!("input.completed_at must be an RFC 3339 text"),
    };
    let completed_at = DateTime::parse_from_rfc3339(completed_at)
        .with_context(|| format!("input.completed_at {completed_at:?}"))?
        .with_timezone(&Utc);
    let professional = input.get("respondent_type").and_then(Value::as_str) == Some("profess");
    let ctx = ScoringContext {
        completed_at,
        professional,
        variant: &variant,
    };
    let mut filled = scorer_input(q, &answers, ctx);
    // What the service knows of the patient is the author's to choose (a
    // rule may depend on it); the store does not hold it yet, so a real
    // call sends none.
    if let Some(patient) = input.get("patient") {
        filled.patient = serde_json::from_value(patient.clone()).context("input.patient")?;
    }
    Ok(serde_json::to_value(filled)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::testing::questionnaire;

    #[test]
    fn the_input_is_what_the_service_sends_and_filling_is_idempotent() {
        let q = questionnaire();
        let written = r#"{"output": {"scores": {}}, "description": "d",
            "input": {"answers": {"v_1": "a1", "v_2": "a1", "v_3": "a0"},
            "flags": {"short": true, "extra": true}}}"#;
        let once = fill(&q, written).expect("fills");
        let value: Value = serde_json::from_str(&once).expect("json");
        let keys: Vec<&String> = value.as_object().expect("object").keys().collect();
        assert_eq!(keys, ["description", "input", "output"]);
        let input = &value["input"];
        assert_eq!(input["questionnaire"]["key"], "mini");
        assert_eq!(input["values"]["v_1"], 1.0);
        assert_eq!(input["values"]["v_3"], 3.0);
        // Hidden by the flag: unanswered for the scorer.
        assert_eq!(input["answers"]["v_2"], Value::Null);
        assert_eq!(input["values"]["v_2"], Value::Null);
        assert_eq!(input["flags"]["short"], true);
        assert_eq!(input["flags"]["extra"], true);
        assert_eq!(input["completed_at"], "2026-03-01T09:30:00.000Z");
        assert_eq!(fill(&q, &once).expect("fills again"), once);
    }

    #[test]
    fn filling_again_keeps_answers_that_are_lists_or_numbers() {
        let text = format!(
            "{}\n[[questions]]\nkey = \"v_4\"\ntype = \"checkbox\"\ntitle = \"Which?\"\noptions = \"yn\"\n\n[[questions]]\nkey = \"v_5\"\ntype = \"integer\"\ntitle = \"How many?\"\n",
            crate::domain::testing::DEFINITION
        );
        let q = questionnaire::parse(&text, "mini").expect("valid");
        let written = r#"{"description": "d", "output": {"scores": {}},
            "input": {"answers": {"v_1": "a1", "v_4": ["a0", "a1"], "v_5": 7}}}"#;
        let once = fill(&q, written).expect("fills");
        let value: Value = serde_json::from_str(&once).expect("json");
        // `answers` holds the answers that are one string; the others are
        // in `typed_answers` alone.
        assert_eq!(value["input"]["answers"]["v_4"], Value::Null);
        assert_eq!(
            value["input"]["typed_answers"]["v_4"],
            serde_json::json!(["a0", "a1"])
        );
        assert_eq!(value["input"]["typed_answers"]["v_5"], 7);
        assert_eq!(fill(&q, &once).expect("fills again"), once);
        // An author's change to `answers` still counts.
        let changed = once.replacen("\"v_1\": \"a1\"", "\"v_1\": \"a0\"", 1);
        let again: Value = serde_json::from_str(&fill(&q, &changed).expect("fills")).expect("json");
        assert_eq!(again["input"]["typed_answers"]["v_1"], "a0");
        assert_eq!(again["input"]["typed_answers"]["v_5"], 7);
    }

    #[test]
    fn bad_fixtures_are_named_errors() {
        let q = questionnaire();
        let unknown = r#"{"description": "d", "input": {"answers": {"v_9": "a1"}}, "output": {}}"#;
        let err = fill(&q, unknown).expect_err("unknown question").to_string();
        assert!(err.contains("v_9: unknown_question"), "{err}");
        let no_answers = r#"{"description": "d", "input": {}, "output": {}}"#;
        assert!(fill(&q, no_answers).is_err());
        assert!(fill(&q, "[]").is_err());
    }
}
