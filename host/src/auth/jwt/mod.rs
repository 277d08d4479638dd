//! JWT bearer tokens (docs/api/rights.md#jwt-bearer).
//!
//! This module owns two things:
//!
//! * [`RsaPublicKey`] (`keys`, over the DER walk in `der`): reading the RSA
//!   public key a client registers on its API token (PEM, SPKI `BEGIN
//!   PUBLIC KEY` or PKCS#1 `BEGIN RSA PUBLIC KEY`), refusing private keys,
//!   non-RSA keys and moduli outside 2048..=8192 bits, and giving it a stable
//!   fingerprint for the admin interface and logs; [`RegisteredKey`] holds
//!   it with the algorithm it is registered for (RFC 8725 section 3.1).
//! * [`verify`] (`verify`, then the claim rules in `claims`): deciding
//!   whether the token in `Authorization: Bearer <JWT>` is acceptable, in a
//!   fixed order: size, structure, header rules (`alg`, `typ`, forbidden
//!   parameters, `kid`, no member twice), key lookup by `kid`, signature
//!   with the keys registered for the token's `alg` (an unknown `kid` costs
//!   the same verification, against a stand-in the size of the registered
//!   keys), then claims (no member twice; `iss`, `aud`,
//!   `iat`, `exp`, `nbf`, `sub`).
//!
//! The files build on each other in one direction: `limits` → `error` →
//! `der` → `keys` → `json` → `claims` → `verify`.
//!
//! It does not extract the header, look keys up in storage, compare `sub`
//! with the dossier in the path or answer the client: the caller does that,
//! and every [`JwtError`] becomes the same 401
//! (docs/api/rights.md#authentication-failures). The error messages are
//! therefore precise, for the logs only, and never echo attacker-controlled
//! text unescaped.
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

mod claims;
mod der;
mod error;
mod json;
mod keys;
mod limits;
mod verify;

#[cfg(test)]
mod tests;

pub use claims::VerifiedJwt;
pub use error::{JwtError, KeyError};
pub use keys::{KeyAlgorithm, RegisteredKey, RsaPublicKey};
pub use limits::{
    LEEWAY_SECS, MAX_KID_BYTES, MAX_LIFETIME_SECS, MAX_PEM_BYTES, MAX_RSA_BITS, MAX_TOKEN_BYTES,
    MIN_RSA_BITS,
};
#[cfg(test)]
pub(crate) use verify::RSA_CHECKS;
pub use verify::{StandIns, kid, verify, verify_with};
