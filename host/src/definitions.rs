//! Reading questionnaire and protocol definitions from their folders. Every
//! problem in every file is collected, each prefixed with its file, so that a
//! clinical team fixing definitions sees all of them at once.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::domain::protocol::{self, ProtocolDef};
use crate::domain::questionnaire::{self, DEFINITION_FILE, Questionnaire};
use crate::store::DefinitionSource;

/// Everything read from disk, validated.
#[derive(Debug, Default)]
pub struct Definitions {
    pub questionnaires: Vec<DefinitionSource<Questionnaire>>,
    pub protocols: Vec<DefinitionSource<ProtocolDef>>,
}

/// Problems found in the definition files, one line each.
#[derive(Debug, thiserror::Error)]
#[error("invalid definitions:\n  {}", .0.join("\n  "))]
pub struct LoadError(pub Vec<String>);

/// Reads `questionnaires_dir/<key>/questionnaire.toml` and
/// `protocols_dir/<key>.toml`. A missing protocols folder means no protocols;
/// a missing questionnaires folder is an error (nothing could be scored).
pub fn load(questionnaires_dir: &Path, protocols_dir: &Path) -> Result<Definitions, LoadError> {
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
            Ok(def) => defs.questionnaires.push(source(def, text)),
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
