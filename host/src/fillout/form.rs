//! A questionnaire's page and its submission. A complete submission is
//! scored through the questionnaire's plugin and stored before the
//! respondent moves on; an incomplete one comes back with the answers
//! given still chosen and what is missing marked; "stop and continue
//! later" keeps the answers given and aborts what is left. A submission
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

use super::flow::{left, refused};
use super::i18n::{Lang, Msg};
use super::pages::{self, Form, QuestionError};
use super::session::{Live, accept_language, failed, html, log_refusal, page, redirect};
use crate::AppState;
use crate::domain::answer::Answer;
use crate::domain::answers::{Answers, GivenAnswers};
use crate::domain::catalog::Catalog;
use crate::domain::fill_out::Progress;
use crate::domain::ids::ResponseId;
use crate::domain::outcome::{Outcome, Provenance};
use crate::domain::questionnaire::Questionnaire;
use crate::domain::response::{Completion, Response as StoredResponse};
use crate::domain::variant::Variant;
use crate::store::{PageAnswers, Scored};

/// Largest form accepted: far more than the longest questionnaire sends.
const FORM_LIMIT: usize = 64 * 1024;

/// `GET /fill_out/session/responses/{id}`: the page, with the answers
/// given so far (of a resumed response) chosen.
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
    let variant = Variant::from_stored(&response.flags, &response.textvars);
    let given = chosen(&response.answers.typed(&q.def, &variant));
    // The page shows what the dossier's respondent answered so far: a read
    // of the dossier, logged before it is shown.
    let action = format!("GET /fill_out/session/responses/{}", response.id);
    let entry = live.access(&app, &parts, &action, 200);
    if let Err(e) = app.store().append_access(entry).await {
        return failed(browser, &e);
    }
    let view = View {
        app: &app,
        live: &live,
        response: &response,
        questionnaire: &q.def,
        progress: &progress,
        lang: Lang::for_questionnaire(accept_language(&parts.headers), &q.def),
    };
    view.render(StatusCode::OK, &given, &BTreeMap::new())
}

/// `POST /fill_out/session/responses/{id}`: `action=submit` (the default)
/// or `action=interrupt`, the CSRF token, when the page was shown, and an
/// option key per question.
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
            let answers = &form.answers;
            return completed_already(&app, &live, &parts, &catalog, &done, answers, browser).await;
        }
        Err(answer) => return answer,
    };
    let Some(q) = catalog.questionnaire_by_id(response.questionnaire_id) else {
        return not_available(&live, browser);
    };
    let view = View {
        app: &app,
        live: &live,
        response: &response,
        questionnaire: &q.def,
        progress: &progress,
        lang: Lang::for_questionnaire(accept_language(&parts.headers), &q.def),
    };
    let variant = view.variant();
    let (answers, errors) = check(&q.def, &variant, &form.answers);
    let now = app.now();
    let started_at = started_at(form.shown_at, live.session.logged_in_at, now);
    let action = format!("POST /fill_out/session/responses/{}", response.id);
    let entry = live.access(&app, &parts, &action, 303);
    if form.action == "interrupt" {
        let page_answers = PageAnswers {
            id: response.id,
            answers,
            started_at,
        };
        return match app
            .store()
            .interrupt_fill_out_session(&live.session, Some(page_answers), now, entry)
            .await
        {
            Ok(()) => left(&app, &live.session),
            Err(e) => failed(browser, &e),
        };
    }
    if !errors.is_empty() {
        return view.render(StatusCode::UNPROCESSABLE_ENTITY, &chosen(&answers), &errors);
    }
    let language = view.lang.code();
    let mut completion = Completion {
        questionnaire_id: response.questionnaire_id,
        answers,
        started_at: Some(started_at),
        completed_at: now,
        variant,
        language: language.to_owned(),
        translation_sha256: q.def.translations.get(language).map(|t| t.sha256.clone()),
        outcome: Outcome::empty(),
        provenance: Provenance::default(),
    };
    crate::scoring::score_completion(app.trials(), app.metrics(), &q.def, &mut completion, false)
        .await;
    let scored = Scored {
        completion,
        definition: q.def.clone(),
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
            let now_stored = match app.store().session_responses(&live.session).await {
                Ok(responses) => responses.into_iter().find(|r| r.id == response.id),
                Err(e) => return failed(browser, &e),
            };
            match now_stored {
                Some(done) if done.times.completed_at.is_some() => {
                    let answers = &form.answers;
                    completed_already(&app, &live, &parts, &catalog, &done, answers, browser).await
                }
                _ => redirect("/fill_out/session"),
            }
        }
        Err(e) => failed(browser, &e),
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
    given: &BTreeMap<String, Vec<String>>,
    lang: Lang,
) -> Response {
    if let Some(q) = catalog.questionnaire_by_id(done.questionnaire_id) {
        let variant = Variant::from_stored(&done.flags, &done.textvars);
        let (answers, _) = check(&q.def, &variant, given);
        if done.answers.same_as(&answers) {
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
    lang: Lang,
}

impl View<'_> {
    /// The flags and textvars the response was prepared with.
    fn variant(&self) -> Variant {
        Variant::from_stored(&self.response.flags, &self.response.textvars)
    }

    fn render(
        &self,
        status: StatusCode,
        answers: &BTreeMap<String, String>,
        errors: &BTreeMap<String, QuestionError>,
    ) -> Response {
        let variant = self.variant();
        let csrf = self.app.links().csrf_token(&self.live.cookie);
        let body = pages::questionnaire(&Form {
            questionnaire: self.questionnaire,
            variant: &variant,
            lang: self.lang,
            response_id: self.response.id,
            position: self.progress.position(self.response.id).unwrap_or((1, 1)),
            answers,
            errors,
            csrf: &csrf,
            shown_at: self.app.now().timestamp_millis(),
            stylesheet: self.live.session.stylesheet.as_deref(),
        });
        html(status, body, Some(&self.live.session))
    }
}

/// A submitted form: its fields, the last value of each; every value of a
/// question's field (a checkbox sends one per option ticked).
#[derive(Debug, Default)]
struct Submitted {
    csrf: String,
    action: String,
    shown_at: Option<i64>,
    answers: BTreeMap<String, Vec<String>>,
}

impl Submitted {
    fn parse(body: &[u8]) -> Submitted {
        let mut form = Submitted::default();
        for (key, value) in form_urlencoded::parse(body) {
            match key.as_ref() {
                "csrf" => form.csrf = value.into_owned(),
                "action" => form.action = value.into_owned(),
                "shown_at" => form.shown_at = value.parse().ok(),
                // Question keys are short; anything else is not one.
                k if k.starts_with("v_") && k.len() <= 64 => {
                    form.answers
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

/// The answers of a submission, each read against its question, with
/// those to questions that are not enabled taken out (the rule every path
/// follows, `GivenAnswers::enabled`), and what is wrong with the rest: a
/// required enabled question left unanswered, or an answer its question
/// does not take. Fields that are no question are ignored.
fn check(
    q: &Questionnaire,
    variant: &Variant,
    given: &BTreeMap<String, Vec<String>>,
) -> (Answers, BTreeMap<String, QuestionError>) {
    let mut typed = GivenAnswers::none(q);
    let mut unreadable = Vec::new();
    for (i, question) in q.questions.iter().enumerate() {
        if !question.answerable() {
            continue;
        }
        let values: Vec<&str> = given
            .get(&question.key)
            .map(|v| v.iter().map(String::as_str).collect())
            .unwrap_or_default();
        match Answer::from_form(&question.kind, &question.options, &values) {
            Ok(answer) => typed.set(i, answer),
            Err(_) => unreadable.push(question.key.as_str()),
        }
    }
    let answers = typed.enabled(q, variant).answers;
    let mut errors = BTreeMap::new();
    for ((key, enabled), (_, answer)) in answers.enabled().zip(answers.iter()) {
        let required = q.question(key).is_some_and(|question| question.required);
        if !enabled {
            continue;
        }
        if unreadable.contains(&key) {
            errors.insert(key.to_owned(), QuestionError::InvalidOption);
        } else if answer.is_none() && required {
            errors.insert(key.to_owned(), QuestionError::Unanswered);
        }
    }
    (answers, errors)
}

/// Each answer as the page shows it chosen or filled in: an option key, a
/// text, a date, a number.
fn chosen(answers: &Answers) -> BTreeMap<String, String> {
    answers
        .iter()
        .filter_map(|(key, answer)| {
            let shown = match answer? {
                Answer::Integer(n) => n.to_string(),
                Answer::Decimal(n) => n.to_string(),
                other => other.as_text()?.into_owned(),
            };
            Some((key.to_owned(), shown))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::testing::questionnaire;

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
        let form =
            Submitted::parse(b"csrf=t&action=interrupt&shown_at=17&v_1=a0&v_1=a1&other=x&v_9=%FF");
        assert_eq!(form.csrf, "t");
        assert_eq!(form.action, "interrupt");
        assert_eq!(form.shown_at, Some(17));
        assert_eq!(form.answers["v_1"], ["a0", "a1"]);
        assert_eq!(form.answers["v_9"], ["\u{fffd}"]);
        assert!(!form.answers.contains_key("other"));
    }

    #[test]
    fn required_shown_questions_need_an_option_and_hidden_ones_are_dropped() {
        let q = questionnaire();
        let extra = Variant {
            flags: [("extra".to_owned(), true)].into(),
            ..Variant::default()
        };
        let field = |key: &str, value: &str| (key.to_owned(), vec![value.to_owned()]);
        let given = BTreeMap::from([field("v_2", "a9"), field("v_3", "a0"), field("v_7", "a0")]);
        let (answers, errors) = check(&q, &extra, &given);
        assert_eq!(
            chosen(&answers),
            BTreeMap::from([("v_3".to_owned(), "a0".to_owned())])
        );
        assert_eq!(
            errors,
            BTreeMap::from([
                ("v_1".to_owned(), QuestionError::Unanswered),
                ("v_2".to_owned(), QuestionError::InvalidOption),
            ])
        );
        let short_and_extra = Variant {
            flags: [("short".to_owned(), true), ("extra".to_owned(), true)].into(),
            ..Variant::default()
        };
        let given = BTreeMap::from([field("v_1", "a1"), field("v_2", "a0")]);
        let (answers, errors) = check(&q, &short_and_extra, &given);
        assert!(errors.is_empty());
        assert_eq!(
            serde_json::Value::Object(answers.to_json()),
            serde_json::json!({"v_1": "a1", "v_2": null, "v_3": null})
        );
    }
}
