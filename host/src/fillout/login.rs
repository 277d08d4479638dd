//! Logging in: the one-time `fill_out_url` of a session made through the
//! API, and a respondent's lasting `completing_url`. Both check their
//! signature before anything else, then start a browser session with a new
//! random cookie.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::i18n::{Lang, Msg};
use super::session::{
    accept_language, access, cookie_hash, cookie_of, failed, page, query_param, redirect,
    redirect_with_cookie,
};
use crate::AppState;
use crate::auth::guard::client_of;
use crate::auth::links::{LinkError, LoginQuery};
use crate::auth::secret;
use crate::domain::ids::RespondentId;
use crate::store::LoginResult;

/// `GET /fill_out/session/login`: a tampered link, an expired one or one
/// used before gets a page that says so and no session.
pub async fn log_in(State(app): State<AppState>, parts: Parts) -> Response {
    if parts.method == Method::HEAD {
        return looked_at();
    }
    let lang = Lang::for_browser(accept_language(&parts.headers));
    // A part left out is empty, which fails the signature.
    let query = LoginQuery {
        fill_out_session_key: query_param(&parts, "fill_out_session_key"),
        nonce: query_param(&parts, "nonce"),
        timestamp: query_param(&parts, "timestamp"),
        hmac: query_param(&parts, "hmac"),
    };
    let now = app.now();
    let count = |result: &str| {
        app.metrics()
            .inc("outcomes_fill_out_logins_total", &[("result", result)]);
    };
    let action = "GET /fill_out/session/login";
    match app.links().check_login(&query, now) {
        Ok(()) => {}
        Err(LinkError::Tampered) => {
            count("tampered");
            return refused_link(&app, &parts, action, lang, LinkError::Tampered).await;
        }
        Err(LinkError::Expired) => {
            count("expired");
            return refused_link(&app, &parts, action, lang, LinkError::Expired).await;
        }
    }
    let cookie = secret::generate();
    let entry = access(&app, &parts, action, 303);
    let result = app
        .store()
        .log_in_fill_out_session(
            query.fill_out_session_key,
            query.nonce,
            cookie_hash(&cookie),
            now,
            entry,
        )
        .await;
    match result {
        Ok(LoginResult::LoggedIn(_)) => {
            count("logged_in");
            redirect_with_cookie("/fill_out/session", &cookie)
        }
        // Used before, by this very browser (a reload, the back button):
        // it is still logged in.
        Ok(LoginResult::Spent(session)) if still_in(&app, &parts, session).await => {
            count("spent");
            redirect("/fill_out/session")
        }
        Ok(LoginResult::Spent(_)) => {
            count("spent");
            page(
                StatusCode::FORBIDDEN,
                lang,
                Msg::LinkSpentTitle,
                Msg::LinkSpentText,
                None,
            )
        }
        // Signed by us, but for a session this database does not hold.
        Ok(LoginResult::Unknown) => {
            count("tampered");
            refused_link(&app, &parts, action, lang, LinkError::Tampered).await
        }
        Err(e) => failed(lang, &e),
    }
}

/// Whether the browser that sent `parts` is logged in to the live session
/// with this id.
async fn still_in(app: &AppState, parts: &Parts, session: i64) -> bool {
    let Some(cookie) = cookie_of(&parts.headers) else {
        return false;
    };
    matches!(
        app.store().fill_out_session(&cookie_hash(&cookie)).await,
        Ok(Some(s)) if s.id == session && s.is_live(app.now())
    )
}

/// The page for a link that does not work, and its count in the access
/// log (no dossier: a link that does not check out names none). Such links
/// are refusals without valid credentials: they count against the client
/// address's rate limit, and past it the page says to wait (429,
/// docs/operations.md#rate-limits).
async fn refused_link(
    app: &AppState,
    parts: &Parts,
    action: &str,
    lang: Lang,
    why: LinkError,
) -> Response {
    let (status, title, text) = match why {
        LinkError::Tampered => (
            StatusCode::FORBIDDEN,
            Msg::LinkTamperedTitle,
            Msg::LinkTamperedText,
        ),
        LinkError::Expired => (
            StatusCode::GONE,
            Msg::LinkExpiredTitle,
            Msg::LinkExpiredText,
        ),
    };
    let client = client_of(app, &parts.extensions, &parts.headers).rate_key();
    let over = app.limits().admit_anonymous(client).err();
    let (status, title, text) = match over {
        Some(_) => (
            StatusCode::TOO_MANY_REQUESTS,
            Msg::TooManyTitle,
            Msg::TooManyText,
        ),
        None => (status, title, text),
    };
    app.count_refusal(access(app, parts, action, status.as_u16()), client)
        .await;
    let mut response = page(status, lang, title, text, None);
    if let Some(over) = over {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(over.0));
    }
    response
}

/// `GET /fill_out/respondents/{id}?token=...`: opens whatever the
/// respondent can fill out now; a page says when that is nothing.
pub async fn open_completing_url(
    State(app): State<AppState>,
    id: Result<Path<String>, PathRejection>,
    parts: Parts,
) -> Response {
    if parts.method == Method::HEAD {
        return looked_at();
    }
    let lang = Lang::for_browser(accept_language(&parts.headers));
    let token = query_param(&parts, "token");
    let respondent = id
        .ok()
        .and_then(|Path(id)| id.parse::<i64>().ok())
        .filter(|id| *id > 0)
        .map(RespondentId);
    let action = "GET /fill_out/respondents/{id}";
    let Some(respondent) = respondent.filter(|r| app.links().check_completing(*r, &token)) else {
        app.metrics()
            .inc("outcomes_fill_out_logins_total", &[("result", "tampered")]);
        return refused_link(&app, &parts, action, lang, LinkError::Tampered).await;
    };
    let cookie = secret::generate();
    let entry = access(&app, &parts, action, 303);
    let opened = app
        .store()
        .open_respondent_session(respondent, cookie_hash(&cookie), app.now(), entry)
        .await;
    match opened {
        Ok(Some(session)) if session.response_ids.is_empty() => {
            if let Err(e) = app.store().end_fill_out_session(&session, app.now()).await {
                return failed(lang, &e);
            }
            page(
                StatusCode::OK,
                lang,
                Msg::NothingOpenTitle,
                Msg::NothingOpenText,
                None,
            )
        }
        Ok(Some(_)) => {
            app.metrics()
                .inc("outcomes_fill_out_logins_total", &[("result", "logged_in")]);
            redirect_with_cookie("/fill_out/session", &cookie)
        }
        Ok(None) => refused_link(&app, &parts, action, lang, LinkError::Tampered).await,
        Err(e) => failed(lang, &e),
    }
}

/// A HEAD of a link (a mail client or chat app looking before the
/// respondent clicks) spends nothing and opens nothing.
fn looked_at() -> Response {
    StatusCode::OK.into_response()
}
