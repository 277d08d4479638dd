//! Conditions: when a question or a page is shown, as a test of answers
//! given to questions defined before it (docs/api/catalog.md#conditions).
//!
//! A definition writes `shown_if = { question = "v_1", equals = "a1" }`,
//! with one of `equals`, `not_equals`, `greater_than`, `less_than`,
//! `any_of` or `answered`, or combines conditions with `all = [...]` or
//! `any = [...]` (nested as deep as needed). Checking a condition against
//! its question's type resolves it into a [`Condition`], so evaluating one
//! compares answers and nothing else: `greater_than` on a radio question
//! becomes the set of options whose value lies above, an `equals` of a
//! date its canonical form.
//!
//! An unanswered question (or one that is not enabled, which counts as
//! unanswered) fails every test except `not_equals` and `answered = false`,
//! which are the negations of `equals` and `answered`.

use serde::{Deserialize, Serialize};

use super::answer::{Answer, PartialDate};
use super::kind::{Kind, OptionDef};

/// A condition as written.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ConditionDef {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<Literal>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_equals: Option<Literal>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub greater_than: Option<Literal>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub less_than: Option<Literal>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub any_of: Option<Vec<Literal>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all: Option<Vec<ConditionDef>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub any: Option<Vec<ConditionDef>>,
}

/// A value a condition compares with: an option key, a text or date, or a
/// number.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Literal {
    Number(f64),
    Text(String),
}

impl Serialize for Literal {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            // Written as the definition most likely wrote it: 0, not 0.0.
            #[allow(clippy::cast_possible_truncation)]
            Literal::Number(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => {
                s.serialize_i64(*n as i64)
            }
            Literal::Number(n) => s.serialize_f64(*n),
            Literal::Text(t) => s.serialize_str(t),
        }
    }
}

impl std::fmt::Display for Literal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Literal::Number(n) => write!(f, "{n}"),
            Literal::Text(t) => write!(f, "{t:?}"),
        }
    }
}

impl ConditionDef {
    /// Every question key the condition names, nested ones included.
    pub fn questions(&self) -> Vec<&str> {
        let mut keys: Vec<&str> = self.question.as_deref().into_iter().collect();
        for nested in self.all.iter().chain(&self.any).flatten() {
            keys.extend(nested.questions());
        }
        keys
    }

    /// The same condition with every question key passed through `f` (the
    /// legacy keys of the questionnaire endpoint).
    pub fn map_questions(&self, f: &impl Fn(&str) -> String) -> ConditionDef {
        let nested = |list: &Option<Vec<ConditionDef>>| {
            list.as_ref()
                .map(|l| l.iter().map(|c| c.map_questions(f)).collect())
        };
        ConditionDef {
            question: self.question.as_deref().map(f),
            all: nested(&self.all),
            any: nested(&self.any),
            ..self.clone()
        }
    }
}

/// The question a condition tests, as the definition has it.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// Its position among the questionnaire's questions.
    pub index: usize,
    pub kind: &'a Kind,
    pub options: &'a [OptionDef],
}

/// A checked condition.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    All(Vec<Condition>),
    Any(Vec<Condition>),
    /// A test of the answer to the question at `question` (its position).
    Test {
        question: usize,
        test: Test,
    },
}

/// A test of one answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Test {
    /// Answered at all.
    Answered,
    /// The chosen option is one of these; of a checkbox, one of these is
    /// ticked.
    Options(Vec<String>),
    /// The number is one of these.
    Numbers(Vec<f64>),
    /// The text (or date, in its canonical form) is one of these.
    Texts(Vec<String>),
    /// The number lies above.
    Above(f64),
    /// The number lies below.
    Below(f64),
    /// The test fails (true when unanswered).
    Not(Box<Test>),
}

impl Condition {
    /// Whether the condition holds, `answer(i)` being the answer to the
    /// question at position `i` (none when unanswered or not enabled).
    pub fn holds<'a>(&self, answer: &impl Fn(usize) -> Option<&'a Answer>) -> bool {
        match self {
            Condition::All(list) => list.iter().all(|c| c.holds(answer)),
            Condition::Any(list) => list.iter().any(|c| c.holds(answer)),
            Condition::Test { question, test } => test.holds(answer(*question)),
        }
    }
}

impl Test {
    fn holds(&self, answer: Option<&Answer>) -> bool {
        let number = |a: Option<&Answer>| match a {
            // Whole numbers of a definition are exact in f64.
            #[allow(clippy::cast_precision_loss)]
            Some(Answer::Integer(n)) => Some(*n as f64),
            Some(Answer::Decimal(n)) => Some(*n),
            _ => None,
        };
        match self {
            Test::Answered => answer.is_some(),
            Test::Options(keys) => match answer {
                Some(Answer::Option(k)) => keys.contains(k),
                Some(Answer::Options(ticked)) => ticked.iter().any(|k| keys.contains(k)),
                _ => false,
            },
            Test::Numbers(list) => number(answer).is_some_and(|n| list.contains(&n)),
            Test::Texts(list) => match answer {
                Some(Answer::Text(t)) => list.contains(t),
                Some(Answer::Date(d)) => list.contains(&d.to_string()),
                _ => false,
            },
            Test::Above(x) => number(answer).is_some_and(|n| n > *x),
            Test::Below(x) => number(answer).is_some_and(|n| n < *x),
            Test::Not(test) => !test.holds(answer),
        }
    }
}

/// Checks `def`, reporting each problem to `err` prefixed with `at`.
/// `target` finds the question a key names, or says why it may not be
/// tested here (unknown, not defined before, a display item).
pub fn resolve<'a>(
    def: &ConditionDef,
    at: &str,
    target: &impl Fn(&str) -> Result<Target<'a>, String>,
    err: &mut impl FnMut(String),
) -> Option<Condition> {
    let tests = [
        def.equals.is_some(),
        def.not_equals.is_some(),
        def.greater_than.is_some(),
        def.less_than.is_some(),
        def.any_of.is_some(),
        def.answered.is_some(),
    ]
    .into_iter()
    .filter(|t| *t)
    .count();
    let lists = [&def.all, &def.any].into_iter().flatten().count();
    match (&def.question, lists) {
        (None, 1) if tests == 0 => {
            let (list, all) = match (&def.all, &def.any) {
                (Some(list), _) => (list, true),
                (_, Some(list)) => (list, false),
                _ => return None,
            };
            if list.is_empty() {
                err(format!(
                    "{at}: {} needs at least one condition",
                    if all { "all" } else { "any" }
                ));
                return None;
            }
            let mut resolved = Vec::with_capacity(list.len());
            let mut ok = true;
            for (i, nested) in list.iter().enumerate() {
                let place = format!("{at}.{}[{i}]", if all { "all" } else { "any" });
                match resolve(nested, &place, target, err) {
                    Some(c) => resolved.push(c),
                    None => ok = false,
                }
            }
            let combined = if all {
                Condition::All(resolved)
            } else {
                Condition::Any(resolved)
            };
            ok.then_some(combined)
        }
        (Some(key), 0) if tests == 1 => {
            let t = match target(key) {
                Ok(t) => t,
                Err(why) => {
                    err(format!("{at}: {why}"));
                    return None;
                }
            };
            match test(def, key, t) {
                Ok(test) => Some(Condition::Test {
                    question: t.index,
                    test,
                }),
                Err(why) => {
                    err(format!("{at}: {why}"));
                    None
                }
            }
        }
        _ => {
            err(format!(
                "{at}: a condition is `question` with one of equals, not_equals, greater_than, \
                 less_than, any_of, answered; or `all` or `any` with a list of conditions"
            ));
            None
        }
    }
}

/// The test `def` makes of question `key`.
fn test(def: &ConditionDef, key: &str, t: Target<'_>) -> Result<Test, String> {
    if let Some(answered) = def.answered {
        return Ok(if answered {
            Test::Answered
        } else {
            Test::Not(Box::new(Test::Answered))
        });
    }
    if let Some(value) = &def.equals {
        return one_of(std::slice::from_ref(value), key, t, "equals");
    }
    if let Some(value) = &def.not_equals {
        return one_of(std::slice::from_ref(value), key, t, "not_equals")
            .map(|test| Test::Not(Box::new(test)));
    }
    if let Some(values) = &def.any_of {
        if values.is_empty() {
            return Err("any_of needs at least one value".into());
        }
        return one_of(values, key, t, "any_of");
    }
    let (bound, above, op) = match (&def.greater_than, &def.less_than) {
        (Some(b), _) => (b, true, "greater_than"),
        (_, Some(b)) => (b, false, "less_than"),
        _ => return Err("no test given".into()),
    };
    let Literal::Number(bound) = *bound else {
        return Err(format!("{op} takes a number"));
    };
    match t.kind {
        // Compared by option value: the options whose value lies beyond.
        #[allow(clippy::cast_precision_loss)]
        Kind::Radio | Kind::Select => Ok(Test::Options(
            t.options
                .iter()
                .filter(|o| {
                    let v = o.value as f64;
                    if above { v > bound } else { v < bound }
                })
                .map(|o| o.key.clone())
                .collect(),
        )),
        k if k.numeric() => Ok(if above {
            Test::Above(bound)
        } else {
            Test::Below(bound)
        }),
        k => Err(format!(
            "{op} does not apply to {key}, a {} question",
            k.name()
        )),
    }
}

/// The test that the answer to `key` is one of `values`.
fn one_of(values: &[Literal], key: &str, t: Target<'_>, op: &str) -> Result<Test, String> {
    let texts = || {
        values
            .iter()
            .map(|v| match v {
                Literal::Text(s) => Ok(s.clone()),
                Literal::Number(_) => Err(format!("{op} {v}: {key} takes a text")),
            })
            .collect::<Result<Vec<String>, String>>()
    };
    match t.kind {
        k if k.has_options() => {
            let keys = texts()?;
            if let Some(bad) = keys
                .iter()
                .find(|k| !t.options.iter().any(|o| &o.key == *k))
            {
                return Err(format!("{op} {bad:?} is not an option of {key}"));
            }
            Ok(Test::Options(keys))
        }
        k if k.numeric() => values
            .iter()
            .map(|v| match v {
                Literal::Number(n) => Ok(*n),
                Literal::Text(_) => Err(format!("{op} {v}: {key} takes a number")),
            })
            .collect::<Result<Vec<f64>, String>>()
            .map(Test::Numbers),
        Kind::Date { precision } => {
            let mut dates = Vec::with_capacity(values.len());
            for text in texts()? {
                let date = PartialDate::parse(&text, *precision).ok_or_else(|| {
                    format!(
                        "{op} {text:?} is not a date of {key}'s precision ({})",
                        precision.name()
                    )
                })?;
                dates.push(date.to_string());
            }
            Ok(Test::Texts(dates))
        }
        Kind::String { .. } | Kind::Textarea { .. } => texts().map(Test::Texts),
        k => Err(format!(
            "{key} is a {} item: it has no answer to test",
            k.name()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::text::Text;

    fn options() -> Vec<OptionDef> {
        (0..4)
            .map(|i| OptionDef {
                key: format!("a{i}"),
                value: i,
                description: Text::Plain(format!("{i}")),
                exclusive: false,
            })
            .collect()
    }

    const NUMBER: Kind = Kind::Integer {
        min: None,
        max: None,
        unit: None,
    };

    fn check(text: &str) -> Result<Condition, Vec<String>> {
        let def: ConditionDef = toml::from_str(text).map_err(|e| vec![e.to_string()])?;
        let options = options();
        let target = |key: &str| match key {
            "v_1" => Ok(Target {
                index: 0,
                kind: &Kind::Radio,
                options: &options,
            }),
            "v_2" => Ok(Target {
                index: 1,
                kind: &NUMBER,
                options: &[],
            }),
            "v_3" => Ok(Target {
                index: 2,
                kind: &Kind::Checkbox,
                options: &options,
            }),
            other => Err(format!("{other} is not a question defined before this one")),
        };
        let mut errors = Vec::new();
        resolve(&def, "shown_if", &target, &mut |e| errors.push(e)).ok_or(errors)
    }

    fn holds(c: &Condition, answers: &[Option<Answer>]) -> bool {
        c.holds(&|i| answers.get(i).and_then(Option::as_ref))
    }

    #[test]
    fn greater_than_on_options_compares_their_values() {
        let c = check("question = \"v_1\"\ngreater_than = 1").expect("valid");
        assert_eq!(
            c,
            Condition::Test {
                question: 0,
                test: Test::Options(vec!["a2".into(), "a3".into()])
            }
        );
        assert!(holds(&c, &[Some(Answer::Option("a3".into()))]));
        assert!(!holds(&c, &[Some(Answer::Option("a1".into()))]));
        assert!(!holds(&c, &[None]));
    }

    #[test]
    fn not_equals_and_unanswered_hold_for_an_unanswered_question_and_nothing_else_does() {
        let not = check("question = \"v_1\"\nnot_equals = \"a0\"").expect("valid");
        assert!(holds(&not, &[None]));
        assert!(holds(&not, &[Some(Answer::Option("a1".into()))]));
        assert!(!holds(&not, &[Some(Answer::Option("a0".into()))]));
        let unanswered = check("question = \"v_2\"\nanswered = false").expect("valid");
        assert!(holds(&unanswered, &[None, None]));
        assert!(!holds(&unanswered, &[None, Some(Answer::Integer(0))]));
        for text in [
            "question = \"v_2\"\nequals = 3",
            "question = \"v_2\"\nless_than = 3",
            "question = \"v_2\"\nany_of = [1, 2]",
            "question = \"v_2\"\nanswered = true",
        ] {
            let c = check(text).expect("valid");
            assert!(!holds(&c, &[None, None]), "{text}");
        }
    }

    #[test]
    fn all_and_any_nest_and_checkbox_equals_means_ticked() {
        let c = check(
            r#"all = [ { question = "v_2", greater_than = 10 },
                       { any = [ { question = "v_3", equals = "a3" }, { question = "v_1", any_of = ["a0", "a1"] } ] } ]"#,
        )
        .expect("valid");
        let ticked = Some(Answer::Options(vec!["a1".into(), "a3".into()]));
        assert!(holds(
            &c,
            &[None, Some(Answer::Integer(11)), ticked.clone()]
        ));
        assert!(!holds(&c, &[None, Some(Answer::Integer(10)), ticked]));
        assert!(holds(
            &c,
            &[
                Some(Answer::Option("a1".into())),
                Some(Answer::Integer(12)),
                None
            ]
        ));
        assert!(!holds(
            &c,
            &[
                Some(Answer::Option("a2".into())),
                Some(Answer::Integer(12)),
                None
            ]
        ));
    }

    #[test]
    fn every_problem_names_its_place() {
        let err = check(
            r#"any = [ { question = "v_1", equals = "a9" }, { question = "v_7", answered = true },
                       { question = "v_3", less_than = 2 }, { question = "v_2", equals = "x" },
                       { question = "v_1", equals = "a1", answered = true }, { all = [] } ]"#,
        )
        .expect_err("invalid");
        assert_eq!(
            err,
            [
                "shown_if.any[0]: equals \"a9\" is not an option of v_1",
                "shown_if.any[1]: v_7 is not a question defined before this one",
                "shown_if.any[2]: less_than does not apply to v_3, a checkbox question",
                "shown_if.any[3]: equals \"x\": v_2 takes a number",
                "shown_if.any[4]: a condition is `question` with one of equals, not_equals, \
                 greater_than, less_than, any_of, answered; or `all` or `any` with a list of \
                 conditions",
                "shown_if.any[5]: all needs at least one condition",
            ]
        );
        let err = check("question = \"v_1\"\nequal = \"a1\"").expect_err("unknown field");
        assert!(err[0].contains("equal"), "{err:?}");
    }

    #[test]
    fn a_condition_serializes_as_written_with_keys_mapped() {
        let def: ConditionDef =
            toml::from_str("any = [ { question = \"v_1\", greater_than = 0 } ]").expect("parses");
        let legacy = def.map_questions(&|k| format!("phq9_{}", &k[2..]));
        assert_eq!(
            serde_json::to_value(&legacy).expect("json"),
            serde_json::json!({"any": [{"question": "phq9_1", "greater_than": 0}]})
        );
        assert_eq!(def.questions(), ["v_1"]);
    }
}
