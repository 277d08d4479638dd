//! When the measurements of an automatic protocol happen: the schedule part
//! of a protocol definition, and the pure rules that turn a subscription
//! (start, daily start time, stop) into measurement occurrences.
//!
//! Days, weeks and months are local-calendar notions in the service's time
//! zone (docs/design.md#time-and-scheduling): a daily 09:00 diary stays at
//! 09:00 across daylight-saving changes, and "every month" from 31 January
//! is 28 (or 29) February, then 31 March: each occurrence is counted from
//! the first, so a short month does not shift the ones after it. Hours and
//! minutes are exact durations.

use std::fmt;
use std::str::FromStr;

use chrono::{
    DateTime, Days, Duration, LocalResult, Months, NaiveDate, NaiveDateTime, TimeZone, Utc,
};
use chrono_tz::Tz;
use serde::Deserialize;

/// A length of time as written in definitions: `"3 days"`, `"1 week"`,
/// `"6 months"`, `"2 hours"`, `"30 minutes"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period {
    pub amount: u32,
    pub unit: Unit,
}

/// The unit of a [`Period`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Minutes,
    Hours,
    Days,
    Weeks,
    Months,
}

impl Period {
    pub const ZERO: Period = Period {
        amount: 0,
        unit: Unit::Days,
    };

    /// Whether the period is whole local days (days, weeks or months).
    pub fn is_calendar(self) -> bool {
        matches!(self.unit, Unit::Days | Unit::Weeks | Unit::Months)
    }

    /// `date` moved on by `times` periods; None past chrono's range. Months
    /// end on the last day of a shorter month. Only for calendar periods.
    fn add_to_date(self, date: NaiveDate, times: u32) -> Option<NaiveDate> {
        let n = self.amount.checked_mul(times)?;
        match self.unit {
            Unit::Days => date.checked_add_days(Days::new(u64::from(n))),
            Unit::Weeks => date.checked_add_days(Days::new(u64::from(n) * 7)),
            Unit::Months => date.checked_add_months(Months::new(n)),
            Unit::Minutes | Unit::Hours => None,
        }
    }

    /// `at` moved on by this period: calendar periods keep the local time of
    /// day in `zone`, hours and minutes are exact.
    pub fn after(self, at: DateTime<Utc>, zone: Tz) -> Option<DateTime<Utc>> {
        self.shift(at, zone, true)
    }

    /// `at` moved back by this period, as [`Period::after`] moves on.
    pub fn before(self, at: DateTime<Utc>, zone: Tz) -> Option<DateTime<Utc>> {
        self.shift(at, zone, false)
    }

    fn shift(self, at: DateTime<Utc>, zone: Tz, forward: bool) -> Option<DateTime<Utc>> {
        let exact = |d: Duration| {
            if forward {
                at.checked_add_signed(d)
            } else {
                at.checked_sub_signed(d)
            }
        };
        match self.unit {
            Unit::Minutes => exact(Duration::minutes(i64::from(self.amount))),
            Unit::Hours => exact(Duration::hours(i64::from(self.amount))),
            Unit::Days | Unit::Weeks | Unit::Months => {
                let local = at.with_timezone(&zone).naive_local();
                let date = if forward {
                    self.add_to_date(local.date(), 1)?
                } else {
                    match self.unit {
                        Unit::Months => {
                            local.date().checked_sub_months(Months::new(self.amount))?
                        }
                        _ => {
                            let days = u64::from(self.amount)
                                * if self.unit == Unit::Weeks { 7 } else { 1 };
                            local.date().checked_sub_days(Days::new(days))?
                        }
                    }
                };
                Some(resolve(zone, date.and_time(local.time())))
            }
        }
    }
}

impl FromStr for Period {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut parts = s.split_whitespace();
        let (Some(amount), Some(unit), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!("{s:?}: write a number and a unit, e.g. \"7 days\""));
        };
        let amount: u32 = amount
            .parse()
            .map_err(|_| format!("{s:?}: {amount:?} is not a whole number"))?;
        let unit = match unit.trim_end_matches('s') {
            "minute" => Unit::Minutes,
            "hour" => Unit::Hours,
            "day" => Unit::Days,
            "week" => Unit::Weeks,
            "month" => Unit::Months,
            _ => {
                return Err(format!(
                    "{s:?}: the unit must be minutes, hours, days, weeks or months"
                ));
            }
        };
        Ok(Period { amount, unit })
    }
}

impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.unit {
            Unit::Minutes => "minute",
            Unit::Hours => "hour",
            Unit::Days => "day",
            Unit::Weeks => "week",
            Unit::Months => "month",
        };
        let plural = if self.amount == 1 { "" } else { "s" };
        write!(f, "{} {unit}{plural}", self.amount)
    }
}

impl<'de> Deserialize<'de> for Period {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A local time of day as written in definitions, `"09:00"`; seconds after
/// local midnight, as `daily_start_time` is
/// (docs/api/protocols-and-subscriptions.md#daily-start-time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeOfDay(pub u32);

impl FromStr for TimeOfDay {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = || format!("{s:?}: write a local time as HH:MM, e.g. \"09:00\"");
        let (h, m) = s.split_once(':').ok_or_else(invalid)?;
        let (h, m): (u32, u32) = (
            h.parse().map_err(|_| invalid())?,
            m.parse().map_err(|_| invalid())?,
        );
        if h > 23 || m > 59 || s.len() != 5 {
            return Err(invalid());
        }
        Ok(TimeOfDay(h * 3600 + m * 60))
    }
}

impl<'de> Deserialize<'de> for TimeOfDay {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// When one measurement of an automatic protocol happens, as written under
/// `[measurements.schedule]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schedule {
    /// From the subscription's start to the first occurrence (calendar
    /// periods only); default none.
    #[serde(default = "zero")]
    pub offset: Period,
    /// Repeat every this long (calendar periods only); absent: once.
    #[serde(default)]
    pub every: Option<Period>,
    /// Occurrences on each day of the schedule; default 1. With more than
    /// one, they are `hours_apart` apart from the daily start time on.
    #[serde(default = "one")]
    pub times_a_day: u32,
    /// Hours between the occurrences of one day.
    #[serde(default)]
    pub hours_apart: Option<u32>,
    /// How long each occurrence is open to be filled out.
    pub open_for: Period,
    /// How long before it opens an occurrence is prepared (its responses
    /// are `scheduled` until then); default at the moment it opens.
    #[serde(default = "zero")]
    pub prepare_before: Period,
}

fn zero() -> Period {
    Period::ZERO
}

fn one() -> u32 {
    1
}

impl Schedule {
    /// What is wrong with the schedule, if anything.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if !self.offset.is_calendar() {
            problems.push(format!("offset {}: use days, weeks or months", self.offset));
        }
        if let Some(every) = self.every
            && (!every.is_calendar() || every.amount == 0)
        {
            problems.push(format!(
                "every {every}: use one or more days, weeks or months (several a day: times_a_day)"
            ));
        }
        match (self.times_a_day, self.hours_apart) {
            (0, _) => problems.push("times_a_day must be at least 1".into()),
            (1, Some(_)) => problems.push("hours_apart needs times_a_day above 1".into()),
            (n, None) if n > 1 => problems.push("times_a_day above 1 needs hours_apart".into()),
            (n, Some(h)) if h == 0 || (n - 1) * h >= 24 => problems.push(format!(
                "{n} times a day {h} hours apart do not fit in a day"
            )),
            _ => {}
        }
        if self.open_for.amount == 0 {
            problems.push("open_for must be longer than nothing".into());
        }
        problems
    }
}

/// One occurrence of a measurement of a subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Occurrence {
    /// When it opens: its identity within the subscription's measurement.
    pub open_from: DateTime<Utc>,
    pub open_till: DateTime<Utc>,
    /// When it is prepared (`open_from` less `prepare_before`).
    pub prepare_at: DateTime<Utc>,
}

/// What a subscription's occurrences are computed from.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub start_at: DateTime<Utc>,
    /// Seconds after local midnight
    /// (docs/api/protocols-and-subscriptions.md#daily-start-time).
    pub daily_start_time: u32,
    /// Nothing opens at or after this.
    pub stop_at: Option<DateTime<Utc>>,
    pub zone: Tz,
}

impl Timing {
    /// The local date the schedule counts from.
    fn anchor(&self) -> NaiveDate {
        self.start_at.with_timezone(&self.zone).date_naive()
    }
}

/// The occurrences of `schedule` that are prepared in `from..=to` (by their
/// `prepare_at`), in order. Occurrences that would open before the start
/// (a diary's morning slot on a day that starts at noon) or at or after the
/// stop are not part of the subscription.
pub fn prepared_between(
    schedule: &Schedule,
    timing: &Timing,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Vec<Occurrence> {
    let mut found = Vec::new();
    for occurrence in Occurrences::new(schedule, timing, from) {
        if occurrence.prepare_at > to {
            break;
        }
        if occurrence.prepare_at >= from {
            found.push(occurrence);
        }
    }
    found
}

/// The first occurrence of `schedule`, if any.
pub fn first(schedule: &Schedule, timing: &Timing) -> Option<Occurrence> {
    Occurrences::new(schedule, timing, timing.start_at).next()
}

/// The first occurrence of `schedule` prepared after `after`, if any.
pub fn next_prepared_after(
    schedule: &Schedule,
    timing: &Timing,
    after: DateTime<Utc>,
) -> Option<Occurrence> {
    Occurrences::new(schedule, timing, after).find(|o| o.prepare_at > after)
}

/// Occurrences in order, from a little before the first one prepared at or
/// after a given moment (found without walking from the start: a daily
/// protocol running for years costs the same as a new one).
struct Occurrences<'a> {
    schedule: &'a Schedule,
    timing: &'a Timing,
    /// The schedule's first day: the anchor moved on by the offset.
    first_day: Option<NaiveDate>,
    /// The repetition and the slot within its day next to produce.
    repetition: u32,
    slot: u32,
    /// Naive local date-time of the start, to seconds: slots before it are
    /// not part of the subscription.
    start_local: NaiveDateTime,
}

impl<'a> Occurrences<'a> {
    fn new(schedule: &'a Schedule, timing: &'a Timing, around: DateTime<Utc>) -> Self {
        let first_day = schedule.offset.add_to_date(timing.anchor(), 1);
        let start_local = timing.start_at.with_timezone(&timing.zone).naive_local();
        let start_local = start_local
            .date()
            .and_hms_opt(0, 0, 0)
            .map_or(start_local, |midnight| {
                midnight + Duration::seconds((start_local - midnight).num_seconds())
            });
        // Skip the repetitions whose days lie well before `around` (less
        // the longest lead: prepare_before and the day's slots).
        let repetition = match (schedule.every, first_day) {
            (Some(every), Some(first)) => {
                let lead = schedule
                    .prepare_before
                    .before(around, timing.zone)
                    .unwrap_or(around);
                let day = lead.with_timezone(&timing.zone).date_naive();
                let elapsed = match every.unit {
                    Unit::Months => months_between(first, day),
                    Unit::Weeks => (day - first).num_days() / 7,
                    _ => (day - first).num_days(),
                };
                let per = i64::from(every.amount.max(1));
                u32::try_from((elapsed / per - 2).max(0)).unwrap_or(0)
            }
            _ => 0,
        };
        Occurrences {
            schedule,
            timing,
            first_day,
            repetition,
            slot: 0,
            start_local,
        }
    }
}

impl Iterator for Occurrences<'_> {
    type Item = Occurrence;

    fn next(&mut self) -> Option<Occurrence> {
        let schedule = self.schedule;
        let timing = self.timing;
        loop {
            if self.slot == schedule.times_a_day {
                self.slot = 0;
                self.repetition = self.repetition.checked_add(1)?;
            }
            if self.repetition > 0 && schedule.every.is_none() {
                return None;
            }
            let day = match schedule.every {
                Some(every) => every.add_to_date(self.first_day?, self.repetition)?,
                None => self.first_day?,
            };
            let seconds =
                timing.daily_start_time + self.slot * schedule.hours_apart.unwrap_or(0) * 3600;
            self.slot += 1;
            let local = day.and_hms_opt(0, 0, 0)? + Duration::seconds(i64::from(seconds));
            if local < self.start_local {
                continue;
            }
            let open_from = resolve(timing.zone, local);
            if timing.stop_at.is_some_and(|stop| open_from >= stop) {
                return None;
            }
            return Some(Occurrence {
                open_from,
                open_till: schedule.open_for.after(open_from, timing.zone)?,
                prepare_at: schedule.prepare_before.before(open_from, timing.zone)?,
            });
        }
    }
}

/// Whole months from `a` to `b` (negative when `b` is earlier).
fn months_between(a: NaiveDate, b: NaiveDate) -> i64 {
    use chrono::Datelike;
    (i64::from(b.year()) - i64::from(a.year())) * 12 + i64::from(b.month()) - i64::from(a.month())
}

/// The instant of a local date-time in `zone`. A time that occurs twice
/// (clocks go back) is the first; a time that does not occur (clocks go
/// forward) is moved on by the gap, as a wall clock would be: 02:30 on the
/// spring-forward night in Amsterdam is 03:30 summer time.
pub fn resolve(zone: Tz, local: NaiveDateTime) -> DateTime<Utc> {
    match zone.from_local_datetime(&local) {
        LocalResult::Single(t) => t.with_timezone(&Utc),
        LocalResult::Ambiguous(first, _) => first.with_timezone(&Utc),
        LocalResult::None => {
            // The offset in force before the gap.
            let before = zone.offset_from_utc_datetime(&(local - Duration::days(1)));
            let offset = chrono::Offset::fix(&before);
            Utc.from_utc_datetime(&(local - Duration::seconds(i64::from(offset.local_minus_utc()))))
        }
    }
}

/// Seconds after local midnight of `at` in `zone`.
pub fn time_of_day(at: DateTime<Utc>, zone: Tz) -> u32 {
    use chrono::Timelike;
    at.with_timezone(&zone).time().num_seconds_from_midnight()
}

#[cfg(test)]
mod tests {
    use super::*;

    const AMSTERDAM: Tz = chrono_tz::Europe::Amsterdam;

    fn local(text: &str) -> DateTime<Utc> {
        let naive = NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M").expect("a local time");
        resolve(AMSTERDAM, naive)
    }

    fn shown(at: DateTime<Utc>) -> String {
        at.with_timezone(&AMSTERDAM)
            .format("%Y-%m-%d %H:%M %:z")
            .to_string()
    }

    fn schedule(text: &str) -> Schedule {
        toml::from_str(text).expect("a schedule")
    }

    fn timing(start: &str, stop: Option<&str>) -> Timing {
        let start_at = local(start);
        Timing {
            start_at,
            daily_start_time: time_of_day(start_at, AMSTERDAM),
            stop_at: stop.map(local),
            zone: AMSTERDAM,
        }
    }

    fn opens(schedule: &Schedule, timing: &Timing, from: &str, to: &str) -> Vec<String> {
        prepared_between(schedule, timing, local(from), local(to))
            .into_iter()
            .map(|o| shown(o.open_from))
            .collect()
    }

    #[test]
    fn periods_are_read_and_written_back() {
        for text in [
            "0 days",
            "1 day",
            "2 weeks",
            "6 months",
            "3 hours",
            "30 minutes",
            "1 month",
        ] {
            let period: Period = text.parse().expect("valid");
            assert_eq!(period.to_string(), text);
        }
        assert_eq!(
            "7 day".parse::<Period>().map(|p| p.to_string()).as_deref(),
            Ok("7 days")
        );
        for bad in [
            "",
            "7",
            "seven days",
            "7 fortnights",
            "-1 days",
            "1.5 days",
            "7 days ago",
        ] {
            assert!(bad.parse::<Period>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn times_of_day_are_hours_and_minutes() {
        assert_eq!("09:00".parse::<TimeOfDay>(), Ok(TimeOfDay(32_400)));
        assert_eq!("23:59".parse::<TimeOfDay>(), Ok(TimeOfDay(86_340)));
        for bad in ["9:00", "24:00", "09:60", "0900", "09:00:00", ""] {
            assert!(bad.parse::<TimeOfDay>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_monthly_schedule_from_the_31st_keeps_to_the_end_of_each_month() {
        let monthly = schedule("every = \"1 month\"\nopen_for = \"7 days\"");
        let t = timing("2027-01-31 10:15", None);
        assert_eq!(
            opens(&monthly, &t, "2027-01-01 00:00", "2027-06-01 00:00"),
            [
                "2027-01-31 10:15 +01:00",
                "2027-02-28 10:15 +01:00",
                "2027-03-31 10:15 +02:00",
                "2027-04-30 10:15 +02:00",
                "2027-05-31 10:15 +02:00",
            ]
        );
        // In a leap year, the 29th.
        let t = timing("2028-01-31 10:15", None);
        assert_eq!(
            opens(&monthly, &t, "2028-02-01 00:00", "2028-03-01 00:00"),
            ["2028-02-29 10:15 +01:00"]
        );
    }

    #[test]
    fn a_diary_stays_at_its_local_times_across_daylight_saving_changes() {
        let diary =
            schedule("every = \"1 day\"\ntimes_a_day = 4\nhours_apart = 4\nopen_for = \"2 hours\"");
        // Clocks go forward on 28 March 2027 and back on 31 October 2027.
        for (before, after, was, is) in [
            ("2027-03-27", "2027-03-28", "+01:00", "+02:00"),
            ("2027-10-30", "2027-10-31", "+02:00", "+01:00"),
        ] {
            let mut t = timing(&format!("{before} 09:00"), None);
            t.daily_start_time = 9 * 3600;
            let got = opens(
                &diary,
                &t,
                &format!("{before} 00:00"),
                &format!("{after} 23:00"),
            );
            let expected: Vec<String> = [(before, was), (after, is)]
                .into_iter()
                .flat_map(|(d, z)| {
                    ["09:00", "13:00", "17:00", "21:00"].map(|h| format!("{d} {h} {z}"))
                })
                .collect();
            assert_eq!(got, expected);
        }
    }

    #[test]
    fn slots_before_the_start_and_from_the_stop_on_are_not_part_of_it() {
        let diary =
            schedule("every = \"1 day\"\ntimes_a_day = 4\nhours_apart = 4\nopen_for = \"2 hours\"");
        let mut t = timing("2027-05-10 14:00", Some("2027-05-11 17:00"));
        t.daily_start_time = 9 * 3600;
        assert_eq!(
            opens(&diary, &t, "2027-05-01 00:00", "2027-06-01 00:00"),
            [
                "2027-05-10 17:00 +02:00",
                "2027-05-10 21:00 +02:00",
                "2027-05-11 09:00 +02:00",
                "2027-05-11 13:00 +02:00",
            ]
        );
    }

    #[test]
    fn a_start_at_is_its_own_first_occurrence_to_the_second() {
        let once = schedule("open_for = \"1 week\"");
        let mut t = timing("2027-05-10 14:00", None);
        t.start_at += Duration::milliseconds(1_999);
        t.daily_start_time = time_of_day(t.start_at, AMSTERDAM);
        let found = first(&once, &t).expect("one occurrence");
        assert_eq!(t.start_at - found.open_from, Duration::milliseconds(999));
        assert_eq!(shown(found.open_till), "2027-05-17 14:00 +02:00");
        assert_eq!(
            prepared_between(&once, &t, found.prepare_at, t.start_at),
            [found]
        );
        assert_eq!(next_prepared_after(&once, &t, t.start_at), None);
    }

    #[test]
    fn an_offset_and_a_lead_move_the_occurrences() {
        let s = schedule(
            "offset = \"2 weeks\"\nevery = \"4 weeks\"\nopen_for = \"3 days\"\nprepare_before = \"1 day\"",
        );
        let t = timing("2027-05-10 14:00", Some("2027-08-01 00:00"));
        let found = prepared_between(&s, &t, local("2027-05-01 00:00"), local("2027-12-01 00:00"));
        let got: Vec<(String, String, String)> = found
            .iter()
            .map(|o| (shown(o.prepare_at), shown(o.open_from), shown(o.open_till)))
            .collect();
        let row = |p: &str, f: &str, t: &str| (p.to_owned(), f.to_owned(), t.to_owned());
        assert_eq!(
            got,
            [
                row(
                    "2027-05-23 14:00 +02:00",
                    "2027-05-24 14:00 +02:00",
                    "2027-05-27 14:00 +02:00"
                ),
                row(
                    "2027-06-20 14:00 +02:00",
                    "2027-06-21 14:00 +02:00",
                    "2027-06-24 14:00 +02:00"
                ),
                row(
                    "2027-07-18 14:00 +02:00",
                    "2027-07-19 14:00 +02:00",
                    "2027-07-22 14:00 +02:00"
                ),
            ]
        );
        let next = next_prepared_after(&s, &t, local("2027-05-23 14:00")).expect("one more");
        assert_eq!(shown(next.open_from), "2027-06-21 14:00 +02:00");
    }

    #[test]
    fn a_long_running_schedule_is_found_without_walking_from_its_start() {
        let daily = schedule("every = \"1 day\"\nopen_for = \"1 day\"");
        let t = timing("2020-01-01 09:00", None);
        let from = local("2035-06-01 00:00");
        let walker = Occurrences::new(&daily, &t, from);
        assert!(walker.repetition > 5_000, "starts near {from}");
        assert_eq!(
            opens(&daily, &t, "2035-06-01 00:00", "2035-06-02 23:00"),
            ["2035-06-01 09:00 +02:00", "2035-06-02 09:00 +02:00"]
        );
    }

    #[test]
    fn times_in_a_gap_move_on_and_repeated_times_are_the_first() {
        let naive = |s: &str| NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M").expect("valid");
        assert_eq!(
            shown(resolve(AMSTERDAM, naive("2027-03-28 02:30"))),
            "2027-03-28 03:30 +02:00"
        );
        assert_eq!(
            shown(resolve(AMSTERDAM, naive("2027-10-31 02:30"))),
            "2027-10-31 02:30 +02:00"
        );
    }

    #[test]
    fn bad_schedules_are_explained() {
        let bad = schedule(
            "offset = \"3 hours\"\nevery = \"0 days\"\ntimes_a_day = 7\nhours_apart = 4\nopen_for = \"0 hours\"",
        );
        assert_eq!(
            bad.problems(),
            [
                "offset 3 hours: use days, weeks or months",
                "every 0 days: use one or more days, weeks or months (several a day: times_a_day)",
                "7 times a day 4 hours apart do not fit in a day",
                "open_for must be longer than nothing",
            ]
        );
        assert!(
            schedule("times_a_day = 2\nopen_for = \"1 hour\"").problems()[0]
                .contains("needs hours_apart")
        );
        assert!(schedule("open_for = \"1 day\"").problems().is_empty());
    }
}
