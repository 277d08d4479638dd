//! Each rule against its own schema: over many generated values, the
//! schema the document states allows a value exactly when the rule does.
//! The schemas are read as a client's validator reads them, by the small
//! evaluator below (the keywords the rules write; patterns with the `regex`
//! crate, searched as JSON Schema searches them, unanchored).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use utoipa::PartialSchema;

use super::*;

/// Whether `schema` (as the document writes it) allows `value`.
pub(crate) fn allows(schema: &Value, value: &Value) -> bool {
    let Some(schema) = schema.as_object() else {
        return true;
    };
    let pattern = |p: &Value| compiled(p.as_str().unwrap_or_default());
    for (keyword, expected) in schema {
        let ok = match (keyword.as_str(), value) {
            ("type", _) => match expected.as_str() {
                Some("string") => value.is_string(),
                Some("integer") => value.is_i64() || value.is_u64(),
                _ => false,
            },
            ("minLength", Value::String(s)) => {
                s.chars().count() as u64 >= expected.as_u64().unwrap_or(0)
            }
            ("maxLength", Value::String(s)) => {
                s.chars().count() as u64 <= expected.as_u64().unwrap_or(0)
            }
            ("pattern", Value::String(s)) => pattern(expected).is_match(s),
            ("minimum", Value::Number(n)) => {
                int(n).zip(int_of(expected)).is_some_and(|(n, m)| n >= m)
            }
            ("maximum", Value::Number(n)) => {
                int(n).zip(int_of(expected)).is_some_and(|(n, m)| n <= m)
            }
            ("enum", _) => expected.as_array().is_some_and(|all| all.contains(value)),
            ("not", _) => !allows(expected, value),
            ("anyOf", _) => expected
                .as_array()
                .is_some_and(|all| all.iter().any(|s| allows(s, value))),
            _ => true,
        };
        if !ok {
            return false;
        }
    }
    true
}

/// `pattern` compiled once per test thread: the same few patterns are
/// matched thousands of times.
fn compiled(pattern: &str) -> regex::Regex {
    thread_local! {
        static CACHE: std::cell::RefCell<std::collections::HashMap<String, regex::Regex>> =
            std::cell::RefCell::default();
    }
    CACHE.with(|cache| {
        cache
            .borrow_mut()
            .entry(pattern.to_owned())
            .or_insert_with(|| regex::Regex::new(pattern).expect("a regex"))
            .clone()
    })
}

fn int(n: &serde_json::Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

fn int_of(value: &Value) -> Option<i128> {
    value.as_number().and_then(int)
}

/// The schema `T` gives in the document, as JSON.
pub(crate) fn document<T: PartialSchema>() -> Value {
    serde_json::to_value(T::schema()).expect("a schema serializes")
}

/// Characters a rule might treat differently: letters and digits, every
/// edge of the control and white-space classes, and characters of two,
/// three and four bytes.
const ALPHABET: &[char] = &[
    'a', 'Z', '0', '9', '-', '_', '.', ' ', '\u{0}', '\t', '\n', '\r', '\u{1f}', '\u{7f}',
    '\u{85}', '\u{9f}', '\u{a0}', '\u{1680}', '\u{2000}', '\u{200a}', '\u{200b}', '\u{2028}',
    '\u{202f}', '\u{205f}', '\u{3000}', '\u{feff}', 'é', '漢', '😀',
];

/// A text of up to `max` characters drawn from [`ALPHABET`], often of one
/// character class only, often near the rule's length limits.
fn text(rng: &mut StdRng, limit: usize) -> String {
    let len = match rng.gen_range(0..4) {
        0 => rng.gen_range(0..4),
        1 => rng.gen_range(limit.saturating_sub(2)..limit + 3),
        _ => rng.gen_range(0..limit + 3),
    };
    let uniform = rng
        .gen_bool(0.3)
        .then(|| ALPHABET[rng.gen_range(0..ALPHABET.len())]);
    (0..len)
        .map(|_| uniform.unwrap_or_else(|| ALPHABET[rng.gen_range(0..ALPHABET.len())]))
        .collect()
}

fn agree_on_texts<T: PartialSchema>(rule: Text) {
    let schema = document::<T>();
    let mut rng = StdRng::seed_from_u64(30);
    let (mut allowed, mut refused) = (0, 0);
    for _ in 0..3000 {
        let value = text(&mut rng, rule.max_chars);
        let parsed = rule.check(&value).is_ok();
        assert_eq!(
            allows(&schema, &json!(value)),
            parsed,
            "{value:?}: the parser says {parsed}"
        );
        if parsed { allowed += 1 } else { refused += 1 }
    }
    assert!(
        allowed > 300 && refused > 300,
        "{allowed} allowed, {refused} refused"
    );
}

#[test]
fn dossier_ids_are_allowed_exactly_where_the_schema_allows_them() {
    agree_on_texts::<DossierId>(DOSSIER_ID);
}

#[test]
fn ids_are_allowed_exactly_where_the_schema_allows_them() {
    agree_on_texts::<Id>(ID);
}

#[test]
fn short_texts_are_allowed_exactly_where_the_schema_allows_them() {
    agree_on_texts::<ShortText>(SHORT_TEXT);
}

#[test]
fn texts_with_line_breaks_are_allowed_exactly_where_their_schema_allows_them() {
    let rule = Text {
        min_chars: 0,
        max_chars: 40,
        non_blank: true,
        line_breaks: true,
    };
    let schema = serde_json::to_value(rule.schema()).expect("serializes");
    let mut rng = StdRng::seed_from_u64(31);
    for _ in 0..2000 {
        let value = text(&mut rng, rule.max_chars);
        assert_eq!(
            allows(&schema, &json!(value)),
            rule.check(&value).is_ok(),
            "{value:?}"
        );
    }
}

#[test]
fn refusals_name_blank_and_invalid_apart() {
    assert_eq!(ID.check(""), Err(Refused::Blank));
    assert_eq!(ID.check(" \u{3000}"), Err(Refused::Blank));
    assert_eq!(ID.check("a\u{0}"), Err(Refused::Invalid));
    assert_eq!(ID.check(&"é".repeat(255)), Ok(()));
    assert_eq!(ID.check(&"é".repeat(256)), Err(Refused::Invalid));
    assert_eq!(DOSSIER_ID.check(" "), Ok(()));
    assert_eq!(DOSSIER_ID.check(""), Err(Refused::Blank));
}

/// Integers near every edge the rules have, and some anywhere.
fn integers(rng: &mut StdRng) -> Vec<i64> {
    let edges = [i64::MIN, -1, 0, 1, EARLIEST_UNIX, LATEST_UNIX, i64::MAX];
    let mut all: Vec<i64> = edges
        .iter()
        .flat_map(|&e| [e.saturating_sub(1), e, e.saturating_add(1)])
        .collect();
    all.extend((0..500).map(|_| rng.r#gen::<i64>() >> rng.gen_range(0..63)));
    all
}

#[test]
fn integers_are_allowed_exactly_where_the_schema_allows_them() {
    let mut rng = StdRng::seed_from_u64(32);
    let values = integers(&mut rng);
    for (schema, rule) in [
        (document::<PositiveId>(), POSITIVE_ID),
        (document::<AnyInteger>(), ANY_INTEGER),
    ] {
        for &n in &values {
            let parsed = rule.parse(&n.to_string()).is_some();
            assert_eq!(allows(&schema, &json!(n)), parsed, "{n}");
            assert_eq!(parsed, rule.allows(n));
        }
        // Other spellings of a number are not numbers.
        for text in ["+1", " 1", "1 ", "", "-", "1.0", "1e3", "0x1", "١"] {
            assert_eq!(rule.parse(text), None, "{text:?}");
        }
    }
}

#[test]
fn times_are_allowed_exactly_where_the_schema_allows_them() {
    let schema = document::<UnixTime>();
    let mut rng = StdRng::seed_from_u64(33);
    let mut values: Vec<Value> = Vec::new();
    for n in integers(&mut rng) {
        values.push(json!(n));
        values.push(json!(n.to_string()));
        values.push(json!(format!(" {n}")));
    }
    values.extend([
        json!(1.5),
        json!(null),
        json!(true),
        json!(""),
        json!("0000000000001"),
    ]);
    values.extend([json!("946598400"), json!(18_446_744_073_709_551_615_u64)]);
    for value in values {
        let parsed = unix_time(&value);
        // The string form is bounded by length, not value: where the schema
        // allows a string the parser refuses, it is as the description says.
        let described = parsed.is_err() && value.is_string() && allows(&schema, &value);
        if !described {
            assert_eq!(
                allows(&schema, &value),
                parsed.is_ok(),
                "{value}: {parsed:?}"
            );
        }
    }
    assert_eq!(
        unix_time(&json!(EARLIEST_UNIX - 1)),
        Err(TimeRefused::TooEarly)
    );
    assert_eq!(unix_time(&json!("946598399")), Err(TimeRefused::TooEarly));
    assert_eq!(
        unix_time(&json!(LATEST_UNIX + 1)),
        Err(TimeRefused::Invalid)
    );
    assert_eq!(unix_time(&json!("+946598400")), Err(TimeRefused::Invalid));
}

#[test]
fn booleans_and_languages_are_allowed_exactly_where_their_schemas_allow_them() {
    let booleans = document::<Boolean>();
    let languages = document::<Language>();
    let mut rng = StdRng::seed_from_u64(34);
    let mut values: Vec<String> = BOOLEAN.0.iter().map(|s| (*s).to_owned()).collect();
    values
        .extend(["nl", "en", "NL", "n", "nld", "n1", "TRUE", "True", "y", "2"].map(str::to_owned));
    values.extend((0..2000).map(|_| text(&mut rng, 3)));
    for value in values {
        assert_eq!(
            allows(&booleans, &json!(value)),
            boolean(&value).is_some(),
            "{value:?}"
        );
        assert_eq!(
            allows(&languages, &json!(value)),
            is_language(&value),
            "{value:?}"
        );
    }
    assert_eq!(boolean("yes"), Some(true));
    assert_eq!(boolean("0"), Some(false));
}

#[test]
fn id_lists_are_allowed_exactly_where_their_schemas_allow_them() {
    let lists = document::<IdList>();
    let paths = document::<IdListOrArray>();
    let mut rng = StdRng::seed_from_u64(36);
    let mut values: Vec<String> = [
        "a,b", "a,,b", "a,", ",a", " ,a", "[\"a\"]", " [a", "a[", "\u{3000}",
    ]
    .map(str::to_owned)
    .to_vec();
    for _ in 0..3000 {
        let parts: Vec<String> = (0..rng.gen_range(1..4))
            .map(|_| {
                let limit = if rng.gen_bool(0.1) { ID.max_chars } else { 4 };
                text(&mut rng, limit)
            })
            .collect();
        values.push(parts.join(","));
    }
    let (mut allowed, mut refused) = (0, 0);
    for value in values {
        // As the stats read a value of ids: split at commas, each an ID.
        let parsed = value.split(',').all(|id| ID.check(id).is_ok());
        if parsed {
            allowed += 1
        } else {
            refused += 1
        }
        assert_eq!(allows(&lists, &json!(value)), parsed, "{value:?}");
        // The path reads a value that starts with `[` as a JSON array.
        let json_form = value.trim_start().starts_with('[');
        assert_eq!(
            allows(&paths, &json!(value)),
            parsed && !json_form,
            "{value:?}"
        );
    }
    assert!(
        allowed > 300 && refused > 300,
        "{allowed} allowed, {refused} refused"
    );
}

#[test]
fn ids_or_integers_are_allowed_exactly_where_the_fields_read_them() {
    let schema = document::<IdOrInteger>();
    let mut rng = StdRng::seed_from_u64(37);
    let mut values = vec![
        json!(1.5),
        json!(null),
        json!(["a"]),
        json!(u64::MAX),
        json!(i64::MIN),
    ];
    values.extend(integers(&mut rng).into_iter().map(|n| json!(n)));
    values.extend((0..2000).map(|_| json!(text(&mut rng, ID.max_chars))));
    for value in values {
        let body = serde_json::Map::from_iter([("external_id".to_owned(), value.clone())]);
        let read = crate::api::fields::Fields::new(&body)
            .required_id("external_id")
            .is_some();
        assert_eq!(allows(&schema, &value), read, "{value}");
    }
}
