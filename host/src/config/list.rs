//! A list setting (`trusted_proxies`, `allowed_origins`,
//! `callback_allowed_networks`, `plugin_allow`): a TOML array of strings in
//! the file, or one comma-separated string, the only form a flag or an
//! environment variable has. Both read the same; what an entry must be is
//! checked by whoever uses it (`Config::resolve`). A flag's or environment
//! variable's list replaces the file's whole list.

use serde::de::{self, Deserializer, SeqAccess, Visitor};

/// The entries of a list setting, trimmed, blanks dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct List(Vec<String>);

impl List {
    /// Entries separated by commas, as flags and environment variables
    /// give them.
    pub fn from_text(text: &str) -> List {
        let mut list = List::default();
        list.push(text);
        list
    }

    /// The entries.
    pub fn items(&self) -> &[String] {
        &self.0
    }

    /// The comma-separated form the entry parsers of `auth/` read.
    pub fn joined(&self) -> String {
        self.0.join(",")
    }

    /// Adds the entries of `text`: an array item may itself hold several,
    /// comma-separated, so a value copied from an environment variable
    /// into an array reads the same.
    fn push(&mut self, text: &str) {
        self.0.extend(
            text.split(',')
                .map(str::trim)
                .filter(|e| !e.is_empty())
                .map(str::to_owned),
        );
    }
}

/// A flag's or environment variable's text (and a default's).
impl From<&str> for List {
    fn from(text: &str) -> List {
        List::from_text(text)
    }
}

impl std::str::FromStr for List {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<List, Self::Err> {
        Ok(List::from_text(text))
    }
}

impl<'de> de::Deserialize<'de> for List {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<List, D::Error> {
        deserializer.deserialize_any(ListVisitor)
    }
}

struct ListVisitor;

impl<'de> Visitor<'de> for ListVisitor {
    type Value = List;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an array of strings or one comma-separated string")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<List, E> {
        Ok(List::from_text(text))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<List, A::Error> {
        let mut list = List::default();
        while let Some(item) = seq.next_element::<String>()? {
            list.push(&item);
        }
        Ok(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    struct File {
        list: List,
    }

    fn read(toml_text: &str) -> Result<List, toml::de::Error> {
        toml::from_str::<File>(toml_text).map(|f| f.list)
    }

    #[test]
    fn an_array_and_a_comma_separated_string_read_the_same() {
        let want = List(vec!["10.0.0.2".into(), "10.1.0.0/16".into()]);
        assert_eq!(
            read("list = \"10.0.0.2, 10.1.0.0/16\"").ok(),
            Some(want.clone())
        );
        assert_eq!(
            read("list = [\"10.0.0.2\", \"10.1.0.0/16\"]").ok(),
            Some(want.clone())
        );
        assert_eq!(
            read("list = [\"10.0.0.2,10.1.0.0/16\", \" \"]").ok(),
            Some(want)
        );
        assert_eq!(read("list = []").ok(), Some(List::default()));
        assert_eq!(read("list = \"\"").ok(), Some(List::default()));
    }

    #[test]
    fn other_types_are_refused_with_what_is_expected() {
        for bad in ["list = 3", "list = [1, 2]", "list = { a = \"b\" }"] {
            let err = read(bad).expect_err(bad).to_string();
            assert!(
                err.contains("string") || err.contains("array"),
                "{bad}: {err}"
            );
        }
    }
}
