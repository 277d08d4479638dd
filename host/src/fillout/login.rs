//! Logging in: the one-time `fill_out_url` of a session made through the
//! API, and a respondent's `completing_url`. Both check their signature
//! before anything else. Neither opens anything on a GET: it shows a page
//! with a button that posts the link back, so a mail scanner or link
//! preview that fetches it spends, opens and reads nothing, and the
//! respondent's click still works. The POST checks that one of this
//! service's own pages sent it (login CSRF), counts against the link's
//! rate limit, and starts a browser session with a new random cookie; a
//! browser that reopens a `completing_url` while its session for that
//! respondent is live goes on in it. A refused link counts against the
//! client's rate limit and in the access log through the auth service,
//! never written one by one.

use axum::body::to_bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};

use super::i18n::{Lang, Msg};
use super::pages;
use super::session::{
    accept_language, access, cookie_hash, failed, html_under, live_session, page, policy_for,
    query_param, redirect, redirect_with_cookie, refused_page, too_many,
};
use crate::AppState;
use crate::auth::links::{CompletingQuery, LinkError, LoginQuery};
use crate::auth::{origin, secret};
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
    let body = pages::start(
        lang,
        Msg::StartText,
        LOGIN,
        targets.stylesheet.as_deref(),
        &fields,
    );
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
    if !from_own_page(&app, &parts) {
        return cross_site(&app, &parts, action, lang).await;
    }
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
    let link = format!("fill_out_url {}", query.fill_out_session_key);
    if let Err(over) = app.auth().limits().admit_link(&link) {
        return too_many(&app, &parts, action, lang, over, None, Msg::TooOftenText).await;
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
        Ok(LoginResult::Spent(session))
            if live_session(&app, &parts)
                .await
                .is_some_and(|s| s.id == session) =>
        {
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

/// Whether a login form was posted by one of this service's own pages
/// (docs/api/fill-out.md#hosted-pages): another site's page must not log
/// a browser in with a link of its choosing.
fn from_own_page(app: &AppState, parts: &Parts) -> bool {
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
    let ours = origin::parse(app.links().public_url()).unwrap_or_default();
    origin::sent_from_own_page(&ours, header("origin"), header("sec-fetch-site"))
}

/// The page for a login form another site sent: refused, counted as a
/// refusal of the client address.
async fn cross_site(app: &AppState, parts: &Parts, action: &str, lang: Lang) -> Response {
    app.metrics().inc(
        "outcomes_fill_out_refusals_total",
        &[("reason", "cross_site")],
    );
    let refusal = (
        StatusCode::FORBIDDEN,
        Msg::FormRefusedTitle,
        Msg::FormRefusedText,
    );
    refused_page(app, parts, action, lang, refusal).await
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
    let refusal = match why {
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
    refused_page(app, parts, action, lang, refusal).await
}

/// Where a `completing_url` points, and where its page posts to.
fn completing_path(respondent: RespondentId) -> String {
    format!("/fill_out/respondents/{}", respondent.0)
}

/// The respondent a `completing_url` names, and its link generation, if
/// its signature checks out at now.
fn check_completing(
    app: &AppState,
    id: Result<Path<String>, PathRejection>,
    query: &CompletingQuery,
) -> Result<(RespondentId, i64), LinkError> {
    let respondent = id
        .ok()
        .and_then(|Path(id)| id.parse::<i64>().ok())
        .filter(|id| *id > 0)
        .map(RespondentId)
        .ok_or(LinkError::Tampered)?;
    let generation = app.links().check_completing(respondent, query, app.now())?;
    Ok((respondent, generation))
}

/// `GET /fill_out/respondents/{id}?expires=...&generation=...&token=...`:
/// a link that checks out gets a page with a Start button that posts it
/// back; nothing is opened, read or written. A tampered or expired link
/// gets a page that says so.
pub async fn show_completing_url(
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
    let respondent = match check_completing(&app, id, &query) {
        Ok((respondent, _)) => respondent,
        Err(why) => {
            count(&app, why);
            let action = "GET /fill_out/respondents/{id}";
            return refused_link(&app, &parts, action, lang, why).await;
        }
    };
    let fields = [
        ("expires", query.expires.as_str()),
        ("generation", query.generation.as_str()),
        ("token", query.token.as_str()),
    ];
    let path = completing_path(respondent);
    let body = pages::start(lang, Msg::StartAgainText, &path, None, &fields);
    html_under(StatusCode::OK, body, &policy_for(None))
}

/// `POST /fill_out/respondents/{id}`, from the page's Start button: opens
/// whatever the respondent can fill out now; a page says when that is
/// nothing. An expired link, one of the first format, or one whose
/// respondent's links were revoked since opens nothing. A browser whose
/// session for this respondent is live goes on in it.
pub async fn open_completing_url(
    State(app): State<AppState>,
    id: Result<Path<String>, PathRejection>,
    req: Request,
) -> Response {
    let (parts, body) = req.into_parts();
    let lang = Lang::for_browser(accept_language(&parts.headers));
    let action = "POST /fill_out/respondents/{id}";
    if !from_own_page(&app, &parts) {
        return cross_site(&app, &parts, action, lang).await;
    }
    let Ok(bytes) = to_bytes(body, LOGIN_FORM_LIMIT).await else {
        count(&app, LinkError::Tampered);
        return refused_link(&app, &parts, action, lang, LinkError::Tampered).await;
    };
    let mut query = CompletingQuery::default();
    for (key, value) in form_urlencoded::parse(&bytes) {
        match key.as_ref() {
            "expires" => query.expires = value.into_owned(),
            "generation" => query.generation = value.into_owned(),
            "token" => query.token = value.into_owned(),
            _ => {}
        }
    }
    let (respondent, generation) = match check_completing(&app, id, &query) {
        Ok(found) => found,
        Err(why) => {
            count(&app, why);
            return refused_link(&app, &parts, action, lang, why).await;
        }
    };
    // Reopened in the browser that has this respondent's session open (a
    // second click on the link, the back button): it goes on; revoking
    // the respondent's links ended that session.
    if live_session(&app, &parts)
        .await
        .is_some_and(|s| s.respondent_id == respondent && s.return_to.is_none())
    {
        return redirect("/fill_out/session");
    }
    let link = format!("completing_url {}", respondent.0);
    if let Err(over) = app.auth().limits().admit_link(&link) {
        return too_many(&app, &parts, action, lang, over, None, Msg::TooOftenText).await;
    }
    open_session(&app, &parts, lang, action, respondent, generation).await
}

/// Opens a session of `respondent` (link generation `generation`) for the
/// browser that sent `parts`, with its access row (`action`).
async fn open_session(
    app: &AppState,
    parts: &Parts,
    lang: Lang,
    action: &str,
    respondent: RespondentId,
    generation: i64,
) -> Response {
    let now = app.now();
    let cookie = secret::generate();
    let entry = access(app, parts, action, 303);
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
            refused_link(app, parts, action, lang, LinkError::Tampered).await
        }
        Err(e) => failed(lang, &e),
    }
}

/// A HEAD of a link (a mail client or chat app looking before the
/// respondent clicks) spends nothing and opens nothing.
fn looked_at() -> Response {
    StatusCode::OK.into_response()
}
