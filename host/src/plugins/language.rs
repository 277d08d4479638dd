//! Which language a module was written in, as far as its bytes tell, so
//! that a module refused at load is told what to change in the terms of
//! its own tool chain (an AssemblyScript author has no `export_scorer!`).
//! Reads the `producers` custom section (the tool-conventions metadata
//! rustc and clang write: <https://github.com/WebAssembly/tool-conventions/blob/main/ProducersSection.md>)
//! and the import and export names; knows nothing of wasmtime. When
//! nothing gives the language away the hint is neutral.

use super::error::PluginError;
use super::sections;

/// What wrote a module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// rustc (plugin-sdk's macros).
    Rust,
    /// The AssemblyScript compiler (`asc`).
    AssemblyScript,
    /// Nothing told.
    Unknown,
}

impl Language {
    /// Guesses the language of the module `bytes`, whose imports and
    /// exports are named `imports` (`module.name`) and `exports`.
    ///
    /// - A `producers` section naming Rust, or the `__heap_base` and
    ///   `__data_end` globals rustc's wasm32 linker exports: Rust.
    /// - An `env.abort` import (AssemblyScript's default abort handler),
    ///   or the runtime exports asc adds (`__new`, `__pin`, `__collect`,
    ///   `__rtti_base`): AssemblyScript. asc writes no producers section.
    pub fn detect(bytes: &[u8], imports: &[&str], exports: &[&str]) -> Language {
        if producers(bytes).is_some_and(|p| contains(p, b"Rust") || contains(p, b"rustc")) {
            return Language::Rust;
        }
        if imports.contains(&"env.abort") {
            return Language::AssemblyScript;
        }
        if exports
            .iter()
            .any(|e| matches!(*e, "__new" | "__pin" | "__collect" | "__rtti_base"))
        {
            return Language::AssemblyScript;
        }
        if exports.contains(&"__heap_base") && exports.contains(&"__data_end") {
            return Language::Rust;
        }
        Language::Unknown
    }

    /// What to do about a load error `error`, in this language's terms;
    /// `None` for errors no rebuild fixes.
    pub fn hint(self, error: &PluginError) -> Option<&'static str> {
        use Language::*;
        Some(match (error, self) {
            (PluginError::ForbiddenImport(_), Rust) => {
                "build it with plugin-sdk for wasm32-unknown-unknown, without WASI"
            }
            (PluginError::ForbiddenImport(_), AssemblyScript) => {
                "build it with asc without WASI or JavaScript bindings, and call nothing the \
                 host does not offer (console, Date, Math.random, trace, process)"
            }
            (PluginError::ForbiddenImport(_), Unknown) => {
                "a plugin is a core module for a bare wasm32 target, without WASI or JavaScript \
                 bindings (docs/plugin-abi.md#imports)"
            }
            (PluginError::MissingExport(_), Rust) => {
                "build it with plugin-sdk's export_scorer! or export_calculator!"
            }
            (PluginError::MissingExport(_), AssemblyScript) => {
                "export it from the entry file, with the types of docs/plugin-abi.md#exports \
                 (examples/assemblyscript-scorer exports every one)"
            }
            (PluginError::MissingExport(_), Unknown) => {
                "docs/plugin-abi.md#exports lists the exports a module needs and their types"
            }
            (PluginError::AbiMismatch { .. }, Rust) => {
                "rebuild it with the plugin-sdk of this host's ABI major version"
            }
            (PluginError::AbiMismatch { .. }, _) => {
                "rebuild it for this host's ABI: outcomes_abi_version and the manifest's \
                 abi_version say the major version (docs/plugin-abi.md#abi-version)"
            }
            _ => return None,
        })
    }

    /// `error` with this language's hint, when it has one.
    pub fn explain(self, error: PluginError) -> PluginError {
        match self.hint(&error) {
            Some(hint) => PluginError::Hinted {
                error: Box::new(error),
                hint: hint.to_owned(),
            },
            None => error,
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The payload of the module's `producers` custom section, if it has one.
fn producers(bytes: &[u8]) -> Option<&[u8]> {
    sections::custom_section(bytes, "producers")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module holding nothing but one custom section `name` with
    /// `payload`.
    fn with_custom(name: &str, payload: &[u8]) -> Vec<u8> {
        sections::with_custom_section(&sections::PREAMBLE, name, payload)
    }

    #[test]
    fn a_producers_section_naming_rust_means_rust() {
        let module = with_custom("producers", b"\x01\x08language\x01\x04Rust\x00");
        assert_eq!(Language::detect(&module, &[], &[]), Language::Rust);
        let other = with_custom("producers", b"\x01\x08language\x01\x03C11\x00");
        assert_eq!(Language::detect(&other, &[], &[]), Language::Unknown);
        let not_producers = with_custom("name", b"Rust");
        assert_eq!(
            Language::detect(&not_producers, &[], &[]),
            Language::Unknown
        );
    }

    #[test]
    fn imports_and_exports_give_the_language_away_without_producers() {
        assert_eq!(
            Language::detect(b"", &["outcomes.log", "env.abort"], &[]),
            Language::AssemblyScript
        );
        assert_eq!(
            Language::detect(b"", &[], &["memory", "__new"]),
            Language::AssemblyScript
        );
        assert_eq!(
            Language::detect(b"", &[], &["__heap_base", "__data_end"]),
            Language::Rust
        );
        assert_eq!(
            Language::detect(b"", &["outcomes.log"], &["memory"]),
            Language::Unknown
        );
    }

    #[test]
    fn each_language_gets_its_own_hint_and_the_error_keeps_its_code() {
        let missing = || PluginError::MissingExport("outcomes_call".into());
        let rust = Language::Rust.explain(missing());
        assert!(rust.to_string().contains("export_scorer!"), "{rust}");
        assert_eq!(rust.code(), "missing_export");
        let asc = Language::AssemblyScript.explain(missing());
        assert!(asc.to_string().contains("entry file"), "{asc}");
        assert!(!asc.to_string().contains("plugin-sdk"), "{asc}");
        let neutral = Language::Unknown.explain(PluginError::AbiMismatch { found: 9 });
        assert!(neutral.to_string().contains("rebuild"), "{neutral}");
        assert!(!neutral.to_string().contains("plugin-sdk"), "{neutral}");
        assert_eq!(
            Language::Rust.explain(PluginError::Busy),
            PluginError::Busy,
            "no hint for what a rebuild does not fix"
        );
    }
}
