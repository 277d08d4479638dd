//! `GET /api/v1/plugins`: what every plugin folder serves, and why a module
//! was refused (docs/design.md#hot-reload). Operators' view; it names plugin
//! versions and hashes, never patient data.

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
/// latest module was refused, why. Needs the `questionnaires` right.
#[utoipa::path(
    get,
    path = "/plugins",
    tag = "plugins",
    responses((status = 200, description = "Plugin folders", body = PluginsView))
)]
pub async fn list_plugins(State(app): State<AppState>) -> Result<Response, ApiError> {
    let registry = app.plugins().registry();
    let view = PluginsView {
        generation: registry.generation,
        plugins: registry
            .statuses()
            .into_iter()
            .map(|s| PluginStatusView {
                folder: s.folder,
                state: s.state.to_owned(),
                serving: s.serving,
                error: s.error,
                refused_sha256: s.refused_sha256,
            })
            .collect(),
    };
    Ok(json(StatusCode::OK, &view))
}
