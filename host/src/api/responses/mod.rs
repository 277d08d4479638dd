//! `/api/v1/dossiers/:dossier_id/responses`: list, store (POST), complete a
//! pending response (PUT) and delete by external id.

mod body;
mod create;
mod delete;
mod list;
mod update;
pub mod view;

use axum::Router;
use axum::routing::{get, put};

use crate::AppState;

pub use create::__path_create_response;
pub use delete::__path_delete_response;
pub use list::__path_list_responses;
pub use update::__path_update_response;
pub use view::ResponseView;

/// The routes of this resource (endpoint group `responses`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/dossiers/{dossier_id}/responses",
            get(list::list_responses).post(create::create_response),
        )
        .route(
            "/dossiers/{dossier_id}/responses/{external_id}",
            put(update::update_response).delete(delete::delete_response),
        )
}
