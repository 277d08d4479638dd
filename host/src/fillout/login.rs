//! Logging in: the one-time `fill_out_url` of a session made through the
//! API, and a respondent's `completing_url`. Both check their signature
//! before anything else, then start a browser session with a new random
//! cookie. The one-time link is spent by a POST only: its GET shows a page
//! with a button, so a mail scanner or link preview that fetches it spends
//! nothing and the respondent's click still works. A refused link counts
//! against the client's rate limit and in the access log through the auth
//! service, never written one by one.

use axum::body::to_bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::i18n::{Lang, Msg};
use super::pages;
use super::session::{
    accept_language, access, cookie_hash, cookie_of, failed, html_under, page, policy_for,
    query_param, redirect, redirect_with_cookie,
};
use crate::AppState;
use crate::auth::guard::client_of;
use crate::auth::links::{CompletingQuery, LinkError, LoginQuery};
use crate::auth::secret;
use crate::domain::ids::RespondentId;
use crate::store::{LoginResult, OpenResult};

/// Where the one-time link points, and where its page posts to.
const LOGIN: &str = "/fill_out/session/login";

/// The most a login form may send: four short fields.
const LOGIN_FORM_LIMIT: usize = 4 * 1024;

/// `GET /fill_out/session/login`: a link that checks out gets a page with
/// a button that posts it back; nothing is spent, logged in or read from
/// the dossier. A tampered or expired link gets a page that says so.
pub async fn show_login(State(app): State<AppState>, parts: Parts) -> Response {
    let lang = Lang::for_browser(accept_language(&parts.headers));
    // A part left out is empty, which fails the signature.
    let query = LoginQuery {
        fill_out_session_key: query_param(&parts, "fill_out_session_key"),
        nonce: query_param(&parts, "nonce"),
        timestamp: query_param(&parts, "timestamp"),
        hmac: query_param(&parts, "hmac"),
    };
    if let Err(why) = app.links().check_login(&query, app.now()) {
        count(&app, why);
        return refused_link(&app, &parts, "GET /fill_out/session/login", lang, why).await;
    }
    // The session's stylesheet styles the page, and its form may be
    // redirected on to the session's progress page or return_to.
    let targets = match app
        .store()
        .session_targets(&query.fill_out_session_key, &query.nonce)
        .await
    {
        Ok(Some(targets)) => targets,
        // Signed by us, but for a session this database does not hold.
        Ok(None) => {
            count(&app, LinkError::Tampered);
            let action = "GET /fill_out/session/login";
            return refused_link(&app, &parts, action, lang, LinkError::Tampered).await;
        }
        Err(e) => return failed(lang, &e),
    };
    let fields = [
        ("fill_out_session_key", query.fill_out_session_key.as_str()),
        ("nonce", query.nonce.as_str()),
        ("timestamp", query.timestamp.as_str()),
        ("hmac", query.hmac.as_str()),
    ];
    let body = pages::start(lang, LOGIN, targets.stylesheet.as_deref(), &fields);
    html_under(StatusCode::OK, body, &policy_for(Some(&targets)))
}

/// `POST /fill_out/session/login`, from the page's button: checks the
/// link's parts as the GET did, then spends the link and logs in. A link
/// used before gets a page that says so and no session, unless this very
/// browser used it.
pub async fn log_in(State(app): State<AppState>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let lang = Lang::for_browser(accept_language(&parts.headers));
    let action = "POST /fill_out/session/login";
    let Ok(bytes) = to_bytes(body, LOGIN_FORM_LIMIT).await else {
        count(&app, LinkError::Tampered);
        return refused_link(&app, &parts, action, lang, LinkError::Tampered).await;
    };
    let mut query = LoginQuery::default();
    for (key, value) in form_urlencoded::parse(&bytes) {
        match key.as_ref() {
            "fill_out_session_key" => query.fill_out_session_key = value.into_owned(),
            "nonce" => query.nonce = value.into_owned(),
            "timestamp" => query.timestamp = value.into_owned(),
            "hmac" => query.hmac = value.into_owned(),
            _ => {}
        }
    }
    let now = app.now();
    if let Err(why) = app.links().check_login(&query, now) {
        count(&app, why);
        return refused_link(&app, &parts, action, lang, why).await;
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
    let counted = |result: &str| {
        app.metrics()
            .inc("outcomes_fill_out_logins_total", &[("result", result)]);
    };
    match result {
        Ok(LoginResult::LoggedIn(_)) => {
            counted("logged_in");
            redirect_with_cookie("/fill_out/session", &cookie)
        }
        // Used before, by this very browser (a reload, the back button):
        // it is still logged in.
        Ok(LoginResult::Spent(session)) if still_in(&app, &parts, session).await => {
            counted("spent");
            redirect("/fill_out/session")
        }
        Ok(LoginResult::Spent(_)) => {
            counted("spent");
            page(
                StatusCode::FORBIDDEN,
                lang,
                Msg::LinkSpentTitle,
                Msg::LinkSpentText,
                None,
            )
        }
        Ok(LoginResult::Revoked) => {
            counted("revoked");
            revoked(lang)
        }
        // Signed by us, but for a session this database does not hold.
        Ok(LoginResult::Unknown) => {
            counted("tampered");
            refused_link(&app, &parts, action, lang, LinkError::Tampered).await
        }
        Err(e) => failed(lang, &e),
    }
}

/// Counts a refused link by why.
fn count(app: &AppState, why: LinkError) {
    let result = match why {
        LinkError::Tampered => "tampered",
        LinkError::Expired => "expired",
    };
    app.metrics()
        .inc("outcomes_fill_out_logins_total", &[("result", result)]);
}

/// The page of a link whose respondent's links were revoked (its access
/// row is written with the store's check).
fn revoked(lang: Lang) -> Response {
    page(
        StatusCode::GONE,
        lang,
        Msg::LinkRevokedTitle,
        Msg::LinkRevokedText,
        None,
    )
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
    let client = client_of(app.auth(), &parts.extensions, &parts.headers).rate_key();
    let over = app.auth().limits().admit_anonymous(client).err();
    let (status, title, text) = match over {
        Some(_) => (
            StatusCode::TOO_MANY_REQUESTS,
            Msg::TooManyTitle,
            Msg::TooManyText,
        ),
        None => (status, title, text),
    };
    app.auth()
        .count_refusal(access(app, parts, action, status.as_u16()), client)
        .await;
    let mut response = page(status, lang, title, text, None);
    if let Some(over) = over {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(over.0));
    }
    response
}

/// `GET /fill_out/respondents/{id}?expires=...&generation=...&token=...`:
/// opens whatever the respondent can fill out now; a page says when that
/// is nothing. An expired link, one of the first format, or one whose
/// respondent's links were revoked since opens nothing.
pub async fn open_completing_url(
    State(app): State<AppState>,
    id: Result<Path<String>, PathRejection>,
    parts: Parts,
) -> Response {
    if parts.method == Method::HEAD {
        return looked_at();
    }
    let lang = Lang::for_browser(accept_language(&parts.headers));
    let query = CompletingQuery {
        expires: query_param(&parts, "expires"),
        generation: query_param(&parts, "generation"),
        token: query_param(&parts, "token"),
    };
    let now = app.now();
    let respondent = id
        .ok()
        .and_then(|Path(id)| id.parse::<i64>().ok())
        .filter(|id| *id > 0)
        .map(RespondentId);
    let action = "GET /fill_out/respondents/{id}";
    let checked = respondent
        .ok_or(LinkError::Tampered)
        .and_then(|r| Ok((r, app.links().check_completing(r, &query, now)?)));
    let (respondent, generation) = match checked {
        Ok(found) => found,
        Err(why) => {
            count(&app, why);
            return refused_link(&app, &parts, action, lang, why).await;
        }
    };
    let cookie = secret::generate();
    let entry = access(&app, &parts, action, 303);
    let opened = app
        .store()
        .open_respondent_session(respondent, generation, cookie_hash(&cookie), now, entry)
        .await;
    match opened {
        Ok(OpenResult::Opened(session)) if session.response_ids.is_empty() => {
            if let Err(e) = app.store().end_fill_out_session(&session, now).await {
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
        Ok(OpenResult::Opened(_)) => {
            app.metrics()
                .inc("outcomes_fill_out_logins_total", &[("result", "logged_in")]);
            redirect_with_cookie("/fill_out/session", &cookie)
        }
        Ok(OpenResult::Revoked) => {
            app.metrics()
                .inc("outcomes_fill_out_logins_total", &[("result", "revoked")]);
            revoked(lang)
        }
        Ok(OpenResult::Unknown) => {
            refused_link(&app, &parts, action, lang, LinkError::Tampered).await
        }
        Err(e) => failed(lang, &e),
    }
}

/// A HEAD of a link (a mail client or chat app looking before the
/// respondent clicks) spends nothing and opens nothing.
fn looked_at() -> Response {
    StatusCode::OK.into_response()
}
