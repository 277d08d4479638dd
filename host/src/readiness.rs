//! Whether this host should be sent traffic (`/readyz`): the database
//! answers in time, its schema is the one this binary expects, the plugins
//! the catalog needs serve, the scheduler keeps passing, the token table
//! has not expired. Each check names what is wrong in words fit for an
//! unauthenticated caller: names the operator chose (plugin folders,
//! questionnaire keys), never paths, addresses or driver errors, which go
//! to the log (docs/operations.md#health-and-version).
//!
//! Given the parts it reads ([`Parts`]), never the application state.
//!
//! The database must answer within `DATABASE_TIMEOUT` (2 s); the
//! scheduler must have finished a pass within two of its intervals. An
//! answer is kept for [`FRESH_FOR`] (one second, by the injected clock)
//! and given to every probe in that time ([`Recent`]), so a flood of
//! probes asks the database once a second, not once a probe.

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use chrono::{DateTime, Utc};
use plugin_sdk::PluginKind;

use crate::auth::service::AuthService;
use crate::auth::tokens::Freshness;
use crate::clock::Clock;
use crate::domain::catalog::Catalog;
use crate::plugins::{Plugins, Registry};
use crate::scheduler::heartbeat::Heartbeat;
use crate::store::{MigrationName, MigrationStatus, Store};

/// How long the database may take to answer the readiness query. Below
/// the one-second default of an orchestrator's probe would be too tight
/// for a busy PostgreSQL; the guide sets the probe's timeout above it.
pub const DATABASE_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a readiness answer is given again instead of checking anew.
pub const FRESH_FOR: chrono::Duration = chrono::Duration::seconds(1);

/// The last readiness answer and when it was made. One check runs at a
/// time: probes that arrive meanwhile wait for it and take its answer.
#[derive(Debug, Default)]
pub struct Recent {
    last: tokio::sync::Mutex<Option<Stamped>>,
}

/// Checks and when they were made.
type Stamped = (DateTime<Utc>, Arc<Vec<Check>>);

impl Recent {
    /// The checks as made less than [`FRESH_FOR`] ago, or made now.
    pub async fn check(&self, parts: Parts<'_>) -> Arc<Vec<Check>> {
        let mut last = self.last.lock().await;
        let now = parts.clock.now();
        if let Some((made, checks)) = &*last
            && *made <= now
            && now - *made < FRESH_FOR
        {
            return checks.clone();
        }
        let checks = Arc::new(check(parts).await);
        // Stamped when done: probes that waited for a slow check take it.
        *last = Some((parts.clock.now(), checks.clone()));
        checks
    }
}

/// The outcome of one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Fine; with what was found.
    Ok(String),
    /// Not ready: a code (the `errors` of the answer) and what is wrong.
    Failed { code: &'static str, problem: String },
    /// Could not be checked because another check failed.
    Unknown(String),
}

/// One named check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    pub status: Status,
}

impl Check {
    fn ok(name: &'static str, detail: impl Into<String>) -> Check {
        Check {
            name,
            status: Status::Ok(detail.into()),
        }
    }

    fn failed(name: &'static str, code: &'static str, problem: impl Into<String>) -> Check {
        Check {
            name,
            status: Status::Failed {
                code,
                problem: problem.into(),
            },
        }
    }

    pub fn is_failed(&self) -> bool {
        matches!(self.status, Status::Failed { .. })
    }
}

/// What the checks read: the host's parts, each read when its check runs.
#[derive(Debug, Clone, Copy)]
pub struct Parts<'a> {
    pub store: &'a Store,
    pub catalog: &'a ArcSwap<Catalog>,
    pub plugins: &'a Plugins,
    /// Time between scheduler passes; None: no scheduler in this process.
    pub scheduler_interval: Option<Duration>,
    pub heartbeat: &'a Heartbeat,
    pub auth: &'a AuthService,
    pub clock: &'a dyn Clock,
}

/// Every check, in a fixed order: database, migrations, plugins,
/// scheduler, tokens.
pub async fn check(parts: Parts<'_>) -> Vec<Check> {
    let level = tokio::time::timeout(DATABASE_TIMEOUT, parts.store.migration_status()).await;
    let (database, migrations) = match level {
        Ok(Ok(level)) => (Check::ok("database", "answers"), migrations(&level)),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness: the database does not answer");
            (
                Check::failed(
                    "database",
                    "unreachable",
                    "the database does not answer (the log says why)",
                ),
                unknown_migrations(),
            )
        }
        Err(_) => {
            tracing::warn!(
                timeout_ms = DATABASE_TIMEOUT.as_millis() as u64,
                "readiness: the database did not answer in time"
            );
            (
                Check::failed(
                    "database",
                    "timeout",
                    format!(
                        "the database did not answer within {} s",
                        DATABASE_TIMEOUT.as_secs()
                    ),
                ),
                unknown_migrations(),
            )
        }
    };
    let now = parts.clock.now();
    vec![
        database,
        migrations,
        plugins(&parts.catalog.load(), &parts.plugins.registry()),
        scheduler(parts.scheduler_interval, parts.heartbeat.since(), now),
        tokens(parts.auth.token_freshness()),
    ]
}

fn unknown_migrations() -> Check {
    Check {
        name: "migrations",
        status: Status::Unknown("not read: the database does not answer".to_owned()),
    }
}

fn list(migrations: &[MigrationName]) -> String {
    migrations
        .iter()
        .map(|m| m.version.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The schema: every migration of this binary applied as it is here. A
/// database a newer binary migrated further is fine (a rolling upgrade:
/// docs/operations.md#upgrades); one missing a migration is not.
pub fn migrations(status: &MigrationStatus) -> Check {
    if !status.pending.is_empty() {
        return Check::failed(
            "migrations",
            "pending",
            format!(
                "migrations {} are not applied: run `outcomes migrate`",
                list(&status.pending)
            ),
        );
    }
    if !status.changed.is_empty() {
        return Check::failed(
            "migrations",
            "changed",
            format!(
                "migrations {} were applied with other contents than this binary's",
                list(&status.changed)
            ),
        );
    }
    if !status.failed.is_empty() {
        return Check::failed(
            "migrations",
            "failed",
            format!("migrations {} failed part way", list(&status.failed)),
        );
    }
    let level = status.level.as_ref().map_or(0, |m| m.version);
    let mut detail = format!("level {level}");
    if !status.newer.is_empty() {
        detail.push_str(&format!(
            "; migrations {} are newer than this binary",
            list(&status.newer)
        ));
    }
    Check::ok("migrations", detail)
}

/// The plugins: the scorer of every questionnaire in the catalog serves,
/// and no plugin folder was refused with nothing serving from it. A
/// folder whose new module was refused while its previous version serves
/// on is fine: nothing it served went away.
pub fn plugins(catalog: &Catalog, registry: &Registry) -> Check {
    let mut problems = Vec::new();
    let mut missing: Vec<(&str, &str)> = catalog
        .questionnaires()
        .iter()
        .map(|q| (q.def.scorer.as_str(), q.def.key.as_str()))
        .filter(|(scorer, _)| registry.get(PluginKind::Scorer, scorer).is_none())
        .collect();
    missing.sort_unstable();
    missing.dedup_by_key(|(scorer, _)| *scorer);
    for (scorer, key) in missing {
        problems.push(format!(
            "scorer {scorer} (questionnaire {key}) does not serve"
        ));
    }
    for status in registry.statuses() {
        if status.state == "failed" && status.serving.is_none() {
            problems.push(format!(
                "plugin folder {} was refused and nothing serves from it",
                status.folder
            ));
        }
    }
    if problems.is_empty() {
        let serving = registry.plugins().count();
        Check::ok("plugins", format!("{serving} serving"))
    } else {
        Check::failed("plugins", "not_loaded", problems.join("; "))
    }
}

/// The scheduler: a pass within two intervals of `now` (counted from the
/// start before the first). Off in this process: nothing to wait for.
pub fn scheduler(interval: Option<Duration>, since: DateTime<Utc>, now: DateTime<Utc>) -> Check {
    let Some(interval) = interval else {
        return Check::ok("scheduler", "off in this process (scheduler_interval 0)");
    };
    let every = interval.as_secs();
    let ago = (now - since).num_seconds().max(0);
    let allowed = chrono::Duration::from_std(interval * 2).unwrap_or(chrono::Duration::MAX);
    if now - since > allowed {
        Check::failed(
            "scheduler",
            "late",
            format!("no pass for {ago} s, more than two intervals of {every} s"),
        )
    } else {
        Check::ok(
            "scheduler",
            format!("last pass {ago} s ago, every {every} s"),
        )
    }
}

/// The token table: once reloads have failed past the limit every
/// credential is refused with 503, so the host serves nothing.
pub fn tokens(freshness: Freshness) -> Check {
    match freshness {
        Freshness::Expired => Check::failed(
            "tokens",
            "expired",
            "API tokens could not be reloaded for too long: every credential is refused",
        ),
        other => Check::ok("tokens", other.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(seconds: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(seconds, 0).single().unwrap_or_default()
    }

    #[test]
    fn the_scheduler_is_late_after_two_intervals() {
        let every = Some(Duration::from_secs(60));
        assert!(!scheduler(every, at(0), at(120)).is_failed());
        let late = scheduler(every, at(0), at(121));
        assert_eq!(
            late.status,
            Status::Failed {
                code: "late",
                problem: "no pass for 121 s, more than two intervals of 60 s".to_owned()
            }
        );
        assert!(!scheduler(None, at(0), at(100_000)).is_failed());
    }

    #[test]
    fn pending_and_changed_migrations_fail_newer_ones_do_not() {
        let name = |version| MigrationName {
            version,
            description: format!("migration {version}"),
        };
        let mut status = MigrationStatus {
            level: Some(name(14)),
            newer: vec![name(14)],
            ..MigrationStatus::default()
        };
        assert_eq!(
            migrations(&status).status,
            Status::Ok("level 14; migrations 14 are newer than this binary".to_owned())
        );
        status.pending = vec![name(12), name(13)];
        assert_eq!(
            migrations(&status).status,
            Status::Failed {
                code: "pending",
                problem: "migrations 12, 13 are not applied: run `outcomes migrate`".to_owned()
            }
        );
        status.pending.clear();
        status.changed = vec![name(3)];
        assert!(migrations(&status).is_failed());
        status.changed.clear();
        status.failed = vec![name(14)];
        assert!(migrations(&status).is_failed());
    }

    #[test]
    fn an_expired_token_table_fails() {
        assert!(tokens(Freshness::Expired).is_failed());
        assert!(!tokens(Freshness::Stale).is_failed());
    }
}
