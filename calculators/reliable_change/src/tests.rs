use super::*;
use plugin_sdk::Norm;

fn info(
    reliability: Option<f64>,
    sd: Option<f64>,
    cutoff: Option<f64>,
    tonality: Tonality,
) -> ScoreInfo {
    ScoreInfo {
        key: "total".into(),
        label: "Total score".into(),
        items: Vec::new(),
        norm: Some(Norm {
            mean: 2.91,
            sd: 3.52,
        }),
        reliability,
        sd,
        cutoff,
        tonality,
        episode: None,
    }
}

fn phq9() -> Method {
    Method::from_definition(&info(
        Some(0.84),
        Some(3.52),
        Some(10.0),
        Tonality::HigherIsWorse,
    ))
    .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn fixtures() {
    plugin_sdk::testing::check_fixtures(env!("CARGO_MANIFEST_DIR"), super::call_json);
}

#[test]
fn s_diff_follows_jacobson_and_truax() {
    // √2 × 3.52 × √(1 − 0.84) = √2 × 3.52 × 0.4 = 1.9912
    let method = phq9();
    assert!((method.s_diff - 1.991_2).abs() < 1e-4, "{}", method.s_diff);
    assert!((method.threshold() - 3.902_8).abs() < 1e-4);
}

#[test]
fn reliable_only_above_1_96() {
    let method = phq9();
    // 3 points: RCI −1.51, not reliable; 4 points: RCI −2.01, reliable.
    let three = method.compare((1, "a", 12.0), (2, "b", 9.0));
    assert_eq!(
        (three.rci, three.reliable, three.category),
        (-1.51, false, Category::Unchanged)
    );
    assert_eq!(three.direction, Direction::Improved);
    let four = method.compare((1, "a", 12.0), (2, "b", 8.0));
    assert_eq!((four.rci, four.reliable), (-2.01, true));
}

#[test]
fn recovery_needs_reliable_improvement_across_the_cutoff() {
    let method = phq9();
    let recovered = method.compare((1, "a", 15.0), (2, "b", 9.0));
    assert_eq!(recovered.clinically_significant, Some(true));
    assert_eq!(recovered.category, Category::Recovered);
    // Reliable, but still at the cut-off: improved only.
    let improved = method.compare((1, "a", 20.0), (2, "b", 10.0));
    assert_eq!(improved.clinically_significant, Some(false));
    assert_eq!(improved.category, Category::Improved);
    // Crosses the cut-off but is not reliable.
    let small = method.compare((1, "a", 11.0), (2, "b", 9.0));
    assert_eq!(
        (small.clinically_significant, small.category),
        (Some(false), Category::Unchanged)
    );
}

#[test]
fn deterioration_is_a_reliable_move_away_from_health() {
    let worse = phq9().compare((1, "a", 5.0), (2, "b", 12.0));
    assert_eq!(
        (worse.direction, worse.category),
        (Direction::Deteriorated, Category::Deteriorated)
    );
    assert_eq!(worse.clinically_significant, Some(false));
}

#[test]
fn higher_is_better_reverses_the_direction_and_the_clinical_side() {
    // WHO-5 percentage-like: cut-off 50 is the first healthy value.
    let method = Method::from_definition(&info(
        Some(0.8),
        Some(20.0),
        Some(50.0),
        Tonality::HigherIsBetter,
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let up = method.compare((1, "a", 28.0), (2, "b", 60.0));
    assert_eq!(
        (up.direction, up.category),
        (Direction::Improved, Category::Recovered)
    );
    let down = method.compare((1, "a", 60.0), (2, "b", 20.0));
    assert_eq!(
        (down.direction, down.category),
        (Direction::Deteriorated, Category::Deteriorated)
    );
}

#[test]
fn no_cutoff_leaves_clinical_significance_unknown() {
    let method =
        Method::from_definition(&info(Some(0.84), Some(3.52), None, Tonality::HigherIsWorse))
            .unwrap_or_else(|e| panic!("{e}"));
    let c = method.compare((1, "a", 20.0), (2, "b", 2.0));
    assert_eq!(
        (c.clinically_significant, c.category),
        (None, Category::Improved)
    );
}

#[test]
fn unusable_definitions_give_a_reason() {
    let reason = |r, sd| Method::from_definition(&info(r, sd, None, Tonality::HigherIsWorse)).err();
    assert_eq!(
        reason(None, Some(3.0)).as_deref(),
        Some("no reliability in the definition")
    );
    assert_eq!(
        reason(Some(0.8), None).as_deref(),
        Some("no sd in the definition")
    );
    assert!(reason(Some(1.0), Some(3.0)).is_some());
    assert!(reason(Some(-0.1), Some(3.0)).is_some());
    assert!(reason(Some(0.8), Some(0.0)).is_some());
    assert!(reason(Some(f64::NAN), Some(3.0)).is_some());
}

#[test]
fn empty_input_gives_no_scores() {
    let input = CalculatorInput {
        responses: Vec::new(),
        questionnaires: BTreeMap::new(),
    };
    let Ok(results) = calculate(input);
    assert!(results.scores.is_empty());
}
