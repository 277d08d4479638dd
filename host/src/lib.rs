//! The outcomes host: REST API, storage, plugin runtime and scheduler of
//! the routine outcome monitoring service.
//!
//! This file is the module list and [`AppState`], the plain state that the
//! HTTP edge (`api/`, `fillout/`), the commands and the tests read.
//! Start-up (`startup.rs`, [`startup::App::build`]: the one path shared by
//! the `outcomes` binary and the black-box tests) assembles it. Nothing
//! below the edge takes it: the scheduler, the shadow, the reloads, the
//! auth guard and readiness are each handed the parts they use
//! (`host/tests/layers` holds that).

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
pub mod startup;
pub mod store;
pub mod telemetry;
pub mod tls;
pub mod trials;
pub mod verify;

use std::net::SocketAddr;
use std::sync::Arc;

use arc_swap::ArcSwap;
use chrono::{DateTime, Utc};

use crate::auth::at_rest::SecretsKey;
use crate::auth::links::Links;
use crate::auth::metrics_bearer::MetricsBearer;
use crate::auth::service::AuthService;
use crate::clock::Clock;
use crate::config::Config;
use crate::domain::catalog::Catalog;
use crate::metrics::Metrics;
use crate::plugins::Plugins;
use crate::reload::Reloader;
use crate::scheduler::Scheduler;
use crate::shadow::Shadow;
use crate::store::Store;
use crate::trials::Trials;

/// What every handler can reach. Cheap to clone.
#[derive(Debug, Clone)]
pub struct AppState(Arc<Parts>);

/// What the state holds, as start-up assembles it; each lower layer was
/// handed its own part (`auth`, `scheduler`, `reloader`, `shadow`).
#[derive(Debug)]
pub struct Parts {
    pub config: Config,
    pub store: Store,
    /// The catalog in use; a definitions reload swaps it whole.
    pub catalog: Arc<ArcSwap<Catalog>>,
    /// The clock every part reads (tests set it).
    pub clock: Arc<dyn Clock>,
    pub plugins: Arc<Plugins>,
    /// Which version of a scorer serves, and which is on trial.
    pub trials: Arc<Trials>,
    pub metrics: Arc<Metrics>,
    /// Where `/metrics` is served apart from the API (`metrics_listen`),
    /// as bound.
    pub metrics_addr: Option<SocketAddr>,
    /// The bearer with which the main listener serves `/metrics`
    /// (`metrics_bearer_file`); None: it answers 404.
    pub metrics_bearer: Option<MetricsBearer>,
    /// The last readiness answer, given again for a second.
    pub readiness: readiness::Recent,
    /// Signs and checks the links into the fill-out pages.
    pub links: Arc<Links>,
    /// Seals the secrets kept in the database (the link secret, webhook
    /// keys) with a key kept outside it.
    pub secrets_key: Arc<SecretsKey>,
    /// Tokens, rate limits, counted refusals: what the guard is given.
    pub auth: AuthService,
    /// What the scheduler works with, heartbeat included.
    pub scheduler: Arc<Scheduler>,
    /// Plugin and definition reloads.
    pub reloader: Arc<Reloader>,
    /// Shadow scoring: the queue the store hands stored completions to.
    pub shadow: Shadow,
}

impl AppState {
    pub fn new(parts: Parts) -> AppState {
        AppState(Arc::new(parts))
    }

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

    /// The current time, from the injected clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.0.clock.now()
    }

    /// The injected clock, for work that outlives a request's `now` (an
    /// import reads the time for each line).
    pub fn clock(&self) -> Arc<dyn Clock> {
        self.0.clock.clone()
    }

    /// The plugin runtime.
    pub fn plugins(&self) -> &Arc<Plugins> {
        &self.0.plugins
    }

    /// Which version of a scorer serves, and which is on trial.
    pub fn trials(&self) -> &Arc<Trials> {
        &self.0.trials
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

    /// The bearer with which the main listener serves `/metrics`, if
    /// configured.
    pub fn metrics_bearer(&self) -> Option<&MetricsBearer> {
        self.0.metrics_bearer.as_ref()
    }

    /// The signed links into the fill-out pages.
    pub fn links(&self) -> &Links {
        &self.0.links
    }

    /// The key that seals secrets kept in the database
    /// (docs/operations.md#secrets).
    pub fn secrets_key(&self) -> &SecretsKey {
        &self.0.secrets_key
    }

    /// Tokens, rate limits and counted refusals.
    pub fn auth(&self) -> &AuthService {
        &self.0.auth
    }

    /// What the scheduler works with (tests call `scheduler::tick` on it).
    pub fn scheduler(&self) -> &Arc<Scheduler> {
        &self.0.scheduler
    }

    /// Plugin and definition reloads.
    pub fn reloader(&self) -> &Arc<Reloader> {
        &self.0.reloader
    }

    /// Shadow scoring.
    pub fn shadow(&self) -> &Shadow {
        &self.0.shadow
    }

    /// What `/readyz` checks.
    pub fn readiness(&self) -> readiness::Parts<'_> {
        readiness::Parts {
            store: &self.0.store,
            catalog: &self.0.catalog,
            plugins: &self.0.plugins,
            scheduler_interval: self.0.config.scheduler_interval,
            heartbeat: &self.0.scheduler.heartbeat,
            auth: &self.0.auth,
            clock: &*self.0.clock,
        }
    }

    /// The readiness checks, as made less than a second ago or now
    /// (`readiness::Recent`).
    pub async fn ready(&self) -> Arc<Vec<readiness::Check>> {
        self.0.readiness.check(self.readiness()).await
    }

    /// When this process's scheduler last finished a pass.
    pub fn scheduler_heartbeat(&self) -> &scheduler::heartbeat::Heartbeat {
        &self.0.scheduler.heartbeat
    }

    /// Reloads the API tokens now (`AuthService::reload_tokens`).
    pub async fn reload_tokens(&self) -> Result<(), store::StoreError> {
        self.0.auth.reload_tokens().await
    }

    /// Writes every counted refusal now (`AuthService::flush_refusals`).
    pub async fn flush_refusals(&self) {
        self.0.auth.flush_refusals().await;
    }

    /// Reloads the plugin directory now (`Reloader::reload_plugins`).
    pub async fn reload_plugins(&self) -> plugins::ReloadReport {
        self.0.reloader.reload_plugins().await
    }

    /// Reloads the definitions now (`Reloader::reload_definitions`).
    pub async fn reload_definitions(&self) -> bool {
        self.0.reloader.reload_definitions().await
    }

    /// Tells of every definition reload attempt (the count so far).
    pub fn subscribe_definition_reloads(&self) -> tokio::sync::watch::Receiver<u64> {
        self.0.reloader.subscribe_definition_reloads()
    }
}
