//! Signed links into the hosted fill-out pages (docs/api/fill-out.md): the
//! one-time `fill_out_url` of a fill-out session, the `completing_url` of a
//! respondent's pending responses (valid until it expires or the
//! respondent's links are revoked), and the CSRF
//! token and `interrupt_url` token of a browser session. Each is an
//! HMAC-SHA256 under one server secret, so nobody can make or alter a link
//! without it, and every host that shares the secret (hosts on one
//! database share the generated one) can check one. Pure: the caller
//! passes the time in.

use chrono::{DateTime, Duration, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::domain::ids::RespondentId;

/// A respondent's `completing_url` as it arrives: the parts of its query.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompletingQuery {
    /// Unix seconds after which the link no longer opens anything.
    pub expires: String,
    /// The respondent's link generation it was made in: revoking the
    /// respondent's links moves it on.
    pub generation: String,
    pub token: String,
}

type HmacSha256 = Hmac<Sha256>;

/// Whether `secret` may sign fill-out links: at least 32 characters. The
/// settings check a secret given as text with it, start-up one read from a
/// file.
pub fn check_link_secret(secret: &str) -> Result<(), String> {
    if secret.chars().count() < 32 {
        return Err("must be at least 32 characters".into());
    }
    Ok(())
}

/// How far a link's timestamp may lie ahead of this host's clock (hosts'
/// clocks differ a little).
const CLOCK_LEEWAY: Duration = Duration::seconds(60);

/// Makes and checks the service's signed links.
#[derive(Clone)]
pub struct Links {
    secret: Vec<u8>,
    /// The address respondents reach the service at, without a trailing
    /// slash.
    public_url: String,
    /// How long a `fill_out_url` can be used after it was made.
    login_window: Duration,
    /// How long a `completing_url` works after it was handed out.
    completing_ttl: Duration,
}

impl std::fmt::Debug for Links {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Links")
            .field("public_url", &self.public_url)
            .field("login_window", &self.login_window)
            .field("completing_ttl", &self.completing_ttl)
            .finish_non_exhaustive()
    }
}

/// The query of a `fill_out_url`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoginQuery {
    pub fill_out_session_key: String,
    pub nonce: String,
    pub timestamp: String,
    pub hmac: String,
}

/// Why a `fill_out_url` cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkError {
    /// Missing parts, or a signature that does not match: made or changed
    /// by someone without the secret.
    Tampered,
    /// Older than the login window (or dated too far ahead).
    Expired,
}

impl Links {
    /// `public_url` is an absolute http(s) URL; a trailing slash is dropped.
    pub fn new(
        secret: &[u8],
        public_url: &str,
        login_window: Duration,
        completing_ttl: Duration,
    ) -> Links {
        Links {
            secret: secret.to_vec(),
            public_url: public_url.trim_end_matches('/').to_owned(),
            login_window,
            completing_ttl,
        }
    }

    /// The address respondents reach the service at.
    pub fn public_url(&self) -> &str {
        &self.public_url
    }

    /// The absolute URL of a path of this service.
    pub fn absolute(&self, path: &str) -> String {
        format!("{}{path}", self.public_url)
    }

    /// The `fill_out_url` of a session: `{public_url}/fill_out/session/login`
    /// with its key, nonce and timestamp (Unix seconds) and their HMAC.
    pub fn login_url(&self, key: &str, nonce: &str, timestamp: i64) -> String {
        let timestamp = timestamp.to_string();
        let hmac = self.sign(&[
            b"fill_out_session",
            key.as_bytes(),
            nonce.as_bytes(),
            timestamp.as_bytes(),
        ]);
        let query = form_urlencoded::Serializer::new(String::new())
            .append_pair("fill_out_session_key", key)
            .append_pair("hmac", &hmac)
            .append_pair("nonce", nonce)
            .append_pair("timestamp", &timestamp)
            .finish();
        self.absolute(&format!("/fill_out/session/login?{query}"))
    }

    /// Checks a `fill_out_url`'s signature, then its age at `now`. That the
    /// nonce is not spent yet is the store's to check.
    pub fn check_login(&self, q: &LoginQuery, now: DateTime<Utc>) -> Result<(), LinkError> {
        if q.fill_out_session_key.is_empty() || q.nonce.is_empty() || q.hmac.is_empty() {
            return Err(LinkError::Tampered);
        }
        let signed = [
            b"fill_out_session".as_slice(),
            q.fill_out_session_key.as_bytes(),
            q.nonce.as_bytes(),
            q.timestamp.as_bytes(),
        ];
        if !self.verify(&signed, &q.hmac) {
            return Err(LinkError::Tampered);
        }
        // Signed, so it is a timestamp we wrote.
        let at = q
            .timestamp
            .parse::<i64>()
            .ok()
            .and_then(|s| DateTime::from_timestamp(s, 0))
            .ok_or(LinkError::Tampered)?;
        if now >= at + self.login_window || at > now + CLOCK_LEEWAY {
            return Err(LinkError::Expired);
        }
        Ok(())
    }

    /// The `completing_url` of a respondent's pending responses, handed
    /// out at `now`: it opens the fill-out pages for whatever the respondent
    /// has open when it is used, until `now` plus the configured lifetime,
    /// and only while the respondent's link generation is still
    /// `generation` (revoking moves it on).
    pub fn completing_url(
        &self,
        respondent: RespondentId,
        generation: i64,
        now: DateTime<Utc>,
    ) -> String {
        let expires = (now + self.completing_ttl).timestamp().to_string();
        let generation = generation.to_string();
        let parts = completing_parts(respondent, &generation, &expires);
        let token = self.sign(&parts.each_ref().map(Vec::as_slice));
        let query = form_urlencoded::Serializer::new(String::new())
            .append_pair("expires", &expires)
            .append_pair("generation", &generation)
            .append_pair("token", &token)
            .finish();
        self.absolute(&format!("/fill_out/respondents/{respondent}?{query}"))
    }

    /// Checks a `completing_url`: its signature, then its expiry at `now`.
    /// Gives the generation it names; that it is still the respondent's is
    /// the store's to check. A link of the first format (a token over the
    /// respondent id alone, no expiry) is expired: it was a bearer
    /// credential for ever (docs/api/quirks.md).
    pub fn check_completing(
        &self,
        respondent: RespondentId,
        q: &CompletingQuery,
        now: DateTime<Utc>,
    ) -> Result<i64, LinkError> {
        if q.expires.is_empty() && q.generation.is_empty() {
            let id = respondent.0.to_string();
            return Err(
                if self.verify(&[b"completing_url", id.as_bytes()], &q.token) {
                    LinkError::Expired
                } else {
                    LinkError::Tampered
                },
            );
        }
        let parts = completing_parts(respondent, &q.generation, &q.expires);
        if !self.verify(&parts.each_ref().map(Vec::as_slice), &q.token) {
            return Err(LinkError::Tampered);
        }
        // Signed, so these are numbers we wrote.
        let generation = q
            .generation
            .parse::<i64>()
            .map_err(|_| LinkError::Tampered)?;
        let expires = q
            .expires
            .parse::<i64>()
            .ok()
            .and_then(|s| DateTime::from_timestamp(s, 0))
            .ok_or(LinkError::Tampered)?;
        if now >= expires {
            return Err(LinkError::Expired);
        }
        Ok(generation)
    }

    /// The CSRF token of the browser session whose cookie is `cookie`: the
    /// forms of that session carry it, and only that session's cookie
    /// matches it.
    pub fn csrf_token(&self, cookie: &str) -> String {
        self.sign(&[b"csrf", cookie.as_bytes()])
    }

    /// Whether `given` is the CSRF token of the session with `cookie`.
    pub fn check_csrf(&self, cookie: &str, given: &str) -> bool {
        self.verify(&[b"csrf", cookie.as_bytes()], given)
    }

    /// The token of the session's `interrupt_url`. It is not the CSRF
    /// token: the `interrupt_url` goes to the caller's progress page (and
    /// its logs), and what it carries must not let anyone post a form.
    pub fn interrupt_token(&self, cookie: &str) -> String {
        self.sign(&[b"interrupt", cookie.as_bytes()])
    }

    /// Whether `given` is the `interrupt_url` token of the session with
    /// `cookie`.
    pub fn check_interrupt(&self, cookie: &str, given: &str) -> bool {
        self.verify(&[b"interrupt", cookie.as_bytes()], given)
    }

    /// HMAC-SHA256 over the parts, each preceded by its length (so no two
    /// lists of parts sign the same bytes), in lower-case hex.
    fn sign(&self, parts: &[&[u8]]) -> String {
        hex::encode(self.mac(parts).finalize().into_bytes())
    }

    /// Compares in constant time (hmac's `verify_slice`).
    fn verify(&self, parts: &[&[u8]], given: &str) -> bool {
        let Ok(bytes) = <[u8; 32] as hex::FromHex>::from_hex(given) else {
            return false;
        };
        self.mac(parts).verify_slice(&bytes).is_ok()
    }

    fn mac(&self, parts: &[&[u8]]) -> HmacSha256 {
        // Any key length is valid for HMAC, so this cannot fail.
        let mut mac = <HmacSha256 as Mac>::new_from_slice(&self.secret)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        for part in parts {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        mac
    }
}

/// What a `completing_url`'s token signs. The label differs from the first
/// format's (`completing_url`), so no token of one is a token of the other.
fn completing_parts<'a>(
    respondent: RespondentId,
    generation: &'a str,
    expires: &'a str,
) -> [Vec<u8>; 4] {
    [
        b"completing_url/2".to_vec(),
        respondent.0.to_string().into_bytes(),
        generation.as_bytes().to_vec(),
        expires.as_bytes().to_vec(),
    ]
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn links() -> Links {
        Links::new(
            b"a test secret of enough length!!",
            "https://rom.example.org/",
            Duration::minutes(10),
            Duration::days(30),
        )
    }

    fn at(minute: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 1, 9, minute, 0)
            .single()
            .expect("valid")
    }

    fn query_of(url: &str) -> LoginQuery {
        let (_, query) = url.split_once('?').expect("a query");
        let mut q = LoginQuery::default();
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            let v = v.into_owned();
            match k.as_ref() {
                "fill_out_session_key" => q.fill_out_session_key = v,
                "nonce" => q.nonce = v,
                "timestamp" => q.timestamp = v,
                "hmac" => q.hmac = v,
                other => panic!("unexpected parameter {other}"),
            }
        }
        q
    }

    #[test]
    fn a_login_link_is_valid_for_its_window_only() {
        let links = links();
        let url = links.login_url("key-1", "nonce-1", at(0).timestamp());
        assert!(url.starts_with(
            "https://rom.example.org/fill_out/session/login?fill_out_session_key=key-1&hmac="
        ));
        let q = query_of(&url);
        assert_eq!(links.check_login(&q, at(0)), Ok(()));
        assert_eq!(links.check_login(&q, at(9)), Ok(()));
        assert_eq!(links.check_login(&q, at(10)), Err(LinkError::Expired));
        // Dated more than a minute ahead of this host's clock.
        let ahead = query_of(&links.login_url("key-1", "nonce-1", at(5).timestamp()));
        assert_eq!(links.check_login(&ahead, at(3)), Err(LinkError::Expired));
        assert_eq!(links.check_login(&ahead, at(4)), Ok(()));
    }

    #[test]
    fn a_changed_part_or_another_secret_is_tampering() {
        let links = links();
        let good = query_of(&links.login_url("key-1", "nonce-1", at(0).timestamp()));
        let changes: [fn(&mut LoginQuery); 6] = [
            |q| q.fill_out_session_key.push('x'),
            |q| q.nonce = "nonce-2".into(),
            |q| q.timestamp = (q.timestamp.parse::<i64>().unwrap_or_default() + 60).to_string(),
            |q| {
                let flipped = if q.hmac.starts_with('0') { "1" } else { "0" };
                q.hmac.replace_range(..1, flipped);
            },
            |q| q.hmac.clear(),
            |q| q.hmac = q.hmac.to_uppercase() + "00",
        ];
        for change in changes {
            let mut q = good.clone();
            change(&mut q);
            assert_eq!(
                links.check_login(&q, at(1)),
                Err(LinkError::Tampered),
                "{q:?}"
            );
        }
        let other = Links::new(
            b"another secret, just as long!!!!",
            "https://rom.example.org",
            Duration::minutes(10),
            Duration::days(30),
        );
        assert_eq!(other.check_login(&good, at(1)), Err(LinkError::Tampered));
    }

    #[test]
    fn parts_cannot_be_shifted_between_fields() {
        let links = links();
        let q = query_of(&links.login_url("ab", "c", at(0).timestamp()));
        let shifted = LoginQuery {
            fill_out_session_key: "a".into(),
            nonce: "bc".into(),
            ..q
        };
        assert_eq!(links.check_login(&shifted, at(0)), Err(LinkError::Tampered));
    }

    fn completing_query_of(url: &str) -> CompletingQuery {
        let (_, query) = url.split_once('?').expect("a query");
        let mut q = CompletingQuery::default();
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            let v = v.into_owned();
            match k.as_ref() {
                "expires" => q.expires = v,
                "generation" => q.generation = v,
                "token" => q.token = v,
                other => panic!("unexpected parameter {other}"),
            }
        }
        q
    }

    #[test]
    fn a_completing_url_names_its_generation_until_it_expires() {
        let links = links();
        let url = links.completing_url(RespondentId(7), 3, at(0));
        assert!(url.starts_with("https://rom.example.org/fill_out/respondents/7?expires="));
        let q = completing_query_of(&url);
        assert_eq!(
            q.expires,
            (at(0) + Duration::days(30)).timestamp().to_string()
        );
        assert_eq!(links.check_completing(RespondentId(7), &q, at(0)), Ok(3));
        let last = at(0) + Duration::days(30) - Duration::seconds(1);
        assert_eq!(links.check_completing(RespondentId(7), &q, last), Ok(3));
        let after = at(0) + Duration::days(30);
        assert_eq!(
            links.check_completing(RespondentId(7), &q, after),
            Err(LinkError::Expired)
        );
        // Another respondent, a later expiry or an older generation is
        // tampering.
        assert_eq!(
            links.check_completing(RespondentId(8), &q, at(0)),
            Err(LinkError::Tampered)
        );
        let later = CompletingQuery {
            expires: (at(0) + Duration::days(300)).timestamp().to_string(),
            ..q.clone()
        };
        assert_eq!(
            links.check_completing(RespondentId(7), &later, at(0)),
            Err(LinkError::Tampered)
        );
        let older = CompletingQuery {
            generation: "2".into(),
            ..q
        };
        assert_eq!(
            links.check_completing(RespondentId(7), &older, at(0)),
            Err(LinkError::Tampered)
        );
    }

    #[test]
    fn a_completing_url_of_the_first_format_is_expired() {
        let links = links();
        // The first format: a token over the respondent id alone.
        let old = CompletingQuery {
            token: links.sign(&[b"completing_url", b"7"]),
            ..CompletingQuery::default()
        };
        assert_eq!(
            links.check_completing(RespondentId(7), &old, at(0)),
            Err(LinkError::Expired)
        );
        assert_eq!(
            links.check_completing(RespondentId(8), &old, at(0)),
            Err(LinkError::Tampered)
        );
    }

    #[test]
    fn completing_tokens_and_csrf_tokens_belong_to_one_holder() {
        let links = links();
        let csrf = links.csrf_token("cookie-a");
        assert!(links.check_csrf("cookie-a", &csrf));
        assert!(!links.check_csrf("cookie-b", &csrf));
        // A CSRF token is not a completing token, even for the same text.
        let forged = CompletingQuery {
            expires: "9999999999".into(),
            generation: "0".into(),
            token: links.csrf_token("7"),
        };
        assert_eq!(
            links.check_completing(RespondentId(7), &forged, at(0)),
            Err(LinkError::Tampered)
        );
        // Nor is an interrupt token a CSRF token, or the other way round.
        let interrupt = links.interrupt_token("cookie-a");
        assert!(links.check_interrupt("cookie-a", &interrupt));
        assert!(!links.check_interrupt("cookie-b", &interrupt));
        assert!(!links.check_csrf("cookie-a", &interrupt));
        assert!(!links.check_interrupt("cookie-a", &csrf));
    }
}
