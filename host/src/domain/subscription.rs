//! A dossier's subscription to an automatic protocol, and the scheduler's
//! one rule over it: given the moment the subscription next needed
//! attention and now, which occurrences to prepare, which were missed, and
//! when it next needs attention.

use chrono::{DateTime, Utc};

use super::catalog::{Catalog, CatalogProtocol};
use super::ids::{
    DossierId, MeasurementId, ProtocolId, QuestionnaireId, RespondentId, SubscriptionId,
};
use super::schedule::{self, Occurrence, Timing};
use super::variant::Variant;

/// A stored subscription.
#[derive(Debug, Clone, PartialEq)]
pub struct Subscription {
    pub id: SubscriptionId,
    pub dossier_id: DossierId,
    pub protocol_id: ProtocolId,
    /// The dossier's patient, who fills the measurements out.
    pub respondent_id: RespondentId,
    pub start_at: DateTime<Utc>,
    /// When it stops by itself; None: when stopped.
    pub stop_at: Option<DateTime<Utc>>,
    /// Seconds after local midnight
    /// (docs/api/protocols-and-subscriptions.md#daily-start-time).
    pub daily_start_time: u32,
    pub variant: Variant,
    /// When it stopped (by DELETE, or at `stop_at`); None while active.
    pub stopped_at: Option<DateTime<Utc>>,
    /// When the scheduler next has work for it; None when never again.
    pub next_due_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

/// One occurrence to prepare: an invitation holding a response for each of
/// the measurement's questionnaires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedOccurrence {
    pub measurement_id: MeasurementId,
    pub questionnaire_ids: Vec<QuestionnaireId>,
    pub open_from: DateTime<Utc>,
    pub open_till: DateTime<Utc>,
}

/// What the scheduler does with one subscription at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    pub occurrences: Vec<PlannedOccurrence>,
    /// Occurrences whose window closed before they could be prepared (the
    /// service was down, or the subscription started in the past). They are
    /// not prepared: a questionnaire nobody was offered is no non-response.
    pub missed: usize,
    pub next_due_at: Option<DateTime<Utc>>,
    /// Set when the subscription reached its `stop_at`.
    pub stopped_at: Option<DateTime<Utc>>,
}

impl Subscription {
    /// The schedule's inputs, in the service's time `zone`.
    pub fn timing(&self, zone: chrono_tz::Tz) -> Timing {
        Timing {
            start_at: self.start_at,
            daily_start_time: self.daily_start_time,
            stop_at: self.stop_at,
            zone,
        }
    }

    /// When a new subscription first needs the scheduler: its first
    /// occurrence's preparation, or its stop.
    pub fn first_due(
        &self,
        protocol: &CatalogProtocol,
        zone: chrono_tz::Tz,
    ) -> Option<DateTime<Utc>> {
        let timing = self.timing(zone);
        scheduled(protocol)
            .filter_map(|(_, m)| schedule::first(m, &timing).map(|o| o.prepare_at))
            .chain(self.stop_at)
            .min()
    }

    /// What to do at `now`, for a subscription whose work before
    /// `next_due_at` is done. A protocol that is gone from the catalog stops
    /// the subscription, keeping what was prepared.
    pub fn plan(&self, catalog: &Catalog, zone: chrono_tz::Tz, now: DateTime<Utc>) -> Plan {
        let Some(protocol) = catalog.protocol(self.protocol_id) else {
            return Plan {
                stopped_at: Some(now),
                ..Plan::default()
            };
        };
        let Some(from) = self.next_due_at else {
            return Plan::default();
        };
        let timing = self.timing(zone);
        let mut plan = Plan::default();
        for (index, measurement) in scheduled(protocol) {
            let def = &protocol.def.measurements[index];
            let questionnaire_ids: Vec<QuestionnaireId> = def
                .questionnaires
                .iter()
                .filter_map(|key| catalog.questionnaire(key).map(|q| q.id))
                .collect();
            for Occurrence {
                open_from,
                open_till,
                ..
            } in schedule::prepared_between(measurement, &timing, from, now)
            {
                if open_till <= now {
                    plan.missed += 1;
                } else {
                    plan.occurrences.push(PlannedOccurrence {
                        measurement_id: protocol.measurement_ids[index],
                        questionnaire_ids: questionnaire_ids.clone(),
                        open_from,
                        open_till,
                    });
                }
            }
        }
        plan.occurrences
            .sort_by_key(|o| (o.open_from, o.measurement_id));
        if self.stop_at.is_some_and(|stop| stop <= now) {
            plan.stopped_at = self.stop_at;
        } else {
            plan.next_due_at = scheduled(protocol)
                .filter_map(|(_, m)| {
                    schedule::next_prepared_after(m, &timing, now).map(|o| o.prepare_at)
                })
                .chain(self.stop_at)
                .min();
        }
        plan
    }
}

/// The active measurements of a protocol that have a schedule, with their
/// index in the definition.
fn scheduled(protocol: &CatalogProtocol) -> impl Iterator<Item = (usize, &schedule::Schedule)> {
    protocol
        .def
        .measurements
        .iter()
        .enumerate()
        .filter(|(_, m)| m.active)
        .filter_map(|(i, m)| m.schedule.as_ref().map(|s| (i, s)))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use chrono::NaiveDateTime;

    use super::*;
    use crate::domain::catalog::CatalogQuestionnaire;
    use crate::domain::protocol;
    use crate::domain::schedule::resolve;
    use crate::domain::testing;

    const ZONE: chrono_tz::Tz = chrono_tz::Europe::Amsterdam;

    fn local(text: &str) -> DateTime<Utc> {
        resolve(
            ZONE,
            NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M").expect("a time"),
        )
    }

    fn catalog() -> Catalog {
        let q = testing::questionnaire();
        let p = protocol::parse(
            r#"
            key = "p"
            name = "P"
            automatic = true
            duration = "3 months"
            [[measurements]]
            key = "monthly"
            name = "Monthly"
            label = "M"
            questionnaires = ["mini"]
            [measurements.schedule]
            every = "1 month"
            open_for = "7 days"
            [[measurements]]
            key = "weekly"
            name = "Weekly"
            label = "W"
            questionnaires = ["mini"]
            active = false
            [measurements.schedule]
            every = "1 week"
            open_for = "1 day"
            "#,
            "p",
            |k| k == "mini",
        )
        .expect("a protocol");
        Catalog::new(
            vec![CatalogQuestionnaire {
                id: QuestionnaireId(7),
                def: Arc::new(q),
            }],
            vec![CatalogProtocol {
                id: ProtocolId(3),
                def: p,
                measurement_ids: vec![MeasurementId(30), MeasurementId(31)],
            }],
        )
    }

    fn subscription(catalog: &Catalog, start: &str) -> Subscription {
        let start_at = local(start);
        let mut s = Subscription {
            id: SubscriptionId(1),
            dossier_id: DossierId(1),
            protocol_id: ProtocolId(3),
            respondent_id: RespondentId(1),
            start_at,
            stop_at: "3 months"
                .parse::<schedule::Period>()
                .expect("a period")
                .after(start_at, ZONE),
            daily_start_time: schedule::time_of_day(start_at, ZONE),
            variant: Variant::default(),
            stopped_at: None,
            next_due_at: None,
            created_at: start_at,
        };
        let protocol = catalog.protocol(ProtocolId(3)).expect("the protocol");
        s.next_due_at = s.first_due(protocol, ZONE);
        s
    }

    fn opens(plan: &Plan) -> Vec<DateTime<Utc>> {
        plan.occurrences.iter().map(|o| o.open_from).collect()
    }

    #[test]
    fn a_tick_prepares_what_is_due_and_says_when_next() {
        let catalog = catalog();
        let mut s = subscription(&catalog, "2027-01-31 10:00");
        assert_eq!(s.next_due_at, Some(local("2027-01-31 10:00")));
        let plan = s.plan(&catalog, ZONE, local("2027-01-31 10:00"));
        assert_eq!(opens(&plan), [local("2027-01-31 10:00")]);
        assert_eq!(plan.occurrences[0].open_till, local("2027-02-07 10:00"));
        assert_eq!(plan.occurrences[0].questionnaire_ids, [QuestionnaireId(7)]);
        assert_eq!(plan.occurrences[0].measurement_id, MeasurementId(30));
        assert_eq!(plan.next_due_at, Some(local("2027-02-28 10:00")));
        assert_eq!((plan.missed, plan.stopped_at), (0, None));
        // Nothing more until then: the inactive weekly measurement never.
        s.next_due_at = plan.next_due_at;
        let quiet = s.plan(&catalog, ZONE, local("2027-02-27 10:00"));
        assert!(quiet.occurrences.is_empty());
        assert_eq!(quiet.next_due_at, Some(local("2027-02-28 10:00")));
    }

    #[test]
    fn after_downtime_open_occurrences_are_prepared_and_closed_ones_missed() {
        let catalog = catalog();
        let mut s = subscription(&catalog, "2027-01-31 10:00");
        s.next_due_at = Some(local("2027-02-28 10:00"));
        // Down from before 28 February to 3 April, 12:00: February's window
        // closed on 7 March; March's (31 March) is open till 7 April.
        let plan = s.plan(&catalog, ZONE, local("2027-04-03 12:00"));
        assert_eq!(opens(&plan), [local("2027-03-31 10:00")]);
        assert_eq!(plan.missed, 1);
        assert_eq!(plan.next_due_at, Some(local("2027-04-30 10:00")));
    }

    #[test]
    fn at_its_stop_a_subscription_stops() {
        let catalog = catalog();
        let mut s = subscription(&catalog, "2027-01-31 10:00");
        s.next_due_at = Some(local("2027-04-30 10:00"));
        // 30 April is past the stop (three months from 31 January).
        let plan = s.plan(&catalog, ZONE, local("2027-05-01 00:00"));
        assert!(plan.occurrences.is_empty());
        assert_eq!(plan.stopped_at, Some(local("2027-04-30 10:00")));
        assert_eq!(plan.next_due_at, None);
    }

    #[test]
    fn a_protocol_gone_from_the_catalog_stops_its_subscriptions() {
        let catalog = catalog();
        let mut s = subscription(&catalog, "2027-01-31 10:00");
        s.protocol_id = ProtocolId(99);
        let now = local("2027-02-01 00:00");
        assert_eq!(s.plan(&catalog, ZONE, now).stopped_at, Some(now));
    }
}
