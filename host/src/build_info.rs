//! What this binary is: its version, the commit it was built from
//! (host/build.rs) and the plugin ABI it speaks. Public facts, shown by
//! `outcomes --version`, over HTTP and in the metrics' `build_info`.

/// The package version (Cargo.toml).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The commit the binary was built from, or "unknown".
pub const COMMIT: &str = env!("OUTCOMES_COMMIT");

/// The plugin ABI version this host loads.
pub const ABI_VERSION: u32 = plugin_sdk::ABI_VERSION;
