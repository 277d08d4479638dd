//! Fill-out sessions (docs/api/fill-out.md#start-a-fill-out-session): a
//! respondent filling out a list of responses on the hosted pages, one
//! after another, and the one rule of where they go next.
//!
//! A session idles out after `IDLE_LIMIT` (2 hours) and ends after
//! `LIFETIME` (24 hours).

use chrono::{DateTime, Duration, Utc};

use super::ids::{DossierId, RespondentId, ResponseId};
use super::response::{Response, Status};

/// A browser session is over this long after its last activity (login or
/// a submitted page): long enough to fill out a long questionnaire at a
/// reading pace, short enough that a shared computer does not stay
/// logged in for the day.
pub const IDLE_LIMIT: Duration = Duration::hours(2);

/// ... and this long after login, whatever happens.
pub const LIFETIME: Duration = Duration::hours(24);

/// Activity is written down at most this often: a page shown within a
/// minute of the last recorded activity costs no write.
pub const TOUCH_EVERY: Duration = Duration::minutes(1);

/// A fill-out session after login.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FillOutSession {
    pub id: i64,
    pub dossier_id: DossierId,
    /// The dossier's EPD id (for the access log).
    pub epd_id: String,
    pub respondent_id: RespondentId,
    /// The responses to fill out, in order.
    pub response_ids: Vec<ResponseId>,
    /// Where the respondent goes after the last questionnaire or on
    /// interrupting; None for a session opened with a `completing_url`,
    /// which ends on the service's own page.
    pub return_to: Option<String>,
    /// The caller's progress page, visited before the first questionnaire
    /// and between questionnaires.
    pub progress_url: Option<String>,
    /// Loaded after the built-in stylesheet.
    pub stylesheet: Option<String>,
    /// The language (ISO 639-1) the caller asked the pages to be in.
    pub language: Option<String>,
    pub logged_in_at: DateTime<Utc>,
    pub last_seen_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
}

impl FillOutSession {
    /// Whether the session can still be used at `now`.
    pub fn is_live(&self, now: DateTime<Utc>) -> bool {
        self.ended_at.is_none()
            && now < self.last_seen_at + IDLE_LIMIT
            && now < self.logged_in_at + LIFETIME
    }

    /// Whether activity at `now` should be written down (see
    /// [`TOUCH_EVERY`]).
    pub fn needs_touch(&self, now: DateTime<Utc>) -> bool {
        now >= self.last_seen_at + TOUCH_EVERY
    }
}

/// Whether a response can be filled out now: open, or aborted and still in
/// its window (resuming). Scheduled, expired, completed or withdrawn ones
/// cannot, nor can one aborted before its window opened.
pub fn can_fill_out(r: &Response, now: DateTime<Utc>) -> bool {
    r.non_response_id.is_none()
        && r.times.open_from.is_none_or(|from| from <= now)
        && matches!(Status::at(&r.times, now), Status::Open | Status::Aborted)
}

/// Where a session stands: what was filled out, what is still to do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    /// Questionnaire keys of the responses completed, in session order.
    pub completed: Vec<String>,
    /// The responses still to fill out, in session order, with their
    /// questionnaire keys. The first is the next one.
    pub pending: Vec<(ResponseId, String)>,
}

impl Progress {
    /// The progress of a session whose responses (in any order; those not
    /// found are gone) are `responses`. A response that can no longer be
    /// filled out (expired, withdrawn meanwhile) is in neither list.
    pub fn of(session: &FillOutSession, responses: &[Response], now: DateTime<Utc>) -> Progress {
        let mut progress = Progress::default();
        for id in &session.response_ids {
            let Some(r) = responses.iter().find(|r| r.id == *id) else {
                continue;
            };
            if r.times.completed_at.is_some() {
                progress.completed.push(r.questionnaire_key.clone());
            } else if can_fill_out(r, now) {
                progress.pending.push((r.id, r.questionnaire_key.clone()));
            }
        }
        progress
    }

    /// The response to fill out next.
    pub fn next(&self) -> Option<ResponseId> {
        self.pending.first().map(|(id, _)| *id)
    }

    /// Position of `id` among all the session's questionnaires that were or
    /// are to be filled out (1-based), and their number.
    pub fn position(&self, id: ResponseId) -> Option<(usize, usize)> {
        let at = self.pending.iter().position(|(p, _)| *p == id)?;
        Some((
            self.completed.len() + at + 1,
            self.completed.len() + self.pending.len(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use serde_json::Map;

    use super::*;
    use crate::domain::answers::StoredAnswers;
    use crate::domain::ids::QuestionnaireId;
    use crate::domain::outcome::{Outcome, Provenance};
    use crate::domain::response::ResponseTimes;

    fn at(h: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 1, h, 0, 0)
            .single()
            .expect("valid")
    }

    fn response(id: i64, key: &str, times: ResponseTimes) -> Response {
        Response {
            id: ResponseId(id),
            dossier_id: DossierId(1),
            respondent_id: RespondentId(1),
            questionnaire_id: QuestionnaireId(1),
            questionnaire_key: key.to_owned(),
            questionnaire_name: key.to_uppercase(),
            external_id: None,
            completer_type: "patient".to_owned(),
            flags: Map::new(),
            textvars: Map::new(),
            measurement_id: None,
            non_response_id: None,
            protocol_subscription_id: None,
            times,
            answers: StoredAnswers::default(),
            language: None,
            translation_sha256: None,
            fill_out_page: None,
            fill_out_language: None,
            outcome: Outcome::empty(),
            provenance: Provenance::default(),
            requesters: Vec::new(),
            entered_by: None,
            created_at: at(8),
            link_generation: Some(0),
        }
    }

    fn session(ids: &[i64]) -> FillOutSession {
        FillOutSession {
            id: 1,
            dossier_id: DossierId(1),
            epd_id: "d".to_owned(),
            respondent_id: RespondentId(1),
            response_ids: ids.iter().copied().map(ResponseId).collect(),
            return_to: None,
            progress_url: None,
            stylesheet: None,
            language: None,
            logged_in_at: at(9),
            last_seen_at: at(9),
            ended_at: None,
        }
    }

    #[test]
    fn progress_follows_the_session_order_and_skips_what_cannot_be_filled_out() {
        let done = ResponseTimes {
            completed_at: Some(at(9)),
            ..Default::default()
        };
        let aborted = ResponseTimes {
            aborted_at: Some(at(8)),
            ..Default::default()
        };
        let expired = ResponseTimes {
            open_till: Some(at(10)),
            ..Default::default()
        };
        let responses = [
            response(4, "gad7", ResponseTimes::default()),
            response(3, "who5", expired),
            response(2, "k10", aborted),
            response(1, "phq9", done),
        ];
        let progress = Progress::of(&session(&[1, 2, 3, 4, 5]), &responses, at(11));
        assert_eq!(progress.completed, ["phq9"]);
        assert_eq!(
            progress.pending,
            [
                (ResponseId(2), "k10".to_owned()),
                (ResponseId(4), "gad7".to_owned())
            ]
        );
        assert_eq!(progress.next(), Some(ResponseId(2)));
        assert_eq!(progress.position(ResponseId(4)), Some((3, 3)));
        assert_eq!(progress.position(ResponseId(1)), None);
        // Before expiry, the third one is still to do.
        let progress = Progress::of(&session(&[1, 2, 3, 4]), &responses, at(9));
        assert_eq!(progress.pending.len(), 3);
    }

    #[test]
    fn scheduled_responses_cannot_be_filled_out_yet() {
        let later = ResponseTimes {
            open_from: Some(at(12)),
            ..Default::default()
        };
        assert!(!can_fill_out(&response(1, "phq9", later), at(11)));
        assert!(can_fill_out(&response(1, "phq9", later), at(12)));
        // Aborted ranks above scheduled in the status, but the window
        // still has to be open.
        let aborted_early = ResponseTimes {
            aborted_at: Some(at(10)),
            ..later
        };
        assert!(!can_fill_out(&response(1, "phq9", aborted_early), at(11)));
        assert!(can_fill_out(&response(1, "phq9", aborted_early), at(12)));
    }

    #[test]
    fn a_session_ends_when_idle_too_long_or_too_old() {
        let mut s = session(&[]);
        assert!(s.is_live(at(10)));
        assert!(!s.is_live(at(9) + IDLE_LIMIT));
        s.last_seen_at = at(20);
        assert!(s.is_live(at(21)));
        assert!(!s.is_live(at(9) + LIFETIME));
        s.ended_at = Some(at(20));
        assert!(!s.is_live(at(20)));
    }

    #[test]
    fn activity_is_written_down_at_most_once_a_minute() {
        let s = session(&[]);
        assert!(!s.needs_touch(at(9)));
        assert!(!s.needs_touch(at(9) + TOUCH_EVERY - Duration::seconds(1)));
        assert!(s.needs_touch(at(9) + TOUCH_EVERY));
    }
}
