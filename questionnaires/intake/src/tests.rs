//! Unit tests of every scoring rule, and the golden fixtures.

use plugin_sdk::{AnswerValue, ScoreInfo, Tonality};

use super::*;

#[test]
fn fixtures() {
    plugin_sdk::testing::check_fixtures(env!("CARGO_MANIFEST_DIR"), super::call_json);
}

/// An input with these typed answers, the rest unanswered, and the
/// clinic's limit `cutoff` on the drinks score.
fn input(answers: &[(&str, AnswerValue)], cutoff: Option<f64>) -> ScorerInput {
    let mut input = plugin_sdk::testing::scorer_input("intake", []);
    for key in REQUIRED.iter().chain(&["v_9"]) {
        input.typed_answers.insert((*key).to_owned(), None);
    }
    for (key, answer) in answers {
        input
            .typed_answers
            .insert((*key).to_owned(), Some(answer.clone()));
    }
    input.questionnaire.scores.push(ScoreInfo {
        key: DRINKS_SCORE.into(),
        label: "Standard drinks a week".into(),
        items: vec![DRINKS_AT_ALL.into(), DRINKS.into()],
        norm: None,
        reliability: None,
        sd: None,
        cutoff,
        tonality: Tonality::HigherIsWorse,
        episode: None,
    });
    input
}

/// `input` as the host sends it when the conditions left out `skipped`.
fn skipping(mut input: ScorerInput, skipped: &[&str]) -> ScorerInput {
    for key in REQUIRED.iter().chain(&["v_9"]) {
        input
            .enabled
            .insert((*key).to_owned(), !skipped.contains(key));
    }
    input
}

fn keys(keys: &[&str]) -> AnswerValue {
    AnswerValue::Keys(keys.iter().map(|k| (*k).to_owned()).collect())
}

fn text(s: &str) -> AnswerValue {
    AnswerValue::Text(s.to_owned())
}

fn drinking(drinks: i64) -> ScorerInput {
    input(
        &[
            (DRINKS_AT_ALL, text(YES)),
            (DRINKS, AnswerValue::Integer(drinks)),
        ],
        Some(15.0),
    )
}

#[test]
fn complaints_count_the_ticked_options_and_none_of_these_is_zero() {
    let three = input(&[(CHECKLIST, keys(&["a1", "a4", "a7"]))], None);
    assert_eq!(complaints(&three).value, Some(3.0));
    let all: Vec<String> = (1..=7).map(|n| format!("a{n}")).collect();
    let all = input(&[(CHECKLIST, AnswerValue::Keys(all))], None);
    assert_eq!(complaints(&all).value, Some(7.0));
    let none = input(&[(CHECKLIST, keys(&[NONE_OF_THESE]))], None);
    assert_eq!(complaints(&none).value, Some(0.0));
}

#[test]
fn an_unanswered_checklist_has_no_complaint_count() {
    let score = complaints(&input(&[], None));
    assert_eq!(score.value, None);
    assert_eq!(score.missing_values, Some(vec![CHECKLIST.to_owned()]));
}

#[test]
fn sleep_is_the_hours_answered() {
    let slept = input(&[(SLEEP, AnswerValue::Decimal(6.5))], None);
    assert_eq!(sleep_hours(&slept).value, Some(6.5));
    let whole = input(&[(SLEEP, AnswerValue::Integer(8))], None);
    assert_eq!(sleep_hours(&whole).value, Some(8.0));
    assert_eq!(
        sleep_hours(&input(&[], None)).missing_values,
        Some(vec![SLEEP.to_owned()])
    );
}

#[test]
fn no_to_drinking_is_zero_drinks_and_yes_needs_the_number() {
    let no = input(&[(DRINKS_AT_ALL, text(NO))], Some(15.0));
    assert_eq!(drinks_per_week(&no), Ok(0.0));
    let yes = input(&[(DRINKS_AT_ALL, text(YES))], Some(15.0));
    assert_eq!(drinks_per_week(&yes), Err(DRINKS));
    assert_eq!(drinks_per_week(&input(&[], None)), Err(DRINKS_AT_ALL));
    assert_eq!(drinks_per_week(&drinking(9)), Ok(9.0));
}

#[test]
fn the_clinics_limit_is_reached_at_the_cutoff_not_below() {
    let below = score(drinking(14));
    let drinks = &below.scores[DRINKS_SCORE];
    assert_eq!(drinks.value, Some(14.0));
    assert_eq!(drinks.status, None);
    assert_eq!(
        drinks.interpretation.as_deref(),
        Some("below the clinic's limit of 15 a week")
    );
    assert_eq!(below.attention, Some(vec![]));

    let at = score(drinking(15));
    let drinks = &at.scores[DRINKS_SCORE];
    assert_eq!(drinks.status, Some(ScoreStatus::Attention));
    assert_eq!(drinks.norm.as_deref(), Some(">= 15"));
    assert_eq!(
        drinks.interpretation.as_deref(),
        Some("at or above the clinic's limit of 15 a week")
    );
    assert_eq!(at.attention, Some(vec![DRINKS.to_owned()]));
}

#[test]
fn the_limit_is_read_from_the_definition_and_without_one_nothing_is_flagged() {
    let mut strict = drinking(8);
    strict.questionnaire.scores[0].cutoff = Some(8.0);
    assert_eq!(
        score(strict).scores[DRINKS_SCORE].status,
        Some(ScoreStatus::Attention)
    );
    let mut none = drinking(100);
    none.questionnaire.scores[0].cutoff = None;
    let output = score(none);
    let drinks = &output.scores[DRINKS_SCORE];
    assert_eq!(drinks.value, Some(100.0));
    assert_eq!(drinks.status, None);
    assert_eq!(drinks.interpretation, None);
    assert_eq!(output.attention, Some(vec![]));
}

#[test]
fn wanting_to_talk_about_drinking_asks_for_attention() {
    let mut wants = drinking(20);
    wants
        .typed_answers
        .insert(TALK_ABOUT_DRINKING.into(), Some(text(YES)));
    assert_eq!(
        score(wants).attention,
        Some(vec![DRINKS.to_owned(), TALK_ABOUT_DRINKING.to_owned()])
    );
    let mut declines = drinking(3);
    declines
        .typed_answers
        .insert(TALK_ABOUT_DRINKING.into(), Some(text(NO)));
    assert_eq!(score(declines).attention, Some(vec![]));
}

#[test]
fn there_is_no_alarm() {
    assert_eq!(score(drinking(150)).alarm, None);
}

#[test]
fn completion_is_the_share_answered_of_the_required_questions_asked() {
    // "None of these" and "No": other-namely, onset and the two drinking
    // questions not asked; checklist, sleep, occupation and drinking
    // answered: complete.
    let answered = input(
        &[
            (CHECKLIST, keys(&[NONE_OF_THESE])),
            (SLEEP, AnswerValue::Decimal(7.0)),
            ("v_5", text("a1")),
            (DRINKS_AT_ALL, text(NO)),
        ],
        Some(15.0),
    );
    let skipped = skipping(answered, &["v_2", "v_3", "v_7", "v_8"]);
    assert_eq!(completion(&skipped), 1.0);
    // "Other" ticked and not named, the rest of the first four answered:
    // five of the six asked.
    let unnamed = input(
        &[
            (CHECKLIST, keys(&["a7"])),
            ("v_3", text("2025-01")),
            (SLEEP, AnswerValue::Decimal(7.0)),
            ("v_5", text("a1")),
            (DRINKS_AT_ALL, text(NO)),
        ],
        Some(15.0),
    );
    assert_eq!(completion(&skipping(unnamed, &["v_7", "v_8"])), 5.0 / 6.0);
    // Nothing answered: the conditions leave out v_2, v_3, v_7 and v_8,
    // and none of the other four is answered.
    let nothing = skipping(input(&[], None), &["v_2", "v_3", "v_7", "v_8"]);
    assert_eq!(completion(&nothing), 0.0);
    // Everything asked (a contract-1 input says nothing): 1 of 8.
    let one = input(&[(CHECKLIST, keys(&["a1"]))], None);
    assert_eq!(completion(&one), 1.0 / 8.0);
}

#[test]
fn the_optional_free_text_does_not_count_for_completion() {
    let mut with_text = input(&[], None);
    with_text
        .typed_answers
        .insert("v_9".into(), Some(text("I work nights.")));
    assert_eq!(completion(&with_text), 0.0);
}
