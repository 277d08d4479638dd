//! The one small questionnaire the host's unit tests share.
//!
//! Tests that just need "a questionnaire" use [`questionnaire`] (or parse
//! [`DEFINITION`] with their own changes) instead of writing their own, so
//! that a change to the definition format is made in one place. It holds
//! one of each thing the tests look at:
//!
//! - `v_1`: required, options from the option set `yn` (No/Nee = 0,
//!   Yes/Ja = 1), a title in English and Dutch that uses both textvars;
//! - `v_2`: optional, English only, hidden when the flag `short` is set;
//! - `v_3`: optional, shown only when the flag `extra` is set (default
//!   false), with one inline option `a0` worth 3, so an answer's value is
//!   never mistaken for its option's key or position;
//! - textvars `period` (defaults "2 weeks" and "2 weken", used in the
//!   short description and the bilingual description) and `name` (no
//!   default);
//! - scores `total` (items `v_1` and `v_2`) and `second` (no items);
//! - a name with markup characters, which pages must escape.

use super::questionnaire::{self, Questionnaire};

/// The definition, as a `questionnaire.toml` of the folder `mini`.
pub const DEFINITION: &str = r#"
key = "mini"
name = "Mini <check>"
short_description = "Mood in the past {{period}}"
description = { en = "In the past {{period}}:", nl = "In de afgelopen {{period}}:" }
language = "en"
licence = "public domain"
scorer = "mini"

[flags]
short = { description = "Leave out v_2" }
extra = { description = "Ask v_3 too", default = false }

[textvars]
period = { description = "Time frame", default = { en = "2 weeks", nl = "2 weken" } }
name = { description = "How to address the respondent" }

[option_sets]
yn = [ { key = "a0", value = 0, description = { en = "No", nl = "Nee" } }, { key = "a1", value = 1, description = { en = "Yes", nl = "Ja" } } ]

[[questions]]
key = "v_1"
title = { en = "In the past {{period}}, {{ name }}, were you sad?", nl = "Was u de afgelopen {{period}} somber?" }
type = "radio"
options = "yn"

[[questions]]
key = "v_2"
title = "Were you tired?"
type = "radio"
required = false
hidden_if_flag = "short"
options = "yn"

[[questions]]
key = "v_3"
title = "Anything else?"
type = "radio"
required = false
shown_if_flag = "extra"
options = [ { key = "a0", value = 3, description = "Yes" } ]

[[scores]]
key = "total"
label = "Total"
items = ["v_1", "v_2"]

[[scores]]
key = "second"
label = "Second"
"#;

/// [`DEFINITION`], parsed.
pub fn questionnaire() -> Questionnaire {
    questionnaire::parse(DEFINITION, "mini").expect("the shared test questionnaire is valid")
}
