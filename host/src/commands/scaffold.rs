//! `outcomes plugin new` in this repository: a plugin crate of the
//! workspace that builds, tests and loads as it is, for the author to
//! change. A scorer comes with a two-question definition so the service
//! starts with it; a calculator with a fixture over two responses. The
//! crate inherits the workspace's edition, lints and the `plugin` profile,
//! like every bundled plugin (versions and lints live once, in the root
//! Cargo.toml). `standalone` writes the same sources as a crate of its own.

use std::path::Path;

use anyhow::Context;

use crate::plugins::module::valid_name;

/// Creates the crate for a `kind` plugin named `name` under `root`.
#[allow(clippy::print_stdout)]
pub fn create(root: &Path, kind: &str, name: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        valid_name(name),
        "{name:?}: a plugin name is 1 to 64 lower-case letters, digits and _, starting with a letter"
    );
    let parent = if kind == "scorer" {
        "questionnaires"
    } else {
        "calculators"
    };
    let dir = root.join(parent).join(name);
    anyhow::ensure!(!dir.exists(), "{} exists already", dir.display());
    let (lib, fixture) = if kind == "scorer" {
        (SCORER_LIB, SCORER_FIXTURE)
    } else {
        (CALCULATOR_LIB, CALCULATOR_FIXTURE)
    };
    // A calculator derives Serialize for its own results type.
    let extra_deps = if kind == "scorer" {
        ""
    } else {
        "\nserde.workspace = true"
    };
    let fill = |t: &str| {
        t.replace("{{name}}", name)
            .replace("{{kind}}", kind)
            .replace("{{extra_deps}}", extra_deps)
    };
    let mut files = vec![
        ("Cargo.toml", fill(CARGO_TOML)),
        ("src/lib.rs", fill(lib)),
        ("fixtures/example.json", fill(fixture)),
    ];
    if kind == "scorer" {
        files.push(("questionnaire.toml", fill(DEFINITION)));
    }
    for (file, text) in files {
        let path = dir.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        println!("created {}", path.display());
    }
    println!(
        "next: cargo test -p {name}   (runs fixtures/ natively)\n      \
         cargo xtask plugins   (builds it to wasm into plugins/{name}/; a running service reloads it)"
    );
    Ok(())
}

const CARGO_TOML: &str = r#"[package]
name = "{{name}}"
description = "The {{name}} {{kind}}"
version = "0.1.0"
edition.workspace = true
rust-version.workspace = true
license.workspace = true
publish.workspace = true

[lib]
# cdylib: the wasm module the host loads; rlib: native tests.
crate-type = ["cdylib", "rlib"]

[dependencies]
plugin-sdk.workspace = true{{extra_deps}}

[lints]
workspace = true
"#;

pub(super) const SCORER_LIB: &str = r#"//! Scorer of the {{name}} questionnaire. Cite the source of every rule
//! (manual, paper) next to it.

use plugin_sdk::{Score, ScorerInput, ScorerOutput, scoring};

const ITEMS: [&str; 2] = ["v_1", "v_2"];

fn score(input: ScorerInput) -> ScorerOutput {
    let values = input.values_of(&ITEMS);
    let total = match scoring::sum(&values) {
        Some(total) => Score::of(total),
        None => Score::missing(scoring::missing(&input, &ITEMS)),
    };
    let mut output = ScorerOutput::default();
    output.scores.insert("total".into(), total);
    output.alarm = Some(scoring::keys_at_or_above(&input, &["v_2"], 2.0));
    output.completion = Some(scoring::completion(&values));
    output
}

// It reads `values` alone: the service need not send the questions or the
// option keys answered.
plugin_sdk::export_scorer!(score, questionnaires = ["{{name}}"], questions = false, answers = false);

#[cfg(test)]
mod tests {
    #[test]
    fn fixtures() {
        plugin_sdk::testing::check_fixtures(env!("CARGO_MANIFEST_DIR"), super::call_json);
    }
}
"#;

pub(super) const DEFINITION: &str = r#"# The {{name}} questionnaire. Replace the example questions and cite the
# instrument's source and licence.
key = "{{name}}"
name = "{{name}}"
short_description = "Example questionnaire"
language = "en"
licence = "Example; replace with the instrument's licence"
scorer = "{{name}}"

[option_sets]
frequency = [
  { key = "a0", value = 0, description = "Never" },
  { key = "a1", value = 1, description = "Sometimes" },
  { key = "a2", value = 2, description = "Often" },
]

[[questions]]
key = "v_1"
title = "First question"
type = "radio"
options = "frequency"

[[questions]]
key = "v_2"
title = "Second question"
type = "radio"
options = "frequency"

[[scores]]
key = "total"
label = "Total score"
items = ["v_1", "v_2"]
"#;

pub(super) const SCORER_FIXTURE: &str = r#"{
  "description": "both questions answered; the second raises the alarm",
  "input": {
    "questionnaire": {
      "key": "{{name}}",
      "questions": [
        {"key": "v_1", "type": "radio", "options": [{"key": "a0", "value": 0.0}, {"key": "a1", "value": 1.0}, {"key": "a2", "value": 2.0}]},
        {"key": "v_2", "type": "radio", "options": [{"key": "a0", "value": 0.0}, {"key": "a1", "value": 1.0}, {"key": "a2", "value": 2.0}]}
      ],
      "scores": [{"key": "total", "label": "Total score", "items": ["v_1", "v_2"]}]
    },
    "answers": {"v_1": "a1", "v_2": "a2"},
    "values": {"v_1": 1.0, "v_2": 2.0},
    "completed_at": "2026-01-01T10:00:00.000Z",
    "respondent_type": "patient"
  },
  "output": {
    "scores": {"total": {"value": 3.0}},
    "alarm": ["v_2"],
    "attention": null,
    "completion": 1.0
  }
}
"#;

pub(super) const CALCULATOR_LIB: &str = r#"//! The {{name}} report calculator.

use std::collections::BTreeMap;

use plugin_sdk::CalculatorInput;
use serde::Serialize;

/// What the calculator answers: completed responses per questionnaire.
#[derive(Debug, Serialize)]
struct Results {
    counts: BTreeMap<String, usize>,
}

fn calculate(input: CalculatorInput) -> Result<Results, String> {
    let mut counts = BTreeMap::new();
    for r in &input.responses {
        *counts.entry(r.questionnaire_key.clone()).or_insert(0) += 1;
    }
    Ok(Results { counts })
}

plugin_sdk::export_calculator!(calculate);

#[cfg(test)]
mod tests {
    #[test]
    fn fixtures() {
        plugin_sdk::testing::check_fixtures(env!("CARGO_MANIFEST_DIR"), super::call_json);
    }
}
"#;

pub(super) const CALCULATOR_FIXTURE: &str = r#"{
  "description": "two responses on one questionnaire",
  "input": {
    "responses": [
      {"id": 1, "questionnaire_key": "phq9", "completed_at": "2026-01-01T10:00:00.000Z"},
      {"id": 2, "questionnaire_key": "phq9", "completed_at": "2026-02-01T10:00:00.000Z"}
    ]
  },
  "output": {"results": {"counts": {"phq9": 2}}}
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scaffolded_definition_is_valid_and_matches_its_fixture() {
        let def =
            crate::domain::questionnaire::parse(&DEFINITION.replace("{{name}}", "demo"), "demo")
                .expect("the scaffolded definition parses");
        assert_eq!(def.scorer, "demo");
        let fixture: serde_json::Value =
            serde_json::from_str(&SCORER_FIXTURE.replace("{{name}}", "demo"))
                .expect("fixture JSON");
        let keys: Vec<&str> = def.questions.iter().map(|q| q.key.as_str()).collect();
        let fixture_keys: Vec<&str> = fixture["input"]["questionnaire"]["questions"]
            .as_array()
            .expect("questions")
            .iter()
            .filter_map(|q| q["key"].as_str())
            .collect();
        assert_eq!(keys, fixture_keys);
        serde_json::from_str::<serde_json::Value>(CALCULATOR_FIXTURE).expect("fixture JSON");
    }

    #[test]
    fn names_that_are_not_plugin_names_are_refused() {
        let dir = tempfile::tempdir().expect("temporary folder");
        assert!(create(dir.path(), "scorer", "Bad-Name").is_err());
        assert!(!dir.path().join("questionnaires").exists());
    }
}
