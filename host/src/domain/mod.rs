//! Pure types and rules: questionnaire and protocol definitions, answers,
//! response status, outcomes, alarms, non-response reasons and time
//! formatting.
//!
//! Nothing here does I/O beyond parsing text it is handed, knows SQL, HTTP or
//! wasmtime, or reads the clock: callers pass `now` in.

pub mod alarm;
pub mod answer;
pub mod answers;
pub mod catalog;
pub mod condition;
pub mod enabled;
pub mod fill_out;
pub mod ids;
pub mod kind;
pub mod non_response;
pub mod outcome;
pub mod paging;
pub mod protocol;
pub mod question;
pub mod questionnaire;
pub mod respondent;
pub mod response;
pub mod schedule;
pub mod subscription;
#[cfg(test)]
pub mod testing;
pub mod text;
pub mod time;
pub mod translation;
pub mod variant;
