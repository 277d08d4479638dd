//! Protocol definitions: the file format under `protocols/<key>.toml` and its
//! validation. A protocol groups questionnaires into measurements; automatic
//! protocols can be subscribed to.

use std::collections::HashSet;

use serde::Deserialize;

use super::questionnaire::{DefinitionErrors, is_valid_key};
use super::schedule::{Period, Schedule, TimeOfDay};

/// A protocol definition file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtocolDef {
    pub key: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default = "yes")]
    pub active: bool,
    #[serde(default)]
    pub automatic: bool,
    /// Automatic protocols: how long a subscription runs (its `stop_at` is
    /// the start moved on by this); absent: until stopped.
    #[serde(default)]
    pub duration: Option<Period>,
    /// Automatic protocols: the local time of day the measurements of a
    /// day start at; absent: the time of day the subscription starts.
    #[serde(default)]
    pub daily_start_time: Option<TimeOfDay>,
    pub measurements: Vec<MeasurementDef>,
}

/// One measurement of a protocol as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasurementDef {
    pub key: String,
    pub name: String,
    pub label: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default = "yes")]
    pub active: bool,
    /// Keys of the questionnaires of this measurement, in order.
    pub questionnaires: Vec<String>,
    /// When it happens; required on the active measurements of automatic
    /// protocols, not allowed on normal ones (those are prepared by hand).
    #[serde(default)]
    pub schedule: Option<Schedule>,
}

fn yes() -> bool {
    true
}

/// Parses and validates a protocol definition. `file_stem` must equal its key;
/// `questionnaire_exists` answers whether a questionnaire key is known.
pub fn parse(
    text: &str,
    file_stem: &str,
    questionnaire_exists: impl Fn(&str) -> bool,
) -> Result<ProtocolDef, DefinitionErrors> {
    let def: ProtocolDef =
        toml::from_str(text).map_err(|e| DefinitionErrors(vec![e.to_string()]))?;
    let mut errors = Vec::new();
    if !is_valid_key(&def.key) {
        errors.push(format!(
            "key {:?}: use lower-case letters, digits and _",
            def.key
        ));
    }
    if def.key != file_stem {
        errors.push(format!(
            "key {:?} must equal the file name {file_stem:?}",
            def.key
        ));
    }
    if def.name.trim().is_empty() {
        errors.push("name is blank".into());
    }
    if def.measurements.is_empty() {
        errors.push("measurements: a protocol needs at least one measurement".into());
    }
    let mut keys = HashSet::new();
    for (i, m) in def.measurements.iter().enumerate() {
        let at = format!("measurements[{i}] ({})", m.key);
        if !is_valid_key(&m.key) {
            errors.push(format!("{at}: invalid key"));
        }
        if !keys.insert(m.key.as_str()) {
            errors.push(format!("{at}: duplicate measurement key"));
        }
        if m.name.trim().is_empty() || m.label.trim().is_empty() {
            errors.push(format!("{at}: name and label must not be blank"));
        }
        if m.questionnaires.is_empty() {
            errors.push(format!(
                "{at}: a measurement needs at least one questionnaire"
            ));
        }
        match (&m.schedule, def.automatic) {
            (None, true) if m.active => errors.push(format!(
                "{at}: measurements of an automatic protocol need a [measurements.schedule]"
            )),
            (Some(_), false) => errors.push(format!(
                "{at}: only automatic protocols have schedules (set automatic = true)"
            )),
            (Some(schedule), true) => {
                errors.extend(
                    schedule
                        .problems()
                        .into_iter()
                        .map(|p| format!("{at}: schedule: {p}")),
                );
            }
            _ => {}
        }
        for q in &m.questionnaires {
            if !questionnaire_exists(q) {
                errors.push(format!(
                    "{at}: no questionnaire {q:?} under questionnaires/"
                ));
            }
        }
    }
    if !def.automatic && (def.duration.is_some() || def.daily_start_time.is_some()) {
        errors.push("duration and daily_start_time are for automatic protocols".into());
    }
    if def
        .duration
        .is_some_and(|d| !d.is_calendar() || d.amount == 0)
    {
        errors.push("duration: use one or more days, weeks or months".into());
    }
    if errors.is_empty() {
        Ok(def)
    } else {
        Err(DefinitionErrors(errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTAKE: &str = r#"
        key = "intake"
        name = "Intake"
        [[measurements]]
        key = "t0"
        name = "Intake"
        label = "T0"
        questionnaires = ["phq9"]
    "#;

    #[test]
    fn defaults_make_a_normal_active_protocol() {
        let p = parse(INTAKE, "intake", |k| k == "phq9").expect("valid");
        assert!(p.active);
        assert!(!p.automatic);
        assert!(p.measurements[0].active);
    }

    #[test]
    fn unknown_questionnaires_are_named() {
        let err = parse(INTAKE, "intake", |_| false).expect_err("invalid").0;
        assert_eq!(
            err,
            vec!["measurements[0] (t0): no questionnaire \"phq9\" under questionnaires/"]
        );
    }

    const DIARY: &str = r#"
        key = "diary"
        name = "Diary"
        automatic = true
        duration = "2 weeks"
        daily_start_time = "09:00"
        [[measurements]]
        key = "moment"
        name = "Moment"
        label = "M"
        questionnaires = ["phq9"]
        [measurements.schedule]
        every = "1 day"
        times_a_day = 4
        hours_apart = 4
        open_for = "2 hours"
    "#;

    #[test]
    fn automatic_protocols_carry_schedules() {
        let p = parse(DIARY, "diary", |k| k == "phq9").expect("valid");
        assert_eq!(
            p.duration.map(|d| d.to_string()).as_deref(),
            Some("2 weeks")
        );
        assert_eq!(p.daily_start_time, Some(TimeOfDay(9 * 3600)));
        let schedule = p.measurements[0].schedule.as_ref().expect("a schedule");
        assert_eq!(schedule.times_a_day, 4);
    }

    #[test]
    fn schedules_belong_to_automatic_protocols_only() {
        let without = DIARY.replace("automatic = true", "automatic = false");
        let err = parse(&without, "diary", |_| true).expect_err("invalid").0;
        assert_eq!(
            err,
            vec![
                "measurements[0] (moment): only automatic protocols have schedules (set automatic = true)",
                "duration and daily_start_time are for automatic protocols",
            ]
        );
        let unscheduled =
            INTAKE.replacen("[[measurements]]", "automatic = true\n[[measurements]]", 1);
        let err = parse(&unscheduled, "intake", |_| true)
            .expect_err("invalid")
            .0;
        assert_eq!(
            err,
            vec![
                "measurements[0] (t0): measurements of an automatic protocol need a [measurements.schedule]"
            ]
        );
        let bad = DIARY.replace("hours_apart = 4", "hours_apart = 9");
        let err = parse(&bad, "diary", |_| true).expect_err("invalid").0;
        assert_eq!(
            err,
            vec![
                "measurements[0] (moment): schedule: 4 times a day 9 hours apart do not fit in a day"
            ]
        );
        let err = parse(
            &DIARY.replace("\"2 weeks\"", "\"2 hours\""),
            "diary",
            |_| true,
        )
        .expect_err("invalid")
        .0;
        assert_eq!(err, vec!["duration: use one or more days, weeks or months"]);
    }
}
