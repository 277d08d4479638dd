//! The settings as documented: docs/operations.md#settings (a table per
//! `--help` heading: key, default, example) and the example file
//! deploy/outcomes.toml. Every key either names is read from the file and
//! arrives in the resolved [`Config`] with the value given, and also from
//! its flag; every declared setting has its row, under its heading, with
//! the default `--help` shows. The keys come from the documents, never
//! from a list kept here: [`arrived`] only says where each lands.

use clap::{Args, FromArgMatches};

use super::*;

const OPERATIONS: &str = include_str!("../../../docs/operations.md");
const EXAMPLE_FILE: &str = include_str!("../../../deploy/outcomes.toml");

/// One row of a settings table.
#[derive(Debug)]
struct Row {
    heading: String,
    key: String,
    default: String,
    /// The example value, as TOML.
    example: String,
}

/// The rows of docs/operations.md#settings, from `## Settings` to the next
/// section.
fn documented_rows() -> Vec<Row> {
    let section = OPERATIONS
        .split("\n## ")
        .find(|s| s.starts_with("Settings\n"))
        .expect("docs/operations.md has a section `## Settings`");
    let mut heading = String::new();
    let mut rows = Vec::new();
    for line in section.lines() {
        if let Some(h) = line.strip_prefix("### ") {
            heading = h.trim().to_owned();
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let [_, key, default, example, _what, _] = cells[..] else {
            continue;
        };
        let Some(key) = key.strip_prefix('`').and_then(|k| k.strip_suffix('`')) else {
            continue;
        };
        let example = example
            .strip_prefix('`')
            .and_then(|e| e.strip_suffix('`'))
            .unwrap_or_else(|| panic!("{key}: the example is one code span, as TOML"));
        rows.push(Row {
            heading: heading.clone(),
            key: key.to_owned(),
            default: default.replace('`', ""),
            example: example.to_owned(),
        });
    }
    assert!(rows.len() > 30, "only {} rows read", rows.len());
    rows
}

/// Every `key = value` line of the example file, commented ones included
/// (they show what to uncomment).
fn example_file_lines() -> Vec<(String, String)> {
    let lines: Vec<(String, String)> = EXAMPLE_FILE
        .lines()
        .filter_map(|line| {
            let line = line.strip_prefix("# ").unwrap_or(line);
            let (key, value) = line.split_once(" = ")?;
            key.chars()
                .all(|c| c.is_ascii_lowercase() || c == '_')
                .then(|| (key.to_owned(), value.to_owned()))
        })
        .collect();
    assert!(lines.len() > 5, "only {} lines read", lines.len());
    lines
}

/// A TOML value from its text.
fn toml_value(text: &str) -> toml::Value {
    let mut table: toml::Table =
        toml::from_str(&format!("v = {text}")).unwrap_or_else(|e| panic!("{text}: {e}"));
    table.remove("v").expect("the value")
}

/// Where a setting's value arrives in the configuration, written as TOML
/// (seconds as a number, addresses as text): the one place this test
/// names settings, and each must say where it lands.
fn arrived(c: &Config, key: &str) -> String {
    let text = |t: &dyn std::fmt::Display| format!("{:?}", t.to_string());
    let path = |p: &std::path::Path| text(&p.display());
    let array = |items: Vec<String>| format!("[{}]", items.join(", "));
    let nets = |list: &[ipnet::IpNet]| {
        array(
            list.iter()
                .map(|n| {
                    if n.prefix_len() == n.max_prefix_len() {
                        text(&n.addr())
                    } else {
                        text(n)
                    }
                })
                .collect(),
        )
    };
    let secs = |d: Duration| d.as_secs().to_string();
    let per_second = |l: &Option<RateLimit>| {
        l.map_or(0, |l| {
            Duration::from_secs(1).as_nanos() / l.every.as_nanos()
        })
        .to_string()
    };
    let per_minute = |l: &Option<RateLimit>| {
        l.map_or(0, |l| {
            Duration::from_secs(60).as_nanos() / l.every.as_nanos()
        })
        .to_string()
    };
    let burst = |l: &Option<RateLimit>| l.map_or(0, |l| l.burst.get()).to_string();
    let none = || "\"(none)\"".to_owned();
    match key {
        "data_dir" => path(&c.data_dir),
        "database_url" => text(&c.database_url),
        "log_format" => text(&format!("{:?}", c.log_format).to_lowercase()),
        "log" => text(&c.log),
        "time_zone" => text(&c.time_zone.name()),
        "secrets_key_file" => path(&c.secrets_key_file),
        "questionnaires_dir" => path(&c.questionnaires_dir),
        "protocols_dir" => path(&c.protocols_dir),
        "translations_dir" => c.translations_dir.as_deref().map_or_else(none, path),
        "plugins_dir" => path(&c.plugins.dir),
        "plugin_allow" => array(c.plugins.allow.iter().map(|h| text(h)).collect()),
        "plugin_cache_dir" => c.plugins.cache_dir.as_deref().map_or_else(none, path),
        "plugin_cache_key_file" => path(&c.plugins.cache_key_file),
        "listen" => text(&c.listen),
        "tls_cert" => c.tls.as_ref().map_or_else(none, |t| path(&t.cert)),
        "tls_key" => c.tls.as_ref().map_or_else(none, |t| path(&t.key)),
        "trusted_proxies" => nets(&c.trusted_proxies),
        "proxy_header" => text(
            &clap::ValueEnum::to_possible_value(&c.trusted_proxies.header)
                .map(|v| v.get_name().to_owned())
                .unwrap_or_default(),
        ),
        "body_limit" => c.body_limit.to_string(),
        "header_read_timeout" => secs(c.connections.header_read),
        "request_body_timeout" => secs(c.connections.request_body),
        "keep_alive_timeout" => secs(c.connections.keep_alive),
        "tls_handshake_timeout" => secs(c.connections.tls_handshake),
        "connection_limit" => c.connections.max_open.to_string(),
        "connection_limit_per_client" => c.connections.per_client.to_string(),
        "watch" => c.watch.to_string(),
        "metrics_listen" => c.metrics_listen.map_or_else(|| text(&"off"), |a| text(&a)),
        "metrics_bearer_file" => c.metrics_bearer_file.as_deref().map_or_else(none, path),
        "max_connections" => c.max_connections.to_string(),
        "write_queue_timeout" => secs(c.write_queue_timeout),
        "database_acquire_timeout" => secs(c.database_acquire_timeout),
        "anonymous_burst" => burst(&c.anonymous_limit),
        "anonymous_per_second" => per_second(&c.anonymous_limit),
        "token_burst" => burst(&c.token_limit),
        "token_per_second" => per_second(&c.token_limit),
        "probe_burst" => burst(&c.probe_limit),
        "probe_per_second" => per_second(&c.probe_limit),
        "link_burst" => burst(&c.respondent_limits.link),
        "link_per_minute" => per_minute(&c.respondent_limits.link),
        "session_burst" => burst(&c.respondent_limits.session),
        "session_per_minute" => per_minute(&c.respondent_limits.session),
        "token_reload_failure_limit" => c.token_reload_failure_limit.unwrap_or(0).to_string(),
        "public_url" => c.public_url.as_ref().map_or_else(none, |u| text(u)),
        "allowed_origins" => array(c.allowed_origins.iter().map(|o| text(o)).collect()),
        "fill_out_secret" => match &c.fill_out_secret {
            Some(SecretSource::Text(secret)) => text(secret),
            _ => none(),
        },
        "fill_out_secret_file" => match &c.fill_out_secret {
            Some(SecretSource::File(file)) => path(file),
            _ => none(),
        },
        "fill_out_link_ttl" => secs(c.fill_out_link_ttl),
        "completing_url_ttl" => secs(c.completing_url_ttl),
        "fill_out_session_retention" => secs(c.fill_out_session_retention),
        "scheduler_interval" => c.scheduler_interval.map_or(0, |d| d.as_secs()).to_string(),
        "callback_allowed_networks" => nets(&c.callback_allowed_networks),
        "alarm_deadline" => c.alarms.alarm_deadline.to_string(),
        "alarm_webhook_url" => c.alarms.webhook_url.as_ref().map_or_else(none, |u| text(u)),
        "alarm_rules" => {
            let rules: Vec<String> = c
                .alarms
                .questionnaires
                .iter()
                .map(|(key, q)| {
                    let mut fields = Vec::new();
                    if let Some(s) = q.alarm_deadline {
                        fields.push(format!("alarm_deadline = {s}"));
                    }
                    if let Some(s) = q.attention_deadline {
                        fields.push(format!("attention_deadline = {s}"));
                    }
                    format!("{key} = {{ {} }}", fields.join(", "))
                })
                .collect();
            format!("{{ {} }}", rules.join(", "))
        }
        "plugin_limits" => {
            let fuel = |o: &crate::plugins::LimitOverride| {
                o.fuel.map_or_else(String::new, |f| format!("fuel = {f}"))
            };
            let l = &c.plugins.limits;
            let mut kinds = Vec::new();
            for (kind, o) in [("scorer", &l.scorer), ("calculator", &l.calculator)] {
                if o != &Default::default() {
                    kinds.push(format!("{kind} = {{ {} }}", fuel(o)));
                }
            }
            format!("{{ {} }}", kinds.join(", "))
        }
        other => panic!("{other}: say in `arrived` where this setting lands in Config"),
    }
}

/// What a setting needs beside it in the file to be valid.
fn partner(key: &str) -> &'static str {
    match key {
        "tls_cert" => "tls_key = \"/etc/outcomes/tls/key.pem\"\n",
        "tls_key" => "tls_cert = \"/etc/outcomes/tls/cert.pem\"\n",
        _ => "",
    }
}

/// The value as a flag or environment variable gives it: text without
/// quotes, a list comma-separated.
fn flag_text(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        toml::Value::Array(items) => items.iter().map(flag_text).collect::<Vec<_>>().join(","),
        toml::Value::Integer(n) => n.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        other => panic!("{other:?}: no flag takes this"),
    }
}

/// Checks that `key = value` is read from the file, and `--key value`
/// from the command line, and that both arrive in the configuration as
/// given.
fn check_arrives(key: &str, value: &str, source: &str) {
    let given = toml_value(value);
    let file: FileSettings = toml::from_str(&format!("{key} = {value}\n{}", partner(key)))
        .unwrap_or_else(|e| panic!("{source}: the file reader refuses {key} = {value}: {e}"));
    let c = Config::resolve(Settings::default(), file)
        .unwrap_or_else(|e| panic!("{source}: {key} = {value}: {e}"));
    assert_eq!(
        toml_value(&arrived(&c, key)),
        given,
        "{source}: {key} = {value} from the file"
    );
    let default = Config::resolve(Settings::default(), FileSettings::default()).expect("valid");
    assert_ne!(
        toml_value(&arrived(&default, key)),
        given,
        "{source}: {key}'s example is its default, so it shows nothing"
    );
    let Some(setting) = SETTINGS
        .iter()
        .find(|s| s.key == key && s.heading.is_some())
    else {
        return;
    };
    let args = [
        "outcomes".to_owned(),
        format!("--{}", setting.flag()),
        flag_text(&given),
    ];
    let matches = Settings::augment_args(clap::Command::new("outcomes"))
        .try_get_matches_from(&args)
        .unwrap_or_else(|e| panic!("{source}: {args:?}: {e}"));
    let cli = Settings::from_arg_matches(&matches).expect("settings");
    let file = toml::from_str(partner(key)).expect("valid");
    let c = Config::resolve(cli, file).unwrap_or_else(|e| panic!("{source}: {args:?}: {e}"));
    assert_eq!(toml_value(&arrived(&c, key)), given, "{source}: {args:?}");
}

#[test]
fn every_declared_setting_is_documented_under_its_heading_with_its_default() {
    let rows = documented_rows();
    for setting in SETTINGS {
        let row = rows
            .iter()
            .find(|r| r.key == setting.key)
            .unwrap_or_else(|| panic!("{}: not in docs/operations.md#settings", setting.key));
        assert_eq!(
            row.heading,
            setting.heading.unwrap_or("Only in the file"),
            "{}: documented under another heading than --help's",
            setting.key
        );
        assert_eq!(
            row.default,
            setting.shown.unwrap_or(""),
            "{}: the documented default is not --help's",
            setting.key
        );
    }
    for row in &rows {
        assert_eq!(
            rows.iter().filter(|r| r.key == row.key).count(),
            1,
            "{} is documented twice",
            row.key
        );
    }
}

#[test]
fn every_documented_key_arrives_from_the_file_and_its_flag_as_given() {
    for row in documented_rows() {
        check_arrives(&row.key, &row.example, "docs/operations.md#settings");
    }
}

#[test]
fn every_key_of_the_example_file_arrives_as_given() {
    for (key, value) in example_file_lines() {
        check_arrives(&key, &value, "deploy/outcomes.toml");
    }
}
