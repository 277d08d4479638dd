//! Resolving settings: defaults, precedence, validation, list forms. The
//! environment's place (between flags and the file) is clap's, and is
//! checked on the binary (`host/tests/cli_help.rs`); every documented key
//! in `documented.rs`.

use clap::{Args, FromArgMatches};

use super::*;

/// The flags of `outcomes serve`, parsed as the binary parses them.
fn flags(args: &[&str]) -> Settings {
    let matches = Settings::augment_args(clap::Command::new("outcomes"))
        .try_get_matches_from(std::iter::once("outcomes").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    Settings::from_arg_matches(&matches).expect("settings")
}

/// Flags and environment with `set` applied to none at all.
fn settings(set: impl FnOnce(&mut Settings)) -> Settings {
    let mut s = Settings::default();
    set(&mut s);
    s
}

#[test]
fn defaults_need_no_configuration() {
    let c = Config::resolve(Settings::default(), FileSettings::default()).expect("valid");
    assert_eq!(c.listen.to_string(), "127.0.0.1:8080");
    assert_eq!(
        c.database_url,
        format!(
            "sqlite://{}",
            PathBuf::from("data").join("outcomes.db").display()
        )
    );
    assert_eq!(c.time_zone, Tz::UTC);
    assert_eq!(c.body_limit, 1 << 20);
    assert_eq!(c.write_queue_timeout, std::time::Duration::from_secs(5));
    let limit = |burst, every| {
        Some(RateLimit {
            burst: std::num::NonZeroU32::new(burst).expect("not zero"),
            every,
        })
    };
    assert_eq!(
        c.anonymous_limit,
        limit(200, std::time::Duration::from_millis(100))
    );
    assert_eq!(
        c.token_limit,
        limit(40_000, std::time::Duration::from_micros(50))
    );
    assert_eq!(
        c.probe_limit,
        limit(100, std::time::Duration::from_millis(100))
    );
    // /metrics apart, on loopback, and not on the main listener.
    assert_eq!(
        c.metrics_listen,
        Some("127.0.0.1:9187".parse().expect("address"))
    );
    assert_eq!(c.metrics_bearer_file, None);
    assert_eq!(c.token_reload_failure_limit, Some(30));
    let never: FileSettings = toml::from_str("token_reload_failure_limit = 0\n").expect("valid");
    let c = Config::resolve(Settings::default(), never).expect("valid");
    assert_eq!(c.token_reload_failure_limit, None);
}

#[test]
fn metrics_listen_takes_an_address_or_off() {
    let off: FileSettings = toml::from_str("metrics_listen = \"off\"\n").expect("valid");
    let c = Config::resolve(Settings::default(), off).expect("valid");
    assert_eq!(c.metrics_listen, None);
    let cli = settings(|s| s.server.metrics_listen = Some("[::1]:9000".parse().expect("valid")));
    let c = Config::resolve(cli, FileSettings::default()).expect("valid");
    assert_eq!(
        c.metrics_listen,
        Some("[::1]:9000".parse().expect("address"))
    );
    assert!(toml::from_str::<FileSettings>("metrics_listen = \"nowhere\"\n").is_err());
}

#[test]
fn rate_limits_turn_off_with_a_rate_of_zero_and_need_a_burst() {
    let file: FileSettings =
        toml::from_str("anonymous_per_second = 0\ntoken_burst = 5\ntoken_per_second = 2\n")
            .expect("valid");
    let c = Config::resolve(Settings::default(), file).expect("valid");
    assert_eq!(c.anonymous_limit, None);
    assert_eq!(
        c.token_limit.map(|l| (l.burst.get(), l.every)),
        Some((5, std::time::Duration::from_millis(500)))
    );
    let cli = settings(|s| s.limits.token_burst = Some(0));
    let err = Config::resolve(cli, FileSettings::default()).expect_err("invalid");
    assert_eq!(err.setting, "token_burst");
    let cli = settings(|s| s.pool.write_queue_timeout = Some(0));
    let err = Config::resolve(cli, FileSettings::default()).expect_err("invalid");
    assert_eq!(err.setting, "write_queue_timeout");
}

#[test]
fn connection_limits_have_safe_defaults_and_refuse_zero() {
    let c = Config::resolve(Settings::default(), FileSettings::default()).expect("valid");
    let secs = std::time::Duration::from_secs;
    assert_eq!(
        c.connections,
        ConnectionLimits {
            header_read: secs(10),
            request_body: secs(30),
            keep_alive: secs(5),
            tls_handshake: secs(10),
            max_open: 512,
            per_client: 256,
        }
    );
    let file: FileSettings = toml::from_str(
        "keep_alive_timeout = 2\nconnection_limit = 3\nconnection_limit_per_client = 2\n",
    )
    .expect("valid");
    let c = Config::resolve(Settings::default(), file).expect("valid");
    assert_eq!(c.connections.keep_alive, secs(2));
    assert_eq!(c.connections.max_open, 3);
    assert_eq!(c.connections.per_client, 2);
    for (cli, setting) in [
        (
            settings(|s| s.server.header_read_timeout = Some(0)),
            "header_read_timeout",
        ),
        (
            settings(|s| s.server.request_body_timeout = Some(3601)),
            "request_body_timeout",
        ),
        (
            settings(|s| s.server.keep_alive_timeout = Some(0)),
            "keep_alive_timeout",
        ),
        (
            settings(|s| s.server.tls_handshake_timeout = Some(0)),
            "tls_handshake_timeout",
        ),
        (
            settings(|s| s.server.connection_limit = Some(0)),
            "connection_limit",
        ),
        (
            settings(|s| s.server.connection_limit_per_client = Some(0)),
            "connection_limit_per_client",
        ),
    ] {
        let err = Config::resolve(cli, FileSettings::default()).expect_err("invalid");
        assert_eq!(err.setting, setting);
    }
}

#[test]
fn flags_and_environment_win_over_the_file() {
    let file: FileSettings =
        toml::from_str("time_zone = \"Europe/Amsterdam\"\nbody_limit = 4096\n").expect("valid");
    let cli = settings(|s| s.server.body_limit = Some(8192));
    let c = Config::resolve(cli, file).expect("valid");
    assert_eq!(c.time_zone, Tz::Europe__Amsterdam);
    assert_eq!(c.body_limit, 8192);
}

#[test]
fn a_flag_wins_over_the_file_and_the_file_over_the_default() {
    let file: FileSettings = toml::from_str(
        "body_limit = 4096\n\
         keep_alive_timeout = 2\n\
         trusted_proxies = [\"10.0.0.2\", \"10.0.0.3\"]\n\
         data_dir = \"/srv/file\"\n\
         log_format = \"json\"\n",
    )
    .expect("valid");
    let cli = flags(&[
        "--body-limit",
        "8192",
        "--trusted-proxies",
        "192.0.2.1",
        "--data-dir",
        "/srv/flag",
        "--log-format",
        "human",
    ]);
    let c = Config::resolve(cli, file).expect("valid");
    assert_eq!(c.body_limit, 8192);
    assert_eq!(c.trusted_proxies.len(), 1);
    assert_eq!(c.data_dir, PathBuf::from("/srv/flag"));
    assert_eq!(c.log_format, LogFormat::Human);
    // A default made from another setting follows where that came from.
    assert_eq!(c.secrets_key_file, PathBuf::from("/srv/flag/secrets.key"));
    // Not given as a flag: the file's; in neither: the default.
    assert_eq!(c.connections.keep_alive, Duration::from_secs(2));
    assert_eq!(c.connections.header_read, Duration::from_secs(10));
    // No flags at all: every value the file has.
    let file: FileSettings =
        toml::from_str("body_limit = 4096\ndata_dir = \"/srv/file\"\n").expect("valid");
    let c = Config::resolve(flags(&[]), file).expect("valid");
    assert_eq!(c.body_limit, 4096);
    assert_eq!(c.secrets_key_file, PathBuf::from("/srv/file/secrets.key"));
}

#[test]
fn every_default_of_the_table_parses_resolves_and_is_named_in_its_help() {
    let values = Values::merge(Settings::default(), FileSettings::default());
    assert_eq!(values.listen.to_string(), "127.0.0.1:8080");
    assert!(values.trusted_proxies.items().is_empty());
    for setting in SETTINGS {
        if let Some(default) = setting.default {
            let help = setting.help_text();
            let (_, shown) = help
                .rsplit_once(" [default: ")
                .unwrap_or_else(|| panic!("{}: no default in {help:?}", setting.key));
            assert!(
                shown.contains(default),
                "{}: --help shows {shown:?} for the default {default:?}",
                setting.key
            );
        }
    }
    Config::resolve(Settings::default(), FileSettings::default()).expect("the defaults resolve");
}

#[test]
fn the_plugin_allow_list_comes_from_a_list_or_an_array() {
    let a = "AB".repeat(32);
    let b = "cd".repeat(32);
    let cli = settings(|s| s.plugins.plugin_allow = Some(format!("{a}, {b},").as_str().into()));
    let c = Config::resolve(cli, FileSettings::default()).expect("valid");
    assert_eq!(c.plugins.allow, [a.to_ascii_lowercase(), b.clone()]);
    let file: FileSettings = toml::from_str(&format!("plugin_allow = [\"{b}\"]\n")).expect("valid");
    let c = Config::resolve(Settings::default(), file).expect("valid");
    assert_eq!(c.plugins.allow, [b]);
    assert!(
        Config::resolve(Settings::default(), FileSettings::default())
            .expect("valid")
            .plugins
            .allow
            .is_empty()
    );
    let cli = settings(|s| s.plugins.plugin_allow = Some("phq9".into()));
    let err = Config::resolve(cli, FileSettings::default()).expect_err("invalid");
    assert_eq!(err.setting, "plugin_allow");
}

#[test]
fn bad_settings_are_named() {
    let cli = settings(|s| s.time.time_zone = Some("Mars/Olympus".into()));
    let err = Config::resolve(cli, FileSettings::default()).expect_err("invalid");
    assert_eq!(err.setting, "time_zone");
    let cli = settings(|s| s.storage.database_url = Some("mysql://x".into()));
    assert_eq!(
        Config::resolve(cli, FileSettings::default())
            .expect_err("invalid")
            .setting,
        "database_url"
    );
    assert!(toml::from_str::<FileSettings>("listen_port = 1").is_err());
    for (cli, setting) in [
        (
            settings(|s| s.fill_out.public_url = Some("https://rom.example.org/path".into())),
            "public_url",
        ),
        (
            settings(|s| s.fill_out.public_url = Some("http://rom.example.org".into())),
            "public_url",
        ),
        (
            settings(|s| s.fill_out.fill_out_secret = Some("short".into())),
            "fill_out_secret",
        ),
        (
            settings(|s| s.alarms.alarm_webhook_url = Some("http://alarms.example.org/x".into())),
            "alarm_webhook_url",
        ),
        (
            settings(|s| s.alarms.alarm_webhook_url = Some("https://user:pw@example.org/".into())),
            "alarm_webhook_url",
        ),
        (
            settings(|s| s.fill_out.fill_out_link_ttl = Some(0)),
            "fill_out_link_ttl",
        ),
        (
            settings(|s| s.fill_out.completing_url_ttl = Some(60)),
            "completing_url_ttl",
        ),
        (
            settings(|s| {
                s.fill_out.fill_out_secret = Some("a secret long enough to be accepted!".into());
                s.fill_out.fill_out_secret_file = Some("secret.txt".into());
            }),
            "fill_out_secret_file",
        ),
    ] {
        let err = Config::resolve(cli, FileSettings::default()).expect_err("invalid");
        assert_eq!(err.setting, setting);
    }
    let c = Config::resolve(
        settings(|s| s.fill_out.public_url = Some("https://ROM.example.org/".into())),
        FileSettings::default(),
    )
    .expect("valid");
    assert_eq!(c.public_url.as_deref(), Some("https://rom.example.org"));
}

#[test]
fn list_settings_take_an_array_or_a_comma_separated_string_in_the_file() {
    let arrays: FileSettings = toml::from_str(
        "trusted_proxies = [\"10.0.0.2\", \"10.1.0.0/16\"]\n\
         allowed_origins = [\"https://epd.example.org\", \"https://EPD2.example.org:8443/\"]\n\
         callback_allowed_networks = [\"10.20.0.0/16\"]\n",
    )
    .expect("valid");
    let strings: FileSettings = toml::from_str(
        "trusted_proxies = \"10.0.0.2, 10.1.0.0/16\"\n\
         allowed_origins = \"https://epd.example.org,https://EPD2.example.org:8443/\"\n\
         callback_allowed_networks = \"10.20.0.0/16\"\n",
    )
    .expect("valid");
    for file in [arrays, strings] {
        let c = Config::resolve(Settings::default(), file).expect("valid");
        let nets = |list: &[ipnet::IpNet]| list.iter().map(ToString::to_string).collect::<Vec<_>>();
        assert_eq!(nets(&c.trusted_proxies), ["10.0.0.2/32", "10.1.0.0/16"]);
        assert_eq!(
            c.allowed_origins,
            ["https://epd.example.org", "https://epd2.example.org:8443"]
        );
        assert_eq!(nets(&c.callback_allowed_networks), ["10.20.0.0/16"]);
    }
    // A flag or environment variable (comma-separated) replaces the file's
    // whole list.
    let file: FileSettings =
        toml::from_str("trusted_proxies = [\"10.0.0.2\", \"10.0.0.3\"]\n").expect("valid");
    let c = Config::resolve(
        settings(|s| s.server.trusted_proxies = Some("192.0.2.1".into())),
        file,
    )
    .expect("valid");
    assert_eq!(c.trusted_proxies.len(), 1);
    // A bad entry in an array is named like one in a string.
    let file: FileSettings =
        toml::from_str("trusted_proxies = [\"10.0.0.2\", \"proxy.example.org\"]\n")
            .expect("valid TOML");
    let err = Config::resolve(Settings::default(), file).expect_err("invalid");
    assert_eq!(err.setting, "trusted_proxies");
    assert!(toml::from_str::<FileSettings>("allowed_origins = 443\n").is_err());
}

#[test]
fn the_plugin_allow_list_also_takes_a_string_in_the_file() {
    let a = "ab".repeat(32);
    let b = "cd".repeat(32);
    let file: FileSettings =
        toml::from_str(&format!("plugin_allow = \"{a},{b}\"\n")).expect("valid");
    let c = Config::resolve(Settings::default(), file).expect("valid");
    assert_eq!(c.plugins.allow, [a, b]);
}

/// The example configuration the install guide copies to
/// /etc/outcomes/outcomes.toml (docs/operations.md#install).
const EXAMPLE: &str = include_str!("../../../deploy/outcomes.toml");

#[test]
fn the_example_configuration_is_valid_as_shipped_behind_a_proxy_and_serving_tls() {
    let file: FileSettings = toml::from_str(EXAMPLE).expect("deploy/outcomes.toml");
    let c = Config::resolve(Settings::default(), file).expect("valid");
    assert_eq!(c.data_dir, PathBuf::from("/var/lib/outcomes"));
    assert!(c.database_url.starts_with("sqlite:///var/lib/outcomes/"));
    // As shipped: behind a proxy, on a private address, /metrics apart.
    assert!(c.tls.is_none());
    assert_eq!(c.listen.to_string(), "10.0.0.5:8080");
    assert_eq!(c.trusted_proxies.len(), 1);
    assert_eq!(c.trusted_proxies.header, ProxyHeader::XForwardedFor);
    assert!(c.metrics_listen.is_some_and(|a| a.ip().is_loopback()));
    assert!(
        crate::auth::forwarded::unsafe_settings(c.listen, false, &c.trusted_proxies).is_empty()
    );
    assert_eq!(c.public_url.as_deref(), Some("https://rom.example.org"));
    assert_eq!(c.allowed_origins, ["https://epd.example.org"]);
    // The TLS variant: the proxy lines out, the commented lines in.
    let uncomment = |l: &str| {
        ["listen =", "tls_cert =", "tls_key =", "database_url ="]
            .iter()
            .find_map(|key| l.strip_prefix("# ").filter(|rest| rest.starts_with(key)))
            .map(str::to_owned)
    };
    let tls: String = EXAMPLE
        .lines()
        .filter(|l| !l.starts_with("listen =") && !l.starts_with("trusted_proxies ="))
        .map(|l| uncomment(l).unwrap_or_else(|| l.to_owned()))
        .collect::<Vec<_>>()
        .join("\n");
    let file: FileSettings = toml::from_str(&tls).expect("the TLS variant");
    let c = Config::resolve(Settings::default(), file).expect("valid");
    assert!(c.tls.is_some());
    assert_eq!(c.listen.to_string(), "0.0.0.0:8443");
    assert!(c.trusted_proxies.is_empty());
    assert!(c.database_url.starts_with("postgres://"));
}
