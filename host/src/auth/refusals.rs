//! Refusals counted rather than written one by one
//! (docs/api/rights.md#access-log): per minute, one access-log row per
//! client, route, status and token, carrying the count. A flood of bad
//! requests so costs a few rows a minute, not a write each queued before
//! the clinical ones. Nothing is handed out on a refusal, so the row need
//! not be on disk before the answer leaves.
//!
//! However many clients refuse (a botnet, an IPv6 /48 has 65,536 /64s),
//! a minute has at most [`MAX_ROWS_PER_MINUTE`] client rows; the refusals
//! of clients past them are counted in an overflow row per route and
//! status, whose client is [`OVERFLOW_CLIENT`].
//!
//! Pure bookkeeping: the caller (`service.rs`) writes what this hands back.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::store::AccessEntry;

/// Counted rows held at most; past it, all are handed back to be written.
const MAX_GROUPS: usize = 10_000;

/// Rows of single clients a minute at most; later clients are counted in
/// the overflow rows.
pub const MAX_ROWS_PER_MINUTE: usize = 100;

/// The client of an overflow row.
pub const OVERFLOW_CLIENT: &str = "others";

/// What rows are counted by. A verified token splits rows (its refusals
/// are recorded under its name); a claimed consumer key only when it names
/// a token (a guess at a real token's secret is recorded under it); keys
/// that name nothing are the client's invention, and would let it make a
/// row per guess.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct GroupKey {
    minute: i64,
    client: String,
    action: String,
    status: u16,
    verified: Option<String>,
    token: Option<String>,
}

impl GroupKey {
    /// The overflow row this key's refusal goes to.
    fn overflow(&self) -> GroupKey {
        GroupKey {
            client: OVERFLOW_CLIENT.to_owned(),
            verified: None,
            token: None,
            ..self.clone()
        }
    }

    fn is_overflow(&self) -> bool {
        self.client == OVERFLOW_CLIENT
    }
}

#[derive(Debug)]
struct Group {
    /// Order of first refusal, so rows are written in the order they began.
    seq: u64,
    /// The first refusal's row; its count in `refusals`.
    row: AccessEntry,
}

#[derive(Debug, Default)]
struct Groups {
    by_key: HashMap<GroupKey, Group>,
    next: u64,
    /// The latest minute counted in; a refusal of a later one hands back
    /// the rows of the minutes before.
    minute: i64,
    /// Client rows (not overflow rows) held, per minute.
    client_rows: HashMap<i64, usize>,
}

/// The refusals of the current minute, not yet written.
#[derive(Debug, Default)]
pub struct Refusals {
    groups: Mutex<Groups>,
}

fn minute_of(entry: &AccessEntry) -> i64 {
    entry.at.timestamp().div_euclid(60)
}

impl Refusals {
    /// Counts `entry` (`known`: its claimed consumer key names a token).
    /// Returns the rows to write now: those of minutes before this one, or
    /// all of them when there are too many to hold.
    pub fn count(&self, entry: AccessEntry, known: bool) -> Vec<AccessEntry> {
        let mut groups = self.lock();
        let minute = minute_of(&entry);
        let mut due = if minute > groups.minute {
            groups.minute = minute;
            take(&mut groups, |key| key.minute < minute)
        } else {
            Vec::new()
        };
        let mut key = GroupKey {
            minute,
            client: entry.client.clone(),
            action: entry.action.clone(),
            status: entry.status,
            verified: entry.consumer_key.clone(),
            token: entry.claimed_key.clone().filter(|_| known),
        };
        let full = groups.client_rows.get(&minute).copied().unwrap_or(0) >= MAX_ROWS_PER_MINUTE;
        if key.is_overflow() || (full && !groups.by_key.contains_key(&key)) {
            key = key.overflow();
        }
        let seq = groups.next;
        match groups.by_key.get_mut(&key) {
            Some(group) => {
                let row = &mut group.row;
                row.refusals = Some(row.refusals.unwrap_or(1).saturating_add(1));
                // What the refusals do not share is not recorded.
                let fields = [
                    (&mut row.consumer_key, &entry.consumer_key),
                    (&mut row.jwt_issuer, &entry.jwt_issuer),
                    (&mut row.claimed_key, &entry.claimed_key),
                    (&mut row.claimed_issuer, &entry.claimed_issuer),
                    (&mut row.claimed_subject, &entry.claimed_subject),
                    (&mut row.dossier, &entry.dossier),
                ];
                for (kept, other) in fields {
                    if kept != other {
                        *kept = None;
                    }
                }
            }
            None => {
                groups.next += 1;
                let mut row = AccessEntry {
                    refusals: Some(1),
                    ..entry
                };
                if key.is_overflow() {
                    row.client = OVERFLOW_CLIENT.to_owned();
                } else {
                    *groups.client_rows.entry(minute).or_default() += 1;
                }
                groups.by_key.insert(key, Group { seq, row });
            }
        }
        if groups.by_key.len() >= MAX_GROUPS {
            due.extend(take(&mut groups, |_| true));
        }
        due
    }

    /// The rows of minutes before the one `now` is in.
    pub fn take_before(&self, now: chrono::DateTime<chrono::Utc>) -> Vec<AccessEntry> {
        let minute = now.timestamp().div_euclid(60);
        take(&mut self.lock(), |key| key.minute < minute)
    }

    /// Every row counted so far.
    pub fn take_all(&self) -> Vec<AccessEntry> {
        take(&mut self.lock(), |_| true)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Groups> {
        // Counts stay consistent under a panic elsewhere: each update is
        // whole before the guard is dropped.
        self.groups
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Removes the groups `due` picks and returns their rows, oldest first.
fn take(groups: &mut Groups, due: impl Fn(&GroupKey) -> bool) -> Vec<AccessEntry> {
    if groups.by_key.is_empty() {
        return Vec::new();
    }
    let keys: Vec<GroupKey> = groups.by_key.keys().filter(|k| due(k)).cloned().collect();
    let mut taken: Vec<Group> = Vec::with_capacity(keys.len());
    for key in &keys {
        if let Some(group) = groups.by_key.remove(key) {
            if !key.is_overflow()
                && let Some(n) = groups.client_rows.get_mut(&key.minute)
            {
                *n = n.saturating_sub(1);
            }
            taken.push(group);
        }
    }
    groups.client_rows.retain(|_, n| *n > 0);
    taken.sort_by_key(|g| g.seq);
    taken.into_iter().map(|g| g.row).collect()
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Duration, TimeZone, Utc};

    use super::*;

    fn at() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 1, 9, 0, 10)
            .single()
            .unwrap_or_default()
    }

    fn refusal(client: &str, key: Option<&str>, dossier: &str, status: u16) -> AccessEntry {
        AccessEntry {
            at: at(),
            claimed_key: key.map(str::to_owned),
            dossier: Some(dossier.to_owned()),
            action: "GET /api/v1/dossiers/{dossier_id}/responses".to_owned(),
            status,
            client: client.to_owned(),
            request_id: Some(format!("{client}-{dossier}")),
            ..AccessEntry::default()
        }
    }

    #[test]
    fn a_thousand_refusals_of_one_client_are_one_row() {
        let refusals = Refusals::default();
        for n in 0..1000 {
            let due = refusals.count(refusal("192.0.2.7", None, &format!("d{n}"), 401), false);
            assert!(due.is_empty());
        }
        let rows = refusals.take_all();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].refusals, Some(1000));
        // The first one's time and request id; no dossier, as they differ.
        assert_eq!(rows[0].request_id.as_deref(), Some("192.0.2.7-d0"));
        assert_eq!(rows[0].dossier, None);
        assert_eq!(refusals.take_all(), vec![]);
    }

    /// What tells rows apart: client, consumer key, status, count, dossier.
    type Summary = (String, Option<String>, u16, Option<u32>, Option<String>);

    #[test]
    fn clients_statuses_and_real_tokens_have_rows_of_their_own() {
        let refusals = Refusals::default();
        refusals.count(refusal("192.0.2.7", Some("epd"), "d1", 401), true);
        refusals.count(refusal("192.0.2.7", Some("guess-1"), "d1", 401), false);
        refusals.count(refusal("192.0.2.7", Some("guess-2"), "d1", 401), false);
        refusals.count(refusal("192.0.2.7", None, "d1", 429), false);
        refusals.count(refusal("192.0.2.8", None, "d1", 401), false);
        refusals.count(refusal("192.0.2.7", Some("epd"), "d1", 401), true);
        let rows: Vec<Summary> = refusals
            .take_all()
            .into_iter()
            .map(|r| (r.client, r.claimed_key, r.status, r.refusals, r.dossier))
            .collect();
        let d1 = Some("d1".to_owned());
        assert_eq!(
            rows,
            vec![
                (
                    "192.0.2.7".into(),
                    Some("epd".into()),
                    401,
                    Some(2),
                    d1.clone()
                ),
                ("192.0.2.7".into(), None, 401, Some(2), d1.clone()),
                ("192.0.2.7".into(), None, 429, Some(1), d1.clone()),
                ("192.0.2.8".into(), None, 401, Some(1), d1),
            ]
        );
    }

    #[test]
    fn a_new_minute_hands_back_the_rows_of_the_last() {
        let refusals = Refusals::default();
        refusals.count(refusal("192.0.2.7", None, "d1", 401), false);
        refusals.count(refusal("192.0.2.7", None, "d1", 401), false);
        assert_eq!(refusals.take_before(at()), vec![]);
        let later = AccessEntry {
            at: at() + Duration::seconds(60),
            ..refusal("192.0.2.7", None, "d1", 401)
        };
        let due = refusals.count(later.clone(), false);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].refusals, Some(2));
        assert_eq!(due[0].at, at());
        assert_eq!(
            refusals.take_before(later.at + Duration::seconds(60)).len(),
            1
        );
    }

    #[test]
    fn a_minute_of_ever_new_clients_is_a_bounded_number_of_rows() {
        let refusals = Refusals::default();
        let mut rows = Vec::new();
        for n in 0..50_000u32 {
            let client = format!("10.{}.{}.{}", n >> 16, (n >> 8) & 255, n & 255);
            let status = if n % 2 == 0 { 401 } else { 429 };
            rows.extend(refusals.count(refusal(&client, None, "d1", status), false));
        }
        rows.extend(refusals.take_all());
        assert_eq!(rows.len(), MAX_ROWS_PER_MINUTE + 2);
        let overflow: Vec<(u16, Option<u32>)> = rows
            .iter()
            .filter(|r| r.client == OVERFLOW_CLIENT)
            .map(|r| (r.status, r.refusals))
            .collect();
        let past = (50_000 - MAX_ROWS_PER_MINUTE) as u32 / 2;
        assert_eq!(overflow, vec![(401, Some(past)), (429, Some(past))]);
        let counted: u32 = rows.iter().filter_map(|r| r.refusals).sum();
        assert_eq!(counted, 50_000);
        // A client with a row of its own keeps counting in it.
        let refusals = Refusals::default();
        for n in 0..=MAX_ROWS_PER_MINUTE {
            refusals.count(refusal(&format!("10.0.0.{n}"), None, "d1", 401), false);
        }
        refusals.count(refusal("10.0.0.0", None, "d1", 401), false);
        let rows = refusals.take_all();
        assert_eq!(rows[0].refusals, Some(2));
        assert_eq!(rows.len(), MAX_ROWS_PER_MINUTE + 1);
        // The next minute has rows of its own again.
        let later = AccessEntry {
            at: at() + Duration::seconds(60),
            ..refusal("10.9.9.9", None, "d1", 401)
        };
        refusals.count(later, false);
        assert_eq!(refusals.take_all()[0].client, "10.9.9.9");
    }

    #[test]
    fn a_verified_token_s_refusals_are_one_row_under_its_name() {
        let refusals = Refusals::default();
        let verified = |dossier: &str| AccessEntry {
            consumer_key: Some("epd".to_owned()),
            ..refusal("192.0.2.7", None, dossier, 403)
        };
        for n in 0..1000 {
            refusals.count(verified(&format!("d{n}")), false);
        }
        refusals.count(refusal("192.0.2.7", None, "d1", 403), false);
        let rows: Vec<Summary> = refusals
            .take_all()
            .into_iter()
            .map(|r| (r.client, r.consumer_key, r.status, r.refusals, r.dossier))
            .collect();
        assert_eq!(
            rows,
            vec![
                (
                    "192.0.2.7".into(),
                    Some("epd".into()),
                    403,
                    Some(1000),
                    None
                ),
                ("192.0.2.7".into(), None, 403, Some(1), Some("d1".into())),
            ]
        );
    }
}
