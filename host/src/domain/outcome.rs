//! The outcome of a response as stored and sent (api.md "Outcome";
//! decisions.md §4). Scores stay open JSON objects because scorers may add
//! fields; the host only relies on the fields named here.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `outcome` of a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Outcome {
    /// Score key to score entry.
    pub scores: Map<String, Value>,
    /// `attention`, `alarm` or null.
    pub action: Option<String>,
    /// Question keys that raised the alarm; null when the questionnaire
    /// defines no alarm rule.
    pub alarm: Option<Vec<String>>,
    /// Question keys that raised attention; null when undefined.
    pub attention: Option<Vec<String>>,
    /// `"NN%"` when the questionnaire defines completeness.
    pub complete: Option<String>,
}

impl Outcome {
    /// The outcome of a response that has no computed outcome (not completed,
    /// or completed before a scorer ran): decisions.md §4.
    pub fn empty() -> Outcome {
        Outcome::default()
    }
}

/// Which scorer computed a stored outcome. Operators see it; the Response
/// JSON does not carry it (decisions.md §4).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Provenance {
    pub plugin: Option<String>,
    pub version: Option<String>,
    pub sha256: Option<String>,
}
