//! Start-up: [`App::build`] is the one path from a configuration to a
//! bound service, shared by the `outcomes` binary and the black-box tests
//! (check the data folder, read the definitions, start the plugin runtime,
//! connect and migrate, import, bind, the link secret, the token table,
//! load the plugins); [`App::run`] starts the background loops (token
//! reloads, trials, upkeep, the watcher, the scheduler, the shadow
//! worker), serves until shutdown, then drains.
//!
//! This file assembles the parts every lower layer is handed (the auth
//! service, the scheduler's, the reloader, the shadow) and the
//! [`AppState`] the HTTP edge reads. Must not: hold request logic, or be
//! imported by anything below the edge.
//!
//! The loops' intervals: token reloads and the trials every 2 s; upkeep
//! every 5 s (the counted refusals of minutes that are over written, quiet
//! clients' rate-limit buckets dropped, histograms folded). A refused
//! plugin does not stop start-up; it is reported and the rest serve. After
//! shutdown: requests in flight finish, the scheduler's pass finishes, the
//! counted refusals are written, the pool is closed.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use arc_swap::ArcSwap;
use tokio::net::TcpListener;
use tower::Layer;

use crate::auth::at_rest::SecretsKey;
use crate::auth::destination::Destinations;
use crate::auth::limits::RateLimits;
use crate::auth::link_secret::{self, LinkSettings};
use crate::auth::metrics_bearer::MetricsBearer;
use crate::auth::service::{AuthService, AuthSettings};
use crate::auth::tokens::TokenTable;
use crate::clock::Clock;
use crate::config::Config;
use crate::metrics::Metrics;
use crate::plugins::Plugins;
use crate::reload::Reloader;
use crate::scheduler::Scheduler;
use crate::scheduler::heartbeat::Heartbeat;
use crate::shadow::{self, Shadow};
use crate::store::{self, Completions, Store, StoreOptions};
use crate::trials::Trials;
use crate::{AppState, Parts, api, auth, definitions, fillout, reload, scheduler};
use crate::{server, telemetry, tls};

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
        let plugins = Arc::new(
            Plugins::new(config.plugins.clone(), metrics.clone())
                .context("starting the plugin runtime")?,
        );
        let trials = Arc::new(Trials::new(plugins.clone()));
        // Every completion the store stores goes to the shadow's queue.
        let queue = shadow::Queue::new(trials.clone(), metrics.clone());
        let options = StoreOptions {
            max_connections: config.max_connections,
            write_queue_timeout: config.write_queue_timeout,
            metrics: metrics.store(),
            acquire_timeout: config.database_acquire_timeout,
            completions: Completions::to(Arc::new(queue.clone())),
            alarms: Arc::new(config.alarms.clone()),
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
        let catalog = Arc::new(ArcSwap::from_pointee(catalog));
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
        let metrics_bearer = match &config.metrics_bearer_file {
            Some(path) => Some(MetricsBearer::read(path)?),
            None => None,
        };
        let secrets_key = Arc::new(
            SecretsKey::load_or_create(&config.secrets_key_file)
                .context("reading the secrets key")?,
        );
        let link_settings = LinkSettings {
            secret: config.fill_out_secret.as_ref(),
            public_url: config.public_url.as_deref(),
            link_ttl: config.fill_out_link_ttl,
            completing_ttl: config.completing_url_ttl,
        };
        let links = Arc::new(
            link_secret::signer(
                link_settings,
                &store,
                &secrets_key,
                listener.local_addr()?,
                tls.is_some(),
                clock.now(),
            )
            .await?,
        );
        let callbacks = scheduler::Sender::new(
            Destinations::new(config.callback_allowed_networks.clone()),
            secrets_key.clone(),
            links.clone(),
        )
        .context("building the HTTP client for callbacks")?;
        let auth = AuthService::new(
            store.clone(),
            clock.clone(),
            token_table(&store).await?,
            RateLimits::new(config.anonymous_limit, config.token_limit)
                .with_probes(config.probe_limit)
                .with_respondents(config.respondent_limits),
            AuthSettings {
                secure: tls.is_some(),
                trusted_proxies: config.trusted_proxies.clone(),
                token_reload_failure_limit: config.token_reload_failure_limit,
            },
        );
        let scheduler = Arc::new(Scheduler {
            store: store.clone(),
            catalog: catalog.clone(),
            time_zone: config.time_zone,
            clock: clock.clone(),
            metrics: metrics.clone(),
            heartbeat: Heartbeat::new(clock.now()),
            callbacks,
            alarm_view: crate::api::alarms::delivered_json,
            sessions: scheduler::SessionRetention {
                retention: chrono::Duration::from_std(config.fill_out_session_retention)?,
                link_ttl: chrono::Duration::from_std(config.fill_out_link_ttl)?,
            },
        });
        let reloader = Arc::new(Reloader {
            plugins: plugins.clone(),
            store: store.clone(),
            clock: clock.clone(),
            metrics: metrics.clone(),
            catalog: catalog.clone(),
            questionnaires_dir: config.questionnaires_dir.clone(),
            protocols_dir: config.protocols_dir.clone(),
            translations_dir: config.translations_dir.clone(),
            definition_reloads: tokio::sync::watch::Sender::new(0),
        });
        let shadow = Shadow::new(
            queue,
            store.clone(),
            clock.clone(),
            secrets_key.clone(),
            metrics.clone(),
        );
        let state = AppState::new(Parts {
            config,
            store,
            catalog,
            clock,
            plugins,
            trials,
            metrics,
            metrics_addr,
            metrics_bearer,
            readiness: Default::default(),
            links,
            secrets_key,
            auth,
            scheduler,
            reloader,
            shadow,
        });
        let report = state.reload_plugins().await;
        tracing::info!(
            dir = %state.config().plugins.dir.display(),
            loaded = report.loaded.len(),
            refused = report.failed.len(),
            "plugins loaded"
        );
        if let Err(e) = shadow::refresh(state.shadow()).await {
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
        let state = self.state.clone();
        let every = std::time::Duration::from_secs;
        let reload = tokio::spawn(reload_tokens_every(state.auth().clone(), every(2)));
        let shadow_worker = tokio::spawn(shadow::run(state.shadow().clone()));
        let trials = tokio::spawn(refresh_trials_every(state.shadow().clone(), every(2)));
        let (stop_upkeep, upkeep_stopped) = tokio::sync::oneshot::channel::<()>();
        let upkeep = tokio::spawn(upkeep_every(
            state.auth().clone(),
            state.metrics().clone(),
            every(5),
            upkeep_stopped,
        ));
        let watch = if state.config().watch {
            match reload::start(state.reloader().clone()) {
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
        let scheduler = state.config().scheduler_interval.map(|interval| {
            tokio::spawn(scheduler::run(
                state.scheduler().clone(),
                interval,
                async move {
                    let _ = scheduler_stopped.await;
                },
            ))
        });
        let mut router = api::router(state.clone())
            .merge(fillout::router(state.clone()))
            .layer(axum::middleware::from_fn_with_state(
                state.metrics().clone(),
                api::observe::record,
            ));
        if self.tls.is_some() {
            router = router.layer(axum::middleware::map_response(
                tls::strict_transport_security,
            ));
        }
        let router = telemetry::layer(router);
        let service = tower::util::MapRequestLayer::new(api::normalize).layer(router);
        let limits = state.config().connections;
        // Both listeners stop on the one signal.
        let shutdown = futures_util::FutureExt::shared(shutdown);
        let metrics_server = self.metrics_listener.map(|listener| {
            let service = api::scrape::router(state.clone());
            tokio::spawn(server::serve(
                listener,
                None,
                limits,
                &[],
                service,
                shutdown.clone(),
            ))
        });
        let trusted = self.state.config().trusted_proxies.clone();
        server::serve(self.listener, self.tls, limits, &trusted, service, shutdown).await?;
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
        state.auth().flush_refusals().await;
        state.store().close().await;
        Ok(())
    }
}

/// The API tokens as stored, with warnings about what an operator should
/// do.
async fn token_table(store: &Store) -> anyhow::Result<TokenTable> {
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
    Ok(tokens)
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

/// Writes the counted refusals of minutes that are over, lets the rate
/// limits forget clients that are quiet again, and folds recent histogram
/// values into their buckets, every `every`, until told to stop (a write
/// in progress finishes).
async fn upkeep_every(
    auth: AuthService,
    metrics: Arc<Metrics>,
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
        auth.flush_past_refusals().await;
        auth.limits().prune();
        metrics.upkeep();
    }
}

/// Keeps the candidate and promoted scorer versions in step with the
/// database (`outcomes plugin candidate|promote|discard` from any process
/// take effect on every host within `every`).
async fn refresh_trials_every(shadow: Shadow, every: std::time::Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(e) = shadow::refresh(&shadow).await {
            tracing::warn!(error = %e, "reading candidate scorer versions failed; keeping the previous ones");
        }
    }
}

/// Keeps the token table in step with the database (revocations made by
/// another process take effect within `every`).
async fn reload_tokens_every(auth: AuthService, every: std::time::Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(e) = auth.reload_tokens().await {
            tracing::warn!(
                error = %e,
                tokens = auth.token_freshness().as_str(),
                "reloading API tokens failed; keeping the previous table"
            );
        }
    }
}
