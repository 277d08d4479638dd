//! The secret that signs fill-out links, and the signer made from it at
//! start-up (docs/operations.md#secrets): the configured secret (text or
//! a file), else the one the hosts of a database share, made on first
//! start and kept in the database sealed with the secrets key.
//!
//! Apart from `links.rs` because that file is pure (no I/O, the time
//! passed in) and is used on every fill-out request; this one reads a
//! file and the database, once, at start-up. Must not: sign or check a
//! link (`links.rs` does), or be called while serving.
//!
//! A secret an older version kept in the database in plain text is
//! replaced by a new one, sealed: every copy of the database made before
//! (a backup, a replica) holds the old one, which must then sign nothing.
//! Links signed with it stop working (docs/operations.md#secrets).

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use chrono::{DateTime, Utc};

use super::at_rest::{self, SecretsKey};
use super::links::{Links, check_link_secret};
use crate::store::Store;

/// Where a configured secret comes from. None of it is read here (no I/O):
/// start-up reads the file (`secret`).
#[derive(Clone)]
pub enum SecretSource {
    /// Given as text (flag, environment or config file).
    Text(String),
    /// A file that holds it (a secret store's mount).
    File(PathBuf),
}

impl std::fmt::Debug for SecretSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretSource::Text(_) => f.write_str("Text(..)"),
            SecretSource::File(path) => f.debug_tuple("File").field(path).finish(),
        }
    }
}

/// The name of the link-signing secret among the database's secrets.
const LINK_SECRET: &str = "fill_out_links";

/// The settings the signer is made from.
#[derive(Debug, Clone, Copy)]
pub struct LinkSettings<'a> {
    /// The configured secret; None: the database's.
    pub secret: Option<&'a SecretSource>,
    /// The origin respondents reach the service at; None: the address
    /// the service is bound to.
    pub public_url: Option<&'a str>,
    /// How long a fill_out_url can be used after it was made.
    pub link_ttl: std::time::Duration,
    /// How long a completing_url works after it was handed out.
    pub completing_ttl: std::time::Duration,
}

/// The signer of fill-out links: the configured secret, else the one the
/// hosts of this database share (made on first start); the configured
/// public URL, else the address the service is bound to (`tls`: over
/// HTTPS).
pub async fn signer(
    settings: LinkSettings<'_>,
    store: &Store,
    secrets_key: &SecretsKey,
    bound: SocketAddr,
    tls: bool,
    now: DateTime<Utc>,
) -> anyhow::Result<Links> {
    let secret = link_secret(settings.secret, store, secrets_key, now).await?;
    let public_url = match settings.public_url {
        Some(url) => url.to_owned(),
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
    let window =
        chrono::Duration::from_std(settings.link_ttl).context("the fill-out link lifetime")?;
    let completing = chrono::Duration::from_std(settings.completing_ttl)
        .context("the completing_url lifetime")?;
    Ok(Links::new(
        secret.as_bytes(),
        &public_url,
        window,
        completing,
    ))
}

/// The secret that signs fill-out links: the configured one (text or a
/// file), else the one kept in the database, sealed with the secrets key.
/// A secret an older version kept there in plain text is replaced by a new
/// one (of hosts doing it at once, one does, and all read the one it
/// stored).
async fn link_secret(
    configured: Option<&SecretSource>,
    store: &Store,
    key: &SecretsKey,
    now: DateTime<Utc>,
) -> anyhow::Result<String> {
    match configured {
        Some(SecretSource::Text(secret)) => return Ok(secret.clone()),
        Some(SecretSource::File(path)) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading fill_out_secret_file {}", path.display()))?;
            let secret = text.trim().to_owned();
            check_link_secret(&secret).map_err(|problem| {
                anyhow::anyhow!(
                    "fill_out_secret_file {}: the secret {problem}",
                    path.display()
                )
            })?;
            return Ok(secret);
        }
        None => {}
    }
    let fresh = || key.seal(LINK_SECRET, &super::secret::generate());
    let stored = store
        .host_secret(LINK_SECRET, &fresh, now)
        .await
        .context("reading the secret of fill-out links")?;
    if at_rest::is_sealed(&stored) {
        return Ok(key.open(LINK_SECRET, &stored)?);
    }
    store
        .replace_host_secret(LINK_SECRET, &stored, fresh())
        .await
        .context("replacing the plain-text secret of fill-out links")?;
    // This host's replacement, or another's that came first.
    let replaced = store
        .host_secret(LINK_SECRET, &fresh, now)
        .await
        .context("reading the secret of fill-out links")?;
    tracing::warn!(
        "the secret of fill-out links was kept in the database in plain text: replaced by a new \
         one, encrypted; links signed with the old one no longer work"
    );
    Ok(key.open(LINK_SECRET, &replaced)?)
}
