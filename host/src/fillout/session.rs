//! The browser side of a fill-out session: its cookie, the extractor that
//! finds the live session a request belongs to, the security headers of
//! every page, and the small answers (pages, redirects) the handlers share.
//! Who the client is comes from the auth service's trusted proxies, never
//! from a header it does not believe.
//!
//! The cookie is `__Host-` prefixed and only its SHA-256 is stored; every
//! page carries a Content-Security-Policy of `default-src 'none'` plus what
//! it needs.

use axum::extract::{FromRequestParts, MatchedPath, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::i18n::{Lang, Msg};
use super::pages;
use crate::AppState;
use crate::auth::guard::{client_of, client_text, truncate};
use crate::auth::limits::RetryAfter;
use crate::auth::origin;
use crate::domain::fill_out::FillOutSession;
use crate::store::{AccessEntry, SessionTargets, StoreError};

/// The session cookie. `__Host-`: the browser keeps it only when it is
/// Secure, for this host alone and for every path.
pub const COOKIE: &str = "__Host-outcomes_fill_out";

/// The value of the session cookie the request carries.
pub fn cookie_of(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            (name == COOKIE && !value.is_empty() && value.len() <= 128).then(|| value.to_owned())
        })
}

/// What the store keeps of a cookie.
pub fn cookie_hash(cookie: &str) -> String {
    crate::auth::secret::to_hex(&Sha256::digest(cookie.as_bytes()).into())
}

/// `Set-Cookie` for a new session: HttpOnly (no script reads it), Secure,
/// SameSite=Lax (sent when the respondent comes back from the caller's
/// progress page, never with another site's form posts), and no lifetime
/// (gone with the browser; the server ends it sooner).
fn set_cookie(value: &str) -> HeaderValue {
    HeaderValue::from_str(&format!(
        "{COOKIE}={value}; Path=/; HttpOnly; Secure; SameSite=Lax"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static("invalid=1"))
}

/// `Set-Cookie` that removes the session cookie.
fn clear_cookie() -> HeaderValue {
    HeaderValue::from_static(
        "__Host-outcomes_fill_out=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Lax",
    )
}

/// The live session of the browser that sent a request, and its cookie.
#[derive(Debug)]
pub struct Live {
    pub session: FillOutSession,
    pub cookie: String,
}

impl FromRequestParts<AppState> for Live {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Live, Response> {
        let lang = Lang::for_browser(accept_language(&parts.headers));
        let gone = || {
            page(
                StatusCode::FORBIDDEN,
                lang,
                Msg::SessionGoneTitle,
                Msg::SessionGoneText,
                None,
            )
        };
        let Some(cookie) = cookie_of(&parts.headers) else {
            return Err(gone());
        };
        let now = app.now();
        let session = match app.store().fill_out_session(&cookie_hash(&cookie)).await {
            Ok(Some(session)) if session.is_live(now) => session,
            Ok(_) => return Err(gone()),
            Err(e) => return Err(failed(lang, &e)),
        };
        // A session's requests are a person's: a browser that loops is
        // held back before it costs a write (docs/operations.md#rate-limits).
        if let Err(over) = app.auth().limits().admit_session(session.id) {
            let action = format!(
                "{} {}",
                parts.method,
                parts
                    .extensions
                    .get::<MatchedPath>()
                    .map_or("/fill_out", MatchedPath::as_str)
            );
            let dossier = Some(session.epd_id.clone());
            let text = Msg::TooOftenText;
            return Err(too_many(app, parts, &action, lang, over, dossier, text).await);
        }
        // Every request of the session is activity: reading a long
        // questionnaire keeps the session from going idle.
        if session.needs_touch(now)
            && let Err(e) = app.store().touch_fill_out_session(&session, now).await
        {
            return Err(failed(lang, &e));
        }
        Ok(Live { session, cookie })
    }
}

impl Live {
    /// The access-log row of a request of this session: its dossier.
    pub fn access(&self, app: &AppState, parts: &Parts, action: &str, status: u16) -> AccessEntry {
        AccessEntry {
            dossier: Some(self.session.epd_id.clone()),
            ..access(app, parts, action, status)
        }
    }
}

/// The live session of the browser that sent `parts`, if any (no limit
/// counted, nothing written).
pub async fn live_session(app: &AppState, parts: &Parts) -> Option<FillOutSession> {
    let cookie = cookie_of(&parts.headers)?;
    match app.store().fill_out_session(&cookie_hash(&cookie)).await {
        Ok(Some(session)) if session.is_live(app.now()) => Some(session),
        _ => None,
    }
}

/// The page of a refused request of a respondent (a link that does not
/// work, a form another site sent), counted in the access log like every
/// refusal (docs/api/rights.md#access-log) and against the client
/// address's limit; past that limit the page says to wait (429,
/// docs/operations.md#rate-limits).
pub async fn refused_page(
    app: &AppState,
    parts: &Parts,
    action: &str,
    lang: Lang,
    (status, title, text): (StatusCode, Msg, Msg),
) -> Response {
    let remote = client_of(app.auth(), &parts.extensions, &parts.headers);
    match app.auth().limits().admit_anonymous(remote.rate_key()) {
        Ok(()) => {
            let entry = access(app, parts, action, status.as_u16());
            app.auth().count_refusal(entry, remote.client).await;
            page(status, lang, title, text, None)
        }
        Err(over) => too_many(app, parts, action, lang, over, None, Msg::TooManyText).await,
    }
}

/// The page of a request over a limit (of the client address, a
/// respondent's link or a session): 429 with `Retry-After` and `text`,
/// counted in the access log like every refusal, with the dossier when
/// the request named one (a session's).
pub async fn too_many(
    app: &AppState,
    parts: &Parts,
    action: &str,
    lang: Lang,
    over: RetryAfter,
    dossier: Option<String>,
    text: Msg,
) -> Response {
    let remote = client_of(app.auth(), &parts.extensions, &parts.headers);
    let entry = AccessEntry {
        dossier,
        ..access(app, parts, action, StatusCode::TOO_MANY_REQUESTS.as_u16())
    };
    app.auth().count_refusal(entry, remote.client).await;
    let mut response = page(
        StatusCode::TOO_MANY_REQUESTS,
        lang,
        Msg::TooManyTitle,
        text,
        None,
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(over.0));
    response
}

/// Writes the access-log row of a refused request. The request is refused
/// either way; a log that cannot be written is an operator's problem, said
/// in the service log.
pub async fn log_refusal(app: &AppState, entry: AccessEntry) {
    if let Err(e) = app.store().append_access(entry).await {
        tracing::error!(error = %e, "a refused fill-out request was not logged");
    }
}

/// The last value of a query parameter, or empty.
pub fn query_param(parts: &Parts, name: &str) -> String {
    form_urlencoded::parse(parts.uri.query().unwrap_or_default().as_bytes())
        .filter(|(k, _)| k == name)
        .last()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

pub fn accept_language(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok())
}

/// The Content-Security-Policy of a session's pages: nothing but this
/// service, plus the caller's stylesheet, and, as targets of forms (a
/// submitted form is redirected to them), the origins of `return_to` and
/// `progress_url`. The caller's stylesheet may load nothing itself: images,
/// fonts and connections come from this service only (`default-src
/// 'none'` covers connections), since a stylesheet can send what a page
/// holds out through the URLs it loads (`input[value^="a"] {
/// background: url(...) }`, or a font per character).
pub fn policy(session: Option<&FillOutSession>) -> String {
    let targets = session.map(|s| SessionTargets {
        return_to: s.return_to.clone(),
        progress_url: s.progress_url.clone(),
        stylesheet: s.stylesheet.clone(),
    });
    policy_for(targets.as_ref())
}

/// [`policy`] for a session known by its URLs (before login).
pub fn policy_for(targets: Option<&SessionTargets>) -> String {
    let origin_of = |url: &Option<String>| {
        url.as_deref()
            .and_then(origin::absolute_url)
            .map(|(_, origin)| origin)
    };
    let styles = targets.and_then(|s| origin_of(&s.stylesheet));
    let mut forms = Vec::new();
    if let Some(s) = targets {
        forms.extend(origin_of(&s.return_to));
        forms.extend(origin_of(&s.progress_url));
    }
    forms.sort();
    forms.dedup();
    let with = |base: &str, extra: &[String]| {
        extra
            .iter()
            .fold(base.to_owned(), |acc, o| format!("{acc} {o}"))
    };
    let styles: Vec<String> = styles.into_iter().collect();
    format!(
        "default-src 'none'; style-src {}; img-src 'self'; font-src 'self'; form-action {}; \
         frame-ancestors 'none'; base-uri 'none'",
        with("'self'", &styles),
        with("'self'", &forms),
    )
}

/// Headers every fill-out answer carries; a handler that set its own
/// policy keeps it.
pub async fn secure_headers(req: Request, next: axum::middleware::Next) -> Response {
    let mut response = next.run(req).await;
    let headers = response.headers_mut();
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY)
        && let Ok(value) = HeaderValue::from_str(&policy(None))
    {
        headers.insert(header::CONTENT_SECURITY_POLICY, value);
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

/// An HTML page with `status`, under the session's policy.
pub fn html(status: StatusCode, body: String, session: Option<&FillOutSession>) -> Response {
    html_under(status, body, &policy(session))
}

/// An HTML page with `status`, under `policy`.
pub fn html_under(status: StatusCode, body: String, policy: &str) -> Response {
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response();
    if let Ok(value) = HeaderValue::from_str(policy) {
        response
            .headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, value);
    }
    response
}

/// A page that only says something.
pub fn page(
    status: StatusCode,
    lang: Lang,
    title: Msg,
    text: Msg,
    session: Option<&FillOutSession>,
) -> Response {
    let stylesheet = session.and_then(|s| s.stylesheet.as_deref());
    html(
        status,
        pages::message(lang, title, text, stylesheet),
        session,
    )
}

/// The page for a failure of ours; logged with its cause.
pub fn failed(lang: Lang, error: &StoreError) -> Response {
    tracing::error!(error = %error, "a fill-out page failed");
    let status = match crate::error::ApiError::from(error.clone()) {
        crate::error::ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    page(status, lang, Msg::FailedTitle, Msg::FailedText, None)
}

/// 303 See Other to `location` (after a form, the browser follows with a
/// GET).
pub fn redirect(location: &str) -> Response {
    match HeaderValue::from_str(location) {
        Ok(value) => (StatusCode::SEE_OTHER, [(header::LOCATION, value)]).into_response(),
        // Locations are ours or checked URLs, which are valid header values.
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// A redirect that starts a browser session.
pub fn redirect_with_cookie(location: &str, cookie: &str) -> Response {
    let mut response = redirect(location);
    response
        .headers_mut()
        .insert(header::SET_COOKIE, set_cookie(cookie));
    response
}

/// A redirect that ends the browser session.
pub fn redirect_clearing_cookie(location: &str) -> Response {
    let mut response = redirect(location);
    response
        .headers_mut()
        .insert(header::SET_COOKIE, clear_cookie());
    response
}

/// The access-log row of a respondent's request: no token, the route, the
/// client address.
pub fn access(app: &AppState, parts: &Parts, action: &str, status: u16) -> AccessEntry {
    let remote = client_of(app.auth(), &parts.extensions, &parts.headers);
    AccessEntry {
        at: app.now(),
        action: action.to_owned(),
        status,
        client: client_text(remote),
        request_id: parts
            .headers
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .map(truncate),
        ..AccessEntry::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let mut h = HeaderMap::new();
        h.append(
            header::COOKIE,
            HeaderValue::from_static("a=1; __Host-outcomes_fill_out=abc; b=2"),
        );
        assert_eq!(cookie_of(&h).as_deref(), Some("abc"));
        let mut h = HeaderMap::new();
        h.append(
            header::COOKIE,
            HeaderValue::from_static("outcomes_fill_out=abc"),
        );
        assert_eq!(cookie_of(&h), None);
        assert_eq!(cookie_of(&HeaderMap::new()), None);
    }

    #[test]
    fn a_caller_s_stylesheet_loads_nothing_from_its_origin() {
        let session = FillOutSession {
            id: 1,
            dossier_id: crate::domain::ids::DossierId(1),
            epd_id: "d".to_owned(),
            respondent_id: crate::domain::ids::RespondentId(1),
            response_ids: Vec::new(),
            return_to: Some("https://epd.example.org/back".to_owned()),
            progress_url: None,
            stylesheet: Some("https://style.example.org/s.css".to_owned()),
            language: None,
            logged_in_at: chrono::DateTime::UNIX_EPOCH,
            last_seen_at: chrono::DateTime::UNIX_EPOCH,
            ended_at: None,
        };
        assert_eq!(
            policy(Some(&session)),
            "default-src 'none'; style-src 'self' https://style.example.org; img-src 'self'; \
             font-src 'self'; form-action 'self' https://epd.example.org; frame-ancestors 'none'; \
             base-uri 'none'"
        );
    }

    #[test]
    fn the_policy_admits_only_the_session_s_own_origins() {
        assert_eq!(
            policy(None),
            "default-src 'none'; style-src 'self'; img-src 'self'; font-src 'self'; form-action 'self'; \
             frame-ancestors 'none'; base-uri 'none'"
        );
    }
}
