//! Time on the wire: output in ISO 8601 with milliseconds and a numeric UTC
//! offset in the configured zone; input as Unix seconds or ISO 8601
//! (docs/api/conventions.md#timestamps). All times are kept in UTC inside
//! the service.

use chrono::{DateTime, LocalResult, NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;

/// 1999-12-31 00:00 UTC: the earliest `started_at` / `filled_out_at`
/// (docs/api/conventions.md#earliest-accepted-time).
pub const EARLIEST_UNIX: i64 = 946_598_400;

/// 9999-12-31 23:59:59 UTC: the latest time accepted on input.
pub const LATEST_UNIX: i64 = 253_402_300_799;

/// Renders `t` as `2026-03-01T09:30:00.000+01:00` in `zone`.
pub fn format(t: DateTime<Utc>, zone: Tz) -> String {
    t.with_timezone(&zone)
        .format("%Y-%m-%dT%H:%M:%S%.3f%:z")
        .to_string()
}

/// Milliseconds since the Unix epoch, the form the store keeps.
pub fn to_millis(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

/// The inverse of [`to_millis`]; out-of-range values clamp to the epoch
/// rather than panic (the store only holds values it wrote).
pub fn from_millis(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

/// Unix seconds as a time, if representable and not after year 9999.
pub fn from_unix(secs: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(secs, 0).filter(|t| t.timestamp() <= LATEST_UNIX)
}

/// Parses a filter time: Unix seconds, RFC 3339 (`2026-03-01T09:30:00+01:00`,
/// `...Z`), a local date-time without offset, or a date (local midnight).
/// Local forms are read in `zone`.
pub fn parse_filter(text: &str, zone: Tz) -> Option<DateTime<Utc>> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<i64>() {
        return from_unix(secs);
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    let local = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
        .or_else(|_| NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f"))
        .or_else(|_| {
            NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .map(|d| d.and_hms_opt(0, 0, 0).unwrap_or_default())
        })
        .ok()?;
    match zone.from_local_datetime(&local) {
        LocalResult::Single(t) => Some(t.with_timezone(&Utc)),
        // In the repeated hour of a DST change take the first; in the
        // skipped hour there is no such local time.
        LocalResult::Ambiguous(first, _) => Some(first.with_timezone(&Utc)),
        LocalResult::None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s)
            .expect("valid")
            .with_timezone(&Utc)
    }

    #[test]
    fn output_carries_milliseconds_and_a_numeric_offset() {
        let t = utc("2026-03-01T08:30:00.5Z");
        assert_eq!(format(t, Tz::UTC), "2026-03-01T08:30:00.500+00:00");
        assert_eq!(
            format(t, Tz::Europe__Amsterdam),
            "2026-03-01T09:30:00.500+01:00"
        );
        assert_eq!(
            format(utc("2026-07-01T08:30:00Z"), Tz::Europe__Amsterdam),
            "2026-07-01T10:30:00.000+02:00"
        );
    }

    #[test]
    fn filters_accept_unix_seconds_and_iso_8601() {
        let ams = Tz::Europe__Amsterdam;
        assert_eq!(
            parse_filter("1772353800", ams),
            Some(utc("2026-03-01T08:30:00Z"))
        );
        assert_eq!(
            parse_filter("2026-03-01T09:30:00+01:00", ams),
            Some(utc("2026-03-01T08:30:00Z"))
        );
        assert_eq!(
            parse_filter("2026-03-01T08:30:00Z", ams),
            Some(utc("2026-03-01T08:30:00Z"))
        );
        assert_eq!(
            parse_filter("2026-03-01T09:30:00", ams),
            Some(utc("2026-03-01T08:30:00Z"))
        );
        assert_eq!(
            parse_filter("2026-03-01", ams),
            Some(utc("2026-02-28T23:00:00Z"))
        );
        assert_eq!(parse_filter("yesterday", ams), None);
        assert_eq!(parse_filter("99999999999999", ams), None);
        // 02:30 on 29 March 2026 does not exist in Amsterdam.
        assert_eq!(parse_filter("2026-03-29T02:30:00", ams), None);
    }

    #[test]
    fn millis_round_trip() {
        let t = utc("2026-03-01T08:30:00.123Z");
        assert_eq!(from_millis(to_millis(t)), t);
    }
}
