//! Alarms someone answers for (docs/api/alarms.md): which stored outcome
//! raises one, by when it must be acknowledged, and which step may follow
//! which. Pure: the store keeps alarms and their events, the scheduler
//! escalates, the API acknowledges and resolves, each by these rules.
//!
//! An outcome's `action` is `alarm` when an alarm question triggered or a
//! score has status alarm, else `attention` likewise
//! (docs/api/outcomes.md#outcome-object). `alarm` always raises an alarm;
//! `attention` only for the questionnaires configured to (`alarm_rules`).
//! The best-known case is PHQ-9 item 9: a positive answer raised the risk
//! of a suicide attempt in the following year about tenfold in a large
//! health-system cohort (Simon et al., Psychiatric Services 64(12), 2013).

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;

use super::ids::{AlarmId, ResponseId};
use super::outcome::Outcome;

/// An alarm as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alarm {
    pub id: AlarmId,
    /// The dossier's EPD id.
    pub dossier: String,
    pub response_id: ResponseId,
    pub questionnaire_key: String,
    pub action: AlarmAction,
    pub question_keys: Vec<String>,
    pub state: AlarmState,
    pub raised_at: DateTime<Utc>,
    pub deadline: DateTime<Utc>,
    pub acknowledged_at: Option<DateTime<Utc>>,
    /// The professional (a name or id) who acknowledged it.
    pub acknowledged_by: Option<String>,
    pub acknowledged_note: Option<String>,
    pub escalated_at: Option<DateTime<Utc>>,
    pub resolved_at: Option<DateTime<Utc>>,
    /// Why it was resolved ([`AlarmClose::as_str`]).
    pub resolved_reason: Option<String>,
    pub resolved_by: Option<String>,
    pub resolved_note: Option<String>,
}

impl Alarm {
    /// Waiting for acknowledgement past its deadline at `now`.
    pub fn overdue(&self, now: DateTime<Utc>) -> bool {
        overdue(self.state, self.deadline, now)
    }
}

/// What raised an alarm: the outcome's `action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlarmAction {
    Alarm,
    Attention,
}

impl AlarmAction {
    pub fn as_str(self) -> &'static str {
        match self {
            AlarmAction::Alarm => "alarm",
            AlarmAction::Attention => "attention",
        }
    }

    pub fn parse(text: &str) -> Option<AlarmAction> {
        match text {
            "alarm" => Some(AlarmAction::Alarm),
            "attention" => Some(AlarmAction::Attention),
            _ => None,
        }
    }
}

/// Where an alarm stands. Stored; derived from nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlarmState {
    /// Raised, nobody acknowledged it yet, its deadline not passed (as far
    /// as the scheduler has seen).
    Open,
    /// A professional said they took it on.
    Acknowledged,
    /// Its deadline passed unacknowledged; acknowledging it is still
    /// possible (and still wanted).
    Escalated,
    /// Over: resolved by a professional, or closed because its response was
    /// deleted or re-scored without it (`AlarmClose`).
    Resolved,
}

impl AlarmState {
    pub const ALL: [AlarmState; 4] = [
        AlarmState::Open,
        AlarmState::Acknowledged,
        AlarmState::Escalated,
        AlarmState::Resolved,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AlarmState::Open => "open",
            AlarmState::Acknowledged => "acknowledged",
            AlarmState::Escalated => "escalated",
            AlarmState::Resolved => "resolved",
        }
    }

    pub fn parse(text: &str) -> Option<AlarmState> {
        AlarmState::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// The states an alarm still waits in for someone: all but resolved.
    pub fn is_live(self) -> bool {
        self != AlarmState::Resolved
    }
}

impl fmt::Display for AlarmState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an alarm was resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlarmClose {
    /// A professional resolved it (`POST .../resolve`).
    Resolved,
    /// Its response was deleted.
    ResponseDeleted,
    /// Its response was withdrawn.
    ResponseWithdrawn,
    /// Re-scoring gave its response an outcome that raises no alarm.
    Rescored,
}

impl AlarmClose {
    pub fn as_str(self) -> &'static str {
        match self {
            AlarmClose::Resolved => "resolved",
            AlarmClose::ResponseDeleted => "response_deleted",
            AlarmClose::ResponseWithdrawn => "response_withdrawn",
            AlarmClose::Rescored => "rescored",
        }
    }
}

/// A step of an alarm's history (`alarm_events`), as recorded and written
/// to the access log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlarmEvent {
    Raised,
    Acknowledged,
    Escalated,
    Resolved,
}

impl AlarmEvent {
    pub fn as_str(self) -> &'static str {
        match self {
            AlarmEvent::Raised => "raised",
            AlarmEvent::Acknowledged => "acknowledged",
            AlarmEvent::Escalated => "escalated",
            AlarmEvent::Resolved => "resolved",
        }
    }

    /// The webhook event type of a step that is delivered
    /// (docs/api/alarms.md#delivery): a raised alarm and an escalation;
    /// None for the steps a professional takes, who knows of them.
    pub fn webhook_type(self) -> Option<&'static str> {
        match self {
            AlarmEvent::Raised => Some("alarm.raised"),
            AlarmEvent::Escalated => Some("alarm.escalated"),
            AlarmEvent::Acknowledged | AlarmEvent::Resolved => None,
        }
    }

    /// The step [`AlarmEvent::as_str`] names.
    pub fn parse(text: &str) -> Option<AlarmEvent> {
        [
            AlarmEvent::Raised,
            AlarmEvent::Acknowledged,
            AlarmEvent::Escalated,
            AlarmEvent::Resolved,
        ]
        .into_iter()
        .find(|e| e.as_str() == text)
    }
}

/// Why a step a caller asked for cannot be taken: the alarm is already
/// past it (docs/api/alarms.md#errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepRefused {
    AlreadyAcknowledged,
    AlreadyResolved,
}

impl StepRefused {
    /// The code of the 422 answer.
    pub fn code(self) -> &'static str {
        match self {
            StepRefused::AlreadyAcknowledged => "already_acknowledged",
            StepRefused::AlreadyResolved => "already_resolved",
        }
    }
}

/// Whether an alarm in `state` may be acknowledged: an open or escalated
/// one may; acknowledging twice or after the end may not.
pub fn may_acknowledge(state: AlarmState) -> Result<(), StepRefused> {
    match state {
        AlarmState::Open | AlarmState::Escalated => Ok(()),
        AlarmState::Acknowledged => Err(StepRefused::AlreadyAcknowledged),
        AlarmState::Resolved => Err(StepRefused::AlreadyResolved),
    }
}

/// Whether an alarm in `state` may be resolved: any that is not yet.
pub fn may_resolve(state: AlarmState) -> Result<(), StepRefused> {
    match state {
        AlarmState::Resolved => Err(StepRefused::AlreadyResolved),
        _ => Ok(()),
    }
}

/// Whether an alarm in `state` with `deadline` is escalated at `now`: open
/// (not acknowledged) and its deadline reached.
pub fn escalates(state: AlarmState, deadline: DateTime<Utc>, now: DateTime<Utc>) -> bool {
    state == AlarmState::Open && deadline <= now
}

/// Whether an alarm is overdue at `now`: waiting for acknowledgement (open
/// or escalated) past its deadline.
pub fn overdue(state: AlarmState, deadline: DateTime<Utc>, now: DateTime<Utc>) -> bool {
    matches!(state, AlarmState::Open | AlarmState::Escalated) && deadline <= now
}

/// Seconds to acknowledge an alarm by default: 4 hours.
pub const DEFAULT_ALARM_DEADLINE: u64 = 4 * 3600;

/// Longest deadline anybody may configure: 30 days.
pub const MAX_DEADLINE: u64 = 30 * 24 * 3600;

/// A questionnaire's own alarm settings (`[alarm_rules.<key>]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuestionnaireAlarms {
    /// Seconds to acknowledge an `alarm` of this questionnaire, in place of
    /// `alarm_deadline`.
    pub alarm_deadline: Option<u64>,
    /// Seconds to acknowledge an `attention` of this questionnaire; given,
    /// its `attention` outcomes raise alarms too.
    pub attention_deadline: Option<u64>,
}

/// Questionnaire key to its own alarm settings (the file's
/// `[alarm_rules.<key>]` tables).
pub type AlarmRules = BTreeMap<String, QuestionnaireAlarms>;

/// Which outcomes raise alarms, and their deadlines: the service's
/// settings `alarm_deadline` and `alarm_rules`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlarmPolicy {
    /// Seconds to acknowledge an `alarm`, unless the questionnaire says.
    pub alarm_deadline: u64,
    /// Questionnaire key to its own settings.
    pub questionnaires: AlarmRules,
    /// Where raised and escalated alarms are delivered when the token
    /// that stored the response has no endpoint of its own
    /// (`alarm_webhook_url`); None: nowhere.
    pub webhook_url: Option<String>,
}

impl Default for AlarmPolicy {
    fn default() -> Self {
        AlarmPolicy {
            alarm_deadline: DEFAULT_ALARM_DEADLINE,
            questionnaires: BTreeMap::new(),
            webhook_url: None,
        }
    }
}

/// An alarm an outcome raises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Raise {
    pub action: AlarmAction,
    /// The question keys that raised it (the outcome's `alarm` or
    /// `attention` list; empty when a score's status raised it).
    pub question_keys: Vec<String>,
    pub deadline: DateTime<Utc>,
}

impl AlarmPolicy {
    /// Checks that every deadline is between a minute and [`MAX_DEADLINE`].
    pub fn validate(&self) -> Result<(), String> {
        let check = |what: String, secs: u64| {
            if (60..=MAX_DEADLINE).contains(&secs) {
                Ok(())
            } else {
                Err(format!(
                    "{what}: {secs} seconds is outside 60..={MAX_DEADLINE}"
                ))
            }
        };
        check("alarm_deadline".into(), self.alarm_deadline)?;
        for (key, q) in &self.questionnaires {
            if let Some(secs) = q.alarm_deadline {
                check(format!("alarm_rules.{key}.alarm_deadline"), secs)?;
            }
            if let Some(secs) = q.attention_deadline {
                check(format!("alarm_rules.{key}.attention_deadline"), secs)?;
            }
        }
        Ok(())
    }

    /// The alarm `outcome` of questionnaire `questionnaire_key`, stored at
    /// `now`, raises; None when it raises none.
    pub fn raise(
        &self,
        questionnaire_key: &str,
        outcome: &Outcome,
        now: DateTime<Utc>,
    ) -> Option<Raise> {
        let own = self.questionnaires.get(questionnaire_key);
        let action = AlarmAction::parse(outcome.action.as_deref()?)?;
        let (secs, keys) = match action {
            AlarmAction::Alarm => (
                own.and_then(|q| q.alarm_deadline)
                    .unwrap_or(self.alarm_deadline),
                &outcome.alarm,
            ),
            AlarmAction::Attention => (own?.attention_deadline?, &outcome.attention),
        };
        let secs = i64::try_from(secs.min(MAX_DEADLINE)).unwrap_or(i64::MAX);
        Some(Raise {
            action,
            question_keys: keys.clone().unwrap_or_default(),
            deadline: now + Duration::seconds(secs),
        })
    }
}

/// An alarm of a response as re-scoring weighs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Earlier {
    pub id: AlarmId,
    pub action: AlarmAction,
    pub state: AlarmState,
    /// [`AlarmClose::as_str`] of a resolved one.
    pub resolved_reason: Option<String>,
}

/// What re-scoring a response changes in its alarms.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reconciled {
    /// Alarms to close ([`AlarmClose::Rescored`]): live ones the new outcome
    /// no longer raises (or raises with another action).
    pub close: Vec<AlarmId>,
    /// Whether the new outcome's alarm is raised: it raises one, no live
    /// alarm of that action exists, and no professional resolved one of
    /// that action already.
    pub raise: bool,
}

/// What re-scoring changes, given the alarm the new outcome raises (if any)
/// and the response's `earlier` alarms.
pub fn reconcile(raise: Option<&Raise>, earlier: &[Earlier]) -> Reconciled {
    let action = raise.map(|r| r.action);
    let close = earlier
        .iter()
        .filter(|a| a.state.is_live() && Some(a.action) != action)
        .map(|a| a.id)
        .collect();
    let raise = action.is_some_and(|action| {
        !earlier.iter().any(|a| {
            a.action == action
                && (a.state.is_live()
                    || a.resolved_reason.as_deref() == Some(AlarmClose::Resolved.as_str()))
        })
    });
    Reconciled { close, raise }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 1, 9, 0, 0)
            .single()
            .expect("valid")
    }

    fn outcome(action: Option<&str>, alarm: &[&str], attention: &[&str]) -> Outcome {
        let keys = |k: &[&str]| Some(k.iter().map(|s| (*s).to_owned()).collect());
        Outcome {
            action: action.map(str::to_owned),
            alarm: keys(alarm),
            attention: keys(attention),
            ..Outcome::default()
        }
    }

    #[test]
    fn an_alarm_raises_with_its_question_keys_and_the_default_deadline() {
        let raised = AlarmPolicy::default()
            .raise("phq9", &outcome(Some("alarm"), &["v_9"], &[]), now())
            .expect("raised");
        assert_eq!(raised.action, AlarmAction::Alarm);
        assert_eq!(raised.question_keys, ["v_9"]);
        assert_eq!(raised.deadline, now() + Duration::hours(4));
    }

    #[test]
    fn no_action_raises_nothing() {
        let policy = AlarmPolicy::default();
        assert_eq!(policy.raise("phq9", &outcome(None, &[], &[]), now()), None);
        assert_eq!(policy.raise("phq9", &Outcome::empty(), now()), None);
        let odd = outcome(Some("something"), &[], &[]);
        assert_eq!(policy.raise("phq9", &odd, now()), None);
    }

    #[test]
    fn attention_raises_only_where_configured_with_its_own_deadline() {
        let attention = outcome(Some("attention"), &[], &["v_1"]);
        let mut policy = AlarmPolicy::default();
        assert_eq!(policy.raise("phq9", &attention, now()), None);
        policy.questionnaires.insert(
            "phq9".into(),
            QuestionnaireAlarms {
                alarm_deadline: Some(3600),
                attention_deadline: Some(86_400),
            },
        );
        let raised = policy.raise("phq9", &attention, now()).expect("raised");
        assert_eq!(raised.action, AlarmAction::Attention);
        assert_eq!(raised.question_keys, ["v_1"]);
        assert_eq!(raised.deadline, now() + Duration::days(1));
        assert_eq!(policy.raise("gad7", &attention, now()), None);
        let alarm = outcome(Some("alarm"), &[], &[]);
        let raised = policy.raise("phq9", &alarm, now()).expect("raised");
        assert_eq!(raised.deadline, now() + Duration::hours(1));
        assert!(
            raised.question_keys.is_empty(),
            "a score's status raised it"
        );
    }

    #[test]
    fn deadlines_outside_a_minute_and_thirty_days_are_refused() {
        let mut policy = AlarmPolicy::default();
        assert_eq!(policy.validate(), Ok(()));
        policy.alarm_deadline = 59;
        assert!(policy.validate().is_err());
        policy.alarm_deadline = 60;
        policy.questionnaires.insert(
            "phq9".into(),
            QuestionnaireAlarms {
                alarm_deadline: None,
                attention_deadline: Some(MAX_DEADLINE + 1),
            },
        );
        let problem = policy.validate().expect_err("refused");
        assert!(
            problem.contains("alarm_rules.phq9.attention_deadline"),
            "{problem}"
        );
    }

    #[test]
    fn steps_follow_the_states() {
        use AlarmState::*;
        assert_eq!(may_acknowledge(Open), Ok(()));
        assert_eq!(may_acknowledge(Escalated), Ok(()));
        assert_eq!(
            may_acknowledge(Acknowledged),
            Err(StepRefused::AlreadyAcknowledged)
        );
        assert_eq!(may_acknowledge(Resolved), Err(StepRefused::AlreadyResolved));
        for state in [Open, Acknowledged, Escalated] {
            assert_eq!(may_resolve(state), Ok(()));
        }
        assert_eq!(may_resolve(Resolved), Err(StepRefused::AlreadyResolved));
    }

    #[test]
    fn only_an_open_alarm_past_its_deadline_escalates() {
        let deadline = now();
        assert!(escalates(AlarmState::Open, deadline, now()));
        assert!(!escalates(
            AlarmState::Open,
            deadline,
            now() - Duration::seconds(1)
        ));
        assert!(!escalates(AlarmState::Acknowledged, deadline, now()));
        assert!(!escalates(AlarmState::Escalated, deadline, now()));
        assert!(overdue(AlarmState::Escalated, deadline, now()));
        assert!(!overdue(AlarmState::Resolved, deadline, now()));
    }

    fn earlier(
        id: i64,
        action: AlarmAction,
        state: AlarmState,
        reason: Option<AlarmClose>,
    ) -> Earlier {
        Earlier {
            id: AlarmId(id),
            action,
            state,
            resolved_reason: reason.map(|r| r.as_str().to_owned()),
        }
    }

    #[test]
    fn rescoring_opens_and_closes_alarms_as_the_outcome_changed() {
        use AlarmAction::*;
        use AlarmState::*;
        let raise = AlarmPolicy::default()
            .raise("phq9", &outcome(Some("alarm"), &["v_9"], &[]), now())
            .expect("raised");
        // Raised now, none before: raise.
        assert_eq!(
            reconcile(Some(&raise), &[]),
            Reconciled {
                close: vec![],
                raise: true
            }
        );
        // Raised before and still live: nothing changes.
        let live = [earlier(1, Alarm, Acknowledged, None)];
        assert_eq!(reconcile(Some(&raise), &live), Reconciled::default());
        // No longer raised: the live one closes, a resolved one stays.
        let both = [
            earlier(1, Alarm, Open, None),
            earlier(2, Alarm, Resolved, Some(AlarmClose::Resolved)),
        ];
        assert_eq!(
            reconcile(None, &both),
            Reconciled {
                close: vec![AlarmId(1)],
                raise: false
            }
        );
        // A professional resolved it: the same alarm is not raised again.
        let resolved = [earlier(2, Alarm, Resolved, Some(AlarmClose::Resolved))];
        assert_eq!(reconcile(Some(&raise), &resolved), Reconciled::default());
        // Closed by an earlier re-scoring: raised again.
        let rescored = [earlier(3, Alarm, Resolved, Some(AlarmClose::Rescored))];
        assert!(reconcile(Some(&raise), &rescored).raise);
        // Attention became alarm: the attention closes, the alarm opens.
        let attention = [earlier(4, Attention, Escalated, None)];
        assert_eq!(
            reconcile(Some(&raise), &attention),
            Reconciled {
                close: vec![AlarmId(4)],
                raise: true
            }
        );
    }

    #[test]
    fn states_read_back_as_written() {
        for state in AlarmState::ALL {
            assert_eq!(AlarmState::parse(state.as_str()), Some(state));
        }
        assert_eq!(AlarmState::parse("OPEN"), None);
    }
}
