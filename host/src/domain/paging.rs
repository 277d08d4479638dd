//! The pages of a questionnaire as a respondent goes through them on the
//! fill-out pages (docs/api/fill-out.md#pages): only pages that are
//! enabled and hold an enabled item are shown, in definition order; Next
//! and Back go to the shown page after or before; a respondent who comes
//! back resumes at the page they were on (its key is stored with the
//! response), or the nearest shown page after it when that page is no
//! longer shown.

use super::answers::{Answers, GivenAnswers};
use super::enabled::Enabled;
use super::questionnaire::Questionnaire;
use super::variant::Variant;

/// The pages shown for a response's answers, by position in the
/// questionnaire's pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paging {
    shown: Vec<usize>,
}

/// What is enabled for `answers` (already without answers to questions
/// that are not enabled) of a response in `variant`.
pub fn enabled(q: &Questionnaire, variant: &Variant, answers: &Answers) -> Enabled {
    let given = GivenAnswers::of(q, answers);
    Enabled::evaluate(q, variant, |i| given.get(i))
}

impl Paging {
    /// The pages shown when `enabled` is what is enabled: an enabled page
    /// with at least one enabled item (a display item counts).
    pub fn of(q: &Questionnaire, enabled: &Enabled) -> Paging {
        let shown = q
            .pages
            .iter()
            .enumerate()
            .filter(|(p, page)| {
                enabled.pages[*p] && page.questions.clone().any(|i| enabled.questions[i])
            })
            .map(|(p, _)| p)
            .collect();
        Paging { shown }
    }

    /// Whether page `p` is shown.
    pub fn is_shown(&self, p: usize) -> bool {
        self.shown.contains(&p)
    }

    /// The shown page after page `p`.
    pub fn after(&self, p: usize) -> Option<usize> {
        self.shown.iter().copied().find(|s| *s > p)
    }

    /// The shown page before page `p`.
    pub fn before(&self, p: usize) -> Option<usize> {
        self.shown.iter().copied().rev().find(|s| *s < p)
    }

    /// Page `p`'s place among the shown pages (1-based; a page not shown
    /// counts as if it were) and how many pages are shown (it included).
    pub fn position(&self, p: usize) -> (usize, usize) {
        let before = self.shown.iter().filter(|s| **s < p).count();
        let extra = usize::from(!self.is_shown(p));
        (before + 1, self.shown.len() + extra)
    }

    /// The page to show a respondent whose stored page is the one keyed
    /// `stored`: that page when it is shown; else the first shown page
    /// after it, else the last shown page; the first shown page when none
    /// is stored or the key names no page (the definition changed). Page 0
    /// when no page is shown at all.
    pub fn resume(&self, q: &Questionnaire, stored: Option<&str>) -> usize {
        let first = self.shown.first().copied().unwrap_or(0);
        let Some(at) = stored.and_then(|key| q.pages.iter().position(|p| p.key == key)) else {
            return first;
        };
        if self.is_shown(at) {
            return at;
        }
        self.after(at)
            .or_else(|| self.shown.last().copied())
            .unwrap_or(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::answer::Answer;
    use crate::domain::questionnaire;

    /// Four pages: the second shown when v_1 is "a1", the third holding
    /// only a question hidden by a flag, the fourth always.
    const FOUR: &str = r#"
key = "four"
name = "Four"
short_description = "Four pages"
language = "en"
licence = "test"
scorer = "four"

[flags]
short = { description = "Leave out v_3" }

[[pages]]
key = "one"
questions = ["v_1"]

[[pages]]
key = "two"
questions = ["v_2"]
shown_if = { question = "v_1", equals = "a1" }

[[pages]]
key = "three"
questions = ["v_3"]

[[pages]]
key = "four"
questions = ["v_4"]

[[questions]]
key = "v_1"
type = "radio"
title = "Yes?"
options = [ { key = "a0", value = 0, description = "No" }, { key = "a1", value = 1, description = "Yes" } ]

[[questions]]
key = "v_2"
type = "integer"
title = "How many?"

[[questions]]
key = "v_3"
type = "string"
title = "Why?"
hidden_if_flag = "short"

[[questions]]
key = "v_4"
type = "display"
text = "Thank you."
"#;

    fn paging(yes: bool, variant: &Variant) -> (Questionnaire, Paging) {
        let q = questionnaire::parse(FOUR, "four").expect("valid");
        let mut given = GivenAnswers::none(&q);
        let option = if yes { "a1" } else { "a0" };
        given.set(0, Some(Answer::Option(option.into())));
        let answers = given.enabled(&q, variant).answers;
        let paging = Paging::of(&q, &enabled(&q, variant, &answers));
        (q, paging)
    }

    #[test]
    fn next_and_back_skip_pages_that_are_not_shown() {
        let (_, all) = paging(true, &Variant::default());
        assert_eq!(all.after(0), Some(1));
        assert_eq!(all.position(1), (2, 4));
        let (_, no) = paging(false, &Variant::default());
        assert_eq!(no.after(0), Some(2));
        assert_eq!(no.before(2), Some(0));
        assert_eq!(no.position(2), (2, 3));
        assert_eq!(no.after(3), None);
        assert_eq!(no.before(0), None);
        // A page whose only question a flag hides is not shown either.
        let short = Variant {
            flags: [("short".to_owned(), true)].into(),
            ..Variant::default()
        };
        let (_, short) = paging(false, &short);
        assert_eq!(short.after(0), Some(3));
        assert_eq!(short.position(3), (2, 2));
        // A display item alone makes a page.
        assert!(short.is_shown(3));
    }

    #[test]
    fn a_respondent_resumes_at_the_stored_page_or_the_next_one_shown() {
        let (q, no) = paging(false, &Variant::default());
        assert_eq!(no.resume(&q, None), 0);
        assert_eq!(no.resume(&q, Some("three")), 2);
        // "two" is no longer shown: the page after it.
        assert_eq!(no.resume(&q, Some("two")), 2);
        assert_eq!(no.resume(&q, Some("gone")), 0);
    }
}
