//! `/api/v1/protocols` and `/api/v1/measurements`: the protocol definitions
//! with their stable ids
//! (docs/api/protocols-and-subscriptions.md#protocol-object).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::api::extract::PathParams;
use crate::api::rules;
use crate::domain::catalog::{Catalog, CatalogProtocol};
use crate::domain::ids::{MeasurementId, ProtocolId};
use crate::error::{ApiError, ErrorBody, json};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_protocols))
        .routes(routes!(get_protocol))
        .routes(routes!(get_measurement))
}

/// A protocol: questionnaires grouped into measurements.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProtocolView {
    pub id: i64,
    pub key: String,
    /// Name as shown when preparing answers.
    pub name: String,
    pub description: String,
    /// When false the protocol does not show up in the interface.
    pub active: bool,
    /// True for protocols that can be subscribed to.
    pub automatic: bool,
    pub measurements: Vec<MeasurementView>,
}

/// A measurement of a protocol.
#[derive(Debug, Serialize, ToSchema)]
pub struct MeasurementView {
    pub id: i64,
    pub key: String,
    pub name: String,
    pub description: Option<String>,
    pub active: bool,
    pub label: String,
    pub protocol_id: i64,
    pub questionnaires: Vec<MeasurementQuestionnaireView>,
}

/// A questionnaire of a measurement.
#[derive(Debug, Serialize, ToSchema)]
pub struct MeasurementQuestionnaireView {
    pub id: i64,
    pub key: String,
    pub vendor_key: String,
    /// The same value as `vendor_key`, for clients that read this name.
    pub quby_key: String,
    pub name: String,
}

fn measurement_view(catalog: &Catalog, p: &CatalogProtocol, index: usize) -> MeasurementView {
    let m = &p.def.measurements[index];
    MeasurementView {
        id: p.measurement_ids[index].0,
        key: m.key.clone(),
        name: m.name.clone(),
        description: m.description.clone(),
        active: m.active,
        label: m.label.clone(),
        protocol_id: p.id.0,
        questionnaires: m
            .questionnaires
            .iter()
            .filter_map(|key| catalog.questionnaire(key))
            .map(|q| MeasurementQuestionnaireView {
                id: q.id.0,
                key: q.def.key.clone(),
                vendor_key: q.def.vendor_key.clone(),
                quby_key: q.def.vendor_key.clone(),
                name: q.def.name.clone(),
            })
            .collect(),
    }
}

fn protocol_view(catalog: &Catalog, p: &CatalogProtocol) -> ProtocolView {
    ProtocolView {
        id: p.id.0,
        key: p.def.key.clone(),
        name: p.def.name.clone(),
        description: p.def.description.clone(),
        active: p.def.active,
        automatic: p.def.automatic,
        measurements: (0..p.def.measurements.len())
            .map(|i| measurement_view(catalog, p, i))
            .collect(),
    }
}

/// List protocols
///
/// Every protocol, by id.
#[utoipa::path(get, path = "/protocols", tag = "protocols", responses((status = 200, body = [ProtocolView])))]
pub async fn list_protocols(State(app): State<AppState>) -> Result<Response, ApiError> {
    let catalog = app.catalog();
    let views: Vec<ProtocolView> = catalog
        .protocols()
        .iter()
        .map(|p| protocol_view(&catalog, p))
        .collect();
    Ok(json(StatusCode::OK, &views))
}

/// Get a protocol
///
/// Also with a `.json` suffix.
#[utoipa::path(
    get,
    path = "/protocols/{id}",
    tag = "protocols",
    params(("id" = rules::PositiveId, Path, description = "Protocol id")),
    responses(
        (status = 200, body = ProtocolView),
        (status = 404, description = "`{\"errors\":{\"protocol\":[\"not_found\"]}}`", body = ErrorBody),
    )
)]
pub async fn get_protocol(
    State(app): State<AppState>,
    params: PathParams,
) -> Result<Response, ApiError> {
    let id = params.id("id", "protocol")?;
    let catalog = app.catalog();
    let p = catalog
        .protocol(ProtocolId(id))
        .ok_or(ApiError::NotFound("protocol"))?;
    Ok(json(StatusCode::OK, &protocol_view(&catalog, p)))
}

/// Get a measurement
#[utoipa::path(
    get,
    path = "/measurements/{id}",
    tag = "protocols",
    params(("id" = rules::PositiveId, Path, description = "Measurement id")),
    responses(
        (status = 200, body = MeasurementView),
        (status = 404, description = "`{\"errors\":{\"measurement\":[\"not_found\"]}}`", body = ErrorBody),
    )
)]
pub async fn get_measurement(
    State(app): State<AppState>,
    params: PathParams,
) -> Result<Response, ApiError> {
    let id = params.id("id", "measurement")?;
    let catalog = app.catalog();
    let (p, index) = catalog
        .measurement(MeasurementId(id))
        .ok_or(ApiError::NotFound("measurement"))?;
    Ok(json(StatusCode::OK, &measurement_view(&catalog, p, index)))
}
