//! The RSA public key a client registers on its API token: read from PEM
//! (SPKI `BEGIN PUBLIC KEY` or PKCS#1 `BEGIN RSA PUBLIC KEY`), refusing
//! private keys, non-RSA keys and moduli outside 2048..=8192 bits, with a
//! stable fingerprint for the admin interface and logs. Knows nothing of
//! tokens.

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use jsonwebtoken::DecodingKey;
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

    /// The key as the signature check takes it.
    pub(super) fn decoding(&self) -> &DecodingKey {
        &self.inner.decoding
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

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}
