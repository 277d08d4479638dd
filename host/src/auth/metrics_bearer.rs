//! The secret with which the main listener serves `/metrics`
//! (`metrics_bearer_file`; docs/operations.md#monitoring): read once at
//! start-up, kept as its SHA-256 and compared in constant time, like a
//! consumer secret (`secret.rs`). The HTTP edge (`api/scrape.rs`) decides
//! when to ask for it.

use anyhow::Context as _;

use super::secret;

/// The metrics bearer secret, as its hash.
#[derive(Clone)]
pub struct MetricsBearer([u8; 32]);

impl std::fmt::Debug for MetricsBearer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MetricsBearer(..)")
    }
}

impl MetricsBearer {
    /// The secret in `text` (surrounding white space ignored), at least 32
    /// characters.
    pub fn new(text: &str) -> Result<MetricsBearer, String> {
        let secret = text.trim();
        if secret.chars().count() < 32 {
            return Err("the secret must be at least 32 characters".to_owned());
        }
        Ok(MetricsBearer(secret::hash(secret)))
    }

    /// Reads the secret from `path` (`metrics_bearer_file`).
    pub fn read(path: &std::path::Path) -> anyhow::Result<MetricsBearer> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading metrics_bearer_file {}", path.display()))?;
        MetricsBearer::new(&text)
            .map_err(|problem| anyhow::anyhow!("metrics_bearer_file {}: {problem}", path.display()))
    }

    /// Whether `given` is the secret.
    pub fn matches(&self, given: &str) -> bool {
        secret::matches(given, &self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_is_long_and_matches_only_itself() {
        assert!(MetricsBearer::new("short").is_err());
        let bearer =
            MetricsBearer::new(" 0123456789abcdef0123456789abcdef\n").expect("long enough");
        assert!(bearer.matches("0123456789abcdef0123456789abcdef"));
        assert!(!bearer.matches("0123456789abcdef0123456789abcdeF"));
        assert_eq!(format!("{bearer:?}"), "MetricsBearer(..)");
    }
}
