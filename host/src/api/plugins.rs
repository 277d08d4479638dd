//! `GET /api/v1/plugins`: what every plugin folder serves, and why a module
//! was refused (docs/design.md#hot-reload). Operators' view; it names
//! plugin versions and hashes, never patient data or where the plugin
//! directory is.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::error::{ApiError, json};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_plugins))
}

/// One plugin folder.
#[derive(Debug, Serialize, ToSchema)]
pub struct PluginStatusView {
    /// Folder under the plugin directory.
    pub folder: String,
    /// `serving`, or `failed` when the folder's current module was refused
    /// (`serving` then says whether an older version still serves).
    pub state: String,
    /// The version that serves, if any.
    #[schema(value_type = Option<Object>)]
    pub serving: Option<crate::plugins::Serving>,
    /// Why the current module was refused.
    pub error: Option<String>,
    /// SHA-256 of the refused module.
    pub refused_sha256: Option<String>,
    /// A candidate version of this scorer on trial, if one is installed
    /// (`outcomes plugin candidate`).
    pub candidate: Option<CandidateView>,
}

/// A candidate version of a scorer: scoring in the shadow of the serving
/// version, or promoted in its place. Counts are over every host of the
/// database.
#[derive(Debug, Serialize, ToSchema)]
pub struct CandidateView {
    pub version: String,
    pub sha256: String,
    /// `shadowing`: it scores every response the serving version scores,
    /// in the background. `promoted`: it serves in place of the version it
    /// was tried against. `superseded`: promoted, but the plugin folder
    /// now holds another version, which serves. `refused`: this host uses
    /// it neither in the shadow nor to serve (`error` says why: its row is
    /// not sealed with the service's secrets key, `plugin_allow` does not
    /// list it, its module is missing or refused).
    pub state: String,
    /// Why it is `refused`.
    pub error: Option<String>,
    /// The serving version it was tried against.
    pub live_version: String,
    pub live_sha256: String,
    /// When it was installed, RFC 3339.
    pub installed_at: String,
    /// Responses it scored.
    pub calls: i64,
    /// Responses it scored otherwise than the serving version.
    pub differences: i64,
    /// Responses it was not given because a host's shadow queue was full.
    pub dropped: i64,
}

/// The plugin list.
#[derive(Debug, Serialize, ToSchema)]
pub struct PluginsView {
    /// Increases with every reload that changed something.
    pub generation: u64,
    pub plugins: Vec<PluginStatusView>,
}

/// List plugins
///
/// Every folder of the plugin directory: the scorer or calculator version
/// it serves (name, version, SHA-256, fixtures passed at load) and, when its
/// latest module was refused, why; a scorer's candidate version with its
/// counts of calls, differences and dropped calls. Needs the
/// `questionnaires` right.
#[utoipa::path(
    get,
    path = "/plugins",
    tag = "plugins",
    responses((status = 200, description = "Plugin folders", body = PluginsView))
)]
pub async fn list_plugins(State(app): State<AppState>) -> Result<Response, ApiError> {
    let registry = app.plugins().registry();
    let candidates = app.store().candidates().await?;
    let trials = app.trials();
    let view = PluginsView {
        generation: registry.generation,
        plugins: registry
            .statuses()
            .into_iter()
            .map(|s| {
                let candidate = s.serving.as_ref().and_then(|serving| {
                    candidates.iter().find(|c| c.name == serving.name).map(|c| {
                        let error = trials.refusal(&c.name);
                        CandidateView {
                            version: c.version.clone(),
                            sha256: c.sha256.clone(),
                            state: if error.is_some() {
                                "refused".to_owned()
                            } else {
                                candidate_state(c, &serving.sha256).to_owned()
                            },
                            error,
                            live_version: c.live_version.clone(),
                            live_sha256: c.live_sha256.clone(),
                            installed_at: c
                                .installed_at
                                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                            calls: c.calls,
                            differences: c.differences,
                            dropped: c.dropped,
                        }
                    })
                });
                PluginStatusView {
                    folder: s.folder,
                    state: s.state.to_owned(),
                    serving: s.serving,
                    error: s.error,
                    refused_sha256: s.refused_sha256,
                    candidate,
                }
            })
            .collect(),
    };
    Ok(json(StatusCode::OK, &view))
}

/// `shadowing`, `promoted` or `superseded` (see [`CandidateView::state`]),
/// for a candidate of the plugin whose folder serves `folder_sha256`.
pub fn candidate_state(c: &crate::store::StoredCandidate, folder_sha256: &str) -> &'static str {
    match c.promoted_at {
        None => "shadowing",
        Some(_) if c.live_sha256 == folder_sha256 => "promoted",
        Some(_) => "superseded",
    }
}
