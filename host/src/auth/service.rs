//! The auth service the guard is given: the API token table and its
//! reloads (failures in a row make it stale, then expired), the rate
//! limits, the refusals without valid credentials counted until their
//! access-log rows are written, and how requests reach this process (TLS
//! here or not, the proxies believed). Built once at start-up
//! (`startup.rs`, whose loops drive the reloads and the flushes); the
//! guard and the fill-out pages' refusals use it.
//!
//! Must not: read a request (the guard does and passes what it found), or
//! reach for the application state: it holds the store and clock it was
//! given.
//!
//! Reload failures in a row: stale after 3 (`STALE_AFTER_FAILED_RELOADS`:
//! remembered JWT verifications dropped, `/health` says `stale`), expired
//! after `token_reload_failure_limit` (every credential refused with 503).

use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use arc_swap::ArcSwap;
use chrono::{DateTime, Utc};

use super::limits::{ClientKey, RateLimits};
use super::refusals::Refusals;
use super::tokens::{Freshness, STALE_AFTER_FAILED_RELOADS, TokenTable};
use crate::clock::Clock;
use crate::store::{AccessEntry, Store, StoreError};

/// How requests reach this process, and when reload failures refuse
/// every credential.
#[derive(Debug, Clone, Default)]
pub struct AuthSettings {
    /// Whether this process terminates TLS itself.
    pub secure: bool,
    /// Proxies whose forwarding headers are believed.
    pub trusted_proxies: super::forwarded::TrustedProxies,
    /// Failed token reloads in a row after which every credential is
    /// refused; None: never.
    pub token_reload_failure_limit: Option<u32>,
}

/// Who may call, and what refusals cost. Cheap to clone.
#[derive(Debug, Clone)]
pub struct AuthService(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    store: Store,
    clock: Arc<dyn Clock>,
    settings: AuthSettings,
    tokens: ArcSwap<TokenTable>,
    /// Serializes token reloads, so a slow reload that read the table before
    /// a change cannot store it after a later one did.
    reload: tokio::sync::Mutex<()>,
    /// Token reloads that failed in a row since the last good one, and the
    /// last one's error (what a refused credential is answered with once
    /// the table expired).
    reload_failures: Mutex<(u32, Option<StoreError>)>,
    /// Requests per client address without valid credentials, and per
    /// token.
    limits: RateLimits,
    /// Refusals, counted until their row is written.
    refusals: Refusals,
}

impl AuthService {
    /// The service over `tokens` (as read at start-up) and `limits`.
    pub fn new(
        store: Store,
        clock: Arc<dyn Clock>,
        tokens: TokenTable,
        limits: RateLimits,
        settings: AuthSettings,
    ) -> AuthService {
        AuthService(Arc::new(Inner {
            store,
            clock,
            settings,
            tokens: ArcSwap::from_pointee(tokens),
            reload: tokio::sync::Mutex::new(()),
            reload_failures: Mutex::default(),
            limits,
            refusals: Refusals::default(),
        }))
    }

    /// The current time, from the injected clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.0.clock.now()
    }

    /// The store access-log rows are written to.
    pub fn store(&self) -> &Store {
        &self.0.store
    }

    /// Whether this process terminates TLS itself. Behind a proxy, whether
    /// a request came over HTTPS is the proxy's to say
    /// (`auth::forwarded::Remote`).
    pub fn is_secure(&self) -> bool {
        self.0.settings.secure
    }

    /// The proxies whose forwarding headers are believed.
    pub fn trusted_proxies(&self) -> &super::forwarded::TrustedProxies {
        &self.0.settings.trusted_proxies
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
    pub async fn reload_tokens(&self) -> Result<(), StoreError> {
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
                if Some(failed) == self.0.settings.token_reload_failure_limit {
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
        match self.0.settings.token_reload_failure_limit {
            Some(limit) if failed >= limit => Freshness::Expired,
            _ if failed >= STALE_AFTER_FAILED_RELOADS => Freshness::Stale,
            _ => Freshness::Current,
        }
    }

    /// The last reload's error once the token table has expired: every
    /// credential is then refused with it (503).
    pub fn tokens_expired(&self) -> Option<StoreError> {
        let failures = self.reload_failures();
        match self.0.settings.token_reload_failure_limit {
            Some(limit) if failures.0 >= limit => failures.1.clone(),
            _ => None,
        }
    }

    fn reload_failures(&self) -> MutexGuard<'_, (u32, Option<StoreError>)> {
        self.0
            .reload_failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The rate limits.
    pub fn limits(&self) -> &RateLimits {
        &self.0.limits
    }

    /// Records a refusal from `client` in the access log, counted with the
    /// others of its minute (docs/api/rights.md#access-log); writes the rows
    /// that are due.
    /// `client`: the client as allow-lists see it; None names nobody
    /// (`unknown`), IPv6 addresses count per /64.
    pub async fn count_refusal(&self, mut entry: AccessEntry, client: Option<IpAddr>) {
        entry.client =
            client.map_or_else(|| "unknown".to_owned(), |c| ClientKey::of(c).to_string());
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

    async fn write_refusals(&self, rows: Vec<AccessEntry>) {
        if rows.is_empty() {
            return;
        }
        let count = rows.len();
        if let Err(e) = self.0.store.append_accesses(rows).await {
            tracing::error!(error = %e, rows = count, "counted refusals were not written to the access log");
        }
    }
}
