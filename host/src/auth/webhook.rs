//! Signed callbacks, as Standard Webhooks has them
//! (https://www.standardwebhooks.com, spec/standard-webhooks.md of
//! github.com/standard-webhooks/standard-webhooks): each call carries
//! `webhook-id` (the message id, the same on every retry),
//! `webhook-timestamp` (integer Unix seconds of the attempt) and
//! `webhook-signature`, a space-separated list of `v1,<base64 of
//! HMAC-SHA256(key, "{id}.{timestamp}.{body}")>`. The receiver is given
//! the key as `whsec_` followed by the base64 of its raw bytes; receivers'
//! libraries take it in that form.
//!
//! Each API token has its own key (docs/operations.md#callbacks): made by
//! `outcomes token create` or `outcomes token webhook-secret`, shown once,
//! and kept as its raw bytes (base64) so the host can sign with it. Pure.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

use super::at_rest::SecretsKey;

/// The prefix of the form a receiver is given.
pub const SHOWN_PREFIX: &str = "whsec_";

/// Bytes in a new key: the spec asks for 24 to 64.
const KEY_BYTES: usize = 32;

/// The name a webhook key is sealed under (authenticated with it).
const AT_REST_NAME: &str = "webhook_secret";

/// A token's signing key: its raw bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookKey(Vec<u8>);

impl std::fmt::Debug for WebhookKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookKey(..)")
    }
}

impl WebhookKey {
    /// A new key: 32 random bytes from the operating system.
    pub fn generate() -> WebhookKey {
        let mut bytes = vec![0u8; KEY_BYTES];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        WebhookKey(bytes)
    }

    /// Reads the stored form ([`WebhookKey::stored`]); the shown form
    /// (with `whsec_`) is read too. None for anything else.
    pub fn from_stored(text: &str) -> Option<WebhookKey> {
        let text = text.strip_prefix(SHOWN_PREFIX).unwrap_or(text);
        STANDARD
            .decode(text)
            .ok()
            .filter(|bytes| !bytes.is_empty())
            .map(WebhookKey)
    }

    /// The form kept in the database: base64 of the raw bytes, sealed with
    /// the secrets key (docs/operations.md#secrets), so a copy of the
    /// database alone cannot sign callbacks an EPD would believe.
    pub fn sealed(&self, key: &SecretsKey) -> String {
        key.seal(AT_REST_NAME, &self.stored())
    }

    /// Reads the form [`WebhookKey::sealed`] keeps; None when it does not
    /// open with `key` or holds no key.
    pub fn unseal(stored: &str, key: &SecretsKey) -> Option<WebhookKey> {
        WebhookKey::from_stored(&key.open(AT_REST_NAME, stored).ok()?)
    }

    /// Base64 of the raw bytes.
    pub fn stored(&self) -> String {
        STANDARD.encode(&self.0)
    }

    /// The form shown once to the operator for the receiver:
    /// `whsec_<base64>`.
    pub fn shown(&self) -> String {
        format!("{SHOWN_PREFIX}{}", self.stored())
    }

    /// The `webhook-signature` value of a message: one `v1` signature.
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        // Any key length is valid for HMAC, so this cannot fail.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_match_the_standard_webhooks_test_vector() {
        // The example the Standard Webhooks reference libraries test with.
        let key = WebhookKey::from_stored("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").expect("a key");
        assert_eq!(
            key.sign(
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1_614_265_330,
                br#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn keys_are_random_and_read_back_from_both_forms() {
        let a = WebhookKey::generate();
        let b = WebhookKey::generate();
        assert_ne!(a, b);
        assert_eq!(a.0.len(), 32);
        assert!(a.shown().starts_with("whsec_"));
        assert_eq!(WebhookKey::from_stored(&a.stored()), Some(a.clone()));
        assert_eq!(WebhookKey::from_stored(&a.shown()), Some(a.clone()));
        assert_eq!(WebhookKey::from_stored("not base64!"), None);
        assert_eq!(WebhookKey::from_stored(""), None);
        assert_eq!(format!("{a:?}"), "WebhookKey(..)", "never printed");
    }
}
