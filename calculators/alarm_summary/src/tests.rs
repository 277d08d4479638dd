use super::*;
use plugin_sdk::{OptionInfo, OutcomeInfo, QuestionInfo, Score};

fn response(
    id: i64,
    action: Option<&str>,
    alarm: Option<&[&str]>,
    attention: Option<&[&str]>,
) -> ResponseInfo {
    let keys = |k: &[&str]| k.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    ResponseInfo {
        id,
        questionnaire_key: "phq9".into(),
        completed_at: format!("2026-03-{:02}T09:00:00Z", id.clamp(1, 28)),
        values: [("v_1", Some("a1")), ("v_9", Some("a2")), ("v_2", None)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.map(String::from)))
            .collect(),
        outcome: OutcomeInfo {
            scores: BTreeMap::new(),
            action: action.map(String::from),
            alarm: alarm.map(keys),
            attention: attention.map(keys),
        },
    }
}

fn definition() -> QuestionnaireInfo {
    let question = |key: &str, title: &str| QuestionInfo {
        key: key.into(),
        title: title.into(),
        kind: "radio".into(),
        options: (0..4)
            .map(|i| OptionInfo {
                key: format!("a{i}"),
                value: f64::from(i),
                ..OptionInfo::default()
            })
            .collect(),
        required: true,
        ..QuestionInfo::default()
    };
    QuestionnaireInfo {
        key: "phq9".into(),
        name: "PHQ-9".into(),
        questions: vec![
            question("v_1", "First"),
            question("v_2", "Second"),
            question("v_9", "Ninth"),
        ],
        scores: Vec::new(),
    }
}

fn run(responses: Vec<ResponseInfo>) -> Results {
    let input = CalculatorInput {
        responses,
        questionnaires: [("phq9".to_string(), definition())].into_iter().collect(),
    };
    let Ok(results) = calculate(input);
    results
}

#[test]
fn fixtures() {
    plugin_sdk::testing::check_fixtures(env!("CARGO_MANIFEST_DIR"), super::call_json);
}

#[test]
fn quiet_responses_are_not_listed_but_counted() {
    let results = run(vec![response(1, None, Some(&[]), None)]);
    assert!(results.responses.is_empty());
    assert_eq!(
        (
            results.totals.alarm,
            results.totals.attention,
            results.totals.checked
        ),
        (0, 0, 1)
    );
}

#[test]
fn items_carry_title_answer_and_value_in_question_order() {
    let results = run(vec![response(
        1,
        Some("alarm"),
        Some(&["v_9"]),
        Some(&["v_2", "v_1", "v_9"]),
    )]);
    let items: Vec<(&str, &str, Option<&str>, Option<f64>)> = results.responses[0]
        .items
        .iter()
        .map(|i| {
            (
                i.key.as_str(),
                i.title.as_str(),
                i.answer.as_deref(),
                i.value,
            )
        })
        .collect();
    assert_eq!(
        items,
        [
            ("v_1", "First", Some("a1"), Some(1.0)),
            ("v_2", "Second", None, None),
            ("v_9", "Ninth", Some("a2"), Some(2.0)),
        ]
    );
}

#[test]
fn a_missing_action_is_derived_from_the_outcome() {
    let mut scored = response(2, None, Some(&[]), None);
    scored.outcome.scores.insert(
        "total".into(),
        Score {
            value: Some(12.0),
            status: Some(ScoreStatus::Attention),
            ..Score::default()
        },
    );
    let results = run(vec![response(1, None, Some(&["v_9"]), None), scored]);
    let actions: Vec<ScoreStatus> = results.responses.iter().map(|r| r.action).collect();
    assert_eq!(actions, [ScoreStatus::Alarm, ScoreStatus::Attention]);
    assert_eq!((results.totals.alarm, results.totals.attention), (1, 1));
}

#[test]
fn the_more_severe_of_stored_and_derived_action_counts() {
    let results = run(vec![response(1, Some("attention"), Some(&["v_9"]), None)]);
    assert_eq!(results.responses[0].action, ScoreStatus::Alarm);
}

#[test]
fn unknown_questionnaires_and_questions_do_not_fail() {
    let mut odd = response(1, Some("attention"), None, Some(&["v_77"]));
    odd.questionnaire_key = "unknown".into();
    let results = run(vec![odd]);
    assert_eq!(results.responses[0].items[0].title, "");
    assert_eq!(results.responses[0].items[0].answer, None);
}

#[test]
fn no_responses_give_empty_results() {
    let results = run(Vec::new());
    assert!(results.responses.is_empty());
    assert_eq!(results.totals.checked, 0);
}
