//! Typed configuration. Each setting comes from, in order of precedence, a
//! command-line flag, an `OUTCOMES_*` environment variable, the TOML file
//! named by `--config`, or its default. Validation happens here; reading the
//! file is the caller's job. Flags and environment variables are defined in
//! groups (`config/groups.rs`), so each command lists only what it uses;
//! list settings read from the file as an array or a string
//! (`config/list.rs`).

mod commands;
mod groups;
mod list;

use std::net::SocketAddr;
use std::path::PathBuf;

use chrono_tz::Tz;
use clap::Args;
use serde::Deserialize;

use crate::plugins::{LimitSettings, PluginSettings};

pub use commands::{
    AccessLogSettings, PluginToolSettings, RescoreSettings, StoreSettings, TokenSettings,
};
pub use groups::{
    DefinitionArgs, FillOutArgs, LimitArgs, LogArgs, PluginArgs, PluginCacheArgs, PoolArgs,
    SchedulerArgs, SecretsArgs, ServerArgs, StorageArgs, TimeZoneArgs,
};
pub use list::List;

/// Every setting, as flags and environment variables, in its group:
/// `outcomes serve` takes all of them; the other commands build one from
/// the groups they take, the rest left to the file and the defaults.
#[derive(Debug, Clone, Default, Args)]
pub struct Settings {
    #[command(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    pub logging: LogArgs,
    #[command(flatten)]
    pub time: TimeZoneArgs,
    #[command(flatten)]
    pub secrets: SecretsArgs,
    #[command(flatten)]
    pub definitions: DefinitionArgs,
    #[command(flatten)]
    pub plugins: PluginArgs,
    #[command(flatten)]
    pub plugin_cache: PluginCacheArgs,
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(flatten)]
    pub pool: PoolArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub fill_out: FillOutArgs,
    #[command(flatten)]
    pub scheduler: SchedulerArgs,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Human,
    Json,
}

/// The same settings as written in the TOML file: flat keys named like the
/// flags (with `_`), listed in the order of the groups.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSettings {
    // StorageArgs
    pub data_dir: Option<PathBuf>,
    pub database_url: Option<String>,
    // LogArgs
    pub log_format: Option<LogFormat>,
    pub log: Option<String>,
    // TimeZoneArgs
    pub time_zone: Option<String>,
    // SecretsArgs
    pub secrets_key_file: Option<PathBuf>,
    // DefinitionArgs
    pub questionnaires_dir: Option<PathBuf>,
    pub protocols_dir: Option<PathBuf>,
    pub translations_dir: Option<PathBuf>,
    // PluginArgs
    pub plugins_dir: Option<PathBuf>,
    /// SHA-256 hex of the modules allowed to serve.
    pub plugin_allow: Option<List>,
    /// `[plugin_limits.scorer]`, `[plugin_limits.calculator]` and
    /// `[plugin_limits.overrides.<name>]`: fuel, deadline_ms, memory_bytes,
    /// input_bytes, output_bytes. Only in the file.
    #[serde(default)]
    pub plugin_limits: LimitSettings,
    // PluginCacheArgs
    pub plugin_cache_dir: Option<PathBuf>,
    pub plugin_cache_key_file: Option<PathBuf>,
    // ServerArgs
    pub listen: Option<SocketAddr>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub trusted_proxies: Option<List>,
    pub body_limit: Option<usize>,
    pub header_read_timeout: Option<u64>,
    pub request_body_timeout: Option<u64>,
    pub keep_alive_timeout: Option<u64>,
    pub tls_handshake_timeout: Option<u64>,
    pub connection_limit: Option<usize>,
    pub watch: Option<bool>,
    // PoolArgs
    pub max_connections: Option<u32>,
    pub write_queue_timeout: Option<u64>,
    // LimitArgs
    pub anonymous_burst: Option<u32>,
    pub anonymous_per_second: Option<u32>,
    pub token_burst: Option<u32>,
    pub token_per_second: Option<u32>,
    pub token_reload_failure_limit: Option<u32>,
    // FillOutArgs
    pub public_url: Option<String>,
    pub allowed_origins: Option<List>,
    pub fill_out_secret: Option<String>,
    pub fill_out_secret_file: Option<PathBuf>,
    pub fill_out_link_ttl: Option<u64>,
    pub completing_url_ttl: Option<u64>,
    // SchedulerArgs
    pub scheduler_interval: Option<u64>,
    pub callback_allowed_networks: Option<List>,
    // (#19 metrics)
    pub metrics_listen: Option<SocketAddr>,
    // (#20 multihost)
    pub database_acquire_timeout: Option<u64>,
}

/// The resolved configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub database_url: String,
    pub questionnaires_dir: PathBuf,
    pub protocols_dir: PathBuf,
    /// Translation overlays kept outside the questionnaire folders.
    pub translations_dir: Option<PathBuf>,
    pub plugins: PluginSettings,
    /// Reload plugins and definitions when their files change.
    pub watch: bool,
    pub time_zone: Tz,
    pub body_limit: usize,
    pub max_connections: u32,
    /// How long a write may wait for room in the writer's queue (then 503).
    pub write_queue_timeout: std::time::Duration,
    /// Requests without valid credentials per client address; None: no
    /// limit.
    pub anonymous_limit: Option<RateLimit>,
    /// Requests per API token; None: no limit.
    pub token_limit: Option<RateLimit>,
    pub log_format: LogFormat,
    pub log: String,
    /// Proxies whose X-Forwarded-For is believed and that may terminate TLS.
    pub trusted_proxies: Vec<ipnet::IpNet>,
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
    pub fill_out_link_ttl: std::time::Duration,
    /// How long a completing_url works after it was handed out.
    pub completing_url_ttl: std::time::Duration,
    /// The key that encrypts secrets kept in the database.
    pub secrets_key_file: PathBuf,
    /// Certificate chain and key for serving HTTPS.
    pub tls: Option<TlsFiles>,
    /// Time between scheduler passes; None: no scheduler in this process.
    pub scheduler_interval: Option<std::time::Duration>,
    /// Failed token reloads in a row after which every credential is
    /// refused; None: never.
    pub token_reload_failure_limit: Option<u32>,
    // (#19 metrics)
    /// Where /metrics is served apart from the API; None: on the main
    /// listener.
    pub metrics_listen: Option<SocketAddr>,
    // (#20 multihost)
    /// How long a request waits for a database connection (then 503).
    pub database_acquire_timeout: std::time::Duration,
}

/// A rate limit: `burst` requests at once, then one more each `every`
/// (docs/operations.md#rate-limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub burst: std::num::NonZeroU32,
    pub every: std::time::Duration,
}

impl RateLimit {
    /// `burst` at once and `per_second` after; None when `per_second` is 0
    /// (no limit).
    fn per_second(burst: u32, per_second: u32) -> Result<Option<RateLimit>, String> {
        if per_second == 0 {
            return Ok(None);
        }
        let burst = std::num::NonZeroU32::new(burst)
            .ok_or("the burst must be at least 1 (turn the limit off with a rate of 0)")?;
        Ok(Some(RateLimit {
            burst,
            every: std::time::Duration::from_secs(1) / per_second,
        }))
    }
}

/// Whether `secret` may sign fill-out links: at least 32 characters. The
/// start-up checks a secret read from a file with it too.
pub fn check_link_secret(secret: &str) -> Result<(), String> {
    if secret.chars().count() < 32 {
        return Err("must be at least 32 characters".into());
    }
    Ok(())
}

/// Where a configured secret comes from. None of it is read here (no I/O):
/// start-up reads the file.
#[derive(Clone)]
pub enum SecretSource {
    /// Given as text (flag, environment or config file).
    Text(String),
    /// A file that holds it (a secret store's mount).
    File(PathBuf),
}

impl std::fmt::Debug for SecretSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretSource::Text(_) => f.write_str("Text(..)"),
            SecretSource::File(path) => f.debug_tuple("File").field(path).finish(),
        }
    }
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
    pub header_read: std::time::Duration,
    /// From the end of a request's headers to the end of its body.
    pub request_body: std::time::Duration,
    /// Without a request, after the connection opened or its last answer.
    pub keep_alive: std::time::Duration,
    /// From accepting the connection to the end of the TLS handshake.
    pub tls_handshake: std::time::Duration,
    /// Connections open at once.
    pub max_open: usize,
}

/// A setting that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{setting}: {problem}")]
pub struct ConfigError {
    pub setting: &'static str,
    pub problem: String,
}

impl Config {
    /// Merges flags and environment (`cli`) over the file over defaults.
    pub fn resolve(cli: Settings, file: FileSettings) -> Result<Config, ConfigError> {
        let data_dir = cli
            .storage
            .data_dir
            .or(file.data_dir)
            .unwrap_or_else(|| PathBuf::from("data"));
        let database_url = cli
            .storage
            .database_url
            .or(file.database_url)
            .unwrap_or_else(|| format!("sqlite://{}", data_dir.join("outcomes.db").display()));
        if crate::store::Backend::of_url(&database_url).is_none() {
            return Err(ConfigError {
                setting: "database_url",
                problem: format!(
                    "must start with sqlite:// or postgres://, got {:?}",
                    crate::store::redact(&database_url)
                ),
            });
        }
        let zone_name = cli
            .time
            .time_zone
            .or(file.time_zone)
            .unwrap_or_else(|| "UTC".to_owned());
        let time_zone = zone_name.parse::<Tz>().map_err(|_| ConfigError {
            setting: "time_zone",
            problem: format!(
                "{zone_name:?} is not an IANA time zone name such as Europe/Amsterdam"
            ),
        })?;
        let body_limit = cli
            .server
            .body_limit
            .or(file.body_limit)
            .unwrap_or(1024 * 1024);
        if body_limit < 1024 {
            return Err(ConfigError {
                setting: "body_limit",
                problem: format!("{body_limit} bytes is too small (at least 1024)"),
            });
        }
        let max_connections = cli
            .pool
            .max_connections
            .or(file.max_connections)
            .unwrap_or(8);
        if max_connections == 0 {
            return Err(ConfigError {
                setting: "max_connections",
                problem: "must be at least 1".into(),
            });
        }
        let write_queue_timeout = cli
            .pool
            .write_queue_timeout
            .or(file.write_queue_timeout)
            .unwrap_or(5);
        if !(1..=600).contains(&write_queue_timeout) {
            return Err(ConfigError {
                setting: "write_queue_timeout",
                problem: format!("{write_queue_timeout} seconds: give 1 to 600"),
            });
        }
        let anonymous_limit = RateLimit::per_second(
            cli.limits
                .anonymous_burst
                .or(file.anonymous_burst)
                .unwrap_or(200),
            cli.limits
                .anonymous_per_second
                .or(file.anonymous_per_second)
                .unwrap_or(10),
        )
        .map_err(|problem| ConfigError {
            setting: "anonymous_burst",
            problem,
        })?;
        let token_limit = RateLimit::per_second(
            cli.limits
                .token_burst
                .or(file.token_burst)
                .unwrap_or(40_000),
            cli.limits
                .token_per_second
                .or(file.token_per_second)
                .unwrap_or(20_000),
        )
        .map_err(|problem| ConfigError {
            setting: "token_burst",
            problem,
        })?;
        let proxies = list_setting(cli.server.trusted_proxies, file.trusted_proxies);
        let trusted_proxies =
            crate::auth::ip::parse_list(&proxies.joined()).map_err(|problem| ConfigError {
                setting: "trusted_proxies",
                problem,
            })?;
        let seconds = |setting: &'static str, value: Option<u64>, default: u64| {
            let value = value.unwrap_or(default);
            if (1..=3600).contains(&value) {
                Ok(std::time::Duration::from_secs(value))
            } else {
                Err(ConfigError {
                    setting,
                    problem: format!("{value} seconds: give 1 to 3600"),
                })
            }
        };
        let connection_limit = cli
            .server
            .connection_limit
            .or(file.connection_limit)
            .unwrap_or(512);
        if connection_limit == 0 {
            return Err(ConfigError {
                setting: "connection_limit",
                problem: "must be at least 1".into(),
            });
        }
        let connections = ConnectionLimits {
            header_read: seconds(
                "header_read_timeout",
                cli.server.header_read_timeout.or(file.header_read_timeout),
                10,
            )?,
            request_body: seconds(
                "request_body_timeout",
                cli.server
                    .request_body_timeout
                    .or(file.request_body_timeout),
                30,
            )?,
            keep_alive: seconds(
                "keep_alive_timeout",
                cli.server.keep_alive_timeout.or(file.keep_alive_timeout),
                5,
            )?,
            tls_handshake: seconds(
                "tls_handshake_timeout",
                cli.server
                    .tls_handshake_timeout
                    .or(file.tls_handshake_timeout),
                10,
            )?,
            max_open: connection_limit,
        };
        let origins = list_setting(cli.fill_out.allowed_origins, file.allowed_origins);
        let allowed_origins =
            crate::auth::origin::parse_list(&origins.joined()).map_err(|problem| ConfigError {
                setting: "allowed_origins",
                problem,
            })?;
        let callback_allowed_networks = crate::auth::ip::parse_list(
            &list_setting(
                cli.scheduler.callback_allowed_networks,
                file.callback_allowed_networks,
            )
            .joined(),
        )
        .map_err(|problem| ConfigError {
            setting: "callback_allowed_networks",
            problem,
        })?;
        let public_url = match cli.fill_out.public_url.or(file.public_url) {
            Some(url) => Some(
                crate::auth::origin::parse(&url).map_err(|problem| ConfigError {
                    setting: "public_url",
                    problem: format!("{problem} (give the origin only: no path, query or user)"),
                })?,
            ),
            None => None,
        };
        let fill_out_secret = match (
            cli.fill_out.fill_out_secret.or(file.fill_out_secret),
            cli.fill_out
                .fill_out_secret_file
                .or(file.fill_out_secret_file),
        ) {
            (Some(_), Some(_)) => {
                return Err(ConfigError {
                    setting: "fill_out_secret_file",
                    problem: "give fill_out_secret or fill_out_secret_file, not both".into(),
                });
            }
            (Some(text), None) => {
                check_link_secret(&text).map_err(|problem| ConfigError {
                    setting: "fill_out_secret",
                    problem,
                })?;
                Some(SecretSource::Text(text))
            }
            (None, Some(path)) => Some(SecretSource::File(path)),
            (None, None) => None,
        };
        let fill_out_link_ttl = cli
            .fill_out
            .fill_out_link_ttl
            .or(file.fill_out_link_ttl)
            .unwrap_or(600);
        if !(10..=7 * 24 * 3600).contains(&fill_out_link_ttl) {
            return Err(ConfigError {
                setting: "fill_out_link_ttl",
                problem: format!("{fill_out_link_ttl} seconds: give 10 to 604800 (a week)"),
            });
        }
        let completing_url_ttl = cli
            .fill_out
            .completing_url_ttl
            .or(file.completing_url_ttl)
            .unwrap_or(30 * 24 * 3600);
        if !(3600..=366 * 24 * 3600).contains(&completing_url_ttl) {
            return Err(ConfigError {
                setting: "completing_url_ttl",
                problem: format!(
                    "{completing_url_ttl} seconds: give 3600 (an hour) to 31622400 (366 days)"
                ),
            });
        }
        let secrets_key_file = cli
            .secrets
            .secrets_key_file
            .or(file.secrets_key_file)
            .unwrap_or_else(|| data_dir.join("secrets.key"));
        let tls = match (
            cli.server.tls_cert.or(file.tls_cert),
            cli.server.tls_key.or(file.tls_key),
        ) {
            (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
            (None, None) => None,
            _ => {
                return Err(ConfigError {
                    setting: "tls_cert",
                    problem: "give both tls_cert and tls_key, or neither".into(),
                });
            }
        };
        file.plugin_limits
            .validate()
            .map_err(|problem| ConfigError {
                setting: "plugin_limits",
                problem,
            })?;
        let allow = list_setting(cli.plugins.plugin_allow, file.plugin_allow);
        let plugins = PluginSettings {
            dir: cli
                .plugins
                .plugins_dir
                .or(file.plugins_dir)
                .unwrap_or_else(|| "plugins".into()),
            cache_dir: Some(
                cli.plugin_cache
                    .plugin_cache_dir
                    .or(file.plugin_cache_dir)
                    .unwrap_or_else(|| data_dir.join("plugin-cache")),
            ),
            cache_key_file: cli
                .plugin_cache
                .plugin_cache_key_file
                .or(file.plugin_cache_key_file)
                .unwrap_or_else(|| data_dir.join("plugin-cache.key")),
            allow: module_hashes(allow.items()).map_err(|problem| ConfigError {
                setting: "plugin_allow",
                problem,
            })?,
            limits: file.plugin_limits,
        };
        let scheduler_interval = match cli
            .scheduler
            .scheduler_interval
            .or(file.scheduler_interval)
            .unwrap_or(60)
        {
            0 => None,
            seconds => Some(std::time::Duration::from_secs(seconds)),
        };
        let token_reload_failure_limit = match cli
            .limits
            .token_reload_failure_limit
            .or(file.token_reload_failure_limit)
            .unwrap_or(30)
        {
            0 => None,
            count => Some(count),
        };
        // (#20 multihost)
        let database_acquire_timeout = cli
            .pool
            .database_acquire_timeout
            .or(file.database_acquire_timeout)
            .unwrap_or(5);
        if !(1..=600).contains(&database_acquire_timeout) {
            return Err(ConfigError {
                setting: "database_acquire_timeout",
                problem: format!("{database_acquire_timeout} seconds: give 1 to 600"),
            });
        }
        Ok(Config {
            database_acquire_timeout: std::time::Duration::from_secs(database_acquire_timeout),
            scheduler_interval,
            token_reload_failure_limit,
            plugins,
            watch: cli.server.watch.or(file.watch).unwrap_or(true),
            tls,
            trusted_proxies,
            connections,
            allowed_origins,
            callback_allowed_networks,
            public_url,
            fill_out_secret,
            fill_out_link_ttl: std::time::Duration::from_secs(fill_out_link_ttl),
            completing_url_ttl: std::time::Duration::from_secs(completing_url_ttl),
            secrets_key_file,
            listen: cli
                .server
                .listen
                .or(file.listen)
                .unwrap_or(SocketAddr::from(([127, 0, 0, 1], 8080))),
            data_dir,
            database_url,
            questionnaires_dir: cli
                .definitions
                .questionnaires_dir
                .or(file.questionnaires_dir)
                .unwrap_or_else(|| "questionnaires".into()),
            protocols_dir: cli
                .definitions
                .protocols_dir
                .or(file.protocols_dir)
                .unwrap_or_else(|| "protocols".into()),
            translations_dir: cli.definitions.translations_dir.or(file.translations_dir),
            time_zone,
            body_limit,
            max_connections,
            write_queue_timeout: std::time::Duration::from_secs(write_queue_timeout),
            anonymous_limit,
            token_limit,
            log_format: cli
                .logging
                .log_format
                .or(file.log_format)
                .unwrap_or_default(),
            log: cli
                .logging
                .log
                .or(file.log)
                .unwrap_or_else(|| "info".to_owned()),
            metrics_listen: cli.server.metrics_listen.or(file.metrics_listen),
        })
    }
}

/// A list setting: the flag's or environment's comma-separated text wins
/// over the file's array or text.
fn list_setting(cli: Option<String>, file: Option<List>) -> List {
    cli.map(|text| List::from_text(&text))
        .or(file)
        .unwrap_or_default()
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
mod tests;
