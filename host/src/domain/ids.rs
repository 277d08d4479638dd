//! Newtypes for the integer ids the store hands out, so that a response id
//! cannot be passed where a dossier id is meant.

use serde::Serialize;

macro_rules! id_type {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        #[serde(transparent)]
        pub struct $name(pub i64);

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    )*};
}

id_type!(
    /// Internal id of a dossier (the path uses the EPD's own identifier).
    DossierId,
    /// Id of a respondent.
    RespondentId,
    /// Id of a response.
    ResponseId,
    /// Stable id of a questionnaire, kept across re-imports of its definition.
    QuestionnaireId,
    /// Stable id of a protocol.
    ProtocolId,
    /// Stable id of a measurement.
    MeasurementId,
    /// Id of a protocol subscription.
    SubscriptionId,
    /// Id of a non-response.
    NonResponseId,
    /// Id of an alarm.
    AlarmId,
);
