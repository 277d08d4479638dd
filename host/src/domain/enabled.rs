//! Which questions and pages are enabled for a response
//! (docs/api/catalog.md#conditions): a page whose condition holds, a
//! question on it that its flags show and whose condition holds. Every
//! path that stores or scores answers asks this through
//! [`GivenAnswers::enabled`](super::answers::GivenAnswers::enabled), so an
//! answer to a question that is not enabled is never stored or scored.
//!
//! Conditions test questions defined earlier only, so one pass in
//! definition order settles everything; a question that is not enabled
//! counts as unanswered for the conditions after it, which makes chains
//! work (a question whose condition's question is hidden sees it
//! unanswered).

use super::answer::Answer;
use super::questionnaire::Questionnaire;
use super::variant::Variant;

/// What is enabled, by position in the questionnaire's questions and
/// pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enabled {
    pub questions: Vec<bool>,
    pub pages: Vec<bool>,
}

impl Enabled {
    /// Evaluates `q` for a response in `variant` whose answer to the
    /// question at position `i` is `answer(i)`.
    pub fn evaluate<'a>(
        q: &Questionnaire,
        variant: &Variant,
        answer: impl Fn(usize) -> Option<&'a Answer>,
    ) -> Enabled {
        let mut questions = vec![false; q.questions.len()];
        let mut pages = vec![false; q.pages.len()];
        for (p, page) in q.pages.iter().enumerate() {
            let page_on = page
                .condition
                .as_ref()
                .is_none_or(|c| c.holds(&|i| if questions[i] { answer(i) } else { None }));
            pages[p] = page_on;
            for i in page.questions.clone() {
                let question = &q.questions[i];
                let on = page_on
                    && variant.shows(q, question)
                    && question
                        .condition
                        .as_ref()
                        .is_none_or(|c| c.holds(&|j| if questions[j] { answer(j) } else { None }));
                questions[i] = on;
            }
        }
        Enabled { questions, pages }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::questionnaire;

    /// Three pages: v_1 (a number) and v_2 (a display item) on the first;
    /// the second shown when v_1 is above 3, with v_3 asked when v_1 is
    /// above 5; the third always, with v_4 asked when v_3 was answered
    /// (a chain through v_3's condition) and v_5 hidden by a flag.
    const PAGED: &str = r#"
key = "paged"
name = "Paged"
short_description = "Pages and conditions"
language = "en"
licence = "test"
scorer = "paged"

[flags]
short = { description = "Leave out v_5" }

[[pages]]
key = "first"
questions = ["v_1", "v_2"]

[[pages]]
key = "second"
title = "More"
questions = ["v_3"]
shown_if = { question = "v_1", greater_than = 3 }

[[pages]]
key = "third"
questions = ["v_4", "v_5"]

[[questions]]
key = "v_1"
type = "integer"
title = "How many?"

[[questions]]
key = "v_2"
type = "display"
text = "Thank you."

[[questions]]
key = "v_3"
type = "string"
title = "Why so many?"
shown_if = { question = "v_1", greater_than = 5 }

[[questions]]
key = "v_4"
type = "radio"
title = "Is that usual?"
shown_if = { question = "v_3", answered = true }
options = [ { key = "a0", value = 0, description = "No" }, { key = "a1", value = 1, description = "Yes" } ]

[[questions]]
key = "v_5"
type = "textarea"
title = "Anything else?"
hidden_if_flag = "short"
"#;

    fn paged() -> Questionnaire {
        questionnaire::parse(PAGED, "paged").expect("valid")
    }

    fn enabled(q: &Questionnaire, variant: &Variant, answers: &[Option<Answer>]) -> Enabled {
        Enabled::evaluate(q, variant, |i| answers.get(i).and_then(Option::as_ref))
    }

    #[test]
    fn a_page_condition_hides_its_questions_and_a_chain_follows_through_hidden_ones() {
        let q = paged();
        let why = Some(Answer::Text("parties".into()));
        let seven = Some(Answer::Integer(7));
        let all = enabled(
            &q,
            &Variant::default(),
            &[seven, None, why.clone(), None, None],
        );
        assert_eq!(all.pages, [true, true, true]);
        assert_eq!(all.questions, [true, true, true, true, true]);

        // 5 shows the second page but not v_3 on it; v_3's answer is then
        // unanswered for v_4's condition, so v_4 goes too.
        let five = Some(Answer::Integer(5));
        let some = enabled(
            &q,
            &Variant::default(),
            &[five, None, why.clone(), None, None],
        );
        assert_eq!(some.pages, [true, true, true]);
        assert_eq!(some.questions, [true, true, false, false, true]);

        // 2 hides the second page and with it v_3, and again v_4.
        let two = Some(Answer::Integer(2));
        let few = enabled(&q, &Variant::default(), &[two, None, why, None, None]);
        assert_eq!(few.pages, [true, false, true]);
        assert_eq!(few.questions, [true, true, false, false, true]);
    }

    #[test]
    fn flags_hide_as_before() {
        let q = paged();
        let short = Variant {
            flags: [("short".to_owned(), true)].into(),
            ..Variant::default()
        };
        let e = enabled(&q, &short, &[None, None, None, None, None]);
        assert_eq!(e.questions, [true, true, false, false, false]);
    }

    /// A bundled definition.
    fn bundled(key: &str) -> Questionnaire {
        let path = format!(
            "{}/../questionnaires/{key}/questionnaire.toml",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(path).expect("the bundled definition");
        questionnaire::parse(&text, key).expect("valid")
    }

    /// The keys enabled for these option keys (`-` unanswered), question
    /// by question.
    fn enabled_keys(q: &Questionnaire, variant: &Variant, options: &str) -> Vec<String> {
        let answers: Vec<Option<Answer>> = options
            .split_whitespace()
            .map(|o| (o != "-").then(|| Answer::Option(o.to_owned())))
            .collect();
        let e = enabled(q, variant, &answers);
        q.questions
            .iter()
            .zip(e.questions)
            .filter(|(_, on)| *on)
            .map(|(question, _)| question.key.clone())
            .collect()
    }

    #[test]
    fn the_audits_skip_instructions_are_its_conditions() {
        // Babor et al. 2001, interview version: "Never" on 1 skips to 9;
        // 2 and 3 both 0 skip to 9; nothing skips without those answers.
        let q = bundled("audit");
        let v = Variant::default();
        let all: Vec<String> = (1..=10).map(|i| format!("v_{i}")).collect();
        assert_eq!(
            enabled_keys(&q, &v, "a0 a4 a4 a4 a4 a4 a4 a4 a0 a0"),
            ["v_1", "v_9", "v_10"]
        );
        assert_eq!(
            enabled_keys(&q, &v, "a1 a0 a0 a4 a4 a4 a4 a4 a0 a0"),
            ["v_1", "v_2", "v_3", "v_9", "v_10"]
        );
        assert_eq!(enabled_keys(&q, &v, "a1 a0 a1 - - - - - - -"), all);
        assert_eq!(enabled_keys(&q, &v, "a1 a0 - - - - - - - -"), all);
        assert_eq!(enabled_keys(&q, &v, "- - - - - - - - - -"), all);
    }

    #[test]
    fn the_phq9s_difficulty_item_follows_a_problem_checked_off() {
        let q = bundled("phq9");
        let plain = Variant::default();
        let phq8 = Variant {
            flags: [("phq8".to_owned(), true)].into(),
            ..Variant::default()
        };
        let with_ten = |keys: Vec<String>| keys.contains(&"v_10".to_owned());
        assert!(!with_ten(enabled_keys(
            &q,
            &plain,
            "a0 a0 a0 a0 a0 a0 a0 a0 a0 -"
        )));
        assert!(!with_ten(enabled_keys(&q, &plain, "- - - - - - - - - -")));
        assert!(with_ten(enabled_keys(
            &q,
            &plain,
            "a0 a0 a0 a0 a0 a0 a0 a0 a1 -"
        )));
        assert!(with_ten(enabled_keys(&q, &plain, "a3 - - - - - - - - -")));
        // Item 9 hidden by the PHQ-8 flag counts for nothing.
        assert!(!with_ten(enabled_keys(
            &q,
            &phq8,
            "a0 a0 a0 a0 a0 a0 a0 a0 a2 -"
        )));
    }

    #[test]
    fn conditions_may_test_only_earlier_questions_so_none_forms_a_cycle() {
        let text = PAGED
            .replace(
                "shown_if = { question = \"v_1\", greater_than = 3 }",
                "shown_if = { question = \"v_3\", answered = true }",
            )
            .replace(
                "shown_if = { question = \"v_3\", answered = true }\noptions",
                "shown_if = { question = \"v_4\", answered = true }\noptions",
            )
            .replace(
                "shown_if = { question = \"v_1\", greater_than = 5 }",
                "shown_if = { question = \"v_2\", answered = true }",
            );
        let err = questionnaire::parse(&text, "paged").expect_err("invalid").0;
        assert_eq!(
            err,
            [
                "questions[2] (v_3): shown_if: v_2 is a display item: it has no answer to test",
                "questions[3] (v_4): shown_if: v_4 is not defined before it: a condition tests \
                 earlier questions only",
                "pages[1] (second): shown_if: v_3 is not defined before it: a condition tests \
                 earlier questions only",
            ]
        );
    }
}
