//! Reading typed fields out of a JSON object while collecting every field
//! error, so one answer names all that is wrong with a request.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::rules::{self, TimeRefused};
use crate::domain::time::from_unix;
use crate::domain::variant::VariantError;
use crate::error::{ApiError, Errors};

/// A JSON object being read, with the errors found so far.
#[derive(Debug)]
pub struct Fields<'a> {
    map: &'a Map<String, Value>,
    pub errors: Errors,
}

impl<'a> Fields<'a> {
    pub fn new(map: &'a Map<String, Value>) -> Self {
        Fields {
            map,
            errors: Errors::new(),
        }
    }

    /// A value that is absent or null.
    fn absent(&self, key: &str) -> bool {
        matches!(self.map.get(key), None | Some(Value::Null))
    }

    /// A required identifier-like string ([`rules::ID`]). Integers are accepted and read as their decimal
    /// form, as EPDs often number their records. `blank` when missing or
    /// empty, `invalid` when of another type or too long.
    pub fn required_id(&mut self, key: &str) -> Option<String> {
        self.required_text(key, true)
    }

    /// A required key of something the service defines (a questionnaire
    /// key): like [`Fields::required_id`], but only a JSON string will do.
    pub fn required_key(&mut self, key: &str) -> Option<String> {
        self.required_text(key, false)
    }

    fn required_text(&mut self, key: &str, integers: bool) -> Option<String> {
        let text = match self.map.get(key) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) if integers && (n.is_i64() || n.is_u64()) => n.to_string(),
            // JSON has one number type: `12.0` is the integer 12 to a JSON
            // Schema validator, so it is read as one.
            Some(Value::Number(n)) if integers && whole(n).is_some() => {
                whole(n).map(|i| i.to_string()).unwrap_or_default()
            }
            Some(_) => {
                self.errors.add(key, "invalid");
                return None;
            }
        };
        match rules::ID.check(&text) {
            Ok(()) => Some(text),
            Err(refused) => {
                self.errors.add(key, refused.code());
                None
            }
        }
    }

    /// An optional string ([`rules::SHORT_TEXT`]); blank reads as absent.
    pub fn optional_string(&mut self, key: &str) -> Option<String> {
        match self.map.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if rules::SHORT_TEXT.check(s).is_ok() => {
                (!s.trim().is_empty()).then(|| s.clone())
            }
            Some(_) => {
                self.errors.add(key, "invalid");
                None
            }
        }
    }

    /// An optional language, an ISO 639-1 code (`nl`): two lower-case
    /// letters, else `invalid`.
    pub fn optional_language(&mut self, key: &str) -> Option<String> {
        match self.map.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if rules::is_language(s) => Some(s.clone()),
            Some(_) => {
                self.errors.add(key, "invalid");
                None
            }
        }
    }

    /// A required, non-empty JSON object.
    pub fn required_object(&mut self, key: &str) -> Option<&'a Map<String, Value>> {
        match self.map.get(key) {
            None | Some(Value::Null) => {
                self.errors.add(key, "blank");
                None
            }
            Some(Value::Object(m)) if m.is_empty() => {
                self.errors.add(key, "blank");
                None
            }
            Some(Value::Object(m)) => Some(m),
            Some(_) => {
                self.errors.add(key, "invalid");
                None
            }
        }
    }

    /// An optional Unix time in seconds ([`rules::unix_time`]: an integer,
    /// or a string of digits, no earlier than 1999-12-31) no later than
    /// `latest`.
    pub fn optional_unix(&mut self, key: &str, latest: DateTime<Utc>) -> Option<DateTime<Utc>> {
        if self.absent(key) {
            return None;
        }
        let time = match rules::unix_time(&self.map[key]) {
            Ok(secs) => from_unix(secs).filter(|t| *t <= latest).ok_or("invalid"),
            Err(TimeRefused::TooEarly) => Err("too_early"),
            Err(TimeRefused::Invalid) => Err("invalid"),
        };
        time.map_err(|code| self.errors.add(key, code)).ok()
    }

    /// An optional string that must be one of `allowed`.
    pub fn optional_choice(&mut self, key: &str, allowed: rules::Choice) -> Option<String> {
        match self.map.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if allowed.allows(s) => Some(s.clone()),
            Some(_) => {
                self.errors.add(key, "invalid");
                None
            }
        }
    }
}

/// The 422 for flags and textvars that do not fit the questionnaires they
/// are for: every reason under `base`
/// (docs/api/protocols-and-subscriptions.md#flags-and-textvars).
pub fn variant_errors(reasons: Vec<VariantError>) -> ApiError {
    let mut errors = Errors::new();
    for reason in reasons {
        errors.add("base", reason.code());
    }
    ApiError::Invalid(errors)
}

/// A JSON number with no fraction, within `i64`, as that integer.
fn whole(n: &serde_json::Number) -> Option<i64> {
    let f = n.as_f64()?;
    // 2^63: the first whole `f64` past `i64::MAX`.
    (f.fract() == 0.0 && f.abs() < 9_223_372_036_854_775_808.0).then_some(f as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn ids_may_be_integers_but_keys_must_be_strings() {
        let map = fields(serde_json::json!({"id": 12, "key": 12, "text": "phq9", "blank": " "}));
        let mut f = Fields::new(&map);
        assert_eq!(f.required_id("id"), Some("12".to_owned()));
        let map = fields(serde_json::json!({"whole": -1988.0, "half": 1.5}));
        let mut g = Fields::new(&map);
        assert_eq!(g.required_id("whole"), Some("-1988".to_owned()));
        assert_eq!(g.required_id("half"), None);
        assert_eq!(f.required_key("key"), None);
        assert_eq!(f.required_key("text"), Some("phq9".to_owned()));
        assert_eq!(f.required_key("blank"), None);
        assert_eq!(f.required_key("absent"), None);
        assert_eq!(
            f.errors.body(),
            serde_json::json!({"errors": {"key": ["invalid"], "blank": ["blank"], "absent": ["blank"]}})
        );
    }
}
