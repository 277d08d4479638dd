//! The contract between the outcomes host and its plugins: questionnaire
//! scorers and report calculators, WebAssembly modules that exchange
//! versioned JSON with the host.
//!
//! A complete scorer for a two-item questionnaire `mini` whose `total` is
//! the sum of both items, and whose second item raises the alarm at 2 or
//! more:
//!
//! ```
//! use plugin_sdk::{scoring, Score, ScorerInput, ScorerOutput};
//!
//! const ITEMS: [&str; 2] = ["q1", "q2"];
//!
//! fn score(input: ScorerInput) -> ScorerOutput {
//!     let values = input.values_of(&ITEMS);
//!     let total = match scoring::sum(&values) {
//!         Some(total) => Score::of(total),
//!         None => Score::missing(scoring::missing(&input, &ITEMS)),
//!     };
//!     let mut output = ScorerOutput::default();
//!     output.scores.insert("total".into(), total);
//!     output.alarm = Some(scoring::keys_at_or_above(&input, &["q2"], 2.0));
//!     output.completion = Some(scoring::completion(&values));
//!     output
//! }
//!
//! plugin_sdk::export_scorer!(score, questionnaires = ["mini"]);
//! ```
//!
//! Built with `cargo build --target wasm32-unknown-unknown --profile
//! plugin`, the crate is a module the host loads; built natively it is an
//! ordinary library whose golden fixtures [`testing::check_fixtures`] runs
//! with `cargo test`.
//! The guide "Writing a plugin" ([`guide`]) walks from `outcomes plugin
//! new` to a module hot-reloaded by a running host.
//!
//! What is where:
//! - [`contract`]: the serde types both sides share, [`ABI_VERSION`] and
//!   [`CONTRACT_VERSION`].
//! - [`typed`]: which questions were enabled, and typed getters for every
//!   kind of answer (`input.integer("v_3")`, `input.options("v_2")`, ...).
//! - [`export_scorer!`], [`export_calculator!`]: the guest glue ([`guest`]).
//! - [`scoring`]: pure helpers for scoring rules.
//! - [`time`]: RFC 3339 instants, to order responses without a date library.
//! - [`log`]: a capped log facility ([`info!`], [`warn!`], [`debug!`]).
//! - [`testing`]: the native fixture runner (not on `wasm32`).
//! - `schema` (feature `schema`): the contract as JSON Schema, committed as
//!   `contract.schema.json` for authors in other languages.
//! - [`guide`]: the guide "Writing a plugin".
//!
//! This crate depends on serde only (and on schemars with the `schema`
//! feature) and never sees the host or wasmtime.

#![deny(missing_docs)]

pub mod contract;
pub mod guest;
pub mod log;
#[cfg(feature = "schema")]
pub mod schema;
pub mod scoring;
#[cfg(not(target_arch = "wasm32"))]
pub mod testing;
pub mod time;
pub mod typed;

#[doc = include_str!("../docs/writing-a-plugin.md")]
pub mod guide {}

pub use contract::*;
pub use typed::Date;
