//! Respondents: who fills out a dossier's questionnaires.

use super::ids::{DossierId, RespondentId};

/// Respondent types on the wire (docs/api/respondents.md#respondent-object).
pub const RESPONDENT_TYPES: &[&str] =
    &["patient", "parent", "second_parent", "teacher", "caregiver"];

/// The patient: every dossier has exactly one, made with the dossier.
pub const PATIENT: &str = "patient";
/// The professional respondent (`respondent: "profess"`): made on demand,
/// never listed (docs/api/respondents.md#patient-and-professional).
pub const PROFESSIONAL: &str = "profess";

/// A stored respondent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Respondent {
    pub id: RespondentId,
    pub dossier_id: DossierId,
    pub respondent_type: String,
    /// A non-identifying name.
    pub label: String,
}

/// The label a new respondent of this type gets.
pub fn default_label(respondent_type: &str) -> &'static str {
    match respondent_type {
        PATIENT => "Patient",
        PROFESSIONAL => "Professional",
        "parent" => "Parent",
        "second_parent" => "Second parent",
        "teacher" => "Teacher",
        "caregiver" => "Caregiver",
        _ => "Respondent",
    }
}
