//! The respondent-facing pages (docs/api/fill-out.md#hosted-pages,
//! docs/design.md#fill-out-flow): a signed link or a `completing_url`
//! logs the respondent in, each page of a questionnaire is one
//! server-rendered form, and the respondent goes to the caller's progress
//! page between questionnaires and back to `return_to` at the end.
//!
//! Routes, all under `/fill_out`:
//! - `GET session/login?...`: the one-time `fill_out_url`: a page with a
//!   button; `POST session/login` (the button) spends it ([`login`]).
//! - `GET respondents/{id}?expires=...&generation=...&token=...`: a
//!   respondent's `completing_url`: a page with a Start button; `POST
//!   respondents/{id}` (the button) opens what they can fill out
//!   ([`login`]).
//! - `GET session`: where to go next: the progress page, the next
//!   questionnaire, or the end ([`flow`]).
//! - `GET session/continue`, `GET session/interrupt?token=...`: the
//!   `continue_url` and `interrupt_url` the progress page links to.
//! - `GET`/`POST session/responses/{id}`: the page of a questionnaire the
//!   respondent is on, and its submission: Next, Back or Stop ([`form`]).
//! - `GET done`, `GET paused`: the end of a session that has no
//!   `return_to`.
//!
//! Errors are HTML pages in the respondent's language, never JSON. No
//! JavaScript; a strict Content-Security-Policy on every answer; forms
//! carry a CSRF token tied to the session cookie, the `interrupt_url` a
//! token of its own.

pub mod fields;
mod flow;
mod form;
pub mod html;
pub mod i18n;
mod login;
pub mod pages;
pub mod session;
pub mod widgets;

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use tower_http::catch_panic::CatchPanicLayer;

use crate::AppState;
use i18n::{Lang, Msg};
use session::{accept_language, page};

/// Every fill-out route, with state.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route(
            "/fill_out/session/login",
            get(login::show_login).post(login::log_in),
        )
        .route(
            "/fill_out/respondents/{id}",
            get(login::show_completing_url).post(login::open_completing_url),
        )
        .route("/fill_out/session", get(flow::next))
        .route(
            "/fill_out/session/continue",
            get(flow::continue_filling_out),
        )
        .route("/fill_out/session/interrupt", get(flow::interrupt))
        .route(
            "/fill_out/session/responses/{id}",
            get(form::show).post(form::submit),
        )
        .route("/fill_out/done", get(done))
        .route("/fill_out/paused", get(paused))
        .route(pages::STYLESHEET, get(stylesheet))
        .route("/fill_out", any(not_found))
        .route("/fill_out/{*rest}", any(not_found))
        .method_not_allowed_fallback(method_not_allowed)
        .layer(CatchPanicLayer::custom(panicked))
        .layer(middleware::from_fn(session::secure_headers))
        .with_state(state)
}

/// A handler that panicked: a page like any failure of ours (the API's
/// layer would answer JSON), in English, as the request is gone.
fn panicked(_: Box<dyn std::any::Any + Send>) -> Response {
    tracing::error!("a fill-out page panicked");
    page(
        StatusCode::INTERNAL_SERVER_ERROR,
        Lang::En,
        Msg::FailedTitle,
        Msg::FailedText,
        None,
    )
}

/// The end of a session opened with a `completing_url`.
async fn done(headers: HeaderMap) -> Response {
    let lang = Lang::for_browser(accept_language(&headers));
    page(StatusCode::OK, lang, Msg::DoneTitle, Msg::DoneText, None)
}

/// A session opened with a `completing_url`, interrupted.
async fn paused(headers: HeaderMap) -> Response {
    let lang = Lang::for_browser(accept_language(&headers));
    page(
        StatusCode::OK,
        lang,
        Msg::PausedTitle,
        Msg::PausedText,
        None,
    )
}

async fn stylesheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        include_str!("style.css"),
    )
        .into_response()
}

async fn not_found(headers: HeaderMap) -> Response {
    let lang = Lang::for_browser(accept_language(&headers));
    page(
        StatusCode::NOT_FOUND,
        lang,
        Msg::NotAvailableTitle,
        Msg::NotAvailableText,
        None,
    )
}

async fn method_not_allowed(headers: HeaderMap) -> Response {
    let lang = Lang::for_browser(accept_language(&headers));
    page(
        StatusCode::METHOD_NOT_ALLOWED,
        lang,
        Msg::FormRefusedTitle,
        Msg::FormRefusedText,
        None,
    )
}

#[cfg(test)]
mod tests {
    use axum::body::{Body, to_bytes};
    use axum::http::Request;
    use tower::ServiceExt;

    use super::*;

    async fn boom() -> Response {
        panic!("a handler's bug")
    }

    #[tokio::test]
    async fn a_panicking_page_answers_a_page_with_the_security_headers() {
        let router = Router::new()
            .route("/fill_out/boom", get(boom))
            .layer(CatchPanicLayer::custom(panicked))
            .layer(middleware::from_fn(session::secure_headers));
        let request = Request::builder()
            .uri("/fill_out/boom")
            .body(Body::empty())
            .expect("a request");
        let answer = router.oneshot(request).await.expect("an answer");
        assert_eq!(answer.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            answer.headers()[header::CONTENT_TYPE],
            "text/html; charset=utf-8"
        );
        assert!(
            answer
                .headers()
                .contains_key(header::CONTENT_SECURITY_POLICY)
        );
        let body = to_bytes(answer.into_body(), 1 << 20).await.expect("a body");
        let text = String::from_utf8_lossy(&body);
        assert!(text.starts_with("<!doctype html>"), "{text}");
    }
}
