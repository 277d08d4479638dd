//! Non-responses: the record that responses were not filled out, with a
//! reason from the benchmark standard's list
//! (docs/api/non-responses.md#reason-codes). This module owns the reason
//! table and the rules a registration must follow; it knows nothing of
//! storage or the wire.
//!
//! Only code `10` needs the free text `reason_other`.

use chrono::{DateTime, Utc};

use super::ids::{DossierId, NonResponseId, ResponseId};

/// The two groups of reasons: was the patient approached for the
/// measurement or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasonGroup {
    /// The patient was approached, but did not respond.
    Approached,
    /// The patient was not approached.
    NotApproached,
}

impl ReasonGroup {
    /// The group's text, verbatim (docs/api/non-responses.md#reason-groups).
    pub fn text(self) -> &'static str {
        match self {
            ReasonGroup::Approached => "Patiënt is wel benaderd voor de ROM meting, maar:",
            ReasonGroup::NotApproached => "Patiënt is niet benaderd voor de ROM meting, omdat:",
        }
    }

    /// `A` or `B`, as docs/api/non-responses.md#reason-groups names the
    /// groups.
    pub fn letter(self) -> char {
        match self {
            ReasonGroup::Approached => 'A',
            ReasonGroup::NotApproached => 'B',
        }
    }
}

/// One reason of the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reason {
    /// `01`..`10`, or a sub-code such as `02a`.
    pub code: &'static str,
    pub group: ReasonGroup,
    /// The option's text, which continues the group's sentence.
    pub option: &'static str,
}

impl Reason {
    /// Whether the reason needs the free text `reason_other` (code `10`,
    /// "Andere reden, namelijk:", asks for the other reason).
    pub fn needs_other(&self) -> bool {
        self.code == OTHER
    }
}

/// "Andere reden, namelijk:": the reason that is explained in `reason_other`.
pub const OTHER: &str = "10";

/// "Patiënt retourneert meetinstrument niet.": what the service registers
/// itself for responses that expired
/// (docs/api/non-responses.md#expired-responses).
pub const NOT_RETURNED: &str = "04";

/// Longest `reason_other`, in characters.
pub const MAX_REASON_OTHER: usize = 1000;

/// Most responses one registration may name. A measurement holds a few
/// questionnaires; the bound keeps the statements that check and link them
/// well inside both databases' limits on parameters.
pub const MAX_RESPONSES: usize = 1000;

use ReasonGroup::{Approached as A, NotApproached as B};

/// The reasons of the SBG (Stichting Benchmark GGZ) list of non-response
/// reasons, "Reden non-response" in its minimal data set, in the wording
/// RoQua's ROM service uses for them: roqua/documentation,
/// `technical/sqlite_export/nonresponse.md` (commit 0cbd6881), table "Non
/// response codes", which pairs each code with the group text and the
/// option text; that page's own examples give the option alone for `02`,
/// `04` and `10` (also `technical/rest_api/dossier/non_responses.md`). The
/// table marks the sub-codes' additions in italics (`<i>vanwege taal</i>`),
/// left out here as markup; it ends `06` without the full stop every other
/// option has, added here; `&#39;` in `08` is an apostrophe. The group
/// texts are those of docs/api/non-responses.md#reason-groups, the same as
/// RoQua's.
pub const REASONS: [Reason; 16] = [
    Reason {
        code: "01",
        group: A,
        option: "Patiënt weigert meting.",
    },
    Reason {
        code: "02",
        group: A,
        option: "Patiënt is niet in staat tot responderen.",
    },
    Reason {
        code: "02a",
        group: A,
        option: "Patiënt is niet in staat tot responderen vanwege taal.",
    },
    Reason {
        code: "02b",
        group: A,
        option: "Patiënt is niet in staat tot responderen vanwege de ernst van de stoornis.",
    },
    Reason {
        code: "03",
        group: A,
        option: "Patiënt is (herhaaldelijk) niet verschenen op de afspraak voor de meting.",
    },
    Reason {
        code: "04",
        group: A,
        option: "Patiënt retourneert meetinstrument niet.",
    },
    Reason {
        code: "05",
        group: A,
        option: "Meetinstrument is incompleet of onjuist ingevuld.",
    },
    Reason {
        code: "06",
        group: B,
        option: "Patiënt niet in staat werd geacht tot responderen.",
    },
    Reason {
        code: "06a",
        group: B,
        option: "Patiënt niet in staat werd geacht tot responderen vanwege taal.",
    },
    Reason {
        code: "06b",
        group: B,
        option: "Patiënt niet in staat werd geacht tot responderen vanwege de ernst van de stoornis.",
    },
    Reason {
        code: "07",
        group: B,
        option: "Er geen actie is ondernomen door de behandelaar/assessor.",
    },
    Reason {
        code: "08",
        group: B,
        option: "Er geen evalueerbare behandeling is uitgevoerd (crisis, diagnostiek, ultrakorte 'behandeling', etc.).",
    },
    Reason {
        code: "09",
        group: B,
        option: "De behandeling niet regulier is afgerond.",
    },
    Reason {
        code: "09a",
        group: B,
        option: "De behandeling niet regulier is afgerond vanwege overlijden van de patiënt.",
    },
    Reason {
        code: "09b",
        group: B,
        option: "De behandeling niet regulier is afgerond door eenzijdig staken van de behandeling door de patiënt.",
    },
    Reason {
        code: "10",
        group: B,
        option: "Andere reden, namelijk:",
    },
];

/// The reason with this code, exactly as written (`02a`, not `02A` or `2`).
pub fn reason(code: &str) -> Option<&'static Reason> {
    REASONS.iter().find(|r| r.code == code)
}

/// A stored non-response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonResponse {
    pub id: NonResponseId,
    pub dossier_id: DossierId,
    pub reason_code: String,
    /// Free text; empty when none was given.
    pub reason_other: String,
    /// When it was registered.
    pub at: DateTime<Utc>,
    /// The responses it wraps (withdrawn ones included), ascending.
    pub response_ids: Vec<ResponseId>,
}

impl NonResponse {
    /// The reason of the stored code; None only if the table lost a code
    /// that was once stored.
    pub fn reason(&self) -> Option<&'static Reason> {
        reason(&self.reason_code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_of_the_standard_is_in_the_table_once() {
        let codes: Vec<&str> = REASONS.iter().map(|r| r.code).collect();
        assert_eq!(
            codes,
            [
                "01", "02", "02a", "02b", "03", "04", "05", "06", "06a", "06b", "07", "08", "09",
                "09a", "09b", "10"
            ]
        );
        for r in &REASONS {
            assert_eq!(reason(r.code), Some(r));
        }
    }

    #[test]
    fn codes_01_to_05_are_group_a_and_06_to_10_group_b() {
        for r in &REASONS {
            let number: u8 = r.code[..2].parse().expect("two digits first");
            let expected = if number <= 5 { 'A' } else { 'B' };
            assert_eq!(r.group.letter(), expected, "{}", r.code);
        }
        assert_eq!(
            reason("01").map(|r| r.group.text()),
            Some("Patiënt is wel benaderd voor de ROM meting, maar:")
        );
        assert_eq!(
            reason("10").map(|r| r.group.text()),
            Some("Patiënt is niet benaderd voor de ROM meting, omdat:")
        );
    }

    #[test]
    fn sub_codes_refine_their_main_code() {
        for r in REASONS.iter().filter(|r| r.code.len() == 3) {
            let main = reason(&r.code[..2]).expect("the main code exists");
            assert_eq!(main.group, r.group, "{}", r.code);
            let stem = main.option.trim_end_matches('.');
            assert!(
                r.option.starts_with(stem) && r.option.len() > main.option.len(),
                "{} refines {}",
                r.code,
                main.code
            );
        }
        assert_eq!(
            reason("04").map(|r| r.option),
            Some("Patiënt retourneert meetinstrument niet.")
        );
    }

    #[test]
    fn only_code_10_needs_other_text() {
        let needing: Vec<&str> = REASONS
            .iter()
            .filter(|r| r.needs_other())
            .map(|r| r.code)
            .collect();
        assert_eq!(needing, [OTHER]);
        assert_eq!(
            reason(OTHER).map(|r| r.option),
            Some("Andere reden, namelijk:")
        );
        assert!(reason(NOT_RETURNED).is_some());
    }

    #[test]
    fn lookups_are_exact() {
        for code in ["", "1", "4", "11", "00", "02A", " 04", "04 ", "02c", "10a"] {
            assert_eq!(reason(code), None, "{code:?}");
        }
    }

    #[test]
    fn texts_are_plain_text() {
        for r in &REASONS {
            for text in [r.option, r.group.text()] {
                assert!(
                    !text.contains('<') && !text.contains('&') && text.trim() == text,
                    "{}: {text:?}",
                    r.code
                );
            }
        }
    }
}
