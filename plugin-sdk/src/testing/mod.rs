//! The native fixture runner: a plugin's golden fixtures, checked with
//! plain `cargo test`.
//!
//! A fixture is a file `fixtures/NAME.json` in the plugin crate:
//!
//! ```json
//! {
//!   "description": "all items answered, moderate depression",
//!   "input": { "questionnaire": { "key": "phq9" }, "answers": {}, "values": {},
//!              "completed_at": "2024-05-01T09:00:00Z", "respondent_type": "patient" },
//!   "output": { "scores": { "total": { "value": 12 } }, "alarm": [], "completion": 1 }
//! }
//! ```
//!
//! `input` is what the host sends (a [`ScorerInput`](crate::ScorerInput) or
//! a [`CalculatorInput`](crate::CalculatorInput)); `output` is the `ok`
//! value the plugin must answer. Instead of `output`, `"error": "text"`
//! says the plugin must answer an error whose message contains `text`.
//!
//! A plugin crate runs its fixtures with one test:
//!
//! ```rust,ignore
//! #[test]
//! fn fixtures() {
//!     plugin_sdk::testing::check_fixtures(env!("CARGO_MANIFEST_DIR"), call_json);
//! }
//! ```
//!
//! `call_json` is the function [`export_scorer!`](crate::export_scorer) and
//! [`export_calculator!`](crate::export_calculator) define: the same JSON
//! in, JSON out path the WebAssembly export takes. The host loads the same
//! files with [`load_dir`] and compares its sandboxed calls' replies with
//! [`check`], so a fixture means the same thing natively and in the host.
//!
//! Comparison is structural JSON equality, with one allowance: numbers are
//! equal when their values are, so a fixture's `12` matches the `12.0` a
//! plugin's `f64` serializes to. Object key order does not matter; array
//! order does.
//!
//! What is where: `fixtures` reads fixture files (and builds inputs for
//! unit tests), `diff` compares a reply with a fixture's expectation, and
//! `runner` runs a crate's fixtures natively. Each uses only those before
//! it; everything public is re-exported here.

mod diff;
mod fixtures;
mod runner;

pub use diff::{Mismatch, check, json_diff};
pub use fixtures::{Expected, Fixture, FixtureError, load_dir, scorer_input};
pub use runner::check_fixtures;
