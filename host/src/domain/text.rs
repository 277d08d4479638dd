//! Texts that a definition may give in one language or in several, the
//! `{{name}}` placeholders in them, and translations of a definition's
//! texts.

use std::collections::BTreeMap;

use serde::Deserialize;

/// A text in a definition file: either one string, or a table of language
/// code to string (`{ en = "...", nl = "..." }`).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum Text {
    /// The same text in every language.
    Plain(String),
    /// Language code (ISO 639-1) to text.
    Localized(BTreeMap<String, String>),
}

impl Text {
    /// The text in `language`, falling back to `fallback`, then to any
    /// language the definition has (in code order, so the choice is stable).
    pub fn resolve<'a>(&'a self, language: &str, fallback: &str) -> &'a str {
        match self {
            Text::Plain(s) => s,
            Text::Localized(map) => map
                .get(language)
                .or_else(|| map.get(fallback))
                .or_else(|| map.values().next())
                .map_or("", String::as_str),
        }
    }

    /// The language [`Text::resolve`] takes its text from: `language` when
    /// the text has it, else `fallback`, else the first it has. A plain
    /// text is in the definition's language, which callers pass as
    /// `fallback`.
    pub fn language<'a>(&'a self, language: &'a str, fallback: &'a str) -> &'a str {
        match self {
            Text::Plain(_) => fallback,
            Text::Localized(map) if map.contains_key(language) => language,
            Text::Localized(map) if map.contains_key(fallback) => fallback,
            Text::Localized(map) => map.keys().next().map_or(fallback, String::as_str),
        }
    }

    /// Sets the text in `language`: a plain text becomes one in
    /// `default_language` (its own) and `language`.
    pub fn set(&mut self, language: &str, value: &str, default_language: &str) {
        match self {
            Text::Plain(s) => {
                *self = Text::Localized(BTreeMap::from([
                    (default_language.to_owned(), std::mem::take(s)),
                    (language.to_owned(), value.to_owned()),
                ]));
            }
            Text::Localized(map) => {
                map.insert(language.to_owned(), value.to_owned());
            }
        }
    }

    /// Every language's text.
    pub fn all(&self) -> impl Iterator<Item = &str> {
        let (plain, localized) = match self {
            Text::Plain(s) => (Some(s.as_str()), None),
            Text::Localized(map) => (None, Some(map.values().map(String::as_str))),
        };
        plain.into_iter().chain(localized.into_iter().flatten())
    }

    /// True when no language holds any non-blank text.
    pub fn is_blank(&self) -> bool {
        match self {
            Text::Plain(s) => s.trim().is_empty(),
            Text::Localized(map) => map.values().all(|s| s.trim().is_empty()),
        }
    }
}

/// A translation of a definition's texts into one language, read from an
/// overlay file (`translation.rs`): the texts by key, with where they come
/// from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translation {
    /// ISO 639-1.
    pub language: String,
    /// SHA-256 of the file, recorded with every response filled out in it.
    pub sha256: String,
    /// Where the texts come from.
    pub source: String,
    /// Under what licence they may be used.
    pub licence: String,
    /// The questionnaire's name, when translated.
    pub name: Option<String>,
    /// Every other text, by key (`questions.v_1.title`, ...).
    pub texts: BTreeMap<String, String>,
    /// The file as read: checked again when the definition changes, so a
    /// translation that no longer fits stops serving.
    pub file: String,
}

/// Whether `code` has the form of an ISO 639-1 language code: two
/// lower-case ASCII letters.
pub fn is_language_code(code: &str) -> bool {
    code.len() == 2 && code.bytes().all(|b| b.is_ascii_lowercase())
}

/// The names of the `{{name}}` placeholders in `text`, in order.
pub fn placeholders(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        names.push(after[..end].trim());
        rest = &after[end + 2..];
    }
    names
}

/// Replaces each `{{name}}` in `text` by `value(name)`, leaving it as
/// written when that gives nothing.
pub fn substitute(text: &str, value: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        out.push_str(&rest[..start]);
        match value(after[..end].trim()) {
            Some(v) => out.push_str(&v),
            None => out.push_str(&rest[start..start + 2 + end + 2]),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn localized_text_falls_back_to_the_definition_language() {
        let t = Text::Localized(BTreeMap::from([
            ("en".to_owned(), "Yes".to_owned()),
            ("nl".to_owned(), "Ja".to_owned()),
        ]));
        assert_eq!(t.resolve("nl", "en"), "Ja");
        assert_eq!(t.resolve("de", "en"), "Yes");
        assert_eq!(t.resolve("de", "fr"), "Yes");
        assert_eq!(t.language("nl", "en"), "nl");
        assert_eq!(t.language("de", "en"), "en");
        assert_eq!(t.language("de", "fr"), "en");
        assert_eq!(Text::Plain("Ja".into()).language("en", "nl"), "nl");
        assert!(!t.is_blank());
        assert!(Text::Plain("  ".into()).is_blank());
    }

    #[test]
    fn placeholders_are_found_and_unclosed_ones_ignored() {
        assert_eq!(placeholders("a {{x}} b {{ y }} c {{z"), ["x", "y"]);
        assert!(placeholders("none").is_empty());
    }
}
