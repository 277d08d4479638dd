//! Operator commands of the `outcomes` binary that work on the database
//! directly: API tokens, respondents' links and the access log. They print
//! to standard output, which is their interface.
//!
//! The commands: `token create`, `list`, `revoke`, `add-key`, `jwt-only`,
//! `webhook-secret` and `alarm-webhook`; `alarm webhook-secret`;
//! `respondent revoke-links`; `access-log` and `access-log verify` (the
//! first broken link of the hash chain).
#![allow(
    clippy::print_stdout,
    reason = "these commands answer on standard output"
)]

pub mod backup;
pub mod candidate;
pub mod fixtures;
pub mod import;
pub mod migrate;
pub mod plugin;
pub mod report;
pub mod rescore;
mod scaffold;
mod standalone;
pub mod verify;

use std::path::PathBuf;

use anyhow::{Context, bail};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use clap::{Args, Subcommand};
use serde_json::json;

use crate::auth::at_rest::SecretsKey;
use crate::auth::jwt::{KeyAlgorithm, RsaPublicKey};
use crate::auth::webhook::WebhookKey;
use crate::auth::{ip, origin, rights, secret};
use crate::domain::ids::RespondentId;
use crate::domain::time;
use crate::store::{AccessEntry, NewToken, Store, StoredKey, StoredSecret, Verification};

/// `outcomes token ...`
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create an API token and print its consumer key, its secret and the
    /// secret that signs its callbacks. Both secrets are shown only this
    /// once; of the consumer secret only a hash is stored.
    Create(CreateToken),
    /// List every token, revoked ones included.
    List {
        /// Print JSON instead of a table
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token. It stays in the list, and in the access log.
    Revoke {
        /// Consumer key of the token
        key: String,
    },
    /// Make a new secret that signs a token's callbacks (Standard Webhooks,
    /// `whsec_...`) and print it; it is shown only this once. Callbacks sent
    /// from now on, queued ones included, are signed with it: the old one
    /// no longer verifies them. Tokens made before callbacks were signed
    /// get their first secret this way.
    WebhookSecret {
        /// Consumer key of the token
        key: String,
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
    },
    /// Set where alarms raised by the responses this token stores are sent
    /// (signed with its webhook secret; docs/api/alarms.md#delivery), in
    /// place of the global alarm_webhook_url; `--none` sends them to the
    /// global one again. Alarms queued already keep their destination.
    AlarmWebhook {
        /// Consumer key of the token
        key: String,
        /// An https URL (http only for a loopback host)
        #[arg(required_unless_present = "none", conflicts_with = "none")]
        url: Option<String>,
        /// Remove the token's own endpoint
        #[arg(long)]
        none: bool,
    },
    /// Register an RSA public key (PEM, at least 2048 bits) for JWT bearer
    /// tokens whose `kid` is this token's consumer key, signed with one
    /// algorithm. Registering a key again sets its algorithm.
    AddKey {
        /// Consumer key of the token
        key: String,
        /// PEM file holding the public key (BEGIN PUBLIC KEY or BEGIN RSA PUBLIC KEY)
        #[arg(long, value_name = "FILE")]
        public_key: PathBuf,
        /// The one algorithm the EPD signs with, RS256 or RS512; tokens
        /// signed with the other are refused (RFC 8725: one algorithm per key)
        #[arg(long, value_name = "ALG", value_parser = parse_algorithm)]
        algorithm: KeyAlgorithm,
    },
    /// Make a token JWT-only: HTTP Basic with its consumer key is refused
    /// from then on, and its secret is forgotten. Cannot be undone.
    JwtOnly {
        /// Consumer key of the token
        key: String,
    },
}

fn parse_algorithm(text: &str) -> Result<KeyAlgorithm, String> {
    KeyAlgorithm::parse(text).ok_or_else(|| format!("{text:?}: use RS256 or RS512"))
}

/// Arguments of `outcomes token create`.
#[derive(Debug, Args)]
pub struct CreateToken {
    /// Consumer key: the Basic user name and the JWT kid (1-255 characters,
    /// no spaces or colons)
    #[arg(long)]
    pub key: String,
    /// Endpoint groups the token may use, comma-separated, or `all`:
    /// responses, protocol_subscriptions, fill_out_sessions,
    /// report_calculations, stats, non_responses, respondents, protocols,
    /// questionnaires, import (bulk import of responses into any dossier)
    #[arg(long, value_name = "LIST")]
    pub rights: String,
    /// Address or CIDR range the token may be used from; repeat for more
    /// [default: anywhere]
    #[arg(long = "ip", value_name = "ADDR")]
    pub ips: Vec<String>,
    /// Origin (https://host[:port]) the token may send respondents back to;
    /// repeat for more
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub origins: Vec<String>,
    /// The token authenticates with JWT bearer tokens only (register its key
    /// with `token add-key`): no secret is made or printed, and HTTP Basic
    /// with its consumer key is refused
    #[arg(long)]
    pub jwt_only: bool,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

/// Runs a token command against `store`.
pub async fn token(
    store: &Store,
    secrets: &SecretsKey,
    command: TokenCommand,
    zone: Tz,
) -> anyhow::Result<()> {
    match command {
        TokenCommand::Create(args) => {
            let created = create_token(store, secrets, &args).await?;
            if args.json {
                println!("{created}");
            } else {
                print!("{}", created_text(&created));
            }
            Ok(())
        }
        TokenCommand::List { json } => list(store, json, zone).await,
        TokenCommand::Revoke { key } => {
            if !store.revoke_token(key.clone(), Utc::now()).await? {
                bail!("no active token {key:?}");
            }
            println!("revoked {key}; running services refuse it within a few seconds");
            Ok(())
        }
        TokenCommand::WebhookSecret { key, json } => {
            let shown = new_webhook_secret(store, secrets, &key).await?;
            if json {
                println!("{}", json!({"consumer_key": key, "webhook_secret": shown}));
            } else {
                println!("consumer_key:   {key}");
                println!("webhook_secret: {shown}");
                println!();
                println!(
                    "The secret is shown only now; give it to the receiver of the token's \
                     callbacks. Callbacks are signed with it from now on."
                );
            }
            Ok(())
        }
        TokenCommand::AlarmWebhook { key, url, none: _ } => {
            if let Some(url) = &url {
                check_webhook_url(url)?;
            }
            if !store
                .set_alarm_webhook_url(key.clone(), url.clone())
                .await?
            {
                bail!("no active token {key:?}");
            }
            match url {
                Some(url) => println!(
                    "alarms raised by {key}'s responses go to {url}, signed with its webhook secret"
                ),
                None => {
                    println!("alarms raised by {key}'s responses go to alarm_webhook_url, if set")
                }
            }
            Ok(())
        }
        TokenCommand::AddKey {
            key,
            public_key,
            algorithm,
        } => {
            let pem = std::fs::read_to_string(&public_key)
                .with_context(|| format!("reading {}", public_key.display()))?;
            let parsed = RsaPublicKey::from_pem(&pem)
                .with_context(|| format!("{}", public_key.display()))?;
            let stored = StoredKey {
                pem,
                fingerprint: parsed.fingerprint(),
                algorithms: algorithm.as_str().to_owned(),
            };
            if !store.add_token_key(key.clone(), stored, Utc::now()).await? {
                bail!("no token {key:?}");
            }
            println!(
                "registered {}-bit RSA key {} for {key}, {} only",
                parsed.modulus_bits(),
                parsed.fingerprint(),
                algorithm.as_str()
            );
            Ok(())
        }
        TokenCommand::JwtOnly { key } => {
            let forgotten = secret::to_hex(&secret::hash(&secret::generate()));
            if !store.make_token_jwt_only(key.clone(), forgotten).await? {
                bail!("no token {key:?}");
            }
            println!(
                "{key} is JWT-only; running services refuse HTTP Basic with it within a few seconds"
            );
            Ok(())
        }
    }
}

/// Gives the unrevoked token `key` a new webhook secret, as `outcomes
/// token webhook-secret` does, and answers it as printed (`whsec_...`).
pub async fn new_webhook_secret(
    store: &Store,
    secrets: &SecretsKey,
    key: &str,
) -> anyhow::Result<String> {
    let webhook = WebhookKey::generate();
    if !store
        .set_webhook_secret(key.to_owned(), StoredSecret(webhook.sealed(secrets)))
        .await?
    {
        bail!("no active token {key:?}");
    }
    Ok(webhook.shown())
}

/// Checks an alarm endpoint as `alarm_webhook_url` is checked: an https
/// URL (http only for a loopback host), no user name or password.
fn check_webhook_url(url: &str) -> anyhow::Result<()> {
    if origin::absolute_url(url).is_none() {
        bail!(
            "{url:?}: give an https URL (http only for a loopback host), without user name or password"
        );
    }
    Ok(())
}

/// `outcomes alarm ...`
#[derive(Debug, Subcommand)]
pub enum AlarmCommand {
    /// Make a new secret that signs the alarms sent to alarm_webhook_url
    /// (Standard Webhooks, `whsec_...`) and print it; it is shown only this
    /// once. Deliveries sent from now on, queued ones included, are signed
    /// with it; until one is made, deliveries to alarm_webhook_url fail
    /// (and are retried). Kept in the database, sealed with the secrets
    /// key, so every host of the database signs with it.
    WebhookSecret {
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
    },
}

/// Runs an alarm command against `store`.
pub async fn alarm(
    store: &Store,
    secrets: &SecretsKey,
    command: AlarmCommand,
) -> anyhow::Result<()> {
    match command {
        AlarmCommand::WebhookSecret { json } => {
            let shown = new_alarm_webhook_secret(store, secrets).await?;
            if json {
                println!("{}", json!({"webhook_secret": shown}));
            } else {
                println!("webhook_secret: {shown}");
                println!();
                println!(
                    "The secret is shown only now; give it to the receiver at alarm_webhook_url. \
                     Alarms sent there are signed with it from now on."
                );
            }
            Ok(())
        }
    }
}

/// Makes a new key for the global alarm endpoint, as `outcomes alarm
/// webhook-secret` does, and answers it as printed (`whsec_...`).
pub async fn new_alarm_webhook_secret(
    store: &Store,
    secrets: &SecretsKey,
) -> anyhow::Result<String> {
    let webhook = WebhookKey::generate();
    store
        .set_alarm_webhook_secret(StoredSecret(webhook.sealed(secrets)), Utc::now())
        .await?;
    Ok(webhook.shown())
}

/// `outcomes respondent ...`
#[derive(Debug, Subcommand)]
pub enum RespondentCommand {
    /// Revoke a respondent's links: every completing_url handed out for
    /// them stops working, and their fill-out sessions end (as POST
    /// .../respondents/{id}/revoke_links does). Logged in the dossier's
    /// access log.
    RevokeLinks {
        /// The dossier (the EPD's identifier)
        #[arg(long)]
        dossier: String,
        /// The respondent's id
        #[arg(long)]
        respondent: i64,
    },
}

/// Runs a respondent command against `store` at `now`.
pub async fn respondent(
    store: &Store,
    command: RespondentCommand,
    now: DateTime<Utc>,
) -> anyhow::Result<()> {
    match command {
        RespondentCommand::RevokeLinks {
            dossier,
            respondent,
        } => {
            let entry = AccessEntry {
                at: now,
                dossier: Some(dossier.clone()),
                action: "outcomes respondent revoke-links".to_owned(),
                status: 204,
                client: "command line".to_owned(),
                ..AccessEntry::default()
            };
            if !store
                .revoke_respondent_links(&dossier, RespondentId(respondent), now, Some(entry))
                .await?
            {
                bail!("dossier {dossier:?} has no respondent {respondent}");
            }
            println!(
                "revoked the links of respondent {respondent} of {dossier}; new ones come with \
                 their responses"
            );
            Ok(())
        }
    }
}

/// Checks a consumer key: the Basic scheme splits at the first colon, so a
/// key must not hold one.
pub fn check_consumer_key(key: &str) -> anyhow::Result<()> {
    if key.is_empty()
        || key.len() > 255
        || key
            .chars()
            .any(|c| c == ':' || c.is_whitespace() || c.is_control())
    {
        bail!("--key {key:?}: use 1-255 characters without spaces or colons");
    }
    Ok(())
}

/// Creates the token `args` describe, as `outcomes token create` does, and
/// answers what it prints with `--json`: `consumer_key`, `consumer_secret`
/// (none for a JWT-only token: no secret exists to show), `webhook_secret`
/// (`whsec_...`), `rights`, `ip_allow`, `allowed_origins`, `jwt_only`.
pub async fn create_token(
    store: &Store,
    secrets: &SecretsKey,
    args: &CreateToken,
) -> anyhow::Result<serde_json::Value> {
    check_consumer_key(&args.key)?;
    let rights = rights::parse_list(&args.rights)
        .map_err(anyhow::Error::msg)
        .context("--rights")?;
    if rights.is_empty() {
        bail!("--rights: name at least one endpoint group, or `all`");
    }
    let ips = ip::parse_list(&args.ips.join(","))
        .map_err(anyhow::Error::msg)
        .context("--ip")?;
    let origins = origin::parse_list(&args.origins.join(","))
        .map_err(anyhow::Error::msg)
        .context("--allow-origin")?;
    // A JWT-only token still stores a hash (the column is required): that
    // of a secret nobody is shown, so it could not be used even if the
    // flag were lost.
    let consumer_secret = secret::generate();
    let webhook = WebhookKey::generate();
    let token = NewToken {
        consumer_key: args.key.clone(),
        secret_sha256: secret::to_hex(&secret::hash(&consumer_secret)),
        rights: rights::to_list(&rights),
        ip_allow: ip::to_list(&ips),
        allowed_origins: origins.join(","),
        jwt_only: args.jwt_only,
        webhook_secret: StoredSecret(webhook.sealed(secrets)),
    };
    if !store.create_token(token, Utc::now()).await? {
        bail!(
            "a token {:?} exists already (revoked tokens keep their key)",
            args.key
        );
    }
    let mut out = json!({
        "consumer_key": args.key,
        "webhook_secret": webhook.shown(),
        "rights": rights.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
        "ip_allow": ips.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "allowed_origins": origins,
        "jwt_only": args.jwt_only,
    });
    if !args.jwt_only {
        out["consumer_secret"] = json!(consumer_secret);
    }
    Ok(out)
}

/// What `outcomes token create` prints without `--json`.
fn created_text(created: &serde_json::Value) -> String {
    let field = |name: &str| created[name].as_str().unwrap_or_default().to_owned();
    let jwt_only = created["jwt_only"].as_bool().unwrap_or(false);
    let rights: Vec<&str> = created["rights"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(serde_json::Value::as_str)
        .collect();
    let mut out = format!("consumer_key:    {}\n", field("consumer_key"));
    if jwt_only {
        out.push_str("consumer_secret: none (JWT only)\n");
    } else {
        out.push_str(&format!("consumer_secret: {}\n", field("consumer_secret")));
    }
    out.push_str(&format!("webhook_secret:  {}\n", field("webhook_secret")));
    out.push_str(&format!("rights:          {}\n\n", rights.join(",")));
    out.push_str(if jwt_only {
        "Register the EPD's public key with `outcomes token add-key`; HTTP Basic is refused.\n"
    } else {
        "The secrets are shown only now. Keep the consumer secret in the EPD's configuration.\n"
    });
    out.push_str("Give the webhook secret to the receiver of the token's callbacks.\n");
    out
}

async fn list(store: &Store, as_json: bool, zone: Tz) -> anyhow::Result<()> {
    let tokens = store.tokens().await?;
    let signed = store.tokens_with_webhook_secret().await?;
    let alarm_webhooks = store.token_alarm_webhooks().await?;
    let alarm_webhook = |key: &str| {
        alarm_webhooks
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, url)| url.clone())
    };
    if as_json {
        let out: Vec<_> = tokens
            .iter()
            .map(|t| {
                json!({
                    "consumer_key": t.consumer_key,
                    "rights": t.rights.split(',').filter(|s| !s.is_empty()).collect::<Vec<_>>(),
                    "ip_allow": t.ip_allow.split(',').filter(|s| !s.is_empty()).collect::<Vec<_>>(),
                    "allowed_origins": t.allowed_origins.split(',').filter(|s| !s.is_empty()).collect::<Vec<_>>(),
                    "public_keys": t.public_keys.len(),
                    "keys": t.public_keys.iter().map(|k| json!({
                        "fingerprint": k.fingerprint,
                        "algorithms": k.algorithms.split(',').collect::<Vec<_>>(),
                    })).collect::<Vec<_>>(),
                    "jwt_only": t.jwt_only,
                    "webhook_secret": signed.contains(&t.consumer_key),
                    "alarm_webhook_url": alarm_webhook(&t.consumer_key),
                    "created_at": time::format(t.created_at, zone),
                    "revoked_at": t.revoked_at.map(|r| time::format(r, zone)),
                })
            })
            .collect();
        println!("{}", serde_json::Value::Array(out));
        return Ok(());
    }
    if tokens.is_empty() {
        println!("no tokens; create one with `outcomes token create --key NAME --rights all`");
        return Ok(());
    }
    println!(
        "{:<24} {:<9} {:<5} {:<29} RIGHTS / IP / ORIGINS",
        "CONSUMER KEY", "STATE", "KEYS", "CREATED"
    );
    for t in tokens {
        let state = if t.revoked_at.is_some() {
            "revoked"
        } else {
            "active"
        };
        let mut detail = t.rights.clone();
        if !t.ip_allow.is_empty() {
            detail.push_str(&format!(" / ip {}", t.ip_allow));
        }
        if !t.allowed_origins.is_empty() {
            detail.push_str(&format!(" / origins {}", t.allowed_origins));
        }
        if t.jwt_only {
            detail.push_str(" / JWT only");
        }
        if !t.public_keys.is_empty() {
            let algorithms: Vec<String> = t
                .public_keys
                .iter()
                .map(|k| match k.algorithms.as_str() {
                    one if !one.contains(',') => one.to_owned(),
                    both => format!("{both} (unpinned)"),
                })
                .collect();
            detail.push_str(&format!(" / keys {}", algorithms.join(", ")));
        }
        if !signed.contains(&t.consumer_key) {
            detail.push_str(" / no webhook secret: callbacks unsigned");
        }
        if let Some(url) = alarm_webhook(&t.consumer_key) {
            detail.push_str(&format!(" / alarms to {url}"));
        }
        println!(
            "{:<24} {:<9} {:<5} {:<29} {detail}",
            t.consumer_key,
            state,
            t.public_keys.len(),
            time::format(t.created_at, zone)
        );
    }
    Ok(())
}

/// `outcomes access-log`: prints the access log of a dossier.
pub async fn access_log(
    store: &Store,
    dossier: &str,
    since: Option<&str>,
    as_json: bool,
    zone: Tz,
) -> anyhow::Result<()> {
    let since = match since {
        Some(text) => Some(
            time::parse_filter(text, zone)
                .with_context(|| format!("--since {text:?}: give Unix seconds or ISO 8601"))?,
        ),
        None => None,
    };
    for e in store.access_log(Some(dossier), since).await? {
        if as_json {
            let line = json!({
                "at": time::format(e.at, zone),
                "consumer_key": e.consumer_key,
                "jwt_issuer": e.jwt_issuer,
                "claimed_key": e.claimed_key,
                "claimed_issuer": e.claimed_issuer,
                "claimed_subject": e.claimed_subject,
                "dossier": e.dossier,
                "action": e.action,
                "status": e.status,
                "client": e.client,
                "request_id": e.request_id,
                "refusals": e.refusals,
            });
            println!("{line}");
        } else {
            // A claimed, unverified identity is marked as such.
            let who = match (&e.consumer_key, &e.jwt_issuer, &e.claimed_key) {
                (Some(k), Some(iss), _) => format!("{k} (iss {iss})"),
                (Some(k), None, _) => k.clone(),
                (None, _, Some(claimed)) => format!("claimed {claimed}?"),
                (None, _, None) => "-".to_owned(),
            };
            // A counted row: refusals without valid credentials that minute.
            let count = e
                .refusals
                .map(|n| format!("  (refusals: {n})"))
                .unwrap_or_default();
            println!(
                "{}  {}  {:<48} {:<28} {}{count}",
                time::format(e.at, zone),
                e.status,
                e.action,
                who,
                e.client
            );
        }
    }
    Ok(())
}

/// Prints a command's answer on stdout.
pub fn print_line(line: &str) {
    println!("{line}");
}

/// `outcomes access-log verify`: walks the hash chain of the whole log.
/// Intact: what was checked and the last hash (to keep elsewhere, so that a
/// rewrite of the whole chain shows too). Broken: an error naming the first
/// broken link, which makes the command exit non-zero.
pub async fn verify_access_log(store: &Store) -> anyhow::Result<String> {
    match store.verify_access_log().await? {
        Verification::Intact {
            chained,
            before_chain,
            head,
        } => Ok(format!(
            "access log intact: {chained} rows chained, {before_chain} written before the chain started; last hash {head}"
        )),
        Verification::Broken {
            id: Some(id),
            reason,
        } => {
            bail!("access log broken at row {id}: {reason}")
        }
        Verification::Broken { id: None, reason } => {
            bail!("access log broken at its end: {reason}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumer_keys_cannot_break_basic_authentication() {
        assert!(check_consumer_key("epd-prod").is_ok());
        assert!(check_consumer_key("a:b").is_err());
        assert!(check_consumer_key("a b").is_err());
        assert!(check_consumer_key("").is_err());
        assert!(check_consumer_key(&"x".repeat(256)).is_err());
    }
}
