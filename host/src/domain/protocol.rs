//! Protocol definitions: the file format under `protocols/<key>.toml` and its
//! validation. A protocol groups questionnaires into measurements; automatic
//! protocols can be subscribed to.

use std::collections::HashSet;

use serde::Deserialize;

use super::questionnaire::{DefinitionErrors, is_valid_key};

/// A protocol definition file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtocolDef {
    pub key: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default = "yes")]
    pub active: bool,
    #[serde(default)]
    pub automatic: bool,
    pub measurements: Vec<MeasurementDef>,
}

/// One measurement of a protocol as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasurementDef {
    pub key: String,
    pub name: String,
    pub label: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default = "yes")]
    pub active: bool,
    /// Keys of the questionnaires of this measurement, in order.
    pub questionnaires: Vec<String>,
}

fn yes() -> bool {
    true
}

/// Parses and validates a protocol definition. `file_stem` must equal its key;
/// `questionnaire_exists` answers whether a questionnaire key is known.
pub fn parse(
    text: &str,
    file_stem: &str,
    questionnaire_exists: impl Fn(&str) -> bool,
) -> Result<ProtocolDef, DefinitionErrors> {
    let def: ProtocolDef =
        toml::from_str(text).map_err(|e| DefinitionErrors(vec![e.to_string()]))?;
    let mut errors = Vec::new();
    if !is_valid_key(&def.key) {
        errors.push(format!(
            "key {:?}: use lower-case letters, digits and _",
            def.key
        ));
    }
    if def.key != file_stem {
        errors.push(format!(
            "key {:?} must equal the file name {file_stem:?}",
            def.key
        ));
    }
    if def.name.trim().is_empty() {
        errors.push("name is blank".into());
    }
    if def.measurements.is_empty() {
        errors.push("measurements: a protocol needs at least one measurement".into());
    }
    let mut keys = HashSet::new();
    for (i, m) in def.measurements.iter().enumerate() {
        let at = format!("measurements[{i}] ({})", m.key);
        if !is_valid_key(&m.key) {
            errors.push(format!("{at}: invalid key"));
        }
        if !keys.insert(m.key.as_str()) {
            errors.push(format!("{at}: duplicate measurement key"));
        }
        if m.name.trim().is_empty() || m.label.trim().is_empty() {
            errors.push(format!("{at}: name and label must not be blank"));
        }
        if m.questionnaires.is_empty() {
            errors.push(format!(
                "{at}: a measurement needs at least one questionnaire"
            ));
        }
        for q in &m.questionnaires {
            if !questionnaire_exists(q) {
                errors.push(format!(
                    "{at}: no questionnaire {q:?} under questionnaires/"
                ));
            }
        }
    }
    if errors.is_empty() {
        Ok(def)
    } else {
        Err(DefinitionErrors(errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTAKE: &str = r#"
        key = "intake"
        name = "Intake"
        [[measurements]]
        key = "t0"
        name = "Intake"
        label = "T0"
        questionnaires = ["phq9"]
    "#;

    #[test]
    fn defaults_make_a_normal_active_protocol() {
        let p = parse(INTAKE, "intake", |k| k == "phq9").expect("valid");
        assert!(p.active);
        assert!(!p.automatic);
        assert!(p.measurements[0].active);
    }

    #[test]
    fn unknown_questionnaires_are_named() {
        let err = parse(INTAKE, "intake", |_| false).expect_err("invalid").0;
        assert_eq!(
            err,
            vec!["measurements[0] (t0): no questionnaire \"phq9\" under questionnaires/"]
        );
    }
}
