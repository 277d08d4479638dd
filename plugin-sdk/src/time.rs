//! Chronological order of responses by their RFC 3339 `completed_at`.
//! Comparing the strings is not enough: `…:00Z` and `…:00.5Z` differ in
//! length, and offsets other than `Z` shift the instant. Plugins have no
//! clock or date library, so this is a small parser of the format the host
//! sends, shared by every calculator that orders responses.

use std::cmp::Ordering;

/// Seconds since 1970-01-01T00:00:00Z and nanoseconds, from an RFC 3339
/// timestamp (`2026-03-01T09:30:00Z`, `…T09:30:00.250+01:00`); `None` when
/// the text is not one.
pub fn parse(text: &str) -> Option<(i64, u32)> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    if !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let year = digits(&b[0..4])?;
    let month = digits(&b[5..7])?;
    let day = digits(&b[8..10])?;
    let hour = digits(&b[11..13])?;
    let minute = digits(&b[14..16])?;
    let second = digits(&b[17..19])?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }

    let mut rest = &b[19..];
    let mut nanos = 0u32;
    if let [b'.', tail @ ..] = rest {
        let n = tail.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        for (i, c) in tail[..n].iter().enumerate().take(9) {
            nanos += u32::from(c - b'0') * 10u32.pow(8 - i as u32);
        }
        rest = &tail[n..];
    }
    let offset = match rest {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let minutes = digits(&[*h1, *h2])? * 60 + digits(&[*m1, *m2])?;
            if *sign == b'+' { minutes } else { -minutes }
        }
        _ => return None,
    };

    let days = days_since_epoch(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset * 60;
    Some((seconds, nanos))
}

/// Orders two timestamps by instant; text that does not parse comes after
/// every parsed one, in text order.
pub fn cmp(a: &str, b: &str) -> Ordering {
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

fn digits(b: &[u8]) -> Option<i64> {
    b.iter().try_fold(0i64, |n, c| {
        c.is_ascii_digit().then(|| n * 10 + i64::from(c - b'0'))
    })
}

/// Days from 1970-01-01 to a proleptic Gregorian date, counting years
/// from March so that the leap day falls at the end of a year.
fn days_since_epoch(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_and_leap_days_are_counted() {
        assert_eq!(parse("1970-01-01T00:00:00Z"), Some((0, 0)));
        assert_eq!(parse("2000-03-01T00:00:00Z"), Some((951_868_800, 0)));
        assert_eq!(parse("2026-03-01T09:30:00Z"), Some((1_772_357_400, 0)));
    }

    #[test]
    fn fractions_and_offsets_shift_the_instant() {
        assert_eq!(
            parse("2026-03-01T09:30:00.25Z"),
            Some((1_772_357_400, 250_000_000))
        );
        assert_eq!(parse("2026-03-01T10:30:00+01:00"), Some((1_772_357_400, 0)));
        assert_eq!(parse("2026-03-01T08:30:00-01:00"), Some((1_772_357_400, 0)));
    }

    #[test]
    fn order_is_by_instant_not_by_text() {
        assert_eq!(
            cmp("2026-03-01T09:30:00Z", "2026-03-01T09:30:00.5Z"),
            Ordering::Less
        );
        assert_eq!(
            cmp("2026-03-01T10:00:00+02:00", "2026-03-01T09:00:00Z"),
            Ordering::Less
        );
        assert_eq!(cmp("not a time", "2026-03-01T09:00:00Z"), Ordering::Greater);
    }

    #[test]
    fn malformed_text_does_not_parse() {
        for text in [
            "",
            "2026-03-01",
            "2026-13-01T00:00:00Z",
            "2026-03-01T09:30:00",
            "2026-03-01T09:30:00.Z",
            "2026-03-01T09:30:00+0100",
            "２０２６-03-01T09:30:00Z",
        ] {
            assert_eq!(parse(text), None, "{text}");
        }
    }
}
