//! Translation overlays (docs/api/catalog.md#translations): a file per
//! questionnaire and language that replaces the definition's texts by key,
//! so a clinic holding a licence for a translation drops its texts in
//! without editing the definition. It must give every text the definition
//! has and nothing else, and say where its texts come from and under what
//! licence; anything else refuses it with a message naming the key.
//!
//! ```toml
//! language = "nl"
//! source = "Where the texts come from"
//! licence = "Under what terms they may be used"
//! name = "..."
//! short_description = "..."
//! [questions.v_1]
//! title = "..."
//! options = { a0 = "...", a1 = "..." }
//! [option_sets.frequency]
//! a0 = "..."
//! ```
//!
//! Texts change, answers and scores do not: option keys and values stay
//! the definition's, and the scorer reads the definition's own language.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::questionnaire::{DefinitionErrors, Questionnaire, sha256_hex};
use super::text::{Translation, is_language_code, placeholders};

/// The keys of a file that are about the file, not texts.
const META: [&str; 3] = ["language", "source", "licence"];

/// Reads the overlay `text` of the file named `<language>.toml` for `q`.
/// Every problem is reported, each naming its key.
pub fn parse(
    text: &str,
    language: &str,
    q: &Questionnaire,
) -> Result<Translation, DefinitionErrors> {
    let table: toml::Table =
        toml::from_str(text).map_err(|e| DefinitionErrors(vec![e.to_string()]))?;
    let mut errors = Vec::new();
    let mut flat = BTreeMap::new();
    flatten("", &table, &mut flat, &mut errors);
    let meta = |key: &str, errors: &mut Vec<String>| match flat.get(key) {
        Some(v) if !v.trim().is_empty() => v.clone(),
        _ => {
            errors.push(format!(
                "{key}: missing or blank (say where the texts come from and under what licence)"
            ));
            String::new()
        }
    };
    let (source, licence) = (meta("source", &mut errors), meta("licence", &mut errors));
    match flat.get("language") {
        Some(l) if l == language => {}
        Some(l) => errors.push(format!(
            "language: {l:?} is not the language of the file's name ({language})"
        )),
        None => errors.push("language: missing".into()),
    }
    if !is_language_code(language) {
        errors.push(format!("language: {language:?} is not an ISO 639-1 code"));
    }
    if language == q.language {
        errors.push(format!(
            "language: {language} is the definition's own language; change the definition instead"
        ));
    }
    let mut expected = BTreeSet::from(["name".to_owned()]);
    q.each_text(|key, _| {
        expected.insert(key);
    });
    // An option set or a question's options of another set of keys: said
    // once for the whole group, not per key.
    let mut groups: BTreeMap<String, (BTreeSet<&str>, BTreeSet<&str>)> = BTreeMap::new();
    for key in &expected {
        if let Some((head, option)) = option_group(key) {
            groups.entry(head.to_owned()).or_default().0.insert(option);
        }
    }
    for key in flat.keys() {
        if let Some((head, option)) = option_group(key)
            && let Some(g) = groups.get_mut(head)
        {
            g.1.insert(option);
        }
    }
    let changed: BTreeSet<&String> = groups
        .iter()
        .filter(|(_, (def, given))| !given.is_empty() && def != given)
        .map(|(head, _)| head)
        .collect();
    for (head, (def, given)) in &groups {
        if changed.contains(head) {
            let list = |s: &BTreeSet<&str>| s.iter().copied().collect::<Vec<_>>().join(", ");
            errors.push(format!(
                "{head}: the options are {} in the definition, {} here: a translation may not change them",
                list(def),
                list(given)
            ));
        }
    }
    let in_changed =
        |key: &str| option_group(key).is_some_and(|(head, _)| changed.contains(&head.to_owned()));
    for key in expected
        .iter()
        .filter(|k| !flat.contains_key(*k) && !in_changed(k))
    {
        errors.push(format!(
            "{key}: missing; a translation gives every text of the definition"
        ));
    }
    for (key, value) in &flat {
        if META.contains(&key.as_str()) {
            continue;
        }
        if !expected.contains(key) {
            if !in_changed(key) {
                errors.push(format!("{key}: the definition has no such text"));
            }
            continue;
        }
        if value.trim().is_empty() {
            errors.push(format!("{key}: blank"));
        }
        for name in placeholders(value) {
            if !q.textvars.contains_key(name) {
                errors.push(format!(
                    "{key}: {{{{{name}}}}} is not a textvar of the definition"
                ));
            }
        }
    }
    if !errors.is_empty() {
        return Err(DefinitionErrors(errors));
    }
    let name = flat.remove("name");
    for key in META {
        flat.remove(key);
    }
    Ok(Translation {
        language: language.to_owned(),
        sha256: sha256_hex(text.as_bytes()),
        source,
        licence,
        name,
        texts: flat,
        file: text.to_owned(),
    })
}

/// Puts `t`'s texts into `q` (each [`Text`](super::text::Text) gains its
/// language) and keeps `t` in `q.translations`.
pub fn apply(q: &mut Questionnaire, t: Arc<Translation>) {
    let own = q.language.clone();
    q.each_text_mut(|key, text| {
        if let Some(value) = t.texts.get(key) {
            text.set(&t.language, value, &own);
        }
    });
    q.translations.insert(t.language.clone(), t);
}

/// The group and option key of a key naming an option's text:
/// `option_sets.<set>.<option>` or `questions.<key>.options.<option>`.
fn option_group(key: &str) -> Option<(&str, &str)> {
    let (head, option) = key.rsplit_once('.')?;
    (head.starts_with("option_sets.") || head.ends_with(".options")).then_some((head, option))
}

/// The string leaves of `table` by dotted key; anything else is a problem.
fn flatten(
    prefix: &str,
    table: &toml::Table,
    out: &mut BTreeMap<String, String>,
    errors: &mut Vec<String>,
) {
    for (key, value) in table {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            toml::Value::String(s) => {
                out.insert(path, s.clone());
            }
            toml::Value::Table(t) => flatten(&path, t, out, errors),
            _ => errors.push(format!("{path}: a text is a string")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::testing::questionnaire;
    use crate::domain::variant::Variant;

    /// A complete overlay of the shared test questionnaire: test texts,
    /// not a translation anyone should use.
    const DE: &str = r#"
language = "de"
source = "written for this test"
licence = "none needed: test texts"
name = "Mini (de)"
short_description = "Stimmung in den letzten {{period}}"
description = "In den letzten {{period}}:"
[questions.v_1]
title = "Waren Sie in den letzten {{period}} traurig?"
[questions.v_2]
title = "Waren Sie müde?"
[questions.v_3]
title = "Sonst noch etwas?"
options = { a0 = "Ja" }
[option_sets.yn]
a0 = "Nein"
a1 = "Ja"
[textvars.period]
default = "2 Wochen"
"#;

    #[test]
    fn an_overlay_gives_every_text_in_its_language_and_leaves_the_others() {
        let mut q = questionnaire();
        let t = parse(DE, "de", &q).expect("valid");
        assert_eq!(t.sha256, sha256_hex(DE.as_bytes()));
        assert_eq!(t.name.as_deref(), Some("Mini (de)"));
        apply(&mut q, Arc::new(t));
        let plain = Variant::default();
        assert_eq!(
            plain.render(&q, &q.questions[0].title, "de"),
            "Waren Sie in den letzten 2 Wochen traurig?"
        );
        assert_eq!(
            plain.render(&q, &q.questions[1].options[1].description, "de"),
            "Ja"
        );
        // The definition's own texts and other languages are untouched.
        assert_eq!(
            plain.render(&q, &q.questions[1].title, "en"),
            "Were you tired?"
        );
        assert_eq!(
            plain.render(&q, &q.questions[0].title, "nl"),
            "Was u de afgelopen 2 weken somber?"
        );
        assert_eq!(q.name_in("de"), "Mini (de)");
        assert_eq!(q.name_in("nl"), "Mini <check>");
    }

    #[test]
    fn a_missing_an_unknown_or_a_changed_option_set_key_is_named() {
        let q = questionnaire();
        let bad = DE
            .replace("title = \"Waren Sie müde?\"", "titel = \"Waren Sie müde?\"")
            .replace("a1 = \"Ja\"\n", "a2 = \"Ja\"\n")
            .replace("source = \"written for this test\"\n", "");
        let err = parse(&bad, "de", &q).expect_err("refused").0;
        assert_eq!(
            err,
            [
                "source: missing or blank (say where the texts come from and under what licence)",
                "option_sets.yn: the options are a0, a1 in the definition, a0, a2 here: a \
                 translation may not change them",
                "questions.v_2.title: missing; a translation gives every text of the definition",
                "questions.v_2.titel: the definition has no such text",
            ]
        );
        let err = parse(DE, "nl", &q).expect_err("misnamed").0;
        assert!(
            err[0].contains("is not the language of the file's name"),
            "{err:?}"
        );
        let own = DE.replace("language = \"de\"", "language = \"en\"");
        let err = parse(&own, "en", &q).expect_err("own language").0;
        assert!(err[0].contains("the definition's own language"), "{err:?}");
        let number = DE.replace("name = \"Mini (de)\"", "name = 3");
        let err = parse(&number, "de", &q).expect_err("not a text").0;
        assert!(
            err.contains(&"name: a text is a string".to_owned()),
            "{err:?}"
        );
    }
}
