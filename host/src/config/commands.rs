//! Which settings each command of the binary takes (`host/src/main.rs`):
//! the groups it uses, nothing else, so its `--help` lists only those.
//! `outcomes serve` takes every group (`Settings`). What a command does not
//! take is left to the file and the defaults when its `Config` is resolved.

use clap::Args;

use super::Settings;
use super::groups::{
    DefinitionArgs, LogArgs, PluginArgs, PluginCacheArgs, SecretsArgs, StorageArgs, TimeZoneArgs,
};

/// A command that opens the database and nothing else: `migrate`,
/// `respondent`, `access-log verify`.
#[derive(Debug, Clone, Default, Args)]
pub struct StoreSettings {
    #[command(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    pub logging: LogArgs,
}

impl From<StoreSettings> for Settings {
    fn from(s: StoreSettings) -> Settings {
        Settings {
            storage: s.storage,
            logging: s.logging,
            ..Settings::default()
        }
    }
}

/// `access-log`: the database, and the zone its times are printed in.
#[derive(Debug, Clone, Default, Args)]
pub struct AccessLogSettings {
    #[command(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    pub logging: LogArgs,
    #[command(flatten)]
    pub time: TimeZoneArgs,
}

impl From<AccessLogSettings> for Settings {
    fn from(s: AccessLogSettings) -> Settings {
        Settings {
            storage: s.storage,
            logging: s.logging,
            time: s.time,
            ..Settings::default()
        }
    }
}

/// `token`: the database, the zone of the times it prints, and the key
/// that seals webhook keys.
#[derive(Debug, Clone, Default, Args)]
pub struct TokenSettings {
    #[command(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    pub logging: LogArgs,
    #[command(flatten)]
    pub time: TimeZoneArgs,
    #[command(flatten)]
    pub secrets: SecretsArgs,
}

impl From<TokenSettings> for Settings {
    fn from(s: TokenSettings) -> Settings {
        Settings {
            storage: s.storage,
            logging: s.logging,
            time: s.time,
            secrets: s.secrets,
            ..Settings::default()
        }
    }
}

/// `plugin`: the plugin folder and allow-list, and the database for the
/// candidate versions kept there (`plugin candidate|promote|discard`, and
/// the candidates `plugin list` shows); no cache (the tools compile in
/// memory, `host/src/commands/plugin.rs`).
#[derive(Debug, Clone, Default, Args)]
pub struct PluginToolSettings {
    #[command(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    pub logging: LogArgs,
    #[command(flatten)]
    pub plugins: PluginArgs,
}

impl From<PluginToolSettings> for Settings {
    fn from(s: PluginToolSettings) -> Settings {
        Settings {
            storage: s.storage,
            logging: s.logging,
            plugins: s.plugins,
            ..Settings::default()
        }
    }
}

/// `rescore`: the database, definitions and plugins as the service has
/// them, the cache included.
#[derive(Debug, Clone, Default, Args)]
pub struct RescoreSettings {
    #[command(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    pub logging: LogArgs,
    #[command(flatten)]
    pub time: TimeZoneArgs,
    #[command(flatten)]
    pub definitions: DefinitionArgs,
    #[command(flatten)]
    pub plugins: PluginArgs,
    #[command(flatten)]
    pub plugin_cache: PluginCacheArgs,
}

impl From<RescoreSettings> for Settings {
    fn from(s: RescoreSettings) -> Settings {
        Settings {
            storage: s.storage,
            logging: s.logging,
            time: s.time,
            definitions: s.definitions,
            plugins: s.plugins,
            plugin_cache: s.plugin_cache,
            ..Settings::default()
        }
    }
}
