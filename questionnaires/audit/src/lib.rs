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
//!   to 8 are not asked and go on to 9 and 10. These are conditions in the
//!   definition (`questionnaire.toml`), so the host never stores or scores
//!   an answer to a skipped question and tells the scorer which questions
//!   were enabled (`input.enabled`); a question the instructions skipped
//!   counts 0 here;
//! - the risk zones (Zone I 0–7, II 8–15, III 16–19, IV 20–40) with the
//!   manual's reading of them: scores of 8–15 call for simple advice on
//!   reducing hazardous drinking, 16–19 for brief counselling and continued
//!   monitoring, 20 or more "clearly warrant further diagnostic evaluation
//!   for alcohol dependence";
//! - the cut-off: 8 or more indicates hazardous and harmful alcohol use as
//!   well as possible dependence; one point lower, 7, for women and for men
//!   over 65 "will increase sensitivity for these population groups" (the
//!   scorer applies 7 only when the input says the patient is a woman or
//!   over 65; the host does not send patient details yet, so until it does,
//!   8 applies to everyone: see [`cutoff_for`]);
//! - the table of zones' note: "Provide the next highest level of
//!   intervention to patients who score 2 or more on Questions 4, 5 and 6,
//!   or 4 on Questions 9 or 10", which gives the attention list.
//!
//! The manual says nothing about unanswered questions beyond the skip
//! instructions: it sums every answer and prorates nothing. So a question
//! neither answered nor skipped (enabled but unanswered) leaves its scores
//! without a value (`missing_values`).
//!
//! A total without a value can still be certain to reach the cut-off:
//! answers only add points, so the sum of the answered questions (skipped
//! ones count 0) is the lowest total the response can reach whatever the
//! missing answers. When that floor reaches the patient's cut-off, the
//! total carries `attention` and an interpretation that says so ("at least
//! 12 from the answered items: hazardous or higher"); no value is invented.
//! This is a service rule, not the manual's: it applies the manual's
//! cut-off and zones to the lowest total the response could still have.
//!
//! Completion counts a question as done when it is answered or when the
//! skip instructions leave it out (it was not enabled: only questions 2–8
//! after "Never" on 1, or 4–8 after 0 on both 2 and 3, the definition's
//! conditions, which need those answers given). Questions 9 and 10 are
//! never skipped, so a respondent who stops early is never 100% complete:
//! "Never" on question 1 and nothing else is 80% (1 answered, 2–8 skipped,
//! 9 and 10 missing).
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

/// What a total of 7 means under the lower cut-off: the zone is still low
/// risk, but the patient's cut-off is reached.
fn lower_cutoff_reached() -> String {
    format!("at or above the cut-off of {CUTOFF_MORE_SENSITIVE} for women and people over 65")
}

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
/// skip instructions leave out (not enabled) as 0; `None` for the rest.
#[derive(Debug)]
struct Points {
    points: [Option<f64>; 10],
}

impl Points {
    fn of(input: &ScorerInput) -> Points {
        let mut points = [None; 10];
        for (point, key) in points.iter_mut().zip(ITEMS) {
            *point = if input.enabled(key) {
                input.value(key)
            } else {
                Some(0.0)
            };
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

    /// The lowest sum over `keys` whatever the missing answers: the points
    /// of the answered and skipped questions (a missing one adds at least
    /// 0). Not a score: it only decides whether a cut-off is reached.
    fn floor(&self, keys: &[&str]) -> f64 {
        scoring::sum_answered(&self.of_keys(keys))
    }

    /// Questions answered or skipped by the manual's instructions, over all
    /// ten: a skipped question was rightly not asked, so it does not make
    /// the response incomplete. Only what the definition's conditions left
    /// out counts so, never questions 9 and 10, so a respondent who simply
    /// stopped is counted incomplete.
    fn completion(&self) -> f64 {
        scoring::completion(&self.points)
    }
}

fn total_score(points: &Points, cutoff: f64) -> Score {
    let Some(total) = points.sum(&ITEMS) else {
        return incomplete_total_score(points.missing(&ITEMS), points.floor(&ITEMS), cutoff);
    };
    let mut score = Score::of(total);
    score.interpretation = scoring::band(total, &ZONES).map(|zone| {
        if total >= cutoff && total < CUTOFF {
            // Only the lower cut-off gets here (a total of 7): the zone is
            // still "low risk", so say why the total needs attention.
            format!("{zone} zone; {}", lower_cutoff_reached())
        } else {
            zone.to_string()
        }
    });
    score.norm = Some(format!(">= {cutoff}"));
    // At or above the cut-off the drinking is at least hazardous. Zone IV
    // is not raised to alarm: its step is referral for diagnostic
    // evaluation and treatment, not an emergency (the manual).
    if total >= cutoff {
        score.status = Some(ScoreStatus::Attention);
    }
    score
}

/// The total when questions are unanswered: no value, the missing
/// questions, and attention when the floor already reaches `cutoff`, with
/// the floor's zone ("or higher" below the top zone: the missing answers
/// can only raise it), or, for a floor of 7 under the lower cut-off, the
/// cut-off it reaches.
fn incomplete_total_score(missing: Vec<String>, floor: f64, cutoff: f64) -> Score {
    let mut score = Score::missing(missing);
    if floor >= cutoff {
        score.status = Some(ScoreStatus::Attention);
        let reached = if floor < CUTOFF {
            Some(lower_cutoff_reached())
        } else {
            scoring::band_at_least(floor, &ZONES)
        };
        score.interpretation =
            reached.map(|reached| format!("at least {floor} from the answered items: {reached}"));
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
///
/// The host does not send patient details (gender, birth year) yet: in
/// production `input.patient` is empty, so until it does, this is 8 for
/// everyone. The rule stays so that it applies as soon as the host supplies
/// the data.
fn cutoff_for(input: &ScorerInput) -> f64 {
    let patient = &input.patient;
    let woman = patient.gender.as_deref() == Some("female");
    // Checked: an absurd birth year (say i32::MIN) must give no age, not
    // an overflow.
    let older = patient
        .birth_year
        .zip(completion_year(&input.completed_at))
        .and_then(|(born, year)| year.checked_sub(born))
        .is_some_and(|age| age > OLDER_THAN);
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

// Works on `values` alone: the host need not send the questions.
plugin_sdk::export_scorer!(
    score,
    questionnaires = ["audit"],
    questions = false,
    answers = false
);

#[cfg(test)]
mod tests;
