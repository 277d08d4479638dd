//! The fill-out flow in a real browser: headless Chromium driven over
//! WebDriver (`tests::browser`). A session is started over the API; the
//! browser opens the link, goes through the caller's progress page (served
//! by a small EPD in the test, which also serves the caller's stylesheet
//! and the `return_to` page), answers, submits an incomplete page and a
//! complete one, interrupts, resumes in a new session, and comes back to
//! `return_to`; the stored responses and outcomes are then read over the
//! API. Every page is screenshotted at phone and desktop width (under
//! `target/tmp/fill-out-screenshots/`) and checked with axe-core in the same
//! browser: no serious or critical violations.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::RawQuery;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use serde_json::Value;
use tests::browser::Browser;
use tests::{Db, TestApp, db_test, json};

use crate::support::*;
use crate::visitor::start;

/// Phone and desktop widths of the screenshots, in CSS pixels.
const WIDTHS: [(&str, u32); 2] = [("phone", 390), ("desktop", 1280)];

/// The EPD's side: a progress page, a page to return to and a stylesheet.
#[derive(Clone, Debug)]
struct Epd {
    origin: String,
    stylesheet_loads: Arc<AtomicUsize>,
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The progress page: the keys it was given and links to go on or stop.
async fn progress_page(RawQuery(query): RawQuery) -> Html<String> {
    let url = format!("http://epd/progress?{}", query.unwrap_or_default());
    let pairs: Vec<(String, String)> = tests::reqwest::Url::parse(&url)
        .map(|u| {
            u.query_pairs()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect()
        })
        .unwrap_or_default();
    let all = |name: &str| -> String {
        pairs
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect::<Vec<_>>()
            .join(",")
    };
    Html(format!(
        "<!doctype html><html lang=\"en\"><head><title>EPD progress</title></head><body><main>\
         <h1>Your questionnaires</h1><p>Done: <span id=\"completed\">{}</span></p>\
         <p>To do: <span id=\"pending\">{}</span></p>\
         <p><a id=\"continue\" href=\"{}\">Continue</a> <a id=\"interrupt\" href=\"{}\">Stop for now</a></p>\
         </main></body></html>",
        escape(&all("completed_questionnaire_keys[]")),
        escape(&all("pending_questionnaire_keys[]")),
        escape(&all("continue_url")),
        escape(&all("interrupt_url")),
    ))
}

async fn back_page() -> Html<&'static str> {
    Html(
        "<!doctype html><html lang=\"en\"><head><title>EPD</title></head><body><main><h1>Back at the EPD</h1></main></body></html>",
    )
}

/// Serves the EPD on a loopback port.
async fn epd() -> Epd {
    let loads = Arc::new(AtomicUsize::new(0));
    let counter = loads.clone();
    let router = axum::Router::new()
        .route("/progress", get(progress_page))
        .route("/back", get(back_page))
        .route(
            "/rom.css",
            get(move || {
                counter.fetch_add(1, Ordering::SeqCst);
                async {
                    (
                        [(header::CONTENT_TYPE, "text/css")],
                        "main { border-top: 0.5rem solid #5b2a86; }",
                    )
                        .into_response()
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let origin = format!(
        "http://127.0.0.1:{}",
        listener.local_addr().expect("bound").port()
    );
    tokio::spawn(async move { axum::serve(listener, router).await });
    Epd {
        origin,
        stylesheet_loads: loads,
    }
}

/// The host with an EPD whose origin every token may use.
async fn spawn_with_browser_epd(db: Db) -> (TestApp, Epd) {
    let epd = epd().await;
    let origin = epd.origin.clone();
    let app = TestApp::spawn_with(db, move |config| config.allowed_origins = vec![origin]).await;
    (app, epd)
}

/// axe-core's source, installed by `cargo xtask test` (npm ci in
/// tests/browser), or at `OUTCOMES_TEST_AXE`.
fn axe_source() -> String {
    let path = std::env::var("OUTCOMES_TEST_AXE").map_or_else(
        |_| tests::repo_root().join("tests/browser/node_modules/axe-core/axe.min.js"),
        PathBuf::from,
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "axe-core is not at {} ({e}): run `cargo xtask test`, which installs it \
             (npm ci --prefix tests/browser), or set OUTCOMES_TEST_AXE",
            path.display()
        )
    })
}

/// Screenshots the page at phone and desktop width, then checks it with
/// axe-core (WCAG 2.1 A and AA, and best practices): no serious or
/// critical violation.
async fn look_at(browser: &Browser, db: Db, name: &str) {
    let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("fill-out-screenshots")
        .join(format!("{db:?}").to_lowercase());
    for (device, width) in WIDTHS {
        let path = folder.join(format!("{name}-{device}.png"));
        browser.screenshot(width, &path).await;
        eprintln!("screenshot: {}", path.display());
    }
    browser.execute(&axe_source(), json!([])).await;
    let violations = browser
        .execute_async(
            "const done = arguments[arguments.length - 1];\
             axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']}})\
               .then(r => done(r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.html)}))))\
               .catch(e => done([{id: 'axe-failed', impact: 'critical', help: String(e)}]));",
            json!([]),
        )
        .await;
    let all = violations.as_array().cloned().unwrap_or_default();
    let serious: Vec<&Value> = all
        .iter()
        .filter(|v| matches!(v["impact"].as_str(), Some("serious" | "critical")))
        .collect();
    assert!(
        serious.is_empty(),
        "{name}: accessibility violations {serious:#?}"
    );
    if !all.is_empty() {
        eprintln!("{name}: minor accessibility findings {all:#?}");
    }
}

/// The stored response of `key` in `dossier`, over the API.
async fn stored(app: &TestApp, dossier: &str, key: &str) -> Value {
    app.get(&responses(dossier))
        .await
        .body
        .as_array()
        .and_then(|list| list.iter().find(|r| r["questionnaire_key"] == key).cloned())
        .unwrap_or_else(|| panic!("a {key} response in {dossier}"))
}

/// Clicks option `option` of each question.
async fn answer(browser: &Browser, answers: &[(&str, &str)]) {
    for (question, option) in answers {
        browser
            .click(&format!("input[name='{question}'][value='{option}']"))
            .await;
    }
}

db_test!(
    async fn a_respondent_fills_out_interrupts_and_resumes_in_a_browser(
        setup: spawn_with_browser_epd,
    ) {
        let (app, epd) = setup;
        let db = app.db;
        let link = start(
            &app,
            "d1",
            json!({"questionnaire_keys": ["phq9", "gad7"], "return_to": format!("{}/back", epd.origin),
                   "progress_url": format!("{}/progress", epd.origin), "stylesheet": format!("{}/rom.css", epd.origin)}),
        )
        .await;
        let browser = Browser::start("en").await;

        // The link: a page with a button (a mail scanner's visit spends
        // nothing); the click logs in, on to the progress page first.
        browser.goto(&link).await;
        assert_eq!(browser.text("h1").await, "Your questionnaires");
        look_at(&browser, db, "start").await;
        browser.click_to_leave("button[type='submit']").await;
        assert!(
            browser
                .url()
                .await
                .starts_with(&format!("{}/progress?", epd.origin)),
            "{}",
            browser.url().await
        );
        assert_eq!(browser.text("#pending").await, "phq9,gad7");
        assert_eq!(browser.text("#completed").await, "");

        // The PHQ-9 page, with the EPD's stylesheet after ours.
        browser.click_to_leave("#continue").await;
        assert!(
            browser.url().await.contains("/fill_out/session/responses/"),
            "{}",
            browser.url().await
        );
        assert_eq!(browser.text("h1").await, "PHQ-9");
        assert_eq!(browser.count("fieldset").await, 10);
        assert!(
            epd.stylesheet_loads.load(Ordering::SeqCst) >= 1,
            "the caller's stylesheet was loaded"
        );
        let border = browser
            .execute(
                "return getComputedStyle(document.querySelector('main')).borderTopStyle;",
                json!([]),
            )
            .await;
        assert_eq!(border, "solid", "the caller's stylesheet applies");
        look_at(&browser, db, "phq9").await;

        // Half answered and sent: the page comes back with the answers.
        answer(
            &browser,
            &[
                ("v_1", "a2"),
                ("v_2", "a1"),
                ("v_3", "a1"),
                ("v_4", "a0"),
                ("v_5", "a0"),
            ],
        )
        .await;
        browser.click_to_leave("button[value='submit']").await;
        assert!(
            browser
                .source()
                .await
                .contains("Some questions still need an answer")
        );
        assert!(browser.is_selected("input[name='v_1'][value='a2']").await);
        assert!(browser.is_selected("input[name='v_5'][value='a0']").await);
        assert_eq!(browser.count(".error").await, 4, "items 6 to 9");
        look_at(&browser, db, "phq9-incomplete").await;

        // Completed: back to the progress page.
        answer(
            &browser,
            &[
                ("v_6", "a0"),
                ("v_7", "a1"),
                ("v_8", "a0"),
                ("v_9", "a0"),
                ("v_10", "a1"),
            ],
        )
        .await;
        browser.click_to_leave("button[value='submit']").await;
        assert!(
            browser
                .url()
                .await
                .starts_with(&format!("{}/progress?", epd.origin))
        );
        assert_eq!(browser.text("#completed").await, "phq9");
        assert_eq!(browser.text("#pending").await, "gad7");

        // The GAD-7: two answers, then stop.
        browser.click_to_leave("#continue").await;
        assert_eq!(browser.text("h1").await, "GAD-7");
        answer(&browser, &[("v_1", "a3"), ("v_2", "a2")]).await;
        look_at(&browser, db, "gad7").await;
        browser.click_to_leave("button[value='interrupt']").await;
        assert_eq!(browser.url().await, format!("{}/back", epd.origin));

        let phq9 = stored(&app, "d1", "phq9").await;
        assert_eq!(phq9["status"], "completed");
        assert_eq!(
            phq9["outcome"]["scores"]["total"]["value"],
            json!(5.0),
            "{phq9}"
        );
        assert_eq!(phq9["values"]["v_1"], "a2");
        assert_eq!(phq9["values"]["v_10"], "a1");
        let gad7 = stored(&app, "d1", "gad7").await;
        assert_eq!(gad7["status"], "aborted");

        // A new session resumes the GAD-7 with its answers; no progress
        // page this time.
        let link = start(
            &app,
            "d1",
            json!({"response_ids": [gad7["id"]], "return_to": format!("{}/back", epd.origin)}),
        )
        .await;
        browser.goto(&link).await;
        browser.click_to_leave("button[type='submit']").await;
        assert_eq!(browser.text("h1").await, "GAD-7");
        assert!(browser.is_selected("input[name='v_1'][value='a3']").await);
        assert!(browser.is_selected("input[name='v_2'][value='a2']").await);
        answer(
            &browser,
            &[
                ("v_3", "a1"),
                ("v_4", "a1"),
                ("v_5", "a0"),
                ("v_6", "a0"),
                ("v_7", "a0"),
            ],
        )
        .await;
        browser.click_to_leave("button[value='submit']").await;
        assert_eq!(browser.url().await, format!("{}/back", epd.origin));
        let gad7 = stored(&app, "d1", "gad7").await;
        assert_eq!(gad7["status"], "completed");
        assert_eq!(
            gad7["outcome"]["scores"]["total"]["value"],
            json!(7.0),
            "{gad7}"
        );
        assert_eq!(gad7["values"]["v_1"], "a3");

        // The session ended with the last questionnaire.
        browser.goto(&app.url("/fill_out/session")).await;
        assert_eq!(browser.text("h1").await, "Your session has ended");
        look_at(&browser, db, "session-ended").await;

        // The link was spent: a page says so.
        browser.goto(&link).await;
        browser.click_to_leave("button[type='submit']").await;
        assert_eq!(browser.text("h1").await, "This link has been used already");
        look_at(&browser, db, "link-used").await;
    }
);

db_test!(
    async fn a_dutch_respondent_uses_the_completing_url(app) {
        let db = app.db;
        prepare(&app, "d1", "mood_diary", None, Some(chrono::Duration::hours(2))).await;
        let diary = stored(&app, "d1", "mood_diary").await;
        let link = diary["completing_url"].as_str().expect("a completing_url").to_owned();
        let browser = Browser::start("nl").await;
        // The link shows a Start button first (a mail scanner opens nothing).
        browser.goto(&link).await;
        look_at(&browser, db, "completing-start-nl").await;
        browser.click_to_leave("button[type='submit']").await;
        assert_eq!(browser.execute("return document.documentElement.lang;", json!([])).await, "nl");
        assert!(browser.source().await.contains("Hoe is uw stemming op dit moment?"));
        look_at(&browser, db, "mood-diary-nl").await;
        answer(&browser, &[("v_1", "a3"), ("v_2", "a1"), ("v_3", "a2")]).await;
        browser.click_to_leave("button[value='submit']").await;
        assert_eq!(browser.text("h1").await, "Bedankt");
        look_at(&browser, db, "done-nl").await;
        let diary = stored(&app, "d1", "mood_diary").await;
        assert_eq!(diary["status"], "completed");
        assert_eq!(diary["values"], json!({"v_1": "a3", "v_2": "a1", "v_3": "a2"}));
        assert!(diary["outcome"]["scores"].as_object().is_some_and(|s| !s.is_empty()), "{diary}");
        // A changed link: a page in Dutch, no questionnaire.
        browser.goto(&link.replace("token=", "token=0")).await;
        assert_eq!(browser.text("h1").await, "Deze link werkt niet");
        look_at(&browser, db, "link-broken-nl").await;
    }
);
