//! The guard every API endpoint group sits behind: transport, credentials
//! (refused with 503 while the token table has expired), revocation, IP
//! allow-list, rights and JWT subject, in that order, before
//! the handler runs; then one access-log row for requests that touch
//! dossier data, refusals included (docs/api/rights.md#order-of-checks;
//! docs/api/rights.md#access-log, after NEN 7513).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, MatchedPath, Request};
use axum::http::{Extensions, HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ip;
use super::jwt::VerifiedJwt;
use super::rights::Right;
use super::tokens::{Credentials, Token};
use crate::AppState;
use crate::error::ApiError;
use crate::store::AccessEntry;

/// The authenticated caller, available to handlers as an extension.
#[derive(Debug, Clone)]
pub struct Caller {
    pub token: Arc<Token>,
    pub jwt: Option<Arc<VerifiedJwt>>,
}

/// The access-log row of a dossier request, handed to its handler (with
/// no status yet). A handler whose own write stores it, in the same
/// transaction and with the status it answers, marks its response
/// [`AccessLogged`]; for every other response the guard appends the row
/// after the handler.
#[derive(Debug, Clone)]
pub struct PendingAccess(pub AccessEntry);

/// Marks a response whose access-log row its handler has stored.
#[derive(Debug, Clone, Copy)]
pub struct AccessLogged;

/// Who a request claimed to be, for the access log, even when refused.
#[derive(Debug, Default)]
struct Identity {
    consumer_key: Option<String>,
    jwt_issuer: Option<String>,
}

const BASIC_CHALLENGE: &str = "Basic realm=\"api\"";
const BEARER_CHALLENGE: &str = "Bearer error=\"invalid_token\"";

/// Runs the checks for an endpoint of group `right`, then the handler.
pub async fn guard(app: AppState, right: Right, mut req: Request, next: Next) -> Response {
    let (peer, client) = client_of(&app, req.extensions(), req.headers());
    let dossier = right
        .is_dossier_group()
        .then(|| dossier_of(req.uri().path()))
        .flatten();
    let action = format!(
        "{} {}",
        req.method(),
        req.extensions()
            .get::<MatchedPath>()
            .map_or(req.uri().path(), MatchedPath::as_str)
    );
    let request_id = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(truncate);

    let mut identity = Identity::default();
    let checked = check(
        &app,
        right,
        &req,
        peer,
        client,
        dossier.as_deref(),
        &mut identity,
    );
    // The status is known only once the handler has answered.
    let entry = right.is_dossier_group().then(|| AccessEntry {
        at: app.now(),
        consumer_key: identity.consumer_key,
        jwt_issuer: identity.jwt_issuer,
        dossier,
        action,
        status: 0,
        client: client.to_string(),
        request_id,
    });
    let response = match checked {
        Ok(caller) => {
            req.extensions_mut().insert(caller);
            if let Some(entry) = &entry {
                req.extensions_mut().insert(PendingAccess(entry.clone()));
            }
            next.run(req).await
        }
        Err(refusal) => refusal.into_response(),
    };

    let Some(mut entry) = entry else {
        return response;
    };
    if response.extensions().get::<AccessLogged>().is_some() {
        return response;
    }
    entry.status = response.status().as_u16();
    // No access to dossier data goes unrecorded: if the row cannot be
    // written, the data is not handed out either.
    match app.store().append_access(entry).await {
        Ok(()) => response,
        Err(e) => ApiError::from(e).into_response(),
    }
}

fn check(
    app: &AppState,
    right: Right,
    req: &Request,
    peer: IpAddr,
    client: IpAddr,
    dossier: Option<&str>,
    identity: &mut Identity,
) -> Result<Caller, ApiError> {
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.to_str().unwrap_or("!"));
    let credentials = header.and_then(Credentials::parse);
    // Who the caller claims to be, for the access log, before any check. A
    // JWT's kid is read here only when the request is refused before its
    // verification (which reads it anyway), so a token is parsed once.
    let claimed_kid = |jwt: &str| super::jwt::kid(jwt).ok().map(|kid| truncate(&kid));
    if let Some(Credentials::Basic { key, .. }) = &credentials {
        identity.consumer_key = Some(truncate(key));
    }
    if header.is_some()
        && !app.is_secure()
        && !transport_trusted(peer, &app.config().trusted_proxies)
    {
        if let Some(Credentials::Bearer(jwt)) = &credentials {
            identity.consumer_key = claimed_kid(jwt);
        }
        return Err(ApiError::Forbidden("https_required"));
    }
    let Some(credentials) = credentials else {
        let bearer = header.is_some_and(|h| {
            h.trim_start()
                .get(..6)
                .is_some_and(|s| s.eq_ignore_ascii_case("bearer"))
        });
        return Err(ApiError::Unauthorized(if bearer {
            BEARER_CHALLENGE
        } else {
            BASIC_CHALLENGE
        }));
    };
    // Reloads have failed for too long: a revocation made since cannot be
    // seen, so no credential is trusted (docs/api/rights.md#order-of-checks).
    if let Some(e) = app.tokens_expired() {
        return Err(ApiError::Unavailable(e));
    }
    let tokens = app.tokens();
    let (token, jwt) = match credentials {
        Credentials::Basic { key, secret } => {
            let token = tokens
                .basic(&key, &secret)
                .ok_or(ApiError::Unauthorized(BASIC_CHALLENGE))?;
            (token, None)
        }
        Credentials::Bearer(jwt) => {
            let (token, verified) = tokens.bearer(jwt, app.now().timestamp()).map_err(|e| {
                identity.consumer_key = claimed_kid(jwt);
                tracing::info!(reason = %e, "bearer token refused");
                ApiError::Unauthorized(BEARER_CHALLENGE)
            })?;
            // The kid named this token.
            identity.consumer_key = Some(truncate(&token.consumer_key));
            identity.jwt_issuer = Some(truncate(&verified.iss));
            (token, Some(Arc::new(verified)))
        }
    };
    if !ip::allowed(&token.ip_allow, client) {
        return Err(ApiError::Forbidden("ip_not_allowed"));
    }
    if !token.has_right(right) {
        return Err(ApiError::Forbidden("right_missing"));
    }
    if let (Some(jwt), Some(dossier)) = (&jwt, dossier) {
        match &jwt.sub {
            None => return Err(ApiError::Forbidden("sub_missing")),
            Some(sub) if sub != dossier => return Err(ApiError::Forbidden("sub_mismatch")),
            Some(_) => {}
        }
    }
    Ok(Caller { token, jwt })
}

/// The connection's peer and the client as far as the service can tell
/// (X-Forwarded-For only from a trusted proxy).
pub fn client_of(app: &AppState, extensions: &Extensions, headers: &HeaderMap) -> (IpAddr, IpAddr) {
    let peer = extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::LOCALHOST), |c| c.0.ip());
    let forwarded = headers.get("x-forwarded-for").and_then(|v| v.to_str().ok());
    let client = ip::client_address(peer, forwarded, &app.config().trusted_proxies);
    (peer, client)
}

/// Plain HTTP may carry credentials only from loopback, or from a
/// configured proxy that terminated TLS.
fn transport_trusted(peer: IpAddr, trusted_proxies: &[ipnet::IpNet]) -> bool {
    let peer = ip::canonical(peer);
    peer.is_loopback() || trusted_proxies.iter().any(|p| p.contains(&peer))
}

/// The dossier segment of a normalized `/api/v1/dossiers/{id}/...` path,
/// percent-decoded. Inside the `/api/v1` router the prefix is already gone.
fn dossier_of(path: &str) -> Option<String> {
    let path = path.strip_prefix("/api/v1").unwrap_or(path);
    let rest = path.strip_prefix("/dossiers/")?;
    let segment = rest.split('/').next().filter(|s| !s.is_empty())?;
    let decoded: Vec<u8> = percent_decode(segment);
    Some(truncate(&String::from_utf8_lossy(&decoded)))
}

fn percent_decode(s: &str) -> Vec<u8> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Some(b) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

/// Client-supplied text kept in the log is bounded, and control characters
/// (NUL cannot be stored in PostgreSQL text) become U+FFFD.
pub fn truncate(s: &str) -> String {
    s.chars()
        .take(255)
        .map(|c| {
            if c.is_control() {
                char::REPLACEMENT_CHARACTER
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dossier_ids_are_read_from_the_path() {
        assert_eq!(
            dossier_of("/api/v1/dossiers/abc/responses").as_deref(),
            Some("abc")
        );
        assert_eq!(
            dossier_of("/dossiers/abc/responses").as_deref(),
            Some("abc")
        );
        assert_eq!(
            dossier_of("/api/v1/dossiers/a%20b%2Fc/responses").as_deref(),
            Some("a b/c")
        );
        assert_eq!(dossier_of("/api/v1/dossiers/a%2").as_deref(), Some("a%2"));
        assert_eq!(dossier_of("/api/v1/protocols/1"), None);
        assert_eq!(dossier_of("/api/v1/dossiers//responses"), None);
    }

    #[test]
    fn logged_client_text_is_bounded_and_free_of_control_characters() {
        assert_eq!(truncate("a\0b\n"), "a\u{fffd}b\u{fffd}");
        assert_eq!(truncate(&"x".repeat(300)).len(), 255);
        assert_eq!(
            dossier_of("/dossiers/a%00b/responses").as_deref(),
            Some("a\u{fffd}b")
        );
    }

    #[test]
    fn only_loopback_and_trusted_proxies_may_send_credentials_in_the_clear() {
        let proxies = ip::parse_list("10.0.0.1").expect("valid");
        assert!(transport_trusted(
            "127.0.0.1".parse().expect("ip"),
            &proxies
        ));
        assert!(transport_trusted("::1".parse().expect("ip"), &proxies));
        assert!(transport_trusted("10.0.0.1".parse().expect("ip"), &proxies));
        assert!(!transport_trusted(
            "192.0.2.7".parse().expect("ip"),
            &proxies
        ));
    }
}
