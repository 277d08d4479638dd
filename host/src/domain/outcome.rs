//! The outcome of a response as stored and sent
//! (docs/api/outcomes.md#outcome-object). Scores stay open JSON objects
//! because scorers may add fields; the host only relies on the fields named
//! here.
//!
//! `complete` adds what the host owns to the scorer's output: each score's
//! `label`, `global` and `referenced_values` from the definition.

use plugin_sdk::{Score, ScoreStatus, ScorerOutput};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::questionnaire::{Questionnaire, ScoreDef};

/// `outcome` of a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Outcome {
    /// Score key to score entry.
    pub scores: Map<String, Value>,
    /// `attention`, `alarm` or null.
    pub action: Option<String>,
    /// Question keys that raised the alarm; null when the questionnaire
    /// defines no alarm rule.
    pub alarm: Option<Vec<String>>,
    /// Question keys that raised attention; null when undefined.
    pub attention: Option<Vec<String>>,
    /// `"NN%"` when the questionnaire defines completeness.
    pub complete: Option<String>,
}

impl Outcome {
    /// The outcome of a response that has no computed outcome (not completed,
    /// or completed before a scorer ran):
    /// docs/api/outcomes.md#outcome-of-a-response-that-is-not-completed.
    pub fn empty() -> Outcome {
        Outcome::default()
    }
}

/// Which scorer computed a stored outcome. Operators see it; the Response
/// JSON does not carry it (docs/api/outcomes.md#provenance).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Provenance {
    pub plugin: Option<String>,
    pub version: Option<String>,
    pub sha256: Option<String>,
    /// The plugin ABI version the module declared.
    pub abi_version: Option<i64>,
    /// SHA-256 of the questionnaire definition text scored with (kept in
    /// `questionnaire_versions`).
    pub definition_sha256: Option<String>,
    /// SHA-256 of the exact input bytes the scorer read; what a
    /// verification's reconstruction of the input is checked against.
    pub input_sha256: Option<String>,
}

/// Completes a scorer's output into the outcome the host stores and sends
/// (docs/api/outcomes.md#score-entries): every score of the definition, in
/// definition order, carries `score: true`, its `label` and
/// `referenced_values`, and the scorer's fields; `action` is derived;
/// `complete` is the completion as a rounded percentage. Output that breaks
/// the contract (a score or question key the definition lacks, a number that
/// is not finite, a completion outside 0..1) is refused with the reason, so
/// it is recorded as a failure instead of being stored half-checked
/// (docs/api/outcomes.md#checks-on-scorer-output).
pub fn complete(def: &Questionnaire, output: ScorerOutput) -> Result<Outcome, String> {
    let ScorerOutput {
        mut scores,
        alarm,
        attention,
        completion,
    } = output;
    if let Some(unknown) = scores
        .keys()
        .find(|k| !def.scores.iter().any(|s| &s.key == *k))
    {
        return Err(format!("score {unknown:?} is not a score of {}", def.key));
    }
    for keys in [&alarm, &attention].into_iter().flatten() {
        if let Some(unknown) = keys.iter().find(|k| def.question(k).is_none()) {
            return Err(format!("{unknown:?} is not a question of {}", def.key));
        }
    }
    let mut entries = Map::new();
    let mut status = (false, false);
    for s in &def.scores {
        let mut entry = head(def, s);
        if let Some(score) = scores.remove(&s.key) {
            for (name, n) in [("value", score.value), ("tscore", score.tscore)] {
                if n.is_some_and(|n| !n.is_finite()) {
                    return Err(format!("score {}: {name} is not a finite number", s.key));
                }
            }
            match score.status {
                Some(ScoreStatus::Alarm) => status.0 = true,
                Some(ScoreStatus::Attention) => status.1 = true,
                None => {}
            }
            put_fields(score, &mut entry);
        }
        entry.insert(
            "referenced_values".into(),
            Value::Array(s.items.iter().cloned().map(Value::String).collect()),
        );
        entries.insert(s.key.clone(), Value::Object(entry));
    }
    let complete = match completion {
        Some(c) if (0.0..=1.0).contains(&c) => Some(format!("{}%", (c * 100.0).round())),
        Some(c) => return Err(format!("completion {c} lies outside 0 to 1")),
        None => None,
    };
    let raised = |keys: &Option<Vec<String>>| keys.as_ref().is_some_and(|k| !k.is_empty());
    let action = if raised(&alarm) || status.0 {
        Some("alarm".to_owned())
    } else if raised(&attention) || status.1 {
        Some("attention".to_owned())
    } else {
        None
    };
    Ok(Outcome {
        scores: entries,
        action,
        alarm,
        attention,
        complete,
    })
}

/// A scorer's fields of one score into its outcome entry, as `Score`
/// serializes them (its fields in order, absent ones left out, then the
/// further fields) but without a JSON round trip: this runs for every
/// scored response. The fields the host owns (`score`, `label`, `global`,
/// `referenced_values`) are not the scorer's to set and are skipped.
fn put_fields(score: Score, entry: &mut Map<String, Value>) {
    let Score {
        value,
        interpretation,
        norm,
        tscore,
        tscore_interpretation,
        oru_flag,
        status,
        missing_values,
        extra,
    } = score;
    let number = |n: f64| serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number);
    let status = status.map(|s| match s {
        ScoreStatus::Alarm => "alarm",
        ScoreStatus::Attention => "attention",
    });
    let known = [
        ("value", value.map(number)),
        ("interpretation", interpretation.map(Value::String)),
        ("norm", norm.map(Value::String)),
        ("tscore", tscore.map(number)),
        (
            "tscore_interpretation",
            tscore_interpretation.map(Value::String),
        ),
        ("oru_flag", oru_flag.map(Value::String)),
        ("status", status.map(|s| Value::String(s.to_owned()))),
        (
            "missing_values",
            missing_values.map(|keys| Value::Array(keys.into_iter().map(Value::String).collect())),
        ),
    ];
    for (name, value) in known {
        if let Some(value) = value {
            entry.insert(name.to_owned(), value);
        }
    }
    for (name, value) in extra {
        if !matches!(
            name.as_str(),
            "score" | "label" | "global" | "referenced_values"
        ) {
            entry.insert(name, value);
        }
    }
}

/// The outcome of a completed response whose scorer failed
/// (docs/api/outcomes.md#scorer-failure): every score carries `score`,
/// `label`, `referenced_values` and an `exception` (the error code and
/// message) instead of a value, so the response is stored and can be
/// rescored.
pub fn failed(def: &Questionnaire, code: &str, message: &str) -> Outcome {
    let mut scores = Map::new();
    for s in &def.scores {
        let mut entry = head(def, s);
        entry.insert(
            "exception".into(),
            serde_json::json!({ "code": code, "message": message }),
        );
        entry.insert("referenced_values".into(), serde_json::json!(s.items));
        scores.insert(s.key.clone(), Value::Object(entry));
    }
    Outcome {
        scores,
        ..Outcome::empty()
    }
}

/// Whether a stored outcome records a scoring failure.
pub fn has_failure(outcome: &Outcome) -> bool {
    outcome
        .scores
        .values()
        .any(|s| s.get("exception").is_some())
}

/// What the definition says of a score in every outcome: `score`, its
/// label in the questionnaire's own language, and `global` for a main
/// result of the questionnaire.
fn head(def: &Questionnaire, s: &ScoreDef) -> Map<String, Value> {
    let mut entry = Map::new();
    entry.insert("score".into(), Value::Bool(true));
    entry.insert(
        "label".into(),
        Value::String(s.label.resolve(&def.language, "en").to_owned()),
    );
    if s.global {
        entry.insert("global".into(), Value::Bool(true));
    }
    entry
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::testing::questionnaire;
    use plugin_sdk::Score;

    #[test]
    fn score_fields_come_as_score_serializes_them_less_the_hosts() {
        let score = Score {
            value: Some(12.5),
            interpretation: Some("mild".into()),
            norm: Some(">= 10".into()),
            tscore: Some(55.0),
            tscore_interpretation: Some("average".into()),
            oru_flag: Some("H".into()),
            status: Some(ScoreStatus::Attention),
            missing_values: Some(vec!["v_2".into()]),
            extra: [
                ("zeta".to_owned(), Value::Null),
                ("label".to_owned(), Value::String("not the scorer's".into())),
                ("alpha".to_owned(), serde_json::json!({"nested": [1, 2]})),
            ]
            .into_iter()
            .collect(),
        };
        let Value::Object(mut expected) = serde_json::to_value(&score).expect("serializes") else {
            panic!("a score serializes as an object");
        };
        expected.remove("label");
        let mut entry = Map::new();
        put_fields(score, &mut entry);
        assert_eq!(entry, expected);
        assert_eq!(
            entry.keys().collect::<Vec<_>>(),
            expected.keys().collect::<Vec<_>>(),
            "in the same order"
        );
        let mut bare = Map::new();
        put_fields(Score::default(), &mut bare);
        assert!(bare.is_empty(), "absent fields stay absent: {bare:?}");
    }

    #[test]
    fn a_completed_outcome_carries_label_and_references_in_definition_order() {
        let mut output = ScorerOutput::default();
        output.scores.insert("total".into(), Score::of(2.0));
        output.completion = Some(0.5);
        let o = complete(&questionnaire(), output).expect("valid output");
        assert_eq!(
            serde_json::to_value(&o.scores).expect("json"),
            serde_json::json!({
                "total": {"score": true, "label": "Total", "value": 2.0, "referenced_values": ["v_1", "v_2"]},
                "second": {"score": true, "label": "Second", "referenced_values": []},
            })
        );
        assert_eq!(o.scores.keys().collect::<Vec<_>>(), ["total", "second"]);
        assert_eq!(o.complete.as_deref(), Some("50%"));
        assert_eq!((o.action, o.alarm, o.attention), (None, None, None));
    }

    #[test]
    fn action_is_alarm_before_attention_from_keys_or_score_status() {
        let mut output = ScorerOutput {
            alarm: Some(vec![]),
            attention: Some(vec!["v_2".into()]),
            ..ScorerOutput::default()
        };
        assert_eq!(
            complete(&questionnaire(), output.clone())
                .expect("valid")
                .action
                .as_deref(),
            Some("attention")
        );
        output.scores.insert(
            "total".into(),
            Score {
                status: Some(ScoreStatus::Alarm),
                ..Score::of(2.0)
            },
        );
        assert_eq!(
            complete(&questionnaire(), output.clone())
                .expect("valid")
                .action
                .as_deref(),
            Some("alarm")
        );
        output.scores.clear();
        output.attention = Some(vec![]);
        let o = complete(&questionnaire(), output).expect("valid");
        assert_eq!(
            (o.action, o.alarm, o.attention),
            (None, Some(vec![]), Some(vec![]))
        );
    }

    #[test]
    fn output_outside_the_definition_is_refused() {
        let mut output = ScorerOutput::default();
        output.scores.insert("bogus".into(), Score::of(1.0));
        assert!(complete(&questionnaire(), output).is_err());
        let output = ScorerOutput {
            alarm: Some(vec!["v_9".into()]),
            ..ScorerOutput::default()
        };
        assert!(complete(&questionnaire(), output).is_err());
        let output = ScorerOutput {
            completion: Some(1.5),
            ..ScorerOutput::default()
        };
        assert!(complete(&questionnaire(), output).is_err());
    }

    #[test]
    fn a_failed_outcome_records_the_exception_on_every_score() {
        let o = failed(&questionnaire(), "out_of_fuel", "ran out of fuel");
        assert!(has_failure(&o));
        assert_eq!(o.scores["total"]["exception"]["code"], "out_of_fuel");
        assert_eq!(o.scores["second"]["label"], "Second");
        assert!(o.scores["total"].get("value").is_none());
        assert_eq!(o.action, None);
    }
}
