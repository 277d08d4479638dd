//! JWT bearer tokens (api.md "JWT bearer", decisions.md §7).
//!
//! This module owns two things:
//!
//! * [`RsaPublicKey`]: reading the RSA public key a client registers on its
//!   API token (PEM, SPKI `BEGIN PUBLIC KEY` or PKCS#1 `BEGIN RSA PUBLIC
//!   KEY`), refusing private keys, non-RSA keys and moduli under 2048 bits,
//!   and giving it a stable fingerprint for the admin interface and logs.
//! * [`verify`]: deciding whether the token in `Authorization: Bearer <JWT>`
//!   is acceptable, in a fixed order: size, structure, header rules (`alg`,
//!   `typ`, forbidden parameters, `kid`), key lookup by `kid`, signature,
//!   then claims (`iss`, `aud`, `iat`, `exp`, `nbf`, `sub`).
//!
//! It does not extract the header, look keys up in storage, compare `sub`
//! with the dossier in the path or answer the client: the caller does that,
//! and every [`JwtError`] becomes the same 401 (decisions.md §2). The error
//! messages are therefore precise, for the logs only, and never echo
//! attacker-controlled text unescaped.
//!
//! # Why the checks are written out by hand
//!
//! `jsonwebtoken` is used for exactly two things: holding the RSA key and
//! checking an RSASSA-PKCS1-v1_5 signature (`jsonwebtoken::crypto::verify`,
//! backed by ring). Its `decode` + `Validation` path is not used, because it
//! makes policy decisions of its own: algorithm sets and key families, which
//! registered claims are required, how `aud` is matched, whether `nbf` is
//! looked at, default leeway, lenient numeric parsing, ignoring `typ`,
//! knowing nothing of a maximum lifetime, and parsing key-bearing header
//! parameters (`jwk`) at all. Here every rule of the specification is a line
//! that can be read and tested, and nothing a library upgrade changes can
//! widen what is accepted. The PEM/DER walk for keys is also ours so that the
//! bytes whose modulus size was checked are exactly the bytes handed to ring.
//!
//! Nothing here panics on any input: no `unwrap`, no fallible indexing, and
//! all time arithmetic is done in `i128`.

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

/// Tokens longer than this are refused before anything is decoded.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;
/// Largest accepted `exp - iat`, in seconds.
pub const MAX_LIFETIME_SECS: i64 = 3600;
/// Clock skew tolerated on `exp`, `nbf` and `iat`, in seconds.
pub const LEEWAY_SECS: i64 = 60;

/// Longest accepted `kid`, in bytes.
pub const MAX_KID_BYTES: usize = 255;
/// Smallest accepted RSA modulus, in bits.
pub const MIN_RSA_BITS: usize = 2048;
/// Largest accepted RSA modulus, in bits (the limit of ring's RSA verifier).
pub const MAX_RSA_BITS: usize = 8192;
/// Longest accepted PEM text for a public key (an 8192-bit SPKI key is
/// about 1.5 KiB).
pub const MAX_PEM_BYTES: usize = 16 * 1024;

/// Header parameters that carry a key or point at one. A token never chooses
/// its own key: the key is the one registered on the API token named by `kid`.
const KEY_HEADER_PARAMS: [&str; 4] = ["jwk", "jku", "x5u", "x5c"];

/// DER body of the rsaEncryption OID, 1.2.840.113549.1.1.1.
const OID_RSA_ENCRYPTION: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];

const DER_INTEGER: u8 = 0x02;
const DER_BIT_STRING: u8 = 0x03;
const DER_NULL: u8 = 0x05;
const DER_OID: u8 = 0x06;
const DER_SEQUENCE: u8 = 0x30;

// ---------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------

/// Why a PEM text is not accepted as a client's RSA public key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("not a PEM public key: {0}")]
    NotPem(&'static str),
    #[error("a private key was given; register the public key only")]
    PrivateKey,
    #[error("unsupported PEM label {0}; expected PUBLIC KEY or RSA PUBLIC KEY")]
    UnsupportedLabel(String),
    #[error("not an RSA key")]
    NotRsa,
    #[error("malformed DER: {0}")]
    Der(&'static str),
    #[error("RSA modulus of {bits} bits is below the minimum of {MIN_RSA_BITS}")]
    TooSmall { bits: usize },
    #[error("RSA modulus of {bits} bits is above the maximum of {MAX_RSA_BITS}")]
    TooLarge { bits: usize },
    #[error("RSA public exponent must be odd, at least 3 and at most 33 bits")]
    Exponent,
}

/// A parsed, validated RSA public key, cheap to clone.
#[derive(Clone)]
pub struct RsaPublicKey {
    inner: Arc<KeyInner>,
}

struct KeyInner {
    decoding: DecodingKey,
    fingerprint: String,
    bits: usize,
}

impl fmt::Debug for RsaPublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RsaPublicKey")
            .field("bits", &self.inner.bits)
            .field("fingerprint", &self.inner.fingerprint)
            .finish()
    }
}

impl RsaPublicKey {
    /// Reads a single PEM block labelled `PUBLIC KEY` (SPKI, rsaEncryption)
    /// or `RSA PUBLIC KEY` (PKCS#1). Refuses private keys, certificates,
    /// other key types, trailing data, non-canonical DER, moduli outside
    /// 2048..=8192 bits and unusable exponents.
    pub fn from_pem(pem: &str) -> Result<RsaPublicKey, KeyError> {
        if pem.len() > MAX_PEM_BYTES {
            return Err(KeyError::NotPem("longer than 16 KiB"));
        }
        let (label, der) = parse_pem(pem)?;
        let pkcs1: &[u8] = match label {
            "PUBLIC KEY" => spki_to_pkcs1(&der)?,
            "RSA PUBLIC KEY" => &der,
            l if l.contains("PRIVATE") => return Err(KeyError::PrivateKey),
            l => return Err(KeyError::UnsupportedLabel(sanitize(l))),
        };
        let bits = check_pkcs1_public_key(pkcs1)?;
        let fingerprint = hex(&Sha256::digest(&der));
        Ok(RsaPublicKey {
            inner: Arc::new(KeyInner {
                decoding: DecodingKey::from_rsa_der(pkcs1),
                fingerprint,
                bits,
            }),
        })
    }

    /// Lowercase hex SHA-256 of the DER the key was read from (the body of
    /// the PEM block: SPKI or PKCS#1, as given).
    pub fn fingerprint(&self) -> String {
        self.inner.fingerprint.clone()
    }

    /// Size of the modulus in bits.
    pub fn modulus_bits(&self) -> usize {
        self.inner.bits
    }
}

/// Splits one PEM block into its label and DER body. Exactly one block,
/// nothing but whitespace around it, no encapsulated headers.
fn parse_pem(pem: &str) -> Result<(&str, Vec<u8>), KeyError> {
    const BEGIN: &str = "-----BEGIN ";
    const END: &str = "-----END ";
    const DASHES: &str = "-----";

    let text = pem.trim();
    let after_begin = text
        .strip_prefix(BEGIN)
        .ok_or(KeyError::NotPem("no BEGIN line"))?;
    let (label, rest) = after_begin
        .split_once(DASHES)
        .ok_or(KeyError::NotPem("unterminated BEGIN line"))?;
    if label.is_empty() || !label.bytes().all(|b| b == b' ' || b.is_ascii_uppercase()) {
        return Err(KeyError::NotPem("malformed label"));
    }
    let end_line = format!("{END}{label}{DASHES}");
    let (body, trailer) = rest
        .split_once(end_line.as_str())
        .ok_or(KeyError::NotPem("no matching END line"))?;
    if !trailer.trim().is_empty() {
        return Err(KeyError::NotPem("data after the END line"));
    }
    if !body.starts_with(['\n', '\r']) {
        return Err(KeyError::NotPem("data on the BEGIN line"));
    }
    let b64: String = body.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    if b64.is_empty() {
        return Err(KeyError::NotPem("empty body"));
    }
    let der = STANDARD
        .decode(b64.as_bytes())
        .map_err(|_| KeyError::NotPem("body is not base64"))?;
    Ok((label, der))
}

/// SubjectPublicKeyInfo ::= SEQUENCE { algorithm AlgorithmIdentifier,
/// subjectPublicKey BIT STRING }; returns the PKCS#1 key inside.
fn spki_to_pkcs1(der: &[u8]) -> Result<&[u8], KeyError> {
    let spki = der_whole(der, DER_SEQUENCE)?;
    let (alg_id, rest) = der_read(spki, DER_SEQUENCE)?;
    let (bit_string, rest) = der_read(rest, DER_BIT_STRING)?;
    der_end(rest)?;

    let (oid, params) = der_read(alg_id, DER_OID)?;
    if oid != OID_RSA_ENCRYPTION {
        return Err(KeyError::NotRsa);
    }
    // RFC 3279: parameters are NULL; tolerate them being absent.
    if !params.is_empty() {
        let (null, rest) = der_read(params, DER_NULL)?;
        if !null.is_empty() {
            return Err(KeyError::Der("NULL with content"));
        }
        der_end(rest)?;
    }

    match bit_string.split_first() {
        Some((0, key)) => Ok(key),
        Some(_) => Err(KeyError::Der("BIT STRING with unused bits")),
        None => Err(KeyError::Der("empty BIT STRING")),
    }
}

/// RSAPublicKey ::= SEQUENCE { modulus INTEGER, publicExponent INTEGER };
/// returns the modulus size in bits after checking both against ring's
/// limits for RSA verification.
fn check_pkcs1_public_key(der: &[u8]) -> Result<usize, KeyError> {
    let seq = der_whole(der, DER_SEQUENCE)?;
    let (n, rest) = der_read(seq, DER_INTEGER)?;
    let (e, rest) = der_read(rest, DER_INTEGER)?;
    der_end(rest)?;

    let n = positive_integer(n)?;
    let bits = bit_length(n);
    if bits < MIN_RSA_BITS {
        return Err(KeyError::TooSmall { bits });
    }
    if bits > MAX_RSA_BITS {
        return Err(KeyError::TooLarge { bits });
    }

    let e = positive_integer(e)?;
    let e_odd = e.last().is_some_and(|b| b & 1 == 1);
    if !e_odd || bit_length(e) > 33 {
        return Err(KeyError::Exponent);
    }
    let e_value = e.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
    if e_value < 3 {
        return Err(KeyError::Exponent);
    }
    Ok(bits)
}

/// Reads one TLV with the expected tag; returns (content, rest). DER only:
/// definite, minimal lengths.
fn der_read(input: &[u8], tag: u8) -> Result<(&[u8], &[u8]), KeyError> {
    let (&t, rest) = input.split_first().ok_or(KeyError::Der("truncated"))?;
    if t != tag {
        return Err(KeyError::Der("unexpected tag"));
    }
    let (&first, rest) = rest.split_first().ok_or(KeyError::Der("truncated"))?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 {
            return Err(KeyError::Der("indefinite length"));
        }
        if count > 4 {
            return Err(KeyError::Der("length too long"));
        }
        let (len_bytes, rest) = rest
            .split_at_checked(count)
            .ok_or(KeyError::Der("truncated"))?;
        if len_bytes.first() == Some(&0) {
            return Err(KeyError::Der("non-minimal length"));
        }
        let len = len_bytes
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        if len < 0x80 {
            return Err(KeyError::Der("non-minimal length"));
        }
        (len, rest)
    };
    rest.split_at_checked(len)
        .ok_or(KeyError::Der("length beyond the input"))
}

/// Reads one TLV that must span the whole input.
fn der_whole(input: &[u8], tag: u8) -> Result<&[u8], KeyError> {
    let (content, rest) = der_read(input, tag)?;
    der_end(rest)?;
    Ok(content)
}

fn der_end(rest: &[u8]) -> Result<(), KeyError> {
    if rest.is_empty() {
        Ok(())
    } else {
        Err(KeyError::Der("trailing data"))
    }
}

/// Content of a DER INTEGER that must be positive and minimally encoded;
/// returns its magnitude without the sign byte.
fn positive_integer(content: &[u8]) -> Result<&[u8], KeyError> {
    match content {
        [] => Err(KeyError::Der("empty INTEGER")),
        [first, ..] if first & 0x80 != 0 => Err(KeyError::Der("negative INTEGER")),
        [0] => Err(KeyError::Der("zero INTEGER")),
        [0, second, ..] if second & 0x80 == 0 => Err(KeyError::Der("non-minimal INTEGER")),
        [0, magnitude @ ..] => Ok(magnitude),
        magnitude => Ok(magnitude),
    }
}

/// Bits in a big-endian magnitude whose first byte is non-zero.
fn bit_length(magnitude: &[u8]) -> usize {
    match magnitude.split_first() {
        Some((&first, rest)) => rest.len() * 8 + (8 - first.leading_zeros() as usize),
        None => 0,
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// Renders untrusted text for a log line: escaped, at most 32 characters.
fn sanitize(text: &str) -> String {
    let short: String = text.chars().take(32).collect();
    let ellipsis = if short.len() < text.len() { "…" } else { "" };
    format!("{short:?}{ellipsis}")
}

// ---------------------------------------------------------------------------
// Tokens
// ---------------------------------------------------------------------------

/// A token that passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedJwt {
    /// The consumer_key of the API token whose key signed this JWT.
    pub kid: String,
    pub iss: String,
    /// The dossier identifier, when given; the caller checks it.
    pub sub: Option<String>,
    pub iat: i64,
    pub exp: i64,
    pub nbf: Option<i64>,
}

impl VerifiedJwt {
    /// Whether the time rules still hold at `now_unix`: everything else a
    /// verification checked depends only on the token's text, so a token
    /// verified before is valid now exactly when this holds (the same
    /// leeway; the clock may also have gone back).
    pub fn valid_at(&self, now_unix: i64) -> bool {
        let now = i128::from(now_unix);
        let leeway = i128::from(LEEWAY_SECS);
        let from = i128::from(self.nbf.map_or(self.iat, |nbf| nbf.max(self.iat)));
        from - leeway <= now && now < i128::from(self.exp) + leeway
    }
}

/// Why a token is refused. All of these are the same 401 for the client;
/// the distinctions are for logs and tests.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    #[error("token longer than {MAX_TOKEN_BYTES} bytes")]
    TooLarge,
    #[error("malformed token: {0}")]
    Malformed(&'static str),
    #[error("algorithm not allowed: {0}")]
    Algorithm(String),
    #[error("header typ is missing or not \"JWT\"")]
    Type,
    #[error("header carries a key or key reference ({0})")]
    KeyInHeader(&'static str),
    #[error("header carries crit, which is not supported")]
    Critical,
    #[error("kid {0}")]
    Kid(&'static str),
    #[error("no registered public key for this kid")]
    UnknownKey,
    #[error("signature is missing")]
    SignatureMissing,
    #[error("signature does not verify with the registered key")]
    Signature,
    #[error("aud does not contain \"api\"")]
    Audience,
    #[error("required claim {0} is missing")]
    MissingClaim(&'static str),
    #[error("claim {0} has the wrong type or value")]
    InvalidClaim(&'static str),
    #[error("token has expired")]
    Expired,
    #[error("token is not valid yet (nbf)")]
    NotYetValid,
    #[error("token is issued in the future (iat)")]
    IssuedInFuture,
    #[error("token lifetime exp - iat exceeds {MAX_LIFETIME_SECS} s")]
    LifetimeTooLong,
}

/// What the pre-lookup stages produce.
struct Parsed<'a> {
    kid: String,
    alg: Algorithm,
    signing_input: &'a str,
    signature_b64: &'a str,
    payload: Vec<u8>,
}

/// Reads the header only (no signature check): the kid, after the size,
/// structure and header rules passed.
pub fn kid(token: &str) -> Result<String, JwtError> {
    parse(token).map(|parsed| parsed.kid)
}

/// Full verification. `key_for` is called at most once, with the kid, and
/// returns the registered key or `None` (-> [`JwtError::UnknownKey`]). It is
/// not called at all when the token fails an earlier check.
pub fn verify(
    token: &str,
    now_unix: i64,
    key_for: impl FnOnce(&str) -> Option<RsaPublicKey>,
) -> Result<VerifiedJwt, JwtError> {
    verify_with(token, now_unix, |kid| {
        key_for(kid).map(|key| ((), vec![key]))
    })
    .map(|((), verified)| verified)
}

/// Full verification against the keys of whoever owns the kid: `lookup`
/// is called at most once, with the kid, and returns the owner and its
/// keys (several during a rotation: the first that verifies wins), or
/// `None` (-> [`JwtError::UnknownKey`]). The token is parsed once, however
/// many keys are tried. Answers the owner with the verified claims.
pub fn verify_with<T, K: std::borrow::Borrow<RsaPublicKey>>(
    token: &str,
    now_unix: i64,
    lookup: impl FnOnce(&str) -> Option<(T, Vec<K>)>,
) -> Result<(T, VerifiedJwt), JwtError> {
    let parsed = parse(token)?;
    let (owner, keys) = lookup(&parsed.kid).ok_or(JwtError::UnknownKey)?;
    let verifies = |key: &RsaPublicKey| {
        jsonwebtoken::crypto::verify(
            parsed.signature_b64,
            parsed.signing_input.as_bytes(),
            &key.inner.decoding,
            parsed.alg,
        )
        .unwrap_or(false)
    };
    if !keys.iter().any(|key| verifies(key.borrow())) {
        return Err(if keys.is_empty() {
            JwtError::UnknownKey
        } else {
            JwtError::Signature
        });
    }
    let claims = json_object(
        &parsed.payload,
        "payload is not JSON",
        "payload is not a JSON object",
    )?;
    check_claims(&claims, parsed.kid, now_unix).map(|verified| (owner, verified))
}

/// Size, structure and header rules.
fn parse(token: &str) -> Result<Parsed<'_>, JwtError> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(JwtError::TooLarge);
    }

    let mut segments = token.split('.');
    let (Some(header_b64), Some(payload_b64), Some(signature_b64), None) = (
        segments.next(),
        segments.next(),
        segments.next(),
        segments.next(),
    ) else {
        return Err(JwtError::Malformed("not three dot-separated segments"));
    };
    if header_b64.is_empty() {
        return Err(JwtError::Malformed("empty header segment"));
    }
    if payload_b64.is_empty() {
        return Err(JwtError::Malformed("empty payload segment"));
    }
    let header = URL_SAFE_NO_PAD
        .decode(header_b64)
        .map_err(|_| JwtError::Malformed("header is not base64url"))?;
    let payload = URL_SAFE_NO_PAD
        .decode(payload_b64)
        .map_err(|_| JwtError::Malformed("payload is not base64url"))?;
    URL_SAFE_NO_PAD
        .decode(signature_b64)
        .map_err(|_| JwtError::Malformed("signature is not base64url"))?;
    let signing_input = token
        .get(..header_b64.len() + 1 + payload_b64.len())
        .ok_or(JwtError::Malformed("not three dot-separated segments"))?;

    let header = json_object(&header, "header is not JSON", "header is not a JSON object")?;

    let alg = match header.get("alg") {
        Some(Value::String(s)) if s == "RS256" => Algorithm::RS256,
        Some(Value::String(s)) if s == "RS512" => Algorithm::RS512,
        Some(Value::String(s)) => return Err(JwtError::Algorithm(sanitize(s))),
        Some(_) => return Err(JwtError::Algorithm("(not a string)".to_owned())),
        None => return Err(JwtError::Algorithm("(missing)".to_owned())),
    };

    match header.get("typ") {
        Some(Value::String(s)) if s == "JWT" => {}
        _ => return Err(JwtError::Type),
    }

    if let Some(param) = KEY_HEADER_PARAMS.iter().find(|p| header.contains_key(**p)) {
        return Err(JwtError::KeyInHeader(param));
    }
    if header.contains_key("crit") {
        return Err(JwtError::Critical);
    }

    let kid = match header.get("kid") {
        None => return Err(JwtError::Kid("is missing")),
        Some(Value::String(s)) => s,
        Some(_) => return Err(JwtError::Kid("is not a string")),
    };
    if kid.is_empty() {
        return Err(JwtError::Kid("is empty"));
    }
    if kid.len() > MAX_KID_BYTES {
        return Err(JwtError::Kid("is longer than 255 bytes"));
    }
    if kid.chars().any(char::is_control) {
        return Err(JwtError::Kid("contains control characters"));
    }

    // Checked after the header so that `alg: none` tokens are logged as such;
    // still before the key lookup.
    if signature_b64.is_empty() {
        return Err(JwtError::SignatureMissing);
    }

    Ok(Parsed {
        kid: kid.clone(),
        alg,
        signing_input,
        signature_b64,
        payload,
    })
}

fn json_object(
    bytes: &[u8],
    not_json: &'static str,
    not_object: &'static str,
) -> Result<Map<String, Value>, JwtError> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(JwtError::Malformed(not_object)),
        Err(_) => Err(JwtError::Malformed(not_json)),
    }
}

/// Claims, after the signature verified.
fn check_claims(
    claims: &Map<String, Value>,
    kid: String,
    now_unix: i64,
) -> Result<VerifiedJwt, JwtError> {
    let iss = match claims.get("iss") {
        None => return Err(JwtError::MissingClaim("iss")),
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(_) => return Err(JwtError::InvalidClaim("iss")),
    };
    let sub = match claims.get("sub") {
        None => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(_) => return Err(JwtError::InvalidClaim("sub")),
    };
    let iat = int_claim(claims, "iat")?.ok_or(JwtError::MissingClaim("iat"))?;
    let exp = int_claim(claims, "exp")?.ok_or(JwtError::MissingClaim("exp"))?;
    let nbf = int_claim(claims, "nbf")?;

    match claims.get("aud") {
        None => return Err(JwtError::MissingClaim("aud")),
        Some(Value::String(s)) => {
            if s != "api" {
                return Err(JwtError::Audience);
            }
        }
        Some(Value::Array(items)) => {
            if !items.iter().all(Value::is_string) {
                return Err(JwtError::InvalidClaim("aud"));
            }
            if !items.iter().any(|v| v.as_str() == Some("api")) {
                return Err(JwtError::Audience);
            }
        }
        Some(_) => return Err(JwtError::InvalidClaim("aud")),
    }

    let now = i128::from(now_unix);
    let leeway = i128::from(LEEWAY_SECS);
    let (iat_w, exp_w) = (i128::from(iat), i128::from(exp));
    if exp_w <= iat_w {
        return Err(JwtError::InvalidClaim("exp"));
    }
    if exp_w - iat_w > i128::from(MAX_LIFETIME_SECS) {
        return Err(JwtError::LifetimeTooLong);
    }
    if iat_w - leeway > now {
        return Err(JwtError::IssuedInFuture);
    }
    if let Some(nbf) = nbf
        && i128::from(nbf) - leeway > now
    {
        return Err(JwtError::NotYetValid);
    }
    if exp_w + leeway <= now {
        return Err(JwtError::Expired);
    }

    Ok(VerifiedJwt {
        kid,
        iss,
        sub,
        iat,
        exp,
        nbf,
    })
}

/// An integer claim: absent is `None`; anything but a JSON integer that fits
/// in i64 (floats, strings, null, exponent notation) is invalid.
fn int_claim(claims: &Map<String, Value>, name: &'static str) -> Result<Option<i64>, JwtError> {
    match claims.get(name) {
        None => Ok(None),
        Some(Value::Number(n)) => n.as_i64().map(Some).ok_or(JwtError::InvalidClaim(name)),
        Some(_) => Err(JwtError::InvalidClaim(name)),
    }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use std::cell::{Cell, RefCell};

    use jsonwebtoken::{EncodingKey, Header};
    use serde_json::json;

    use super::*;

    const KID: &str = "client-1";
    const NOW: i64 = 1_750_000_000;

    const PRIVATE_PEM: &[u8] = include_bytes!("../../../tests/fixtures/keys/rsa2048.pem");
    const PUBLIC_PEM: &str = include_str!("../../../tests/fixtures/keys/rsa2048.pub.pem");
    const PUBLIC_PKCS1_PEM: &str =
        include_str!("../../../tests/fixtures/keys/rsa2048-pkcs1.pub.pem");
    const OTHER_PRIVATE_PEM: &[u8] = include_bytes!("../../../tests/fixtures/keys/other2048.pem");
    const OTHER_PUBLIC_PEM: &str = include_str!("../../../tests/fixtures/keys/other2048.pub.pem");
    const RSA1024_PUBLIC_PEM: &str = include_str!("../../../tests/fixtures/keys/rsa1024.pub.pem");
    const EC_PUBLIC_PEM: &str = include_str!("../../../tests/fixtures/keys/ec256.pub.pem");

    /// `openssl pkey -pubin -in rsa2048.pub.pem -outform DER | sha256sum`
    const PUBLIC_FINGERPRINT: &str =
        "712ac111864ae1bc68e0708e046ef3c9448468e92225267099a63fe3c44c25b3";

    fn private_key() -> EncodingKey {
        EncodingKey::from_rsa_pem(PRIVATE_PEM).expect("fixture private key")
    }

    fn public_key() -> RsaPublicKey {
        RsaPublicKey::from_pem(PUBLIC_PEM).expect("fixture public key")
    }

    fn claims() -> Value {
        json!({ "iss": "client", "aud": "api", "iat": NOW, "exp": NOW + 600, "sub": "dossier-1" })
    }

    /// A properly signed token with the standard header {typ, alg, kid}.
    fn sign(alg: Algorithm, claims: &Value) -> String {
        let mut header = Header::new(alg);
        header.kid = Some(KID.to_owned());
        jsonwebtoken::encode(&header, claims, &private_key()).expect("sign")
    }

    fn b64(text: &str) -> String {
        URL_SAFE_NO_PAD.encode(text)
    }

    /// A hand-built token from raw header and payload text, signed with the
    /// given key and algorithm so that only the rule under test is broken.
    fn raw_signed(header: &str, payload: &str, alg: Algorithm, key: &EncodingKey) -> String {
        let input = format!("{}.{}", b64(header), b64(payload));
        let signature = jsonwebtoken::crypto::sign(input.as_bytes(), key, alg).expect("sign");
        format!("{input}.{signature}")
    }

    /// A hand-built token whose header is given as text, with the standard
    /// claims, validly RS256-signed with the registered key.
    fn with_header(header: &str) -> String {
        raw_signed(
            header,
            &claims().to_string(),
            Algorithm::RS256,
            &private_key(),
        )
    }

    /// A validly RS256-signed token with the standard header and these claims.
    fn with_payload(payload: &str) -> String {
        raw_signed(
            &json!({ "typ": "JWT", "alg": "RS256", "kid": KID }).to_string(),
            payload,
            Algorithm::RS256,
            &private_key(),
        )
    }

    fn check_at(token: &str, now: i64) -> Result<VerifiedJwt, JwtError> {
        verify(token, now, |kid| (kid == KID).then(public_key))
    }

    fn check(token: &str) -> Result<VerifiedJwt, JwtError> {
        check_at(token, NOW)
    }

    fn with_claim(name: &str, value: Value) -> Value {
        let mut c = claims();
        c[name] = value;
        c
    }

    fn without_claim(name: &str) -> Value {
        let mut c = claims();
        if let Some(map) = c.as_object_mut() {
            map.remove(name);
        }
        c
    }

    fn times(iat: i64, exp: i64) -> Value {
        let mut c = with_claim("iat", json!(iat));
        c["exp"] = json!(exp);
        c
    }

    // --- valid tokens ------------------------------------------------------

    #[test]
    fn a_valid_rs256_token_is_accepted() {
        let verified = check(&sign(Algorithm::RS256, &claims())).expect("valid");
        assert_eq!(
            verified,
            VerifiedJwt {
                kid: KID.to_owned(),
                iss: "client".to_owned(),
                sub: Some("dossier-1".to_owned()),
                iat: NOW,
                exp: NOW + 600,
                nbf: None,
            }
        );
    }

    #[test]
    fn a_valid_rs512_token_is_accepted() {
        let verified = check(&sign(Algorithm::RS512, &claims())).expect("valid");
        assert_eq!(verified.kid, KID);
        assert_eq!(verified.exp, NOW + 600);
    }

    #[test]
    fn a_token_without_sub_is_accepted_with_sub_none() {
        let verified = check(&sign(Algorithm::RS256, &without_claim("sub"))).expect("valid");
        assert_eq!(verified.sub, None);
    }

    #[test]
    fn pkcs1_and_spki_forms_of_the_same_key_both_verify() {
        let spki = RsaPublicKey::from_pem(PUBLIC_PEM).expect("spki");
        let pkcs1 = RsaPublicKey::from_pem(PUBLIC_PKCS1_PEM).expect("pkcs1");
        assert_eq!(spki.modulus_bits(), 2048);
        assert_eq!(pkcs1.modulus_bits(), 2048);
        for alg in [Algorithm::RS256, Algorithm::RS512] {
            let token = sign(alg, &claims());
            for key in [&spki, &pkcs1] {
                let verified = verify(&token, NOW, |_| Some(key.clone()));
                assert!(verified.is_ok(), "{alg:?} with {key:?}: {verified:?}");
            }
        }
    }

    #[test]
    fn kid_reads_the_kid_after_the_header_rules() {
        assert_eq!(kid(&sign(Algorithm::RS256, &claims())), Ok(KID.to_owned()));
        let none = format!(
            "{}.{}.",
            b64(r#"{"typ":"JWT","alg":"none","kid":"client-1"}"#),
            b64("{}")
        );
        assert!(matches!(kid(&none), Err(JwtError::Algorithm(_))));
        let missing = with_header(r#"{"typ":"JWT","alg":"RS256"}"#);
        assert!(matches!(kid(&missing), Err(JwtError::Kid(_))));
    }

    #[test]
    fn the_key_lookup_is_called_once_with_the_kid_and_not_at_all_for_a_bad_header() {
        let calls = RefCell::new(Vec::new());
        let result = verify(&sign(Algorithm::RS256, &claims()), NOW, |kid| {
            calls.borrow_mut().push(kid.to_owned());
            Some(public_key())
        });
        assert!(result.is_ok());
        assert_eq!(*calls.borrow(), vec![KID.to_owned()]);

        let called = Cell::new(false);
        let bad = with_header(r#"{"typ":"JWT","alg":"HS256","kid":"client-1"}"#);
        let result = verify(&bad, NOW, |_| {
            called.set(true);
            Some(public_key())
        });
        assert!(matches!(result, Err(JwtError::Algorithm(_))));
        assert!(!called.get());
    }

    // --- algorithms --------------------------------------------------------

    #[test]
    fn alg_none_is_refused_in_every_spelling_with_and_without_signature() {
        let payload = b64(&claims().to_string());
        for spelling in ["none", "None", "NONE", "nOnE"] {
            let header = b64(&json!({ "typ": "JWT", "alg": spelling, "kid": KID }).to_string());
            let unsigned = format!("{header}.{payload}.");
            let signed = format!("{header}.{payload}.{}", b64("signature"));
            // A real RS256 signature over the same input changes nothing.
            let rs256 =
                with_header(&json!({ "typ": "JWT", "alg": spelling, "kid": KID }).to_string());
            for token in [unsigned, signed, rs256] {
                let result = check(&token);
                assert!(
                    matches!(result, Err(JwtError::Algorithm(_))),
                    "{spelling}: {token}: {result:?}"
                );
            }
        }
    }

    #[test]
    fn hs256_signed_with_the_public_key_pem_as_secret_is_refused() {
        let header = json!({ "typ": "JWT", "alg": "HS256", "kid": KID }).to_string();
        for secret in [PUBLIC_PEM, PUBLIC_PKCS1_PEM] {
            let key = EncodingKey::from_secret(secret.as_bytes());
            let token = raw_signed(&header, &claims().to_string(), Algorithm::HS256, &key);
            assert!(matches!(check(&token), Err(JwtError::Algorithm(_))));
        }
    }

    #[test]
    fn hs384_and_hs512_are_refused() {
        let key = EncodingKey::from_secret(PUBLIC_PEM.as_bytes());
        for (name, alg) in [("HS384", Algorithm::HS384), ("HS512", Algorithm::HS512)] {
            let header = json!({ "typ": "JWT", "alg": name, "kid": KID }).to_string();
            let token = raw_signed(&header, &claims().to_string(), alg, &key);
            assert!(
                matches!(check(&token), Err(JwtError::Algorithm(_))),
                "{name}"
            );
        }
    }

    #[test]
    fn rs384_is_refused_even_with_a_valid_signature() {
        let token = sign(Algorithm::RS384, &claims());
        assert_eq!(
            check(&token),
            Err(JwtError::Algorithm("\"RS384\"".to_owned()))
        );
    }

    #[test]
    fn ps256_is_refused_even_with_a_valid_signature() {
        let token = sign(Algorithm::PS256, &claims());
        assert!(matches!(check(&token), Err(JwtError::Algorithm(_))));
    }

    #[test]
    fn every_other_algorithm_spelling_or_type_is_refused() {
        for alg in [
            json!("rs256"),
            json!("Rs256"),
            json!("RS256 "),
            json!("RS512\u{0}"),
            json!("PS512"),
            json!("ES256"),
            json!("EdDSA"),
            json!(""),
            json!(null),
            json!(256),
            json!(["RS256"]),
        ] {
            let header = json!({ "typ": "JWT", "alg": alg, "kid": KID }).to_string();
            let result = check(&with_header(&header));
            assert!(
                matches!(result, Err(JwtError::Algorithm(_))),
                "{alg}: {result:?}"
            );
        }
        let missing = with_header(&json!({ "typ": "JWT", "kid": KID }).to_string());
        assert!(matches!(check(&missing), Err(JwtError::Algorithm(_))));
    }

    #[test]
    fn the_algorithm_in_the_error_is_escaped_and_truncated() {
        let hostile = format!("x\n\u{1b}[31m{}", "A".repeat(500));
        let header = json!({ "typ": "JWT", "alg": hostile, "kid": KID }).to_string();
        let Err(JwtError::Algorithm(shown)) = check(&with_header(&header)) else {
            panic!("expected an algorithm error");
        };
        assert!(!shown.chars().any(char::is_control), "{shown}");
        assert!(shown.len() < 60, "{shown}");
    }

    // --- signatures --------------------------------------------------------

    #[test]
    fn a_stripped_signature_is_refused() {
        let token = sign(Algorithm::RS256, &claims());
        let (input, _) = token.rsplit_once('.').expect("three segments");
        assert_eq!(check(&format!("{input}.")), Err(JwtError::SignatureMissing));
        assert!(matches!(check(input), Err(JwtError::Malformed(_))));
    }

    #[test]
    fn a_signature_by_another_key_is_refused() {
        let other = EncodingKey::from_rsa_pem(OTHER_PRIVATE_PEM).expect("other key");
        let header = json!({ "typ": "JWT", "alg": "RS256", "kid": KID }).to_string();
        let token = raw_signed(&header, &claims().to_string(), Algorithm::RS256, &other);
        assert_eq!(check(&token), Err(JwtError::Signature));
        // ... and the right token with the other key registered is refused too.
        let other_public = RsaPublicKey::from_pem(OTHER_PUBLIC_PEM).expect("other public");
        let good = sign(Algorithm::RS256, &claims());
        assert_eq!(
            verify(&good, NOW, |_| Some(other_public)),
            Err(JwtError::Signature)
        );
    }

    #[test]
    fn a_tampered_payload_or_swapped_algorithm_is_refused() {
        let token = sign(Algorithm::RS256, &claims());
        let mut parts = token.split('.');
        let (header, _, signature) = (
            parts.next().expect("header"),
            parts.next().expect("payload"),
            parts.next().expect("signature"),
        );
        let forged = b64(&with_claim("sub", json!("dossier-2")).to_string());
        assert_eq!(
            check(&format!("{header}.{forged}.{signature}")),
            Err(JwtError::Signature)
        );

        // An RS256 signature presented as RS512.
        let rs512_header = b64(&json!({ "typ": "JWT", "alg": "RS512", "kid": KID }).to_string());
        let payload = b64(&claims().to_string());
        assert_eq!(
            check(&format!("{rs512_header}.{payload}.{signature}")),
            Err(JwtError::Signature)
        );
    }

    // --- kid ---------------------------------------------------------------

    #[test]
    fn a_missing_empty_or_non_string_kid_is_refused() {
        for header in [
            json!({ "typ": "JWT", "alg": "RS256" }),
            json!({ "typ": "JWT", "alg": "RS256", "kid": "" }),
            json!({ "typ": "JWT", "alg": "RS256", "kid": null }),
            json!({ "typ": "JWT", "alg": "RS256", "kid": 1 }),
        ] {
            let result = check(&with_header(&header.to_string()));
            assert!(
                matches!(result, Err(JwtError::Kid(_))),
                "{header}: {result:?}"
            );
        }
    }

    #[test]
    fn an_unknown_kid_is_refused() {
        let header = json!({ "typ": "JWT", "alg": "RS256", "kid": "client-2" }).to_string();
        assert_eq!(check(&with_header(&header)), Err(JwtError::UnknownKey));
    }

    #[test]
    fn path_and_sql_characters_in_a_kid_make_it_merely_unknown() {
        for hostile in [
            "../x",
            "../../etc/passwd",
            "' OR 1=1 --",
            "\"; DROP TABLE api_tokens; --",
            "%00",
            "ü🔑",
        ] {
            let header = json!({ "typ": "JWT", "alg": "RS256", "kid": hostile }).to_string();
            let seen = RefCell::new(None);
            let result = verify(&with_header(&header), NOW, |kid| {
                *seen.borrow_mut() = Some(kid.to_owned());
                None
            });
            assert_eq!(result, Err(JwtError::UnknownKey), "{hostile}");
            assert_eq!(seen.borrow().as_deref(), Some(hostile));
        }
    }

    #[test]
    fn a_kid_with_control_characters_is_refused_before_lookup() {
        for hostile in [
            "client-1\n",
            "client\u{0}1",
            "\u{1b}[2J",
            "a\u{7f}",
            "b\u{85}",
        ] {
            let header = json!({ "typ": "JWT", "alg": "RS256", "kid": hostile }).to_string();
            let result = verify(&with_header(&header), NOW, |_| {
                panic!("looked up {hostile:?}")
            });
            assert!(
                matches!(result, Err(JwtError::Kid(_))),
                "{hostile:?}: {result:?}"
            );
        }
    }

    #[test]
    fn a_kid_over_255_bytes_is_refused_and_255_bytes_is_looked_up() {
        let long = "k".repeat(256);
        let header = json!({ "typ": "JWT", "alg": "RS256", "kid": long }).to_string();
        assert!(matches!(
            check(&with_header(&header)),
            Err(JwtError::Kid(_))
        ));
        // Multi-byte characters count in bytes: 128 × "é" is 256 bytes.
        let header = json!({ "typ": "JWT", "alg": "RS256", "kid": "é".repeat(128) }).to_string();
        assert!(matches!(
            check(&with_header(&header)),
            Err(JwtError::Kid(_))
        ));

        let max = "k".repeat(255);
        let header = json!({ "typ": "JWT", "alg": "RS256", "kid": max }).to_string();
        assert_eq!(check(&with_header(&header)), Err(JwtError::UnknownKey));
    }

    // --- header parameters -------------------------------------------------

    #[test]
    fn jwk_jku_x5u_and_x5c_in_the_header_are_refused() {
        let jwk = json!({ "kty": "RSA", "n": "AQAB", "e": "AQAB" });
        for (param, value) in [
            ("jwk", jwk),
            ("jku", json!("https://attacker.example/jwks.json")),
            ("x5u", json!("https://attacker.example/cert.pem")),
            ("x5c", json!(["MIIB"])),
        ] {
            let header =
                json!({ "typ": "JWT", "alg": "RS256", "kid": KID, param: value }).to_string();
            assert_eq!(
                check(&with_header(&header)),
                Err(JwtError::KeyInHeader(param)),
                "{param}"
            );
            // Even a null value counts: the parameter must not be there at all.
            let header =
                json!({ "typ": "JWT", "alg": "RS256", "kid": KID, param: null }).to_string();
            assert_eq!(
                check(&with_header(&header)),
                Err(JwtError::KeyInHeader(param)),
                "{param}"
            );
        }
    }

    #[test]
    fn crit_in_the_header_is_refused() {
        let header =
            json!({ "typ": "JWT", "alg": "RS256", "kid": KID, "crit": ["b64"], "b64": false })
                .to_string();
        assert_eq!(check(&with_header(&header)), Err(JwtError::Critical));
    }

    #[test]
    fn a_missing_typ_is_refused() {
        let header = json!({ "alg": "RS256", "kid": KID }).to_string();
        assert_eq!(check(&with_header(&header)), Err(JwtError::Type));
    }

    #[test]
    fn a_typ_other_than_jwt_is_refused() {
        for typ in [
            json!("JWS"),
            json!("at+jwt"),
            json!("application/json"),
            json!(""),
            json!(null),
            json!(1),
        ] {
            let header = json!({ "typ": typ, "alg": "RS256", "kid": KID }).to_string();
            assert_eq!(check(&with_header(&header)), Err(JwtError::Type), "{typ}");
        }
    }

    // --- aud, iss, required claims -----------------------------------------

    #[test]
    fn a_missing_aud_is_refused() {
        let token = sign(Algorithm::RS256, &without_claim("aud"));
        assert_eq!(check(&token), Err(JwtError::MissingClaim("aud")));
    }

    #[test]
    fn a_wrong_aud_is_refused() {
        for aud in ["API", "api ", "https://example.org/api", ""] {
            let token = sign(Algorithm::RS256, &with_claim("aud", json!(aud)));
            assert_eq!(check(&token), Err(JwtError::Audience), "{aud}");
        }
    }

    #[test]
    fn an_aud_array_without_api_is_refused() {
        for aud in [json!([]), json!(["web", "admin"]), json!(["API"])] {
            let token = sign(Algorithm::RS256, &with_claim("aud", aud.clone()));
            assert_eq!(check(&token), Err(JwtError::Audience), "{aud}");
        }
        for aud in [
            json!(["api", 1]),
            json!({ "api": true }),
            json!(1),
            json!(null),
        ] {
            let token = sign(Algorithm::RS256, &with_claim("aud", aud.clone()));
            assert_eq!(check(&token), Err(JwtError::InvalidClaim("aud")), "{aud}");
        }
    }

    #[test]
    fn an_aud_array_containing_api_is_accepted() {
        let token = sign(Algorithm::RS256, &with_claim("aud", json!(["web", "api"])));
        assert!(check(&token).is_ok());
    }

    #[test]
    fn a_missing_iss_is_refused() {
        let token = sign(Algorithm::RS256, &without_claim("iss"));
        assert_eq!(check(&token), Err(JwtError::MissingClaim("iss")));
        for iss in [json!(""), json!(1), json!(null)] {
            let token = sign(Algorithm::RS256, &with_claim("iss", iss.clone()));
            assert_eq!(check(&token), Err(JwtError::InvalidClaim("iss")), "{iss}");
        }
    }

    #[test]
    fn a_missing_exp_is_refused() {
        let token = sign(Algorithm::RS256, &without_claim("exp"));
        assert_eq!(check(&token), Err(JwtError::MissingClaim("exp")));
    }

    #[test]
    fn a_missing_iat_is_refused() {
        let token = sign(Algorithm::RS256, &without_claim("iat"));
        assert_eq!(check(&token), Err(JwtError::MissingClaim("iat")));
    }

    #[test]
    fn a_non_string_or_empty_sub_is_refused() {
        for sub in [json!(42), json!(""), json!(null), json!(["dossier-1"])] {
            let token = sign(Algorithm::RS256, &with_claim("sub", sub.clone()));
            assert_eq!(check(&token), Err(JwtError::InvalidClaim("sub")), "{sub}");
        }
    }

    // --- times -------------------------------------------------------------

    #[test]
    fn a_lifetime_of_3601_seconds_is_refused() {
        let token = sign(Algorithm::RS256, &times(NOW, NOW + 3601));
        assert_eq!(check(&token), Err(JwtError::LifetimeTooLong));
    }

    #[test]
    fn a_lifetime_of_3600_seconds_is_accepted() {
        let token = sign(Algorithm::RS256, &times(NOW, NOW + 3600));
        assert!(check(&token).is_ok());
    }

    #[test]
    fn exp_not_after_iat_is_refused() {
        for exp in [NOW, NOW - 1] {
            let token = sign(Algorithm::RS256, &times(NOW, exp));
            assert_eq!(check(&token), Err(JwtError::InvalidClaim("exp")), "{exp}");
        }
    }

    #[test]
    fn iat_61_seconds_in_the_future_is_refused() {
        let token = sign(Algorithm::RS256, &times(NOW + 61, NOW + 600));
        assert_eq!(check(&token), Err(JwtError::IssuedInFuture));
    }

    #[test]
    fn iat_59_and_60_seconds_in_the_future_is_accepted() {
        for skew in [59, 60] {
            let token = sign(Algorithm::RS256, &times(NOW + skew, NOW + 600));
            assert!(check(&token).is_ok(), "{skew}");
        }
    }

    #[test]
    fn nbf_beyond_the_leeway_is_refused() {
        let token = sign(Algorithm::RS256, &with_claim("nbf", json!(NOW + 61)));
        assert_eq!(check(&token), Err(JwtError::NotYetValid));
        let token = sign(Algorithm::RS256, &with_claim("nbf", json!(NOW + 300)));
        assert_eq!(check(&token), Err(JwtError::NotYetValid));
    }

    #[test]
    fn nbf_within_the_leeway_or_past_is_accepted() {
        for nbf in [NOW + 60, NOW, NOW - 100] {
            let token = sign(Algorithm::RS256, &with_claim("nbf", json!(nbf)));
            assert!(check(&token).is_ok(), "{nbf}");
        }
    }

    #[test]
    fn a_non_integer_nbf_is_refused() {
        let token = sign(Algorithm::RS256, &with_claim("nbf", json!("0")));
        assert_eq!(check(&token), Err(JwtError::InvalidClaim("nbf")));
    }

    #[test]
    fn a_token_expired_beyond_the_leeway_is_refused() {
        let token = sign(Algorithm::RS256, &claims());
        let exp = NOW + 600;
        assert_eq!(check_at(&token, exp + 61), Err(JwtError::Expired));
        assert_eq!(check_at(&token, exp + 60), Err(JwtError::Expired));
        assert_eq!(check_at(&token, exp + 100_000), Err(JwtError::Expired));
    }

    #[test]
    fn a_token_expired_within_the_leeway_is_accepted() {
        let token = sign(Algorithm::RS256, &claims());
        let exp = NOW + 600;
        for now in [exp - 1, exp, exp + 1, exp + 59] {
            assert!(check_at(&token, now).is_ok(), "{now}");
        }
    }

    #[test]
    fn a_float_exp_is_refused() {
        let float = format!(
            r#"{{"iss":"client","aud":"api","iat":{NOW},"exp":{}.0}}"#,
            NOW + 600
        );
        assert_eq!(
            check(&with_payload(&float)),
            Err(JwtError::InvalidClaim("exp"))
        );
        let exponent = format!(r#"{{"iss":"client","aud":"api","iat":{NOW},"exp":1.7500006e9}}"#);
        assert_eq!(
            check(&with_payload(&exponent)),
            Err(JwtError::InvalidClaim("exp"))
        );
        let string = format!(
            r#"{{"iss":"client","aud":"api","iat":{NOW},"exp":"{}"}}"#,
            NOW + 600
        );
        assert_eq!(
            check(&with_payload(&string)),
            Err(JwtError::InvalidClaim("exp"))
        );
        let huge =
            format!(r#"{{"iss":"client","aud":"api","iat":{NOW},"exp":18446744073709551615}}"#);
        assert_eq!(
            check(&with_payload(&huge)),
            Err(JwtError::InvalidClaim("exp"))
        );
        let float_iat = format!(
            r#"{{"iss":"client","aud":"api","iat":{NOW}.5,"exp":{}}}"#,
            NOW + 600
        );
        assert_eq!(
            check(&with_payload(&float_iat)),
            Err(JwtError::InvalidClaim("iat"))
        );
    }

    #[test]
    fn extreme_timestamps_do_not_overflow() {
        let whole_range = sign(Algorithm::RS256, &times(i64::MIN, i64::MAX));
        for now in [i64::MIN, NOW, i64::MAX] {
            assert_eq!(check_at(&whole_range, now), Err(JwtError::LifetimeTooLong));
        }
        let at_the_top = sign(Algorithm::RS256, &times(i64::MAX - 10, i64::MAX));
        assert_eq!(check(&at_the_top), Err(JwtError::IssuedInFuture));
        assert!(check_at(&at_the_top, i64::MAX).is_ok());
        let at_the_bottom = sign(Algorithm::RS256, &times(i64::MIN, i64::MIN + 10));
        assert_eq!(check(&at_the_bottom), Err(JwtError::Expired));
        assert!(check_at(&at_the_bottom, i64::MIN).is_ok());
    }

    // --- size and structure ------------------------------------------------

    #[test]
    fn a_token_over_8_kib_is_refused() {
        let big = sign(
            Algorithm::RS256,
            &with_claim("pad", json!("x".repeat(MAX_TOKEN_BYTES))),
        );
        assert!(big.len() > MAX_TOKEN_BYTES);
        let result = verify(&big, NOW, |_| panic!("no lookup for an oversized token"));
        assert_eq!(result, Err(JwtError::TooLarge));
        // Just under the limit is fine.
        let fits = sign(
            Algorithm::RS256,
            &with_claim("pad", json!("x".repeat(5500))),
        );
        assert!(fits.len() <= MAX_TOKEN_BYTES, "{}", fits.len());
        assert!(check(&fits).is_ok());
    }

    #[test]
    fn two_segments_are_refused() {
        let token = sign(Algorithm::RS256, &claims());
        let two: Vec<&str> = token.split('.').take(2).collect();
        assert!(matches!(check(&two.join(".")), Err(JwtError::Malformed(_))));
    }

    #[test]
    fn four_or_more_segments_and_empty_input_are_refused() {
        let token = sign(Algorithm::RS256, &claims());
        for bad in [
            format!("{token}."),
            format!("{token}.{token}"),
            String::new(),
            "..".to_owned(),
            ".".to_owned(),
        ] {
            assert!(matches!(check(&bad), Err(JwtError::Malformed(_))), "{bad}");
        }
    }

    #[test]
    fn garbage_base64_is_refused() {
        let token = sign(Algorithm::RS256, &claims());
        let mut parts = token.split('.');
        let (h, p, s) = (
            parts.next().expect("header"),
            parts.next().expect("payload"),
            parts.next().expect("signature"),
        );
        let padded_header = STANDARD.encode(r#"{"typ":"JWT","alg":"RS256","kid":"client-1"}"#);
        for bad in [
            format!("!!!.{p}.{s}"),
            format!("{h}.%%%.{s}"),
            format!("{h}.{p}.***"),
            format!("{h}.{p}.{s}="),
            format!("{h} .{p}.{s}"),
            format!("{h}.{p}.{s}\n"),
            format!("{padded_header}.{p}.{s}"),
            format!("{}.{p}.{s}", h.replace('-', "+").replace('_', "/") + "+/"),
            format!("{h}.{p}.A"),
        ] {
            let result = verify(&bad, NOW, |_| panic!("no lookup for {bad}"));
            assert!(
                matches!(result, Err(JwtError::Malformed(_))),
                "{bad}: {result:?}"
            );
        }
    }

    #[test]
    fn a_header_that_is_not_a_json_object_is_refused() {
        for header in [
            "[]",
            r#"["typ","JWT"]"#,
            "\"JWT\"",
            "null",
            "not json",
            "{\"alg\":\"RS256\"",
            "\u{feff}{}",
        ] {
            let result = check(&with_header(header));
            assert!(
                matches!(result, Err(JwtError::Malformed(_))),
                "{header}: {result:?}"
            );
        }
        let latin1 = format!(
            "{}.{}.{}",
            URL_SAFE_NO_PAD.encode(b"{\"alg\":\"\xe9\"}"),
            b64("{}"),
            b64("x")
        );
        assert!(matches!(check(&latin1), Err(JwtError::Malformed(_))));
    }

    #[test]
    fn a_payload_that_is_a_json_array_is_refused() {
        let payload = format!(
            r#"[{{"iss":"client","aud":"api","iat":{NOW},"exp":{}}}]"#,
            NOW + 600
        );
        assert!(matches!(
            check(&with_payload(&payload)),
            Err(JwtError::Malformed(_))
        ));
        for other in ["\"api\"", "42", "null", "not json"] {
            assert!(
                matches!(check(&with_payload(other)), Err(JwtError::Malformed(_))),
                "{other}"
            );
        }
    }

    #[test]
    fn duplicate_header_keys_keep_the_last_value() {
        // serde_json keeps the last duplicate; accepted policy (the signature
        // still has to verify with the registered key).
        let header = r#"{"typ":"JWT","alg":"none","alg":"RS256","kid":"client-1"}"#;
        assert!(check(&with_header(header)).is_ok());
        let header = r#"{"typ":"JWT","alg":"RS256","alg":"none","kid":"client-1"}"#;
        assert!(matches!(
            check(&with_header(header)),
            Err(JwtError::Algorithm(_))
        ));
    }

    #[test]
    fn mangled_tokens_never_panic_and_are_never_accepted() {
        let token = sign(Algorithm::RS256, &claims());
        for end in 0..token.len() {
            let prefix = token.get(..end).unwrap_or_default();
            assert!(check(prefix).is_err(), "prefix of {end} bytes");
        }
        let bytes = token.as_bytes();
        for i in (0..bytes.len()).step_by(7) {
            for replacement in [b'.', b'A', b'-', b'_', b'=', 0u8, 0xff] {
                let mut mangled = bytes.to_vec();
                if let Some(b) = mangled.get_mut(i) {
                    if *b == replacement {
                        continue;
                    }
                    *b = replacement;
                }
                let text = String::from_utf8_lossy(&mangled);
                assert!(check(&text).is_err(), "byte {i} -> {replacement}");
            }
        }
    }

    // --- keys --------------------------------------------------------------

    #[test]
    fn a_1024_bit_key_is_refused() {
        assert_eq!(
            RsaPublicKey::from_pem(RSA1024_PUBLIC_PEM).map(|k| k.modulus_bits()),
            Err(KeyError::TooSmall { bits: 1024 })
        );
    }

    #[test]
    fn an_ec_key_is_refused() {
        assert_eq!(
            RsaPublicKey::from_pem(EC_PUBLIC_PEM).map(|_| ()),
            Err(KeyError::NotRsa)
        );
    }

    #[test]
    fn private_keys_are_refused() {
        let pkcs8 = std::str::from_utf8(PRIVATE_PEM).expect("utf-8");
        assert_eq!(
            RsaPublicKey::from_pem(pkcs8).map(|_| ()),
            Err(KeyError::PrivateKey)
        );
        let pkcs1 = pkcs8.replace("PRIVATE KEY", "RSA PRIVATE KEY");
        assert_eq!(
            RsaPublicKey::from_pem(&pkcs1).map(|_| ()),
            Err(KeyError::PrivateKey)
        );
    }

    #[test]
    fn garbage_and_odd_pem_are_refused() {
        let body: String = PUBLIC_PEM
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect();
        let cases: Vec<String> = vec![
            String::new(),
            "garbage".to_owned(),
            body.clone(),
            PUBLIC_PEM.replace("PUBLIC KEY", "CERTIFICATE"),
            PUBLIC_PEM.replace("-----END PUBLIC KEY-----", "-----END RSA PUBLIC KEY-----"),
            format!("{PUBLIC_PEM}{OTHER_PUBLIC_PEM}"),
            format!("{PUBLIC_PEM}trailing"),
            PUBLIC_PEM.replacen('M', "*", 1),
            PUBLIC_PEM.replace("PUBLIC KEY", "RSA PUBLIC KEY"), // SPKI body under a PKCS#1 label
            PUBLIC_PKCS1_PEM.replace("RSA PUBLIC KEY", "PUBLIC KEY"), // and the reverse
            "-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n".to_owned(),
            format!(
                "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
                STANDARD.encode([0x30, 0x80, 0, 0])
            ),
            format!(
                "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
                "A".repeat(MAX_PEM_BYTES)
            ),
        ];
        for case in &cases {
            assert!(RsaPublicKey::from_pem(case).is_err(), "{case}");
        }
    }

    #[test]
    fn pem_with_crlf_line_endings_and_surrounding_whitespace_is_accepted() {
        let crlf = format!("\n  {}\n\n", PUBLIC_PEM.replace('\n', "\r\n"));
        let key = RsaPublicKey::from_pem(&crlf).expect("crlf");
        assert_eq!(key.fingerprint(), PUBLIC_FINGERPRINT);
    }

    #[test]
    fn the_fingerprint_is_the_sha256_of_the_der_and_stable() {
        let key = public_key();
        assert_eq!(key.fingerprint(), PUBLIC_FINGERPRINT);
        assert_eq!(public_key().fingerprint(), key.fingerprint());
        assert_eq!(key.clone().fingerprint(), PUBLIC_FINGERPRINT);
        // Another encoding of the same key is other DER, so another fingerprint.
        let pkcs1 = RsaPublicKey::from_pem(PUBLIC_PKCS1_PEM).expect("pkcs1");
        assert_eq!(
            pkcs1.fingerprint(),
            "cd164e76ee07eb4578f090e87b921d49bdaff1bfae992e0e00a88c67926139e4"
        );
        let other = RsaPublicKey::from_pem(OTHER_PUBLIC_PEM).expect("other");
        assert_ne!(other.fingerprint(), key.fingerprint());
    }

    #[test]
    fn hand_built_der_edge_cases_are_refused() {
        // Modulus of exactly 2048 bits built by hand, exponent 65537: accepted.
        let n = {
            let mut n = vec![0x00, 0x80];
            n.extend(std::iter::repeat_n(0x01, 255));
            n
        };
        let pkcs1 = |n: &[u8], e: &[u8]| -> Vec<u8> {
            let mut body = der_tlv(DER_INTEGER, n);
            body.extend(der_tlv(DER_INTEGER, e));
            der_tlv(DER_SEQUENCE, &body)
        };
        let pem = |der: &[u8]| {
            format!(
                "-----BEGIN RSA PUBLIC KEY-----\n{}\n-----END RSA PUBLIC KEY-----\n",
                STANDARD.encode(der)
            )
        };
        let good = pkcs1(&n, &[0x01, 0x00, 0x01]);
        assert_eq!(
            RsaPublicKey::from_pem(&pem(&good)).map(|k| k.modulus_bits()),
            Ok(2048)
        );

        // Exponents: even, 1, too long.
        for e in [&[0x01, 0x00, 0x00][..], &[0x01], &[0x01, 0, 0, 0, 0, 1]] {
            assert_eq!(
                RsaPublicKey::from_pem(&pem(&pkcs1(&n, e))).map(|_| ()),
                Err(KeyError::Exponent)
            );
        }
        // Negative modulus (no sign byte), non-minimal integer, trailing data.
        let negative = pkcs1(n.get(1..).unwrap_or_default(), &[0x01, 0x00, 0x01]);
        assert!(RsaPublicKey::from_pem(&pem(&negative)).is_err());
        let mut padded = vec![0x00];
        padded.extend(&n);
        assert!(RsaPublicKey::from_pem(&pem(&pkcs1(&padded, &[0x01, 0x00, 0x01]))).is_err());
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(RsaPublicKey::from_pem(&pem(&trailing)).is_err());
        // 8208-bit modulus: larger than ring verifies.
        let mut huge = vec![0x00, 0x80];
        huge.extend(std::iter::repeat_n(0x01, 1025));
        assert_eq!(
            RsaPublicKey::from_pem(&pem(&pkcs1(&huge, &[0x01, 0x00, 0x01]))).map(|_| ()),
            Err(KeyError::TooLarge { bits: 8208 })
        );
    }

    fn der_tlv(tag: u8, content: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        let len = content.len();
        if len < 0x80 {
            out.push(len as u8);
        } else if len < 0x100 {
            out.extend([0x81, len as u8]);
        } else {
            out.extend([0x82, (len >> 8) as u8, len as u8]);
        }
        out.extend(content);
        out
    }
}
