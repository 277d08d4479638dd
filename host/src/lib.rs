//! The outcomes host: REST API, storage, plugin runtime and scheduler of
//! the routine outcome monitoring service.
//!
//! [`App::build`] is the one start-up path, shared by the `outcomes` binary
//! and the black-box tests: connect, migrate, import definitions, bind.

pub mod api;
pub mod auth;
pub mod build_info;
pub mod clock;
pub mod commands;
pub mod config;
pub mod definitions;
pub mod domain;
pub mod error;
pub mod fillout;
pub mod metrics;
pub mod plugins;
pub mod readiness;
pub mod reload;
pub mod scheduler;
pub mod scoring;
pub mod server;
pub mod shadow;
pub mod store;
pub mod telemetry;
pub mod tls;
pub mod verify;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use arc_swap::ArcSwap;
use chrono::{DateTime, Utc};
use tokio::net::TcpListener;
use tower::Layer;

use crate::auth::limits::RateLimits;
use crate::auth::links::Links;
use crate::auth::refusals::Refusals;
use crate::auth::tokens::{Freshness, STALE_AFTER_FAILED_RELOADS, TokenTable};
use crate::clock::Clock;
use crate::config::{Config, SecretSource};
use crate::domain::catalog::Catalog;
use crate::metrics::Metrics;
use crate::plugins::Plugins;
use crate::store::{Store, StoreOptions};

/// What every handler can reach. Cheap to clone.
#[derive(Debug, Clone)]
pub struct AppState(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    config: Config,
    store: Store,
    catalog: ArcSwap<Catalog>,
    tokens: ArcSwap<TokenTable>,
    /// Serializes token reloads, so a slow reload that read the table before
    /// a change cannot store it after a later one did.
    reload: tokio::sync::Mutex<()>,
    /// Token reloads that failed in a row since the last good one, and the
    /// last one's error (what a refused credential is answered with once
    /// the table expired).
    reload_failures: std::sync::Mutex<(u32, Option<store::StoreError>)>,
    clock: Arc<dyn Clock>,
    /// Whether requests arrive over TLS terminated by this process.
    secure: bool,
    plugins: Arc<Plugins>,
    metrics: Arc<Metrics>,
    /// Where `/metrics` is served apart from the API (`metrics_listen`),
    /// as bound.
    metrics_addr: Option<SocketAddr>,
    /// Signs and checks the links into the fill-out pages.
    links: Links,
    /// Seals the secrets kept in the database (the link secret, webhook
    /// keys) with a key kept outside it.
    secrets_key: auth::at_rest::SecretsKey,
    /// Sends the fill-out requests' callbacks (the scheduler's).
    callback_client: reqwest::Client,
    /// Counts definition reloads, successful or not, for whoever waits on
    /// one (tests; the watcher's callers).
    definition_reloads: tokio::sync::watch::Sender<u64>,
    /// Requests per client address without valid credentials, and per
    /// token.
    limits: RateLimits,
    /// Refusals without valid credentials, counted until their row is
    /// written.
    refusals: Refusals,
    /// When the scheduler last finished a pass (`/readyz`).
    heartbeat: scheduler::heartbeat::Heartbeat,
    // (#21 verify)
    /// The queue to the shadow-scoring worker (`shadow.rs`).
    shadow: shadow::Shadow,
}

impl AppState {
    pub fn config(&self) -> &Config {
        &self.0.config
    }

    pub fn store(&self) -> &Store {
        &self.0.store
    }

    /// The current catalog. Hold it for one request: a reload swaps in a
    /// new one without disturbing requests that hold the old.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.0.catalog.load_full()
    }

    /// Replaces the catalog atomically.
    pub fn set_catalog(&self, catalog: Catalog) {
        self.0.catalog.store(Arc::new(catalog));
    }

    /// The API tokens as last loaded.
    pub fn tokens(&self) -> Arc<TokenTable> {
        self.0.tokens.load_full()
    }

    /// Reloads the API tokens from the database. The host does this every
    /// few seconds, so changes made with `outcomes token` from another
    /// process take effect without a restart. Failures in a row make the
    /// table stale (remembered verifications dropped), then expired
    /// (credentials refused); a success makes it current again.
    pub async fn reload_tokens(&self) -> Result<(), store::StoreError> {
        let _one_at_a_time = self.0.reload.lock().await;
        match self.0.store.tokens().await {
            Ok(stored) => {
                self.0.tokens.store(Arc::new(TokenTable::new(stored)));
                let (failed, _) = std::mem::take(&mut *self.reload_failures());
                if failed >= STALE_AFTER_FAILED_RELOADS {
                    tracing::warn!(
                        failed,
                        "API tokens reloaded again; the token table is current"
                    );
                }
                Ok(())
            }
            Err(e) => {
                let failed = {
                    let mut failures = self.reload_failures();
                    failures.0 = failures.0.saturating_add(1);
                    failures.1 = Some(e.clone());
                    failures.0
                };
                if failed >= STALE_AFTER_FAILED_RELOADS {
                    self.tokens().forget_verified();
                }
                if failed == STALE_AFTER_FAILED_RELOADS {
                    tracing::error!(
                        failed,
                        error = %e,
                        "API token reloads keep failing: the token table is stale (revocations made \
                         since are not seen); every JWT is verified in full until a reload succeeds"
                    );
                }
                if Some(failed) == self.0.config.token_reload_failure_limit {
                    tracing::error!(
                        failed,
                        error = %e,
                        "API token reloads keep failing: every API credential is refused with 503 \
                         until a reload succeeds (token_reload_failure_limit)"
                    );
                }
                Err(e)
            }
        }
    }

    /// How far the token table in use can be trusted (`/health`).
    pub fn token_freshness(&self) -> Freshness {
        let failed = self.reload_failures().0;
        match self.0.config.token_reload_failure_limit {
            Some(limit) if failed >= limit => Freshness::Expired,
            _ if failed >= STALE_AFTER_FAILED_RELOADS => Freshness::Stale,
            _ => Freshness::Current,
        }
    }

    /// The last reload's error once the token table has expired: every
    /// credential is then refused with it (503).
    pub fn tokens_expired(&self) -> Option<store::StoreError> {
        let failures = self.reload_failures();
        match self.0.config.token_reload_failure_limit {
            Some(limit) if failures.0 >= limit => failures.1.clone(),
            _ => None,
        }
    }

    fn reload_failures(&self) -> std::sync::MutexGuard<'_, (u32, Option<store::StoreError>)> {
        self.0
            .reload_failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether this process terminates TLS itself. Behind a proxy, whether
    /// a request came over HTTPS is the proxy's to say
    /// (`auth::forwarded::Remote`).
    pub fn is_secure(&self) -> bool {
        self.0.secure
    }

    /// The plugin runtime.
    pub fn plugins(&self) -> &Arc<Plugins> {
        &self.0.plugins
    }

    /// The process's metrics.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.0.metrics
    }

    /// The address `/metrics` is served on when `metrics_listen` is set
    /// (the real port when 0 was asked).
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.0.metrics_addr
    }

    /// The queue to the shadow-scoring worker.
    pub fn shadow(&self) -> &shadow::Shadow {
        &self.0.shadow
    }

    /// The key that seals secrets kept in the database
    /// (docs/operations.md#secrets).
    pub fn secrets_key(&self) -> &auth::at_rest::SecretsKey {
        &self.0.secrets_key
    }

    /// The signed links into the fill-out pages.
    pub fn links(&self) -> &Links {
        &self.0.links
    }

    /// The HTTP client the scheduler sends callbacks with.
    pub fn callback_client(&self) -> &reqwest::Client {
        &self.0.callback_client
    }

    /// Reloads the plugin directory (blocking work on a blocking thread)
    /// and archives every serving module version by hash, so outcomes it
    /// computes can be recomputed exactly later.
    pub async fn reload_plugins(&self) -> plugins::ReloadReport {
        let plugins = self.0.plugins.clone();
        let now = self.now();
        let report = tokio::task::spawn_blocking(move || plugins.reload(now))
            .await
            .unwrap_or_default();
        archive_modules(&self.0.store, &report.loaded, now).await;
        report
    }

    /// Tells of every definition reload attempt (the count so far).
    pub fn subscribe_definition_reloads(&self) -> tokio::sync::watch::Receiver<u64> {
        self.0.definition_reloads.subscribe()
    }

    /// Re-reads and re-imports the questionnaire and protocol definitions
    /// and swaps the catalog. Invalid definitions are logged and counted;
    /// the catalog in use stays.
    pub async fn reload_definitions(&self) -> bool {
        let config = &self.0.config;
        let result = match definitions::load_with(
            &config.questionnaires_dir,
            &config.protocols_dir,
            config.translations_dir.as_deref(),
            Some(&self.catalog()),
        ) {
            Ok(defs) => self
                .0
                .store
                .import_definitions(defs.questionnaires, defs.protocols, self.now())
                .await
                .map_err(anyhow::Error::from),
            Err(e) => Err(anyhow::Error::from(e)),
        };
        let loaded = match result {
            Ok(catalog) => {
                self.set_catalog(catalog);
                tracing::info!("definitions reloaded");
                self.0
                    .metrics
                    .inc("outcomes_definition_reloads_total", &[("result", "loaded")]);
                true
            }
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), "definitions not reloaded; the previous ones stay in use");
                self.0
                    .metrics
                    .inc("outcomes_definition_reloads_total", &[("result", "failed")]);
                false
            }
        };
        // After the swap, so a waiter sees the new catalog.
        self.0.definition_reloads.send_modify(|n| *n += 1);
        loaded
    }

    /// The current time, from the injected clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.0.clock.now()
    }

    /// When this process's scheduler last finished a pass.
    pub fn scheduler_heartbeat(&self) -> &scheduler::heartbeat::Heartbeat {
        &self.0.heartbeat
    }

    /// The rate limits.
    pub fn limits(&self) -> &RateLimits {
        &self.0.limits
    }

    /// Records a refusal without valid credentials from `client` in the
    /// access log, counted with the others of its minute
    /// (docs/api/rights.md#access-log); writes the rows that are due.
    pub async fn count_refusal(&self, mut entry: store::AccessEntry, client: std::net::IpAddr) {
        entry.client = auth::limits::ClientKey::of(client).to_string();
        let known = entry
            .claimed_key
            .as_deref()
            .is_some_and(|key| self.tokens().knows(key));
        let due = self.0.refusals.count(entry, known);
        self.write_refusals(due).await;
    }

    /// Writes the counted refusals of minutes that are over.
    pub async fn flush_past_refusals(&self) {
        let due = self.0.refusals.take_before(self.now());
        self.write_refusals(due).await;
    }

    /// Writes every counted refusal now (at shutdown; tests).
    pub async fn flush_refusals(&self) {
        let due = self.0.refusals.take_all();
        self.write_refusals(due).await;
    }

    async fn write_refusals(&self, rows: Vec<store::AccessEntry>) {
        if rows.is_empty() {
            return;
        }
        let count = rows.len();
        if let Err(e) = self.0.store.append_accesses(rows).await {
            tracing::error!(error = %e, rows = count, "counted refusals were not written to the access log");
        }
    }
}

/// A built service, bound to its address and ready to run.
#[derive(Debug)]
pub struct App {
    state: AppState,
    listener: TcpListener,
    /// `/metrics` alone, when `metrics_listen` is set.
    metrics_listener: Option<TcpListener>,
    tls: Option<Arc<rustls::ServerConfig>>,
}

impl App {
    /// Reads the definitions, connects to the database, applies migrations,
    /// imports the definitions and binds the listener. Fails with a message
    /// that says what to fix.
    pub async fn build(config: Config, clock: Arc<dyn Clock>) -> anyhow::Result<App> {
        private_data_dir(&config.data_dir)?;
        let definitions = definitions::load_with(
            &config.questionnaires_dir,
            &config.protocols_dir,
            config.translations_dir.as_deref(),
            None,
        )?;
        let metrics = Arc::new(Metrics::new());
        let options = StoreOptions {
            max_connections: config.max_connections,
            write_queue_timeout: config.write_queue_timeout,
            metrics: metrics.store(),
            acquire_timeout: config.database_acquire_timeout,
        };
        let store = Store::connect(&config.database_url, &options)
            .await
            .with_context(|| {
                format!(
                    "connecting to the database {}",
                    store::redact(&config.database_url)
                )
            })?;
        store.migrate().await.context("applying migrations")?;
        let counts = (
            definitions.questionnaires.len(),
            definitions.protocols.len(),
        );
        let catalog = store
            .import_definitions(
                definitions.questionnaires,
                definitions.protocols,
                clock.now(),
            )
            .await
            .context("importing questionnaire and protocol definitions")?;
        tracing::info!(
            questionnaires = counts.0,
            protocols = counts.1,
            "definitions loaded"
        );
        let plugins = Arc::new(
            Plugins::new(config.plugins.clone(), metrics.clone())
                .context("starting the plugin runtime")?,
        );
        let tls = match &config.tls {
            Some(files) => Some(tls::server_config(&files.cert, &files.key)?),
            None => None,
        };
        for warning in
            auth::forwarded::unsafe_settings(config.listen, tls.is_some(), &config.trusted_proxies)
        {
            tracing::warn!("unsafe settings: {warning}");
        }
        let listener = TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("listening on {}", config.listen))?;
        let metrics_listener = match config.metrics_listen {
            Some(addr) => Some(
                TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("listening on {addr} (metrics_listen)"))?,
            ),
            None => None,
        };
        let metrics_addr = match &metrics_listener {
            Some(l) => Some(l.local_addr()?),
            None => None,
        };
        let secrets_key = auth::at_rest::SecretsKey::load_or_create(&config.secrets_key_file)
            .context("reading the secrets key")?;
        let links = links(
            &config,
            &store,
            &secrets_key,
            listener.local_addr()?,
            tls.is_some(),
            clock.now(),
        )
        .await?;
        let callback_client = scheduler::callbacks::client(auth::destination::Destinations::new(
            config.callback_allowed_networks.clone(),
        ))
        .context("building the HTTP client for callbacks")?;
        let tokens = TokenTable::new(store.tokens().await.context("reading API tokens")?);
        let unpinned = tokens.unpinned();
        if !unpinned.is_empty() {
            tracing::warn!(
                tokens = %unpinned.join(","),
                "JWT keys registered before algorithms were recorded accept both RS256 and RS512; \
                 pin each to the one its EPD signs with: `outcomes token add-key KEY --public-key FILE \
                 --algorithm RS256|RS512`"
            );
        }
        if !tokens.has_active() {
            tracing::warn!(
                "no API token exists, so every API request is refused with 401. Create one with \
                 `outcomes token create --key my-epd --rights all` (from a checkout: \
                 `cargo run -p host --bin outcomes -- token create --key my-epd --rights all`)"
            );
        }
        let limits = RateLimits::new(config.anonymous_limit, config.token_limit);
        let heartbeat = scheduler::heartbeat::Heartbeat::new(clock.now());
        let state = AppState(Arc::new(Inner {
            config,
            store,
            catalog: ArcSwap::from_pointee(catalog),
            tokens: ArcSwap::from_pointee(tokens),
            reload: tokio::sync::Mutex::new(()),
            reload_failures: std::sync::Mutex::default(),
            clock,
            secure: tls.is_some(),
            plugins,
            metrics,
            metrics_addr,
            links,
            secrets_key,
            callback_client,
            definition_reloads: tokio::sync::watch::Sender::new(0),
            limits,
            refusals: Refusals::default(),
            heartbeat,
            shadow: shadow::Shadow::default(),
        }));
        let report = state.reload_plugins().await;
        tracing::info!(
            dir = %state.config().plugins.dir.display(),
            loaded = report.loaded.len(),
            refused = report.failed.len(),
            "plugins loaded"
        );
        if let Err(e) = shadow::refresh(&state).await {
            tracing::warn!(error = %e, "candidate scorer versions not read; tried again while serving");
        }
        Ok(App {
            state,
            listener,
            metrics_listener,
            tls,
        })
    }

    /// Whether the service serves HTTPS itself.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The address the listener is bound to (the real port when 0 was asked).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    pub fn state(&self) -> AppState {
        self.state.clone()
    }

    /// Serves until `shutdown` completes, then lets requests in flight
    /// finish and closes the database.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let store = self.state.store().clone();
        let reload = tokio::spawn(reload_tokens_every(
            self.state.clone(),
            std::time::Duration::from_secs(2),
        ));
        let shadow_worker = tokio::spawn(shadow::run(self.state.clone()));
        let trials = tokio::spawn(refresh_trials_every(
            self.state.clone(),
            std::time::Duration::from_secs(2),
        ));
        let (stop_upkeep, upkeep_stopped) = tokio::sync::oneshot::channel::<()>();
        let upkeep = tokio::spawn(upkeep_every(
            self.state.clone(),
            std::time::Duration::from_secs(5),
            upkeep_stopped,
        ));
        let state = self.state.clone();
        let watch = if self.state.config().watch {
            match reload::start(self.state.clone()) {
                Ok(w) => Some(w),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot watch the plugin and definition folders; changes need a restart");
                    None
                }
            }
        } else {
            None
        };
        // The scheduler stops with the server: a pass in progress finishes.
        let (stop_scheduler, scheduler_stopped) = tokio::sync::oneshot::channel::<()>();
        let scheduler = self.state.config().scheduler_interval.map(|every| {
            tokio::spawn(scheduler::run(self.state.clone(), every, async move {
                let _ = scheduler_stopped.await;
            }))
        });
        let mut router = api::router(self.state.clone())
            .merge(fillout::router(self.state.clone()))
            .layer(axum::middleware::from_fn_with_state(
                self.state.metrics().clone(),
                api::observe::record,
            ));
        if self.tls.is_some() {
            router = router.layer(axum::middleware::map_response(
                tls::strict_transport_security,
            ));
        }
        let router = telemetry::layer(router);
        let service = tower::util::MapRequestLayer::new(api::normalize).layer(router);
        let limits = self.state.config().connections;
        // Both listeners stop on the one signal.
        let shutdown = futures_util::FutureExt::shared(shutdown);
        let metrics_server = self.metrics_listener.map(|listener| {
            let service = api::scrape::router(self.state.clone());
            tokio::spawn(server::serve(
                listener,
                None,
                limits,
                service,
                shutdown.clone(),
            ))
        });
        server::serve(self.listener, self.tls, limits, service, shutdown).await?;
        if let Some(metrics_server) = metrics_server {
            let _ = metrics_server.await;
        }
        reload.abort();
        // Shadow scoring is a trial: jobs still queued are not waited for.
        trials.abort();
        shadow_worker.abort();
        drop(watch);
        let _ = stop_scheduler.send(());
        if let Some(scheduler) = scheduler {
            let _ = scheduler.await;
        }
        // Refusals counted so far are written before the database closes.
        let _ = stop_upkeep.send(());
        let _ = upkeep.await;
        state.flush_refusals().await;
        store.close().await;
        Ok(())
    }
}

/// Makes the data folder (0700) when missing, and takes group and others'
/// access away from one that exists: it holds the database, the plugin
/// cache and its key (docs/operations.md#files-and-permissions).
fn private_data_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating the data folder {}", dir.display()))?;
    let mode = std::fs::metadata(dir)
        .with_context(|| format!("the data folder {}", dir.display()))?
        .permissions()
        .mode()
        & 0o777;
    if mode & 0o077 != 0 {
        match std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)) {
            Ok(()) => {
                tracing::info!(dir = %dir.display(), was = %format!("{mode:04o}"), "data folder set to mode 0700")
            }
            Err(e) => {
                tracing::warn!(dir = %dir.display(), mode = %format!("{mode:04o}"), error = %e, "others may use the data folder and its mode cannot be changed")
            }
        }
    }
    Ok(())
}

/// The signer of fill-out links: the configured secret, else the one the
/// hosts of this database share (made on first start); the configured
/// public URL, else the address the service is bound to.
async fn links(
    config: &Config,
    store: &Store,
    secrets_key: &auth::at_rest::SecretsKey,
    bound: SocketAddr,
    tls: bool,
    now: DateTime<Utc>,
) -> anyhow::Result<Links> {
    let secret = link_secret(config, store, secrets_key, now).await?;
    let public_url = match &config.public_url {
        Some(url) => url.clone(),
        None => {
            let scheme = if tls { "https" } else { "http" };
            let mut addr = bound;
            if addr.ip().is_unspecified() {
                tracing::warn!(
                    listen = %addr,
                    "the service listens on every address but no --public-url is set: fill-out links \
                     name 127.0.0.1, which only this machine can open"
                );
                addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
            }
            format!("{scheme}://{addr}")
        }
    };
    let window = chrono::Duration::from_std(config.fill_out_link_ttl)
        .context("the fill-out link lifetime")?;
    let completing = chrono::Duration::from_std(config.completing_url_ttl)
        .context("the completing_url lifetime")?;
    Ok(Links::new(
        secret.as_bytes(),
        &public_url,
        window,
        completing,
    ))
}

/// The name of the link-signing secret among the database's secrets.
const LINK_SECRET: &str = "fill_out_links";

/// The secret that signs fill-out links (docs/operations.md#secrets): the
/// configured one (text or a file), else the one kept in the database,
/// sealed with the secrets key. A secret an older version kept there in
/// plain text is sealed now, so links handed out before keep working.
async fn link_secret(
    config: &Config,
    store: &Store,
    key: &auth::at_rest::SecretsKey,
    now: DateTime<Utc>,
) -> anyhow::Result<String> {
    match &config.fill_out_secret {
        Some(SecretSource::Text(secret)) => return Ok(secret.clone()),
        Some(SecretSource::File(path)) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading fill_out_secret_file {}", path.display()))?;
            let secret = text.trim().to_owned();
            crate::config::check_link_secret(&secret).map_err(|problem| {
                anyhow::anyhow!(
                    "fill_out_secret_file {}: the secret {problem}",
                    path.display()
                )
            })?;
            return Ok(secret);
        }
        None => {}
    }
    let stored = store
        .host_secret(
            LINK_SECRET,
            || key.seal(LINK_SECRET, &auth::secret::generate()),
            now,
        )
        .await
        .context("reading the secret of fill-out links")?;
    if auth::at_rest::is_sealed(&stored) {
        return Ok(key.open(LINK_SECRET, &stored)?);
    }
    store
        .replace_host_secret(LINK_SECRET, &stored, key.seal(LINK_SECRET, &stored))
        .await
        .context("sealing the secret of fill-out links")?;
    tracing::info!("the secret of fill-out links kept in the database is now encrypted");
    Ok(stored)
}

/// Archives module versions by hash (a no-op for versions already
/// archived), so any outcome they compute can be recomputed exactly
/// (`outcomes rescore --exact`). A failure is logged: it costs
/// reproducibility later, never a response now.
pub async fn archive_modules(store: &Store, plugins: &[Arc<plugins::Plugin>], now: DateTime<Utc>) {
    for plugin in plugins {
        let module = store::ArchivedModule {
            sha256: plugin.sha256.clone(),
            name: plugin.name().to_owned(),
            kind: plugin.kind().to_string(),
            version: plugin.version().to_owned(),
            bytes: plugin.bytes.to_vec(),
        };
        if let Err(e) = store.archive_module(module, now).await {
            tracing::warn!(plugin = plugin.name(), error = %e, "could not archive the plugin module");
        }
    }
}

/// Writes the counted refusals of minutes that are over, lets the rate
/// limits forget clients that are quiet again, and folds recent histogram
/// values into their buckets, every `every`, until told to stop (a write
/// in progress finishes).
async fn upkeep_every(
    state: AppState,
    every: std::time::Duration,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = &mut stop => return,
            _ = tick.tick() => {}
        }
        state.flush_past_refusals().await;
        state.limits().prune();
        state.metrics().upkeep();
    }
}

/// Keeps the candidate and promoted scorer versions in step with the
/// database (`outcomes plugin candidate|promote|discard` from any process
/// take effect on every host within `every`).
async fn refresh_trials_every(state: AppState, every: std::time::Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(e) = shadow::refresh(&state).await {
            tracing::warn!(error = %e, "reading candidate scorer versions failed; keeping the previous ones");
        }
    }
}

/// Keeps the token table in step with the database (revocations made by
/// another process take effect within `every`).
async fn reload_tokens_every(state: AppState, every: std::time::Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(e) = state.reload_tokens().await {
            tracing::warn!(
                error = %e,
                tokens = state.token_freshness().as_str(),
                "reloading API tokens failed; keeping the previous table"
            );
        }
    }
}
