//! Deciding whether a bearer token is acceptable, in a fixed order: size,
//! structure, header rules (`alg`, `typ`, forbidden parameters, `kid`), key
//! lookup by `kid`, signature, then claims ([`super::claims`]).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::Algorithm;
use serde_json::{Map, Value};

use super::claims::{VerifiedJwt, check_claims};
use super::error::JwtError;
use super::keys::RsaPublicKey;
use super::limits::{MAX_KID_BYTES, MAX_TOKEN_BYTES, sanitize};

/// Header parameters that carry a key or point at one. A token never chooses
/// its own key: the key is the one registered on the API token named by `kid`.
const KEY_HEADER_PARAMS: [&str; 4] = ["jwk", "jku", "x5u", "x5c"];

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
            key.decoding(),
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
