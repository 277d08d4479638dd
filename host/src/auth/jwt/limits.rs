//! What a token or key may be: sizes, lifetime, leeway, key strength,
//! and how much of refused text reaches a log. Data only: the checks that
//! use these live in `keys`, `claims` and `verify`.

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

/// Renders untrusted text for a log line: escaped, at most 32 characters.
pub(super) fn sanitize(text: &str) -> String {
    let short: String = text.chars().take(32).collect();
    let ellipsis = if short.len() < text.len() { "…" } else { "" };
    format!("{short:?}{ellipsis}")
}
