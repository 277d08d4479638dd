//! GET whether a response's stored outcome verifies: recomputed with the
//! module and definition versions that computed it, on the same input,
//! and compared byte for byte (`crate::verify`). Reads only.
//!
//! Another dossier's response id is 404 `response`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use crate::AppState;
use crate::api::extract::{DossierPath, PathParams};
use crate::api::rules;
use crate::error::{ApiError, ErrorBody, json};
use crate::verify::{Verification, Verifier};

/// Verify a response's outcome
///
/// Recomputes the stored outcome of a completed response with the scorer
/// module that computed it (kept by SHA-256, also after a newer version
/// replaced it) and the questionnaire definition version it was scored
/// with, on the input rebuilt from the stored answers (checked against the
/// hash of the input the scorer read), and says whether the result is the
/// stored outcome byte for byte. When not: `reasons` (`not_completed`,
/// `not_recorded`, `no_module`, `module_missing`, `module_hash_mismatch`,
/// `module_refused`, `definition_missing`, `definition_hash_mismatch`,
/// `definition_invalid`, `input_differs`, `outcome_differs`) and, for a
/// different outcome, both outcomes and the fields that differ. `id` is
/// the response's `id`. Writes nothing.
#[utoipa::path(
    get,
    path = "/dossiers/{dossier_id}/responses/{id}/verification",
    tag = "responses",
    params(
        ("dossier_id" = rules::DossierId, Path, description = "The EPD's identifier of the patient"),
        ("id" = rules::PositiveId, Path, description = "The response's id"),
    ),
    responses(
        (status = 200, description = "What verifying found", body = Verification),
        (status = 404, description = "`{\"errors\":{\"response\":[\"not_found\"]}}`: no response of this dossier has the id (or it is not a number)", body = ErrorBody),
        (status = 422, description = "`{\"errors\":{\"dossier_id\":[\"invalid\"]}}`: a dossier id over 255 characters or with control characters", body = ErrorBody),
    )
)]
pub async fn get_verification(
    State(app): State<AppState>,
    DossierPath(dossier): DossierPath,
    params: PathParams,
) -> Result<Response, ApiError> {
    let id = params.id("id", "response")?;
    let (response, stored) = app
        .store()
        .response_to_verify(&dossier, id)
        .await?
        .ok_or(ApiError::NotFound("response"))?;
    let mut verifier = Verifier::new(app.store().clone(), app.trials().clone());
    let verification = verifier.verify(&response, stored.as_deref()).await?;
    Ok(json(StatusCode::OK, &verification))
}
