//! Responses: what the store keeps of one questionnaire completion, and the
//! rule that derives its status from stored times so it is never stale.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::answers::{Answers, StoredAnswers};
use super::ids::{
    DossierId, MeasurementId, NonResponseId, QuestionnaireId, RespondentId, ResponseId,
    SubscriptionId,
};
use super::outcome::{Outcome, Provenance};
use super::variant::Variant;

/// Response status on the wire (docs/api/responses.md#status).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    Scheduled,
    Open,
    Aborted,
    Completed,
    Expired,
}

impl Status {
    pub const ALL: [Status; 5] = [
        Status::Scheduled,
        Status::Open,
        Status::Aborted,
        Status::Completed,
        Status::Expired,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Scheduled => "scheduled",
            Status::Open => "open",
            Status::Aborted => "aborted",
            Status::Completed => "completed",
            Status::Expired => "expired",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// The status of a response at `now`. Precedence: completed, then expired
    /// (the window closed without completion, aborted or not), then aborted,
    /// then scheduled (window not yet open), else open.
    pub fn at(times: &ResponseTimes, now: DateTime<Utc>) -> Status {
        if times.completed_at.is_some() {
            Status::Completed
        } else if times.open_till.is_some_and(|t| t <= now) {
            Status::Expired
        } else if times.aborted_at.is_some() {
            Status::Aborted
        } else if times.open_from.is_some_and(|t| t > now) {
            Status::Scheduled
        } else {
            Status::Open
        }
    }
}

/// The stored times status is derived from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResponseTimes {
    pub open_from: Option<DateTime<Utc>>,
    pub open_till: Option<DateTime<Utc>>,
    pub started_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
    pub aborted_at: Option<DateTime<Utc>>,
}

/// Who a response was prepared for (`completer_type`).
pub const COMPLETER_PATIENT: &str = "patient";
/// `completer_type` of responses entered for the professional respondent.
pub const COMPLETER_PROFESSIONAL: &str = "ad_hoc_professional";

/// A stored response.
#[derive(Debug, Clone)]
pub struct Response {
    pub id: ResponseId,
    pub dossier_id: DossierId,
    pub respondent_id: RespondentId,
    pub questionnaire_id: QuestionnaireId,
    pub questionnaire_key: String,
    pub questionnaire_name: String,
    pub external_id: Option<String>,
    pub completer_type: String,
    pub flags: Map<String, Value>,
    pub textvars: Map<String, Value>,
    pub measurement_id: Option<MeasurementId>,
    pub non_response_id: Option<NonResponseId>,
    pub protocol_subscription_id: Option<SubscriptionId>,
    pub times: ResponseTimes,
    /// Answers given so far (all of them once completed).
    pub answers: StoredAnswers,
    /// The language it was filled out in (ISO 639-1); None before it was,
    /// or when completed before the service recorded it.
    pub language: Option<String>,
    /// SHA-256 of the translation overlay whose texts it was filled out
    /// in; None for the definition's own texts.
    pub translation_sha256: Option<String>,
    /// The key of the page of the fill-out pages the respondent is on
    /// (docs/api/fill-out.md#pages); None: the first.
    pub fill_out_page: Option<String>,
    /// The language (ISO 639-1) a fill-out request asked its pages to be
    /// in; None when none was asked.
    pub fill_out_language: Option<String>,
    pub outcome: Outcome,
    pub provenance: Provenance,
    /// EPD ids of the professionals who requested the completion.
    pub requesters: Vec<String>,
    /// EPD user id of the professional who entered it; None when the
    /// respondent did.
    pub entered_by: Option<String>,
    pub created_at: DateTime<Utc>,
    /// The respondent's link generation when this was read: a
    /// `completing_url` made from it names it, and revoking the
    /// respondent's links moves it on. None when not read (a response just
    /// POSTed, which is completed: no `completing_url` is made for it).
    pub link_generation: Option<i64>,
}

/// A completed response to be stored (POST) or to complete a pending one
/// (PUT).
#[derive(Debug, Clone)]
pub struct Completion {
    pub questionnaire_id: QuestionnaireId,
    pub answers: Answers,
    pub started_at: Option<DateTime<Utc>>,
    pub completed_at: DateTime<Utc>,
    /// The flags and textvars it was filled out with: those of the pending
    /// response it completes, or those given with a POST.
    pub variant: Variant,
    /// The language it was filled out in (ISO 639-1).
    pub language: String,
    /// SHA-256 of the translation overlay of that language, if its texts
    /// came from one.
    pub translation_sha256: Option<String>,
    pub outcome: Outcome,
    pub provenance: Provenance,
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(h: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 1, h, 0, 0)
            .single()
            .expect("valid")
    }

    #[test]
    fn status_follows_the_window() {
        let window = ResponseTimes {
            open_from: Some(at(9)),
            open_till: Some(at(17)),
            ..Default::default()
        };
        assert_eq!(Status::at(&window, at(8)), Status::Scheduled);
        assert_eq!(Status::at(&window, at(9)), Status::Open);
        assert_eq!(Status::at(&window, at(16)), Status::Open);
        assert_eq!(Status::at(&window, at(17)), Status::Expired);
        assert_eq!(Status::at(&ResponseTimes::default(), at(12)), Status::Open);
    }

    #[test]
    fn completion_wins_and_expiry_beats_abort() {
        let completed = ResponseTimes {
            open_till: Some(at(10)),
            completed_at: Some(at(9)),
            ..Default::default()
        };
        assert_eq!(Status::at(&completed, at(12)), Status::Completed);
        let aborted = ResponseTimes {
            open_till: Some(at(10)),
            aborted_at: Some(at(9)),
            ..Default::default()
        };
        assert_eq!(Status::at(&aborted, at(9)), Status::Aborted);
        assert_eq!(Status::at(&aborted, at(11)), Status::Expired);
    }

    #[test]
    fn status_names_round_trip() {
        for s in Status::ALL {
            assert_eq!(Status::parse(s.as_str()), Some(s));
        }
        assert_eq!(Status::parse("new"), None);
    }
}
