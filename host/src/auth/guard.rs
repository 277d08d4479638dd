//! The guard every API endpoint group sits behind: whether the client
//! address is held back (its allowance without valid credentials used up:
//! 429 before the credentials are read), transport, credentials
//! (refused with 503 while the token table has expired), revocation, IP
//! allow-list, the token's rate limit, rights and JWT subject, in that
//! order, before the handler runs; then one access-log row for requests
//! that touch dossier data, refusals included
//! (docs/api/rights.md#order-of-checks;
//! docs/api/rights.md#access-log, after NEN 7513). Refusals without valid
//! credentials, or with valid ones from outside their allow-list, count
//! against the client address's rate limit; every refusal is counted in
//! the log, a row per client, token, route and status each minute, not
//! written one by one (docs/operations.md#rate-limits).
//!
//! The guard is given the auth service (`service.rs`: tokens, limits,
//! refusals, transport settings) and nothing else of the application: it
//! must not reach for the app state.
//!
//! **Invariant:** no dossier data leaves unless its access row is on disk:
//! when the row cannot be written, the answer is the error instead. A
//! refused caller's claimed identity (key, issuer, subject) is logged apart
//! from verified ones.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, MatchedPath, Request};
use axum::http::{Extensions, HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};

use super::forwarded::{ProxyHeaders, Remote};
use super::ip;
use super::jwt::VerifiedJwt;
use super::rights::Right;
use super::service::AuthService;
use super::tokens::{Credentials, Token};
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

/// Who a request was, for the access log: verified (the token's key, a
/// verified JWT's issuer), or, when refused before that, who it claimed to
/// be, in columns of their own (docs/api/rights.md#access-log).
#[derive(Debug, Default)]
struct Identity {
    consumer_key: Option<String>,
    jwt_issuer: Option<String>,
    claimed_key: Option<String>,
    claimed_issuer: Option<String>,
    claimed_subject: Option<String>,
}

impl Identity {
    /// A JWT's claims as sent, unverified: its `kid`, and `iss` and `sub`
    /// from the payload. A token whose header cannot be read names nobody.
    fn claim_jwt(&mut self, jwt: &str) {
        let Ok(kid) = super::jwt::kid(jwt) else {
            return;
        };
        self.claimed_key = Some(truncate(&kid));
        // kid() checked the size and the three parts.
        let claims = jwt
            .split('.')
            .nth(1)
            .and_then(|payload| URL_SAFE_NO_PAD.decode(payload).ok())
            .and_then(|bytes| serde_json::from_slice::<Map<String, Value>>(&bytes).ok())
            .unwrap_or_default();
        let claim = |name: &str| claims.get(name).and_then(Value::as_str).map(truncate);
        self.claimed_issuer = claim("iss");
        self.claimed_subject = claim("sub");
    }

    /// The caller's identity checked out: only the verified one is kept.
    fn verified(&mut self, consumer_key: &str, jwt_issuer: Option<&str>) {
        *self = Identity {
            consumer_key: Some(truncate(consumer_key)),
            jwt_issuer: jwt_issuer.map(truncate),
            ..Identity::default()
        };
    }
}

/// The challenges of a 401 (docs/api/rights.md#authentication-failures):
/// Basic only to a request that used the Basic scheme, so that a browser
/// is never invited to prompt for credentials and keep them (and send
/// them along with requests other sites make it send); a refused bearer
/// token is `invalid_token` (RFC 6750 section 3.1); anything else, no
/// credentials at all included, the Bearer scheme without an error.
const BASIC_CHALLENGE: &str = "Basic realm=\"api\"";
const BEARER_CHALLENGE: &str = "Bearer realm=\"api\"";
const INVALID_TOKEN_CHALLENGE: &str = "Bearer realm=\"api\", error=\"invalid_token\"";

/// The challenge for an Authorization header that gave no credentials:
/// by the scheme it names, read from the raw bytes (a value that is not
/// visible ASCII still names one).
fn challenge_for(header: Option<&[u8]>) -> &'static str {
    let scheme = header
        .and_then(|h| {
            h.trim_ascii_start()
                .split(|b| matches!(b, b' ' | b'\t'))
                .next()
        })
        .unwrap_or_default();
    if scheme.eq_ignore_ascii_case(b"basic") {
        BASIC_CHALLENGE
    } else if scheme.eq_ignore_ascii_case(b"bearer") {
        INVALID_TOKEN_CHALLENGE
    } else {
        BEARER_CHALLENGE
    }
}

/// Runs the checks for an endpoint of group `right`, then the handler.
pub async fn guard(auth: AuthService, right: Right, mut req: Request, next: Next) -> Response {
    let remote = client_of(&auth, req.extensions(), req.headers());
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
    // A client that has used up its allowance of requests without valid
    // credentials is answered before its credentials are read, so a flood
    // of bad ones costs no hash or signature check; valid credentials from
    // that address wait too, until the allowance refills
    // (docs/operations.md#rate-limits).
    let held_back = auth.limits().held_back(remote.rate_key()).err();
    let checked = match held_back {
        Some(over) => Err(ApiError::TooManyRequests(over.0)),
        None => check(
            &auth,
            right,
            &req,
            remote,
            dossier.as_deref(),
            &mut identity,
        ),
    };
    // The request's log lines name the token once its credentials are
    // verified: its key, never the secret, nor a key merely claimed.
    if let Some(key) = &identity.consumer_key {
        crate::telemetry::record_token(key);
    }
    // Credentials decide which limit a request counts against: a valid
    // token used where it may be its own (in `check`), anything else the
    // client address's.
    let by_address =
        held_back.is_some() || matches!(&checked, Err(refusal) if counts_by_address(refusal));
    let refused = checked.is_err();
    let checked = match checked {
        Err(refusal) if by_address && held_back.is_none() => {
            Err(match auth.limits().admit_anonymous(remote.rate_key()) {
                Ok(()) => refusal,
                Err(over) => ApiError::TooManyRequests(over.0),
            })
        }
        other => other,
    };
    // The status is known only once the handler has answered.
    let entry = right.is_dossier_group().then(|| AccessEntry {
        at: auth.now(),
        consumer_key: identity.consumer_key,
        jwt_issuer: identity.jwt_issuer,
        claimed_key: identity.claimed_key,
        claimed_issuer: identity.claimed_issuer,
        claimed_subject: identity.claimed_subject,
        dossier,
        action,
        status: 0,
        client: client_text(remote),
        request_id,
        refusals: None,
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
    if refused {
        // Nothing was handed out: counted, written within the minute.
        auth.count_refusal(entry, remote.client).await;
        return response;
    }
    // No access to dossier data goes unrecorded: if the row cannot be
    // written, the data is not handed out either.
    match auth.store().append_access(entry).await {
        Ok(()) => response,
        Err(e) => ApiError::from(e).into_response(),
    }
}

fn check(
    auth: &AuthService,
    right: Right,
    req: &Request,
    remote: Remote,
    dossier: Option<&str>,
    identity: &mut Identity,
) -> Result<Caller, ApiError> {
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.to_str().unwrap_or("!"));
    let credentials = header.and_then(Credentials::parse);
    // Who the caller claims to be, for the access log, before any check. A
    // JWT's claims are read here only when the request is refused before its
    // verification (which reads them anyway), so a token is parsed once.
    if let Some(Credentials::Basic { key, .. }) = &credentials {
        identity.claimed_key = Some(truncate(key));
    }
    if header.is_some() && !auth.is_secure() && !remote.proxied_https {
        if let Some(Credentials::Bearer(jwt)) = &credentials {
            identity.claim_jwt(jwt);
        }
        return Err(ApiError::Forbidden("https_required"));
    }
    let Some(credentials) = credentials else {
        let raw = req.headers().get(header::AUTHORIZATION);
        return Err(ApiError::Unauthorized(challenge_for(
            raw.map(|v| v.as_bytes()),
        )));
    };
    // Reloads have failed for too long: a revocation made since cannot be
    // seen, so no credential is trusted (docs/api/rights.md#order-of-checks).
    if let Some(e) = auth.tokens_expired() {
        return Err(ApiError::Unavailable(e));
    }
    let tokens = auth.tokens();
    let (token, jwt) = match credentials {
        Credentials::Basic { key, secret } => {
            let token = tokens
                .basic(&key, &secret)
                .ok_or(ApiError::Unauthorized(BASIC_CHALLENGE))?;
            identity.verified(&token.consumer_key, None);
            (token, None)
        }
        Credentials::Bearer(jwt) => {
            let (token, verified) = tokens.bearer(jwt, auth.now().timestamp()).map_err(|e| {
                identity.claim_jwt(jwt);
                tracing::info!(reason = %e, "bearer token refused");
                ApiError::Unauthorized(INVALID_TOKEN_CHALLENGE)
            })?;
            // The kid named this token.
            identity.verified(&token.consumer_key, Some(&verified.iss));
            (token, Some(Arc::new(verified)))
        }
    };
    // The allow-list before the token's bucket: a stolen secret used from
    // elsewhere must not use up what the real client may send.
    if !ip::allowed(&token.ip_allow, remote.client) {
        return Err(ApiError::Forbidden("ip_not_allowed"));
    }
    auth.limits()
        .admit_token(&token.consumer_key)
        .map_err(|over| ApiError::TooManyRequests(over.0))?;
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

/// Whether `refusal` counts against the client address's limit rather
/// than a token's: it came before any credentials were found valid (none,
/// wrong ones, or credentials over plain HTTP, refused unread), or valid
/// ones were used from outside their token's allow-list.
fn counts_by_address(refusal: &ApiError) -> bool {
    matches!(
        refusal,
        ApiError::Unauthorized(_)
            | ApiError::Forbidden("https_required")
            | ApiError::Forbidden("ip_not_allowed")
    )
}

/// Who sent the request, as far as the service can tell: the peer, and
/// what trusted proxies say (docs/operations.md#behind-a-reverse-proxy). A
/// request without connection info is trusted with nothing.
pub fn client_of(auth: &AuthService, extensions: &Extensions, headers: &HeaderMap) -> Remote {
    let peer = extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    Remote::of(peer, &ProxyHeaders::of(headers), auth.trusted_proxies())
}

/// The client as the access log records it: the address, or `unknown`.
pub fn client_text(remote: Remote) -> String {
    remote
        .client
        .map_or_else(|| "unknown".to_owned(), |c| c.to_string())
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
}
