//! The Response object on the wire (docs/api/responses.md#response-object).

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::auth::links::Links;
use crate::domain::outcome::Outcome;
use crate::domain::response::{Response, Status};
use crate::domain::time;

/// A questionnaire completion; it need not be filled out yet.
#[derive(Debug, Serialize, ToSchema)]
pub struct ResponseView {
    /// Unique id of the response record.
    pub id: i64,
    /// Id given when the response was submitted by POST or PUT; null if
    /// created or completed inside the service.
    pub external_id: Option<String>,
    /// Id of the respondent the response belongs to.
    pub respondent_id: i64,
    /// Time of completion (ISO 8601, milliseconds, UTC offset); null if not
    /// completed.
    pub completed_at: Option<String>,
    /// Who the response was prepared for: `patient`, `ad_hoc_professional`,
    /// `parent`, `second_parent`, `teacher`. More values may be added;
    /// consumers must tolerate unknown ones.
    pub completer_type: String,
    /// URL to visit to complete this response: a link for its respondent
    /// that opens the hosted fill-out pages with all their responses that
    /// can be filled out at that moment (this one once it is open). Set on
    /// scheduled, open and aborted responses; null once completed, expired
    /// or in a non-response. It works until its `expires` (30 days after
    /// this answer, by default) and until the respondent's links are
    /// revoked (`POST .../respondents/{id}/revoke_links`).
    pub completing_url: Option<String>,
    /// Flag name to boolean.
    #[schema(value_type = Object)]
    pub flags: Map<String, Value>,
    /// Textvar name to string.
    #[schema(value_type = Object)]
    pub textvars: Map<String, Value>,
    /// Measurement the response was prepared for.
    pub measurement_id: Option<i64>,
    /// Non-response this response belongs to.
    pub non_response_id: Option<i64>,
    /// Start of the window in which the response can be completed.
    pub open_from: Option<String>,
    /// End of that window: after it, an uncompleted response is expired.
    pub open_till: Option<String>,
    pub outcome: OutcomeView,
    pub questionnaire_name: String,
    pub questionnaire_key: String,
    /// Professionals that requested the completion.
    pub requesters: Vec<RequesterView>,
    /// `scheduled`, `open`, `aborted`, `completed` or `expired`, derived at
    /// the moment of the request: completed if completed; else expired once
    /// `open_till` has passed; else aborted if filling out was aborted; else
    /// scheduled before `open_from`; else open.
    #[schema(example = "completed")]
    pub status: &'static str,
    /// Time filling out started; null if unknown.
    pub started_at: Option<String>,
    /// Question key (`v_` form) to the answer, every question in
    /// definition order (display items excepted), null when unanswered or
    /// not enabled; empty unless completed. An answer has the form of its
    /// question's type: an option key, a list of option keys, a number, an
    /// ISO date, a text.
    #[schema(value_type = Object)]
    pub values: Map<String, Value>,
    /// The language it was filled out in (ISO 639-1); null before it was
    /// completed, or when completed before the service recorded it.
    pub language: Option<String>,
    /// Deprecated: use `questionnaire_name`.
    #[schema(deprecated)]
    pub name: String,
}

/// The answer to a POST or PUT that stored a response: the Response, and
/// which answers were not stored.
#[derive(Debug, Serialize, ToSchema)]
pub struct StoredResponseView {
    #[serde(flatten)]
    pub response: ResponseView,
    /// Keys of the questions answered in `answer_data` whose answers were
    /// not stored because the question is not enabled for this response
    /// (its flags or conditions hide it), in definition order; `[]` when
    /// none. With `?strict=true` such answers are refused instead.
    pub dropped_answers: Vec<String>,
}

/// A professional that requested the completion.
#[derive(Debug, Serialize, ToSchema)]
pub struct RequesterView {
    /// Identifier of the professional given by the EPD during single sign-on.
    pub epd_id: String,
}

/// The outcome of a response. Of a response that is not completed:
/// `{"scores":{}, "action":null, "alarm":null, "attention":null, "complete":null}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct OutcomeView {
    /// Score key to score entry: `score` (true), `label`,
    /// `referenced_values`, and `value` when computed, or `missing_values`
    /// when too few items were answered; per questionnaire also `norm`,
    /// `interpretation`, `tscore`, `tscore_interpretation`, `oru_flag`,
    /// `global`. A scorer failure shows as `exception` instead of `value`.
    #[schema(value_type = Object)]
    pub scores: Map<String, Value>,
    /// `attention`, `alarm` or null.
    pub action: Option<String>,
    /// Question keys that raised the alarm; null when the questionnaire
    /// defines no alarm rule.
    pub alarm: Option<Vec<String>>,
    /// Question keys that raised attention; null when undefined.
    pub attention: Option<Vec<String>>,
    /// `"NN%"` when the questionnaire defines completeness, else null.
    pub complete: Option<String>,
    /// Only in a protocol subscription's start answer: what can be done
    /// with the response now. `fill_out`: it is open to be filled out.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub actions: Option<Map<String, Value>>,
}

impl From<&Outcome> for OutcomeView {
    fn from(o: &Outcome) -> Self {
        OutcomeView {
            scores: o.scores.clone(),
            action: o.action.clone(),
            alarm: o.alarm.clone(),
            attention: o.attention.clone(),
            complete: o.complete.clone(),
            actions: None,
        }
    }
}

impl ResponseView {
    /// The wire form of `r` at `now`, timestamps in `zone`, its
    /// `completing_url` made by `links`.
    pub fn new(r: &Response, zone: Tz, now: DateTime<Utc>, links: &Links) -> ResponseView {
        let at = |t: Option<DateTime<Utc>>| t.map(|t| time::format(t, zone));
        let status = Status::at(&r.times, now);
        let completed = status == Status::Completed;
        let pending = matches!(status, Status::Scheduled | Status::Open | Status::Aborted)
            && r.non_response_id.is_none();
        ResponseView {
            id: r.id.0,
            external_id: r.external_id.clone(),
            respondent_id: r.respondent_id.0,
            completed_at: at(r.times.completed_at),
            completer_type: r.completer_type.clone(),
            completing_url: r
                .link_generation
                .filter(|_| pending)
                .map(|generation| links.completing_url(r.respondent_id, generation, now)),
            flags: r.flags.clone(),
            textvars: r.textvars.clone(),
            measurement_id: r.measurement_id.map(|m| m.0),
            non_response_id: r.non_response_id.map(|n| n.0),
            open_from: at(r.times.open_from),
            open_till: at(r.times.open_till),
            outcome: if completed {
                OutcomeView::from(&r.outcome)
            } else {
                OutcomeView::from(&Outcome::empty())
            },
            questionnaire_name: r.questionnaire_name.clone(),
            questionnaire_key: r.questionnaire_key.clone(),
            requesters: r
                .requesters
                .iter()
                .map(|epd_id| RequesterView {
                    epd_id: epd_id.clone(),
                })
                .collect(),
            status: status.as_str(),
            started_at: at(r.times.started_at),
            values: if completed {
                r.answers.to_json().clone()
            } else {
                Map::new()
            },
            language: r.language.clone(),
            name: r.questionnaire_name.clone(),
        }
    }
}
