//! The HTTP edge: one module per resource, each exporting its router, and
//! the path conventions every endpoint shares (docs/api/conventions.md).
//!
//! A resource's router registers each handler with its OpenAPI entry
//! (`routes!` over the handler's `#[utoipa::path]`), so the routes served
//! and the paths documented are one list. Endpoint groups are separate
//! routers, each behind the auth guard with its right (docs/api/rights.md);
//! handlers never see an unauthenticated call.

pub mod docs;
pub mod extract;
pub mod fields;
pub mod fill_out_requests;
pub mod fill_out_sessions;
pub mod health;
pub mod non_responses;
pub mod observe;
pub mod openapi;
pub mod plugins;
pub mod probes;
pub mod protocols;
pub mod questionnaire_schema;
pub mod questionnaires;
pub mod reports;
pub mod respondents;
pub mod responses;
pub mod scrape;
pub mod stats;
pub mod subscriptions;

use std::sync::Arc;

use axum::Router;
use axum::extract::{OriginalUri, Request};
use axum::http::{Method, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::auth::guard::guard;
use crate::auth::rights::Right;
use crate::error::ApiError;

/// Every route, with state.
pub fn router(state: AppState) -> Router {
    let guarded = |group: OpenApiRouter<AppState>, right: Right| {
        let state = state.clone();
        group.route_layer(middleware::from_fn(move |req: Request, next: Next| {
            guard(state.clone(), right, req, next)
        }))
    };
    let (routes, doc) = routes(guarded).split_for_parts();
    let doc = Arc::new(openapi::document(doc));
    routes
        .route(
            "/api/v1/openapi",
            get(move || openapi::serve(Arc::clone(&doc))),
        )
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

/// The OpenAPI document of every route, as `/api/v1/openapi.json` serves it.
pub fn document() -> utoipa::openapi::OpenApi {
    openapi::document(routes(|group, _| group).into_openapi())
}

/// Every documented route: the endpoint groups under `/api/v1`, each passed
/// through `guarded` with its right, and the open operations endpoints.
fn routes(
    guarded: impl Fn(OpenApiRouter<AppState>, Right) -> OpenApiRouter<AppState>,
) -> OpenApiRouter<AppState> {
    let groups = [
        (responses::router(), Right::Responses),
        (subscriptions::router(), Right::ProtocolSubscriptions),
        (stats::router(), Right::Stats),
        (fill_out_requests::router(), Right::FillOutSessions),
        (fill_out_sessions::router(), Right::FillOutSessions),
        (respondents::router(), Right::Respondents),
        (non_responses::router(), Right::NonResponses),
        (protocols::router(), Right::Protocols),
        (questionnaires::router(), Right::Questionnaires),
        (plugins::router(), Right::Questionnaires),
        (reports::router(), Right::ReportCalculations),
    ];
    let api = groups
        .into_iter()
        .fold(OpenApiRouter::new(), |api, (group, right)| {
            api.merge(guarded(group, right))
        });
    OpenApiRouter::new()
        .nest("/api/v1", api)
        .routes(routes!(health::health))
        .routes(routes!(scrape::metrics))
        .routes(routes!(probes::livez))
        .routes(routes!(probes::readyz))
        .routes(routes!(probes::version))
        .routes(routes!(docs::page))
        .routes(routes!(docs::file))
}

async fn not_found(OriginalUri(uri): OriginalUri) -> Response {
    // `/dossiers//responses`: the blank segment is the dossier id.
    if uri.path().starts_with("/api/v1/dossiers//") || uri.path().starts_with("/api/v1/dossier//") {
        return ApiError::NotFound("dossier_id").into_response();
    }
    ApiError::NotFound("base").into_response()
}

async fn method_not_allowed() -> Response {
    ApiError::MethodNotAllowed.into_response()
}

/// Rewrites a request's path to the one form the router knows, before
/// routing: no trailing slash; `/dossier/` as `/dossiers/`; GET and HEAD
/// without a `.json` suffix. The path as sent stays in [`OriginalUri`].
pub fn normalize(mut req: Request) -> Request {
    let original = req.uri().clone();
    req.extensions_mut().insert(OriginalUri(original.clone()));
    let path = original.path();
    let mut normal = path.trim_end_matches('/');
    if normal.is_empty() {
        normal = "/";
    }
    if matches!(*req.method(), Method::GET | Method::HEAD)
        && let Some(stripped) = normal
            .strip_suffix(".json")
            .filter(|s| !s.ends_with('/') && !s.is_empty())
    {
        normal = stripped;
    }
    let normal = match normal.strip_prefix("/api/v1/dossier/") {
        Some(rest) => format!("/api/v1/dossiers/{rest}"),
        None => normal.to_owned(),
    };
    if normal != path {
        let rewritten = match original.query() {
            Some(q) => format!("{normal}?{q}"),
            None => normal,
        };
        if let Ok(uri) = rewritten.parse::<Uri>() {
            *req.uri_mut() = uri;
        }
    }
    req
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;

    fn path_of(method: Method, uri: &str) -> String {
        let req = Request::builder()
            .method(method)
            .uri(uri)
            .body(Body::empty())
            .expect("valid");
        normalize(req).uri().to_string()
    }

    #[test]
    fn paths_have_one_form() {
        assert_eq!(
            path_of(Method::GET, "/api/v1/dossier/12/responses.json?status=open"),
            "/api/v1/dossiers/12/responses?status=open"
        );
        assert_eq!(
            path_of(Method::POST, "/api/v1/dossiers/12/responses/"),
            "/api/v1/dossiers/12/responses"
        );
        assert_eq!(
            path_of(Method::DELETE, "/api/v1/dossiers/12/responses/x.json"),
            "/api/v1/dossiers/12/responses/x.json"
        );
        assert_eq!(
            path_of(Method::GET, "/api/v1/protocols/3.json/"),
            "/api/v1/protocols/3"
        );
        assert_eq!(path_of(Method::GET, "/"), "/");
        assert_eq!(path_of(Method::GET, "/.json"), "/.json");
    }
}
