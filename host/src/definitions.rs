//! Reading questionnaire and protocol definitions from their folders. Every
//! problem in every file is collected, each prefixed with its file, so that a
//! clinical team fixing definitions sees all of them at once.
//!
//! Translation overlays (`domain/translation.rs`) are read with their
//! questionnaire: `<questionnaire folder>/translations/<language>.toml`,
//! and `<translations folder>/<key>/<language>.toml` when the setting
//! names one (a licensee's texts, kept outside this repository; it wins
//! over the questionnaire folder's file of the same language). An overlay
//! that does not fit its definition is refused, naming every key that is
//! wrong, and never stops a load: the translation that served before keeps
//! serving if it still fits, else the definition's own texts do.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::domain::catalog::Catalog;
use crate::domain::protocol::{self, ProtocolDef};
use crate::domain::questionnaire::{self, DEFINITION_FILE, Questionnaire};
use crate::domain::text::is_language_code;
use crate::domain::translation;
use crate::store::DefinitionSource;

/// The folder inside a questionnaire's folder that holds its overlays.
pub const TRANSLATIONS_FOLDER: &str = "translations";

/// Everything read from disk, validated.
#[derive(Debug, Default)]
pub struct Definitions {
    pub questionnaires: Vec<DefinitionSource<Questionnaire>>,
    pub protocols: Vec<DefinitionSource<ProtocolDef>>,
    /// Overlays refused, one line each naming the file and what is wrong
    /// (logged as they are found).
    pub refused_translations: Vec<String>,
}

/// Problems found in the definition files, one line each.
#[derive(Debug, thiserror::Error)]
#[error("invalid definitions:\n  {}", .0.join("\n  "))]
pub struct LoadError(pub Vec<String>);

/// Reads `questionnaires_dir/<key>/questionnaire.toml` and
/// `protocols_dir/<key>.toml`, with the translations in each questionnaire's
/// folder. A missing protocols folder means no protocols; a missing
/// questionnaires folder is an error (nothing could be scored).
pub fn load(questionnaires_dir: &Path, protocols_dir: &Path) -> Result<Definitions, LoadError> {
    load_with(questionnaires_dir, protocols_dir, None, None)
}

/// [`load`], with the overlays of `translations_dir` too, and the catalog
/// `previous` serving so far: an overlay refused now keeps its previous
/// version serving while that fits the definition.
pub fn load_with(
    questionnaires_dir: &Path,
    protocols_dir: &Path,
    translations_dir: Option<&Path>,
    previous: Option<&Catalog>,
) -> Result<Definitions, LoadError> {
    let mut errors = Vec::new();
    let mut defs = Definitions::default();

    for folder in entries(questionnaires_dir, &mut errors, true)
        .into_iter()
        .filter(|p| p.is_dir())
    {
        let Some(name) = folder
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_owned)
        else {
            continue;
        };
        let file = folder.join(DEFINITION_FILE);
        let Some(text) = read(&file, &mut errors) else {
            continue;
        };
        match questionnaire::parse(&text, &name) {
            Ok(mut def) => {
                let dirs = [
                    Some(folder.join(TRANSLATIONS_FOLDER)),
                    translations_dir.map(|d| d.join(&name)),
                ];
                let refused = translate(&mut def, dirs.iter().flatten(), previous);
                defs.refused_translations.extend(refused);
                defs.questionnaires.push(source(def, text));
            }
            Err(e) => errors.extend(e.0.into_iter().map(|m| format!("{}: {m}", file.display()))),
        }
    }

    let known: Vec<String> = defs
        .questionnaires
        .iter()
        .map(|q| q.def.key.clone())
        .collect();
    let protocol_files = if protocols_dir.exists() {
        entries(protocols_dir, &mut errors, false)
    } else {
        Vec::new()
    };
    for file in protocol_files
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
    {
        let stem = file
            .file_stem()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let Some(text) = read(&file, &mut errors) else {
            continue;
        };
        match protocol::parse(&text, &stem, |k| known.iter().any(|q| q == k)) {
            Ok(def) => defs.protocols.push(source(def, text)),
            Err(e) => errors.extend(e.0.into_iter().map(|m| format!("{}: {m}", file.display()))),
        }
    }

    if errors.is_empty() {
        Ok(defs)
    } else {
        Err(LoadError(errors))
    }
}

/// Applies the overlays of `dirs` to `def`, a later folder's file of a
/// language in place of an earlier one's; answers what was refused.
fn translate<'a>(
    def: &mut Questionnaire,
    dirs: impl Iterator<Item = &'a PathBuf>,
    previous: Option<&Catalog>,
) -> Vec<String> {
    let mut files = std::collections::BTreeMap::new();
    let mut refused = Vec::new();
    for dir in dirs.filter(|d| d.is_dir()) {
        for file in entries(dir, &mut refused, false) {
            let language = file
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default();
            if file.extension().is_some_and(|e| e == "toml") && is_language_code(language) {
                files.insert(language.to_owned(), file);
            }
        }
    }
    for (language, file) in files {
        let Some(text) = read(&file, &mut refused) else {
            continue;
        };
        match translation::parse(&text, &language, def) {
            Ok(t) => translation::apply(def, Arc::new(t)),
            Err(e) => {
                // What served before keeps serving, if it still fits.
                let before = previous
                    .and_then(|c| c.questionnaire(&def.key))
                    .and_then(|q| q.def.translations.get(&language))
                    .and_then(|t| translation::parse(&t.file, &language, def).ok());
                let keeps = if before.is_some() {
                    "the previous version of it keeps serving"
                } else {
                    "the definition's own texts serve"
                };
                let message = format!(
                    "{}: translation refused ({keeps}): {}",
                    file.display(),
                    e.0.join("; ")
                );
                tracing::error!(questionnaire = def.key, language, "{message}");
                refused.push(message);
                if let Some(t) = before {
                    translation::apply(def, Arc::new(t));
                }
            }
        }
    }
    refused
}

fn source<T>(def: T, text: String) -> DefinitionSource<T> {
    let sha256 = Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    DefinitionSource { def, text, sha256 }
}

/// The visible entries of a folder, sorted by name so loading is repeatable.
fn entries(dir: &Path, errors: &mut Vec<String>, required: bool) -> Vec<PathBuf> {
    match std::fs::read_dir(dir) {
        Ok(rd) => {
            let mut paths: Vec<PathBuf> = rd
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    !p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with('.'))
                })
                .collect();
            paths.sort();
            paths
        }
        Err(e) => {
            if required {
                errors.push(format!("{}: cannot read the folder: {e}", dir.display()));
            }
            Vec::new()
        }
    }
}

fn read(file: &Path, errors: &mut Vec<String>) -> Option<String> {
    std::fs::read_to_string(file)
        .map_err(|e| errors.push(format!("{}: {e}", file.display())))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_definitions_load() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let defs = load(&root.join("questionnaires"), &root.join("protocols"))
            .expect("bundled definitions are valid");
        assert!(defs.questionnaires.iter().any(|q| q.def.key == "phq9"));
        assert!(defs.protocols.iter().any(|p| p.def.automatic));
        assert!(defs.protocols.iter().any(|p| !p.def.automatic));
    }

    #[test]
    fn the_bundled_dutch_overlays_load_with_their_source_and_licence() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let defs = load(&root.join("questionnaires"), &root.join("protocols"))
            .expect("bundled definitions are valid");
        assert!(
            defs.refused_translations.is_empty(),
            "{:?}",
            defs.refused_translations
        );
        for key in ["intake", "diary"] {
            let q = defs
                .questionnaires
                .iter()
                .find(|q| q.def.key == key)
                .unwrap_or_else(|| panic!("{key} is bundled"));
            let nl = q.def.translations.get("nl").expect("a Dutch overlay");
            assert!(nl.source.contains("Written for this project"), "{key}");
            assert!(nl.licence.contains("EUPL-1.2"), "{key}");
            // Every text a respondent reads has its Dutch.
            assert!(nl.name.is_some(), "{key}: name");
            q.def.each_text(|at, text| {
                assert_eq!(text.language("nl", &q.def.language), "nl", "{key}: {at}");
            });
        }
    }

    #[test]
    fn the_bundled_questionnaires_use_every_type_pages_and_a_chained_condition() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let defs = load(&root.join("questionnaires"), &root.join("protocols"))
            .expect("bundled definitions are valid");
        let mut types: Vec<&str> = defs
            .questionnaires
            .iter()
            .flat_map(|q| q.def.questions.iter().map(|question| question.kind.name()))
            .collect();
        types.sort_unstable();
        types.dedup();
        let mut all = crate::domain::kind::QUESTION_TYPES.to_vec();
        all.sort_unstable();
        assert_eq!(types, all);
        assert!(defs.questionnaires.iter().any(|q| q.def.paged));
        // A chain: a condition on a question that has a condition itself.
        let chained = defs.questionnaires.iter().any(|q| {
            q.def.questions.iter().any(|question| {
                question.shown_if.as_ref().is_some_and(|c| {
                    c.questions()
                        .iter()
                        .any(|k| q.def.question(k).is_some_and(|t| t.shown_if.is_some()))
                })
            })
        });
        assert!(
            chained,
            "no bundled question is shown under a chained condition"
        );
    }

    /// A folder `key` holding the shared test definition (`mini`), with
    /// `overlay` as its Dutch translation when given.
    fn mini(dir: &Path, overlay: Option<&str>) {
        let folder = dir.join("mini");
        std::fs::create_dir_all(folder.join(TRANSLATIONS_FOLDER)).expect("mkdir");
        std::fs::write(
            folder.join(DEFINITION_FILE),
            crate::domain::testing::DEFINITION,
        )
        .expect("write");
        if let Some(text) = overlay {
            std::fs::write(folder.join(TRANSLATIONS_FOLDER).join("de.toml"), text).expect("write");
        }
    }

    const DE: &str = r#"
language = "de"
source = "written for this test"
licence = "none needed: test texts"
name = "Mini (de)"
short_description = "Stimmung"
description = "Letzte {{period}}:"
[questions.v_1]
title = "Traurig?"
[questions.v_2]
title = "Müde?"
[questions.v_3]
title = "Sonst?"
options = { a0 = "Ja" }
[option_sets.yn]
a0 = "Nein"
a1 = "Ja"
[textvars.period]
default = "2 Wochen"
"#;

    fn loaded(dir: &Path, translations: Option<&Path>, previous: Option<&Catalog>) -> Definitions {
        load_with(dir, &dir.join("none"), translations, previous).expect("loads")
    }

    fn catalog(defs: Definitions) -> Catalog {
        let questionnaires = defs
            .questionnaires
            .into_iter()
            .enumerate()
            .map(|(i, s)| crate::domain::catalog::CatalogQuestionnaire {
                id: crate::domain::ids::QuestionnaireId(i64::try_from(i).unwrap_or_default()),
                def: Arc::new(s.def),
            })
            .collect();
        Catalog::new(questionnaires, Vec::new())
    }

    #[test]
    fn an_overlay_that_does_not_fit_is_refused_by_key_and_the_previous_keeps_serving() {
        let dir = tempfile::tempdir().expect("tempdir");
        mini(dir.path(), Some(DE));
        let first = loaded(dir.path(), None, None);
        assert!(
            first.refused_translations.is_empty(),
            "{:?}",
            first.refused_translations
        );
        let previous = catalog(first);
        let title = |c: &Catalog| {
            c.questionnaire("mini")
                .map(|q| q.def.questions[0].title.resolve("de", "en").to_owned())
        };
        assert_eq!(title(&previous).as_deref(), Some("Traurig?"));

        mini(
            dir.path(),
            Some(&DE.replace("title = \"Müde?\"", "titel = \"Müde?\"")),
        );
        let second = loaded(dir.path(), None, Some(&previous));
        let refused = &second.refused_translations;
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(
            refused[0].contains("mini/translations/de.toml"),
            "{refused:?}"
        );
        assert!(
            refused[0].contains("the previous version of it keeps serving"),
            "{refused:?}"
        );
        assert!(
            refused[0].contains("questions.v_2.title: missing"),
            "{refused:?}"
        );
        assert!(
            refused[0].contains("questions.v_2.titel: the definition has no such text"),
            "{refused:?}"
        );
        assert_eq!(title(&catalog(second)).as_deref(), Some("Traurig?"));

        // Without a previous one, the definition's own texts serve.
        let alone = loaded(dir.path(), None, None);
        assert!(alone.refused_translations[0].contains("the definition's own texts serve"));
        assert_eq!(
            title(&catalog(alone)).as_deref(),
            Some("In the past {{period}}, {{ name }}, were you sad?")
        );
    }

    #[test]
    fn an_overlay_in_the_translations_folder_wins_over_the_questionnaires_own() {
        let dir = tempfile::tempdir().expect("tempdir");
        mini(dir.path(), Some(DE));
        let elsewhere = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(elsewhere.path().join("mini")).expect("mkdir");
        std::fs::write(
            elsewhere.path().join("mini").join("de.toml"),
            DE.replace("Traurig?", "Traurig? (Lizenz)"),
        )
        .expect("write");
        let defs = loaded(dir.path(), Some(elsewhere.path()), None);
        assert!(
            defs.refused_translations.is_empty(),
            "{:?}",
            defs.refused_translations
        );
        let q = &defs.questionnaires[0].def;
        assert_eq!(
            q.questions[0].title.resolve("de", "en"),
            "Traurig? (Lizenz)"
        );
        assert_eq!(q.translations.keys().collect::<Vec<_>>(), ["de"]);
    }

    #[test]
    fn problems_name_their_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("broken")).expect("mkdir");
        std::fs::write(
            dir.path().join("broken").join(DEFINITION_FILE),
            "key = \"broken\"\n",
        )
        .expect("write");
        std::fs::create_dir(dir.path().join("empty")).expect("mkdir");
        let err = load(dir.path(), &dir.path().join("none"))
            .expect_err("invalid")
            .0;
        assert_eq!(err.len(), 2, "{err:?}");
        assert!(err[0].contains("broken/questionnaire.toml"), "{err:?}");
        assert!(err[1].contains("empty/questionnaire.toml"), "{err:?}");
    }
}
