//! The questionnaires and protocols the host serves, with the stable ids the
//! store gave them on import. Built once per (re)load and then shared
//! read-only.

use std::collections::HashMap;
use std::sync::Arc;

use super::ids::{MeasurementId, ProtocolId, QuestionnaireId};
use super::protocol::ProtocolDef;
use super::questionnaire::Questionnaire;

/// A questionnaire with its stable id.
#[derive(Debug, Clone)]
pub struct CatalogQuestionnaire {
    pub id: QuestionnaireId,
    pub def: Arc<Questionnaire>,
}

/// A protocol with the stable ids of itself and its measurements.
#[derive(Debug, Clone)]
pub struct CatalogProtocol {
    pub id: ProtocolId,
    pub def: ProtocolDef,
    /// Measurement ids in the order of `def.measurements`.
    pub measurement_ids: Vec<MeasurementId>,
}

/// Lookup tables over everything loaded.
#[derive(Debug, Default)]
pub struct Catalog {
    questionnaires: Vec<CatalogQuestionnaire>,
    by_key: HashMap<String, usize>,
    by_id: HashMap<QuestionnaireId, usize>,
    protocols: Vec<CatalogProtocol>,
}

impl Catalog {
    /// Builds the catalog; lists are kept ordered by id
    /// (docs/api/conventions.md#ordering-and-pagination).
    pub fn new(
        mut questionnaires: Vec<CatalogQuestionnaire>,
        mut protocols: Vec<CatalogProtocol>,
    ) -> Self {
        questionnaires.sort_by_key(|q| q.id);
        protocols.sort_by_key(|p| p.id);
        let by_key = questionnaires
            .iter()
            .enumerate()
            .map(|(i, q)| (q.def.key.clone(), i))
            .collect();
        let by_id = questionnaires
            .iter()
            .enumerate()
            .map(|(i, q)| (q.id, i))
            .collect();
        Catalog {
            questionnaires,
            by_key,
            by_id,
            protocols,
        }
    }

    pub fn questionnaire(&self, key: &str) -> Option<&CatalogQuestionnaire> {
        self.by_key.get(key).map(|&i| &self.questionnaires[i])
    }

    pub fn questionnaire_by_id(&self, id: QuestionnaireId) -> Option<&CatalogQuestionnaire> {
        self.by_id.get(&id).map(|&i| &self.questionnaires[i])
    }

    pub fn questionnaires(&self) -> &[CatalogQuestionnaire] {
        &self.questionnaires
    }

    pub fn protocols(&self) -> &[CatalogProtocol] {
        &self.protocols
    }

    pub fn protocol(&self, id: ProtocolId) -> Option<&CatalogProtocol> {
        self.protocols.iter().find(|p| p.id == id)
    }

    /// The protocol a measurement belongs to, and the measurement's index in it.
    pub fn measurement(&self, id: MeasurementId) -> Option<(&CatalogProtocol, usize)> {
        self.protocols.iter().find_map(|p| {
            p.measurement_ids
                .iter()
                .position(|&m| m == id)
                .map(|i| (p, i))
        })
    }
}
