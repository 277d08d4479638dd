//! Typed configuration. Each setting comes from, in order of precedence, a
//! command-line flag, an `OUTCOMES_*` environment variable, the TOML file
//! named by `--config`, or its default. Validation happens here; reading the
//! file is the caller's job.

use std::net::SocketAddr;
use std::path::PathBuf;

use chrono_tz::Tz;
use clap::Args;
use serde::Deserialize;

use crate::plugins::{LimitSettings, PluginSettings};

/// Settings shared by `serve` and `migrate`, as flags and environment
/// variables. Every field is optional so that the file and the defaults can
/// fill what is not given.
#[derive(Debug, Clone, Default, Args)]
pub struct Settings {
    /// Address and port to listen on [default: 127.0.0.1:8080]
    #[arg(long, global = true, env = "OUTCOMES_LISTEN", value_name = "ADDR")]
    pub listen: Option<SocketAddr>,

    /// Folder for the embedded SQLite database and other local state
    /// [default: ./data]
    #[arg(long, global = true, env = "OUTCOMES_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// Database URL: sqlite://PATH or postgres://USER@HOST/DB
    /// [default: sqlite://<data-dir>/outcomes.db]
    #[arg(long, global = true, env = "OUTCOMES_DATABASE_URL", value_name = "URL")]
    pub database_url: Option<String>,

    /// Folder with one sub-folder per questionnaire, each holding
    /// questionnaire.toml [default: ./questionnaires]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_QUESTIONNAIRES_DIR",
        value_name = "DIR"
    )]
    pub questionnaires_dir: Option<PathBuf>,

    /// Folder with one sub-folder per plugin, each holding one .wasm module
    /// and its fixtures/ [default: ./plugins]
    #[arg(long, global = true, env = "OUTCOMES_PLUGINS_DIR", value_name = "DIR")]
    pub plugins_dir: Option<PathBuf>,

    /// Folder for compiled plugin code, so restarts do not recompile
    /// [default: <data-dir>/plugin-cache]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_PLUGIN_CACHE_DIR",
        value_name = "DIR"
    )]
    pub plugin_cache_dir: Option<PathBuf>,

    /// File holding the key (64 hex digits) that authenticates compiled
    /// plugin code in the cache folder, made when missing; only the
    /// service's user may read it. Hosts sharing a cache folder share it
    /// [default: <data-dir>/plugin-cache.key]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_PLUGIN_CACHE_KEY_FILE",
        value_name = "FILE"
    )]
    pub plugin_cache_key_file: Option<PathBuf>,

    /// SHA-256 (hex) of every plugin module allowed to serve,
    /// comma-separated; a module not listed is refused before it is
    /// compiled [default: none, so any module that passes its checks]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_PLUGIN_ALLOW",
        value_name = "LIST"
    )]
    pub plugin_allow: Option<String>,

    /// Whether to watch the plugin and questionnaire folders and reload
    /// what changes while serving [default: true]
    #[arg(long, global = true, env = "OUTCOMES_WATCH", value_name = "BOOL")]
    pub watch: Option<bool>,

    /// Folder with one <key>.toml per protocol [default: ./protocols]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_PROTOCOLS_DIR",
        value_name = "DIR"
    )]
    pub protocols_dir: Option<PathBuf>,

    /// IANA time zone in which timestamps are written, e.g.
    /// Europe/Amsterdam [default: UTC]
    #[arg(long, global = true, env = "OUTCOMES_TIME_ZONE", value_name = "ZONE")]
    pub time_zone: Option<String>,

    /// Largest accepted request body in bytes; larger bodies get 413
    /// [default: 1048576]
    #[arg(long, global = true, env = "OUTCOMES_BODY_LIMIT", value_name = "BYTES")]
    pub body_limit: Option<usize>,

    /// Database connections for reads (writes use one more) [default: 8]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_MAX_CONNECTIONS",
        value_name = "N"
    )]
    pub max_connections: Option<u32>,

    /// Seconds a write may wait for room in the database writer's queue;
    /// past it the request is answered 503 `unavailable` [default: 5]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_WRITE_QUEUE_TIMEOUT",
        value_name = "SECONDS"
    )]
    pub write_queue_timeout: Option<u64>,

    /// Requests without valid credentials (401, 403 https_required, a
    /// fill-out link that does not work) one client address may make in a
    /// burst before it is answered 429; IPv6 addresses count per /64
    /// [default: 200]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_ANONYMOUS_BURST",
        value_name = "N"
    )]
    pub anonymous_burst: Option<u32>,

    /// Requests without valid credentials per second one client address
    /// may make after its burst; 0 turns this limit off [default: 10]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_ANONYMOUS_PER_SECOND",
        value_name = "N"
    )]
    pub anonymous_per_second: Option<u32>,

    /// Requests one API token may make in a burst before it is answered 429
    /// [default: 40000]
    #[arg(long, global = true, env = "OUTCOMES_TOKEN_BURST", value_name = "N")]
    pub token_burst: Option<u32>,

    /// Requests per second one API token may make after its burst; 0 turns
    /// this limit off. The default is above what one host can serve (about
    /// 7,500 scored POSTs or 16,000 cheap GETs a second on two cores), so
    /// an EPD's bulk upload is never refused [default: 20000]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_TOKEN_PER_SECOND",
        value_name = "N"
    )]
    pub token_per_second: Option<u32>,

    /// Addresses or CIDR ranges of reverse proxies whose X-Forwarded-For is
    /// believed, comma-separated. A proxy listed here may also terminate TLS
    /// for the service [default: none]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_TRUSTED_PROXIES",
        value_name = "LIST"
    )]
    pub trusted_proxies: Option<String>,

    /// Seconds a client has to send a request's headers, counted from the
    /// connection's start or the previous answer; slower connections are
    /// closed without an answer [default: 10]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_HEADER_READ_TIMEOUT",
        value_name = "SECONDS"
    )]
    pub header_read_timeout: Option<u64>,

    /// Seconds a client has to send a request's whole body once its headers
    /// are in; a later body is answered 408 and the connection closed
    /// [default: 30]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_REQUEST_BODY_TIMEOUT",
        value_name = "SECONDS"
    )]
    pub request_body_timeout: Option<u64>,

    /// Seconds a connection may stay open without a request after its last
    /// answer (or after it opened) before it is closed [default: 5]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_KEEP_ALIVE_TIMEOUT",
        value_name = "SECONDS"
    )]
    pub keep_alive_timeout: Option<u64>,

    /// Seconds a client has to finish the TLS handshake when the service
    /// serves HTTPS itself [default: 10]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_TLS_HANDSHAKE_TIMEOUT",
        value_name = "SECONDS"
    )]
    pub tls_handshake_timeout: Option<u64>,

    /// Client connections open at once; more wait in the operating
    /// system's queue until one closes [default: 512]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_CONNECTION_LIMIT",
        value_name = "N"
    )]
    pub connection_limit: Option<usize>,

    /// Origins (https://host[:port]) every token may name in return_to,
    /// progress_url and stylesheet, besides its own, comma-separated
    /// [default: none]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_ALLOWED_ORIGINS",
        value_name = "LIST"
    )]
    pub allowed_origins: Option<String>,

    /// Loopback, private or link-local networks (addresses or CIDR ranges,
    /// comma-separated) that callbacks may go to, e.g. an EPD on the
    /// hospital's own network. Callbacks to any other such address, written
    /// in the URL or looked up when sent, are refused [default: none]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_CALLBACK_ALLOWED_NETWORKS",
        value_name = "LIST"
    )]
    pub callback_allowed_networks: Option<String>,

    /// The address respondents reach this service at, for the links it
    /// hands out (fill_out_url, completing_url): https://host[:port], or
    /// http for a loopback host [default: http://<listen address>, or
    /// https:// when serving TLS]
    #[arg(long, global = true, env = "OUTCOMES_PUBLIC_URL", value_name = "URL")]
    pub public_url: Option<String>,

    /// Secret that signs fill-out links and forms, at least 32 characters.
    /// Hosts that share a database must share it; changing it makes every
    /// link handed out so far unusable [default: a random secret, made once
    /// and kept in the database, so hosts on one database share it]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_FILL_OUT_SECRET",
        value_name = "TEXT",
        hide_env_values = true
    )]
    pub fill_out_secret: Option<String>,

    /// Seconds a fill_out_url can be used after it was made; it can be used
    /// once [default: 600]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_FILL_OUT_LINK_TTL",
        value_name = "SECONDS"
    )]
    pub fill_out_link_ttl: Option<u64>,

    /// Seconds a completing_url works after it was handed out (in a
    /// response, a fill-out request or a callback); revoking the
    /// respondent's links ends it sooner [default: 2592000, 30 days]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_COMPLETING_URL_TTL",
        value_name = "SECONDS"
    )]
    pub completing_url_ttl: Option<u64>,

    /// File holding the secret that signs fill-out links (at least 32
    /// characters; surrounding white space is ignored), for a secret store
    /// that mounts secrets as files; instead of --fill-out-secret
    /// [default: none]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_FILL_OUT_SECRET_FILE",
        value_name = "FILE"
    )]
    pub fill_out_secret_file: Option<PathBuf>,

    /// Key file (32 random bytes) that encrypts the secrets the service
    /// keeps in the database (the link-signing secret when none is
    /// configured). Made, readable by its owner only, on first start if
    /// missing; hosts that share a database must share it
    /// [default: <data-dir>/secrets.key]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_SECRETS_KEY_FILE",
        value_name = "FILE"
    )]
    pub secrets_key_file: Option<PathBuf>,

    /// PEM file with the TLS certificate chain; with --tls-key the service
    /// serves HTTPS itself [default: plain HTTP, for loopback and for a
    /// TLS-terminating proxy listed in --trusted-proxies]
    #[arg(long, global = true, env = "OUTCOMES_TLS_CERT", value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,

    /// PEM file with the TLS private key
    #[arg(long, global = true, env = "OUTCOMES_TLS_KEY", value_name = "FILE")]
    pub tls_key: Option<PathBuf>,

    /// Seconds between scheduler passes (preparing due measurements,
    /// registering non-responses for expired ones); 0 turns the scheduler
    /// off in this process, for a host that only serves while another
    /// schedules [default: 60]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_SCHEDULER_INTERVAL",
        value_name = "SECONDS"
    )]
    pub scheduler_interval: Option<u64>,

    /// Failed token reloads in a row (one every 2 s) after which every API
    /// credential is refused with 503 until a reload succeeds: revocations
    /// made elsewhere are not seen while reloads fail. 0 never refuses
    /// [default: 30]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_TOKEN_RELOAD_FAILURE_LIMIT",
        value_name = "COUNT"
    )]
    pub token_reload_failure_limit: Option<u32>,

    /// Log format: human or json [default: human]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_LOG_FORMAT",
        value_name = "FORMAT"
    )]
    pub log_format: Option<LogFormat>,

    /// Log filter in tracing's EnvFilter syntax, e.g. info,host=debug
    /// [default: info]
    #[arg(long, global = true, env = "OUTCOMES_LOG", value_name = "FILTER")]
    pub log: Option<String>,

    // (#19 metrics)
    /// Serve /metrics on this address and port instead of the main
    /// listener, which then answers it 404. Plain HTTP, never
    /// authenticated: bind it where only the monitoring system reaches
    /// [default: /metrics on the main listener]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_METRICS_LISTEN",
        value_name = "ADDR"
    )]
    pub metrics_listen: Option<SocketAddr>,

    // (#20 multihost)
    /// Seconds a request waits for a database connection (a free one, or
    /// the database to answer again after a restart); past it the request
    /// is answered 503 `unavailable` [default: 5]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_DATABASE_ACQUIRE_TIMEOUT",
        value_name = "SECONDS"
    )]
    pub database_acquire_timeout: Option<u64>,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Human,
    Json,
}

/// The same settings as written in the TOML file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSettings {
    pub listen: Option<SocketAddr>,
    pub data_dir: Option<PathBuf>,
    pub database_url: Option<String>,
    pub questionnaires_dir: Option<PathBuf>,
    pub protocols_dir: Option<PathBuf>,
    pub plugins_dir: Option<PathBuf>,
    pub plugin_cache_dir: Option<PathBuf>,
    pub plugin_cache_key_file: Option<PathBuf>,
    /// SHA-256 hex of the modules allowed to serve.
    pub plugin_allow: Option<Vec<String>>,
    pub watch: Option<bool>,
    /// `[plugin_limits.scorer]`, `[plugin_limits.calculator]` and
    /// `[plugin_limits.overrides.<name>]`: fuel, deadline_ms, memory_bytes,
    /// input_bytes, output_bytes.
    #[serde(default)]
    pub plugin_limits: LimitSettings,
    pub time_zone: Option<String>,
    pub body_limit: Option<usize>,
    pub max_connections: Option<u32>,
    pub write_queue_timeout: Option<u64>,
    pub anonymous_burst: Option<u32>,
    pub anonymous_per_second: Option<u32>,
    pub token_burst: Option<u32>,
    pub token_per_second: Option<u32>,
    pub log_format: Option<LogFormat>,
    pub log: Option<String>,
    pub trusted_proxies: Option<String>,
    pub header_read_timeout: Option<u64>,
    pub request_body_timeout: Option<u64>,
    pub keep_alive_timeout: Option<u64>,
    pub tls_handshake_timeout: Option<u64>,
    pub connection_limit: Option<usize>,
    pub allowed_origins: Option<String>,
    pub callback_allowed_networks: Option<String>,
    pub public_url: Option<String>,
    pub fill_out_secret: Option<String>,
    pub fill_out_link_ttl: Option<u64>,
    pub completing_url_ttl: Option<u64>,
    pub fill_out_secret_file: Option<PathBuf>,
    pub secrets_key_file: Option<PathBuf>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub scheduler_interval: Option<u64>,
    pub token_reload_failure_limit: Option<u32>,
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
            .data_dir
            .or(file.data_dir)
            .unwrap_or_else(|| PathBuf::from("data"));
        let database_url = cli
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
            .time_zone
            .or(file.time_zone)
            .unwrap_or_else(|| "UTC".to_owned());
        let time_zone = zone_name.parse::<Tz>().map_err(|_| ConfigError {
            setting: "time_zone",
            problem: format!(
                "{zone_name:?} is not an IANA time zone name such as Europe/Amsterdam"
            ),
        })?;
        let body_limit = cli.body_limit.or(file.body_limit).unwrap_or(1024 * 1024);
        if body_limit < 1024 {
            return Err(ConfigError {
                setting: "body_limit",
                problem: format!("{body_limit} bytes is too small (at least 1024)"),
            });
        }
        let max_connections = cli.max_connections.or(file.max_connections).unwrap_or(8);
        if max_connections == 0 {
            return Err(ConfigError {
                setting: "max_connections",
                problem: "must be at least 1".into(),
            });
        }
        let write_queue_timeout = cli
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
            cli.anonymous_burst.or(file.anonymous_burst).unwrap_or(200),
            cli.anonymous_per_second
                .or(file.anonymous_per_second)
                .unwrap_or(10),
        )
        .map_err(|problem| ConfigError {
            setting: "anonymous_burst",
            problem,
        })?;
        let token_limit = RateLimit::per_second(
            cli.token_burst.or(file.token_burst).unwrap_or(40_000),
            cli.token_per_second
                .or(file.token_per_second)
                .unwrap_or(20_000),
        )
        .map_err(|problem| ConfigError {
            setting: "token_burst",
            problem,
        })?;
        let proxies = cli
            .trusted_proxies
            .or(file.trusted_proxies)
            .unwrap_or_default();
        let trusted_proxies =
            crate::auth::ip::parse_list(&proxies).map_err(|problem| ConfigError {
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
                cli.header_read_timeout.or(file.header_read_timeout),
                10,
            )?,
            request_body: seconds(
                "request_body_timeout",
                cli.request_body_timeout.or(file.request_body_timeout),
                30,
            )?,
            keep_alive: seconds(
                "keep_alive_timeout",
                cli.keep_alive_timeout.or(file.keep_alive_timeout),
                5,
            )?,
            tls_handshake: seconds(
                "tls_handshake_timeout",
                cli.tls_handshake_timeout.or(file.tls_handshake_timeout),
                10,
            )?,
            max_open: connection_limit,
        };
        let origins = cli
            .allowed_origins
            .or(file.allowed_origins)
            .unwrap_or_default();
        let allowed_origins =
            crate::auth::origin::parse_list(&origins).map_err(|problem| ConfigError {
                setting: "allowed_origins",
                problem,
            })?;
        let callback_allowed_networks = crate::auth::ip::parse_list(
            &cli.callback_allowed_networks
                .or(file.callback_allowed_networks)
                .unwrap_or_default(),
        )
        .map_err(|problem| ConfigError {
            setting: "callback_allowed_networks",
            problem,
        })?;
        let public_url = match cli.public_url.or(file.public_url) {
            Some(url) => Some(
                crate::auth::origin::parse(&url).map_err(|problem| ConfigError {
                    setting: "public_url",
                    problem: format!("{problem} (give the origin only: no path, query or user)"),
                })?,
            ),
            None => None,
        };
        let fill_out_secret = match (
            cli.fill_out_secret.or(file.fill_out_secret),
            cli.fill_out_secret_file.or(file.fill_out_secret_file),
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
            .secrets_key_file
            .or(file.secrets_key_file)
            .unwrap_or_else(|| data_dir.join("secrets.key"));
        let tls = match (cli.tls_cert.or(file.tls_cert), cli.tls_key.or(file.tls_key)) {
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
        let allow = match cli.plugin_allow {
            Some(list) => list.split(',').map(str::to_owned).collect(),
            None => file.plugin_allow.unwrap_or_default(),
        };
        let plugins = PluginSettings {
            dir: cli
                .plugins_dir
                .or(file.plugins_dir)
                .unwrap_or_else(|| "plugins".into()),
            cache_dir: Some(
                cli.plugin_cache_dir
                    .or(file.plugin_cache_dir)
                    .unwrap_or_else(|| data_dir.join("plugin-cache")),
            ),
            cache_key_file: cli
                .plugin_cache_key_file
                .or(file.plugin_cache_key_file)
                .unwrap_or_else(|| data_dir.join("plugin-cache.key")),
            allow: module_hashes(allow).map_err(|problem| ConfigError {
                setting: "plugin_allow",
                problem,
            })?,
            limits: file.plugin_limits,
        };
        let scheduler_interval = match cli
            .scheduler_interval
            .or(file.scheduler_interval)
            .unwrap_or(60)
        {
            0 => None,
            seconds => Some(std::time::Duration::from_secs(seconds)),
        };
        let token_reload_failure_limit = match cli
            .token_reload_failure_limit
            .or(file.token_reload_failure_limit)
            .unwrap_or(30)
        {
            0 => None,
            count => Some(count),
        };
        // (#20 multihost)
        let database_acquire_timeout = cli
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
            watch: cli.watch.or(file.watch).unwrap_or(true),
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
                .listen
                .or(file.listen)
                .unwrap_or(SocketAddr::from(([127, 0, 0, 1], 8080))),
            data_dir,
            database_url,
            questionnaires_dir: cli
                .questionnaires_dir
                .or(file.questionnaires_dir)
                .unwrap_or_else(|| "questionnaires".into()),
            protocols_dir: cli
                .protocols_dir
                .or(file.protocols_dir)
                .unwrap_or_else(|| "protocols".into()),
            time_zone,
            body_limit,
            max_connections,
            write_queue_timeout: std::time::Duration::from_secs(write_queue_timeout),
            anonymous_limit,
            token_limit,
            log_format: cli.log_format.or(file.log_format).unwrap_or_default(),
            log: cli.log.or(file.log).unwrap_or_else(|| "info".to_owned()),
            metrics_listen: cli.metrics_listen.or(file.metrics_listen),
        })
    }
}

/// Module hashes as given (blanks dropped), checked and lower-cased.
fn module_hashes(list: Vec<String>) -> Result<Vec<String>, String> {
    list.iter()
        .map(|h| h.trim())
        .filter(|h| !h.is_empty())
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
mod tests {
    use super::*;

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
        assert_eq!(c.token_reload_failure_limit, Some(30));
        let never: FileSettings =
            toml::from_str("token_reload_failure_limit = 0\n").expect("valid");
        let c = Config::resolve(Settings::default(), never).expect("valid");
        assert_eq!(c.token_reload_failure_limit, None);
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
        let cli = Settings {
            token_burst: Some(0),
            ..Default::default()
        };
        let err = Config::resolve(cli, FileSettings::default()).expect_err("invalid");
        assert_eq!(err.setting, "token_burst");
        let cli = Settings {
            write_queue_timeout: Some(0),
            ..Default::default()
        };
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
            }
        );
        let file: FileSettings =
            toml::from_str("keep_alive_timeout = 2\nconnection_limit = 3\n").expect("valid");
        let c = Config::resolve(Settings::default(), file).expect("valid");
        assert_eq!(c.connections.keep_alive, secs(2));
        assert_eq!(c.connections.max_open, 3);
        for (cli, setting) in [
            (
                Settings {
                    header_read_timeout: Some(0),
                    ..Default::default()
                },
                "header_read_timeout",
            ),
            (
                Settings {
                    request_body_timeout: Some(3601),
                    ..Default::default()
                },
                "request_body_timeout",
            ),
            (
                Settings {
                    keep_alive_timeout: Some(0),
                    ..Default::default()
                },
                "keep_alive_timeout",
            ),
            (
                Settings {
                    tls_handshake_timeout: Some(0),
                    ..Default::default()
                },
                "tls_handshake_timeout",
            ),
            (
                Settings {
                    connection_limit: Some(0),
                    ..Default::default()
                },
                "connection_limit",
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
        let cli = Settings {
            body_limit: Some(8192),
            ..Default::default()
        };
        let c = Config::resolve(cli, file).expect("valid");
        assert_eq!(c.time_zone, Tz::Europe__Amsterdam);
        assert_eq!(c.body_limit, 8192);
    }

    #[test]
    fn the_plugin_allow_list_comes_from_a_list_or_an_array() {
        let a = "AB".repeat(32);
        let b = "cd".repeat(32);
        let cli = Settings {
            plugin_allow: Some(format!("{a}, {b},")),
            ..Default::default()
        };
        let c = Config::resolve(cli, FileSettings::default()).expect("valid");
        assert_eq!(c.plugins.allow, [a.to_ascii_lowercase(), b.clone()]);
        let file: FileSettings =
            toml::from_str(&format!("plugin_allow = [\"{b}\"]\n")).expect("valid");
        let c = Config::resolve(Settings::default(), file).expect("valid");
        assert_eq!(c.plugins.allow, [b]);
        assert!(
            Config::resolve(Settings::default(), FileSettings::default())
                .expect("valid")
                .plugins
                .allow
                .is_empty()
        );
        let cli = Settings {
            plugin_allow: Some("phq9".into()),
            ..Default::default()
        };
        let err = Config::resolve(cli, FileSettings::default()).expect_err("invalid");
        assert_eq!(err.setting, "plugin_allow");
    }

    #[test]
    fn bad_settings_are_named() {
        let cli = Settings {
            time_zone: Some("Mars/Olympus".into()),
            ..Default::default()
        };
        let err = Config::resolve(cli, FileSettings::default()).expect_err("invalid");
        assert_eq!(err.setting, "time_zone");
        let cli = Settings {
            database_url: Some("mysql://x".into()),
            ..Default::default()
        };
        assert_eq!(
            Config::resolve(cli, FileSettings::default())
                .expect_err("invalid")
                .setting,
            "database_url"
        );
        assert!(toml::from_str::<FileSettings>("listen_port = 1").is_err());
        for (cli, setting) in [
            (
                Settings {
                    public_url: Some("https://rom.example.org/path".into()),
                    ..Default::default()
                },
                "public_url",
            ),
            (
                Settings {
                    public_url: Some("http://rom.example.org".into()),
                    ..Default::default()
                },
                "public_url",
            ),
            (
                Settings {
                    fill_out_secret: Some("short".into()),
                    ..Default::default()
                },
                "fill_out_secret",
            ),
            (
                Settings {
                    fill_out_link_ttl: Some(0),
                    ..Default::default()
                },
                "fill_out_link_ttl",
            ),
            (
                Settings {
                    completing_url_ttl: Some(60),
                    ..Default::default()
                },
                "completing_url_ttl",
            ),
            (
                Settings {
                    fill_out_secret: Some("a secret long enough to be accepted!".into()),
                    fill_out_secret_file: Some("secret.txt".into()),
                    ..Default::default()
                },
                "fill_out_secret_file",
            ),
        ] {
            let err = Config::resolve(cli, FileSettings::default()).expect_err("invalid");
            assert_eq!(err.setting, setting);
        }
        let c = Config::resolve(
            Settings {
                public_url: Some("https://ROM.example.org/".into()),
                ..Default::default()
            },
            FileSettings::default(),
        )
        .expect("valid");
        assert_eq!(c.public_url.as_deref(), Some("https://rom.example.org"));
    }
}
