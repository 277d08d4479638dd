//! Scorer of the AUDIT, the WHO Alcohol Use Disorders Identification Test:
//! the `total` (0–40) with its risk zone, the `consumption` (questions 1–3)
//! and `dependence` (questions 4–6) sub-scores, the answers that call for
//! the next level of intervention, and completion.
//!
//! Source of every rule: Babor TF, Higgins-Biddle JC, Saunders JB,
//! Monteiro MG. AUDIT: The Alcohol Use Disorders Identification Test.
//! Guidelines for Use in Primary Care. 2nd ed. Geneva: World Health
//! Organization; 2001 (WHO/MSD/MSB/01.6a), "the manual" below:
//! - points per answer as printed in the interview version: 0–4 for
//!   questions 1–8, 0/2/4 for questions 9 and 10; the total is their sum;
//! - the domains: questions 1–3 hazardous alcohol use (consumption), 4–6
//!   dependence symptoms, 7–10 harmful alcohol use;
//! - the skip instructions of the interview version: after "Never" on
//!   question 1, and when questions 2 and 3 score 0 together, questions up
//!   to 8 are not asked and go on to 9 and 10;
//! - the risk zones (Zone I 0–7, II 8–15, III 16–19, IV 20–40) with the
//!   manual's reading of them: scores of 8–15 call for simple advice on
//!   reducing hazardous drinking, 16–19 for brief counselling and continued
//!   monitoring, 20 or more "clearly warrant further diagnostic evaluation
//!   for alcohol dependence";
//! - the cut-off: 8 or more indicates hazardous and harmful alcohol use as
//!   well as possible dependence; one point lower, 7, for women and for men
//!   over 65 "will increase sensitivity for these population groups";
//! - the table of zones' note: "Provide the next highest level of
//!   intervention to patients who score 2 or more on Questions 4, 5 and 6,
//!   or 4 on Questions 9 or 10", which gives the attention list.
//!
//! The manual says nothing about unanswered questions beyond the skip
//! instructions: it sums every answer and prorates nothing. So a question
//! neither answered nor skipped by those instructions leaves its scores
//! without a value (`missing_values`).
//!
//! Not implemented, for lack of a rule in the manual: bands or cut-offs of
//! the sub-scores (the AUDIT-C cut-offs belong to the separately validated
//! three-question AUDIT-C), an alarm (the manual's most urgent step, zone
//! IV, is referral for diagnostic evaluation, not an emergency), t-scores
//! (no norm population is given).

use plugin_sdk::scoring::{self, Band};
use plugin_sdk::{Score, ScoreStatus, ScorerInput, ScorerOutput};

/// All ten questions, in form order.
const ITEMS: [&str; 10] = [
    "v_1", "v_2", "v_3", "v_4", "v_5", "v_6", "v_7", "v_8", "v_9", "v_10",
];

/// Questions 1–3, hazardous alcohol use (the manual's domains).
const CONSUMPTION: [&str; 3] = ["v_1", "v_2", "v_3"];

/// Questions 4–6, dependence symptoms (the manual's domains).
const DEPENDENCE: [&str; 3] = ["v_4", "v_5", "v_6"];

/// Questions 9 and 10, alcohol-related injury and others' concern.
const HARM: [&str; 2] = ["v_9", "v_10"];

/// "Never" on question 1 skips questions 2–8 (interview version).
const SKIPPED_AFTER_NEVER: std::ops::RangeInclusive<usize> = 2..=8;

/// Questions 2 and 3 scoring 0 together skip questions 4–8.
const SKIPPED_AFTER_LIGHT_DRINKING: std::ops::RangeInclusive<usize> = 4..=8;

/// The risk zones of the manual, each from its lowest total: Zone I 0–7,
/// Zone II 8–15, Zone III 16–19, Zone IV 20–40.
const ZONES: [Band; 4] = [
    Band::new(0.0, "low risk"),
    Band::new(8.0, "hazardous"),
    Band::new(16.0, "harmful"),
    Band::new(20.0, "possible dependence"),
];

/// The cut-off for hazardous and harmful use (the manual).
const CUTOFF: f64 = 8.0;

/// The cut-off for women and for men over 65 (the manual).
const CUTOFF_MORE_SENSITIVE: f64 = 7.0;

/// Over this age (in years) the lower cut-off applies (the manual).
const OLDER_THAN: i32 = 65;

/// A dependence question (4–6) scoring this much or more asks for the next
/// level of intervention (the manual).
const DEPENDENCE_ITEM_ATTENTION: f64 = 2.0;

/// Question 9 or 10 scoring this ("Yes, during the last year") asks for the
/// next level of intervention (the manual).
const HARM_ITEM_ATTENTION: f64 = 4.0;

fn score(input: ScorerInput) -> ScorerOutput {
    let points = Points::of(&input);

    let mut output = ScorerOutput::default();
    output
        .scores
        .insert("total".into(), total_score(&points, cutoff_for(&input)));
    output
        .scores
        .insert("consumption".into(), points.sub_score(&CONSUMPTION));
    output
        .scores
        .insert("dependence".into(), points.sub_score(&DEPENDENCE));
    // The manual defines no alarm.
    output.alarm = None;
    output.attention = Some(attention(&input));
    output.completion = Some(points.completion());
    output
}

/// The points of the ten questions: answered ones as answered; the ones the
/// skip instructions leave out as 0; `None` for the rest.
#[derive(Debug)]
struct Points {
    points: [Option<f64>; 10],
}

impl Points {
    fn of(input: &ScorerInput) -> Points {
        let mut points = [None; 10];
        for (point, key) in points.iter_mut().zip(ITEMS) {
            *point = input.value(key);
        }
        // Question n is points[n - 1].
        if points[0] == Some(0.0) {
            skip(&mut points, SKIPPED_AFTER_NEVER);
        }
        if points[1] == Some(0.0) && points[2] == Some(0.0) {
            skip(&mut points, SKIPPED_AFTER_LIGHT_DRINKING);
        }
        Points { points }
    }

    fn of_keys(&self, keys: &[&str]) -> Vec<Option<f64>> {
        keys.iter()
            .map(|key| {
                ITEMS
                    .iter()
                    .position(|k| k == key)
                    .and_then(|i| self.points[i])
            })
            .collect()
    }

    /// The keys among `keys` with neither an answer nor a skip.
    fn missing(&self, keys: &[&str]) -> Vec<String> {
        keys.iter()
            .zip(self.of_keys(keys))
            .filter(|(_, point)| point.is_none())
            .map(|(key, _)| key.to_string())
            .collect()
    }

    /// The sum over `keys`; `None` when any is missing (the manual
    /// prorates nothing).
    fn sum(&self, keys: &[&str]) -> Option<f64> {
        scoring::sum(&self.of_keys(keys))
    }

    /// A sub-score: its sum, or the questions it misses.
    fn sub_score(&self, keys: &[&str]) -> Score {
        match self.sum(keys) {
            Some(sum) => Score::of(sum),
            None => Score::missing(self.missing(keys)),
        }
    }

    /// Questions answered or skipped by the manual's instructions, over all
    /// ten: a skipped question was rightly not asked, so it does not make
    /// the response incomplete.
    fn completion(&self) -> f64 {
        scoring::completion(&self.points)
    }
}

/// Sets the questions `numbers` (1-based) that have no answer to 0.
fn skip(points: &mut [Option<f64>; 10], numbers: std::ops::RangeInclusive<usize>) {
    for n in numbers {
        if let Some(point) = points.get_mut(n - 1) {
            point.get_or_insert(0.0);
        }
    }
}

fn total_score(points: &Points, cutoff: f64) -> Score {
    let Some(total) = points.sum(&ITEMS) else {
        return Score::missing(points.missing(&ITEMS));
    };
    let mut score = Score::of(total);
    score.interpretation = scoring::band(total, &ZONES).map(String::from);
    score.norm = Some(format!(">= {cutoff}"));
    // At or above the cut-off the drinking is at least hazardous. Zone IV
    // is not raised to alarm: its step is referral for diagnostic
    // evaluation and treatment, not an emergency (the manual).
    if total >= cutoff {
        score.status = Some(ScoreStatus::Attention);
    }
    score
}

/// The manual's cut-off for this patient: 7 for women and for anyone whose
/// age can be over 65, 8 otherwise. The record gives a birth year only, so
/// the age is the year of completion minus the birth year, which counts a
/// patient as over 65 from the start of the calendar year of their 66th
/// birthday (favouring sensitivity, as the lower cut-off means to). The
/// manual says "men over 65"; women have the lower cut-off at any age and we
/// apply it to patients of other or unknown gender over 65 as well.
fn cutoff_for(input: &ScorerInput) -> f64 {
    let patient = &input.patient;
    let woman = patient.gender.as_deref() == Some("female");
    let older = patient
        .birth_year
        .zip(completion_year(&input.completed_at))
        .is_some_and(|(born, year)| year - born > OLDER_THAN);
    if woman || older {
        CUTOFF_MORE_SENSITIVE
    } else {
        CUTOFF
    }
}

/// The calendar year of an RFC 3339 completion time; `None` when it does
/// not parse.
fn completion_year(completed_at: &str) -> Option<i32> {
    plugin_sdk::time::parse(completed_at)?;
    completed_at.get(0..4)?.parse().ok()
}

/// Questions 4–6 scoring 2 or more and questions 9–10 scoring 4, in form
/// order: the answers after which the manual provides the next highest
/// level of intervention. Only answers count; a skipped question raises
/// nothing.
fn attention(input: &ScorerInput) -> Vec<String> {
    let mut keys = scoring::keys_at_or_above(input, &DEPENDENCE, DEPENDENCE_ITEM_ATTENTION);
    keys.extend(scoring::keys_at_or_above(input, &HARM, HARM_ITEM_ATTENTION));
    keys
}

plugin_sdk::export_scorer!(score, questionnaires = ["audit"]);

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use plugin_sdk::{PatientInfo, QuestionnaireInfo};

    use super::*;

    #[test]
    fn fixtures() {
        plugin_sdk::testing::check_fixtures(env!("CARGO_MANIFEST_DIR"), super::call_json);
    }

    /// An input with points for questions 1–10 (`None`: unanswered).
    fn input(points: [Option<f64>; 10]) -> ScorerInput {
        ScorerInput {
            questionnaire: QuestionnaireInfo {
                key: "audit".into(),
                name: "AUDIT".into(),
                questions: Vec::new(),
                scores: Vec::new(),
            },
            answers: BTreeMap::new(),
            values: ITEMS
                .iter()
                .zip(points)
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            flags: BTreeMap::new(),
            textvars: BTreeMap::new(),
            completed_at: "2026-03-01T09:30:00Z".into(),
            respondent_type: "patient".into(),
            patient: PatientInfo::default(),
        }
    }

    fn all(points: [f64; 10]) -> ScorerInput {
        input(points.map(Some))
    }

    fn total(input: &ScorerInput) -> Score {
        total_score(&Points::of(input), cutoff_for(input))
    }

    #[test]
    fn total_is_the_sum_from_0_to_40() {
        assert_eq!(total(&all([0.0; 10])).value, Some(0.0));
        let max = all([4.0; 10]);
        assert_eq!(total(&max).value, Some(40.0));
        let some = all([1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 2.0, 0.0]);
        assert_eq!(total(&some).value, Some(5.0));
    }

    #[test]
    fn zones_follow_the_manual() {
        let cases = [
            (0.0, "low risk"),
            (7.0, "low risk"),
            (8.0, "hazardous"),
            (15.0, "hazardous"),
            (16.0, "harmful"),
            (19.0, "harmful"),
            (20.0, "possible dependence"),
            (40.0, "possible dependence"),
        ];
        for (value, zone) in cases {
            assert_eq!(scoring::band(value, &ZONES), Some(zone), "total {value}");
        }
    }

    #[test]
    fn attention_status_from_the_cutoff_of_8() {
        let seven = all([2.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]);
        let score = total(&seven);
        assert_eq!(score.value, Some(7.0));
        assert_eq!(score.status, None);
        assert_eq!(score.norm.as_deref(), Some(">= 8"));
        let eight = all([2.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0]);
        assert_eq!(total(&eight).status, Some(ScoreStatus::Attention));
    }

    #[test]
    fn women_and_patients_over_65_have_the_cutoff_of_7() {
        let seven = [2.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0];
        let six = [2.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0];

        let mut woman = all(seven);
        woman.patient.gender = Some("female".into());
        assert_eq!(total(&woman).status, Some(ScoreStatus::Attention));
        assert_eq!(total(&woman).norm.as_deref(), Some(">= 7"));
        let mut woman_six = all(six);
        woman_six.patient.gender = Some("female".into());
        assert_eq!(total(&woman_six).status, None);

        // Completed in 2026: born 1960 is over 65 (66 this year), born
        // 1961 is not (65 this year).
        let mut older_man = all(seven);
        older_man.patient = PatientInfo {
            gender: Some("male".into()),
            birth_year: Some(1960),
        };
        assert_eq!(total(&older_man).status, Some(ScoreStatus::Attention));
        let mut man_of_65 = all(seven);
        man_of_65.patient = PatientInfo {
            gender: Some("male".into()),
            birth_year: Some(1961),
        };
        assert_eq!(total(&man_of_65).status, None);
        assert_eq!(total(&man_of_65).norm.as_deref(), Some(">= 8"));

        // No birth year, or a completion time that does not parse: no age.
        let mut unknown = all(seven);
        unknown.patient.gender = Some("male".into());
        assert_eq!(cutoff_for(&unknown), CUTOFF);
        let mut unparsed = older_man.clone();
        unparsed.completed_at = "yesterday".into();
        assert_eq!(cutoff_for(&unparsed), CUTOFF);
    }

    #[test]
    fn never_drinking_skips_questions_2_to_8() {
        let mut points = [None; 10];
        points[0] = Some(0.0);
        points[8] = Some(2.0);
        points[9] = Some(4.0);
        let input = input(points);
        let p = Points::of(&input);
        assert_eq!(total(&input).value, Some(6.0));
        assert_eq!(p.sub_score(&CONSUMPTION).value, Some(0.0));
        assert_eq!(p.sub_score(&DEPENDENCE).value, Some(0.0));
        assert_eq!(p.completion(), 1.0);
        // Question 10 "yes, during the last year" still asks for attention.
        assert_eq!(attention(&input), vec!["v_10"]);
    }

    #[test]
    fn light_drinking_skips_questions_4_to_8() {
        let mut points = [None; 10];
        points[0] = Some(1.0);
        points[1] = Some(0.0);
        points[2] = Some(0.0);
        points[8] = Some(0.0);
        points[9] = Some(2.0);
        let input = input(points);
        assert_eq!(total(&input).value, Some(3.0));
        assert_eq!(Points::of(&input).completion(), 1.0);
    }

    #[test]
    fn skips_do_not_reach_questions_9_and_10() {
        let mut points = [None; 10];
        points[0] = Some(0.0);
        let input = input(points);
        let score = total(&input);
        assert_eq!(score.value, None);
        assert_eq!(
            score.missing_values,
            Some(vec!["v_9".to_string(), "v_10".to_string()])
        );
        assert_eq!(Points::of(&input).completion(), 0.8);
    }

    #[test]
    fn answers_after_a_skip_still_count() {
        // "Never" on 1 but an answer on 4: the answer is scored as given.
        let mut points = [None; 10];
        points[0] = Some(0.0);
        points[3] = Some(2.0);
        points[8] = Some(0.0);
        points[9] = Some(0.0);
        assert_eq!(total(&input(points)).value, Some(2.0));
    }

    #[test]
    fn an_unanswered_question_without_a_skip_leaves_no_value() {
        let mut points = [Some(1.0); 10];
        points[4] = None;
        let input = input(points);
        let p = Points::of(&input);
        assert_eq!(total(&input).missing_values, Some(vec!["v_5".to_string()]));
        assert_eq!(p.sub_score(&CONSUMPTION).value, Some(3.0));
        assert_eq!(
            p.sub_score(&DEPENDENCE).missing_values,
            Some(vec!["v_5".to_string()])
        );
        assert_eq!(p.completion(), 0.9);
    }

    #[test]
    fn questions_2_and_3_scoring_zero_need_both_answered() {
        // Question 3 unanswered: no skip, so 4–8 and 3 stay missing.
        let mut points = [None; 10];
        points[0] = Some(1.0);
        points[1] = Some(0.0);
        points[8] = Some(0.0);
        points[9] = Some(0.0);
        let score = total(&input(points));
        assert_eq!(
            score.missing_values,
            Some(
                ["v_3", "v_4", "v_5", "v_6", "v_7", "v_8"]
                    .map(String::from)
                    .to_vec()
            )
        );
    }

    #[test]
    fn attention_items_follow_the_manual() {
        // 4–6 at 2 or more, 9–10 at 4; 7 and 8 never.
        let input = all([4.0, 4.0, 4.0, 1.0, 2.0, 4.0, 4.0, 4.0, 2.0, 4.0]);
        assert_eq!(attention(&input), vec!["v_5", "v_6", "v_10"]);
        let none = all([4.0, 4.0, 4.0, 1.0, 1.0, 1.0, 4.0, 4.0, 2.0, 2.0]);
        assert!(attention(&none).is_empty());
    }

    #[test]
    fn manifest_names_the_questionnaire() {
        let manifest = manifest();
        assert_eq!(manifest.name, "audit");
        assert_eq!(manifest.questionnaires, ["audit"]);
    }
}
