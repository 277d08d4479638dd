//! Operator commands of the `outcomes` binary that work on the database
//! directly: API tokens and the access log. They print to standard output,
//! which is their interface.
#![allow(
    clippy::print_stdout,
    reason = "these commands answer on standard output"
)]

pub mod fixtures;
pub mod plugin;
pub mod rescore;
mod scaffold;

use std::path::PathBuf;

use anyhow::{Context, bail};
use chrono::Utc;
use chrono_tz::Tz;
use clap::{Args, Subcommand};
use serde_json::json;

use crate::auth::jwt::RsaPublicKey;
use crate::auth::webhook::WebhookKey;
use crate::auth::{ip, origin, rights, secret};
use crate::domain::time;
use crate::store::{NewToken, Store, StoredSecret};

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
    /// Register an RSA public key (PEM, at least 2048 bits) for JWT bearer
    /// tokens whose `kid` is this token's consumer key.
    AddKey {
        /// Consumer key of the token
        key: String,
        /// PEM file holding the public key (BEGIN PUBLIC KEY or BEGIN RSA PUBLIC KEY)
        #[arg(long, value_name = "FILE")]
        public_key: PathBuf,
    },
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
    /// questionnaires
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
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

/// Runs a token command against `store`.
pub async fn token(store: &Store, command: TokenCommand, zone: Tz) -> anyhow::Result<()> {
    match command {
        TokenCommand::Create(args) => {
            let created = create_token(store, &args).await?;
            if args.json {
                println!("{created}");
            } else {
                for field in ["consumer_key", "consumer_secret", "webhook_secret"] {
                    println!(
                        "{:<16} {}",
                        format!("{field}:"),
                        created[field].as_str().unwrap_or_default()
                    );
                }
                let rights: Vec<&str> = created["rights"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(serde_json::Value::as_str)
                    .collect();
                println!("{:<16} {}", "rights:", rights.join(","));
                println!();
                println!(
                    "The secrets are shown only now. Keep the consumer secret in the EPD's \
                     configuration; give the webhook secret to the receiver of its callbacks."
                );
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
            let shown = new_webhook_secret(store, &key).await?;
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
        TokenCommand::AddKey { key, public_key } => {
            let pem = std::fs::read_to_string(&public_key)
                .with_context(|| format!("reading {}", public_key.display()))?;
            let parsed = RsaPublicKey::from_pem(&pem)
                .with_context(|| format!("{}", public_key.display()))?;
            if !store
                .add_token_key(key.clone(), pem, parsed.fingerprint(), Utc::now())
                .await?
            {
                bail!("no token {key:?}");
            }
            println!(
                "registered {}-bit RSA key {} for {key}",
                parsed.modulus_bits(),
                parsed.fingerprint()
            );
            Ok(())
        }
    }
}

/// Gives the unrevoked token `key` a new webhook secret, as `outcomes
/// token webhook-secret` does, and answers it as printed (`whsec_...`).
pub async fn new_webhook_secret(store: &Store, key: &str) -> anyhow::Result<String> {
    let webhook = WebhookKey::generate();
    if !store
        .set_webhook_secret(key.to_owned(), StoredSecret(webhook.stored()))
        .await?
    {
        bail!("no active token {key:?}");
    }
    Ok(webhook.shown())
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
/// answers what it prints with `--json`: `consumer_key`, `consumer_secret`,
/// `webhook_secret` (`whsec_...`), `rights`, `ip_allow`, `allowed_origins`.
pub async fn create_token(store: &Store, args: &CreateToken) -> anyhow::Result<serde_json::Value> {
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
    let consumer_secret = secret::generate();
    let webhook = WebhookKey::generate();
    let token = NewToken {
        consumer_key: args.key.clone(),
        secret_sha256: secret::to_hex(&secret::hash(&consumer_secret)),
        rights: rights::to_list(&rights),
        ip_allow: ip::to_list(&ips),
        allowed_origins: origins.join(","),
        webhook_secret: StoredSecret(webhook.stored()),
    };
    if !store.create_token(token, Utc::now()).await? {
        bail!(
            "a token {:?} exists already (revoked tokens keep their key)",
            args.key
        );
    }
    Ok(json!({
        "consumer_key": args.key,
        "consumer_secret": consumer_secret,
        "webhook_secret": webhook.shown(),
        "rights": rights.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
        "ip_allow": ips.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "allowed_origins": origins,
    }))
}

async fn list(store: &Store, as_json: bool, zone: Tz) -> anyhow::Result<()> {
    let tokens = store.tokens().await?;
    let signed = store.tokens_with_webhook_secret().await?;
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
                    "webhook_secret": signed.contains(&t.consumer_key),
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
        if !signed.contains(&t.consumer_key) {
            detail.push_str(" / no webhook secret: callbacks unsigned");
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
                "dossier": e.dossier,
                "action": e.action,
                "status": e.status,
                "client": e.client,
                "request_id": e.request_id,
            });
            println!("{line}");
        } else {
            let who = match (&e.consumer_key, &e.jwt_issuer) {
                (Some(k), Some(iss)) => format!("{k} (iss {iss})"),
                (Some(k), None) => k.clone(),
                (None, _) => "-".to_owned(),
            };
            println!(
                "{}  {}  {:<48} {:<28} {}",
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
