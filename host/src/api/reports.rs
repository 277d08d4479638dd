//! `GET /api/v1/dossiers/:dossier_id/report_calculations`: runs a named
//! calculator plugin over a dossier's completed responses, chosen by
//! `response_ids[]` or by `filters[...]` (docs/api/reports.md;
//! docs/api/reports.md#errors for the error answers).
//!
//! A report's filters and the questionnaire descriptions come from one
//! catalog snapshot.

use std::collections::{BTreeMap, HashSet};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use plugin_sdk::{CalculatorInput, CalculatorOutput, PluginKind};
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::api::extract::{DossierPath, QueryParams};
use crate::api::rules;
use crate::domain::catalog::Catalog;
use crate::domain::response::{Response as StoredResponse, Status};
use crate::domain::time::parse_filter;
use crate::error::{ApiError, ErrorBody, Errors, json};
use crate::scoring::{calculator_input_for, questionnaire_info, response_info};
use crate::store::ResponseFilter;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_report_calculation))
}

/// The result of a report calculation.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReportCalculationView {
    /// Output of the named calculator.
    #[schema(value_type = Object)]
    pub results: Map<String, Value>,
    /// Ids of the responses the calculation ran over: the completed ones
    /// among those selected, oldest first.
    pub response_ids: Vec<i64>,
}

/// Ids in `response_ids[]`, or keys in `filters[questionnaire_keys][]`, one
/// request may name: a list is matched in one pass, but a longer one is no
/// report a clinic asks for (docs/api/reports.md#parameters).
pub const MAX_LISTED: usize = 1_000;

rules::documented! {
    ResponseIds: "Response ids, at most 1,000; one that names no response of the dossier is 404." => rules::list_of(rules::ANY_INTEGER.schema(), MAX_LISTED);
    ReportQuestionnaireKeys: "Questionnaire keys, at most 1,000, each at most 255 characters without control characters." => rules::list_of(rules::SHORT_TEXT.schema(), MAX_LISTED);
}

/// How the responses are chosen.
enum Selection {
    Ids(HashSet<i64>),
    Filters(ResponseFilter),
}

/// Run a report calculation
///
/// Runs the calculator over the dossier's completed responses: those named
/// by `response_ids[]`, or those matching `filters[questionnaire_keys][]`
/// (required when no ids are given) and the optional
/// `filters[completed_after]` / `filters[completed_before]` (Unix seconds or
/// ISO 8601). Responses that are not completed are left out; `response_ids`
/// in the answer says which ran.
#[utoipa::path(
    get,
    path = "/dossiers/{dossier_id}/report_calculations",
    tag = "report calculations",
    params(
        ("dossier_id" = rules::DossierId, Path, description = "The EPD's identifier of the patient"),
        ("calculator" = rules::Id, Query, description = "Name of the report calculator, e.g. score_series, reliable_change, alarm_summary, episode_outcome"),
        ("response_ids[]" = Option<ResponseIds>, Query, description = "Specific responses of this dossier, at most 1,000"),
        ("filters[questionnaire_keys][]" = Option<ReportQuestionnaireKeys>, Query, description = "Questionnaire keys, at most 1,000; required when response_ids is absent"),
        ("filters[completed_after]" = Option<rules::FilterTime>, Query, description = "Lower bound of the completion time"),
        ("filters[completed_before]" = Option<rules::FilterTime>, Query, description = "Upper bound of the completion time"),
    ),
    responses(
        (status = 200, description = "The calculation", body = ReportCalculationView),
        (status = 404, description = "Unknown calculator (`{\"errors\":{\"calculator\":[\"not_found\"]}}`) or a response id not in this dossier (`response_ids`)", body = ErrorBody),
        (status = 422, description = "Invalid parameters, nested for filters (`{\"errors\":{\"filters\":{\"questionnaire_keys\":[\"blank\"]}}}`); or the calculator failed (`{\"errors\":{\"calculator\":[\"calculation_failed\"]}}`)", body = ErrorBody),
    )
)]
pub async fn get_report_calculation(
    State(app): State<AppState>,
    DossierPath(dossier): DossierPath,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let (calculator, selection) = parse(&query, app.config().time_zone)?;
    let plugin = app
        .plugins()
        .get(PluginKind::Calculator, &calculator)
        .map_err(|_| ApiError::NotFound("calculator"))?;
    // One catalog snapshot for the request: the filters are checked and the
    // questionnaires described against the same definitions.
    let catalog = app.catalog();
    let responses = select(&app, &catalog, &dossier, selection).await?;
    let mut questionnaires = BTreeMap::new();
    for r in &responses {
        if let Some(q) = catalog.questionnaire(&r.questionnaire_key) {
            questionnaires
                .entry(r.questionnaire_key.clone())
                .or_insert_with(|| questionnaire_info(&q.def));
        }
    }
    let response_ids: Vec<i64> = responses.iter().map(|r| r.id.0).collect();
    let input = calculator_input_for(
        &plugin,
        CalculatorInput {
            responses: responses.iter().map(response_info).collect(),
            questionnaires,
        },
    );
    let call = app
        .plugins()
        .call::<_, CalculatorOutput>(plugin.clone(), &input)
        .await;
    match call.result {
        Ok(output) => Ok(json(
            StatusCode::OK,
            &ReportCalculationView {
                results: output.results,
                response_ids,
            },
        )),
        Err(e) => {
            tracing::error!(
                calculator = plugin.name(),
                version = plugin.version(),
                error = %e,
                "report calculation failed"
            );
            Err(ApiError::Invalid(Errors::one(
                "calculator",
                "calculation_failed",
            )))
        }
    }
}

/// Reads and checks the parameters; every problem at once.
fn parse(query: &QueryParams, zone: chrono_tz::Tz) -> Result<(String, Selection), ApiError> {
    let mut errors = Errors::new();
    let calculator = query
        .single("calculator")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_owned);
    if calculator.is_none() {
        errors.add("calculator", "blank");
    }
    let selection = match query.list("response_ids") {
        Some(ids) => {
            let parsed: Option<Vec<i64>> =
                ids.iter().map(|i| rules::ANY_INTEGER.parse(i)).collect();
            match parsed {
                Some(ids) if !ids.is_empty() && ids.len() <= MAX_LISTED => {
                    Some(Selection::Ids(ids.into_iter().collect()))
                }
                _ => {
                    errors.add("response_ids", "invalid");
                    None
                }
            }
        }
        None => {
            let mut inner = Errors::new();
            let given = query
                .list("filters[questionnaire_keys]")
                .unwrap_or_default();
            // The keys go to the database: no control characters (NUL above
            // all, which PostgreSQL text cannot hold).
            let refused = given.iter().any(|k| rules::SHORT_TEXT.check(k).is_err());
            let keys: Vec<String> = given
                .into_iter()
                .map(|k| k.trim().to_owned())
                .filter(|k| !k.is_empty())
                .collect();
            if keys.is_empty() && !refused {
                inner.add("questionnaire_keys", "blank");
            } else if refused || keys.len() > MAX_LISTED {
                inner.add("questionnaire_keys", "invalid");
            }
            let mut time = |name: &str| {
                let value = query.single(&format!("filters[{name}]"))?;
                let parsed = parse_filter(value, zone);
                if parsed.is_none() {
                    inner.add(name, "invalid");
                }
                parsed
            };
            let completed_after = time("completed_after");
            let completed_before = time("completed_before");
            if inner.is_empty() {
                Some(Selection::Filters(ResponseFilter {
                    questionnaire_keys: Some(keys),
                    completed_after,
                    completed_before,
                    ..ResponseFilter::default()
                }))
            } else {
                errors.nest("filters", inner);
                None
            }
        }
    };
    errors.into_result()?;
    match (calculator, selection) {
        (Some(c), Some(s)) => Ok((c, s)),
        _ => Err(ApiError::Invalid(Errors::one("calculator", "blank"))),
    }
}

/// The completed responses selected, oldest first. Ids not in this dossier
/// are 404, as a response of another dossier must look
/// (docs/api/conventions.md#object-level-authorization).
async fn select(
    app: &AppState,
    catalog: &Catalog,
    dossier: &str,
    selection: Selection,
) -> Result<Vec<StoredResponse>, ApiError> {
    let now = app.now();
    let mut responses = match selection {
        Selection::Ids(ids) => {
            let all = app
                .store()
                .list_responses(dossier, &ResponseFilter::default(), now)
                .await?;
            let known: HashSet<i64> = all.iter().map(|r| r.id.0).collect();
            if !ids.is_subset(&known) {
                return Err(ApiError::NotFound("response_ids"));
            }
            all.into_iter()
                .filter(|r| ids.contains(&r.id.0) && Status::at(&r.times, now) == Status::Completed)
                .collect()
        }
        Selection::Filters(mut filter) => {
            let keys = filter.questionnaire_keys.clone().unwrap_or_default();
            if keys.iter().any(|k| catalog.questionnaire(k).is_none()) {
                let mut inner = Errors::new();
                inner.add("questionnaire_keys", "invalid");
                let mut errors = Errors::new();
                errors.nest("filters", inner);
                return Err(ApiError::Invalid(errors));
            }
            filter.status = Some(Status::Completed);
            app.store().list_responses(dossier, &filter, now).await?
        }
    };
    responses.sort_by_key(|r| (r.times.completed_at, r.id.0));
    Ok(responses)
}
