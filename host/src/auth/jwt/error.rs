//! Why a key or a token is refused. Every [`JwtError`] is the same 401 for
//! the client (docs/api/rights.md#authentication-failures): the
//! distinctions are for logs and tests, and no variant carries
//! attacker-controlled text unescaped.

use super::limits::{MAX_LIFETIME_SECS, MAX_RSA_BITS, MAX_TOKEN_BYTES, MIN_RSA_BITS};

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
    #[error("unknown or repeated algorithm {0}; expected RS256 or RS512")]
    Algorithm(String),
}

/// Why a token is refused. All of these are the same 401 for the client;
/// the distinctions are for logs and tests.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    #[error("token longer than {MAX_TOKEN_BYTES} bytes")]
    TooLarge,
    #[error("malformed token: {0}")]
    Malformed(&'static str),
    #[error("the {0} names a member twice")]
    DuplicateMember(&'static str),
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
    #[error("no key of this kid is registered for {0}")]
    AlgorithmNotRegistered(&'static str),
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
