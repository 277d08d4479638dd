//! Deciding whether a bearer token is acceptable, in a fixed order: size,
//! structure, header rules (`alg`, `typ`, forbidden parameters, `kid`, no
//! member twice), key lookup by `kid`, signature, then claims
//! ([`super::claims`], no member twice).
//!
//! **Invariant:** every token that reaches the key lookup costs what its
//! signature's size costs against the registered keys, whoever its `kid`
//! names: one RSA verification when a key of that size is registered
//! (the token's own, or a stand-in of that size, [`StandIns`]), none when
//! no key of that size is. So an unknown `kid`, a key not registered for
//! the token's `alg` and a wrong signature take the same time, the answer
//! never tells whether a consumer key exists, and a caller cannot make the
//! service do a larger verification than its real keys need (an 8192-bit
//! signature costs nothing where only 2048-bit keys are registered).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::DecodingKey;
use serde_json::Value;

use super::claims::{VerifiedJwt, check_claims};
use super::error::JwtError;
use super::json::strict_object;
use super::keys::{KeyAlgorithm, RegisteredKey};
use super::limits::{MAX_KID_BYTES, MAX_RSA_BITS, MAX_TOKEN_BYTES, MIN_RSA_BITS, sanitize};

/// Header parameters that carry a key or point at one. A token never chooses
/// its own key: the key is the one registered on the API token named by `kid`.
const KEY_HEADER_PARAMS: [&str; 4] = ["jwk", "jku", "x5u", "x5c"];

/// The public exponent of the stand-in key (the usual 65537), so its check
/// costs what a registered key's does.
const STAND_IN_EXPONENT: [u8; 3] = [0x01, 0x00, 0x01];
/// The stand-in modulus: all ones, odd and of full length whatever the
/// signature's size; no signature verifies with it.
static STAND_IN_MODULUS: [u8; MAX_RSA_BITS / 8] = [0xff; MAX_RSA_BITS / 8];

/// The sizes a stand-in check may have: those of the registered keys, in
/// bytes. Built with the key table; a signature of another size is refused
/// before any arithmetic, as a registered key would refuse it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StandIns {
    sizes: Vec<usize>,
}

impl StandIns {
    /// The sizes of these keys.
    pub fn of<'k>(keys: impl IntoIterator<Item = &'k RegisteredKey>) -> StandIns {
        let mut sizes: Vec<usize> = keys.into_iter().map(|k| k.key.modulus_bytes()).collect();
        sizes.sort_unstable();
        sizes.dedup();
        StandIns { sizes }
    }

    /// A stand-in modulus of `len` bytes, when a registered key has that
    /// size.
    fn modulus(&self, len: usize) -> Option<&'static [u8]> {
        self.sizes
            .binary_search(&len)
            .ok()
            .and_then(|_| STAND_IN_MODULUS.get(..len))
    }
}

/// What the pre-lookup stages produce.
struct Parsed<'a> {
    kid: String,
    alg: KeyAlgorithm,
    signing_input: &'a str,
    signature_b64: &'a str,
    /// The decoded signature's length in bytes.
    signature_len: usize,
    payload: Vec<u8>,
}

/// Reads the header only (no signature check): the kid, after the size,
/// structure and header rules passed.
pub fn kid(token: &str) -> Result<String, JwtError> {
    parse(token).map(|parsed| parsed.kid)
}

/// Full verification. `key_for` is called at most once, with the kid, and
/// returns the registered key or `None` (-> [`JwtError::UnknownKey`]). It is
/// not called at all when the token fails an earlier check. `stand_ins`:
/// the sizes of the keys registered anywhere ([`verify_with`]).
pub fn verify(
    token: &str,
    now_unix: i64,
    stand_ins: &StandIns,
    key_for: impl FnOnce(&str) -> Option<RegisteredKey>,
) -> Result<VerifiedJwt, JwtError> {
    verify_with(token, now_unix, stand_ins, |kid| {
        key_for(kid).map(|key| ((), vec![key]))
    })
    .map(|((), verified)| verified)
}

/// Full verification against the keys of whoever owns the kid: `lookup`
/// is called at most once, with the kid, and returns the owner and its
/// keys (several during a rotation: the first that verifies wins), or
/// `None` (-> [`JwtError::UnknownKey`]). Only keys registered for the
/// token's `alg` are tried. The token is parsed once, however many keys
/// are tried. Answers the owner with the verified claims. When none of
/// the owner's keys can check the signature (no owner, another size,
/// another algorithm), a stand-in of the signature's size does, if
/// `stand_ins` (the sizes of every registered key) has that size.
pub fn verify_with<T, K: std::borrow::Borrow<RegisteredKey>>(
    token: &str,
    now_unix: i64,
    stand_ins: &StandIns,
    lookup: impl FnOnce(&str) -> Option<(T, Vec<K>)>,
) -> Result<(T, VerifiedJwt), JwtError> {
    let parsed = parse(token)?;
    let (owner, keys) = match lookup(&parsed.kid) {
        Some((owner, keys)) => (Some(owner), keys),
        None => (None, Vec::new()),
    };
    let for_alg = || {
        keys.iter()
            .map(<K as std::borrow::Borrow<RegisteredKey>>::borrow)
            .filter(|k| k.accepts(parsed.alg))
    };
    // A key of another size would refuse the signature before any
    // arithmetic; leaving it out and checking against the stand-in instead
    // keeps the cost that of one verification of the signature's size.
    let mut candidates = for_alg()
        .filter(|k| k.key.modulus_bytes() == parsed.signature_len)
        .peekable();
    let verified = if candidates.peek().is_none() {
        stand_in_check(&parsed, stand_ins);
        false
    } else {
        candidates.any(|k| rsa_check(&parsed, k.key.decoding()))
    };
    let Some(owner) = owner.filter(|_| !keys.is_empty()) else {
        return Err(JwtError::UnknownKey);
    };
    if !verified {
        return Err(if for_alg().next().is_none() {
            JwtError::AlgorithmNotRegistered(parsed.alg.as_str())
        } else {
            JwtError::Signature
        });
    }
    let claims = strict_object(&parsed.payload, "claims")?;
    check_claims(&claims, parsed.kid, now_unix).map(|verified| (owner, verified))
}

/// One RSA signature check (ring, through jsonwebtoken).
fn rsa_check(parsed: &Parsed<'_>, key: &DecodingKey) -> bool {
    #[cfg(test)]
    RSA_CHECKS.with(|n| n.set(n.get() + 1));
    jsonwebtoken::crypto::verify(
        parsed.signature_b64,
        parsed.signing_input.as_bytes(),
        key,
        parsed.alg.jsonwebtoken(),
    )
    .unwrap_or(false)
}

/// The check a registered key of the signature's size would do, against
/// a stand-in modulus of that size; it never verifies. A signature of a
/// size no registered key has would be refused by every key before any
/// arithmetic, so no stand-in checks it either.
fn stand_in_check(parsed: &Parsed<'_>, stand_ins: &StandIns) {
    if (MIN_RSA_BITS / 8..=MAX_RSA_BITS / 8).contains(&parsed.signature_len)
        && let Some(modulus) = stand_ins.modulus(parsed.signature_len)
    {
        let key = DecodingKey::from_rsa_raw_components(modulus, &STAND_IN_EXPONENT);
        rsa_check(parsed, &key);
    }
}

#[cfg(test)]
thread_local! {
    /// RSA signature checks made on this thread, for tests that show a
    /// refusal cost one.
    pub(crate) static RSA_CHECKS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
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
    let signature_len = URL_SAFE_NO_PAD
        .decode(signature_b64)
        .map_err(|_| JwtError::Malformed("signature is not base64url"))?
        .len();
    let signing_input = token
        .get(..header_b64.len() + 1 + payload_b64.len())
        .ok_or(JwtError::Malformed("not three dot-separated segments"))?;

    let header = strict_object(&header, "header")?;

    let alg = match header.get("alg") {
        Some(Value::String(s)) => match KeyAlgorithm::parse(s) {
            Some(alg) => alg,
            None => return Err(JwtError::Algorithm(sanitize(s))),
        },
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
        signature_len,
        payload,
    })
}
