//! The opt-in pages of the response list (docs/api/responses.md#pages):
//! `page[size]` and `page[after]` read from the query, the opaque cursor,
//! and the `Link: <...>; rel="next"` header (RFC 8288) to the next page.
//! Without either parameter the list is answered whole, as the original
//! contract has it.
//!
//! `page[size]` is 1 to `MAX_SIZE` (1000); the cursor is the base64url
//! (no padding) of the last id, opaque to clients; the last page carries no
//! `Link`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::api::extract::QueryParams;
use crate::api::rules::{self, Integer};
use crate::domain::ids::ResponseId;
use crate::error::Errors;
use crate::store::Page;

/// The query parameter naming the page size.
pub const SIZE: &str = "page[size]";
/// The query parameter holding the cursor of the page before.
pub const AFTER: &str = "page[after]";
/// The largest page; a diary's thousands of responses take a few pages.
pub const MAX_SIZE: u32 = 1000;
/// The size of a page asked for with `page[after]` alone.
pub const DEFAULT_SIZE: u32 = 100;
/// The sizes a page may have.
const SIZES: Integer = Integer {
    min: 1,
    max: MAX_SIZE as i64,
};
/// The most digits of the id in a cursor: ids stay far below 10^18, and
/// every number of 18 digits is an `i64`.
const MAX_CURSOR_DIGITS: usize = 18;

rules::documented! {
    PageSize: "The number of responses on a page: 1 to 1000." => SIZES.schema();
    Cursor: "The opaque cursor of a `Link` header." => cursor_schema();
}

/// The page asked for, if any: None when neither parameter is given.
/// Problems go into `errors` under `page` (`{"page":{"size":["invalid"]}}`).
pub fn requested(query: &QueryParams, errors: &mut Errors) -> Option<Page> {
    let size = query.single(SIZE);
    let after = query.single(AFTER);
    if size.is_none() && after.is_none() {
        return None;
    }
    let mut problems = Errors::new();
    let size = match size {
        None => Some(DEFAULT_SIZE),
        Some(text) => match SIZES.parse(text).and_then(|n| u32::try_from(n).ok()) {
            Some(n) => Some(n),
            None => {
                problems.add("size", "invalid");
                None
            }
        },
    };
    let after = match after {
        None => Some(None),
        Some(cursor) => match decode(cursor) {
            Some(id) => Some(Some(id)),
            None => {
                problems.add("after", "invalid");
                None
            }
        },
    };
    if !problems.is_empty() {
        errors.nest("page", problems);
    }
    Some(Page {
        size: size?,
        after: after?,
    })
}

/// The cursor after `last`: base64url (no padding) of its id in decimal.
/// Clients must treat it as opaque; only the service reads it.
pub fn encode(last: ResponseId) -> String {
    URL_SAFE_NO_PAD.encode(last.0.to_string())
}

/// The id a cursor of [`encode`] holds; None for anything else.
pub fn decode(cursor: &str) -> Option<ResponseId> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = std::str::from_utf8(&bytes).ok()?;
    // Only the form `encode` writes: digits, no leading zeros.
    if text.is_empty()
        || text.len() > MAX_CURSOR_DIGITS
        || text.starts_with('0')
        || !text.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    text.parse::<i64>().ok().map(ResponseId)
}

/// The JSON Schema of the cursors [`decode`] reads: base64url without
/// padding (RFC 4648 section 5, trailing bits zero) of 1 to 18 decimal
/// digits, the first not 0. Three digits (bytes `0x30`-`0x39`) encode as
/// four characters: the first digit's high bits in the first (`M` for 0-3,
/// `N` for 4-7, `O` for 8-9) and its low bits in the second, the second
/// digit in the third, the third digit in the fourth; one or two digits
/// left over encode as two or three characters with their low bits zero.
fn cursor_schema() -> utoipa::openapi::schema::Schema {
    // A digit as the first two characters of its group; the first digit of
    // a cursor, which is not 0 (`MD`).
    let digit = "(?:[MN][DTjz]|O[DT])";
    let first = "(?:M[Tjz]|N[DTjz]|O[DT])";
    let second = "[AEIMQUYcgk]";
    let third = "[w-z0-5]";
    let group = format!("{digit}{second}{third}");
    // One digit left: its low bits shifted into the second character.
    let one_left = "(?:[MN][AQgw]|O[AQ])";
    let one_only = "(?:M[Qgw]|N[AQgw]|O[AQ])";
    let two_left = format!("{digit}{second}");
    let full = MAX_CURSOR_DIGITS / 3;
    let pattern = format!(
        "^(?:{first}{second}{third}(?:(?:{group}){{0,{}}}(?:{one_left}|{two_left})?|(?:{group}){{{}}})|{one_only}|{first}{second})$",
        full - 2,
        full - 1,
    );
    let mut schema = utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .pattern(Some(pattern))
        .build();
    // `$` lets a final line break through in some dialects; this does not.
    rules::not(&mut schema, "[^A-Za-z0-9_-]".to_owned());
    utoipa::openapi::schema::Schema::Object(schema)
}

/// The value of a `Link` header to the page after `last`: this request's
/// path and parameters with `page[after]` replaced, as a reference relative
/// to the request's origin (RFC 8288 section 3.1), so it stays right behind
/// a proxy that serves the API under another host name.
pub fn next_link(path: &str, query: &QueryParams, size: u32, last: ResponseId) -> String {
    let mut out = form_urlencoded::Serializer::new(String::new());
    for (key, value) in query.pairs() {
        if key != AFTER && key != SIZE {
            out.append_pair(key, value);
        }
    }
    out.append_pair(SIZE, &size.to_string());
    out.append_pair(AFTER, &encode(last));
    format!("<{path}?{}>; rel=\"next\"", out.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(query: &str) -> Result<Option<Page>, Errors> {
        let mut errors = Errors::new();
        let page = requested(&QueryParams::parse(query), &mut errors);
        if errors.is_empty() {
            Ok(page)
        } else {
            Err(errors)
        }
    }

    #[test]
    fn cursors_round_trip() {
        for id in [1, 42, 9_007_199_254_740_993, 999_999_999_999_999_999] {
            assert_eq!(decode(&encode(ResponseId(id))), Some(ResponseId(id)));
        }
    }

    #[test]
    fn cursors_are_read_exactly_where_their_schema_allows_them() {
        use rand::{Rng, SeedableRng};

        use crate::api::rules::tests::{allows, document};
        let schema = document::<Cursor>();
        let mut rng = rand::rngs::StdRng::seed_from_u64(35);
        let alphabet: Vec<char> = ('A'..='Z')
            .chain('a'..='z')
            .chain('0'..='9')
            .chain("-_=+/\n ".chars())
            .collect();
        let mut values: Vec<String> = (0..20_000)
            .map(|_| {
                let len = rng.gen_range(0..28);
                (0..len)
                    .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
                    .collect()
            })
            .collect();
        // Real cursors, of every length, and their neighbours.
        for digits in 1..=20_u32 {
            let id = rng.gen_range(10_i64.pow(digits.min(18) - 1)..10_i64.pow(digits.min(18)));
            let id = if digits > 18 {
                i64::MAX - i64::from(digits)
            } else {
                id
            };
            let cursor = encode(ResponseId(id));
            values.push(format!("{cursor}\n"));
            values.push(cursor[1..].to_owned());
            values.push(cursor);
            values.push(URL_SAFE_NO_PAD.encode(format!("0{id}")));
            values.push(URL_SAFE_NO_PAD.encode(format!("-{id}")));
        }
        let mut read = 0;
        for value in values {
            let decoded = decode(&value).is_some();
            read += usize::from(decoded);
            assert_eq!(
                allows(&schema, &serde_json::json!(value)),
                decoded,
                "{value:?}"
            );
        }
        // The real cursors of 1 to 18 digits, at least.
        assert!(read >= 18, "{read} cursors read");
    }

    #[test]
    fn malformed_cursors_name_nothing() {
        for cursor in [
            "",
            "!!",
            "MTIz=",
            "LTE",
            "MA",
            "MDEy",
            "YWJj",
            "OTIyMzM3MjAzNjg1NDc3NTgwOA",
            "%FF",
        ] {
            assert_eq!(decode(cursor), None, "{cursor}");
        }
    }

    #[test]
    fn no_parameters_no_page() {
        assert_eq!(page("status=completed"), Ok(None));
    }

    #[test]
    fn sizes_are_bounded() {
        assert_eq!(
            page("page[size]=1000"),
            Ok(Some(Page {
                size: 1000,
                after: None
            }))
        );
        for bad in ["0", "1001", "-1", "x", "", "1.5"] {
            let errors = page(&format!("page[size]={bad}")).expect_err(bad);
            assert_eq!(
                errors.body(),
                serde_json::json!({"errors": {"page": {"size": ["invalid"]}}})
            );
        }
    }

    #[test]
    fn a_cursor_alone_takes_the_default_size() {
        let cursor = encode(ResponseId(7));
        assert_eq!(
            page(&format!("page[after]={cursor}")),
            Ok(Some(Page {
                size: DEFAULT_SIZE,
                after: Some(ResponseId(7))
            }))
        );
    }

    #[test]
    fn the_next_link_keeps_the_filters() {
        let query = QueryParams::parse("questionnaire_keys[]=phq9&page[size]=2&page[after]=MQ");
        assert_eq!(
            next_link(
                "/api/v1/dossiers/a%20b/responses",
                &query,
                2,
                ResponseId(12)
            ),
            "</api/v1/dossiers/a%20b/responses?questionnaire_keys%5B%5D=phq9&page%5Bsize%5D=2&page%5Bafter%5D=MTI>; rel=\"next\""
        );
    }
}
