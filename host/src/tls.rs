//! HTTPS served by the host itself (docs/api/rights.md#https): rustls with
//! the ring provider, certificate chain and key from PEM files, and HSTS on
//! every answer. The listener (`server.rs`) does the handshakes; every
//! connection it accepts with this config is TLS, so the auth guard treats
//! its requests as secure.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// How long a browser keeps to HTTPS for this host after an answer over
/// TLS: one year, the value RFC 6797's deployment advice and browsers'
/// preload lists use.
pub const HSTS: &str = "max-age=31536000";

/// Adds `Strict-Transport-Security` (RFC 6797) to an answer served over
/// TLS, unless the handler set one: a browser that reached the service once
/// over HTTPS never sends a fill-out page's cookie or a credential in clear
/// to it afterwards.
pub async fn strict_transport_security(
    mut response: axum::response::Response,
) -> axum::response::Response {
    response
        .headers_mut()
        .entry(axum::http::header::STRICT_TRANSPORT_SECURITY)
        .or_insert(axum::http::HeaderValue::from_static(HSTS));
    response
}

/// Reads the certificate chain and private key (PEM) into a server config.
pub fn server_config(cert: &Path, key: &Path) -> anyhow::Result<Arc<ServerConfig>> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("reading the TLS certificate {}", cert.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("{}: not a PEM certificate chain", cert.display()))?;
    anyhow::ensure!(
        !chain.is_empty(),
        "{}: holds no certificate",
        cert.display()
    );
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("reading the TLS key {}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .context("the TLS key does not match the certificate")?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
