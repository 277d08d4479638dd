//! What this binary is: its version, the commit it was built from
//! (host/build.rs), the plugin ABI it speaks and the database migration
//! level it carries. Public facts, shown by `outcomes --version`, over HTTP
//! and in the metrics' `build_info`.

/// The package version (Cargo.toml).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The commit the binary was built from, or "unknown".
pub const COMMIT: &str = env!("OUTCOMES_COMMIT");

/// The plugin ABI version this host loads.
pub const ABI_VERSION: u32 = plugin_sdk::ABI_VERSION;

/// The highest database migration this binary carries (the same number in
/// both dialects).
pub fn migration() -> i64 {
    crate::store::embedded_level()
}

/// What `outcomes --version` prints after the name: the version, then the
/// commit, plugin ABI and migration level.
pub fn long_version() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        format!(
            "{VERSION} (commit {COMMIT}, plugin ABI {ABI_VERSION}, migration {})",
            migration()
        )
    })
}
