//! The token table: every API token parsed once and kept in memory, so
//! that checking a request's credentials costs a hash lookup, one SHA-256
//! and (for JWTs) one RSA verification with an already parsed key. The host
//! reloads it from the database every few seconds and after each change it
//! makes itself; when reloads keep failing the table goes [`Freshness::Stale`]
//! and then [`Freshness::Expired`] (docs/operations.md#jwt-keys-and-tokens).
//!
//! JWTs verified once are remembered per table, and forgotten once reloads
//! keep failing. A JWT-only token refuses HTTP Basic. **Invariant:** an
//! unknown key, or a JWT-only token's, costs as much as a wrong secret; a
//! JWT naming an unknown `kid` costs what one of the registered keys'
//! sizes costs, never more.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ipnet::IpNet;

use super::jwt::{
    self, JwtError, KeyAlgorithm, RegisteredKey, RsaPublicKey, StandIns, VerifiedJwt,
};
use super::rights::{self, Right};
use super::{ip, origin, secret};
use crate::store::StoredToken;

/// One usable token.
#[derive(Debug)]
pub struct Token {
    pub consumer_key: String,
    secret_sha256: [u8; 32],
    pub rights: Vec<Right>,
    pub ip_allow: Vec<IpNet>,
    pub allowed_origins: Vec<String>,
    pub revoked: bool,
    /// Refused over HTTP Basic: the token speaks with JWTs only.
    pub jwt_only: bool,
    keys: Vec<RegisteredKey>,
}

impl Token {
    pub fn has_right(&self, right: Right) -> bool {
        self.rights.contains(&right)
    }
}

/// Every token by consumer key.
#[derive(Debug, Default)]
pub struct TokenTable {
    by_key: HashMap<String, Arc<Token>>,
    /// Bearer tokens verified before, by their exact text. An EPD sends the
    /// same JWT with every request for its lifetime (at most an hour), and
    /// the RSA signature check is most of what a cheap request costs; a hit
    /// re-checks only the time rules ([`VerifiedJwt::valid_at`]), since
    /// everything else depends on the text alone. The table is rebuilt on
    /// every token reload, so a revocation or a key change empties it.
    verified: Mutex<Verified>,
    /// Whether verified tokens are remembered: not once the table is stale
    /// ([`TokenTable::forget_verified`]).
    remembering: AtomicBool,
    /// The sizes of the keys the unrevoked tokens have registered: what an
    /// unknown `kid`'s stand-in check may cost.
    stand_ins: StandIns,
}

/// How far the table in use can be trusted to hold the database's tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// The last reload succeeded, or fewer than
    /// [`STALE_AFTER_FAILED_RELOADS`] in a row failed.
    Current,
    /// Reloads keep failing: revocations and key changes made since the
    /// last good reload are not seen. Remembered verifications are dropped.
    Stale,
    /// Stale for longer than the configured limit: every credential is
    /// refused (503) until a reload succeeds.
    Expired,
}

impl Freshness {
    /// As `/health` reports it.
    pub fn as_str(self) -> &'static str {
        match self {
            Freshness::Current => "ok",
            Freshness::Stale => "stale",
            Freshness::Expired => "expired",
        }
    }
}

/// After this many failed reloads in a row (one every 2 s, so about 6 s)
/// the table is [`Freshness::Stale`].
pub const STALE_AFTER_FAILED_RELOADS: u32 = 3;

/// Bearer tokens verified before, by their text, with their token.
type Verified = HashMap<Box<str>, (Arc<Token>, VerifiedJwt)>;

/// At most this many verified bearer tokens are remembered; when full,
/// the memory starts over (bounded: a flood of distinct tokens costs RSA
/// checks, never memory).
const VERIFIED_CAPACITY: usize = 4096;

/// Compared against when the consumer key is unknown, so that an unknown
/// key costs the same as a wrong secret (docs/api/rights.md#http-basic).
const DUMMY_HASH: [u8; 32] = [0x5a; 32];

/// What the Authorization header holds.
#[derive(Debug, PartialEq, Eq)]
pub enum Credentials<'a> {
    Basic { key: String, secret: String },
    Bearer(&'a str),
}

impl<'a> Credentials<'a> {
    /// Reads an Authorization header value; None when it is neither a
    /// well-formed Basic nor a Bearer credential.
    pub fn parse(header: &'a str) -> Option<Credentials<'a>> {
        let (scheme, value) = header.trim().split_once(' ')?;
        let value = value.trim();
        if scheme.eq_ignore_ascii_case("basic") {
            let decoded = STANDARD.decode(value).ok()?;
            let text = String::from_utf8(decoded).ok()?;
            let (key, secret) = text.split_once(':')?;
            Some(Credentials::Basic {
                key: key.to_owned(),
                secret: secret.to_owned(),
            })
        } else if scheme.eq_ignore_ascii_case("bearer") && !value.is_empty() {
            Some(Credentials::Bearer(value))
        } else {
            None
        }
    }
}

impl TokenTable {
    /// Builds the table, leaving out (and logging) entries that no longer
    /// parse rather than refusing every token.
    pub fn new(stored: Vec<StoredToken>) -> TokenTable {
        let mut by_key = HashMap::with_capacity(stored.len());
        for t in stored {
            match parse(&t) {
                Ok(token) => {
                    by_key.insert(t.consumer_key.clone(), Arc::new(token));
                }
                Err(problem) => {
                    tracing::error!(consumer_key = %t.consumer_key, problem, "token left out: stored data does not parse")
                }
            }
        }
        let stand_ins = StandIns::of(
            by_key
                .values()
                .filter(|t| !t.revoked)
                .flat_map(|t| t.keys.iter()),
        );
        TokenTable {
            by_key,
            verified: Mutex::default(),
            remembering: AtomicBool::new(true),
            stand_ins,
        }
    }

    /// Whether a token (revoked or not) has this consumer key.
    pub fn knows(&self, consumer_key: &str) -> bool {
        self.by_key.contains_key(consumer_key)
    }

    /// Drops the remembered verifications and remembers none from now on:
    /// every bearer token is verified in full against this table.
    pub fn forget_verified(&self) {
        let mut remembered = self.remembered();
        self.remembering.store(false, Ordering::Relaxed);
        remembered.clear();
    }

    /// Consumer keys with a key that accepts more than one algorithm
    /// (registered before algorithms were recorded), for a warning.
    pub fn unpinned(&self) -> Vec<&str> {
        let mut keys: Vec<&str> = self
            .by_key
            .values()
            .filter(|t| !t.revoked && t.keys.iter().any(|k| !k.is_pinned()))
            .map(|t| t.consumer_key.as_str())
            .collect();
        keys.sort_unstable();
        keys
    }

    /// Whether any unrevoked token exists.
    pub fn has_active(&self) -> bool {
        self.by_key.values().any(|t| !t.revoked)
    }

    /// The token these Basic credentials name, if the secret is right and the
    /// token neither revoked nor JWT-only. Takes the same time for an
    /// unknown key and a JWT-only token.
    pub fn basic(&self, key: &str, secret: &str) -> Option<Arc<Token>> {
        let token = self.by_key.get(key);
        let stored = token
            .filter(|t| !t.jwt_only)
            .map_or(&DUMMY_HASH, |t| &t.secret_sha256);
        let ok = secret::matches(secret, stored);
        match token {
            Some(t) if ok && !t.revoked && !t.jwt_only => Some(t.clone()),
            _ => None,
        }
    }

    /// Verifies a bearer JWT against the keys registered for its `kid`.
    /// A token verified before is taken from memory when its time rules
    /// still hold.
    pub fn bearer(
        &self,
        token: &str,
        now_unix: i64,
    ) -> Result<(Arc<Token>, VerifiedJwt), JwtError> {
        let remembering = self.remembering.load(Ordering::Relaxed);
        if remembering
            && let Some(hit) = self
                .remembered()
                .get(token)
                .filter(|(_, verified)| verified.valid_at(now_unix))
        {
            return Ok(hit.clone());
        }
        let (owner, verified) = jwt::verify_with(token, now_unix, &self.stand_ins, |kid| {
            let owner = self
                .by_key
                .get(kid)
                .filter(|t| !t.revoked && !t.keys.is_empty())?;
            Some((owner.clone(), owner.keys.iter().collect()))
        })?;
        let mut remembered = self.remembered();
        // Read again under the lock: the table may have gone stale since.
        if !self.remembering.load(Ordering::Relaxed) {
            return Ok((owner, verified));
        }
        if remembered.len() >= VERIFIED_CAPACITY {
            remembered.clear();
        }
        remembered.insert(token.into(), (owner.clone(), verified.clone()));
        Ok((owner, verified))
    }

    /// The verified tokens; a panic elsewhere while holding the lock
    /// cannot leave them inconsistent (inserts are whole), so a poisoned
    /// lock is used as it is.
    fn remembered(&self) -> std::sync::MutexGuard<'_, Verified> {
        self.verified
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn parse(t: &StoredToken) -> Result<Token, String> {
    let keys = t
        .public_keys
        .iter()
        .map(|stored| {
            let key =
                RsaPublicKey::from_pem(&stored.pem).map_err(|e| format!("public key: {e}"))?;
            KeyAlgorithm::parse_list(&stored.algorithms)
                .and_then(|algorithms| RegisteredKey::new(key, algorithms))
                .map_err(|e| format!("public key {}: {e}", stored.fingerprint))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Token {
        consumer_key: t.consumer_key.clone(),
        secret_sha256: secret::from_hex(&t.secret_sha256)
            .ok_or("secret hash is not 64 hex digits")?,
        rights: rights::parse_list(&t.rights)?,
        ip_allow: ip::parse_list(&t.ip_allow)?,
        allowed_origins: origin::parse_list(&t.allowed_origins)?,
        revoked: t.revoked_at.is_some(),
        jwt_only: t.jwt_only,
        keys,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD as URL_SAFE;
    use chrono::Utc;

    fn stored(key: &str, secret: &str, revoked: bool) -> StoredToken {
        StoredToken {
            id: 1,
            consumer_key: key.to_owned(),
            secret_sha256: secret::to_hex(&secret::hash(secret)),
            rights: "responses".to_owned(),
            ip_allow: String::new(),
            allowed_origins: String::new(),
            created_at: Utc::now(),
            revoked_at: revoked.then(Utc::now),
            jwt_only: false,
            public_keys: Vec::new(),
        }
    }

    #[test]
    fn basic_credentials_need_the_right_secret_of_an_active_token() {
        let table = TokenTable::new(vec![
            stored("epd", "s3cret", false),
            stored("old", "s3cret", true),
        ]);
        assert!(table.basic("epd", "s3cret").is_some());
        assert!(table.basic("epd", "wrong").is_none());
        assert!(table.basic("nobody", "s3cret").is_none());
        assert!(table.basic("old", "s3cret").is_none());
        assert!(table.has_active());
    }

    #[test]
    fn authorization_headers_parse_strictly() {
        let header = format!("Basic {}", STANDARD.encode("epd:se:cret"));
        assert_eq!(
            Credentials::parse(&header),
            Some(Credentials::Basic {
                key: "epd".into(),
                secret: "se:cret".into()
            })
        );
        assert_eq!(
            Credentials::parse("bearer abc.def.ghi"),
            Some(Credentials::Bearer("abc.def.ghi"))
        );
        assert_eq!(Credentials::parse("Basic !!!"), None);
        assert_eq!(Credentials::parse("Bearer "), None);
        assert_eq!(Credentials::parse("Digest x"), None);
    }

    const PRIVATE_PEM: &[u8] = include_bytes!("../../../tests/fixtures/keys/rsa2048.pem");
    const PUBLIC_PEM: &str = include_str!("../../../tests/fixtures/keys/rsa2048.pub.pem");
    const NOW: i64 = 1_750_000_000;

    fn jwt(kid: &str, claims: serde_json::Value) -> String {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
        header.kid = Some(kid.to_owned());
        let key = jsonwebtoken::EncodingKey::from_rsa_pem(PRIVATE_PEM).expect("fixture key");
        jsonwebtoken::encode(&header, &claims, &key).expect("sign")
    }

    fn with_key(key: &str, revoked: bool) -> StoredToken {
        with_key_for(key, revoked, "RS256")
    }

    fn with_key_for(key: &str, revoked: bool, algorithms: &str) -> StoredToken {
        StoredToken {
            public_keys: vec![crate::store::StoredKey {
                pem: PUBLIC_PEM.to_owned(),
                fingerprint: "f".to_owned(),
                algorithms: algorithms.to_owned(),
            }],
            ..stored(key, "x", revoked)
        }
    }

    fn jwt_with(alg: jsonwebtoken::Algorithm, kid: &str, claims: serde_json::Value) -> String {
        let mut header = jsonwebtoken::Header::new(alg);
        header.kid = Some(kid.to_owned());
        let key = jsonwebtoken::EncodingKey::from_rsa_pem(PRIVATE_PEM).expect("fixture key");
        jsonwebtoken::encode(&header, &claims, &key).expect("sign")
    }

    fn rsa_checks() -> u32 {
        jwt::RSA_CHECKS.with(std::cell::Cell::get)
    }

    #[test]
    fn a_jwt_only_token_is_refused_over_basic_with_its_real_secret_and_accepted_as_jwt() {
        let mut only = with_key("jwt-only", false);
        only.secret_sha256 = secret::to_hex(&secret::hash("s3cret"));
        only.jwt_only = true;
        let table = TokenTable::new(vec![only]);
        assert!(table.basic("jwt-only", "s3cret").is_none());
        let claims = serde_json::json!({"iss": "epd", "aud": "api", "iat": NOW, "exp": NOW + 600});
        assert!(table.bearer(&jwt("jwt-only", claims), NOW).is_ok());
    }

    #[test]
    fn a_key_verifies_only_the_algorithms_it_is_registered_for() {
        let claims = serde_json::json!({"iss": "epd", "aud": "api", "iat": NOW, "exp": NOW + 600});
        let rs256 = jwt_with(jsonwebtoken::Algorithm::RS256, "epd", claims.clone());
        let rs512 = jwt_with(jsonwebtoken::Algorithm::RS512, "epd", claims);
        let pinned_256 = TokenTable::new(vec![with_key_for("epd", false, "RS256")]);
        assert!(pinned_256.bearer(&rs256, NOW).is_ok());
        assert_eq!(
            pinned_256.bearer(&rs512, NOW).map(|_| ()),
            Err(JwtError::AlgorithmNotRegistered("RS512"))
        );
        let pinned_512 = TokenTable::new(vec![with_key_for("epd", false, "RS512")]);
        assert!(pinned_512.bearer(&rs512, NOW).is_ok());
        assert_eq!(
            pinned_512.bearer(&rs256, NOW).map(|_| ()),
            Err(JwtError::AlgorithmNotRegistered("RS256"))
        );
        // A key registered before algorithms were recorded keeps both, and
        // is named as unpinned.
        let legacy = TokenTable::new(vec![with_key_for("epd", false, "RS256,RS512")]);
        assert!(legacy.bearer(&rs256, NOW).is_ok());
        assert!(legacy.bearer(&rs512, NOW).is_ok());
        assert_eq!(legacy.unpinned(), vec!["epd"]);
        assert!(pinned_256.unpinned().is_empty());
        // An unreadable algorithm list leaves the token out, as any bad row.
        assert!(!TokenTable::new(vec![with_key_for("epd", false, "rs256")]).has_active());
    }

    #[test]
    fn a_stale_table_forgets_remembered_verifications_and_remembers_no_new_ones() {
        let table = TokenTable::new(vec![with_key("epd", false)]);
        let claims = serde_json::json!({"iss": "epd", "aud": "api", "iat": NOW, "exp": NOW + 600});
        let token = jwt("epd", claims.clone());
        let before = rsa_checks();
        assert!(table.bearer(&token, NOW).is_ok());
        assert!(table.bearer(&token, NOW).is_ok());
        assert_eq!(rsa_checks() - before, 1, "the second use is remembered");
        table.forget_verified();
        let before = rsa_checks();
        assert!(table.bearer(&token, NOW).is_ok());
        assert!(table.bearer(&token, NOW).is_ok());
        assert_eq!(rsa_checks() - before, 2, "every use is verified in full");
    }

    #[test]
    fn a_remembered_bearer_token_still_obeys_the_time_rules() {
        let table = TokenTable::new(vec![with_key("epd", false)]);
        let token = jwt(
            "epd",
            serde_json::json!({"iss": "epd", "aud": "api", "iat": NOW, "nbf": NOW + 100, "exp": NOW + 600}),
        );
        assert_eq!(
            table.bearer(&token, NOW).map(|_| ()),
            Err(JwtError::NotYetValid)
        );
        let (owner, verified) = table.bearer(&token, NOW + 100).expect("valid from nbf");
        assert_eq!(owner.consumer_key, "epd");
        assert_eq!(verified.kid, "epd");
        // Remembered now: the same answer without a signature check, as
        // long as the time rules hold; after exp (and the leeway) refused,
        // and refused again when the clock goes back before nbf.
        assert_eq!(
            table.bearer(&token, NOW + 300).map(|(_, v)| v),
            Ok(verified)
        );
        assert_eq!(
            table
                .bearer(&token, NOW + 600 + jwt::LEEWAY_SECS)
                .map(|_| ()),
            Err(JwtError::Expired)
        );
        assert_eq!(
            table.bearer(&token, NOW).map(|_| ()),
            Err(JwtError::NotYetValid)
        );
        // A token differing in one character is another token.
        let mut tampered = token.clone();
        tampered.pop();
        tampered.push(if token.ends_with('A') { 'B' } else { 'A' });
        assert!(table.bearer(&tampered, NOW + 300).is_err());
    }

    #[test]
    fn a_reload_forgets_remembered_tokens_so_a_revocation_holds_at_once() {
        let token = jwt(
            "epd",
            serde_json::json!({"iss": "epd", "aud": "api", "iat": NOW, "exp": NOW + 600}),
        );
        let before = TokenTable::new(vec![with_key("epd", false)]);
        assert!(before.bearer(&token, NOW).is_ok());
        let after = TokenTable::new(vec![with_key("epd", true)]);
        assert_eq!(
            after.bearer(&token, NOW).map(|_| ()),
            Err(JwtError::UnknownKey)
        );
    }

    #[test]
    fn a_kid_naming_a_token_without_a_registered_key_is_refused() {
        // "basic" is a real token, but no public key was ever registered on it.
        let table = TokenTable::new(vec![stored("basic", "x", false), with_key("epd", false)]);
        let claims = serde_json::json!({"iss": "epd", "aud": "api", "iat": NOW, "exp": NOW + 600});
        assert_eq!(
            table.bearer(&jwt("basic", claims.clone()), NOW).map(|_| ()),
            Err(JwtError::UnknownKey)
        );
        assert!(table.bearer(&jwt("epd", claims), NOW).is_ok());
    }

    #[test]
    fn an_unknown_kid_costs_a_check_the_size_of_the_registered_keys_never_more() {
        // The attack: a JWT naming nobody, with the largest signature a key
        // may have (8192 bits), to make each request cost the most.
        let table = TokenTable::new(vec![with_key("epd", false)]);
        let claims = serde_json::json!({"iss": "x", "aud": "api", "iat": NOW, "exp": NOW + 600});
        let signed = jwt("nobody", claims);
        let (input, _) = signed.rsplit_once('.').expect("three segments");
        let forged = |bytes: usize| format!("{input}.{}", URL_SAFE.encode(vec![0x42u8; bytes]));
        let cost = |token: &str| {
            let before = rsa_checks();
            assert_eq!(
                table.bearer(token, NOW).map(|_| ()),
                Err(JwtError::UnknownKey)
            );
            rsa_checks() - before
        };
        // Only a 2048-bit key is registered: an 8192-bit signature is
        // refused before any arithmetic, as that key would refuse it...
        assert_eq!(cost(&forged(1024)), 0, "8192-bit signature");
        // ...and a 2048-bit one costs what a wrong signature for that key
        // costs: one check.
        assert_eq!(cost(&forged(256)), 1, "2048-bit signature");
        // Revoked tokens' keys size nothing.
        let revoked = TokenTable::new(vec![with_key("epd", true)]);
        let before = rsa_checks();
        assert!(revoked.bearer(&forged(256), NOW).is_err());
        assert_eq!(rsa_checks() - before, 0);
    }

    #[test]
    fn unparsable_rows_are_left_out() {
        let mut bad = stored("bad", "x", false);
        bad.rights = "everything".into();
        let table = TokenTable::new(vec![bad]);
        assert!(!table.has_active());
    }
}
