//! The rolling-upgrade rule (docs/operations.md#upgrades), held to the
//! migrations: while hosts are upgraded one by one, the old version runs on
//! the new schema, so a migration may only add (tables, nullable columns,
//! columns with a default, indexes) and never take away or tighten what
//! the old version uses. This test reads every file under `migrations/`
//! and fails on a statement that does; past exceptions are listed in
//! `ALLOWED`, each with its reason.
//!
//! It reads text, so it sees the schema only: a migration can keep the
//! schema compatible and still change what the code must write (0013's
//! hash chain); the docs list those, and review has to catch new ones.

use std::path::{Path, PathBuf};

/// A statement pattern the old version may not survive.
struct Rule {
    name: &'static str,
    /// Whether a statement (upper case, comments gone, spaces collapsed)
    /// breaks the rule.
    breaks: fn(&str) -> bool,
    why: &'static str,
}

const RULES: &[Rule] = &[
    Rule {
        name: "drop",
        breaks: |s| s.contains("DROP TABLE") || s.contains("DROP COLUMN"),
        why: "the old version still reads and writes it; drop it a release after the code stopped using it",
    },
    Rule {
        name: "rename",
        breaks: |s| s.contains(" RENAME "),
        why: "the old version knows only the old name; add the new one, copy, drop the old a release later",
    },
    Rule {
        name: "drop default",
        breaks: |s| s.contains("DROP DEFAULT") || s.contains("DROP IDENTITY"),
        why: "the old version inserts without naming the column and relies on the default",
    },
    Rule {
        name: "not null",
        breaks: |s| {
            s.contains("SET NOT NULL")
                || (s.contains("ADD COLUMN") && s.contains("NOT NULL") && !s.contains("DEFAULT"))
        },
        why: "the old version inserts rows without the column: give it a default, or make it NOT NULL a release later",
    },
    Rule {
        name: "type change",
        breaks: |s| s.contains("ALTER COLUMN") && s.contains(" TYPE "),
        why: "the old version reads and binds the old type",
    },
    Rule {
        name: "new constraint",
        breaks: |s| s.contains("ADD CONSTRAINT"),
        why: "the old version may write rows the constraint refuses",
    },
];

/// Past statements that break a rule: (dialect, file, rule, why it was
/// accepted). A new entry needs a note under "Migrations so far" in
/// docs/operations.md#upgrades.
const ALLOWED: &[(&str, &str, &str, &str)] = &[
    (
        "postgres",
        "0011_jwt_keys_and_jwt_only.sql",
        "drop default",
        "api_token_keys.algorithms: an older `outcomes token add-key` cannot register a key on \
         the new schema (the service itself never inserts keys); upgrade the command with the \
         first host",
    ),
    (
        "postgres",
        "0016_access_log_own_ids.sql",
        "drop default",
        "access_log.id: the identity goes, and a trigger of the same migration gives every row \
         its id from a sequence instead, so the old version's inserts, which name no id, work \
         as before",
    ),
];

fn migrations_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations")
}

/// The statements of a migration: line comments dropped, split at `;`,
/// upper case with runs of white space made one space. A function body
/// between `$$` splits into pieces too, which is harmless here: no rule
/// matches inside one.
fn statements(sql: &str) -> Vec<String> {
    let code: String = sql
        .lines()
        .map(|line| line.split_once("--").map_or(line, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n");
    code.split(';')
        .map(|s| {
            s.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_uppercase()
        })
        .filter(|s| !s.is_empty())
        .collect()
}

#[test]
fn migrations_keep_the_old_version_working() {
    let mut broken = Vec::new();
    let mut seen = 0;
    for dialect in ["sqlite", "postgres"] {
        let dir = migrations_dir().join(dialect);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "sql"))
            .collect();
        files.sort();
        for file in files {
            seen += 1;
            let name = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let sql = std::fs::read_to_string(&file).expect("readable");
            for statement in statements(&sql) {
                for rule in RULES {
                    let allowed = ALLOWED
                        .iter()
                        .any(|(d, f, r, _)| *d == dialect && *f == name && *r == rule.name);
                    if (rule.breaks)(&statement) && !allowed {
                        broken.push(format!(
                            "migrations/{dialect}/{name}: {}: {statement}\n    ({})",
                            rule.name, rule.why
                        ));
                    }
                }
            }
        }
    }
    assert!(
        seen > 0,
        "no migrations found under {}",
        migrations_dir().display()
    );
    assert!(
        broken.is_empty(),
        "migrations an older host could not run on during a rolling upgrade \
         (docs/operations.md#upgrades):\n{}",
        broken.join("\n")
    );
}

#[test]
fn every_allowed_exception_still_exists() {
    for (dialect, file, rule, _) in ALLOWED {
        let path = migrations_dir().join(dialect).join(file);
        let sql =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let rule = RULES
            .iter()
            .find(|r| r.name == *rule)
            .unwrap_or_else(|| panic!("no rule {rule}"));
        assert!(
            statements(&sql).iter().any(|s| (rule.breaks)(s)),
            "{dialect}/{file} no longer breaks {}: remove it from ALLOWED",
            rule.name
        );
    }
}

#[test]
fn the_rules_catch_what_they_name() {
    let caught = |sql: &str| {
        statements(sql)
            .iter()
            .flat_map(|s| RULES.iter().filter(|r| (r.breaks)(s)).map(|r| r.name))
            .collect::<Vec<_>>()
    };
    assert_eq!(caught("ALTER TABLE t DROP COLUMN c;"), ["drop"]);
    assert_eq!(caught("alter table t\n  rename column a to b;"), ["rename"]);
    assert_eq!(
        caught("ALTER TABLE t ADD COLUMN c TEXT NOT NULL;"),
        ["not null"]
    );
    assert_eq!(
        caught("ALTER TABLE t ALTER COLUMN c SET NOT NULL;"),
        ["not null"]
    );
    assert_eq!(
        caught("ALTER TABLE t ALTER COLUMN c TYPE BIGINT;"),
        ["type change"]
    );
    assert_eq!(
        caught("ALTER TABLE t ALTER COLUMN id DROP IDENTITY;"),
        ["drop default"]
    );
    assert!(
        caught("ALTER TABLE t ADD COLUMN c TEXT NOT NULL DEFAULT ''; -- DROP COLUMN").is_empty()
    );
    assert!(caught("ALTER TABLE t ADD COLUMN c TEXT; CREATE INDEX i ON t (c);").is_empty());
}
