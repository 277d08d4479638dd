//! The `outcomes` binary's `--help`: each command lists the settings it
//! uses and no others (`host/src/config/commands.rs`), and `serve` still
//! lists every setting under its old flag and environment variable. And
//! where a setting's value comes from: flag, environment, file, in that
//! order.

use std::process::Command;

/// Every setting: its flag and environment variable, unchanged since
/// before the settings were grouped (operators' scripts and unit files
/// name them).
const SETTINGS: [&str; 40] = [
    "listen",
    "data-dir",
    "database-url",
    "questionnaires-dir",
    "plugins-dir",
    "plugin-cache-dir",
    "plugin-cache-key-file",
    "plugin-allow",
    "watch",
    "protocols-dir",
    "translations-dir",
    "time-zone",
    "body-limit",
    "max-connections",
    "write-queue-timeout",
    "anonymous-burst",
    "anonymous-per-second",
    "token-burst",
    "token-per-second",
    "trusted-proxies",
    "header-read-timeout",
    "request-body-timeout",
    "keep-alive-timeout",
    "tls-handshake-timeout",
    "connection-limit",
    "allowed-origins",
    "callback-allowed-networks",
    "public-url",
    "fill-out-secret",
    "fill-out-link-ttl",
    "completing-url-ttl",
    "fill-out-secret-file",
    "secrets-key-file",
    "tls-cert",
    "tls-key",
    "scheduler-interval",
    "token-reload-failure-limit",
    "log-format",
    "log",
    "config",
];

/// `outcomes ARGS --help`, every run of white space as one space (clap
/// wraps long lines, also inside `[env: NAME]`).
fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_outcomes"))
        .args(args)
        .arg("--help")
        .env_clear()
        .output()
        .expect("the binary runs");
    assert!(out.status.success(), "{args:?} --help: {out:?}");
    String::from_utf8(out.stdout)
        .expect("UTF-8 help")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether `help` offers `--name` (as a whole flag, not a prefix of a
/// longer one) and its environment variable.
fn offers(help: &str, name: &str) -> bool {
    let env = format!("OUTCOMES_{}", name.replace('-', "_").to_ascii_uppercase());
    let flag = format!("--{name} ");
    help.contains(&flag) && help.contains(&format!("[env: {env}"))
}

#[test]
fn serve_lists_every_setting_with_its_flag_and_environment_variable() {
    let serve = help(&["serve"]);
    for name in SETTINGS {
        assert!(
            offers(&serve, name),
            "serve --help lacks --{name}:\n{serve}"
        );
    }
}

#[test]
fn serve_lists_every_declared_setting_but_those_only_in_the_file() {
    let serve = help(&["serve"]);
    for setting in host::config::SETTINGS {
        let listed = offers(&serve, &setting.flag());
        assert_eq!(
            listed,
            setting.heading.is_some(),
            "serve --help and --{}:\n{serve}",
            setting.flag()
        );
    }
}

#[test]
fn token_revoke_lists_only_the_database_logging_time_and_secrets_settings() {
    let revoke = help(&["token", "revoke"]);
    for name in [
        "database-url",
        "data-dir",
        "log",
        "log-format",
        "time-zone",
        "secrets-key-file",
        "config",
    ] {
        assert!(
            offers(&revoke, name),
            "token revoke lacks --{name}:\n{revoke}"
        );
    }
    for name in [
        "listen",
        "tls-cert",
        "trusted-proxies",
        "plugins-dir",
        "fill-out-secret",
        "scheduler-interval",
        "token-burst",
        "max-connections",
    ] {
        assert!(
            !revoke.contains(&format!("--{name}")),
            "token revoke --help lists --{name}:\n{revoke}"
        );
    }
}

#[test]
fn each_command_lists_the_groups_it_uses() {
    // (command, a flag it must list, a flag it must not)
    for (args, has, lacks) in [
        (&["migrate"][..], "database-url", "listen"),
        (&["migrate"], "log-format", "plugins-dir"),
        (&["respondent", "revoke-links"], "database-url", "time-zone"),
        (&["access-log"], "time-zone", "secrets-key-file"),
        (&["access-log", "verify"], "database-url", "listen"),
        (&["plugin", "test"], "plugin-allow", "listen"),
        (&["plugin", "list"], "plugins-dir", "plugin-cache-dir"),
        // Candidate versions are kept in the database.
        (&["plugin", "candidate"], "database-url", "listen"),
        // ... sealed with the service's secrets key.
        (
            &["plugin", "candidate"],
            "secrets-key-file",
            "plugin-cache-dir",
        ),
        (&["plugin", "promote"], "secrets-key-file", "listen"),
        (&["rescore"], "plugin-cache-dir", "listen"),
        (&["rescore"], "questionnaires-dir", "fill-out-secret"),
        // Re-scoring opens and closes alarms by their settings.
        (&["rescore"], "alarm-deadline", "listen"),
        (&["verify"], "plugin-cache-dir", "listen"),
        // The import scores as the service does, a promoted candidate too.
        (&["import"], "secrets-key-file", "listen"),
        (&["import"], "plugins-dir", "body-limit"),
        (&["report", "episode_outcome"], "plugin-cache-dir", "listen"),
        (
            &["report", "episode_outcome"],
            "questionnaires-dir",
            "fill-out-secret",
        ),
        (&["backup"], "database-url", "plugins-dir"),
        (&["restore"], "database-url", "listen"),
        (&["migrate", "--check"], "database-url", "metrics-listen"),
        (&["serve"], "metrics-listen", "no-such-setting"),
        (&["serve"], "database-acquire-timeout", "no-such-setting"),
    ] {
        let text = help(args);
        assert!(offers(&text, has), "{args:?} lacks --{has}:\n{text}");
        assert!(
            !text.contains(&format!("--{lacks} ")),
            "{args:?} lists --{lacks}:\n{text}"
        );
    }
}

#[test]
fn a_setting_follows_a_nested_command_on_either_side() {
    // Both orders parse (the database is never reached: a bad URL scheme
    // is refused while the configuration is resolved).
    for args in [
        &["token", "--database-url", "mysql://x", "list"][..],
        &["token", "list", "--database-url", "mysql://x"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_outcomes"))
            .args(args)
            .env_clear()
            .output()
            .expect("the binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            stderr.contains("database_url: must start with sqlite:// or postgres://"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn a_flag_wins_over_the_environment_and_the_environment_over_the_file() {
    // The database URL names where it came from; its scheme is refused
    // before anything is opened, with the value in the message.
    let dir = tempfile::tempdir().expect("a temporary folder");
    let file = dir.path().join("outcomes.toml");
    std::fs::write(&file, "database_url = \"mysql://file\"\n").expect("the file is written");
    let config = file.to_str().expect("a UTF-8 path");
    for (flag, env, winner) in [
        (Some("mysql://flag"), Some("mysql://env"), "mysql://flag"),
        (None, Some("mysql://env"), "mysql://env"),
        (None, None, "mysql://file"),
    ] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_outcomes"));
        command
            .args(["migrate", "--check", "--config", config])
            .env_clear()
            .current_dir(dir.path());
        if let Some(flag) = flag {
            command.args(["--database-url", flag]);
        }
        if let Some(env) = env {
            command.env("OUTCOMES_DATABASE_URL", env);
        }
        let out = command.output().expect("the binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            stderr.contains(&format!(
                "database_url: must start with sqlite:// or postgres://, got \"{winner}\""
            )),
            "flag {flag:?}, environment {env:?}: {stderr}"
        );
    }
}
