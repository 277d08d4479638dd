//! Where a respondent goes between questionnaires
//! (docs/api/fill-out.md#progress-page): to the caller's progress page
//! before the first and between questionnaires, with `continue_url`,
//! `interrupt_url`, `completed_questionnaire_keys[]` and
//! `pending_questionnaire_keys[]`; to the next questionnaire; after the
//! last, to `return_to`. Every
//! redirect goes to this service or to a URL checked when the session was
//! made, never to one a request names. A redirect to the progress page
//! tells the caller which questionnaires were filled out: it has its
//! access-log row.

use axum::extract::State;
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::Response;

use super::i18n::{Lang, Msg};
use super::session::{
    Live, accept_language, failed, log_refusal, page, query_param, redirect,
    redirect_clearing_cookie,
};
use crate::AppState;
use crate::domain::fill_out::{FillOutSession, Progress};
use crate::store::StoreError;

/// `GET /fill_out/session`: the progress page when the caller has one,
/// else the next questionnaire; the end when nothing is left.
pub async fn next(State(app): State<AppState>, live: Live, parts: Parts) -> Response {
    let lang = Lang::for_browser(accept_language(&parts.headers));
    let progress = match progress(&app, &live.session).await {
        Ok(p) => p,
        Err(e) => return failed(lang, &e),
    };
    match (progress.next(), &live.session.progress_url) {
        (None, _) => finish(&app, &live.session, lang).await,
        (Some(_), Some(url)) => match progress_location(&app, url, &progress, &live.cookie) {
            // The caller's page learns what was and is to be filled out in
            // the dossier: a read of it, logged before it leaves.
            Some(location) => {
                let entry = live.access(&app, &parts, "GET /fill_out/session", 303);
                match app.store().append_access(entry).await {
                    Ok(()) => redirect(&location),
                    Err(e) => failed(lang, &e),
                }
            }
            None => page(
                StatusCode::INTERNAL_SERVER_ERROR,
                lang,
                Msg::FailedTitle,
                Msg::FailedText,
                None,
            ),
        },
        (Some(id), None) => redirect(&form_path(id)),
    }
}

/// `GET /fill_out/session/continue`: the `continue_url`: the next
/// questionnaire, or the end.
pub async fn continue_filling_out(
    State(app): State<AppState>,
    live: Live,
    parts: Parts,
) -> Response {
    let lang = Lang::for_browser(accept_language(&parts.headers));
    match progress(&app, &live.session).await {
        Ok(progress) => match progress.next() {
            Some(id) => redirect(&form_path(id)),
            None => finish(&app, &live.session, lang).await,
        },
        Err(e) => failed(lang, &e),
    }
}

/// `GET /fill_out/session/interrupt?token=...`: the `interrupt_url`: what
/// is left becomes aborted and the respondent goes back. It changes
/// responses, so it carries a token of the session, like a form does (its
/// own, not the forms' CSRF token: this URL goes to the caller).
pub async fn interrupt(State(app): State<AppState>, live: Live, parts: Parts) -> Response {
    let lang = Lang::for_browser(accept_language(&parts.headers));
    let action = "GET /fill_out/session/interrupt";
    if !app
        .links()
        .check_interrupt(&live.cookie, &query_param(&parts, "token"))
    {
        return refused(&app, &live, &parts, action, lang).await;
    }
    let entry = live.access(&app, &parts, action, 303);
    match app
        .store()
        .interrupt_fill_out_session(&live.session, None, app.now(), entry)
        .await
    {
        Ok(()) => left(&app, &live.session),
        Err(e) => failed(lang, &e),
    }
}

/// The answer to a form or link without the session's token: a page, and
/// a row in the access log (the request named the session's dossier).
pub async fn refused(
    app: &AppState,
    live: &Live,
    parts: &Parts,
    action: &str,
    lang: Lang,
) -> Response {
    app.metrics()
        .inc("outcomes_fill_out_refusals_total", &[("reason", "csrf")]);
    log_refusal(app, live.access(app, parts, action, 403)).await;
    page(
        StatusCode::FORBIDDEN,
        lang,
        Msg::FormRefusedTitle,
        Msg::FormRefusedText,
        Some(&live.session),
    )
}

/// Back to the caller after interrupting: `return_to`, or the service's
/// own page for a `completing_url` session.
pub fn left(app: &AppState, session: &FillOutSession) -> Response {
    app.metrics()
        .inc("outcomes_fill_out_total", &[("event", "interrupted")]);
    redirect_clearing_cookie(session.return_to.as_deref().unwrap_or("/fill_out/paused"))
}

/// Everything is done: the session ends and the respondent goes to
/// `return_to` (or the service's own thank-you page).
async fn finish(app: &AppState, session: &FillOutSession, lang: Lang) -> Response {
    if let Err(e) = app.store().end_fill_out_session(session, app.now()).await {
        return failed(lang, &e);
    }
    app.metrics()
        .inc("outcomes_fill_out_total", &[("event", "finished")]);
    redirect_clearing_cookie(session.return_to.as_deref().unwrap_or("/fill_out/done"))
}

/// The session's progress now.
async fn progress(app: &AppState, session: &FillOutSession) -> Result<Progress, StoreError> {
    let responses = app.store().session_responses(session).await?;
    Ok(Progress::of(session, &responses, app.now()))
}

/// The page of a response of the session.
fn form_path(id: crate::domain::ids::ResponseId) -> String {
    format!("/fill_out/session/responses/{id}")
}

/// The caller's progress page with the parameters
/// docs/api/fill-out.md#progress-page names, added to whatever query it has.
fn progress_location(
    app: &AppState,
    url: &str,
    progress: &Progress,
    cookie: &str,
) -> Option<String> {
    let mut url = url::Url::parse(url).ok()?;
    let links = app.links();
    let interrupt = format!(
        "/fill_out/session/interrupt?token={}",
        links.interrupt_token(cookie)
    );
    {
        let mut query = url.query_pairs_mut();
        query
            .append_pair(
                "continue_url",
                &links.absolute("/fill_out/session/continue"),
            )
            .append_pair("interrupt_url", &links.absolute(&interrupt));
        for key in &progress.completed {
            query.append_pair("completed_questionnaire_keys[]", key);
        }
        for (_, key) in &progress.pending {
            query.append_pair("pending_questionnaire_keys[]", key);
        }
    }
    Some(url.into())
}
