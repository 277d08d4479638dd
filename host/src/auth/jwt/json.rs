//! The header and claims JSON, read with one rule serde_json leaves out: no
//! object, at any depth, may name a member twice. RFC 7515 section 4 and
//! RFC 7519 section 4 require a JOSE header and a claims set without
//! duplicate names, or a parser that refuses them; serde_json's `Value`
//! silently keeps the last, so `{"alg":"RS256",...,"alg":"none"}` could mean
//! one thing here and another to a proxy or log reader in front of us.
//! Keys are compared after unescaping, so `"\u0061lg"` repeats `"alg"`.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::error::JwtError;

/// Reads `bytes` as one JSON object without duplicate members. `part`
/// names it in errors ("header", "claims").
pub(super) fn strict_object(
    bytes: &[u8],
    part: &'static str,
) -> Result<Map<String, Value>, JwtError> {
    match serde_json::from_slice::<Strict>(bytes) {
        Ok(Strict(Value::Object(map))) => Ok(map),
        Ok(_) => Err(JwtError::Malformed(match part {
            "header" => "header is not a JSON object",
            _ => "payload is not a JSON object",
        })),
        // The visitor accepts every JSON type, so the only data error it
        // raises is the repeated member; syntax and EOF errors are not JSON.
        Err(e) if e.classify() == serde_json::error::Category::Data => {
            Err(JwtError::DuplicateMember(part))
        }
        Err(_) => Err(JwtError::Malformed(match part {
            "header" => "header is not JSON",
            _ => "payload is not JSON",
        })),
    }
}

/// A JSON value whose objects name each member once.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Strict, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // JSON text has no NaN or infinity; serde_json gives finite floats.
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(name) = map.next_key::<String>()? {
            if members.contains_key(&name) {
                return Err(de::Error::custom("a member is named twice"));
            }
            let Strict(value) = map.next_value()?;
            members.insert(name, value);
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_members_are_refused_at_every_depth_and_after_unescaping() {
        for text in [
            r#"{"a":1,"a":1}"#,
            r#"{"a":1,"b":2,"a":3}"#,
            r#"{"alg":"RS256","\u0061lg":"none"}"#,
            r#"{"x":{"y":1,"y":2}}"#,
            r#"{"x":[{"y":1,"y":2}]}"#,
        ] {
            assert_eq!(
                strict_object(text.as_bytes(), "claims"),
                Err(JwtError::DuplicateMember("claims")),
                "{text}"
            );
        }
    }

    #[test]
    fn objects_without_duplicates_read_as_serde_json_reads_them() {
        for text in [
            r#"{"a":1,"b":-2,"c":1.5,"d":"x","e":null,"f":true,"g":[1,{"a":1}],"h":{"a":{"a":1}}}"#,
            r#"{"big":18446744073709551615,"e":1e3,"A":1,"a":2}"#,
            "{}",
        ] {
            let ours = strict_object(text.as_bytes(), "header").expect("valid");
            let theirs: Value = serde_json::from_str(text).expect("valid");
            assert_eq!(Value::Object(ours), theirs, "{text}");
        }
        assert_eq!(
            strict_object(b"[1]", "header"),
            Err(JwtError::Malformed("header is not a JSON object"))
        );
        assert_eq!(
            strict_object(b"{\"a\":", "claims"),
            Err(JwtError::Malformed("payload is not JSON"))
        );
        assert_eq!(
            strict_object(b"{\"a\":1} x", "claims"),
            Err(JwtError::Malformed("payload is not JSON"))
        );
    }
}
