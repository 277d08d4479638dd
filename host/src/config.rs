//! Typed configuration. Each setting comes from, in order of precedence, a
//! command-line flag, an `OUTCOMES_*` environment variable, the TOML file
//! named by `--config`, or its default. Reading the file is the caller's
//! job; here the sources are merged and checked, without I/O.
//!
//! A setting is declared once, as a row of the table in `config/groups.rs`
//! (key, type, default, help, in the `--help` group of the commands that
//! use it); `config/declare.rs` makes the flag, the environment variable,
//! the file key and the merged [`Values`] from it, and [`Config::resolve`]
//! checks the values and builds the typed [`Config`]. To add a setting:
//!
//! 1. a row in `config/groups.rs`, in the group of the commands that use it
//!    (a new group also goes into their bundles, `config/commands.rs`);
//! 2. its use in [`Config::resolve`], which takes every value apart by
//!    name (the compiler asks for a new one), and a field of [`Config`] if
//!    the rest of the service reads it;
//! 3. a row in docs/operations.md#settings (`config/documented.rs` checks
//!    that every setting is there and every row's example arrives).

mod commands;
mod declare;
mod groups;
mod list;

use std::net::SocketAddr;
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::time::Duration;

use chrono_tz::Tz;
use serde::Deserialize;

use crate::domain::alarm::AlarmPolicy;
use crate::plugins::PluginSettings;

pub use crate::auth::forwarded::{ProxyHeader, TrustedProxies};
pub use crate::auth::limits::{RateLimit, RespondentLimits};
pub use commands::{
    AccessLogSettings, ImportSettings, PluginToolSettings, RescoreSettings, StoreSettings,
    TokenSettings,
};
pub use declare::Setting;
pub use groups::{
    AlarmArgs, DefinitionArgs, FileSettings, FillOutArgs, LimitArgs, LogArgs, PluginArgs,
    PluginCacheArgs, PoolArgs, SETTINGS, SchedulerArgs, SecretsArgs, ServerArgs, Settings,
    StorageArgs, TimeZoneArgs, Values,
};
pub use list::List;

pub use crate::auth::link_secret::SecretSource;

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Human,
    Json,
}

/// As a flag gives it (and the table's default).
impl std::str::FromStr for LogFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<LogFormat, String> {
        <LogFormat as clap::ValueEnum>::from_str(text, false)
    }
}

/// Where the listener of /metrics alone is bound (`metrics_listen`): an
/// address, or none (`off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct MetricsListen(pub Option<SocketAddr>);

/// As a flag gives it (and the table's default): `off`, or an address
/// and port.
impl std::str::FromStr for MetricsListen {
    type Err = String;

    fn from_str(text: &str) -> Result<MetricsListen, String> {
        if text.trim().eq_ignore_ascii_case("off") {
            return Ok(MetricsListen(None));
        }
        text.trim()
            .parse()
            .map(|addr| MetricsListen(Some(addr)))
            .map_err(|_| {
                format!("{text:?} is neither an address and port such as 127.0.0.1:9187 nor `off`")
            })
    }
}

impl TryFrom<String> for MetricsListen {
    type Error = String;

    fn try_from(text: String) -> Result<MetricsListen, String> {
        text.parse()
    }
}

/// The resolved configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Which stored outcomes raise alarms, and their deadlines
    /// (`alarm_deadline`, `alarm_rules`).
    pub alarms: AlarmPolicy,
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub database_url: String,
    pub questionnaires_dir: PathBuf,
    pub protocols_dir: PathBuf,
    /// Translation overlays kept outside the definitions' folders.
    pub translations_dir: Option<PathBuf>,
    pub plugins: PluginSettings,
    /// Reload plugins and definitions when their files change.
    pub watch: bool,
    pub time_zone: Tz,
    pub body_limit: usize,
    pub max_connections: u32,
    /// How long a write may wait for room in the writer's queue (then 503).
    pub write_queue_timeout: Duration,
    /// Requests without valid credentials per client address; None: no
    /// limit.
    pub anonymous_limit: Option<RateLimit>,
    /// Requests per API token; None: no limit.
    pub token_limit: Option<RateLimit>,
    /// Requests to the probes (/health, /livez, /readyz, /version) per
    /// client address; None: no limit.
    pub probe_limit: Option<RateLimit>,
    /// Opens per respondent's link and requests per fill-out session.
    pub respondent_limits: RespondentLimits,
    pub log_format: LogFormat,
    pub log: String,
    /// Proxies whose forwarding header is believed and that may terminate
    /// TLS, and which header that is.
    pub trusted_proxies: TrustedProxies,
    /// Timeouts and the cap on open connections of the listener.
    pub connections: ConnectionLimits,
    /// Origins allowed for every token.
    pub allowed_origins: Vec<String>,
    /// Non-public networks callbacks may go to.
    pub callback_allowed_networks: Vec<ipnet::IpNet>,
    /// The origin respondents reach the service at; None: the listen
    /// address, known once bound.
    pub public_url: Option<String>,
    /// Where the secret of fill-out links comes from.
    pub fill_out_secret: Option<SecretSource>,
    /// How long a fill_out_url can be used after it was made.
    pub fill_out_link_ttl: Duration,
    /// How long a completing_url works after it was handed out.
    pub completing_url_ttl: Duration,
    /// How long a fill-out session is kept once over.
    pub fill_out_session_retention: Duration,
    /// The key that encrypts secrets kept in the database.
    pub secrets_key_file: PathBuf,
    /// Certificate chain and key for serving HTTPS.
    pub tls: Option<TlsFiles>,
    /// Time between scheduler passes; None: no scheduler in this process.
    pub scheduler_interval: Option<Duration>,
    /// Failed token reloads in a row after which every credential is
    /// refused; None: never.
    pub token_reload_failure_limit: Option<u32>,
    // (#19 metrics)
    /// Where /metrics is served alone, without credentials; None: nowhere
    /// apart.
    pub metrics_listen: Option<SocketAddr>,
    /// The file of the bearer secret with which the main listener serves
    /// /metrics; None: it does not.
    pub metrics_bearer_file: Option<PathBuf>,
    // (#20 multihost)
    /// How long a request waits for a database connection (then 503).
    pub database_acquire_timeout: Duration,
}

/// Where the TLS certificate chain and key are.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// What the listener allows a client connection (docs/operations.md#connections).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// From the connection's start or the previous answer to the end of a
    /// request's headers.
    pub header_read: Duration,
    /// From the end of a request's headers to the end of its body.
    pub request_body: Duration,
    /// Without a request, after the connection opened or its last answer.
    pub keep_alive: Duration,
    /// From accepting the connection to the end of the TLS handshake.
    pub tls_handshake: Duration,
    /// Connections open at once.
    pub max_open: usize,
    /// Connections one client (IPv4 address, IPv6 /64) may hold at once;
    /// trusted proxies are exempt.
    pub per_client: usize,
}

/// A setting that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{setting}: {problem}")]
pub struct ConfigError {
    pub setting: &'static str,
    pub problem: String,
}

impl ConfigError {
    fn new(setting: &'static str, problem: impl Into<String>) -> ConfigError {
        ConfigError {
            setting,
            problem: problem.into(),
        }
    }
}

impl Config {
    /// Merges flags and environment (`cli`) over the file over the
    /// defaults, then checks each value and builds the configuration.
    pub fn resolve(cli: Settings, file: FileSettings) -> Result<Config, ConfigError> {
        let Values {
            data_dir,
            database_url,
            log_format,
            log,
            time_zone,
            secrets_key_file,
            questionnaires_dir,
            protocols_dir,
            translations_dir,
            plugins_dir,
            plugin_allow,
            plugin_cache_dir,
            plugin_cache_key_file,
            listen,
            tls_cert,
            tls_key,
            trusted_proxies,
            proxy_header,
            body_limit,
            header_read_timeout,
            request_body_timeout,
            keep_alive_timeout,
            tls_handshake_timeout,
            connection_limit,
            connection_limit_per_client,
            watch,
            metrics_listen,
            metrics_bearer_file,
            max_connections,
            write_queue_timeout,
            database_acquire_timeout,
            anonymous_burst,
            anonymous_per_second,
            token_burst,
            token_per_second,
            probe_burst,
            probe_per_second,
            link_burst,
            link_per_minute,
            session_burst,
            session_per_minute,
            token_reload_failure_limit,
            public_url,
            allowed_origins,
            fill_out_secret,
            fill_out_secret_file,
            fill_out_link_ttl,
            completing_url_ttl,
            fill_out_session_retention,
            scheduler_interval,
            callback_allowed_networks,
            alarm_deadline,
            alarm_webhook_url,
            plugin_limits,
            alarm_rules,
        } = Values::merge(cli, file);

        let database_url = database_url
            .unwrap_or_else(|| format!("sqlite://{}", data_dir.join("outcomes.db").display()));
        if crate::store::Backend::of_url(&database_url).is_none() {
            return Err(ConfigError::new(
                "database_url",
                format!(
                    "must start with sqlite:// or postgres://, got {:?}",
                    crate::store::redact(&database_url)
                ),
            ));
        }
        let time_zone = time_zone.parse::<Tz>().map_err(|_| {
            ConfigError::new(
                "time_zone",
                format!("{time_zone:?} is not an IANA time zone name such as Europe/Amsterdam"),
            )
        })?;
        if body_limit < 1024 {
            return Err(ConfigError::new(
                "body_limit",
                format!("{body_limit} bytes is too small (at least 1024)"),
            ));
        }
        at_least_one("max_connections", max_connections.into())?;
        at_least_one("connection_limit", connection_limit as u64)?;
        at_least_one(
            "connection_limit_per_client",
            connection_limit_per_client as u64,
        )?;
        let connections = ConnectionLimits {
            header_read: seconds("header_read_timeout", header_read_timeout, 1..=3600)?,
            request_body: seconds("request_body_timeout", request_body_timeout, 1..=3600)?,
            keep_alive: seconds("keep_alive_timeout", keep_alive_timeout, 1..=3600)?,
            tls_handshake: seconds("tls_handshake_timeout", tls_handshake_timeout, 1..=3600)?,
            max_open: connection_limit,
            per_client: connection_limit_per_client,
        };
        let tls = match (tls_cert, tls_key) {
            (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
            (None, None) => None,
            _ => {
                return Err(ConfigError::new(
                    "tls_cert",
                    "give both tls_cert and tls_key, or neither",
                ));
            }
        };
        let public_url = public_url
            .map(|url| {
                crate::auth::origin::parse(&url).map_err(|problem| {
                    ConfigError::new(
                        "public_url",
                        format!("{problem} (give the origin only: no path, query or user)"),
                    )
                })
            })
            .transpose()?;
        let fill_out_secret = match (fill_out_secret, fill_out_secret_file) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::new(
                    "fill_out_secret_file",
                    "give fill_out_secret or fill_out_secret_file, not both",
                ));
            }
            (Some(text), None) => {
                crate::auth::links::check_link_secret(&text)
                    .map_err(|problem| ConfigError::new("fill_out_secret", problem))?;
                Some(SecretSource::Text(text))
            }
            (None, Some(path)) => Some(SecretSource::File(path)),
            (None, None) => None,
        };
        plugin_limits
            .validate()
            .map_err(|problem| ConfigError::new("plugin_limits", problem))?;
        let webhook_url = alarm_webhook_url
            .filter(|url| !url.trim().is_empty())
            .map(|url| {
                crate::auth::origin::absolute_url(&url)
                    .map(|_| url.clone())
                    .ok_or_else(|| {
                        ConfigError::new(
                            "alarm_webhook_url",
                            format!(
                                "{url:?} is not an https URL (http only for a loopback host) \
                                 without user name or password"
                            ),
                        )
                    })
            })
            .transpose()?;
        let alarms = AlarmPolicy {
            alarm_deadline,
            questionnaires: alarm_rules,
            webhook_url,
        };
        alarms.validate().map_err(|problem| {
            let setting = if problem.starts_with("alarm_rules") {
                "alarm_rules"
            } else {
                "alarm_deadline"
            };
            ConfigError::new(setting, problem)
        })?;
        let plugins = PluginSettings {
            dir: plugins_dir,
            cache_dir: Some(plugin_cache_dir.unwrap_or_else(|| data_dir.join("plugin-cache"))),
            cache_key_file: plugin_cache_key_file
                .unwrap_or_else(|| data_dir.join("plugin-cache.key")),
            allow: module_hashes(plugin_allow.items())
                .map_err(|problem| ConfigError::new("plugin_allow", problem))?,
            limits: plugin_limits,
        };
        let ip_list = |setting, list: List| {
            crate::auth::ip::parse_list(&list.joined())
                .map_err(|problem| ConfigError::new(setting, problem))
        };
        Ok(Config {
            alarms,
            listen,
            secrets_key_file: secrets_key_file.unwrap_or_else(|| data_dir.join("secrets.key")),
            data_dir,
            database_url,
            questionnaires_dir,
            protocols_dir,
            translations_dir,
            plugins,
            watch,
            time_zone,
            body_limit,
            max_connections,
            write_queue_timeout: seconds("write_queue_timeout", write_queue_timeout, 1..=600)?,
            anonymous_limit: RateLimit::per_second(anonymous_burst, anonymous_per_second)
                .map_err(|problem| ConfigError::new("anonymous_burst", problem))?,
            token_limit: RateLimit::per_second(token_burst, token_per_second)
                .map_err(|problem| ConfigError::new("token_burst", problem))?,
            probe_limit: RateLimit::per_second(probe_burst, probe_per_second)
                .map_err(|problem| ConfigError::new("probe_burst", problem))?,
            respondent_limits: RespondentLimits {
                link: RateLimit::per_minute(link_burst, link_per_minute)
                    .map_err(|problem| ConfigError::new("link_burst", problem))?,
                session: RateLimit::per_minute(session_burst, session_per_minute)
                    .map_err(|problem| ConfigError::new("session_burst", problem))?,
            },
            log_format,
            log,
            trusted_proxies: TrustedProxies {
                nets: ip_list("trusted_proxies", trusted_proxies)?,
                header: proxy_header,
            },
            connections,
            allowed_origins: crate::auth::origin::parse_list(&allowed_origins.joined())
                .map_err(|problem| ConfigError::new("allowed_origins", problem))?,
            callback_allowed_networks: ip_list(
                "callback_allowed_networks",
                callback_allowed_networks,
            )?,
            public_url,
            fill_out_secret,
            fill_out_link_ttl: seconds("fill_out_link_ttl", fill_out_link_ttl, 10..=WEEK)?,
            completing_url_ttl: seconds(
                "completing_url_ttl",
                completing_url_ttl,
                HOUR..=366 * DAY,
            )?,
            fill_out_session_retention: seconds(
                "fill_out_session_retention",
                fill_out_session_retention,
                HOUR..=366 * DAY,
            )?,
            tls,
            scheduler_interval: (scheduler_interval > 0)
                .then(|| Duration::from_secs(scheduler_interval)),
            token_reload_failure_limit: (token_reload_failure_limit > 0)
                .then_some(token_reload_failure_limit),
            metrics_listen: metrics_listen.0,
            metrics_bearer_file,
            database_acquire_timeout: seconds(
                "database_acquire_timeout",
                database_acquire_timeout,
                1..=600,
            )?,
        })
    }
}

const HOUR: u64 = 3600;
const DAY: u64 = 24 * HOUR;
const WEEK: u64 = 7 * DAY;

/// A number of seconds in `allowed`, as a duration.
fn seconds(
    setting: &'static str,
    value: u64,
    allowed: RangeInclusive<u64>,
) -> Result<Duration, ConfigError> {
    if allowed.contains(&value) {
        return Ok(Duration::from_secs(value));
    }
    let (low, high) = allowed.into_inner();
    Err(ConfigError::new(
        setting,
        format!(
            "{value} seconds: give {} to {}",
            spelled(low),
            spelled(high)
        ),
    ))
}

/// Seconds as a number, with a round span in words.
fn spelled(seconds: u64) -> String {
    match seconds {
        HOUR => format!("{seconds} (an hour)"),
        WEEK => format!("{seconds} (a week)"),
        s if s > DAY && s % DAY == 0 => format!("{s} ({} days)", s / DAY),
        s => s.to_string(),
    }
}

fn at_least_one(setting: &'static str, value: u64) -> Result<(), ConfigError> {
    if value == 0 {
        return Err(ConfigError::new(setting, "must be at least 1"));
    }
    Ok(())
}

/// Module hashes as given (`List` drops blanks), checked and lower-cased.
fn module_hashes(list: &[String]) -> Result<Vec<String>, String> {
    list.iter()
        .map(|h| {
            if h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit()) {
                Ok(h.to_ascii_lowercase())
            } else {
                Err(format!("{h:?} is not a SHA-256 in hex (64 digits)"))
            }
        })
        .collect()
}

#[cfg(test)]
mod documented;
#[cfg(test)]
mod tests;
