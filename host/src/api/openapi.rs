//! The OpenAPI 3.1 document, generated from the handlers' annotations and
//! the wire types, served at `/api/v1/openapi.json`.

use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Header, Ref, RefOr, ResponseBuilder};
use utoipa::{Modify, OpenApi, ToSchema};

use crate::error::json;

/// Every error answer: `{"errors": {...}}`. Field names (or `base`) map to
/// arrays of codes, to a nested object of the same kind (`answer_data`,
/// `filters`), or, for fill-out sessions only, to a bare string. Codes in
/// use: blank, invalid, missing, in_past, too_early, taken, not_found,
/// unknown_question, invalid_option, already_completed, malformed_json,
/// too_large, unsupported_media_type, method_not_allowed, internal_error,
/// unavailable.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"errors": {"external_id": ["taken"]}}))]
pub struct ErrorBody {
    #[schema(value_type = Object)]
    pub errors: serde_json::Value,
}

/// The body of `POST .../responses`.
#[derive(Debug, Serialize, ToSchema)]
pub struct NewResponseBody {
    /// Key of the questionnaire.
    pub questionnaire_key: String,
    /// Id managed by the external application; unique per dossier; string
    /// or integer, 1-255 characters.
    pub external_id: String,
    /// Question key (`v_` form) to option key; null is unanswered.
    #[schema(value_type = Object)]
    pub answer_data: serde_json::Value,
    /// Unix seconds, at least 946598400.
    pub started_at: Option<i64>,
    /// Unix seconds, at least 946598400; default: now.
    pub filled_out_at: Option<i64>,
    /// `patient` (default) or `profess`. Alias: `respondent_type`.
    pub respondent: Option<String>,
    /// EPD user id of the professional who entered the response; blank
    /// means the respondent did.
    pub entered_by: Option<String>,
    /// Flag name to boolean: the variant of the questionnaire that was
    /// filled out (a flag may hide or show questions; answers to hidden
    /// questions are kept but not scored). Names must be flags of the
    /// questionnaire (422 `{"errors":{"base":["flag_does_not_exist"]}}`),
    /// values booleans (`flag_value_invalid`). Kept on the response.
    #[schema(value_type = Option<Object>)]
    pub flags: Option<serde_json::Value>,
    /// Textvar name to string, filling `{{name}}` in the questionnaire's
    /// texts. Names must be textvars of the questionnaire
    /// (`textvar_does_not_exist`), values strings (`invalid`). Kept on the
    /// response.
    #[schema(value_type = Option<Object>)]
    pub textvars: Option<serde_json::Value>,
}

/// The body of `POST .../protocol_subscriptions`.
#[derive(Debug, Serialize, ToSchema)]
pub struct NewSubscriptionBody {
    /// Key of an automatic protocol; required unless `protocol_id` is given
    /// (the key wins when both are).
    pub protocol_key: Option<String>,
    /// Id of an automatic protocol.
    pub protocol_id: Option<i64>,
    /// Unix seconds the subscription starts (its first measurement is due
    /// then, or as the protocol's schedule says); at least 946598400, at
    /// most five years ahead; default: now. A start in the past prepares
    /// the occurrences still open and skips those whose window closed.
    pub start_at: Option<i64>,
    /// Flag name to boolean, for every questionnaire of the protocol; each
    /// must be a flag of one of them (422 `{"errors":{"base":["flag_does_not_exist"]}}`),
    /// with a boolean value (`flag_value_invalid`).
    #[schema(value_type = Option<Object>)]
    pub flags: Option<serde_json::Value>,
    /// Textvar name to string, likewise (`textvar_does_not_exist`, `invalid`).
    #[schema(value_type = Option<Object>)]
    pub textvars: Option<serde_json::Value>,
}

/// The body of `POST .../fill_out_requests`, inside `fill_out_request`.
#[derive(Debug, Serialize, ToSchema)]
pub struct NewFillOutRequestBody {
    /// Keys of the questionnaires to fill out, at least one.
    pub questionnaire_keys: Vec<String>,
    /// The respondent asked (the dossier's patient); or `respondent_type`.
    pub respondent_id: Option<i64>,
    /// `patient` (the default).
    pub respondent_type: Option<String>,
    /// Unix seconds the questionnaires open; default now.
    pub open_from: Option<i64>,
    /// Unix seconds they close: in the future, after `open_from`.
    pub open_till: i64,
    /// Seconds after `open_from` at which a `reminder` callback is sent.
    pub reminders: Option<Vec<i64>>,
    /// Where the `opened`, `reminder` and `expired` callbacks go: https (http
    /// for loopback hosts), of an origin allowed for the token.
    pub callback_url: Option<String>,
}

/// The body of `POST .../fill_out_sessions`.
#[derive(Debug, Serialize, ToSchema)]
pub struct NewFillOutSessionBody {
    /// Keys of questionnaires to fill out blank (at most 50); this or
    /// `response_ids` (or both: the resumed ones come first).
    pub questionnaire_keys: Option<Vec<String>>,
    /// Ids of aborted responses of this dossier to resume (at most 50).
    pub response_ids: Option<Vec<i64>>,
    /// Where the respondent goes after the last questionnaire, or on
    /// interrupting. Required.
    pub return_to: String,
    /// The caller's progress page, visited before the first questionnaire
    /// and between questionnaires.
    pub progress_url: Option<String>,
    /// A stylesheet loaded after the built-in one.
    pub stylesheet: Option<String>,
}

/// The body of `PUT .../responses/{external_id}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CompleteResponseBody {
    pub questionnaire_key: String,
    #[schema(value_type = Object)]
    pub answer_data: serde_json::Value,
    pub started_at: Option<i64>,
    pub filled_out_at: Option<i64>,
}

#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "Outcomes: routine outcome monitoring API",
        description = "Questionnaire responses, outcomes, protocols and respondents of patient dossiers.\n\n\
Conventions: JSON bodies (`application/json`, charset optional); every GET path also answers with a `.json` \
suffix; every path with or without a trailing slash; dossier paths under both `/api/v1/dossiers/{id}` and \
`/api/v1/dossier/{id}`. Array query parameters as `k[]=a&k[]=b` or `k=a&k=b`; hashes as `f[k][]=x`. \
Output times are ISO 8601 with milliseconds and a numeric UTC offset in the service's time zone; input times \
in bodies are Unix seconds. Lists are ordered by id. Bodies above the configured limit (default 1 MiB) get 413. \
A path that names nothing gets 404 `{\"errors\":{\"base\":[\"not_found\"]}}`; a blank dossier id \
404 `{\"errors\":{\"dossier_id\":[\"not_found\"]}}`; a dossier id over 255 characters 422 `invalid`.",
        license(name = "EUPL-1.2"),
    ),
    paths(
        crate::api::responses::list_responses,
        crate::api::responses::create_response,
        crate::api::responses::update_response,
        crate::api::responses::delete_response,
        crate::api::subscriptions::list_subscriptions,
        crate::api::subscriptions::start_subscription,
        crate::api::subscriptions::stop_subscription,
        crate::api::fill_out_requests::create_fill_out_request,
        crate::api::fill_out_requests::withdraw_fill_out_request,
        crate::api::fill_out_sessions::create_fill_out_session,
        crate::api::stats::dossier_stats,
        crate::api::stats::all_stats,
        crate::api::respondents::list_respondents,
        crate::api::respondents::get_respondent,
        crate::api::non_responses::list_non_responses,
        crate::api::non_responses::get_non_response,
        crate::api::non_responses::create_non_response,
        crate::api::protocols::list_protocols,
        crate::api::protocols::get_protocol,
        crate::api::protocols::get_measurement,
        crate::api::questionnaires::list_questionnaires,
        crate::api::questionnaires::get_questionnaire,
        crate::api::reports::get_report_calculation,
        crate::api::plugins::list_plugins,
        crate::api::health::health,
        crate::api::health::metrics,
        serve,
    ),
    modifiers(&Authentication),
    tags(
        (name = "responses", description = "Questionnaire completions"),
        (name = "protocol_subscriptions", description = "Dossiers subscribed to automatic protocols, whose measurements the scheduler prepares"),
        (name = "fill_out_sessions", description = "Hand a respondent to the hosted fill-out pages: `fill_out_url` logs them in once; each questionnaire is one accessible HTML form (English and Dutch, no JavaScript); pending responses carry a `completing_url` that opens the same pages for all the respondent's open responses"),
        (name = "fill_out_requests", description = "Questionnaires a dossier's patient is asked to fill out in a window, with callbacks (right `fill_out_sessions`)"),
        (name = "stats", description = "Counters of responses, invitations and subscriptions per dossier"),
        (name = "respondents", description = "Who fills out a dossier's questionnaires"),
        (name = "non-responses", description = "Why responses were not filled out: reasons of the SBG benchmark's list"),
        (name = "protocols", description = "Questionnaires grouped into measurements"),
        (name = "questionnaires", description = "Questionnaire definitions"),
        (name = "report calculations", description = "Calculator plugins run over a dossier's responses"),
        (name = "plugins", description = "Scorer and calculator plugins the service runs"),
        (name = "operations", description = "Health, metrics and this document"),
    )
)]
pub struct ApiDoc;

/// Documents authentication (decisions.md §2, §7): the two schemes, and the
/// 401 and 403 answers of every endpoint behind the guard (everything under
/// `/api/v1` but this document).
#[derive(Debug)]
struct Authentication;

impl Modify for Authentication {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let mut basic = Http::new(HttpAuthScheme::Basic);
        basic.description = Some("consumer_key and consumer_secret of an API token".to_owned());
        let mut bearer = Http::new(HttpAuthScheme::Bearer);
        bearer.bearer_format = Some("JWT".to_owned());
        bearer.description = Some(
            "RS256 or RS512 JWT signed with the key registered on the token named by `kid`; `aud` must be `api`; \
             `sub` is the dossier id and is required on dossier endpoints"
                .to_owned(),
        );
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme("basic", SecurityScheme::Http(basic));
        components.add_security_scheme("bearer", SecurityScheme::Http(bearer));

        let error_body = || {
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build()
        };
        for (path, item) in openapi.paths.paths.iter_mut() {
            if !path.starts_with("/api/v1/") || path == "/api/v1/openapi.json" {
                continue;
            }
            let dossier = path.starts_with("/api/v1/dossiers/");
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ];
            for operation in operations.into_iter().flatten() {
                operation.security = Some(vec![
                    SecurityRequirement::new("basic", Vec::<String>::new()),
                    SecurityRequirement::new("bearer", Vec::<String>::new()),
                ]);
                let unauthorized = ResponseBuilder::new()
                    .description(
                        "`{\"errors\":{\"base\":[\"unauthorized\"]}}` with `WWW-Authenticate`: missing, malformed or \
                         wrong credentials, or a JWT that fails validation",
                    )
                    .header("WWW-Authenticate", Header::default())
                    .content("application/json", error_body())
                    .build();
                let mut reasons = "`right_missing` (the token lacks the right for this endpoint group), `ip_not_allowed`, \
                                   `https_required` (credentials over plain HTTP from outside loopback)"
                    .to_owned();
                if dossier {
                    reasons.push_str(", `sub_missing` (a JWT without `sub`), `sub_mismatch` (`sub` is another dossier)");
                }
                let responses = &mut operation.responses.responses;
                let forbidden = match responses.get("403") {
                    // Keep what the endpoint itself refuses with 403.
                    Some(RefOr::T(own)) => format!(
                        "{}; or `{{\"errors\":{{\"base\":[reason]}}}}` with reason {reasons}",
                        own.description
                    ),
                    _ => format!("`{{\"errors\":{{\"base\":[reason]}}}}`, reason one of {reasons}"),
                };
                let forbidden = ResponseBuilder::new()
                    .description(forbidden)
                    .content("application/json", error_body())
                    .build();
                responses.insert("401".to_owned(), RefOr::T(unauthorized));
                responses.insert("403".to_owned(), RefOr::T(forbidden));
            }
        }
    }
}

/// The OpenAPI document
///
/// This document, OpenAPI 3.1.
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "operations", responses((status = 200, description = "OpenAPI 3.1 document")))]
pub async fn serve() -> Response {
    json(StatusCode::OK, &ApiDoc::openapi())
}
