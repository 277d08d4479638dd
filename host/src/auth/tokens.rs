//! The token table: every API token parsed once and kept in memory, so
//! that checking a request's credentials costs a hash lookup, one SHA-256
//! and (for JWTs) one RSA verification with an already parsed key. The host
//! reloads it from the database every few seconds and after each change it
//! makes itself.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ipnet::IpNet;

use super::jwt::{self, JwtError, RsaPublicKey, VerifiedJwt};
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
    keys: Vec<RsaPublicKey>,
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
}

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
        TokenTable {
            by_key,
            verified: Mutex::default(),
        }
    }

    /// Whether a token (revoked or not) has this consumer key.
    pub fn knows(&self, consumer_key: &str) -> bool {
        self.by_key.contains_key(consumer_key)
    }

    /// Whether any unrevoked token exists.
    pub fn has_active(&self) -> bool {
        self.by_key.values().any(|t| !t.revoked)
    }

    /// The token these Basic credentials name, if the secret is right and the
    /// token not revoked. Takes the same time for an unknown key.
    pub fn basic(&self, key: &str, secret: &str) -> Option<Arc<Token>> {
        let token = self.by_key.get(key);
        let stored = token.map_or(&DUMMY_HASH, |t| &t.secret_sha256);
        let ok = secret::matches(secret, stored);
        match token {
            Some(t) if ok && !t.revoked => Some(t.clone()),
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
        if let Some(hit) = self
            .remembered()
            .get(token)
            .filter(|(_, verified)| verified.valid_at(now_unix))
        {
            return Ok(hit.clone());
        }
        let (owner, verified) = jwt::verify_with(token, now_unix, |kid| {
            let owner = self
                .by_key
                .get(kid)
                .filter(|t| !t.revoked && !t.keys.is_empty())?;
            Some((owner.clone(), owner.keys.iter().collect()))
        })?;
        let mut remembered = self.remembered();
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
        .map(|pem| RsaPublicKey::from_pem(pem).map_err(|e| format!("public key: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Token {
        consumer_key: t.consumer_key.clone(),
        secret_sha256: secret::from_hex(&t.secret_sha256)
            .ok_or("secret hash is not 64 hex digits")?,
        rights: rights::parse_list(&t.rights)?,
        ip_allow: ip::parse_list(&t.ip_allow)?,
        allowed_origins: origin::parse_list(&t.allowed_origins)?,
        revoked: t.revoked_at.is_some(),
        keys,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
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
        StoredToken {
            public_keys: vec![PUBLIC_PEM.to_owned()],
            ..stored(key, "x", revoked)
        }
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
    fn unparsable_rows_are_left_out() {
        let mut bad = stored("bad", "x", false);
        bad.rights = "everything".into();
        let table = TokenTable::new(vec![bad]);
        assert!(!table.has_active());
    }
}
