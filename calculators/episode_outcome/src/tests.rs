use super::*;
use plugin_sdk::{OutcomeInfo, Score};

#[test]
fn fixtures() {
    plugin_sdk::testing::check_fixtures(env!("CARGO_MANIFEST_DIR"), super::call_json);
}

fn thresholds() -> EpisodeInfo {
    EpisodeInfo {
        version: "1".into(),
        response_drop: 0.5,
        remission_below: 5.0,
        baseline_at_least: None,
        window_days: [14, 180],
        source: "test".into(),
    }
}

fn score(tonality: Tonality) -> ScoreInfo {
    ScoreInfo {
        key: "total".into(),
        label: "Total".into(),
        items: Vec::new(),
        norm: None,
        reliability: Some(0.84),
        sd: Some(3.52),
        cutoff: Some(10.0),
        tonality,
        episode: Some(thresholds()),
    }
}

fn response(id: i64, completed_at: &str, value: f64) -> ResponseInfo {
    ResponseInfo {
        id,
        questionnaire_key: "q".into(),
        completed_at: completed_at.into(),
        values: BTreeMap::new(),
        outcome: OutcomeInfo {
            scores: BTreeMap::from([("total".to_string(), Score::of(value))]),
            ..OutcomeInfo::default()
        },
    }
}

fn run(tonality: Tonality, responses: Vec<ResponseInfo>) -> ScoreEpisodes {
    let input = CalculatorInput {
        responses,
        questionnaires: BTreeMap::from([(
            "q".to_string(),
            QuestionnaireInfo {
                key: "q".into(),
                name: "Q".into(),
                questions: Vec::new(),
                scores: vec![score(tonality)],
            },
        )]),
    };
    let Ok(mut results) = calculate(input);
    results.scores.remove(0)
}

#[test]
fn days_are_whole_24_hour_periods_between_instants_whatever_the_offset() {
    // 23:30 on day 14 in +02:00 is 21:30 UTC: 13 days 12.5 hours after
    // the baseline, not yet in the window; 14 days later to the second is.
    let entry = run(
        Tonality::HigherIsWorse,
        vec![
            response(1, "2026-03-01T09:00:00Z", 12.0),
            response(2, "2026-03-14T23:30:00+02:00", 4.0),
            response(3, "2026-03-15T11:00:00.250+02:00", 6.0),
        ],
    );
    let episode = &entry.episodes[0];
    assert_eq!(episode.follow_up.as_ref().map(|f| f.response_id), Some(3));
    assert_eq!(episode.days_between, Some(14));
    assert_eq!(episode.responses_in_window, 1);
    assert_eq!(episode.response, Some(true));
    assert_eq!(episode.remission, Some(false));
}

#[test]
fn responses_come_in_any_order_and_are_read_oldest_first() {
    let entry = run(
        Tonality::HigherIsWorse,
        vec![
            response(2, "2026-03-31T09:00:00Z", 3.0),
            response(1, "2026-03-01T09:00:00Z", 12.0),
        ],
    );
    assert_eq!(entry.episodes.len(), 1);
    assert_eq!(entry.episodes[0].baseline.response_id, 1);
    assert_eq!(entry.episodes[0].remission, Some(true));
}

#[test]
fn thresholds_on_a_score_where_higher_is_better_are_not_applied() {
    let entry = run(
        Tonality::HigherIsBetter,
        vec![
            response(1, "2026-03-01T09:00:00Z", 12.0),
            response(2, "2026-03-31T09:00:00Z", 3.0),
        ],
    );
    assert!(entry.episodes.is_empty());
    assert_eq!(
        entry.reason.as_deref(),
        Some("episode thresholds apply only to a score where higher is worse")
    );
}

#[test]
fn a_reliability_of_one_gives_no_reliable_change_rather_than_dividing_by_zero() {
    let rules = Rules::new(&thresholds(), Some(1.0), Some(3.52));
    assert_eq!(rules.s_diff, None);
    let rules = Rules::new(&thresholds(), Some(0.84), Some(0.0));
    assert_eq!(rules.s_diff, None);
}

#[test]
fn a_rise_is_no_response_and_a_deterioration() {
    let entry = run(
        Tonality::HigherIsWorse,
        vec![
            response(1, "2026-03-01T09:00:00Z", 8.0),
            response(2, "2026-04-01T09:00:00Z", 16.0),
        ],
    );
    let episode = &entry.episodes[0];
    assert_eq!(episode.relative_drop, Some(-1.0));
    assert_eq!(episode.response, Some(false));
    let change = episode
        .reliable_change
        .as_ref()
        .map(|c| (c.reliable, c.direction));
    assert_eq!(change, Some((true, Direction::Deteriorated)));
}

#[test]
fn an_episode_that_starts_below_the_eligibility_cut_off_is_not_judged() {
    let eligible = EpisodeInfo {
        baseline_at_least: Some(10.0),
        ..thresholds()
    };
    let rules = Rules::new(&eligible, Some(0.84), Some(3.52));
    let day = 86_400;
    let point = |id: i64, at: i64, value: f64| Point {
        response_id: id,
        completed_at: String::new(),
        value,
        at: (at, 0),
    };
    // 9 then 2: below the cut-off, so neither response nor remission,
    // though the drop is 78% and 2 is below 5; reliable change still is.
    let below = rules.episodes(&[point(1, 0, 9.0), point(2, 30 * day, 2.0)]);
    assert_eq!(below[0].response, None);
    assert_eq!(below[0].remission, None);
    assert_eq!(below[0].relative_drop, Some(0.78));
    assert!(below[0].reliable_change.is_some());
    assert_eq!(
        below[0].note.as_deref(),
        Some("baseline below 10: not eligible for response or remission")
    );
    // Exactly at the cut-off: judged.
    let at = rules.episodes(&[point(1, 0, 10.0), point(2, 30 * day, 4.0)]);
    assert_eq!((at[0].response, at[0].remission), (Some(true), Some(true)));
    assert_eq!(at[0].note, None);
}
