//! What the alarm phase's receiver got, held against what was posted:
//! each alarm's events matched by the payload's `response_id` (the POST's
//! 201 names it), the time from the 201 to the raised event's arrival,
//! each escalation's lateness past its alarm's deadline, and what must not
//! happen: a `webhook-id` delivered again after a 2xx (a duplicate), one
//! alarm's raising or escalation sent as two events, an event of an
//! ordinary response or an escalation of an acknowledged alarm, a
//! signature that does not verify. Pure.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Instant;

use chrono::{DateTime, Utc};

use super::receiver::Arrival;

/// Which part of the phase a POST was made in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The receiver up throughout: delivery latency and deadlines.
    Steady,
    /// Posted while the receiver was down.
    Outage,
}

/// One POST answered 201.
#[derive(Debug, Clone)]
pub struct Posted {
    pub response_id: i64,
    /// When the 201 was read.
    pub answered: Instant,
    pub part: Part,
    /// Its answers raise an alarm.
    pub raises: bool,
}

/// An event as the receiver saw it, read from the payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub webhook_id: String,
    /// `type`: `alarm.raised`, `alarm.escalated` or anything else.
    pub kind: String,
    pub alarm_id: Option<i64>,
    pub response_id: Option<i64>,
    pub deadline: Option<DateTime<Utc>>,
    pub escalated_at: Option<DateTime<Utc>>,
}

impl Event {
    pub fn of(arrival: &Arrival) -> Event {
        let data = &arrival.body["data"];
        let time = |field: &str| {
            data[field]
                .as_str()
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.with_timezone(&Utc))
        };
        Event {
            webhook_id: arrival.webhook_id.clone(),
            kind: arrival.body["type"].as_str().unwrap_or_default().to_owned(),
            alarm_id: data["id"].as_i64(),
            response_id: data["response_id"].as_i64(),
            deadline: time("deadline"),
            escalated_at: time("escalated_at"),
        }
    }
}

pub const RAISED: &str = "alarm.raised";
pub const ESCALATED: &str = "alarm.escalated";

/// Percentiles of some figures (nearest rank).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub count: usize,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl Summary {
    /// None for no figures.
    pub fn of(figures: &[f64]) -> Option<Summary> {
        let mut sorted = figures.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        if n == 0 {
            return None;
        }
        // The smallest figure with at least p% of them at or below it.
        let rank = |p: f64| {
            let rank = (p / 100.0 * n as f64).ceil() as usize;
            sorted[rank.clamp(1, n) - 1]
        };
        Some(Summary {
            count: n,
            p50: rank(50.0),
            p90: rank(90.0),
            p99: rank(99.0),
            max: sorted[n - 1],
        })
    }

    /// In seconds, to the millisecond.
    pub fn describe(&self) -> String {
        format!(
            "p50 {:.3} s, p90 {:.3} s, p99 {:.3} s, max {:.3} s (n = {})",
            self.p50, self.p90, self.p99, self.max, self.count
        )
    }
}

/// Everything the receiver got, held against what was posted and which
/// alarms were acknowledged.
#[derive(Debug, Default)]
pub struct Tally {
    /// Alarms raised (POSTs whose answers raise one).
    pub alarms: usize,
    /// Of those, acknowledged before their deadline.
    pub acknowledged: usize,
    /// Alarms whose raised event arrived.
    pub raised_delivered: usize,
    /// Unacknowledged alarms whose escalation arrived.
    pub escalated_delivered: usize,
    /// Seconds from the 201 to the raised event's first arrival, for the
    /// alarms of the steady part (negative: it arrived before the client
    /// had read the 201).
    pub first_attempt: Vec<f64>,
    /// Seconds from the deadline to the escalation's first arrival, steady
    /// part.
    pub escalation_arrival: Vec<f64>,
    /// Seconds from the deadline to `escalated_at` (the server's record),
    /// every escalation.
    pub escalation_recorded: Vec<f64>,
    /// Arrivals of a `webhook-id` that had been answered 2xx already.
    pub duplicates: usize,
    /// One alarm's raising (or escalation) under more than one id: the
    /// ids beyond the first.
    pub repeated_events: usize,
    /// Events of no alarm posted here, of an ordinary response, of an
    /// unknown type, or escalations of acknowledged alarms.
    pub unexpected: usize,
    /// Arrivals whose signature or timestamp did not verify.
    pub unverified: usize,
    /// When the last event that counts arrived.
    pub last_arrival: Option<Instant>,
    /// When the last raised event that counts arrived.
    pub last_raised: Option<Instant>,
}

impl Tally {
    /// Events the server owes: each alarm's raising, and the escalation of
    /// each one not acknowledged.
    pub fn expected(&self) -> usize {
        self.alarms + self.alarms - self.acknowledged
    }

    /// Distinct events that arrived and were owed.
    pub fn delivered(&self) -> usize {
        self.raised_delivered + self.escalated_delivered
    }

    /// Every owed event arrived.
    pub fn complete(&self) -> bool {
        self.delivered() == self.expected()
    }

    /// Nothing arrived that must not have.
    pub fn clean(&self) -> bool {
        self.duplicates == 0
            && self.repeated_events == 0
            && self.unexpected == 0
            && self.unverified == 0
    }

    /// What arrived, one line.
    pub fn describe(&self) -> String {
        format!(
            "{} alarms ({} acknowledged): {} of {} events arrived ({} raised, {} escalated); \
             duplicates {}, repeated events {}, unexpected {}, unverified {}",
            self.alarms,
            self.acknowledged,
            self.delivered(),
            self.expected(),
            self.raised_delivered,
            self.escalated_delivered,
            self.duplicates,
            self.repeated_events,
            self.unexpected,
            self.unverified
        )
    }
}

/// Holds `arrivals` against `posted` and the alarms `acknowledged` (ids).
pub fn tally(posted: &[Posted], acknowledged: &BTreeSet<i64>, arrivals: &[Arrival]) -> Tally {
    let by_response: HashMap<i64, &Posted> = posted.iter().map(|p| (p.response_id, p)).collect();
    let mut t = Tally {
        alarms: posted.iter().filter(|p| p.raises).count(),
        ..Tally::default()
    };
    // Per webhook-id, how often it arrived; per alarm and type, the ids.
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut ids: BTreeMap<(String, i64), BTreeSet<&str>> = BTreeMap::new();
    // The alarms whose raising arrived, by response: each alarm's id.
    let mut alarm_of: HashMap<i64, i64> = HashMap::new();
    let mut escalated: BTreeSet<i64> = BTreeSet::new();
    for arrival in arrivals {
        if !arrival.verified {
            t.unverified += 1;
        }
        let count = seen.entry(arrival.webhook_id.as_str()).or_default();
        *count += 1;
        if *count > 1 {
            t.duplicates += 1;
            continue;
        }
        let event = Event::of(arrival);
        let post = event.response_id.and_then(|r| by_response.get(&r));
        let (Some(post), Some(alarm)) = (post, event.alarm_id) else {
            t.unexpected += 1;
            continue;
        };
        if !post.raises {
            t.unexpected += 1;
            continue;
        }
        let first = {
            let ids = ids.entry((event.kind.clone(), alarm)).or_default();
            ids.insert(arrival.webhook_id.as_str());
            ids.len() == 1
        };
        if !first {
            t.repeated_events += 1;
            continue;
        }
        match event.kind.as_str() {
            RAISED => {
                t.raised_delivered += 1;
                alarm_of.insert(post.response_id, alarm);
                t.last_raised = t.last_raised.max(Some(arrival.at));
                if post.part == Part::Steady {
                    t.first_attempt
                        .push(signed_seconds(post.answered, arrival.at));
                }
            }
            ESCALATED if acknowledged.contains(&alarm) => {
                t.unexpected += 1;
                continue;
            }
            ESCALATED => {
                t.escalated_delivered += 1;
                escalated.insert(alarm);
                if let Some(deadline) = event.deadline {
                    if post.part == Part::Steady {
                        t.escalation_arrival
                            .push(seconds_between(deadline, arrival.wall));
                    }
                    if let Some(at) = event.escalated_at {
                        t.escalation_recorded.push(seconds_between(deadline, at));
                    }
                }
            }
            _ => {
                t.unexpected += 1;
                continue;
            }
        }
        t.last_arrival = t.last_arrival.max(Some(arrival.at));
    }
    // Acknowledged alarms of this set of POSTs only.
    let ours: BTreeSet<i64> = alarm_of.values().copied().collect();
    t.acknowledged = acknowledged.intersection(&ours).count();
    t
}

/// `to - from` in seconds, negative when `to` is earlier.
fn signed_seconds(from: Instant, to: Instant) -> f64 {
    match to.checked_duration_since(from) {
        Some(d) => d.as_secs_f64(),
        None => -from.duration_since(to).as_secs_f64(),
    }
}

fn seconds_between(from: DateTime<Utc>, to: DateTime<Utc>) -> f64 {
    (to - from).num_microseconds().unwrap_or(i64::MAX) as f64 / 1e6
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use chrono::TimeZone;
    use serde_json::json;

    use super::*;

    fn noon() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0)
            .single()
            .expect("a time")
    }

    fn wire(t: DateTime<Utc>) -> String {
        t.to_rfc3339_opts(chrono::SecondsFormat::Millis, false)
    }

    /// An arrival of event `id` of type `kind` for alarm `alarm` of
    /// response `response`, `after` the start, with a deadline at noon
    /// and, for an escalation, escalated 10 s after it.
    fn arrival(
        start: Instant,
        after: f64,
        id: &str,
        kind: &str,
        alarm: i64,
        response: i64,
    ) -> Arrival {
        let escalated = (kind == ESCALATED).then(|| wire(noon() + chrono::Duration::seconds(10)));
        Arrival {
            at: start + Duration::from_secs_f64(after),
            wall: noon() + chrono::Duration::milliseconds((after * 1000.0) as i64),
            webhook_id: id.to_owned(),
            verified: true,
            body: json!({"type": kind, "event_id": id, "data": {
                "id": alarm, "response_id": response,
                "deadline": wire(noon()), "escalated_at": escalated}}),
        }
    }

    fn posted(start: Instant, response: i64, after: f64, raises: bool, part: Part) -> Posted {
        Posted {
            response_id: response,
            answered: start + Duration::from_secs_f64(after),
            part,
            raises,
        }
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        assert_eq!(Summary::of(&[]), None);
        let one = Summary::of(&[2.5]).expect("one");
        assert_eq!((one.p50, one.p99, one.max, one.count), (2.5, 2.5, 2.5, 1));
        // 1..=100 shuffled: the p-th percentile is p itself.
        let figures: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        let s = Summary::of(&figures).expect("some");
        assert_eq!((s.p50, s.p90, s.p99, s.max), (50.0, 90.0, 99.0, 100.0));
        // Ten figures: p99 is the largest, p50 the fifth.
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        let s = Summary::of(&ten).expect("some");
        assert_eq!((s.p50, s.p90, s.p99, s.max), (5.0, 9.0, 10.0, 10.0));
        // Negative figures sort first.
        let s = Summary::of(&[0.5, -0.1, 0.2]).expect("some");
        assert_eq!((s.p50, s.max), (0.2, 0.5));
    }

    #[test]
    fn events_are_matched_by_response_and_timed_from_the_201() {
        let start = Instant::now();
        let posts = [
            posted(start, 1, 1.0, true, Part::Steady),
            posted(start, 2, 1.5, false, Part::Steady),
            posted(start, 3, 2.0, true, Part::Steady),
            posted(start, 4, 3.0, true, Part::Outage),
        ];
        let acknowledged = BTreeSet::from([30]);
        let arrivals = [
            arrival(start, 1.25, "msg_a", RAISED, 10, 1),
            // Before the client read its 201.
            arrival(start, 1.9, "msg_b", RAISED, 30, 3),
            arrival(start, 70.0, "msg_c", ESCALATED, 10, 1),
            arrival(start, 200.0, "msg_d", RAISED, 40, 4),
            arrival(start, 210.0, "msg_e", ESCALATED, 40, 4),
        ];
        let t = tally(&posts, &acknowledged, &arrivals);
        assert_eq!((t.alarms, t.acknowledged), (3, 1));
        assert_eq!(t.expected(), 5);
        assert_eq!((t.raised_delivered, t.escalated_delivered), (3, 2));
        assert!(t.complete() && t.clean(), "{}", t.describe());
        // Only the steady part's raisings are timed.
        assert_eq!(t.first_attempt.len(), 2);
        assert!((t.first_attempt[0] - 0.25).abs() < 1e-6);
        assert!((t.first_attempt[1] + 0.1).abs() < 1e-6);
        // Arrival 70 s after noon, the deadline: 70 s late; the outage
        // part's escalation only by the server's record.
        assert_eq!(t.escalation_arrival.len(), 1);
        assert!((t.escalation_arrival[0] - 70.0).abs() < 1e-6);
        assert_eq!(t.escalation_recorded, vec![10.0, 10.0]);
        assert_eq!(t.last_arrival, Some(start + Duration::from_secs(210)));
        assert_eq!(t.last_raised, Some(start + Duration::from_secs(200)));
    }

    #[test]
    fn missing_events_leave_it_incomplete() {
        let start = Instant::now();
        let posts = [
            posted(start, 1, 1.0, true, Part::Steady),
            posted(start, 2, 1.0, true, Part::Outage),
        ];
        let arrivals = [
            arrival(start, 2.0, "msg_a", RAISED, 10, 1),
            arrival(start, 3.0, "msg_b", RAISED, 20, 2),
            arrival(start, 70.0, "msg_c", ESCALATED, 10, 1),
        ];
        let t = tally(&posts, &BTreeSet::new(), &arrivals);
        assert_eq!((t.delivered(), t.expected()), (3, 4));
        assert!(!t.complete() && t.clean());
    }

    #[test]
    fn duplicates_repeats_and_strays_are_counted() {
        let start = Instant::now();
        let posts = [
            posted(start, 1, 1.0, true, Part::Steady),
            posted(start, 2, 1.0, false, Part::Steady),
            posted(start, 3, 1.0, true, Part::Steady),
        ];
        let acknowledged = BTreeSet::from([30]);
        let mut unsigned = arrival(start, 9.0, "msg_g", RAISED, 30, 3);
        unsigned.verified = false;
        let arrivals = [
            arrival(start, 2.0, "msg_a", RAISED, 10, 1),
            // The same id again after its 2xx: a duplicate, twice.
            arrival(start, 12.0, "msg_a", RAISED, 10, 1),
            arrival(start, 13.0, "msg_a", RAISED, 10, 1),
            // The same alarm's raising under a second id.
            arrival(start, 14.0, "msg_b", RAISED, 10, 1),
            // An ordinary response's, an unknown response's, an unknown
            // type, an acknowledged alarm's escalation.
            arrival(start, 3.0, "msg_c", RAISED, 20, 2),
            arrival(start, 4.0, "msg_d", RAISED, 99, 99),
            arrival(start, 5.0, "msg_e", "alarm.other", 10, 1),
            arrival(start, 70.0, "msg_f", ESCALATED, 30, 3),
            unsigned,
        ];
        let t = tally(&posts, &acknowledged, &arrivals);
        assert_eq!(t.duplicates, 2);
        assert_eq!(t.repeated_events, 1);
        assert_eq!(t.unexpected, 4);
        assert_eq!(t.unverified, 1);
        assert!(!t.clean());
        // What counts still counts: both raisings; alarm 10's escalation
        // is owed and missing.
        assert_eq!((t.raised_delivered, t.escalated_delivered), (2, 0));
        assert_eq!((t.delivered(), t.expected()), (2, 3));
        assert_eq!(t.last_arrival, Some(start + Duration::from_secs(9)));
    }
}
