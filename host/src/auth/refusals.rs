//! Refusals without valid credentials, counted rather than written one by
//! one (docs/api/rights.md#access-log): per minute, one access-log row per
//! client, route, status and claimed token, carrying the count. A flood of
//! bad requests so costs a few rows a minute, not a write each queued
//! before the clinical ones. Nothing is handed out on such a refusal, so
//! the row need not be on disk before the answer leaves.
//!
//! Pure bookkeeping: the caller (`service.rs`) writes what this hands back.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::store::AccessEntry;

/// Counted rows held at most; past it, all are handed back to be written.
const MAX_GROUPS: usize = 10_000;

/// What rows are counted by. The claimed consumer key splits rows only
/// when it names a token (a guess at a real token's secret is recorded
/// under it); keys that name nothing are the client's invention, and
/// would let it make a row per guess.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct GroupKey {
    minute: i64,
    client: String,
    action: String,
    status: u16,
    token: Option<String>,
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
    /// Counts `entry` (`known`: its consumer key names a token). Returns
    /// the rows to write now: those of minutes before this one, or all of
    /// them when there are too many to hold.
    pub fn count(&self, entry: AccessEntry, known: bool) -> Vec<AccessEntry> {
        let mut groups = self.lock();
        let minute = minute_of(&entry);
        let mut due = if minute > groups.minute {
            groups.minute = minute;
            take(&mut groups, |key| key.minute < minute)
        } else {
            Vec::new()
        };
        let key = GroupKey {
            minute,
            client: entry.client.clone(),
            action: entry.action.clone(),
            status: entry.status,
            token: entry.claimed_key.clone().filter(|_| known),
        };
        let seq = groups.next;
        match groups.by_key.get_mut(&key) {
            Some(group) => {
                let row = &mut group.row;
                row.refusals = Some(row.refusals.unwrap_or(1).saturating_add(1));
                // What the refusals do not share is not recorded.
                if row.claimed_key != entry.claimed_key {
                    row.claimed_key = None;
                }
                if row.claimed_issuer != entry.claimed_issuer {
                    row.claimed_issuer = None;
                }
                if row.claimed_subject != entry.claimed_subject {
                    row.claimed_subject = None;
                }
                if row.dossier != entry.dossier {
                    row.dossier = None;
                }
            }
            None => {
                groups.next += 1;
                let row = AccessEntry {
                    refusals: Some(1),
                    ..entry
                };
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
    let mut taken: Vec<Group> = keys
        .iter()
        .filter_map(|k| groups.by_key.remove(k))
        .collect();
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
    fn too_many_rows_are_handed_back_at_once() {
        let refusals = Refusals::default();
        let mut written = 0;
        for n in 0..MAX_GROUPS {
            written += refusals
                .count(
                    refusal(&format!("10.0.{}.{}", n / 256, n % 256), None, "d1", 401),
                    false,
                )
                .len();
        }
        assert_eq!(written, MAX_GROUPS);
        assert_eq!(refusals.take_all(), vec![]);
    }
}
