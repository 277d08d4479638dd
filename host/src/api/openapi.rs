//! The top of the OpenAPI 3.1 document: info, tags, security schemes and
//! the answers every endpoint shares. Paths come from each resource's
//! router (`#[utoipa::path]` beside the handler, registered with
//! `routes!`); [`document`] completes what the routers collected, and
//! [`serve`] answers it at `/api/v1/openapi.json`.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::Response;
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Header, Ref, RefOr, ResponseBuilder};
use utoipa::{Modify, OpenApi};

use super::{alarms, reports, responses, rules};
use crate::error::{ErrorBody, json};

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
    // The one path no router registers: it is served as `/openapi` (GET
    // paths lose `.json` before routing) and documented as clients call it.
    paths(serve),
    // The rules of parameters: a parameter's type is named, not collected
    // (bodies and answers collect theirs).
    components(schemas(
        ErrorBody,
        rules::DossierId,
        rules::Id,
        rules::IdList,
        rules::IdListOrArray,
        rules::ShortText,
        rules::PositiveId,
        rules::AnyInteger,
        rules::Boolean,
        rules::Language,
        rules::FilterTime,
        responses::QuestionnaireKeys,
        responses::ResponseStatus,
        responses::PageSize,
        responses::Cursor,
        reports::ResponseIds,
        reports::ReportQuestionnaireKeys,
        alarms::AlarmStateName,
    )),
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
        (name = "alarms", description = "Alarms stored outcomes raised (PHQ-9 item 9 and the like), each to be acknowledged by a named professional before its deadline, escalated by the scheduler when not, and resolved; right `alarms`"),
        (name = "operations", description = "Health, readiness, version, metrics, this document and its interactive page (`/api/v1/docs`); none needs API credentials. The probes (`/health`, `/livez`, `/readyz`, `/version`) are limited per client address; `/metrics` is served here only to the configured metrics bearer"),
    )
)]
pub struct ApiDoc;

/// The whole document: `routes`, the paths the routers collected, under
/// [`ApiDoc`]'s top, with the answers shared by every endpoint added.
pub fn document(routes: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.merge(routes);
    Authentication.modify(&mut doc);
    BodyErrors.modify(&mut doc);
    UriTooLong.modify(&mut doc);
    super::links::add(&mut doc);
    ProbeLimits.modify(&mut doc);
    doc
}

/// The operations of a path that the API uses.
pub(super) fn operations(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        &mut item.get,
        &mut item.put,
        &mut item.post,
        &mut item.delete,
        &mut item.patch,
    ]
    .into_iter()
    .flatten()
}

/// The paths under `/api/v1` that need no credentials: this document and
/// the page that shows it.
const OPEN: [&str; 3] = [
    "/api/v1/openapi.json",
    "/api/v1/docs",
    "/api/v1/docs/{file}",
];

/// Documents authentication (docs/api/rights.md): the two schemes, and the
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
            "JWT signed with a key registered on the token named by `kid`, by the one algorithm (RS256 or RS512) \
             that key is registered for; `aud` must be `api`; \
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
            if !path.starts_with("/api/v1/") || OPEN.contains(&path.as_str()) {
                continue;
            }
            let dossier = path.starts_with("/api/v1/dossiers/");
            for operation in operations(item) {
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
                let too_many = too_many(
                    "over the rate limit of this token, or of this client address for requests without \
                     valid credentials (then answered before the credentials are read)",
                );
                responses.insert("401".to_owned(), RefOr::T(unauthorized));
                responses.insert("403".to_owned(), RefOr::T(forbidden));
                responses.insert("429".to_owned(), RefOr::T(too_many.build()));
            }
        }
    }
}

/// A 429 `too_many_requests` with `Retry-After`, and why.
fn too_many(why: &str) -> ResponseBuilder {
    ResponseBuilder::new()
        .description(format!(
            "`{{\"errors\":{{\"base\":[\"too_many_requests\"]}}}}` with `Retry-After` (seconds): {why}"
        ))
        .header("Retry-After", Header::default())
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        )
}

/// The probes, which each client address may ask so often
/// (`crate::api::probes::limit`).
pub const PROBES: [&str; 4] = ["/health", "/livez", "/readyz", "/version"];

/// Documents the 429 of the probes.
#[derive(Debug)]
struct ProbeLimits;

impl Modify for ProbeLimits {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (path, item) in openapi.paths.paths.iter_mut() {
            if !PROBES.contains(&path.as_str()) {
                continue;
            }
            for operation in operations(item) {
                let answer = too_many("this client address asked the probes too often");
                operation
                    .responses
                    .responses
                    .insert("429".to_owned(), RefOr::T(answer.build()));
            }
        }
    }
}

/// Documents the answers of [`crate::api::extract::JsonObject`], the
/// extractor of every request body, on each operation that takes one: 400
/// `malformed_json`, 408 `request_timeout`, 413 `too_large` and 415
/// `unsupported_media_type`.
#[derive(Debug)]
struct BodyErrors;

impl Modify for BodyErrors {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let answers = [
            (
                "400",
                "`{\"errors\":{\"base\":[\"malformed_json\"]}}`: the body is not a JSON object",
            ),
            (
                "408",
                "`{\"errors\":{\"base\":[\"request_timeout\"]}}`: the body did not arrive within the request body timeout; the connection is closed",
            ),
            (
                "413",
                "`{\"errors\":{\"base\":[\"too_large\"]}}`: the body is above the configured limit",
            ),
            (
                "415",
                "`{\"errors\":{\"base\":[\"unsupported_media_type\"]}}`: no Content-Type, or one other than JSON",
            ),
        ];
        for item in openapi.paths.paths.values_mut() {
            for operation in operations(item) {
                if operation.request_body.is_none() {
                    continue;
                }
                let responses = &mut operation.responses.responses;
                for (status, description) in answers {
                    let answer = ResponseBuilder::new()
                        .description(description)
                        .content(
                            "application/json",
                            ContentBuilder::new()
                                .schema(Some(Ref::from_schema_name("ErrorBody")))
                                .build(),
                        )
                        .build();
                    responses.insert(status.to_owned(), RefOr::T(answer));
                }
            }
        }
    }
}

/// Documents the 414 of every operation: a request line whose target is
/// longer than the HTTP server reads (65,534 bytes) is answered 414 with no
/// body before any route sees it.
#[derive(Debug)]
struct UriTooLong;

impl Modify for UriTooLong {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            for operation in operations(item) {
                let answer = ResponseBuilder::new()
                    .description(
                        "The path and query are longer than the HTTP server reads (65,534 bytes); no body",
                    )
                    .build();
                operation
                    .responses
                    .responses
                    .insert("414".to_owned(), RefOr::T(answer));
            }
        }
    }
}

/// The OpenAPI document
///
/// This document, OpenAPI 3.1.
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "operations", responses((status = 200, description = "OpenAPI 3.1 document")))]
pub async fn serve(doc: Arc<utoipa::openapi::OpenApi>) -> Response {
    json(StatusCode::OK, &*doc)
}

#[cfg(test)]
mod tests {
    /// Every `$ref` in `value`.
    fn refs<'a>(value: &'a serde_json::Value, found: &mut Vec<&'a str>) {
        match value {
            serde_json::Value::Object(map) => {
                if let Some(serde_json::Value::String(target)) = map.get("$ref") {
                    found.push(target);
                }
                map.values().for_each(|v| refs(v, found));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
            _ => {}
        }
    }

    #[test]
    fn every_reference_names_a_component() {
        let doc = serde_json::to_value(crate::api::document()).expect("serializes");
        let mut found = Vec::new();
        refs(&doc, &mut found);
        assert!(found.len() > 50, "{} references", found.len());
        for target in found {
            let name = target.trim_start_matches("#/components/schemas/");
            assert!(
                doc["components"]["schemas"][name].is_object(),
                "{target} names no component: add its type to ApiDoc's components"
            );
        }
    }

    #[test]
    fn every_body_has_the_extractors_answers() {
        let doc = crate::api::document();
        let mut bodies = 0;
        for (path, item) in &doc.paths.paths {
            let operations = [&item.get, &item.put, &item.post, &item.delete];
            for operation in operations.into_iter().flatten() {
                let responses = &operation.responses.responses;
                let has_body = operation.request_body.is_some();
                bodies += usize::from(has_body);
                for status in ["400", "408", "413", "415"] {
                    assert_eq!(responses.contains_key(status), has_body, "{path} {status}");
                }
            }
        }
        // POST responses, subscriptions, fill-out requests and sessions,
        // non-responses, alarm acknowledgements and resolutions, the
        // import; PUT responses.
        assert_eq!(bodies, 9);
    }
}
