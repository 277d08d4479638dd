//! Operator commands of the `outcomes` binary that work on the database
//! directly: API tokens, respondents' links and the access log. They print to standard output,
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
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use clap::{Args, Subcommand};
use serde_json::json;

use crate::auth::jwt::RsaPublicKey;
use crate::auth::{ip, origin, rights, secret};
use crate::domain::ids::RespondentId;
use crate::domain::time;
use crate::store::{AccessEntry, NewToken, Store};

/// `outcomes token ...`
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create an API token and print its consumer key and secret. The secret
    /// is shown only this once; only its hash is stored.
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
        TokenCommand::Create(args) => create(store, args).await,
        TokenCommand::List { json } => list(store, json, zone).await,
        TokenCommand::Revoke { key } => {
            if !store.revoke_token(key.clone(), Utc::now()).await? {
                bail!("no active token {key:?}");
            }
            println!("revoked {key}; running services refuse it within a few seconds");
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
                consumer_key: None,
                jwt_issuer: None,
                dossier: Some(dossier.clone()),
                action: "outcomes respondent revoke-links".to_owned(),
                status: 204,
                client: "command line".to_owned(),
                request_id: None,
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

async fn create(store: &Store, args: CreateToken) -> anyhow::Result<()> {
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
    let token = NewToken {
        consumer_key: args.key.clone(),
        secret_sha256: secret::to_hex(&secret::hash(&consumer_secret)),
        rights: rights::to_list(&rights),
        ip_allow: ip::to_list(&ips),
        allowed_origins: origins.join(","),
    };
    if !store.create_token(token, Utc::now()).await? {
        bail!(
            "a token {:?} exists already (revoked tokens keep their key)",
            args.key
        );
    }
    if args.json {
        let out = json!({
            "consumer_key": args.key,
            "consumer_secret": consumer_secret,
            "rights": rights.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
            "ip_allow": ips.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "allowed_origins": origins,
        });
        println!("{out}");
    } else {
        println!("consumer_key:    {}", args.key);
        println!("consumer_secret: {consumer_secret}");
        println!("rights:          {}", rights::to_list(&rights));
        println!();
        println!("The secret is shown only now; keep it in the EPD's configuration.");
    }
    Ok(())
}

async fn list(store: &Store, as_json: bool, zone: Tz) -> anyhow::Result<()> {
    let tokens = store.tokens().await?;
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
