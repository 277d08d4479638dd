//! The host's layer rules (ARCHITECTURE.md, "Layers"), held to the code: the
//! test reads every source file under `host/src/` and fails on a use that
//! crosses a layer. It reads text, not the compiler's view, so it looks at
//! code only (line comments are dropped) and names each offending line.

use std::path::{Path, PathBuf};

/// One rule: files under `scope` (a folder or a file below `host/src/`)
/// must name none of `forbidden` (crates, or `crate::` module paths).
struct Rule {
    scope: &'static str,
    /// Files under `scope` that the rule does not apply to (the layer's
    /// own home, when the scope is the whole tree).
    except: &'static [&'static str],
    forbidden: &'static [&'static str],
    why: &'static str,
}

const RULES: &[Rule] = &[
    Rule {
        scope: "",
        except: &["store/"],
        forbidden: &["sqlx"],
        why: "SQL and the database driver live in store/ only",
    },
    Rule {
        scope: "",
        except: &["plugins/"],
        forbidden: &["wasmtime"],
        why: "the WebAssembly runtime lives in plugins/ only",
    },
    Rule {
        scope: "",
        except: &[
            "api/",
            "fillout/",
            "auth/",
            "error.rs",
            "lib.rs",
            "server.rs",
            "startup.rs",
            "telemetry.rs",
            "tls.rs",
        ],
        forbidden: &["axum"],
        why: "axum belongs to the HTTP edge",
    },
    Rule {
        scope: "api/",
        except: &[],
        forbidden: &["crate::fillout"],
        why: "api/ and fillout/ are siblings: neither imports the other",
    },
    Rule {
        scope: "fillout/",
        except: &[],
        forbidden: &["crate::api"],
        why: "api/ and fillout/ are siblings: neither imports the other",
    },
    Rule {
        scope: "domain/",
        except: &[],
        forbidden: &["crate::"],
        why: "domain/ uses nothing of ours outside itself",
    },
    Rule {
        scope: "domain/",
        except: &[],
        forbidden: &["plugin_sdk::guest", "plugin_sdk::testing"],
        why: "domain/ shares the plugin contract's types, never the guest side or the test harness",
    },
    Rule {
        scope: "domain/",
        except: &[],
        forbidden: &["tokio"],
        why: "domain/ is pure: no I/O, no runtime",
    },
    Rule {
        scope: "store/",
        except: &[],
        forbidden: &["crate::"],
        why: "store/ uses domain/ only",
    },
    Rule {
        scope: "plugins/",
        except: &[],
        forbidden: &["crate::"],
        why: "plugins/ uses domain/ and metrics only",
    },
    Rule {
        scope: "scheduler/",
        except: &[],
        forbidden: &["crate::api", "crate::fillout"],
        why: "the scheduler runs below the HTTP edge",
    },
    Rule {
        scope: "scoring.rs",
        except: &[],
        forbidden: &["crate::api", "crate::fillout"],
        why: "scoring runs below the HTTP edge",
    },
];

/// `crate::` paths a scope may use despite a `crate::` rule.
const ALLOWED_CRATE_PATHS: &[(&str, &[&str])] = &[
    ("domain/", &["crate::domain"]),
    ("store/", &["crate::store", "crate::domain"]),
    (
        "plugins/",
        &["crate::plugins", "crate::domain", "crate::metrics"],
    ),
];

fn source_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file below `dir`, as paths relative to `root` with `/`.
fn sources(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            out.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// The line without its `//` comment (doc comments included).
fn code(line: &str) -> &str {
    line.find("//").map_or(line, |i| &line[..i])
}

/// Whether `code` names `word` as a path or identifier: not as part of a
/// longer identifier (`sqlx` in `my_sqlx`).
fn names(code: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices(word).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        let after = code[i + word.len()..].chars().next();
        !before.is_some_and(is_ident) && (word.ends_with("::") || !after.is_some_and(is_ident))
    })
}

/// Whether a `crate::` use on this line is one the scope may make.
fn allowed_crate_path(scope: &str, code: &str) -> bool {
    let Some((_, allowed)) = ALLOWED_CRATE_PATHS.iter().find(|(s, _)| *s == scope) else {
        return false;
    };
    code.match_indices("crate::").all(|(i, _)| {
        allowed.iter().any(|path| {
            let rest = &code[i..];
            rest.starts_with(path)
                && !rest[path.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    })
}

fn violations() -> Vec<String> {
    let root = source_root();
    let mut files = Vec::new();
    sources(&root, &root, &mut files);
    files.sort();
    assert!(
        files.len() > 50,
        "found only {} source files under {}",
        files.len(),
        root.display()
    );
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(root.join(file)).unwrap_or_default();
        for rule in RULES {
            if !file.starts_with(rule.scope) || rule.except.iter().any(|e| file.starts_with(e)) {
                continue;
            }
            for (n, line) in text.lines().enumerate() {
                let code = code(line);
                for &forbidden in rule.forbidden {
                    if !names(code, forbidden)
                        || (forbidden == "crate::" && allowed_crate_path(rule.scope, code))
                    {
                        continue;
                    }
                    found.push(format!(
                        "host/src/{file}:{}: `{forbidden}` ({}): {}",
                        n + 1,
                        rule.why,
                        line.trim()
                    ));
                }
            }
        }
    }
    found
}

#[test]
fn every_layer_uses_only_what_it_may() {
    let found = violations();
    assert!(
        found.is_empty(),
        "layer rules broken:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_rules_catch_a_crossing() {
    assert!(names("use sqlx::Row;", "sqlx"));
    assert!(!names("let my_sqlx = 1;", "sqlx"));
    assert!(names("use crate::fillout::pages;", "crate::fillout"));
    assert!(!names(code("// sqlx is only in store/"), "sqlx"));
    assert!(allowed_crate_path(
        "store/",
        "use crate::domain::ids::DossierId;"
    ));
    assert!(!allowed_crate_path("store/", "use crate::api::extract;"));
    assert!(!allowed_crate_path(
        "store/",
        "use crate::domain::x; use crate::auth::y;"
    ));
    assert!(!allowed_crate_path("store/", "use crate::domainish::x;"));
}
