//! Which settings each command of the binary takes (`host/src/main.rs`):
//! the groups it uses, nothing else, so its `--help` lists only those.
//! `outcomes serve` takes every group (`Settings`). What a command does not
//! take is left to the file and the defaults when its `Config` is resolved.

use clap::Args;

use super::Settings;
use super::groups::{
    AlarmArgs, DefinitionArgs, LogArgs, PluginArgs, PluginCacheArgs, SecretsArgs, StorageArgs,
    TimeZoneArgs,
};

/// Declares a command's bundle of setting groups (flattened into its
/// arguments) and how it becomes the whole [`Settings`]: its groups as
/// given, every other group empty.
macro_rules! bundle {
    ($(#[$doc:meta])* $name:ident { $($field:ident: $group:ty),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default, Args)]
        pub struct $name {
            $(
                #[command(flatten)]
                pub $field: $group,
            )+
        }

        impl From<$name> for Settings {
            fn from(s: $name) -> Settings {
                Settings {
                    $($field: s.$field,)+
                    ..Settings::default()
                }
            }
        }
    };
}

bundle! {
    /// A command that opens the database and nothing else: `migrate`,
    /// `backup`, `restore`, `respondent`, `access-log verify`.
    StoreSettings {
        storage: StorageArgs,
        logging: LogArgs,
    }
}

bundle! {
    /// `access-log`: the database, and the zone its times are printed in.
    AccessLogSettings {
        storage: StorageArgs,
        logging: LogArgs,
        time: TimeZoneArgs,
    }
}

bundle! {
    /// `token`: the database, the zone of the times it prints, and the key
    /// that seals webhook keys.
    TokenSettings {
        storage: StorageArgs,
        logging: LogArgs,
        time: TimeZoneArgs,
        secrets: SecretsArgs,
    }
}

bundle! {
    /// `plugin`: the plugin folder and allow-list, the database for the
    /// candidate versions kept there (`plugin candidate|promote|discard`,
    /// and the candidates `plugin list` shows) and the key that seals them;
    /// no cache (the tools compile in memory, `host/src/commands/plugin.rs`).
    PluginToolSettings {
        storage: StorageArgs,
        logging: LogArgs,
        plugins: PluginArgs,
        secrets: SecretsArgs,
    }
}

bundle! {
    /// `rescore`, `verify` and `report`: the database, definitions and
    /// plugins as the service has them, the cache included, and the alarm
    /// settings (re-scoring opens and closes alarms).
    RescoreSettings {
        storage: StorageArgs,
        logging: LogArgs,
        time: TimeZoneArgs,
        definitions: DefinitionArgs,
        plugins: PluginArgs,
        plugin_cache: PluginCacheArgs,
        alarms: AlarmArgs,
    }
}

bundle! {
    /// `import`: the database, definitions and plugins as the service has
    /// them, the cache included, and the key that seals the candidate
    /// versions (a promoted one serves).
    ImportSettings {
        storage: StorageArgs,
        logging: LogArgs,
        definitions: DefinitionArgs,
        plugins: PluginArgs,
        plugin_cache: PluginCacheArgs,
        secrets: SecretsArgs,
    }
}
