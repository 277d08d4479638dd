//! The host's layer rules (ARCHITECTURE.md, "Layers"), held to the code: the
//! test reads every source file under `host/src/` and fails on a use that
//! crosses a layer, on a file below the HTTP edge that names the crate
//! root's items (`crate::AppState`, ...), and on a circle of imports
//! through the crate root or between top-level modules. It reads text,
//! not the compiler's view (`paths.rs`: `use` trees with their groups,
//! `crate::`, `super::` and `self::` paths, each resolved from the module
//! it is written in), and names each offending line.
//!
//! `cargo test -p host --test layers -- --nocapture` also prints the
//! crate's circles (`graph.rs`: the strongly connected components of the
//! file-level import graph).

mod graph;
mod paths;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use paths::Token;

/// One rule: files under `scope` (a folder or a file below `host/src/`)
/// must name none of `forbidden`: crates (`sqlx`, `plugin_sdk::guest`),
/// matched in code and in `use` paths, or `crate::` module paths, matched
/// against every path of ours the file names, resolved.
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
            "startup.rs",
            "server.rs",
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
        scope: "auth/",
        except: &[],
        forbidden: &["crate::config"],
        why: "the settings build auth's types (rate limits, IP and origin lists, the link secret's source); auth does not read the settings module",
    },
    Rule {
        scope: "",
        except: &["api/", "fillout/", "commands/", "lib.rs", "startup.rs"],
        forbidden: &["crate::api", "crate::fillout"],
        why: "only start-up and the HTTP edge itself name the HTTP edge",
    },
    Rule {
        scope: "",
        except: &["startup.rs"],
        forbidden: &["crate::startup"],
        why: "start-up assembles the parts; nothing calls back into it",
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

/// The files that may name the crate root's items (`AppState`): the root
/// itself, start-up, the HTTP edge and the commands. Everything else
/// receives what it uses.
const READ_THE_ROOT: &[&str] = &["lib.rs", "startup.rs", "api/", "fillout/", "commands/"];

fn source_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file below `dir`, as paths relative to `root` with `/`.
fn sources(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            out.insert(relative.to_string_lossy().replace('\\', "/"), text);
        }
    }
}

fn read_sources() -> BTreeMap<String, String> {
    let root = source_root();
    let mut files = BTreeMap::new();
    sources(&root, &root, &mut files);
    assert!(
        files.len() > 50,
        "found only {} source files under {}",
        files.len(),
        root.display()
    );
    files
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

/// `path` (segments after `crate`) as written from the root.
fn written(path: &[String]) -> String {
    std::iter::once("crate")
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("::")
}

/// Whether `path` (after `crate`) lies in the `crate::` module path
/// `prefix` (`crate::` alone: anything of ours).
fn within(path: &[String], prefix: &str) -> bool {
    let segments: Vec<&str> = prefix
        .strip_prefix("crate::")
        .unwrap_or(prefix)
        .split("::")
        .filter(|s| !s.is_empty())
        .collect();
    path.len() >= segments.len() && path.iter().zip(&segments).all(|(a, b)| a == b)
}

/// Whether a path of ours is one `scope` may name despite a `crate::`
/// rule.
fn allowed_crate_path(scope: &str, path: &[String]) -> bool {
    let Some((_, allowed)) = ALLOWED_CRATE_PATHS.iter().find(|(s, _)| *s == scope) else {
        return false;
    };
    allowed.iter().any(|prefix| within(path, prefix))
}

/// Whether a path of another crate, as written, lies in `crate_path`
/// (`plugin_sdk::guest`).
fn within_theirs(path: &[String], crate_path: &str) -> bool {
    let segments: Vec<&str> = crate_path.split("::").collect();
    path.len() >= segments.len() && path.iter().zip(&segments).all(|(a, b)| a == b)
}

fn in_scope(file: &str, scope: &str, except: &[&str]) -> bool {
    file.starts_with(scope) && !except.iter().any(|e| file.starts_with(e))
}

fn violations(files: &BTreeMap<String, String>, krate: &graph::Crate) -> Vec<String> {
    let top: HashSet<&str> = krate
        .files
        .keys()
        .filter_map(|m| m.first().map(String::as_str))
        .collect();
    let mut found = Vec::new();
    for (file, text) in files {
        let code = paths::code_lines(text);
        let lines: Vec<&str> = text.lines().collect();
        let line_text = |n: usize| lines.get(n - 1).map_or("", |l| l.trim());
        let named = krate.names.get(file);
        for rule in RULES {
            if !in_scope(file, rule.scope, rule.except) {
                continue;
            }
            for &forbidden in rule.forbidden {
                let mut hits: Vec<(usize, String)> = Vec::new();
                if forbidden.starts_with("crate::") {
                    for n in named.into_iter().flat_map(|n| &n.ours) {
                        let allowed =
                            forbidden == "crate::" && allowed_crate_path(rule.scope, &n.path);
                        if within(&n.path, forbidden) && !allowed {
                            hits.push((n.line, written(&n.path)));
                        }
                    }
                } else {
                    for (n, line) in code.iter().enumerate() {
                        if names(line, forbidden) {
                            hits.push((n + 1, forbidden.to_owned()));
                        }
                    }
                    for (n, path) in named.into_iter().flat_map(|n| &n.theirs) {
                        if within_theirs(path, forbidden) {
                            hits.push((*n, path.join("::")));
                        }
                    }
                }
                hits.sort();
                hits.dedup_by_key(|(n, _)| *n);
                for (n, what) in hits {
                    found.push(format!(
                        "host/src/{file}:{n}: `{what}` ({}): {}",
                        rule.why,
                        line_text(n)
                    ));
                }
            }
        }
        if !READ_THE_ROOT.iter().any(|r| file.starts_with(r)) {
            for n in named.into_iter().flat_map(|n| &n.ours) {
                if n.path
                    .first()
                    .is_some_and(|first| !top.contains(first.as_str()))
                {
                    found.push(format!(
                        "host/src/{file}:{}: `{}` (below the HTTP edge a module receives what it \
                         uses, never the crate root's state): {}",
                        n.line,
                        written(&n.path),
                        line_text(n.line)
                    ));
                }
            }
        }
    }
    found
}

/// The circles the rules refuse: any through the crate root (`lib.rs`),
/// and any between files of different top-level modules. A circle inside
/// one folder is that folder's business (reported, not refused).
fn refused_circles<'a>(circles: &[Vec<&'a str>]) -> Vec<Vec<&'a str>> {
    let top = |file: &str| paths::module_of(file).first().cloned().unwrap_or_default();
    circles
        .iter()
        .filter(|c| {
            c.contains(&"lib.rs") || c.iter().map(|f| top(f)).collect::<HashSet<_>>().len() > 1
        })
        .cloned()
        .collect()
}

#[test]
fn every_layer_uses_only_what_it_may() {
    let files = read_sources();
    let krate = graph::Crate::read(&files);
    let found = violations(&files, &krate);
    assert!(
        found.is_empty(),
        "layer rules broken ({}):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn no_circle_runs_through_the_crate_root_or_between_top_level_modules() {
    let files = read_sources();
    let krate = graph::Crate::read(&files);
    let edges = krate.edges();
    let circles = graph::circles(&edges);
    let edge_count: usize = edges.values().map(|to| to.len()).sum();
    eprintln!(
        "{} files, {edge_count} file-to-file imports, {} circles (strongly connected components of more than one file):",
        edges.len(),
        circles.len()
    );
    for circle in &circles {
        eprintln!("  {} files: {}", circle.len(), circle.join(" "));
    }
    let refused = refused_circles(&circles);
    assert!(
        refused.is_empty(),
        "circles of imports through the crate root or between top-level modules:\n{}",
        refused
            .iter()
            .map(|c| c.join(" "))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// What `text`, the file of `module` in a crate with `modules`, names of
/// ours, written from the root.
fn ours(text: &str, module: &[&str], modules: &[&[&str]]) -> Vec<String> {
    let owned = |m: &[&str]| m.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let modules: HashSet<Vec<String>> = modules.iter().map(|m| owned(m)).collect();
    paths::names(text, &owned(module), &modules)
        .ours
        .iter()
        .map(|n| written(&n.path))
        .collect()
}

const MODULES: &[&[&str]] = &[
    &[],
    &["fillout"],
    &["store"],
    &["scheduler"],
    &["scheduler", "steps"],
    &["scheduler", "steps", "deep"],
];

#[test]
fn the_rules_catch_a_crossing() {
    assert!(names("use sqlx::Row;", "sqlx"));
    assert!(!names("let my_sqlx = 1;", "sqlx"));
    assert!(names("use crate::fillout::pages;", "crate::fillout"));
    let code = paths::code_lines("// sqlx is only in store/\nlet s = \"sqlx\";");
    assert!(!code.iter().any(|line| names(line, "sqlx")));
    let path = |p: &str| p.split("::").skip(1).map(str::to_owned).collect::<Vec<_>>();
    assert!(allowed_crate_path(
        "store/",
        &path("crate::domain::ids::DossierId")
    ));
    assert!(!allowed_crate_path("store/", &path("crate::api::extract")));
    assert!(!allowed_crate_path("store/", &path("crate::auth::y")));
    assert!(!allowed_crate_path("store/", &path("crate::domainish::x")));
}

#[test]
fn a_grouped_import_names_each_of_its_paths() {
    assert_eq!(
        ours("use crate::{fillout, store::X};", &["scheduler"], MODULES),
        ["crate::fillout", "crate::store::X"]
    );
}

#[test]
fn a_nested_group_names_each_leaf_with_its_whole_path() {
    assert_eq!(
        ours(
            "use crate::{store::{self, a::{B, C as D}}, AppState};",
            &["scheduler"],
            MODULES
        ),
        [
            "crate::store",
            "crate::store::a::B",
            "crate::store::a::C",
            "crate::AppState"
        ]
    );
}

#[test]
fn super_paths_resolve_from_the_files_module() {
    assert_eq!(
        ours(
            "use super::callbacks::Sent;",
            &["scheduler", "steps"],
            MODULES
        ),
        ["crate::scheduler::callbacks::Sent"]
    );
    assert_eq!(
        ours(
            "use super::super::AppState;",
            &["scheduler", "steps"],
            MODULES
        ),
        ["crate::AppState"]
    );
    assert_eq!(
        ours(
            "fn f() { super::super::super::App::run(); }",
            &["scheduler", "steps", "deep"],
            MODULES
        ),
        ["crate::App::run"]
    );
    assert_eq!(
        ours(
            "use super::{super::AppState, x};",
            &["scheduler", "steps"],
            MODULES
        ),
        ["crate::AppState", "crate::scheduler::x"]
    );
}

#[test]
fn inline_modules_and_paths_in_code_resolve_where_they_are_written() {
    let text = "mod tests { use super::*; fn f() { super::g(); } }\nfn h() { crate::AppState::new(); self::x::y(); }";
    assert_eq!(
        ours(text, &["store"], MODULES),
        [
            "crate::store",
            "crate::store::g",
            "crate::AppState::new",
            "crate::store::x::y"
        ]
    );
}

#[test]
fn child_modules_and_imported_names_resolve_as_paths_of_ours() {
    let text = "use crate::store;\nfn f() { store::Store::connect(); scheduler::tick(); std::mem::take(); }";
    assert_eq!(
        ours(text, &[], MODULES),
        [
            "crate::store",
            "crate::store::Store::connect",
            "crate::scheduler::tick"
        ]
    );
}

#[test]
fn comments_strings_and_characters_name_nothing() {
    let text = "// use crate::AppState;\n/* crate::App */ let s = \"crate::App {\"; let c = '{'; let l: &'static str = r#\"crate::X\"#;\nmod m { fn f() { crate::real(); } }";
    assert_eq!(ours(text, &["store"], MODULES), ["crate::real"]);
    let lexed = paths::lex("let c = '{';");
    assert!(!lexed.iter().any(|(t, _)| *t == Token::Open));
}

#[test]
fn a_circle_is_found_and_a_chain_is_not() {
    let edges = |pairs: &[(&'static str, &'static str)]| {
        let mut map: BTreeMap<&str, std::collections::BTreeSet<&str>> = BTreeMap::new();
        for (from, to) in pairs {
            map.entry(from).or_default().insert(to);
            map.entry(to).or_default();
        }
        map
    };
    let chain = edges(&[("a.rs", "b.rs"), ("b.rs", "c.rs")]);
    assert!(graph::circles(&chain).is_empty());
    let circle = edges(&[
        ("lib.rs", "shadow.rs"),
        ("shadow.rs", "scheduler/mod.rs"),
        ("scheduler/mod.rs", "lib.rs"),
        ("x.rs", "lib.rs"),
    ]);
    let found = graph::circles(&circle);
    assert_eq!(found, [vec!["lib.rs", "scheduler/mod.rs", "shadow.rs"]]);
    assert_eq!(refused_circles(&found), found);
    let inside = edges(&[
        ("domain/a.rs", "domain/b.rs"),
        ("domain/b.rs", "domain/a.rs"),
    ]);
    assert!(refused_circles(&graph::circles(&inside)).is_empty());
}

#[test]
fn a_re_exported_item_leads_to_the_file_that_defines_it() {
    let sources: BTreeMap<String, String> = [
        ("lib.rs", "pub mod plugins;\npub mod scoring;"),
        (
            "plugins/mod.rs",
            "mod error;\npub(crate) use error::PluginError;\npub struct Plugins;",
        ),
        ("plugins/error.rs", "pub enum PluginError {}"),
        ("scoring.rs", "use crate::plugins::{PluginError, Plugins};"),
    ]
    .into_iter()
    .map(|(file, text)| (file.to_owned(), text.to_owned()))
    .collect();
    let krate = graph::Crate::read(&sources);
    let edges = krate.edges();
    assert_eq!(
        edges["scoring.rs"].iter().copied().collect::<Vec<_>>(),
        ["plugins/error.rs", "plugins/mod.rs"]
    );
    assert!(graph::circles(&edges).is_empty(), "{edges:?}");
}
