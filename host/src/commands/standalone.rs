//! `outcomes plugin new ... --out DIR`: a plugin crate that builds on its
//! own, outside this repository. It carries what a workspace crate
//! inherits: the edition, a `[profile.release]` fit for wasm (the root
//! Cargo.toml's `[profile.plugin]`), the wasm linker flags (the root
//! `.cargo/config.toml`), an empty `[workspace]` so that an enclosing
//! workspace does not claim it, and a README with the commands. plugin-sdk
//! comes by path from a checkout of this repository, or by git.

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::scaffold;
use crate::plugins::module::valid_name;

/// Where a standalone crate takes plugin-sdk from, when neither a path nor
/// a URL is given and no checkout is found: a placeholder to replace with
/// the address of the repository your organisation serves this code from.
pub const SDK_GIT_PLACEHOLDER: &str = "https://git.example.org/outcomes.git";

/// Where plugin-sdk comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sdk {
    /// A plugin-sdk folder on this machine (absolute).
    Path(PathBuf),
    /// A git repository holding plugin-sdk.
    Git(String),
}

impl Sdk {
    /// The path given, else the URL given, else the plugin-sdk of the
    /// checkout the current folder is in, else the git placeholder.
    pub fn choose(path: Option<PathBuf>, git: Option<String>) -> anyhow::Result<Sdk> {
        if let Some(path) = path {
            anyhow::ensure!(
                is_sdk(&path),
                "{} is not the plugin-sdk folder (no Cargo.toml of package plugin-sdk)",
                path.display()
            );
            let path = std::fs::canonicalize(&path)
                .with_context(|| format!("resolving {}", path.display()))?;
            return Ok(Sdk::Path(path));
        }
        if let Some(url) = git {
            return Ok(Sdk::Git(url));
        }
        let here = std::env::current_dir().context("reading the current folder")?;
        Ok(match find_checkout(&here) {
            Some(sdk) => Sdk::Path(sdk),
            None => Sdk::Git(SDK_GIT_PLACEHOLDER.to_owned()),
        })
    }

    /// The dependency line of Cargo.toml.
    fn dependency(&self) -> String {
        match self {
            Sdk::Path(path) => format!(
                "plugin-sdk = {{ path = {} }}",
                toml_string(&path.display().to_string())
            ),
            Sdk::Git(url) => format!("plugin-sdk = {{ git = {} }}", toml_string(url)),
        }
    }
}

/// A TOML basic string (JSON's escapes are TOML's).
fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// Whether `dir` holds the plugin-sdk crate.
fn is_sdk(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("Cargo.toml"))
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
        .and_then(|t| {
            t.get("package")?
                .get("name")?
                .as_str()
                .map(|n| n == "plugin-sdk")
        })
        .unwrap_or(false)
}

/// The plugin-sdk folder of the checkout of this repository that `start`
/// lies in (it or a folder above it holds `plugin-sdk/`), canonical.
pub fn find_checkout(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|dir| dir.join("plugin-sdk"))
        .find(|sdk| is_sdk(sdk))
        .and_then(|sdk| std::fs::canonicalize(sdk).ok())
}

/// Writes a standalone crate for a `kind` plugin named `name` into `out`.
#[allow(clippy::print_stdout)]
pub fn create(out: &Path, kind: &str, name: &str, sdk: &Sdk) -> anyhow::Result<()> {
    anyhow::ensure!(
        valid_name(name),
        "{name:?}: a plugin name is 1 to 64 lower-case letters, digits and _, starting with a letter"
    );
    let empty = std::fs::read_dir(out).map_or(true, |mut d| d.next().is_none());
    anyhow::ensure!(empty, "{} exists and is not empty", out.display());
    let scorer = kind == "scorer";
    let (lib, fixture) = if scorer {
        (scaffold::SCORER_LIB, scaffold::SCORER_FIXTURE)
    } else {
        (scaffold::CALCULATOR_LIB, scaffold::CALCULATOR_FIXTURE)
    };
    let extra_deps = if scorer {
        ""
    } else {
        "\nserde = { version = \"1\", features = [\"derive\"] }"
    };
    let sdk_note = match sdk {
        Sdk::Path(_) => SDK_BY_PATH,
        Sdk::Git(url) if url == SDK_GIT_PLACEHOLDER => SDK_BY_PLACEHOLDER,
        Sdk::Git(_) => SDK_BY_GIT,
    };
    let fill = |t: &str| {
        t.replace("{{name}}", name)
            .replace("{{kind}}", kind)
            .replace("{{extra_deps}}", extra_deps)
            .replace("{{sdk}}", &sdk.dependency())
            .replace("{{sdk_note}}", sdk_note)
            .replace("{{git_placeholder}}", SDK_GIT_PLACEHOLDER)
    };
    let mut files = vec![
        ("Cargo.toml", fill(CARGO_TOML)),
        (".cargo/config.toml", CARGO_CONFIG.to_owned()),
        (".gitignore", "/target\n".to_owned()),
        ("README.md", fill(README)),
        ("src/lib.rs", fill(lib)),
        ("fixtures/example.json", fill(fixture)),
    ];
    if scorer {
        files.push(("questionnaire.toml", fill(scaffold::DEFINITION)));
    }
    for (file, text) in files {
        let path = out.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        println!("created {}", path.display());
    }
    println!(
        "next, in {}: see README.md\n  cargo test\n  cargo build --release --target wasm32-unknown-unknown\n  \
         outcomes plugin test target/wasm32-unknown-unknown/release/{name}.wasm fixtures/",
        out.display()
    );
    Ok(())
}

const CARGO_TOML: &str = r#"[package]
name = "{{name}}"
description = "The {{name}} {{kind}}"
version = "0.1.0"
edition = "2024"
publish = false

[lib]
# cdylib: the wasm module the host loads; rlib: native tests.
crate-type = ["cdylib", "rlib"]

[dependencies]
{{sdk_note}}
{{sdk}}{{extra_deps}}

# The module: fast code (a call is mostly parsing its JSON input), full
# link-time optimisation and one codegen unit keep it small anyway;
# `panic = "abort"` because a wasm plugin cannot unwind.
[profile.release]
opt-level = 3
lto = true
codegen-units = 1
panic = "abort"
strip = true

# A crate of its own, even inside another project's folder.
[workspace]
"#;

const SDK_BY_PATH: &str = "# plugin-sdk from a checkout of the outcomes repository (see README.md\n\
# for taking it from git instead).";

const SDK_BY_GIT: &str = "# plugin-sdk from git (see README.md for a checkout on this machine).";

const SDK_BY_PLACEHOLDER: &str = "# plugin-sdk from git: replace the placeholder URL with the outcomes\n\
# repository your organisation uses, or take it from a checkout (README.md).";

const CARGO_CONFIG: &str = r#"# Plugins: a 64 KiB shadow stack instead of Rust's default 1 MiB, and an
# initial memory of 256 KiB. The host gives every call a fresh instance,
# so a small memory makes every call cheaper; 64 KiB of stack is more than
# a plugin's recursion needs (serde_json stops at 128 levels). Raise
# stack-size if yours recurses deeper: running off the stack traps.
[target.wasm32-unknown-unknown]
rustflags = ["-C", "link-arg=-zstack-size=65536", "-C", "link-arg=--initial-memory=262144"]
"#;

const README: &str = r#"# {{name}}

A {{kind}} plugin for the outcomes service: a WebAssembly module built
against `plugin-sdk`. `src/lib.rs` is the plugin, `fixtures/` its golden
input and output pairs (the host runs them before the plugin may serve).

## The three commands

```sh
cargo test                                                # the fixtures, natively
cargo build --release --target wasm32-unknown-unknown     # the module
outcomes plugin test target/wasm32-unknown-unknown/release/{{name}}.wasm fixtures/
```

The second needs the WebAssembly target once: `rustup target add
wasm32-unknown-unknown`. The third runs every fixture through the module
under the limits the service uses and prints fuel, memory, sizes and time
per fixture (add `--profile {{name}}.json` for a profile to open at
https://profiler.firefox.com).

## Deploy

A plugin is a folder in the service's plugin directory (`--plugins-dir`)
holding the module and its fixtures:

```sh
mkdir -p PLUGINS/{{name}}/fixtures
cp fixtures/*.json PLUGINS/{{name}}/fixtures/
cp target/wasm32-unknown-unknown/release/{{name}}.wasm PLUGINS/{{name}}/
```

A running service picks it up (copy the fixtures first; copy the module
to a temporary name and rename it, so the service never reads half a
file). A scorer also needs its questionnaire definition,
`questionnaire.toml`, in the service's questionnaire folder.

## plugin-sdk: by path or by git

`Cargo.toml` takes `plugin-sdk` in one of two ways:

```toml
# From a checkout of the outcomes repository on this machine:
plugin-sdk = { path = "/path/to/outcomes/plugin-sdk" }
# From git (a tag or rev pins a version):
plugin-sdk = { git = "{{git_placeholder}}", tag = "v0.1.0" }
```

`{{git_placeholder}}` is a placeholder: put the address of the outcomes
repository your organisation uses. `outcomes plugin new ... --out DIR`
writes the path when it runs inside a checkout (or with `--sdk-path`),
and the git dependency otherwise (`--sdk-git URL` names it).

The SDK's guide, `plugin-sdk/docs/writing-a-plugin.md` (also `cargo doc
--open`, module `guide`), explains the contract, the fixtures and the
rules a plugin keeps: pure, every clinical rule cited, a new version for
every changed rule.
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkout_is_found_from_any_folder_inside_it() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("the repository");
        let sdk = find_checkout(&root.join("host/src")).expect("found");
        assert!(sdk.ends_with("plugin-sdk"));
        let outside = tempfile::tempdir().expect("temporary folder");
        assert_eq!(find_checkout(outside.path()), None);
    }

    #[test]
    fn the_crate_names_its_sdk_and_refuses_a_full_folder() {
        let dir = tempfile::tempdir().expect("temporary folder");
        let out = dir.path().join("mood4");
        let sdk = Sdk::Path(PathBuf::from("/opt/outcomes/plugin-sdk"));
        create(&out, "calculator", "mood4", &sdk).expect("created");
        let manifest = std::fs::read_to_string(out.join("Cargo.toml")).expect("Cargo.toml");
        let table: toml::Table = manifest.parse().expect("valid TOML");
        assert_eq!(
            table["dependencies"]["plugin-sdk"]["path"].as_str(),
            Some("/opt/outcomes/plugin-sdk")
        );
        assert!(table["dependencies"].get("serde").is_some());
        assert!(table.contains_key("workspace"));
        assert!(!manifest.contains(".workspace"), "inherits nothing");
        assert!(out.join(".cargo/config.toml").is_file());
        assert!(create(&out, "calculator", "mood4", &sdk).is_err());

        let placeholder = dir.path().join("by_git");
        create(
            &placeholder,
            "scorer",
            "by_git",
            &Sdk::Git(SDK_GIT_PLACEHOLDER.into()),
        )
        .expect("created");
        let manifest = std::fs::read_to_string(placeholder.join("Cargo.toml")).expect("Cargo.toml");
        assert!(manifest.contains("replace the placeholder"), "{manifest}");
        assert!(placeholder.join("questionnaire.toml").is_file());
        assert!(create(&dir.path().join("x"), "scorer", "Bad-Name", &sdk).is_err());
    }
}
