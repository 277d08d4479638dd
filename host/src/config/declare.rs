//! How the table of settings (`groups.rs`) becomes everything a setting
//! needs: one row, written once, is a flag and an environment variable in
//! its `--help` group, a key of the TOML file, a field of the merged
//! [`Values`](super::Values) with its default, and an entry of
//! [`SETTINGS`](super::SETTINGS) (what the documentation test and
//! `host/tests/cli_help.rs` read). Names follow from the key: the flag is
//! the key with `-` for `_`, the environment variable `OUTCOMES_` and the
//! key in capitals; nobody writes them twice.
//!
//! A row: `/// help text` lines, then
//! `key: Type [VALUE_NAME] = "default", option, option;`. The default is
//! text, parsed as a flag's value would be (`FromStr`), and shown in
//! `--help` as `[default: text]`; a row without one resolves to `None`
//! (not given, or a default `Config::resolve` derives). Options:
//! `shown("text")` shows that instead of the default's text, `secret`
//! keeps the environment variable's value out of `--help`.

use std::str::FromStr;

/// One setting as the table declares it.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// The key in the TOML file; the flag and the environment variable
    /// follow from it.
    pub key: &'static str,
    /// The `--help` heading it is listed under; `None`: only in the file.
    pub heading: Option<&'static str>,
    /// The help text, one doc-comment line each.
    pub help: &'static [&'static str],
    /// The default as written (parsed like a flag's value).
    pub default: Option<&'static str>,
    /// What `--help` and docs/operations.md show as its default.
    pub shown: Option<&'static str>,
    value_name: &'static str,
    secret: bool,
}

impl Setting {
    pub const fn new(
        key: &'static str,
        heading: Option<&'static str>,
        help: &'static [&'static str],
        value_name: &'static str,
        default: Option<&'static str>,
    ) -> Setting {
        Setting {
            key,
            heading,
            help,
            default,
            shown: default,
            value_name,
            secret: false,
        }
    }

    /// Shows `text` as the default instead of the default's own text
    /// (a default that depends on another setting, or none with a
    /// meaning).
    pub const fn shown(self, text: &'static str) -> Setting {
        Setting {
            shown: Some(text),
            ..self
        }
    }

    /// Keeps the environment variable's value out of `--help`.
    pub const fn secret(self) -> Setting {
        Setting {
            secret: true,
            ..self
        }
    }

    /// `--data-dir` for `data_dir` (without the dashes).
    pub fn flag(&self) -> String {
        self.key.replace('_', "-")
    }

    /// `OUTCOMES_DATA_DIR` for `data_dir`.
    pub fn env(&self) -> String {
        format!("OUTCOMES_{}", self.key.to_ascii_uppercase())
    }

    /// The help text as one line, with its default.
    pub fn help_text(&self) -> String {
        let mut text = self
            .help
            .iter()
            .map(|line| line.trim())
            .filter(|line| !line.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        if let Some(shown) = self.shown {
            text.push_str(&format!(" [default: {shown}]"));
        }
        text
    }

    /// The flag and environment variable (the caller adds the type's
    /// parser). `global`: the setting may follow a nested command
    /// (`outcomes token --database-url URL revoke KEY` and `outcomes token
    /// revoke KEY --database-url URL` alike), within the command that took
    /// its group.
    pub fn arg(&self) -> clap::Arg {
        clap::Arg::new(self.key)
            .long(self.flag())
            .env(self.env())
            .value_name(self.value_name)
            .help(self.help_text())
            .hide_env_values(self.secret)
            .global(true)
    }
}

/// A default as written in the table, parsed. A default that does not
/// parse is a mistake in the table, which every resolve would hit
/// (`config/tests.rs` resolves the defaults).
pub fn parse_default<T: FromStr>(key: &str, text: &str) -> T
where
    T::Err: std::fmt::Debug,
{
    text.parse()
        .unwrap_or_else(|e| panic!("the default of {key}, {text:?}, does not parse: {e:?}"))
}

/// Declares every setting; invoked once, in `groups.rs`. See the module
/// docs for a row's form.
macro_rules! settings {
    (@value_type $ty:ty, $default:literal) => { $ty };
    (@value_type $ty:ty) => { Option<$ty> };
    (@merged $key:ident, $given:expr, $default:literal) => {
        $given.unwrap_or_else(|| {
            $crate::config::declare::parse_default(stringify!($key), $default)
        })
    };
    (@merged $key:ident, $given:expr) => { $given };
    (
        @setting $key:ident, $heading:expr, [$($doc:literal),*], $vn:ident,
        $($default:literal)?; $($opt:ident $(($arg:literal))?)*
    ) => {
        $crate::config::declare::Setting::new(
            stringify!($key),
            $heading,
            &[$($doc),*],
            stringify!($vn),
            settings!(@option $($default)?),
        )
        $(.$opt($($arg)?))*
    };
    (@option $default:literal) => { Some($default) };
    (@option) => { None };
    (
        $(
            $(#[doc = $group_doc:literal])*
            group $group:ident: $Group:ident, $heading:literal {
                $(
                    $(#[doc = $doc:literal])*
                    $key:ident: $ty:ty [$vn:ident] $(= $default:literal)?
                    $(, $opt:ident $(($arg:literal))?)*;
                )*
            }
        )*
        file_only {
            $(
                $(#[doc = $fdoc:literal])*
                $fkey:ident: $fty:ty $(, $fopt:ident $(($farg:literal))?)*;
            )*
        }
    ) => {
        $(
            $(#[doc = $group_doc])*
            #[derive(Debug, Clone, Default)]
            pub struct $Group {
                $(
                    $(#[doc = $doc])*
                    pub $key: Option<$ty>,
                )*
            }

            impl clap::FromArgMatches for $Group {
                fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
                    let mut group = Self::default();
                    group.update_from_arg_matches(matches)?;
                    Ok(group)
                }

                fn update_from_arg_matches(
                    &mut self,
                    matches: &clap::ArgMatches,
                ) -> Result<(), clap::Error> {
                    $(
                        if let Some(value) = matches.get_one::<$ty>(stringify!($key)) {
                            self.$key = Some(value.clone());
                        }
                    )*
                    Ok(())
                }
            }

            impl clap::Args for $Group {
                fn augment_args(command: clap::Command) -> clap::Command {
                    command
                        .next_help_heading($heading)
                        $(
                            .arg(
                                settings!(
                                    @setting $key, Some($heading), [$($doc),*], $vn,
                                    $($default)?; $($opt $(($arg))?)*
                                )
                                .arg()
                                .value_parser(clap::value_parser!($ty)),
                            )
                        )*
                }

                fn augment_args_for_update(command: clap::Command) -> clap::Command {
                    Self::augment_args(command)
                }
            }
        )*

        /// Every setting, as flags and environment variables, in its
        /// group: `outcomes serve` takes all of them; the other commands
        /// build one from the groups they take (`commands.rs`), the rest
        /// left to the file and the defaults.
        #[derive(Debug, Clone, Default, clap::Args)]
        pub struct Settings {
            $(
                #[command(flatten)]
                pub $group: $Group,
            )*
        }

        /// The settings as written in the TOML file: flat keys, named like
        /// the flags with `_`; an unknown key is refused.
        #[derive(Debug, Clone, Default, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct FileSettings {
            $($(
                pub $key: Option<$ty>,
            )*)*
            $(
                $(#[doc = $fdoc])*
                #[serde(default)]
                pub $fkey: $fty,
            )*
        }

        /// Each setting's value: the flag or environment variable, else
        /// the file, else the default (`None`: not given and no default of
        /// its own). Not yet checked: `Config::resolve` does that.
        #[derive(Debug, Clone)]
        pub struct Values {
            $($(
                pub $key: settings!(@value_type $ty $(, $default)?),
            )*)*
            $(
                pub $fkey: $fty,
            )*
        }

        impl Values {
            /// Flags and environment (`cli`) over the file over the
            /// defaults.
            pub fn merge(cli: Settings, file: FileSettings) -> Values {
                Values {
                    $($(
                        $key: settings!(
                            @merged $key, cli.$group.$key.or(file.$key) $(, $default)?
                        ),
                    )*)*
                    $(
                        $fkey: file.$fkey,
                    )*
                }
            }
        }

        /// Every setting as declared, in the order of `--help`; the
        /// file-only ones last.
        pub const SETTINGS: &[$crate::config::declare::Setting] = &[
            $($(
                settings!(
                    @setting $key, Some($heading), [$($doc),*], $vn,
                    $($default)?; $($opt $(($arg))?)*
                ),
            )*)*
            $(
                settings!(
                    @setting $fkey, None, [$($fdoc),*], TABLE,
                    ; $($fopt $(($farg))?)*
                ),
            )*
        ];
    };
}

pub(crate) use settings;
