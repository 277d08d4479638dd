//! `/api/v1/questionnaires`: the questionnaire definitions as Questionnaire
//! objects (docs/api/catalog.md#questionnaire-object), question keys in `v_`
//! or legacy form.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use serde_json::{Map, Value, json as value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::api::extract::{PathParams, QueryParams};
use crate::domain::catalog::CatalogQuestionnaire;
use crate::domain::text::Text;
use crate::domain::variant::Variant;
use crate::error::{ApiError, ErrorBody, json};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_questionnaires))
        .routes(routes!(get_questionnaire))
}

/// A questionnaire definition as served.
#[derive(Debug, Serialize, ToSchema)]
pub struct QuestionnaireView {
    pub id: i64,
    pub key: String,
    pub name: String,
    pub description: Option<String>,
    pub short_description: String,
    /// Question key to `{title, type, options}`; options map option key to
    /// `{value, description}`. In definition order.
    #[schema(value_type = Object)]
    pub questions: Map<String, Value>,
    /// Score key to `{label}`.
    #[schema(value_type = Object)]
    pub scores: Map<String, Value>,
    /// `{sbg_key, questions, scores}` for questionnaires of the Dutch
    /// benchmarking standard (SBG), else null.
    #[schema(value_type = Option<Object>)]
    pub sbg_info: Option<Value>,
}

/// `{"questionnaire": ...}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct QuestionnaireEnvelope {
    pub questionnaire: QuestionnaireView,
}

impl QuestionnaireView {
    /// `legacy`: question keys as `<questionnaire key>_N` instead of `v_N`.
    pub fn new(q: &CatalogQuestionnaire, legacy: bool) -> QuestionnaireView {
        let def = &q.def;
        let lang = def.language.as_str();
        // Texts as a respondent without flags or textvars reads them: every
        // `{{name}}` filled with its textvar's default.
        let plain = Variant::default();
        let text = |t: &Text| plain.render(def, t, lang);
        let key_of = |k: &str| {
            if legacy {
                def.legacy_key(k)
            } else {
                k.to_owned()
            }
        };
        let questions = def
            .questions
            .iter()
            .map(|question| {
                let options: Map<String, Value> = question
                    .options
                    .iter()
                    .map(|o| (o.key.clone(), value!({"value": o.value, "description": text(&o.description)})))
                    .collect();
                let body = value!({"title": text(&question.title), "type": question.kind, "options": options});
                (key_of(&question.key), body)
            })
            .collect();
        let scores = def
            .scores
            .iter()
            .map(|s| {
                (
                    s.key.clone(),
                    value!({"label": s.label.resolve(lang, lang)}),
                )
            })
            .collect();
        let sbg_info = def.sbg_info.as_ref().map(|sbg| {
            let questions: Map<String, Value> = sbg
                .questions
                .iter()
                .map(|(id, k)| (id.clone(), Value::String(key_of(k))))
                .collect();
            value!({"sbg_key": sbg.sbg_key, "questions": questions, "scores": sbg.scores})
        });
        QuestionnaireView {
            id: q.id.0,
            key: def.key.clone(),
            name: def.name.clone(),
            description: def.description.as_ref().map(text),
            short_description: text(&def.short_description),
            questions,
            scores,
            sbg_info,
        }
    }
}

/// Get a questionnaire
///
/// `use_legacy_keys` (default true) gives question keys as
/// `<questionnaire key>_N`; false gives the `v_N` keys that response values
/// use (recommended). Also with a `.json` suffix.
#[utoipa::path(
    get,
    path = "/questionnaires/{key}",
    tag = "questionnaires",
    params(
        ("key" = String, Path, description = "Questionnaire key"),
        ("use_legacy_keys" = Option<bool>, Query, description = "true (default) or false"),
    ),
    responses(
        (status = 200, body = QuestionnaireEnvelope),
        (status = 404, description = "`{\"errors\":{\"questionnaire\":[\"not_found\"]}}`", body = ErrorBody),
        (status = 422, description = "`{\"errors\":{\"use_legacy_keys\":[\"invalid\"]}}`", body = ErrorBody),
    )
)]
pub async fn get_questionnaire(
    State(app): State<AppState>,
    params: PathParams,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let legacy = query.boolean("use_legacy_keys", true)?;
    let catalog = app.catalog();
    let q = params
        .get("key")
        .and_then(|k| catalog.questionnaire(k))
        .ok_or(ApiError::NotFound("questionnaire"))?;
    Ok(json(
        StatusCode::OK,
        &QuestionnaireEnvelope {
            questionnaire: QuestionnaireView::new(q, legacy),
        },
    ))
}

/// List questionnaires
///
/// Every questionnaire the service serves, by id, as an array of the same
/// objects `GET /questionnaires/{key}` returns (unwrapped).
#[utoipa::path(
    get,
    path = "/questionnaires",
    tag = "questionnaires",
    params(("use_legacy_keys" = Option<bool>, Query, description = "true (default) or false")),
    responses(
        (status = 200, body = [QuestionnaireView]),
        (status = 422, description = "`{\"errors\":{\"use_legacy_keys\":[\"invalid\"]}}`", body = ErrorBody),
    )
)]
pub async fn list_questionnaires(
    State(app): State<AppState>,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let legacy = query.boolean("use_legacy_keys", true)?;
    let catalog = app.catalog();
    let views: Vec<QuestionnaireView> = catalog
        .questionnaires()
        .iter()
        .map(|q| QuestionnaireView::new(q, legacy))
        .collect();
    Ok(json(StatusCode::OK, &views))
}
