//! Every setting, declared once: its key (which names its flag and
//! environment variable), type, value name, default and help, in the
//! `--help` group of the commands that use it (`commands.rs` says which
//! groups a command takes). `declare.rs` turns this table into the clap
//! groups, the TOML file's keys, the merged values and the list the tests
//! read. Keys, and so flags and environment variables, never change here:
//! they are the operators' interface (docs/operations.md#settings).
//!
//! To add a setting: a row in the group of the commands that use it, its
//! use in `Config::resolve` (the compiler asks for it), and a row in
//! docs/operations.md#settings (`config/documented.rs` asks for that).

use std::net::SocketAddr;
use std::path::PathBuf;

use super::declare::settings;
use super::{List, LogFormat, MetricsListen};
use crate::auth::forwarded::ProxyHeader;
use crate::domain::alarm::AlarmRules;
use crate::plugins::LimitSettings;

settings! {
    /// Where the data lives: every command that opens the database.
    group storage: StorageArgs, "Database and data folder" {
        /// Folder for the embedded SQLite database and other local state
        data_dir: PathBuf [DIR] = "data", shown("./data");
        /// Database URL: sqlite://PATH or postgres://USER@HOST/DB
        database_url: String [URL], shown("sqlite://<data-dir>/outcomes.db");
    }

    /// How the process logs: every command.
    group logging: LogArgs, "Logging" {
        /// Log format: human or json
        log_format: LogFormat [FORMAT] = "human";
        /// Log filter in tracing's EnvFilter syntax, e.g. info,host=debug
        log: String [FILTER] = "info";
    }

    /// The zone times are written and read in: commands that print or take
    /// times.
    group time: TimeZoneArgs, "Time" {
        /// IANA time zone in which timestamps are written, e.g.
        /// Europe/Amsterdam
        time_zone: String [ZONE] = "UTC";
    }

    /// The key that seals secrets kept in the database: the service, the
    /// token commands (webhook keys) and the plugin commands (candidate
    /// versions).
    group secrets: SecretsArgs, "Secrets" {
        /// Key file (32 random bytes) that encrypts the secrets the service
        /// keeps in the database (the link-signing secret when none is
        /// configured) and seals candidate scorer versions (`outcomes
        /// plugin candidate|promote`; hosts use no other). Made, readable by
        /// its owner only, on first start if missing; hosts that share a
        /// database must share it
        secrets_key_file: PathBuf [FILE], shown("<data-dir>/secrets.key");
    }

    /// Questionnaire and protocol definitions: the service and `rescore`.
    group definitions: DefinitionArgs, "Definitions" {
        /// Folder with one sub-folder per questionnaire, each holding
        /// questionnaire.toml
        questionnaires_dir: PathBuf [DIR] = "questionnaires", shown("./questionnaires");
        /// Folder with one <key>.toml per protocol
        protocols_dir: PathBuf [DIR] = "protocols", shown("./protocols");
        /// Folder with translation overlays of questionnaires, one
        /// <questionnaire key>/<language>.toml each, besides those in each
        /// questionnaire's translations/ folder (and in their place for the
        /// same language): a licensee's texts kept outside the definitions
        translations_dir: PathBuf [DIR], shown("none");
    }

    /// Which plugin modules may serve: the service, `rescore` and the
    /// plugin tools.
    group plugins: PluginArgs, "Plugins" {
        /// Folder with one sub-folder per plugin, each holding one .wasm
        /// module and its fixtures/
        plugins_dir: PathBuf [DIR] = "plugins", shown("./plugins");
        /// SHA-256 (hex) of every plugin module allowed to serve,
        /// comma-separated (an array in the file); a module not listed is
        /// refused before it is compiled
        plugin_allow: List [LIST] = "", shown("none, so any module that passes its checks");
    }

    /// The compiled-code cache: the service and `rescore` (the plugin tools
    /// compile in memory).
    group plugin_cache: PluginCacheArgs, "Plugins" {
        /// Folder for compiled plugin code, so restarts do not recompile
        plugin_cache_dir: PathBuf [DIR], shown("<data-dir>/plugin-cache");
        /// File holding the key (64 hex digits) that authenticates compiled
        /// plugin code in the cache folder, made when missing; only the
        /// service's user may read it. Hosts sharing a cache folder share it
        plugin_cache_key_file: PathBuf [FILE], shown("<data-dir>/plugin-cache.key");
    }

    /// The listener: address, TLS, connection limits, proxies. `serve` only.
    group server: ServerArgs, "Server: listener, TLS and connections" {
        /// Address and port to listen on
        listen: SocketAddr [ADDR] = "127.0.0.1:8080";
        /// PEM file with the TLS certificate chain; with --tls-key the
        /// service serves HTTPS itself
        tls_cert: PathBuf [FILE],
            shown("plain HTTP, for loopback and for a TLS-terminating proxy listed in --trusted-proxies");
        /// PEM file with the TLS private key
        tls_key: PathBuf [FILE];
        /// Addresses or CIDR ranges of reverse proxies whose
        /// X-Forwarded-For is believed, comma-separated (an array in the
        /// file). A proxy listed here may also terminate TLS for the service
        trusted_proxies: List [LIST] = "", shown("none");
        /// The header the trusted proxies write the client's address in:
        /// x-forwarded-for (with X-Forwarded-Proto) or forwarded (RFC
        /// 7239). The other header is never read for the client
        proxy_header: ProxyHeader [HEADER] = "x-forwarded-for";
        /// Largest accepted request body in bytes; larger bodies get 413
        body_limit: usize [BYTES] = "1048576";
        /// Seconds a client has to send a request's headers, counted from
        /// the connection's start or the previous answer; slower
        /// connections are closed without an answer
        header_read_timeout: u64 [SECONDS] = "10";
        /// Seconds a client has to send a request's whole body once its
        /// headers are in; a later body is answered 408 and the connection
        /// closed
        request_body_timeout: u64 [SECONDS] = "30";
        /// Seconds a connection may stay open without a request after its
        /// last answer (or after it opened) before it is closed
        keep_alive_timeout: u64 [SECONDS] = "5";
        /// Seconds a client has to finish the TLS handshake when the
        /// service serves HTTPS itself
        tls_handshake_timeout: u64 [SECONDS] = "10";
        /// Client connections open at once; at the limit the oldest one
        /// that serves no request (idle, or in its TLS handshake) is closed
        /// to make room, and only when all serve one do more wait in the
        /// operating system's queue
        connection_limit: usize [N] = "512";
        /// Connections one client address (IPv6: one /64) may hold at once;
        /// one more is closed as soon as it is accepted. Trusted proxies
        /// are exempt
        connection_limit_per_client: usize [N] = "256";
        /// Whether to watch the plugin and questionnaire folders and reload
        /// what changes while serving
        watch: bool [BOOL] = "true";
        /// Address and port of the listener that serves /metrics alone,
        /// plain HTTP and without credentials, so bind it where only the
        /// monitoring system reaches; `off` for none. The main listener
        /// answers /metrics only with --metrics-bearer-file's bearer
        metrics_listen: MetricsListen [ADDR] = "127.0.0.1:9187";
        /// File holding a secret (at least 32 characters; surrounding white
        /// space is ignored) with which the main listener serves /metrics
        /// too, to `Authorization: Bearer <secret>`, for a monitoring
        /// system that reaches only that address
        metrics_bearer_file: PathBuf [FILE], shown("none: /metrics only on metrics_listen");
    }

    /// The service's database pool and writer queue. `serve` only (the other
    /// commands open a small pool of their own).
    group pool: PoolArgs, "Database connections of the service" {
        /// Database connections for reads (writes use one more)
        max_connections: u32 [N] = "8";
        /// Seconds a write may wait for room in the database writer's queue;
        /// past it the request is answered 503 `unavailable`
        write_queue_timeout: u64 [SECONDS] = "5";
        /// Seconds a request waits for a database connection (a free one, or
        /// the database to answer again after a restart); past it the
        /// request is answered 503 `unavailable`
        database_acquire_timeout: u64 [SECONDS] = "5";
    }

    /// Who is refused, and when: rate limits and the token table's
    /// staleness. `serve` only.
    group limits: LimitArgs, "Rate limits and credentials" {
        /// Requests without valid credentials (401, 403 https_required, a
        /// fill-out link that does not work) one client address may make in
        /// a burst before it is answered 429; IPv6 addresses count per /64
        anonymous_burst: u32 [N] = "200";
        /// Requests without valid credentials per second one client address
        /// may make after its burst; 0 turns this limit off
        anonymous_per_second: u32 [N] = "10";
        /// Requests one API token may make in a burst before it is answered
        /// 429
        token_burst: u32 [N] = "40000";
        /// Requests per second one API token may make after its burst; 0
        /// turns this limit off. The default is above what one host can
        /// serve (about 7,500 scored POSTs or 16,000 cheap GETs a second on
        /// two cores), so an EPD's bulk upload is never refused
        token_per_second: u32 [N] = "20000";
        /// Requests to /health, /livez, /readyz and /version one client
        /// address may make in a burst before it is answered 429; IPv6
        /// addresses count per /64
        probe_burst: u32 [N] = "100";
        /// Requests per second to those probes one client address may make
        /// after its burst; 0 turns this limit off
        probe_per_second: u32 [N] = "10";
        /// Opens of one respondent's link (a completing_url's Start button,
        /// a fill_out_url's) in a burst before it is answered 429; each may
        /// start a fill-out session
        link_burst: u32 [N] = "10";
        /// Opens of one respondent's link per minute after its burst; 0
        /// turns this limit off
        link_per_minute: u32 [N] = "2";
        /// Requests of one fill-out session (pages, submissions, the
        /// progress page) in a burst before it is answered 429
        session_burst: u32 [N] = "120";
        /// Requests of one fill-out session per minute after its burst; 0
        /// turns this limit off
        session_per_minute: u32 [N] = "60";
        /// Failed token reloads in a row (one every 2 s) after which every
        /// API credential is refused with 503 until a reload succeeds:
        /// revocations made elsewhere are not seen while reloads fail. 0
        /// never refuses
        token_reload_failure_limit: u32 [COUNT] = "30";
    }

    /// The respondents' pages and the links into them. `serve` only.
    group fill_out: FillOutArgs, "Fill-out pages and links" {
        /// The address respondents reach this service at, for the links it
        /// hands out (fill_out_url, completing_url): https://host[:port], or
        /// http for a loopback host
        public_url: String [URL],
            shown("http://<listen address>, or https:// when serving TLS");
        /// Origins (https://host[:port]) every token may name in return_to,
        /// progress_url and stylesheet, besides its own, comma-separated (an
        /// array in the file)
        allowed_origins: List [LIST] = "", shown("none");
        /// Secret that signs fill-out links and forms, at least 32
        /// characters. Hosts that share a database must share it; changing
        /// it makes every link handed out so far unusable
        fill_out_secret: String [TEXT],
            shown("a random secret, made once and kept in the database, so hosts on one database share it"),
            secret;
        /// File holding the secret that signs fill-out links (at least 32
        /// characters; surrounding white space is ignored), for a secret
        /// store that mounts secrets as files; instead of --fill-out-secret
        fill_out_secret_file: PathBuf [FILE], shown("none");
        /// Seconds a fill_out_url can be used after it was made; it can be
        /// used once
        fill_out_link_ttl: u64 [SECONDS] = "600";
        /// Seconds a completing_url works after it was handed out (in a
        /// response, a fill-out request or a callback); revoking the
        /// respondent's links ends it sooner
        completing_url_ttl: u64 [SECONDS] = "2592000", shown("2592000, 30 days");
        /// Seconds a fill-out session is kept after it ended, idled out or
        /// its link expired unused; then the scheduler deletes it (the
        /// access log keeps what was done)
        fill_out_session_retention: u64 [SECONDS] = "604800", shown("604800, 7 days");
    }

    /// The scheduler and the callbacks it sends. `serve` only.
    group scheduler: SchedulerArgs, "Scheduler and callbacks" {
        /// Seconds between scheduler passes (preparing due measurements,
        /// registering non-responses for expired ones); 0 turns the
        /// scheduler off in this process, for a host that only serves while
        /// another schedules
        scheduler_interval: u64 [SECONDS] = "60";
        /// Loopback, private or link-local networks (addresses or CIDR
        /// ranges, comma-separated; an array in the file) that callbacks may
        /// go to, e.g. an EPD on the hospital's own network. Callbacks to any
        /// other such address, written in the URL or looked up when sent,
        /// are refused
        callback_allowed_networks: List [LIST] = "", shown("none");
    }

    /// Alarms someone answers for (docs/api/alarms.md): the service, and
    /// `rescore`, which opens and closes alarms as outcomes change.
    group alarms: AlarmArgs, "Alarms" {
        /// Seconds a professional has to acknowledge an alarm (a stored
        /// outcome whose action is `alarm`) before the scheduler escalates
        /// it; alarm_rules may give a questionnaire its own. 60 to 2592000
        alarm_deadline: u64 [SECONDS] = "14400", shown("14400, 4 hours");
        /// Where raised and escalated alarms are sent as signed webhooks
        /// when the token that stored the response has no endpoint of its
        /// own (`outcomes token alarm-webhook`): an https URL (http only for
        /// a loopback host). Signed with the key `outcomes alarm
        /// webhook-secret` makes; its address must be public or in
        /// --callback-allowed-networks
        alarm_webhook_url: String [URL], shown("none: alarms go only to tokens' own endpoints");
    }

    file_only {
        /// Plugin limits per kind and per plugin (`[plugin_limits.scorer]`,
        /// `[plugin_limits.calculator]`, `[plugin_limits.overrides.<name>]`:
        /// fuel, fuel_per_input_byte, deadline_ms, memory_bytes,
        /// input_bytes, output_bytes); tables no flag can hold
        plugin_limits: LimitSettings, shown("each kind's defaults");
        /// Alarm settings per questionnaire (`[alarm_rules.<key>]`:
        /// alarm_deadline, seconds to acknowledge its alarms; and
        /// attention_deadline, which makes its `attention` outcomes raise
        /// alarms too, with that deadline)
        alarm_rules: AlarmRules,
            shown("none: alarm_deadline for every questionnaire's alarms; attention raises none");
    }
}
