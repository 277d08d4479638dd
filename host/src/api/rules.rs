//! What each input of the API must be, stated once. A rule checks a value
//! (the extractors, [`super::fields::Fields`] and the handlers call it) and
//! writes the JSON Schema the OpenAPI document gives that input, through
//! the types at the end of this file, so what the service refuses and what
//! the document says it refuses cannot drift apart
//! (docs/api/conventions.md#the-openapi-document).
//!
//! Schemas use no anchored patterns: `$` does not mean the same in every
//! regex dialect clients validate with (Python's lets a final line break
//! through). A rule says instead which characters may not occur (`not` a
//! pattern of one class) and which one must occur (an unanchored class).

use serde_json::Value;
use utoipa::openapi::schema::{AnyOfBuilder, Object, ObjectBuilder, Schema, Type};
use utoipa::openapi::{KnownFormat, SchemaFormat};

use crate::domain::time::{EARLIEST_UNIX, LATEST_UNIX};

/// Control characters (Unicode category Cc, what [`char::is_control`]
/// finds), as the body of a regex class.
const CONTROLS: &str = r"\u0000-\u001F\u007F-\u009F";
/// The control characters but tab, line feed and carriage return.
const CONTROLS_BUT_LINE_BREAKS: &str = r"\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F";
/// White space that is not a control character: with [`CONTROLS`], what
/// [`char::is_whitespace`] (Unicode White_Space, what `str::trim` removes)
/// finds.
const SPACES: &str = r"\u0020\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000";

/// Why a text was refused, as the field error names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Empty, or only white space.
    Blank,
    /// Too long, or with a character it may not hold.
    Invalid,
}

impl Refused {
    /// The code of the field error.
    pub fn code(self) -> &'static str {
        match self {
            Refused::Blank => "blank",
            Refused::Invalid => "invalid",
        }
    }
}

/// A text: its length in characters (Unicode scalar values, as JSON
/// Schema counts them) and the characters it may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Text {
    /// 1: the empty text is [`Refused::Blank`]; 0: it is allowed.
    pub min_chars: usize,
    pub max_chars: usize,
    /// A text of white space only is [`Refused::Blank`].
    pub non_blank: bool,
    /// Tabs and line breaks are allowed; other control characters never.
    pub line_breaks: bool,
}

impl Text {
    /// Whether `text` is allowed; why not.
    pub fn check(&self, text: &str) -> Result<(), Refused> {
        if (text.is_empty() && self.min_chars > 0) || (self.non_blank && text.trim().is_empty()) {
            return Err(Refused::Blank);
        }
        let chars = text.chars().count();
        if chars < self.min_chars || chars > self.max_chars || text.chars().any(|c| self.refuses(c))
        {
            return Err(Refused::Invalid);
        }
        Ok(())
    }

    fn refuses(&self, c: char) -> bool {
        c.is_control() && !(self.line_breaks && matches!(c, '\t' | '\n' | '\r'))
    }

    /// The JSON Schema of the texts [`Text::check`] allows.
    pub fn schema(&self) -> Schema {
        let controls = if self.line_breaks {
            CONTROLS_BUT_LINE_BREAKS
        } else {
            CONTROLS
        };
        let mut schema = ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length((self.min_chars > 0).then_some(self.min_chars))
            .max_length(Some(self.max_chars))
            .pattern(self.non_blank.then(|| format!("[^{CONTROLS}{SPACES}]")))
            .build();
        not(&mut schema, format!("[{controls}]"));
        Schema::Object(schema)
    }
}

/// Adds `"not": {"pattern": refused}` to `schema`: no character of that
/// class may occur. utoipa's `Object` has no `not` keyword; its extensions
/// are written into the object as they are.
pub fn not(schema: &mut Object, refused: String) {
    schema
        .extensions
        .get_or_insert_with(Default::default)
        .insert("not".to_owned(), serde_json::json!({ "pattern": refused }));
}

/// A dossier id in a path (`:dossier_id`, `:epd_id`): the EPD's own
/// identifier, 1 to 255 characters, no control characters. Empty names no
/// dossier (404); one of spaces is a dossier like any other.
pub const DOSSIER_ID: Text = Text {
    min_chars: 1,
    max_chars: 255,
    non_blank: false,
    line_breaks: false,
};

/// An identifier in a body or a list of ids (`external_id`,
/// `questionnaire_key`, a dossier id of the stats): 1 to 255 characters,
/// not only white space, no control characters.
pub const ID: Text = Text {
    min_chars: 1,
    max_chars: 255,
    non_blank: true,
    line_breaks: false,
};

/// An optional text (`entered_by`, the text filters of a list): at most 255
/// characters, no control characters (PostgreSQL text cannot hold NUL).
pub const SHORT_TEXT: Text = Text {
    min_chars: 0,
    max_chars: 255,
    non_blank: false,
    line_breaks: false,
};

/// Several [`ID`]s in one value, separated by commas (the dossiers of the
/// stats): none blank, none over [`ID`]'s length, no control characters.
/// The pattern may use anchors: a value with a line break is refused by
/// its control characters in every reading of `$`.
fn id_list_schema(json_form: bool) -> Schema {
    let mut refused = format!(
        "[{CONTROLS}]|[^,]{{{}}}|(^|,)[{SPACES}]*(,|$)",
        ID.max_chars + 1
    );
    if json_form {
        // A value that starts with `[` is read as a JSON array instead.
        refused.push_str(&format!("|^[{SPACES}]*\\["));
    }
    let mut schema = ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .build();
    not(&mut schema, refused);
    Schema::Object(schema)
}

/// An identifier a client may also give as a JSON integer (`external_id`):
/// an [`ID`], or any integer JSON can hold in 64 bits, read as its decimal
/// form.
fn id_or_integer_schema() -> Schema {
    let integer = ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(utoipa::Number::Int(isize::MIN)))
        .maximum(Some(utoipa::Number::UInt(usize::MAX)))
        .build();
    Schema::AnyOf(AnyOfBuilder::new().item(ID.schema()).item(integer).build())
}

/// A whole number in a range: in JSON a number, in a path or a query its
/// decimal digits with an optional `-`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Integer {
    pub min: i64,
    pub max: i64,
}

impl Integer {
    /// Whether `n` is in range.
    pub fn allows(&self, n: i64) -> bool {
        (self.min..=self.max).contains(&n)
    }

    /// A path or query value: decimal digits, `-` first for a negative
    /// number, nothing else (no `+`, no spaces), in range.
    pub fn parse(&self, text: &str) -> Option<i64> {
        let digits = text.strip_prefix('-').unwrap_or(text);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        text.parse::<i64>().ok().filter(|&n| self.allows(n))
    }

    /// The JSON Schema of the numbers [`Integer::allows`].
    pub fn schema(&self) -> Schema {
        Schema::Object(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                .minimum(Some(self.min))
                .maximum(Some(self.max))
                .build(),
        )
    }
}

/// A numeric id in a path or query (`/protocols/{id}`, `response_ids[]`):
/// a positive integer.
pub const POSITIVE_ID: Integer = Integer {
    min: 1,
    max: i64::MAX,
};

/// Any 64-bit integer (the `protocol_subscription_id` and `respondent_id`
/// filters of the response list, which match nothing when nothing has it).
pub const ANY_INTEGER: Integer = Integer {
    min: i64::MIN,
    max: i64::MAX,
};

/// A time in a body in Unix seconds: from 1999-12-31 (earlier is
/// `too_early`) to the end of the year 9999.
pub const UNIX_TIME: Integer = Integer {
    min: EARLIEST_UNIX,
    max: LATEST_UNIX,
};

/// A whole number in a body that clients may also send as a string of
/// decimal digits (`"1700000000"`): the JSON number or the string, of
/// `range`, the string at most `max_digits` long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Digits {
    pub range: Integer,
    pub max_digits: usize,
}

impl Digits {
    /// The number `value` holds, in range or not; None when it is not an
    /// integer or a string of 1 to `max_digits` digits.
    pub fn read(&self, value: &Value) -> Option<i64> {
        match value {
            Value::Number(n) => n.as_i64(),
            Value::String(s)
                if !s.is_empty()
                    && s.len() <= self.max_digits
                    && s.bytes().all(|b| b.is_ascii_digit()) =>
            {
                s.parse::<i64>().ok()
            }
            _ => None,
        }
    }

    /// The JSON Schema of [`Digits::read`] in range. The string form is
    /// bounded by its length only: a string of digits outside the range is
    /// refused all the same, as the description says.
    pub fn schema(&self) -> Schema {
        let mut digits = ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(self.max_digits))
            .build();
        not(&mut digits, "[^0-9]".to_owned());
        Schema::AnyOf(
            AnyOfBuilder::new()
                .item(self.range.schema())
                .item(digits)
                .build(),
        )
    }
}

/// A time in a body: [`UNIX_TIME`], the string of at most 12 digits
/// (253402300799 has 12).
pub const TIME_DIGITS: Digits = Digits {
    range: UNIX_TIME,
    max_digits: 12,
};

/// An id in a body, as a number or a string of at most 18 digits.
pub const ID_DIGITS: Digits = Digits {
    range: POSITIVE_ID,
    max_digits: 18,
};

/// Why a time in a body was refused, as the field error names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeRefused {
    /// Before [`EARLIEST_UNIX`]: `too_early`.
    TooEarly,
    /// Not an integer or a string of digits, or after the year 9999:
    /// `invalid`.
    Invalid,
}

/// A time in a body: a JSON integer, or a string of 1 to 12 decimal digits,
/// of [`UNIX_TIME`] ([`TIME_DIGITS`]).
pub fn unix_time(value: &Value) -> Result<i64, TimeRefused> {
    match TIME_DIGITS.read(value) {
        Some(s) if s < UNIX_TIME.min => Err(TimeRefused::TooEarly),
        Some(s) if s <= UNIX_TIME.max => Ok(s),
        _ => Err(TimeRefused::Invalid),
    }
}

/// A time in a filter of a list (`completed_after`, ...;
/// [`crate::domain::time::parse_filter`]): Unix seconds up to the end of
/// the year 9999, or an RFC 3339 date-time, or a date (midnight in the
/// service's time zone). A date-time without offset is read in that zone
/// too; the description says so, the schema does not.
fn filter_time_schema() -> Schema {
    let seconds = Integer {
        min: chrono::DateTime::<chrono::Utc>::MIN_UTC.timestamp(),
        max: LATEST_UNIX,
    };
    let formatted = |format| {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(format)))
            .build()
    };
    Schema::AnyOf(
        AnyOfBuilder::new()
            .item(seconds.schema())
            .item(formatted(KnownFormat::DateTime))
            .item(formatted(KnownFormat::Date))
            .build(),
    )
}

/// A JSON object with at least one member (`answer_data`: `{}` is
/// `blank`).
pub fn non_empty_object() -> Schema {
    Schema::Object(
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .min_properties(Some(1))
            .build(),
    )
}

/// A string that is one of `values`.
pub fn one_of<'a>(values: impl IntoIterator<Item = &'a str>) -> Schema {
    Schema::Object(
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(values))
            .build(),
    )
}

/// A list of up to `max_items` values of `item` (a query's `k[]=a&k[]=b`).
pub fn list_of(item: Schema, max_items: usize) -> Schema {
    Schema::Array(
        utoipa::openapi::schema::ArrayBuilder::new()
            .items(utoipa::openapi::schema::ArrayItems::RefOrSchema(Box::new(
                utoipa::openapi::RefOr::T(item),
            )))
            .max_items(Some(max_items))
            .build(),
    )
}

/// A value that is one of a few spellings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choice(pub &'static [&'static str]);

impl Choice {
    pub fn allows(&self, value: &str) -> bool {
        self.0.contains(&value)
    }

    /// A string `enum`.
    pub fn schema(&self) -> Schema {
        one_of(self.0.iter().copied())
    }
}

/// How a boolean query parameter may be spelled
/// (docs/api/conventions.md#query-parameters): the spellings of true, then
/// those of false.
pub const BOOLEAN: Choice = Choice(&["true", "1", "t", "yes", "false", "0", "f", "no"]);

/// A boolean query parameter, one of [`BOOLEAN`]; None for anything else.
pub fn boolean(text: &str) -> Option<bool> {
    let at = BOOLEAN.0.iter().position(|s| *s == text)?;
    Some(at < BOOLEAN.0.len() / 2)
}

/// A language, an ISO 639-1 code: two lower-case ASCII letters (`nl`).
pub fn is_language(code: &str) -> bool {
    crate::domain::text::is_language_code(code)
}

fn language_schema() -> Schema {
    let mut schema = ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(2))
        .max_length(Some(2))
        .build();
    not(&mut schema, "[^a-z]".to_owned());
    Schema::Object(schema)
}

/// Declares the types the OpenAPI document names for rules, each a
/// component of its own: parameter types in `#[utoipa::path]` and field
/// types (`#[schema(value_type = ...)]`) of the documented bodies. A
/// resource with a rule of its own declares its type beside it.
macro_rules! documented {
    ($($name:ident: $description:literal => $schema:expr;)*) => {$(
        #[doc = $description]
        #[derive(Debug)]
        pub struct $name;

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                use utoipa::openapi::schema::Schema;
                let mut schema: Schema = $schema;
                let description = Some($description.to_owned());
                match &mut schema {
                    Schema::Object(object) => object.description = description,
                    Schema::AnyOf(any) => any.description = description,
                    Schema::Array(array) => array.description = description,
                    _ => {}
                }
                utoipa::openapi::RefOr::T(schema)
            }
        }

        impl utoipa::ToSchema for $name {
            fn name() -> std::borrow::Cow<'static, str> {
                std::borrow::Cow::Borrowed(stringify!($name))
            }
        }
    )*};
}
pub(crate) use documented;

documented! {
    DossierId: "The EPD's identifier of the patient: 1 to 255 characters, no control characters." => DOSSIER_ID.schema();
    Id: "An identifier: 1 to 255 characters, not only white space, no control characters." => ID.schema();
    IdNumber: "A positive integer id, as a JSON integer or a string of digits." => ID_DIGITS.schema();
    IdOrInteger: "An identifier: 1 to 255 characters, not only white space, no control characters; or an integer (read as its decimal digits)." => id_or_integer_schema();
    IdList: "Ids separated by commas, each 1 to 255 characters, not only white space, no control characters." => id_list_schema(false);
    IdListOrArray: "Ids separated by commas, each 1 to 255 characters, not only white space, no control characters; or a JSON array of such ids (`[\"a\",\"b\"]`, percent-encoded)." => id_list_schema(true);
    ShortText: "A text of at most 255 characters, no control characters." => SHORT_TEXT.schema();
    PositiveId: "A positive integer id." => POSITIVE_ID.schema();
    AnyInteger: "A 64-bit integer." => ANY_INTEGER.schema();
    Boolean: "A boolean: `true`, `1`, `t` or `yes`; `false`, `0`, `f` or `no`." => BOOLEAN.schema();
    Language: "An ISO 639-1 language code: two lower-case letters." => language_schema();
    FilterTime: "A time: Unix seconds, an RFC 3339 date-time (`2026-03-01T09:30:00+01:00`), a date-time without offset (`2026-03-01T09:30:00`) or a date (`2026-03-01`, midnight), both read in the service's time zone." => filter_time_schema();
    UnixTime: "Unix seconds from 946598400 (1999-12-31, earlier is `too_early`) to 253402300799 (the end of 9999), as a JSON integer or a string of digits." => TIME_DIGITS.schema();
}

#[cfg(test)]
pub(crate) mod tests;
