//! Consumer secrets: generated with 256 bits of randomness, shown once,
//! stored only as a SHA-256 hash, compared in constant time
//! (docs/api/rights.md#tokens).
//!
//! A plain hash is the right tool here, not a password hash: the secret is
//! random and 256 bits long, so it cannot be guessed from its hash, and
//! checking it stays within the per-request budget (a slow password hash
//! would cost milliseconds on every API call).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// A new secret: 32 random bytes from the operating system, base64url.
pub fn generate() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The stored form of a secret.
pub fn hash(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// Lower-case hex, the way hashes are kept in the database.
pub fn to_hex(hash: &[u8; 32]) -> String {
    hex::encode(hash)
}

/// Reads back [`to_hex`]; None for anything else.
pub fn from_hex(text: &str) -> Option<[u8; 32]> {
    hex::FromHex::from_hex(text).ok()
}

/// Whether `secret` hashes to `stored`, in time independent of where they
/// differ.
pub fn matches(secret: &str, stored: &[u8; 32]) -> bool {
    hash(secret).ct_eq(stored).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_long_random_and_verify_against_their_hash() {
        let a = generate();
        let b = generate();
        assert_ne!(a, b);
        assert_eq!(a.len(), 43, "32 bytes in unpadded base64url");
        let stored = hash(&a);
        assert!(matches(&a, &stored));
        assert!(!matches(&b, &stored));
        assert_eq!(from_hex(&to_hex(&stored)), Some(stored));
        assert_eq!(from_hex("zz"), None);
    }
}
