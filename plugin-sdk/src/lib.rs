//! The contract between the outcomes host and its plugins: questionnaire
//! scorers and report calculators, WebAssembly modules that exchange
//! versioned JSON with the host.
//!
//! This crate holds the types both sides share, so the contract is defined
//! once. It depends on serde only and never sees the host or wasmtime.

#![deny(missing_docs)]

use serde::{Deserialize, Serialize};

/// The major version of the plugin ABI. A module declaring another major
/// version is refused with a message saying what to rebuild.
pub const ABI_VERSION: u32 = 1;

/// What a plugin does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PluginKind {
    /// Computes the outcome of one completed response.
    Scorer,
    /// Computes a named report over several responses of a dossier.
    Calculator,
}

/// What a plugin says about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Plugin name: for a scorer, the name a questionnaire definition's
    /// `scorer` field gives; for a calculator, the `calculator` parameter of
    /// report calculations.
    pub name: String,
    /// Scorer or calculator.
    pub kind: PluginKind,
    /// Semantic version of the plugin.
    pub version: String,
    /// The ABI major version it was built against.
    pub abi_version: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_use_lower_case_kinds_on_the_wire() {
        let m = Manifest {
            name: "phq9".into(),
            kind: PluginKind::Scorer,
            version: "1.0.0".into(),
            abi_version: ABI_VERSION,
        };
        let json = serde_json::to_value(&m).expect("serializes");
        assert_eq!(json["kind"], "scorer");
        assert_eq!(
            serde_json::from_value::<Manifest>(json).expect("deserializes"),
            m
        );
    }
}
