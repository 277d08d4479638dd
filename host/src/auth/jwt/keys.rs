//! The RSA public key a client registers on its API token: read from PEM
//! (SPKI `BEGIN PUBLIC KEY` or PKCS#1 `BEGIN RSA PUBLIC KEY`), refusing
//! private keys, non-RSA keys and moduli outside 2048..=8192 bits, with a
//! stable fingerprint for the admin interface and logs; and the algorithm
//! it is registered for ([`RegisteredKey`]). Knows nothing of tokens.

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use jsonwebtoken::{Algorithm, DecodingKey};
use sha2::{Digest as _, Sha256};

use super::der::{
    DER_BIT_STRING, DER_INTEGER, DER_NULL, DER_OID, DER_SEQUENCE, OID_RSA_ENCRYPTION, bit_length,
    der_end, der_read, der_whole, positive_integer,
};
use super::error::KeyError;
use super::limits::{MAX_PEM_BYTES, MAX_RSA_BITS, MIN_RSA_BITS, sanitize};

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
        let fingerprint = hex::encode(Sha256::digest(&der));
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

    /// Size of the modulus in bytes: the length of every signature it
    /// verifies.
    pub(super) fn modulus_bytes(&self) -> usize {
        self.inner.bits.div_ceil(8)
    }

    /// The key as the signature check takes it.
    pub(super) fn decoding(&self) -> &DecodingKey {
        &self.inner.decoding
    }
}

/// A signature algorithm a key can be registered for: RSASSA-PKCS1-v1_5
/// with SHA-256 or SHA-512 (RFC 7518 section 3.3), the two the API allows
/// (docs/api/rights.md#jwt-bearer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyAlgorithm {
    Rs256,
    Rs512,
}

impl KeyAlgorithm {
    /// The `alg` header value, and the stored and command-line spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyAlgorithm::Rs256 => "RS256",
            KeyAlgorithm::Rs512 => "RS512",
        }
    }

    /// Exactly `RS256` or `RS512`: no case folding, no trimming.
    pub fn parse(text: &str) -> Option<KeyAlgorithm> {
        match text {
            "RS256" => Some(KeyAlgorithm::Rs256),
            "RS512" => Some(KeyAlgorithm::Rs512),
            _ => None,
        }
    }

    /// Reads a stored list: comma-separated, at least one, none twice.
    pub fn parse_list(text: &str) -> Result<Vec<KeyAlgorithm>, KeyError> {
        let mut out = Vec::new();
        for name in text.split(',') {
            let alg =
                KeyAlgorithm::parse(name).ok_or_else(|| KeyError::Algorithm(sanitize(name)))?;
            if out.contains(&alg) {
                return Err(KeyError::Algorithm(sanitize(name)));
            }
            out.push(alg);
        }
        Ok(out)
    }

    /// The stored form of a list: comma-separated.
    pub fn to_list(algorithms: &[KeyAlgorithm]) -> String {
        algorithms
            .iter()
            .map(|a| a.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }

    pub(super) fn jsonwebtoken(self) -> Algorithm {
        match self {
            KeyAlgorithm::Rs256 => Algorithm::RS256,
            KeyAlgorithm::Rs512 => Algorithm::RS512,
        }
    }
}

/// A key as registered on a token: the public key and the algorithms it
/// verifies, and no other. RFC 8725 section 3.1: "each key MUST be used with
/// exactly one algorithm, and this MUST be checked when the cryptographic
/// operation is performed". Keys registered now name one; keys registered
/// before algorithms were recorded keep both, as they had (see
/// docs/operations.md#jwt-keys-and-tokens), until an operator pins them.
#[derive(Debug, Clone)]
pub struct RegisteredKey {
    pub key: RsaPublicKey,
    algorithms: Vec<KeyAlgorithm>,
}

impl RegisteredKey {
    /// The key for exactly this algorithm.
    pub fn pinned(key: RsaPublicKey, algorithm: KeyAlgorithm) -> RegisteredKey {
        RegisteredKey {
            key,
            algorithms: vec![algorithm],
        }
    }

    /// The key for these algorithms (at least one).
    pub fn new(
        key: RsaPublicKey,
        algorithms: Vec<KeyAlgorithm>,
    ) -> Result<RegisteredKey, KeyError> {
        if algorithms.is_empty() {
            return Err(KeyError::Algorithm("(none)".to_owned()));
        }
        Ok(RegisteredKey { key, algorithms })
    }

    /// Whether a signature by `algorithm` may be verified with this key.
    pub fn accepts(&self, algorithm: KeyAlgorithm) -> bool {
        self.algorithms.contains(&algorithm)
    }

    pub fn algorithms(&self) -> &[KeyAlgorithm] {
        &self.algorithms
    }

    /// Whether the key is held to one algorithm, as RFC 8725 asks.
    pub fn is_pinned(&self) -> bool {
        self.algorithms.len() == 1
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
