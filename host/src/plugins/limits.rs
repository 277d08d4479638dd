//! Limits as data: safe defaults per plugin kind, overridable per plugin in
//! the configuration file (`[plugin_limits.scorer]`,
//! `[plugin_limits.calculator]`, `[plugin_limits.overrides.<name>]`). The
//! defaults follow docs/plugin-abi.md#limits: about ten million fuel per scoring
//! call (10 M plus 100 per input byte), 32 MiB of memory.
//!
//! Fuel grows with the input: a call gets `fuel + fuel_per_input_byte ×
//! input bytes` ([`Limits::fuel_for`]). Reading its JSON is most of what a
//! plugin does, and a fixed budget punishes the large inputs the size caps
//! allow (Shopify Functions raise their instruction limit with the input
//! for the same reason); the per-byte part keeps the budget proportional,
//! so a runaway loop on a small input is still stopped early.

use std::collections::BTreeMap;

use plugin_sdk::PluginKind;
use serde::Deserialize;

const MIB: usize = 1024 * 1024;

/// What one call may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Fuel (roughly, wasm instructions) per call, whatever its input;
    /// deterministic.
    pub fuel: u64,
    /// Further fuel per byte of input JSON.
    pub fuel_per_input_byte: u64,
    /// Wall-clock backstop per call, in milliseconds.
    pub deadline_ms: u64,
    /// Largest linear memory, in bytes.
    pub memory_bytes: usize,
    /// Largest input JSON, in bytes.
    pub input_bytes: usize,
    /// Largest output JSON, in bytes.
    pub output_bytes: usize,
}

impl Limits {
    /// Defaults for a scorer: one response in, one outcome out.
    pub const SCORER: Limits = Limits {
        fuel: 10_000_000,
        // The bundled scorers use 30 to 60 fuel per input byte, parsing
        // included (`outcomes plugin test`): 100 leaves room, and a 1 MiB
        // input gets about 115 million.
        fuel_per_input_byte: 100,
        deadline_ms: 1_000,
        memory_bytes: 32 * MIB,
        input_bytes: MIB,
        output_bytes: MIB,
    };

    /// Defaults for a calculator: a dossier's responses in (a thousand
    /// responses are a few MiB of JSON; parsing costs fuel per byte).
    pub const CALCULATOR: Limits = Limits {
        fuel: 1_000_000_000,
        fuel_per_input_byte: 100,
        deadline_ms: 10_000,
        memory_bytes: 128 * MIB,
        input_bytes: 16 * MIB,
        output_bytes: 4 * MIB,
    };

    /// The defaults for a kind.
    pub fn for_kind(kind: PluginKind) -> Limits {
        match kind {
            PluginKind::Scorer => Limits::SCORER,
            PluginKind::Calculator => Limits::CALCULATOR,
        }
    }

    /// The fuel a call with `input_bytes` of input JSON gets: `fuel +
    /// fuel_per_input_byte × input_bytes`, saturating.
    pub fn fuel_for(&self, input_bytes: usize) -> u64 {
        self.fuel_per_input_byte
            .saturating_mul(input_bytes as u64)
            .saturating_add(self.fuel)
    }

    fn with(self, o: &LimitOverride) -> Limits {
        Limits {
            fuel: o.fuel.unwrap_or(self.fuel),
            fuel_per_input_byte: o.fuel_per_input_byte.unwrap_or(self.fuel_per_input_byte),
            deadline_ms: o.deadline_ms.unwrap_or(self.deadline_ms),
            memory_bytes: o.memory_bytes.unwrap_or(self.memory_bytes),
            input_bytes: o.input_bytes.unwrap_or(self.input_bytes),
            output_bytes: o.output_bytes.unwrap_or(self.output_bytes),
        }
    }
}

/// Some limits changed from what they would be.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitOverride {
    pub fuel: Option<u64>,
    pub fuel_per_input_byte: Option<u64>,
    pub deadline_ms: Option<u64>,
    pub memory_bytes: Option<usize>,
    pub input_bytes: Option<usize>,
    pub output_bytes: Option<usize>,
}

/// Largest memory cap anybody may configure: the pooling allocator reserves
/// address space for this much per instance slot.
pub const MAX_MEMORY_BYTES: usize = 1024 * MIB;

/// The limits of every plugin: kind defaults, then per-plugin overrides.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitSettings {
    /// Changes to the scorer defaults.
    #[serde(default)]
    pub scorer: LimitOverride,
    /// Changes to the calculator defaults.
    #[serde(default)]
    pub calculator: LimitOverride,
    /// Plugin name to its own changes.
    #[serde(default)]
    pub overrides: BTreeMap<String, LimitOverride>,
}

impl LimitSettings {
    /// The limits of plugin `name` of `kind`.
    pub fn limits(&self, name: &str, kind: PluginKind) -> Limits {
        let base = match kind {
            PluginKind::Scorer => Limits::SCORER.with(&self.scorer),
            PluginKind::Calculator => Limits::CALCULATOR.with(&self.calculator),
        };
        match self.overrides.get(name) {
            Some(o) => base.with(o),
            None => base,
        }
    }

    /// The largest memory cap any plugin gets, which sizes the instance pool.
    pub fn max_memory_bytes(&self) -> usize {
        let kinds = [PluginKind::Scorer, PluginKind::Calculator];
        let mut max = kinds
            .iter()
            .map(|k| self.limits("", *k).memory_bytes)
            .max()
            .unwrap_or(Limits::SCORER.memory_bytes);
        for name in self.overrides.keys() {
            for k in kinds {
                max = max.max(self.limits(name, k).memory_bytes);
            }
        }
        max
    }

    /// Checks that the limits can be enforced.
    pub fn validate(&self) -> Result<(), String> {
        if self.max_memory_bytes() > MAX_MEMORY_BYTES {
            return Err(format!(
                "a memory cap above {MAX_MEMORY_BYTES} bytes cannot be configured"
            ));
        }
        let kinds = [PluginKind::Scorer, PluginKind::Calculator];
        let names = std::iter::once("").chain(self.overrides.keys().map(String::as_str));
        for name in names {
            for kind in kinds {
                let l = self.limits(name, kind);
                if l.fuel == 0
                    || l.deadline_ms == 0
                    || l.memory_bytes < 65_536
                    || l.input_bytes == 0
                    || l.output_bytes == 0
                {
                    let whose = if name.is_empty() {
                        kind.to_string()
                    } else {
                        name.to_owned()
                    };
                    return Err(format!(
                        "limits of {whose}: fuel, deadline_ms, input_bytes and output_bytes must be \
                         positive and memory_bytes at least 65536"
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_apply_over_the_kind_defaults() {
        let s: LimitSettings =
            toml::from_str("[scorer]\nfuel = 5\n[overrides.slow]\ndeadline_ms = 9\n")
                .expect("valid");
        assert_eq!(s.limits("phq9", PluginKind::Scorer).fuel, 5);
        let slow = s.limits("slow", PluginKind::Scorer);
        assert_eq!((slow.fuel, slow.deadline_ms), (5, 9));
        assert_eq!(
            s.limits("slow", PluginKind::Calculator).fuel,
            Limits::CALCULATOR.fuel
        );
        assert!(toml::from_str::<LimitSettings>("[scorer]\nfuels = 5\n").is_err());
    }

    #[test]
    fn fuel_grows_with_the_input_and_saturates() {
        let s: LimitSettings =
            toml::from_str("[scorer]\nfuel = 1000\nfuel_per_input_byte = 3\n[overrides.flat]\nfuel_per_input_byte = 0\n")
                .expect("valid");
        let l = s.limits("phq9", PluginKind::Scorer);
        assert_eq!(l.fuel_for(0), 1000);
        assert_eq!(l.fuel_for(10), 1030);
        assert_eq!(s.limits("flat", PluginKind::Scorer).fuel_for(1 << 20), 1000);
        let huge = Limits {
            fuel_per_input_byte: u64::MAX,
            ..Limits::SCORER
        };
        assert_eq!(huge.fuel_for(2), u64::MAX);
        assert_eq!(
            Limits::SCORER.fuel_for(1 << 20),
            10_000_000 + 100 * (1 << 20),
            "the documented default"
        );
    }

    #[test]
    fn the_pool_is_sized_for_the_largest_memory_cap() {
        let s: LimitSettings =
            toml::from_str("[overrides.big]\nmemory_bytes = 268435456\n").expect("valid");
        assert_eq!(s.max_memory_bytes(), 268_435_456);
        assert!(s.validate().is_ok());
        let s: LimitSettings = toml::from_str("[scorer]\nfuel = 0\n").expect("valid");
        assert!(s.validate().is_err());
    }
}
