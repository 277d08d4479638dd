//! The settings as flags and environment variables, in groups. Each command
//! of the binary flattens only the groups it uses (`host/src/main.rs`), so
//! `outcomes token revoke --help` lists the database settings and not the
//! listener's. Names of flags, environment variables and file keys never
//! change here: they are the operators' interface. Every field is optional
//! so that the file and the defaults can fill what is not given
//! (`Config::resolve` in `config.rs`).
//!
//! `global = true` lets a setting follow a nested command
//! (`outcomes token --database-url URL revoke KEY` and `outcomes token
//! revoke KEY --database-url URL` alike), within the command that
//! flattened its group only.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use super::LogFormat;

/// Where the data lives: used by every command that opens the database.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Database and data folder")]
pub struct StorageArgs {
    /// Folder for the embedded SQLite database and other local state
    /// [default: ./data]
    #[arg(long, global = true, env = "OUTCOMES_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// Database URL: sqlite://PATH or postgres://USER@HOST/DB
    /// [default: sqlite://<data-dir>/outcomes.db]
    #[arg(long, global = true, env = "OUTCOMES_DATABASE_URL", value_name = "URL")]
    pub database_url: Option<String>,
}

/// How the process logs: every command.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Logging")]
pub struct LogArgs {
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
}

/// The zone times are written and read in: commands that print or take
/// times.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Time")]
pub struct TimeZoneArgs {
    /// IANA time zone in which timestamps are written, e.g.
    /// Europe/Amsterdam [default: UTC]
    #[arg(long, global = true, env = "OUTCOMES_TIME_ZONE", value_name = "ZONE")]
    pub time_zone: Option<String>,
}

/// The key that seals secrets kept in the database: the service and the
/// token commands (webhook keys).
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Secrets")]
pub struct SecretsArgs {
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
}

/// Questionnaire and protocol definitions: the service and `rescore`.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Definitions")]
pub struct DefinitionArgs {
    /// Folder with one sub-folder per questionnaire, each holding
    /// questionnaire.toml [default: ./questionnaires]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_QUESTIONNAIRES_DIR",
        value_name = "DIR"
    )]
    pub questionnaires_dir: Option<PathBuf>,

    /// Folder with one <key>.toml per protocol [default: ./protocols]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_PROTOCOLS_DIR",
        value_name = "DIR"
    )]
    pub protocols_dir: Option<PathBuf>,

    /// Folder with translation overlays of questionnaires, one
    /// <questionnaire key>/<language>.toml each, besides those in each
    /// questionnaire's translations/ folder (and in their place for the
    /// same language): a licensee's texts kept outside the definitions
    /// [default: none]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_TRANSLATIONS_DIR",
        value_name = "DIR"
    )]
    pub translations_dir: Option<PathBuf>,
}

/// Which plugin modules may serve: the service, `rescore` and the plugin
/// tools.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Plugins")]
pub struct PluginArgs {
    /// Folder with one sub-folder per plugin, each holding one .wasm module
    /// and its fixtures/ [default: ./plugins]
    #[arg(long, global = true, env = "OUTCOMES_PLUGINS_DIR", value_name = "DIR")]
    pub plugins_dir: Option<PathBuf>,

    /// SHA-256 (hex) of every plugin module allowed to serve,
    /// comma-separated (an array in the file); a module not listed is
    /// refused before it is compiled [default: none, so any module that
    /// passes its checks]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_PLUGIN_ALLOW",
        value_name = "LIST"
    )]
    pub plugin_allow: Option<String>,
}

/// The compiled-code cache: the service and `rescore` (the plugin tools
/// compile in memory).
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Plugins")]
pub struct PluginCacheArgs {
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
}

/// The listener: address, TLS, connection limits, proxies. `serve` only.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Server: listener, TLS and connections")]
pub struct ServerArgs {
    /// Address and port to listen on [default: 127.0.0.1:8080]
    #[arg(long, global = true, env = "OUTCOMES_LISTEN", value_name = "ADDR")]
    pub listen: Option<SocketAddr>,

    /// PEM file with the TLS certificate chain; with --tls-key the service
    /// serves HTTPS itself [default: plain HTTP, for loopback and for a
    /// TLS-terminating proxy listed in --trusted-proxies]
    #[arg(long, global = true, env = "OUTCOMES_TLS_CERT", value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,

    /// PEM file with the TLS private key
    #[arg(long, global = true, env = "OUTCOMES_TLS_KEY", value_name = "FILE")]
    pub tls_key: Option<PathBuf>,

    /// Addresses or CIDR ranges of reverse proxies whose X-Forwarded-For is
    /// believed, comma-separated (an array in the file). A proxy listed
    /// here may also terminate TLS for the service [default: none]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_TRUSTED_PROXIES",
        value_name = "LIST"
    )]
    pub trusted_proxies: Option<String>,

    /// Largest accepted request body in bytes; larger bodies get 413
    /// [default: 1048576]
    #[arg(long, global = true, env = "OUTCOMES_BODY_LIMIT", value_name = "BYTES")]
    pub body_limit: Option<usize>,

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

    /// Whether to watch the plugin and questionnaire folders and reload
    /// what changes while serving [default: true]
    #[arg(long, global = true, env = "OUTCOMES_WATCH", value_name = "BOOL")]
    pub watch: Option<bool>,

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
}

/// The service's database pool and writer queue. `serve` only (the other
/// commands open a small pool of their own).
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Database connections of the service")]
pub struct PoolArgs {
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

/// Who is refused, and when: rate limits and the token table's staleness.
/// `serve` only.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Rate limits and credentials")]
pub struct LimitArgs {
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
}

/// The respondents' pages and the links into them. `serve` only.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Fill-out pages and links")]
pub struct FillOutArgs {
    /// The address respondents reach this service at, for the links it
    /// hands out (fill_out_url, completing_url): https://host[:port], or
    /// http for a loopback host [default: http://<listen address>, or
    /// https:// when serving TLS]
    #[arg(long, global = true, env = "OUTCOMES_PUBLIC_URL", value_name = "URL")]
    pub public_url: Option<String>,

    /// Origins (https://host[:port]) every token may name in return_to,
    /// progress_url and stylesheet, besides its own, comma-separated (an
    /// array in the file) [default: none]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_ALLOWED_ORIGINS",
        value_name = "LIST"
    )]
    pub allowed_origins: Option<String>,

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
}

/// The scheduler and the callbacks it sends. `serve` only.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Scheduler and callbacks")]
pub struct SchedulerArgs {
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

    /// Loopback, private or link-local networks (addresses or CIDR ranges,
    /// comma-separated; an array in the file) that callbacks may go to,
    /// e.g. an EPD on the hospital's own network. Callbacks to any other
    /// such address, written in the URL or looked up when sent, are refused
    /// [default: none]
    #[arg(
        long,
        global = true,
        env = "OUTCOMES_CALLBACK_ALLOWED_NETWORKS",
        value_name = "LIST"
    )]
    pub callback_allowed_networks: Option<String>,
}
