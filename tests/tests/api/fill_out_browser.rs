//! The fill-out flow in a real browser: headless Chromium driven over
//! WebDriver (`tests::browser`). A session is started over the API; the
//! browser opens the link, goes through the caller's progress page (served
//! by a small EPD in the test, which also serves the caller's stylesheet
//! and the `return_to` page), answers, submits an incomplete page and a
//! complete one, interrupts, resumes in a new session, and comes back to
//! `return_to`; the stored responses and outcomes are then read over the
//! API. Every page is screenshotted at phone and desktop width (under
//! `target/tmp/fill-out-screenshots/`), checked not to scroll sideways on
//! a phone (360 by 740), and checked with axe-core in the same browser: no
//! WCAG 2.1 A or AA violation, no serious or critical best-practice
//! finding. A questionnaire of every type and four pages is filled out in
//! English and in Dutch (a test overlay): Back and Next, a question
//! appearing and going with an earlier answer, the slider with the
//! keyboard only, and resuming on the page stopped at.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::RawQuery;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use serde_json::Value;
use tests::browser::{Browser, KEY_ENTER, KEY_LEFT, KEY_RIGHT, KEY_TAB};
use tests::{Db, TestApp, db_test, json};

use crate::support::*;
use crate::visitor::start;

/// Phone and desktop widths of the screenshots, in CSS pixels.
const WIDTHS: [(&str, u32); 2] = [("phone", 360), ("desktop", 1280)];

/// A phone's window, in CSS pixels: no page may scroll sideways in it.
const PHONE: (u32, u32) = (360, 740);

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

/// Screenshots the page at phone and desktop width, checks that it does
/// not scroll sideways on a phone, then checks it with axe-core in the
/// same browser: no violation of WCAG 2.1 A or AA at all, and no serious
/// or critical finding of its best practices.
async fn look_at(browser: &Browser, db: Db, name: &str) {
    let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("fill-out-screenshots")
        .join(format!("{db:?}").to_lowercase());
    for (device, width) in WIDTHS {
        let path = folder.join(format!("{name}-{device}.png"));
        browser.screenshot(width, &path).await;
        eprintln!("screenshot: {}", path.display());
    }
    let (width, height) = PHONE;
    assert!(
        !browser.scrolls_sideways(width, height).await,
        "{name}: the page scrolls sideways at {width}x{height}"
    );
    browser.execute(&axe_source(), json!([])).await;
    let run = |tags: &str| {
        format!(
            "const done = arguments[arguments.length - 1];\
             axe.run(document, {{runOnly: {{type: 'tag', values: [{tags}]}}}})\
               .then(r => done(r.violations.map(v => ({{id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.html)}}))))\
               .catch(e => done([{{id: 'axe-failed', impact: 'critical', help: String(e)}}]));"
        )
    };
    let wcag = browser
        .execute_async(
            &run("'wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'"),
            json!([]),
        )
        .await;
    assert_eq!(wcag, json!([]), "{name}: WCAG 2.1 A/AA violations {wcag:#}");
    let practices = browser
        .execute_async(&run("'best-practice'"), json!([]))
        .await;
    let all = practices.as_array().cloned().unwrap_or_default();
    let serious: Vec<&Value> = all
        .iter()
        .filter(|v| matches!(v["impact"].as_str(), Some("serious" | "critical")))
        .collect();
    assert!(
        serious.is_empty(),
        "{name}: accessibility findings {serious:#?}"
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
        // The difficulty item waits for a problem checked off.
        assert_eq!(browser.count("fieldset").await, 9);
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
        // A problem was checked off: the difficulty item is asked now.
        assert_eq!(browser.count("fieldset").await, 10);
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

/// The host with the questionnaire `steps` (every type, four pages) and
/// an EPD whose origin every token may use.
async fn spawn_steps_with_browser_epd(db: Db) -> (TestApp, Epd) {
    let epd = epd().await;
    let origin = epd.origin.clone();
    let app = TestApp::spawn_with(db, move |config| {
        config.questionnaires_dir = tests::repo_root().join("tests/fixtures/fillout");
        config.protocols_dir = config.data_dir.join("no-protocols");
        config.allowed_origins = vec![origin];
    })
    .await;
    (app, epd)
}

/// The page's progress line.
async fn counter(browser: &Browser) -> String {
    browser.text(".counter").await
}

/// Moves the focus forward with Tab until `name=value` has it.
async fn tab_to(browser: &Browser, wanted: &str) {
    for _ in 0..40 {
        if browser.focused().await == wanted {
            return;
        }
        browser.press(&[KEY_TAB]).await;
    }
    panic!("Tab never reached {wanted}; at {}", browser.focused().await);
}

db_test!(
    async fn a_respondent_goes_through_every_type_and_page_in_a_browser(
        setup: spawn_steps_with_browser_epd,
    ) {
        let (app, epd) = setup;
        let db = app.db;
        let back_url = format!("{}/back", epd.origin);
        let link = start(
            &app,
            "d1",
            json!({"questionnaire_keys": ["steps"], "return_to": back_url}),
        )
        .await;
        let browser = Browser::start("en").await;
        browser.goto(&link).await;
        browser.click_to_leave("button[type='submit']").await;
        assert_eq!(browser.text("h1").await, "Steps");
        assert_eq!(
            counter(&browser).await,
            "Questionnaire 1 of 1 · Page 1 of 3"
        );
        look_at(&browser, db, "steps-1").await;

        // "Other" ticked: the page comes back with "Other, namely".
        assert_eq!(browser.count("#q-v_3").await, 0);
        browser.click("input[name='v_1'][value='a1']").await;
        browser.click("input[name='v_2'][value='a3']").await;
        browser.click_to_leave("button[value='submit']").await;
        assert_eq!(browser.count("#q-v_3").await, 1);
        assert!(browser.is_selected("input[name='v_2'][value='a3']").await);
        assert_eq!(
            browser.text(".notice h2").await,
            "There are more questions on this page"
        );
        look_at(&browser, db, "steps-1-more").await;
        browser.type_into("#q-v_3", "back pain").await;
        browser.click_to_leave("button[value='submit']").await;
        assert_eq!(
            counter(&browser).await,
            "Questionnaire 1 of 1 · Page 2 of 4"
        );

        // The slider with the keyboard only: Tab into it, arrow to 7; then
        // the numbers typed, and Enter sends the page.
        look_at(&browser, db, "steps-2").await;
        tab_to(&browser, "v_4=0").await;
        assert!(
            !browser.is_selected("input[name='v_4'][value='0']").await,
            "nothing chosen yet"
        );
        browser.press(&[KEY_RIGHT; 7]).await;
        assert!(browser.is_selected("input[name='v_4'][value='7']").await);
        browser.press(&[KEY_LEFT, KEY_RIGHT]).await;
        assert_eq!(browser.focused().await, "v_4=7");
        browser
            .press(&[KEY_TAB, "1", "4", KEY_TAB, "7", ",", "5"])
            .await;
        assert_eq!(browser.focused().await, "v_6=7,5");
        browser.press_to_leave(&[KEY_ENTER]).await;
        assert_eq!(
            counter(&browser).await,
            "Questionnaire 1 of 1 · Page 3 of 4"
        );

        // Back keeps page 2's answers; Next again.
        browser.click_to_leave("button[value='back']").await;
        assert_eq!(
            counter(&browser).await,
            "Questionnaire 1 of 1 · Page 2 of 4"
        );
        assert!(browser.is_selected("input[name='v_4'][value='7']").await);
        let typed = browser
            .execute("return document.getElementById('q-v_5').value;", json!([]))
            .await;
        assert_eq!(typed, "14");
        browser.click_to_leave("button[value='submit']").await;

        // A date that does not exist: said next to it, linked from the top.
        browser.type_into("#q-v_7-first", "31").await;
        browser.type_into("#q-v_7-month", "2").await;
        browser.type_into("#q-v_7-year", "2024").await;
        browser.type_into("#q-v_9-first", "1987").await;
        browser.click("select#q-v_10 option[value='a2']").await;
        browser.click_to_leave("button[value='submit']").await;
        assert_eq!(browser.count(".error").await, 1);
        assert!(
            browser
                .text("#e-v_7")
                .await
                .starts_with("Enter a date that exists")
        );
        look_at(&browser, db, "steps-3-error").await;
        browser.clear("#q-v_7-first").await;
        browser.type_into("#q-v_7-first", "29").await;
        browser.click_to_leave("button[value='submit']").await;
        assert_eq!(
            counter(&browser).await,
            "Questionnaire 1 of 1 · Page 4 of 4"
        );
        // The chain: "Other, namely" was answered, so v_12 is asked.
        assert_eq!(browser.count("#q-v_12").await, 1);
        look_at(&browser, db, "steps-4").await;

        // Back to the start: no complaints after all. The second page and
        // "Other, namely" go, and with it v_12.
        for _ in 0..3 {
            browser.click_to_leave("button[value='back']").await;
        }
        assert_eq!(
            counter(&browser).await,
            "Questionnaire 1 of 1 · Page 1 of 4"
        );
        browser.click("input[name='v_1'][value='a0']").await;
        browser.click("input[name='v_2'][value='a3']").await;
        browser.click_to_leave("button[value='submit']").await;
        assert_eq!(
            counter(&browser).await,
            "Questionnaire 1 of 1 · Page 2 of 3"
        );
        browser.click_to_leave("button[value='submit']").await;
        assert_eq!(
            counter(&browser).await,
            "Questionnaire 1 of 1 · Page 3 of 3"
        );
        assert_eq!(browser.count("#q-v_12").await, 0);

        // Stop here; a new session resumes on this page.
        browser.type_into("#q-v_11", "see you").await;
        browser.click_to_leave("button[value='interrupt']").await;
        assert_eq!(browser.url().await, back_url);
        let steps = stored(&app, "d1", "steps").await;
        assert_eq!(steps["status"], "aborted");
        let link = start(
            &app,
            "d1",
            json!({"response_ids": [steps["id"]], "return_to": back_url}),
        )
        .await;
        browser.goto(&link).await;
        browser.click_to_leave("button[type='submit']").await;
        assert_eq!(
            counter(&browser).await,
            "Questionnaire 1 of 1 · Page 3 of 3"
        );
        assert_eq!(browser.text("#q-v_11").await, "see you");
        browser.click_to_leave("button[value='submit']").await;
        assert_eq!(browser.url().await, back_url);

        let steps = stored(&app, "d1", "steps").await;
        assert_eq!(steps["status"], "completed");
        assert_eq!(
            steps["values"],
            json!({"v_1": "a0", "v_2": null, "v_3": null, "v_4": null, "v_5": null, "v_6": null,
                   "v_7": "2024-02-29", "v_8": null, "v_9": "1987", "v_10": "a2",
                   "v_11": "see you", "v_12": null})
        );
        assert_eq!(steps["language"], "en");
    }
);

db_test!(
    async fn a_dutch_respondent_fills_out_the_translation_in_a_browser(
        setup: spawn_steps_with_browser_epd,
    ) {
        let (app, epd) = setup;
        let db = app.db;
        let back_url = format!("{}/back", epd.origin);
        let link = start(
            &app,
            "d1",
            json!({"questionnaire_keys": ["steps"], "return_to": back_url}),
        )
        .await;
        let browser = Browser::start("nl").await;
        browser.goto(&link).await;
        browser.click_to_leave("button[type='submit']").await;
        assert_eq!(
            browser
                .execute("return document.documentElement.lang;", json!([]))
                .await,
            "nl"
        );
        assert_eq!(browser.text("h1").await, "Stappen (test)");
        assert_eq!(
            counter(&browser).await,
            "Vragenlijst 1 van 1 · Pagina 1 van 3"
        );
        browser.click("input[name='v_1'][value='a1']").await;
        browser.click("input[name='v_2'][value='a9']").await;
        browser.click_to_leave("button[value='submit']").await;
        assert_eq!(browser.text("#lo-v_4").await, "Heel slecht");
        // Nothing chosen on the slider: it is unanswered, and said so.
        browser.type_into("#q-v_5", "3").await;
        browser.click_to_leave("button[value='submit']").await;
        assert_eq!(browser.text("#e-v_4").await, "Beantwoord deze vraag.");
        look_at(&browser, db, "steps-nl-2-error").await;
        browser.click("input[name='v_4'][value='10']").await;
        browser.click_to_leave("button[value='submit']").await;
        browser.type_into("#q-v_7-first", "2").await;
        browser.type_into("#q-v_7-month", "3").await;
        browser.type_into("#q-v_7-year", "2020").await;
        look_at(&browser, db, "steps-nl-3").await;
        browser.click_to_leave("button[value='submit']").await;
        assert_eq!(
            counter(&browser).await,
            "Vragenlijst 1 van 1 · Pagina 4 van 4"
        );
        look_at(&browser, db, "steps-nl-4").await;
        browser.click_to_leave("button[value='submit']").await;
        assert_eq!(browser.url().await, back_url);
        let steps = stored(&app, "d1", "steps").await;
        assert_eq!(steps["status"], "completed");
        assert_eq!(steps["language"], "nl");
        assert_eq!(steps["values"]["v_2"], json!(["a9"]));
        assert_eq!(steps["values"]["v_4"], 10);
        assert_eq!(steps["values"]["v_7"], "2020-03-02");
    }
);
