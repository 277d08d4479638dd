//! `/api/v1/dossiers/:dossier_id/responses`: list, store (POST), complete a
//! pending response (PUT), delete by external id, and verify a stored
//! outcome.

mod body;
pub mod create;
mod delete;
pub mod import;
mod list;
pub(crate) mod page;
mod update;
mod verification;
pub mod view;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;

pub use body::{CompleteResponseBody, NewResponseBody};
pub use list::{QuestionnaireKeys, ResponseStatus};
pub use page::{Cursor, PageSize};
pub use view::ResponseView;

/// The routes of this resource (endpoint group `responses`).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list::list_responses, create::create_response))
        .routes(routes!(update::update_response, delete::delete_response))
        .routes(routes!(verification::get_verification))
}
