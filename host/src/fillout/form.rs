//! A questionnaire's pages and their submission (docs/api/fill-out.md#pages).
//! The page shown is the one stored with the response; Next keeps the
//! page's answers and moves to the next page shown, Back keeps what can be
//! read and moves to the page before, and Send on the last page scores the
//! response through its plugin and stores it before the respondent moves
//! on. A page with something missing or wrong comes back with what was
//! entered and what is wrong marked; a page on which a question came to be
//! enabled comes back with it; "stop and continue later" keeps the answers
//! given and aborts what is left. A submission
//! reads the catalog once. Storing it hands it on to shadow scoring (the
//! store does); this file must not call the shadow itself.

use std::collections::BTreeMap;

use axum::body::to_bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::Response;
use chrono::{DateTime, Utc};

use super::fields::{self, FormFields, fields_of, page_errors, read_page};
use super::flow::{left, refused};
use super::i18n::{Lang, Msg};
use super::pages::{self, Form};
use super::session::{Live, accept_language, failed, html, log_refusal, page, redirect};
use super::widgets::QuestionError;
use crate::AppState;
use crate::domain::answers::Answers;
use crate::domain::catalog::Catalog;
use crate::domain::enabled::Enabled;
use crate::domain::fill_out::Progress;
use crate::domain::ids::ResponseId;
use crate::domain::outcome::{Outcome, Provenance};
use crate::domain::paging::{self, Paging};
use crate::domain::questionnaire::Questionnaire;
use crate::domain::response::{Completion, Response as StoredResponse};
use crate::domain::variant::Variant;
use crate::store::{PageAnswers, Scored};

/// Largest form accepted: far more than the longest questionnaire sends.
const FORM_LIMIT: usize = 64 * 1024;

/// `GET /fill_out/session/responses/{id}`: the page the respondent is
/// on, with the answers given so far (of a resumed response) chosen.
pub async fn show(
    State(app): State<AppState>,
    live: Live,
    id: Result<Path<String>, PathRejection>,
    parts: Parts,
) -> Response {
    let browser = Lang::for_browser(accept_language(&parts.headers));
    let (response, progress) = match find(&app, &live, id, browser).await {
        Ok(Found::Fillable(r, p)) => (r, p),
        // Done already (the back button): on to what is next.
        Ok(Found::Done(_)) => return redirect("/fill_out/session"),
        Err(answer) => return answer,
    };
    let catalog = app.catalog();
    let Some(q) = catalog.questionnaire_by_id(response.questionnaire_id) else {
        return not_available(&live, browser);
    };
    let view = View::new(&app, &live, &response, &q.def, &progress, &parts);
    let answers = response.answers.typed(&q.def, &view.variant);
    let enabled = paging::enabled(&q.def, &view.variant, &answers);
    let pages = Paging::of(&q.def, &enabled);
    let page = pages.resume(&q.def, response.fill_out_page.as_deref());
    // The page shows what the dossier's respondent answered so far: a read
    // of the dossier, logged before it is shown.
    let action = format!("GET /fill_out/session/responses/{}", response.id);
    let entry = live.access(&app, &parts, &action, 200);
    if let Err(e) = app.store().append_access(entry).await {
        return failed(browser, &e);
    }
    let values = fields_of(&answers, view.lang);
    view.render(
        StatusCode::OK,
        &Shown {
            page,
            enabled: &enabled,
            pages: &pages,
            values: &values,
            errors: &BTreeMap::new(),
            new: &[],
        },
    )
}

/// `POST /fill_out/session/responses/{id}`: `action=submit` (Next, or
/// Send on the last page; the default), `action=back` or
/// `action=interrupt`; the CSRF token, when the page was shown, which page
/// it was (`page`) and which questions it showed (`shown`), and the
/// page's fields.
pub async fn submit(
    State(app): State<AppState>,
    live: Live,
    id: Result<Path<String>, PathRejection>,
    req: Request,
) -> Response {
    let (parts, body) = req.into_parts();
    let browser = Lang::for_browser(accept_language(&parts.headers));
    let bytes = match to_bytes(body, FORM_LIMIT).await {
        Ok(bytes) => bytes,
        // The form did not arrive within the request body timeout
        // (docs/operations.md#connections): the answers were not saved.
        Err(e) if crate::server::is_body_timeout(&e) => {
            return page(
                StatusCode::REQUEST_TIMEOUT,
                browser,
                Msg::FailedTitle,
                Msg::FailedText,
                Some(&live.session),
            );
        }
        Err(_) => {
            return page(
                StatusCode::PAYLOAD_TOO_LARGE,
                browser,
                Msg::TooLargeTitle,
                Msg::TooLargeText,
                Some(&live.session),
            );
        }
    };
    let form = Submitted::parse(&bytes);
    // One catalog snapshot for the request: the definition the answers are
    // checked against is the one that scores them, and the one a lost race
    // compares them with.
    let catalog = app.catalog();
    if !app.links().check_csrf(&live.cookie, &form.csrf) {
        let action = "POST /fill_out/session/responses/{id}";
        return refused(&app, &live, &parts, action, browser).await;
    }
    let (response, progress) = match find(&app, &live, id, browser).await {
        Ok(Found::Fillable(r, p)) => (r, p),
        Ok(Found::Done(done)) => {
            return completed_already(&app, &live, &parts, &catalog, &done, &form, browser).await;
        }
        Err(answer) => return answer,
    };
    let Some(q) = catalog.questionnaire_by_id(response.questionnaire_id) else {
        return not_available(&live, browser);
    };
    let def = &q.def;
    let view = View::new(&app, &live, &response, def, &progress, &parts);
    let variant = &view.variant;
    let stored = response.answers.typed(def, variant);
    let p = match form.page.filter(|p| *p < def.pages.len()) {
        Some(p) => p,
        None => {
            let enabled = paging::enabled(def, variant, &stored);
            Paging::of(def, &enabled).resume(def, response.fill_out_page.as_deref())
        }
    };
    let read = read_page(def, variant, &stored, p, &form.fields);
    let enabled = paging::enabled(def, variant, &read.answers);
    let pages = Paging::of(def, &enabled);
    let errors = page_errors(def, &enabled, p, &read);
    let now = app.now();
    let started_at = started_at(form.shown_at, live.session.logged_in_at, now);
    let action = format!("POST /fill_out/session/responses/{}", response.id);
    let entry = live.access(&app, &parts, &action, 303);
    let key_of = |p: usize| {
        def.pages
            .get(p)
            .map(|page| page.key.clone())
            .unwrap_or_default()
    };
    let keep = |page: usize, answers: Answers| PageAnswers {
        id: response.id,
        answers,
        started_at,
        page: key_of(page),
    };
    match form.action.as_str() {
        "interrupt" => {
            return match app
                .store()
                .interrupt_fill_out_session(&live.session, Some(keep(p, read.answers)), now, entry)
                .await
            {
                Ok(()) => left(&app, &live.session),
                Err(e) => failed(browser, &e),
            };
        }
        // What was entered is kept (all that can be read), without asking
        // for what is missing.
        "back" => {
            let to = pages.before(p).unwrap_or(p);
            let saved = app
                .store()
                .save_fill_out_page(&live.session, keep(to, read.answers), now, entry)
                .await;
            return after_saving(
                &app, &live, &parts, &catalog, &response, &form, saved, browser,
            )
            .await;
        }
        _ => {}
    }
    // A question of this page whose condition came to hold with an answer
    // on it: the page again, with that question, before moving on.
    let new: Vec<String> = match &form.shown {
        Some(shown) => def
            .pages
            .get(p)
            .map_or(0..0, |page| page.questions.clone())
            .filter(|i| enabled.questions[*i])
            .map(|i| def.questions[i].key.clone())
            .filter(|key| !shown.contains(key))
            .collect(),
        None => Vec::new(),
    };
    // A question just shown is not missing yet.
    let mut errors = errors;
    errors.retain(|key, _| !new.contains(key));
    if !errors.is_empty() || !new.is_empty() {
        let status = if errors.is_empty() {
            StatusCode::OK
        } else {
            StatusCode::UNPROCESSABLE_ENTITY
        };
        let shown = Shown {
            page: p,
            enabled: &enabled,
            pages: &pages,
            values: &form.fields,
            errors: &errors,
            new: &new,
        };
        return view.render(status, &shown);
    }
    if let Some(next) = pages.after(p) {
        let saved = app
            .store()
            .save_fill_out_page(&live.session, keep(next, read.answers), now, entry)
            .await;
        return after_saving(
            &app, &live, &parts, &catalog, &response, &form, saved, browser,
        )
        .await;
    }
    // The last page. A required question of an earlier page left
    // unanswered (a page skipped by a form of its own, or a definition
    // changed meanwhile): that page, with what is missing.
    if let Some(missing) = fields::first_missing(def, &enabled, &read.answers) {
        let values = fields_of(&read.answers, view.lang);
        let errors = page_errors(def, &enabled, missing, &read);
        let saved = app
            .store()
            .save_fill_out_page(&live.session, keep(missing, read.answers), now, entry)
            .await;
        return match saved {
            Ok(true) => view.render(
                StatusCode::UNPROCESSABLE_ENTITY,
                &Shown {
                    page: missing,
                    enabled: &enabled,
                    pages: &pages,
                    values: &values,
                    errors: &errors,
                    new: &[],
                },
            ),
            saved => {
                after_saving(
                    &app, &live, &parts, &catalog, &response, &form, saved, browser,
                )
                .await
            }
        };
    }
    let language = view.lang.code();
    let mut completion = Completion {
        questionnaire_id: response.questionnaire_id,
        answers: read.answers,
        started_at: Some(started_at),
        completed_at: now,
        variant: view.variant.clone(),
        language: language.to_owned(),
        translation_sha256: def.translations.get(language).map(|t| t.sha256.clone()),
        outcome: Outcome::empty(),
        provenance: Provenance::default(),
    };
    crate::scoring::score_completion(app.trials(), app.metrics(), def, &mut completion, false)
        .await;
    let scored = Scored {
        completion,
        definition: def.clone(),
        professional: false,
    };
    match app
        .store()
        .complete_in_session(&live.session, response.id, scored, now, entry)
        .await
    {
        Ok(true) => {
            app.metrics()
                .inc("outcomes_fill_out_total", &[("event", "completed")]);
            redirect("/fill_out/session")
        }
        // Completed meanwhile (by the care provider's PUT, another host,
        // another window), or its time ran out: the first is said here,
        // the second by whatever is next.
        Ok(false) => {
            after_saving(
                &app,
                &live,
                &parts,
                &catalog,
                &response,
                &form,
                Ok(false),
                browser,
            )
            .await
        }
        Err(e) => failed(browser, &e),
    }
}

/// Where a respondent goes once a page was kept: on to the page to show
/// (the form's own path). When the response could no longer be filled out:
/// completed meanwhile is said ([`completed_already`]); expired or
/// withdrawn, whatever is next says.
#[allow(clippy::too_many_arguments)]
async fn after_saving(
    app: &AppState,
    live: &Live,
    parts: &Parts,
    catalog: &Catalog,
    response: &StoredResponse,
    form: &Submitted,
    saved: Result<bool, crate::store::StoreError>,
    lang: Lang,
) -> Response {
    match saved {
        Ok(true) => redirect(&format!("/fill_out/session/responses/{}", response.id)),
        Ok(false) => {
            let now_stored = match app.store().session_responses(&live.session).await {
                Ok(responses) => responses.into_iter().find(|r| r.id == response.id),
                Err(e) => return failed(lang, &e),
            };
            match now_stored {
                Some(done) if done.times.completed_at.is_some() => {
                    completed_already(app, live, parts, catalog, &done, form, lang).await
                }
                _ => redirect("/fill_out/session"),
            }
        }
        Err(e) => failed(lang, &e),
    }
}

/// A page submitted for a response that is completed already. With the
/// very answers it holds, it is this page sent twice (a double click, the
/// back button): the first one counted, on to what is next. Otherwise
/// someone else completed it meanwhile and these answers were not stored:
/// the respondent is told so (409), never moved on as if they were. The
/// answers are read against `catalog`, the request's one snapshot.
async fn completed_already(
    app: &AppState,
    live: &Live,
    parts: &Parts,
    catalog: &Catalog,
    done: &StoredResponse,
    form: &Submitted,
    lang: Lang,
) -> Response {
    if let Some(q) = catalog.questionnaire_by_id(done.questionnaire_id) {
        let variant = Variant::from_stored(&done.flags, &done.textvars);
        let stored = done.answers.typed(&q.def, &variant);
        // The page sent: the one it names, else the last (the one that
        // completes).
        let p = form
            .page
            .filter(|p| *p < q.def.pages.len())
            .unwrap_or(q.def.pages.len().saturating_sub(1));
        let read = read_page(&q.def, &variant, &stored, p, &form.fields);
        if done.answers.same_as(&read.answers) {
            return redirect("/fill_out/session");
        }
    }
    let action = format!("POST /fill_out/session/responses/{}", done.id);
    log_refusal(app, live.access(app, parts, &action, 409)).await;
    page(
        StatusCode::CONFLICT,
        lang,
        Msg::CompletedAlreadyTitle,
        Msg::CompletedAlreadyText,
        Some(&live.session),
    )
}

/// When the page was shown, as the form says: the respondent's own clock
/// is not trusted beyond the session's login and now (and a login dated
/// after now, by another host's clock, does not count).
fn started_at(
    shown_at: Option<i64>,
    logged_in_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> DateTime<Utc> {
    shown_at
        .and_then(DateTime::from_timestamp_millis)
        .unwrap_or(now)
        .clamp(logged_in_at.min(now), now)
}

/// What a page's response id came to.
enum Found {
    /// In the session and fillable, with the session's progress.
    Fillable(Box<StoredResponse>, Progress),
    /// In the session and completed.
    Done(Box<StoredResponse>),
}

/// The session's response named by the path: another dossier's, another
/// session's or one that cannot be filled out any more is not available.
async fn find(
    app: &AppState,
    live: &Live,
    id: Result<Path<String>, PathRejection>,
    lang: Lang,
) -> Result<Found, Response> {
    let id = id
        .ok()
        .and_then(|Path(id)| id.parse::<i64>().ok())
        .map(ResponseId)
        .filter(|id| live.session.response_ids.contains(id))
        .ok_or_else(|| not_available(live, lang))?;
    let responses = app
        .store()
        .session_responses(&live.session)
        .await
        .map_err(|e| failed(lang, &e))?;
    let progress = Progress::of(&live.session, &responses, app.now());
    let response = responses
        .into_iter()
        .find(|r| r.id == id)
        .ok_or_else(|| not_available(live, lang))?;
    if response.times.completed_at.is_some() {
        return Ok(Found::Done(Box::new(response)));
    }
    if progress.position(id).is_none() {
        return Err(not_available(live, lang));
    }
    Ok(Found::Fillable(Box::new(response), progress))
}

fn not_available(live: &Live, lang: Lang) -> Response {
    page(
        StatusCode::NOT_FOUND,
        lang,
        Msg::NotAvailableTitle,
        Msg::NotAvailableText,
        Some(&live.session),
    )
}

/// A questionnaire page about to be shown.
struct View<'a> {
    app: &'a AppState,
    live: &'a Live,
    response: &'a StoredResponse,
    questionnaire: &'a Questionnaire,
    progress: &'a Progress,
    /// The flags and textvars the response was prepared with.
    variant: Variant,
    lang: Lang,
}

/// Which page to show, and how.
struct Shown<'a> {
    page: usize,
    enabled: &'a Enabled,
    pages: &'a Paging,
    values: &'a FormFields,
    errors: &'a BTreeMap<String, QuestionError>,
    new: &'a [String],
}

impl<'a> View<'a> {
    /// The page's language: the session's `language`, then the fill-out
    /// request's, when the questionnaire is written in it; else the
    /// browser's, then the definition's.
    fn new(
        app: &'a AppState,
        live: &'a Live,
        response: &'a StoredResponse,
        questionnaire: &'a Questionnaire,
        progress: &'a Progress,
        parts: &Parts,
    ) -> View<'a> {
        let asked = [
            live.session.language.as_deref(),
            response.fill_out_language.as_deref(),
        ];
        View {
            app,
            live,
            response,
            questionnaire,
            progress,
            variant: Variant::from_stored(&response.flags, &response.textvars),
            lang: Lang::for_page(&asked, accept_language(&parts.headers), questionnaire),
        }
    }

    fn render(&self, status: StatusCode, shown: &Shown<'_>) -> Response {
        let csrf = self.app.links().csrf_token(&self.live.cookie);
        let body = pages::questionnaire(&Form {
            questionnaire: self.questionnaire,
            variant: &self.variant,
            lang: self.lang,
            response_id: self.response.id,
            position: self.progress.position(self.response.id).unwrap_or((1, 1)),
            page: shown.page,
            page_position: shown.pages.position(shown.page),
            enabled: &shown.enabled.questions,
            values: shown.values,
            errors: shown.errors,
            new: shown.new,
            csrf: &csrf,
            shown_at: self.app.now().timestamp_millis(),
            stylesheet: self.live.session.stylesheet.as_deref(),
        });
        html(status, body, Some(&self.live.session))
    }
}

/// A submitted form: its fields, and every value of each question's
/// fields (a checkbox sends one per option ticked; a date one per part).
#[derive(Debug, Default)]
struct Submitted {
    csrf: String,
    action: String,
    shown_at: Option<i64>,
    /// The page sent, by position.
    page: Option<usize>,
    /// The questions the page showed; None when the form does not say.
    shown: Option<Vec<String>>,
    fields: FormFields,
}

impl Submitted {
    fn parse(body: &[u8]) -> Submitted {
        let mut form = Submitted::default();
        for (key, value) in form_urlencoded::parse(body) {
            match key.as_ref() {
                "csrf" => form.csrf = value.into_owned(),
                "action" => form.action = value.into_owned(),
                "shown_at" => form.shown_at = value.parse().ok(),
                "page" => form.page = value.parse().ok(),
                "shown" => {
                    form.shown = Some(
                        value
                            .split_whitespace()
                            .take(1000)
                            .map(str::to_owned)
                            .collect(),
                    );
                }
                // Question keys are short; anything else is not one.
                k if k.starts_with("v_") && k.len() <= 72 => {
                    form.fields
                        .entry(key.into_owned())
                        .or_default()
                        .push(value.into_owned());
                }
                _ => {}
            }
        }
        form
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_a_page_was_shown_lies_between_login_and_now() {
        let at =
            |minute: i64| DateTime::from_timestamp(1_800_000_000 + minute * 60, 0).expect("a time");
        let ms = |minute: i64| Some(at(minute).timestamp_millis());
        assert_eq!(started_at(ms(5), at(0), at(10)), at(5));
        assert_eq!(started_at(ms(-5), at(0), at(10)), at(0), "before login");
        assert_eq!(started_at(ms(20), at(0), at(10)), at(10), "in the future");
        assert_eq!(started_at(None, at(0), at(10)), at(10));
        assert_eq!(started_at(Some(i64::MAX), at(0), at(10)), at(10));
        // Logged in "after" now by a host whose clock runs ahead.
        assert_eq!(started_at(ms(5), at(12), at(10)), at(10));
    }

    #[test]
    fn a_form_is_read_field_by_field_keeping_every_value_of_a_question() {
        let form = Submitted::parse(
            b"csrf=t&action=interrupt&shown_at=17&page=2&shown=v_1+v_2&v_1=a0&v_1=a1&other=x&v_9=%FF&v_7.year=2024",
        );
        assert_eq!(form.csrf, "t");
        assert_eq!(form.action, "interrupt");
        assert_eq!(form.shown_at, Some(17));
        assert_eq!(form.page, Some(2));
        assert_eq!(form.shown, Some(vec!["v_1".to_owned(), "v_2".to_owned()]));
        assert_eq!(form.fields["v_1"], ["a0", "a1"]);
        assert_eq!(form.fields["v_9"], ["\u{fffd}"]);
        assert_eq!(form.fields["v_7.year"], ["2024"]);
        assert!(!form.fields.contains_key("other"));
        assert_eq!(Submitted::parse(b"csrf=t").shown, None);
    }
}
