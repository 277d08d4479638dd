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
use crate::api::questionnaire_schema::{PageSchema, QuestionSchema};
use crate::api::rules;
use crate::domain::catalog::CatalogQuestionnaire;
use crate::domain::condition::ConditionDef;
use crate::domain::questionnaire::Kind;
use crate::domain::text::{Text, is_language_code};
use crate::domain::variant::Variant;
use crate::error::{ApiError, ErrorBody, Errors, json};

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
    /// `{value, description}` (and `exclusive: true` for a checkbox option
    /// that excludes the others). In definition order. Besides, only where
    /// used: `min`, `max`, `step`, `min_label`, `max_label` (slider), `min`,
    /// `max`, `unit` (integer, decimal), `precision` (date: `day`, `month`
    /// or `year`), `max_length` (string, textarea), `shown_if` (the
    /// condition on earlier answers it is shown under). A `display` item
    /// has `text` instead of `title` and no answer.
    #[schema(value_type = BTreeMap<String, QuestionSchema>)]
    pub questions: Map<String, Value>,
    /// Score key to `{label}`.
    #[schema(value_type = Object)]
    pub scores: Map<String, Value>,
    /// `{sbg_key, questions, scores}` for questionnaires of the Dutch
    /// benchmarking standard (SBG), else null.
    #[schema(value_type = Option<Object>)]
    pub sbg_info: Option<Value>,
    /// Only for a questionnaire divided into pages: each `{key, title,
    /// intro, questions, shown_if}`, `questions` its question keys in
    /// order (title, intro and shown_if only when given).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<PageSchema>>)]
    pub pages: Option<Vec<Value>>,
    /// Only for a questionnaire with translations: the languages its texts
    /// can be read in (`?language=`), its own first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub languages: Option<Vec<String>>,
}

/// `{"questionnaire": ...}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct QuestionnaireEnvelope {
    pub questionnaire: QuestionnaireView,
}

impl QuestionnaireView {
    /// `legacy`: question keys as `<questionnaire key>_N` instead of `v_N`.
    /// Texts in `language` where the questionnaire has them, else in its
    /// own.
    pub fn new(
        q: &CatalogQuestionnaire,
        legacy: bool,
        language: Option<&str>,
    ) -> QuestionnaireView {
        let def = &q.def;
        let lang = language.unwrap_or(&def.language);
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
        let condition = |c: &ConditionDef| {
            serde_json::to_value(c.map_questions(&key_of)).unwrap_or(Value::Null)
        };
        let questions = def
            .questions
            .iter()
            .map(|question| {
                let options: Map<String, Value> = question
                    .options
                    .iter()
                    .map(|o| {
                        let mut option =
                            value!({"value": o.value, "description": text(&o.description)});
                        if o.exclusive {
                            option["exclusive"] = Value::Bool(true);
                        }
                        (o.key.clone(), option)
                    })
                    .collect();
                let mut body = Map::new();
                let title = if question.answerable() {
                    "title"
                } else {
                    "text"
                };
                body.insert(title.into(), Value::String(text(&question.title)));
                body.insert("type".into(), value!(question.kind.name()));
                body.insert("options".into(), Value::Object(options));
                limits(&question.kind, &text, &mut body);
                if let Some(c) = &question.shown_if {
                    body.insert("shown_if".into(), condition(c));
                }
                (key_of(&question.key), Value::Object(body))
            })
            .collect();
        let scores = def
            .scores
            .iter()
            .map(|s| {
                (
                    s.key.clone(),
                    value!({"label": s.label.resolve(lang, &def.language)}),
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
        let pages = def.paged.then(|| {
            def.pages
                .iter()
                .map(|page| {
                    let mut body = Map::new();
                    body.insert("key".into(), value!(page.key));
                    if let Some(t) = &page.title {
                        body.insert("title".into(), Value::String(text(t)));
                    }
                    if let Some(t) = &page.intro {
                        body.insert("intro".into(), Value::String(text(t)));
                    }
                    let keys: Vec<Value> = def.questions[page.questions.clone()]
                        .iter()
                        .map(|question| Value::String(key_of(&question.key)))
                        .collect();
                    body.insert("questions".into(), Value::Array(keys));
                    if let Some(c) = &page.shown_if {
                        body.insert("shown_if".into(), condition(c));
                    }
                    Value::Object(body)
                })
                .collect()
        });
        let languages = (!def.translations.is_empty()).then(|| {
            std::iter::once(def.language.clone())
                .chain(def.translations.keys().cloned())
                .collect()
        });
        QuestionnaireView {
            id: q.id.0,
            key: def.key.clone(),
            name: def.name_in(lang).to_owned(),
            description: def.description.as_ref().map(text),
            short_description: text(&def.short_description),
            questions,
            scores,
            sbg_info,
            pages,
            languages,
        }
    }
}

/// The limits of a question's type, into its JSON object.
fn limits(kind: &Kind, text: &impl Fn(&Text) -> String, body: &mut Map<String, Value>) {
    let mut put = |name: &str, value: Value| {
        body.insert(name.into(), value);
    };
    match kind {
        Kind::Slider {
            min,
            max,
            step,
            min_label,
            max_label,
        } => {
            put("min", value!(min));
            put("max", value!(max));
            put("step", value!(step));
            put("min_label", Value::String(text(min_label)));
            put("max_label", Value::String(text(max_label)));
        }
        Kind::Integer { min, max, unit } => {
            min.map(|m| put("min", value!(m)));
            max.map(|m| put("max", value!(m)));
            if let Some(u) = unit {
                put("unit", Value::String(text(u)));
            }
        }
        Kind::Decimal { min, max, unit } => {
            min.map(|m| put("min", value!(m)));
            max.map(|m| put("max", value!(m)));
            if let Some(u) = unit {
                put("unit", Value::String(text(u)));
            }
        }
        Kind::Date { precision } => put("precision", value!(precision.name())),
        Kind::String { max_length } | Kind::Textarea { max_length } => {
            put("max_length", value!(max_length));
        }
        Kind::Radio | Kind::Select | Kind::Checkbox | Kind::Display => {}
    }
}

/// `?language=`: an ISO 639-1 code, else 422 `invalid`.
fn language(query: &QueryParams) -> Result<Option<String>, ApiError> {
    match query.single("language") {
        None => Ok(None),
        Some(code) if is_language_code(code) => Ok(Some(code.to_owned())),
        Some(_) => Err(ApiError::Invalid(Errors::one("language", "invalid"))),
    }
}

/// Get a questionnaire
///
/// `use_legacy_keys` (default true) gives question keys as
/// `<questionnaire key>_N`; false gives the `v_N` keys that response values
/// use (recommended). `language` (ISO 639-1) gives the texts in that
/// language where the questionnaire has them (a translation), else in its
/// own. Also with a `.json` suffix.
#[utoipa::path(
    get,
    path = "/questionnaires/{key}",
    tag = "questionnaires",
    params(
        ("key" = String, Path, description = "Questionnaire key"),
        ("use_legacy_keys" = Option<rules::Boolean>, Query, description = "true (default) or false"),
        ("language" = Option<rules::Language>, Query, description = "ISO 639-1 code of the language to show the texts in, where the questionnaire has it; default its own"),
    ),
    responses(
        (status = 200, body = QuestionnaireEnvelope),
        (status = 404, description = "`{\"errors\":{\"questionnaire\":[\"not_found\"]}}`", body = ErrorBody),
        (status = 422, description = "`{\"errors\":{\"use_legacy_keys\":[\"invalid\"]}}`, or `language` `invalid`", body = ErrorBody),
    )
)]
pub async fn get_questionnaire(
    State(app): State<AppState>,
    params: PathParams,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let legacy = query.boolean("use_legacy_keys", true)?;
    let language = language(&query)?;
    let catalog = app.catalog();
    let q = params
        .get("key")
        .and_then(|k| catalog.questionnaire(k))
        .ok_or(ApiError::NotFound("questionnaire"))?;
    Ok(json(
        StatusCode::OK,
        &QuestionnaireEnvelope {
            questionnaire: QuestionnaireView::new(q, legacy, language.as_deref()),
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
    params(
        ("use_legacy_keys" = Option<rules::Boolean>, Query, description = "true (default) or false"),
        ("language" = Option<rules::Language>, Query, description = "ISO 639-1 code of the language to show the texts in, where a questionnaire has it; default each one's own"),
    ),
    responses(
        (status = 200, body = [QuestionnaireView]),
        (status = 422, description = "`{\"errors\":{\"use_legacy_keys\":[\"invalid\"]}}`, or `language` `invalid`", body = ErrorBody),
    )
)]
pub async fn list_questionnaires(
    State(app): State<AppState>,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let legacy = query.boolean("use_legacy_keys", true)?;
    let language = language(&query)?;
    let catalog = app.catalog();
    let views: Vec<QuestionnaireView> = catalog
        .questionnaires()
        .iter()
        .map(|q| QuestionnaireView::new(q, legacy, language.as_deref()))
        .collect();
    Ok(json(StatusCode::OK, &views))
}
