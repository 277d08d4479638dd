//! Scorer of the PCL-5, the PTSD Checklist for DSM-5: the `total` symptom
//! severity (0–80) from items `v_1`..`v_20`, the four DSM-5 cluster sums
//! (`intrusion` B, `avoidance` C, `cognition_mood` D, `arousal` E), the
//! probable-PTSD cut-off, the DSM-5 provisional-diagnosis rule, and
//! completion.
//!
//! Sources:
//! - Weathers FW, Litz BT, Keane TM, Palmieri PA, Marx BP, Schnurr PP. The
//!   PTSD Checklist for DSM-5 (PCL-5). National Center for PTSD, 2013
//!   (items, 0–4 option values).
//! - National Center for PTSD. Using the PTSD Checklist for DSM-5 (PCL-5)
//!   (the guide to the PCL-5 of Weathers et al. 2013, ptsd.va.gov): total
//!   = sum of the 20 items (0–80); cluster sums B = items 1–5, C = 6–7,
//!   D = 8–14, E = 15–20; initial research suggests a total of 31–33
//!   indicates probable PTSD; a provisional diagnosis treats each item
//!   rated 2 ("moderately") or higher as an endorsed symptom and follows the
//!   DSM-5 rule of at least 1 B, 1 C, 2 D and 2 E symptoms. The same rules
//!   are given by the Australian Comorbidity Guidelines (PCL-5: scoring and
//!   interpretation), which add that a patient who meets a provisional
//!   diagnosis by either method needs further assessment (e.g. CAPS-5).
//! - Blevins CA, Weathers FW, Davis MT, Witte TK, Domino JL. The
//!   Posttraumatic Stress Disorder Checklist for DSM-5 (PCL-5): development
//!   and initial psychometric evaluation. J Trauma Stress
//!   2015;28(6):489-498.
//! - Bovin MJ, Marx BP, Weathers FW, et al. Psychometric properties of the
//!   PTSD Checklist for DSM-5 (PCL-5) in veterans. Psychol Assess
//!   2016;28(11):1379-1391 (31–33 optimally efficient against the CAPS-5).
//!
//! Unanswered items: no source we could find (the National Center's
//! handout included) allows prorating the PCL-5, so a score with any of its
//! items unanswered has no value and lists the missing items. The DSM-5
//! rule is still reported when the answered items settle it (see
//! [`Criterion`]). Probable PTSD is reported too when it is certain: items
//! only add points (0–4), so the sum of the answered items is the lowest
//! total the response can reach whatever the missing answers, and when
//! that floor reaches 33 the total carries `attention` and says so ("at
//! least 72 from the answered items: probable PTSD"); no value is
//! invented. That is a service rule, not the National Center's: it applies
//! the published cut-off to the lowest total the response could still
//! have. The cluster scores have no cut-off, so no such rule.
//!
//! The PCL-5 defines no item-level alarm or attention rule, so `alarm` and
//! `attention` are `None`; the total itself carries `attention` when PTSD
//! is probable or provisionally diagnosed.
//!
//! Interpretation texts are lower-case except for proper abbreviations and
//! names: "PTSD", "DSM-5" and the DSM-5 criterion letters ("criterion B").

use plugin_sdk::scoring;
use plugin_sdk::{Score, ScoreStatus, ScorerInput, ScorerOutput};

/// All scored items, in form order.
const ITEMS: [&str; 20] = [
    "v_1", "v_2", "v_3", "v_4", "v_5", "v_6", "v_7", "v_8", "v_9", "v_10", "v_11", "v_12", "v_13",
    "v_14", "v_15", "v_16", "v_17", "v_18", "v_19", "v_20",
];

/// A DSM-5 symptom cluster: its score key, its criterion letter, its items
/// and how many of them must be endorsed (National Center for PTSD, Using
/// the PCL-5).
#[derive(Debug)]
struct Cluster {
    key: &'static str,
    criterion: &'static str,
    items: &'static [&'static str],
    required: usize,
}

/// B = items 1–5 (1 needed), C = 6–7 (1), D = 8–14 (2), E = 15–20 (2).
const CLUSTERS: [Cluster; 4] = [
    Cluster {
        key: "intrusion",
        criterion: "B",
        items: &["v_1", "v_2", "v_3", "v_4", "v_5"],
        required: 1,
    },
    Cluster {
        key: "avoidance",
        criterion: "C",
        items: &["v_6", "v_7"],
        required: 1,
    },
    Cluster {
        key: "cognition_mood",
        criterion: "D",
        items: &["v_8", "v_9", "v_10", "v_11", "v_12", "v_13", "v_14"],
        required: 2,
    },
    Cluster {
        key: "arousal",
        criterion: "E",
        items: &["v_15", "v_16", "v_17", "v_18", "v_19", "v_20"],
        required: 2,
    },
];

/// An item rated 2 ("moderately") or higher counts as an endorsed symptom
/// (National Center for PTSD, Using the PCL-5).
const ENDORSED: f64 = 2.0;

/// Probable PTSD from a total of 33: the upper end of the 31–33 range of
/// the National Center for PTSD ("Using the PCL-5") and Bovin et al.
/// (2016), the value questionnaires.md lists.
const CUTOFF: f64 = 33.0;

/// Whether a DSM-5 criterion (or the whole rule) is met by the answers.
/// Endorsing more items can only meet a criterion, never unmeet it, so
/// with items unanswered the answer is still certain when the answered
/// items already meet it, or when even endorsing every unanswered item
/// could not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Criterion {
    Met,
    NotMet,
    Undetermined,
}

impl Criterion {
    /// The criterion for `values` when `required` endorsed items are needed.
    fn of(values: &[Option<f64>], required: usize) -> Criterion {
        let endorsed = scoring::count_at_or_above(values, ENDORSED);
        let unanswered = values.len() - scoring::answered(values);
        if endorsed >= required {
            Criterion::Met
        } else if endorsed + unanswered < required {
            Criterion::NotMet
        } else {
            Criterion::Undetermined
        }
    }

    /// All criteria together: met when every one is, not met when any is
    /// not.
    fn all(criteria: &[Criterion]) -> Criterion {
        if criteria.contains(&Criterion::NotMet) {
            Criterion::NotMet
        } else if criteria.iter().all(|c| *c == Criterion::Met) {
            Criterion::Met
        } else {
            Criterion::Undetermined
        }
    }

    /// The text (lower-case but for `subject`'s proper names), or `None`
    /// when undetermined.
    fn text(self, subject: &str) -> Option<String> {
        match self {
            Criterion::Met => Some(format!("{subject} met")),
            Criterion::NotMet => Some(format!("{subject} not met")),
            Criterion::Undetermined => None,
        }
    }
}

fn score(input: ScorerInput) -> ScorerOutput {
    let mut output = ScorerOutput::default();
    let mut criteria = Vec::with_capacity(CLUSTERS.len());
    for cluster in &CLUSTERS {
        let values = input.values_of(cluster.items);
        let criterion = Criterion::of(&values, cluster.required);
        criteria.push(criterion);
        let mut score = match scoring::sum(&values) {
            Some(sum) => Score::of(sum),
            None => Score::missing(scoring::missing(&input, cluster.items)),
        };
        score.interpretation = criterion.text(&format!("criterion {}", cluster.criterion));
        output.scores.insert(cluster.key.into(), score);
    }

    let values = input.values_of(&ITEMS);
    let rule = Criterion::all(&criteria);
    let total = match scoring::sum(&values) {
        Some(total) => total_score(total, rule),
        None => incomplete_total_score(scoring::missing(&input, &ITEMS), floor(&values), rule),
    };
    output.scores.insert("total".into(), total);
    output.alarm = None;
    output.attention = None;
    output.completion = Some(scoring::completion(&values));
    output
}

/// The total of a complete response: the cut-off band and the DSM-5 rule
/// in the interpretation, attention when either points to PTSD, since
/// meeting a provisional diagnosis by either method calls for further
/// assessment (Comorbidity Guidelines, PCL-5 scoring and interpretation).
fn total_score(total: f64, rule: Criterion) -> Score {
    let band = if total >= CUTOFF {
        "probable PTSD"
    } else {
        "below the probable PTSD cut-off"
    };
    let mut score = Score::of(total);
    score.interpretation = Some(match rule.text("DSM-5 symptom criteria") {
        Some(rule) => format!("{band}; {rule}"),
        None => band.to_string(),
    });
    score.norm = Some(">= 33".to_string());
    if total >= CUTOFF || rule == Criterion::Met {
        score.status = Some(ScoreStatus::Attention);
    }
    score
}

/// The lowest total a response with unanswered items can still reach: the
/// sum of its answered items, as an unanswered item adds at least 0 ("not
/// at all"). Not a score: it only decides whether the cut-off is reached
/// whatever the missing answers.
fn floor(values: &[Option<f64>]) -> f64 {
    scoring::sum_answered(values)
}

/// The total when items are unanswered: no value, but probable PTSD when
/// the floor already reaches the cut-off and the DSM-5 rule when the
/// answered items settle it, with attention when either points to PTSD,
/// so neither is hidden by a skipped item.
fn incomplete_total_score(missing: Vec<String>, floor: f64, rule: Criterion) -> Score {
    let mut score = Score::missing(missing);
    let probable = floor >= CUTOFF;
    let band = probable.then(|| format!("at least {floor} from the answered items: probable PTSD"));
    score.interpretation = match (band, rule.text("DSM-5 symptom criteria")) {
        (Some(band), Some(rule)) => Some(format!("{band}; {rule}")),
        (band, rule) => band.or(rule),
    };
    if probable || rule == Criterion::Met {
        score.status = Some(ScoreStatus::Attention);
    }
    score
}

// Works on `values` alone: the host need not send the questions.
plugin_sdk::export_scorer!(
    score,
    questionnaires = ["pcl5"],
    questions = false,
    answers = false
);

#[cfg(test)]
mod tests {

    use super::*;

    /// A response with item `n` (1-based) answered `values[n - 1]`.
    fn input(values: [Option<f64>; 20]) -> ScorerInput {
        plugin_sdk::testing::scorer_input("pcl5", ITEMS.into_iter().zip(values))
    }

    fn all(value: f64) -> [Option<f64>; 20] {
        [Some(value); 20]
    }

    fn value(output: &ScorerOutput, key: &str) -> Option<f64> {
        output.scores[key].value
    }

    fn interpretation<'a>(output: &'a ScorerOutput, key: &str) -> Option<&'a str> {
        output.scores[key].interpretation.as_deref()
    }

    #[test]
    fn fixtures() {
        plugin_sdk::testing::check_fixtures(env!("CARGO_MANIFEST_DIR"), super::call_json);
    }

    #[test]
    fn total_and_clusters_are_sums_of_their_items() {
        let output = score(input(all(4.0)));
        assert_eq!(value(&output, "total"), Some(80.0));
        assert_eq!(value(&output, "intrusion"), Some(20.0));
        assert_eq!(value(&output, "avoidance"), Some(8.0));
        assert_eq!(value(&output, "cognition_mood"), Some(28.0));
        assert_eq!(value(&output, "arousal"), Some(24.0));
        let output = score(input(all(0.0)));
        assert_eq!(value(&output, "total"), Some(0.0));
        assert_eq!(value(&output, "arousal"), Some(0.0));
    }

    #[test]
    fn cluster_items_follow_dsm5_criteria() {
        // Only item 6 (cluster C) answered above 0: only avoidance moves.
        let mut values = all(0.0);
        values[5] = Some(3.0);
        let output = score(input(values));
        assert_eq!(value(&output, "intrusion"), Some(0.0));
        assert_eq!(value(&output, "avoidance"), Some(3.0));
        assert_eq!(value(&output, "cognition_mood"), Some(0.0));
        assert_eq!(value(&output, "arousal"), Some(0.0));
        // Items 5, 7, 14 and 15 are the last or first of their clusters.
        let mut values = all(0.0);
        values[4] = Some(1.0);
        values[6] = Some(2.0);
        values[13] = Some(3.0);
        values[14] = Some(4.0);
        let output = score(input(values));
        assert_eq!(value(&output, "intrusion"), Some(1.0));
        assert_eq!(value(&output, "avoidance"), Some(2.0));
        assert_eq!(value(&output, "cognition_mood"), Some(3.0));
        assert_eq!(value(&output, "arousal"), Some(4.0));
    }

    #[test]
    fn cutoff_33_is_probable_ptsd_and_32_is_not() {
        let below = total_score(32.0, Criterion::NotMet);
        assert_eq!(
            below.interpretation.as_deref(),
            Some("below the probable PTSD cut-off; DSM-5 symptom criteria not met")
        );
        assert_eq!(below.status, None);
        assert_eq!(below.norm.as_deref(), Some(">= 33"));
        let at = total_score(33.0, Criterion::NotMet);
        assert_eq!(
            at.interpretation.as_deref(),
            Some("probable PTSD; DSM-5 symptom criteria not met")
        );
        assert_eq!(at.status, Some(ScoreStatus::Attention));
    }

    #[test]
    fn dsm5_rule_met_below_the_cutoff_still_needs_attention() {
        let score = total_score(6.0, Criterion::Met);
        assert_eq!(
            score.interpretation.as_deref(),
            Some("below the probable PTSD cut-off; DSM-5 symptom criteria met")
        );
        assert_eq!(score.status, Some(ScoreStatus::Attention));
        let both = total_score(80.0, Criterion::Met);
        assert_eq!(
            both.interpretation.as_deref(),
            Some("probable PTSD; DSM-5 symptom criteria met")
        );
    }

    /// Exactly the DSM-5 minimum at 2: one B, one C, two D, two E.
    fn minimum_rule() -> [Option<f64>; 20] {
        let mut values = all(0.0);
        for item in [1, 6, 8, 9, 15, 16] {
            values[item - 1] = Some(2.0);
        }
        values
    }

    #[test]
    fn minimal_endorsement_meets_the_rule() {
        let output = score(input(minimum_rule()));
        assert_eq!(value(&output, "total"), Some(12.0));
        assert_eq!(
            interpretation(&output, "total"),
            Some("below the probable PTSD cut-off; DSM-5 symptom criteria met")
        );
        assert_eq!(
            interpretation(&output, "intrusion"),
            Some("criterion B met")
        );
        assert_eq!(
            interpretation(&output, "avoidance"),
            Some("criterion C met")
        );
        assert_eq!(
            interpretation(&output, "cognition_mood"),
            Some("criterion D met")
        );
        assert_eq!(interpretation(&output, "arousal"), Some("criterion E met"));
    }

    #[test]
    fn each_cluster_one_short_fails_the_rule() {
        // Lower one endorsed item of each cluster to 1 in turn.
        for (item, key, criterion) in [
            (1, "intrusion", "criterion B not met"),
            (6, "avoidance", "criterion C not met"),
            (9, "cognition_mood", "criterion D not met"),
            (16, "arousal", "criterion E not met"),
        ] {
            let mut values = minimum_rule();
            values[item - 1] = Some(1.0);
            let output = score(input(values));
            assert_eq!(interpretation(&output, key), Some(criterion), "item {item}");
            assert_eq!(
                interpretation(&output, "total"),
                Some("below the probable PTSD cut-off; DSM-5 symptom criteria not met"),
                "item {item}"
            );
            assert_eq!(output.scores["total"].status, None, "item {item}");
        }
    }

    #[test]
    fn items_rated_1_are_not_endorsed() {
        // Everything at 1: total 20, no symptom endorsed.
        let output = score(input(all(1.0)));
        assert_eq!(value(&output, "total"), Some(20.0));
        assert_eq!(
            interpretation(&output, "total"),
            Some("below the probable PTSD cut-off; DSM-5 symptom criteria not met")
        );
        assert_eq!(
            interpretation(&output, "intrusion"),
            Some("criterion B not met")
        );
    }

    #[test]
    fn an_unanswered_item_leaves_its_cluster_and_the_total_without_value() {
        let mut values = all(1.0);
        values[6] = None;
        let output = score(input(values));
        assert_eq!(value(&output, "total"), None);
        assert_eq!(
            output.scores["total"].missing_values,
            Some(vec!["v_7".to_string()])
        );
        assert_eq!(value(&output, "avoidance"), None);
        assert_eq!(
            output.scores["avoidance"].missing_values,
            Some(vec!["v_7".to_string()])
        );
        assert_eq!(value(&output, "intrusion"), Some(5.0));
        assert_eq!(value(&output, "cognition_mood"), Some(7.0));
        assert_eq!(value(&output, "arousal"), Some(6.0));
        assert_eq!(output.completion, Some(0.95));
    }

    #[test]
    fn the_rule_is_reported_when_the_answered_items_settle_it() {
        // Met despite a missing item: attention on a total without value.
        let mut values = minimum_rule();
        values[19] = None;
        let output = score(input(values));
        let total = &output.scores["total"];
        assert_eq!(total.value, None);
        assert_eq!(
            total.interpretation.as_deref(),
            Some("DSM-5 symptom criteria met")
        );
        assert_eq!(total.status, Some(ScoreStatus::Attention));
        // Not met whatever the missing item: cluster C both at 0, item 20 missing.
        let mut values = all(0.0);
        values[19] = None;
        let output = score(input(values));
        let total = &output.scores["total"];
        assert_eq!(
            total.interpretation.as_deref(),
            Some("DSM-5 symptom criteria not met")
        );
        assert_eq!(total.status, None);
        // Undetermined: item 6 missing, item 7 at 0, the rest meets the rule.
        let mut values = minimum_rule();
        values[5] = None;
        let output = score(input(values));
        let total = &output.scores["total"];
        assert_eq!(total.interpretation, None);
        assert_eq!(total.status, None);
        assert_eq!(output.scores["avoidance"].interpretation, None);
    }

    #[test]
    fn the_floor_is_the_sum_of_the_answered_items() {
        assert_eq!(floor(&[Some(4.0), None, Some(1.0)]), 5.0);
        assert_eq!(floor(&[None; 20]), 0.0);
    }

    #[test]
    fn a_floor_at_the_cutoff_is_probable_ptsd_without_a_value() {
        // Both avoidance items blank, the other 18 at 4: at least 72; the
        // rule is undetermined (criterion C could go either way).
        let mut values = all(4.0);
        values[5] = None;
        values[6] = None;
        let output = score(input(values));
        let total = &output.scores["total"];
        assert_eq!(total.value, None);
        assert_eq!(
            total.missing_values,
            Some(vec!["v_6".to_string(), "v_7".to_string()])
        );
        assert_eq!(
            total.interpretation.as_deref(),
            Some("at least 72 from the answered items: probable PTSD")
        );
        assert_eq!(total.status, Some(ScoreStatus::Attention));
        assert_eq!(output.scores["avoidance"].interpretation, None);
        assert_eq!(output.scores["avoidance"].status, None);
        // Exactly 33 with the rule not met: both said, attention.
        let at = incomplete_total_score(vec!["v_20".into()], 33.0, Criterion::NotMet);
        assert_eq!(
            at.interpretation.as_deref(),
            Some(
                "at least 33 from the answered items: probable PTSD; DSM-5 symptom criteria not met"
            )
        );
        assert_eq!(at.status, Some(ScoreStatus::Attention));
        // 32: only the rule, no attention.
        let below = incomplete_total_score(vec!["v_20".into()], 32.0, Criterion::NotMet);
        assert_eq!(
            below.interpretation.as_deref(),
            Some("DSM-5 symptom criteria not met")
        );
        assert_eq!(below.status, None);
        let undetermined =
            incomplete_total_score(vec!["v_6".into()], 32.0, Criterion::Undetermined);
        assert_eq!(undetermined.interpretation, None);
        assert_eq!(undetermined.status, None);
    }

    #[test]
    fn criterion_counts_unanswered_items_as_possible_endorsements() {
        assert_eq!(Criterion::of(&[Some(2.0), None], 1), Criterion::Met);
        assert_eq!(
            Criterion::of(&[Some(1.0), None], 1),
            Criterion::Undetermined
        );
        assert_eq!(Criterion::of(&[Some(1.0), Some(1.0)], 1), Criterion::NotMet);
        assert_eq!(
            Criterion::of(&[Some(4.0), None, Some(0.0)], 2),
            Criterion::Undetermined
        );
        assert_eq!(
            Criterion::of(&[Some(4.0), Some(0.0), Some(0.0)], 2),
            Criterion::NotMet
        );
        assert_eq!(Criterion::of(&[None, None], 2), Criterion::Undetermined);
        use Criterion::*;
        assert_eq!(Criterion::all(&[Met, Met, Met, Met]), Met);
        assert_eq!(Criterion::all(&[Met, Undetermined, Met, Met]), Undetermined);
        assert_eq!(Criterion::all(&[Met, Undetermined, NotMet, Met]), NotMet);
    }

    #[test]
    fn nothing_answered_gives_no_values_and_no_rule() {
        let output = score(input([None; 20]));
        assert_eq!(value(&output, "total"), None);
        assert_eq!(
            output.scores["total"].missing_values.as_ref().map(Vec::len),
            Some(20)
        );
        assert_eq!(output.scores["total"].interpretation, None);
        assert_eq!(output.completion, Some(0.0));
        assert_eq!(output.alarm, None);
        assert_eq!(output.attention, None);
    }

    #[test]
    fn manifest_names_the_questionnaire() {
        let manifest = manifest();
        assert_eq!(manifest.name, "pcl5");
        assert_eq!(manifest.questionnaires, ["pcl5"]);
    }
}
