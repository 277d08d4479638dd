//! The HTTP edge: one module per resource, each exporting its router, and
//! the path conventions every endpoint shares (docs/api/conventions.md).
//!
//! A resource's router registers each handler with its OpenAPI entry
//! (`routes!` over the handler's `#[utoipa::path]`), so the routes served
//! and the paths documented are one list. Endpoint groups are separate
//! routers, each behind the auth guard with its right (docs/api/rights.md);
//! handlers never see an unauthenticated call.

pub mod alarms;
pub mod docs;
pub mod extract;
pub mod fields;
pub mod fill_out_requests;
pub mod fill_out_sessions;
pub mod health;
pub mod import;
pub mod links;
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
pub mod rules;
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

/// What a group of routes sits behind.
#[derive(Debug, Clone, Copy)]
enum Gate {
    /// The auth guard, with the right of the endpoint group.
    Guard(Right),
    /// Each client address's share of the probes.
    Probes,
}

/// Every route, with state.
pub fn router(state: AppState) -> Router {
    let guarded = |group: OpenApiRouter<AppState>, gate: Gate| {
        let auth = state.auth().clone();
        match gate {
            Gate::Guard(right) => {
                group.route_layer(middleware::from_fn(move |req: Request, next: Next| {
                    guard(auth.clone(), right, req, next)
                }))
            }
            Gate::Probes => {
                group.route_layer(middleware::from_fn(move |req: Request, next: Next| {
                    probes::limit(auth.clone(), req, next)
                }))
            }
        }
    };
    served(guarded)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

/// Every route [`router`] serves: [`routes`], and the document made of
/// them.
fn served(
    guarded: impl Fn(OpenApiRouter<AppState>, Gate) -> OpenApiRouter<AppState>,
) -> Router<AppState> {
    let (routes, doc) = routes(guarded).split_for_parts();
    let doc = Arc::new(openapi::document(doc));
    routes.route(OPENAPI, get(move || openapi::serve(Arc::clone(&doc))))
}

/// Where [`router`] serves the OpenAPI document: GET paths lose `.json`
/// before routing, so clients call it `/api/v1/openapi.json`.
const OPENAPI: &str = "/api/v1/openapi";

/// The OpenAPI document of every route, as `/api/v1/openapi.json` serves it.
pub fn document() -> utoipa::openapi::OpenApi {
    openapi::document(routes(|group, _| group).into_openapi())
}

/// The route table [`router`] is built from: every method and path it
/// serves, paths as the router matches them (parameters in braces, no
/// `.json`). Each resource router hands axum a path together with the
/// operations registered on it (`routes!`), and this reads those
/// registrations, not the document [`openapi::document`] makes of them,
/// so the document can be checked against what is served.
pub fn route_table() -> Vec<(Method, String)> {
    let registered = routes(|group, _| group).into_openapi();
    let mut table = vec![(Method::GET, OPENAPI.to_owned())];
    for (path, item) in registered.paths.paths {
        let operations = [
            (Method::GET, item.get.is_some()),
            (Method::PUT, item.put.is_some()),
            (Method::POST, item.post.is_some()),
            (Method::DELETE, item.delete.is_some()),
            (Method::OPTIONS, item.options.is_some()),
            (Method::HEAD, item.head.is_some()),
            (Method::PATCH, item.patch.is_some()),
            (Method::TRACE, item.trace.is_some()),
        ];
        for (method, registered) in operations {
            if registered {
                table.push((method, path.clone()));
            }
        }
    }
    table
}

/// Every documented route: the endpoint groups under `/api/v1`, each passed
/// through `guarded` with its right, the probes through `guarded` with
/// their limit, and the other open operations endpoints.
fn routes(
    guarded: impl Fn(OpenApiRouter<AppState>, Gate) -> OpenApiRouter<AppState>,
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
        (import::router(), Right::Import),
        (alarms::router(), Right::Alarms),
    ];
    let api = groups
        .into_iter()
        .fold(OpenApiRouter::new(), |api, (group, right)| {
            api.merge(guarded(group, Gate::Guard(right)))
        });
    let probes = OpenApiRouter::new()
        .routes(routes!(health::health))
        .routes(routes!(probes::livez))
        .routes(routes!(probes::readyz))
        .routes(routes!(probes::version));
    OpenApiRouter::new()
        .nest("/api/v1", api)
        .merge(guarded(probes, Gate::Probes))
        .routes(routes!(scrape::metrics))
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

    /// The paths an axum router routes, from its `Debug` text (axum offers
    /// no other way to list them): the `RouteId(n): "/path"` entries of its
    /// `path_router`, not those of the fallback router axum keeps beside.
    fn paths_in(router: &Router<AppState>) -> std::collections::BTreeSet<String> {
        let text = format!("{router:?}");
        let routed = text
            .split_once("path_router:")
            .and_then(|(_, rest)| rest.split_once("fallback_router:"))
            .map_or("", |(routed, _)| routed);
        routed
            .split("RouteId(")
            .skip(1)
            .filter_map(|rest| rest.split_once("): \"")?.1.split_once('"'))
            .map(|(path, _)| path.to_owned())
            .collect()
    }

    #[test]
    fn the_route_table_holds_every_path_the_router_serves() {
        let served = paths_in(&served(|group, _| group));
        let table: std::collections::BTreeSet<String> =
            route_table().into_iter().map(|(_, path)| path).collect();
        assert!(
            served.len() > 20,
            "axum's Debug text lists no paths: {served:?}"
        );
        assert_eq!(served, table);
    }

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
