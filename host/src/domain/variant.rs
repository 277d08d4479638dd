//! Flags and textvars: which variant of a questionnaire a response uses.
//!
//! A definition declares boolean flags (a question may be shown only when
//! a flag is true, or hidden when it is) and text variables (`{{name}}` in
//! any text is replaced by the response's value or the definition's
//! default). A response is created with values for them (the flags and
//! textvars passed when a questionnaire is filled out,
//! docs/api/protocols-and-subscriptions.md#flags-and-textvars) and keeps them;
//! the same values decide what a respondent is shown and what the scorer
//! sees: a hidden question is not enabled (`enabled.rs`), so it is not
//! required and an answer to it is neither stored nor scored.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::questionnaire::{Question, Questionnaire};
use super::text::{Text, substitute};

/// The flags and textvars a response was created with. Only names the
/// questionnaire declares; a flag left out takes its definition's default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Variant {
    pub flags: BTreeMap<String, bool>,
    pub textvars: BTreeMap<String, String>,
}

/// Why given flags or textvars were refused; the wire codes of
/// docs/api/errors.md#error-codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum VariantError {
    /// A flag the questionnaire does not declare.
    FlagDoesNotExist,
    /// A flag whose value is not a boolean.
    FlagValueInvalid,
    /// A textvar the questionnaire does not declare.
    TextvarDoesNotExist,
    /// A textvar whose value is not a string (docs/api/errors.md#error-codes
    /// has no code of its own for this, so the generic `invalid`).
    TextvarValueInvalid,
    /// `flags` or `textvars` is not an object.
    NotAnObject,
}

impl VariantError {
    /// The wire code.
    pub fn code(self) -> &'static str {
        match self {
            VariantError::FlagDoesNotExist => "flag_does_not_exist",
            VariantError::FlagValueInvalid => "flag_value_invalid",
            VariantError::TextvarDoesNotExist => "textvar_does_not_exist",
            VariantError::TextvarValueInvalid | VariantError::NotAnObject => "invalid",
        }
    }
}

impl Variant {
    /// Checks the `flags` and `textvars` of a request against the
    /// questionnaires they apply to: each name must be declared by at least
    /// one of them (a protocol passes one set for all its questionnaires),
    /// flags must be booleans and textvars strings. Absent fields are empty.
    /// On failure, every distinct reason, in a stable order.
    pub fn check<'a>(
        questionnaires: impl IntoIterator<Item = &'a Questionnaire> + Clone,
        flags: Option<&Value>,
        textvars: Option<&Value>,
    ) -> Result<Variant, Vec<VariantError>> {
        let mut errors = Vec::new();
        let mut variant = Variant::default();
        let object = |value: Option<&Value>, errors: &mut Vec<VariantError>| match value {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(map)) => map.clone(),
            Some(_) => {
                errors.push(VariantError::NotAnObject);
                Map::new()
            }
        };
        for (name, value) in object(flags, &mut errors) {
            if !questionnaires
                .clone()
                .into_iter()
                .any(|q| q.flags.contains_key(&name))
            {
                errors.push(VariantError::FlagDoesNotExist);
            } else if let Value::Bool(b) = value {
                variant.flags.insert(name, b);
            } else {
                errors.push(VariantError::FlagValueInvalid);
            }
        }
        for (name, value) in object(textvars, &mut errors) {
            if !questionnaires
                .clone()
                .into_iter()
                .any(|q| q.textvars.contains_key(&name))
            {
                errors.push(VariantError::TextvarDoesNotExist);
            } else if let Value::String(s) = value {
                variant.textvars.insert(name, s);
            } else {
                errors.push(VariantError::TextvarValueInvalid);
            }
        }
        if errors.is_empty() {
            Ok(variant)
        } else {
            errors.sort();
            errors.dedup();
            Err(errors)
        }
    }

    /// Reads back what a response row stores (written by [`Variant::check`],
    /// so entries of the wrong type do not occur; they are skipped).
    pub fn from_stored(flags: &Map<String, Value>, textvars: &Map<String, Value>) -> Variant {
        Variant {
            flags: flags
                .iter()
                .filter_map(|(k, v)| v.as_bool().map(|b| (k.clone(), b)))
                .collect(),
            textvars: textvars
                .iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_owned())))
                .collect(),
        }
    }

    /// The flags as stored on a response row.
    pub fn flags_json(&self) -> Map<String, Value> {
        self.flags
            .iter()
            .map(|(k, v)| (k.clone(), Value::Bool(*v)))
            .collect()
    }

    /// The textvars as stored on a response row.
    pub fn textvars_json(&self) -> Map<String, Value> {
        self.textvars
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect()
    }

    /// The value of flag `name` for `q`: the response's, else the
    /// definition's default, else false.
    pub fn flag(&self, q: &Questionnaire, name: &str) -> bool {
        self.flags
            .get(name)
            .copied()
            .unwrap_or_else(|| q.flags.get(name).is_some_and(|f| f.default))
    }

    /// Whether `question` of `q` is shown in this variant.
    pub fn shows(&self, q: &Questionnaire, question: &Question) -> bool {
        question
            .shown_if_flag
            .as_deref()
            .is_none_or(|f| self.flag(q, f))
            && !question
                .hidden_if_flag
                .as_deref()
                .is_some_and(|f| self.flag(q, f))
    }

    /// `text` in `language` with every `{{name}}` of a declared textvar
    /// replaced by this variant's value or the definition's default (in
    /// the same language). A placeholder without either is left as written,
    /// which a definition check prevents for declared textvars.
    pub fn render(&self, q: &Questionnaire, text: &Text, language: &str) -> String {
        let raw = text.resolve(language, &q.language);
        substitute(raw, |name| {
            self.textvars.get(name).cloned().or_else(|| {
                q.textvars
                    .get(name)
                    .and_then(|t| t.default.as_ref())
                    .map(|d| d.resolve(language, &q.language).to_owned())
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::testing::questionnaire;

    fn shown(q: &Questionnaire, v: &Variant) -> Vec<String> {
        q.questions
            .iter()
            .filter(|question| v.shows(q, question))
            .map(|question| question.key.clone())
            .collect()
    }

    #[test]
    fn flags_show_and_hide_questions_with_defaults() {
        let q = questionnaire();
        assert_eq!(shown(&q, &Variant::default()), ["v_1", "v_2"]);
        let short = Variant::check([&q], Some(&json!({"short": true})), None).expect("valid");
        assert_eq!(shown(&q, &short), ["v_1"]);
        let extra = Variant::check([&q], Some(&json!({"extra": true, "short": false})), None)
            .expect("valid");
        assert_eq!(shown(&q, &extra), ["v_1", "v_2", "v_3"]);
    }

    #[test]
    fn textvars_fill_placeholders_in_the_language_asked() {
        let q = questionnaire();
        let title = &q.questions[0].title;
        let plain = Variant::default();
        assert_eq!(
            plain.render(&q, title, "en"),
            "In the past 2 weeks, {{ name }}, were you sad?"
        );
        assert_eq!(
            plain.render(&q, title, "nl"),
            "Was u de afgelopen 2 weken somber?"
        );
        let given = Variant::check(
            [&q],
            None,
            Some(&json!({"period": "30 days", "name": "Sam"})),
        )
        .expect("valid");
        assert_eq!(
            given.render(&q, title, "en"),
            "In the past 30 days, Sam, were you sad?"
        );
        assert_eq!(
            given.render(&q, &q.short_description, "en"),
            "Mood in the past 30 days"
        );
    }

    #[test]
    fn unknown_names_and_wrong_types_get_the_documented_codes() {
        let q = questionnaire();
        let err = Variant::check(
            [&q],
            Some(&json!({"nope": true, "short": "yes"})),
            Some(&json!({"nada": "x", "period": 3})),
        )
        .expect_err("invalid");
        let codes: Vec<_> = err.iter().map(|e| e.code()).collect();
        assert_eq!(
            codes,
            [
                "flag_does_not_exist",
                "flag_value_invalid",
                "textvar_does_not_exist",
                "invalid"
            ]
        );
        let err = Variant::check([&q], Some(&json!([true])), None).expect_err("invalid");
        assert_eq!(err, [VariantError::NotAnObject]);
        assert_eq!(
            Variant::check([&q], Some(&Value::Null), None),
            Ok(Variant::default())
        );
    }

    #[test]
    fn stored_variants_read_back() {
        let q = questionnaire();
        let v = Variant::check(
            [&q],
            Some(&json!({"short": true})),
            Some(&json!({"period": "4 weeks"})),
        )
        .expect("valid");
        assert_eq!(Variant::from_stored(&v.flags_json(), &v.textvars_json()), v);
    }
}
