//! A respondent's link and session used as a weapon against the one
//! database writer (docs/operations.md#rate-limits,
//! docs/api/fill-out.md#hosted-pages): a valid link fetched in a loop, its
//! Start button pressed in a loop, a session's pages reloaded in a loop;
//! login forms sent by another site; sessions kept forever. Limits here
//! never refill while a test runs (one an hour), so the tests count, never
//! wait; the app's clock stands still, so everything happens within one
//! minute.

use std::time::Duration;

use chrono::Duration as Span;
use host::config::{Config, RateLimit};
use host::scheduler;
use tests::{Db, TestApp, db_test, json};

use crate::fill_out_sessions::EPD;
use crate::support::*;
use crate::visitor::{Visitor, pairs, start, start_blank};

/// `burst`, then one an hour: no refill while a test runs.
fn burst_of(burst: u32) -> Option<RateLimit> {
    Some(RateLimit {
        burst: std::num::NonZeroU32::new(burst).expect("not zero"),
        every: Duration::from_secs(3600),
    })
}

/// [`EPD`] allowed, ten opens per link and twenty requests per session.
async fn spawn_with_respondent_limits(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config: &mut Config| {
        config.allowed_origins = vec![EPD.to_owned()];
        config.respondent_limits.link = burst_of(10);
        config.respondent_limits.session = burst_of(20);
    })
    .await
}

/// Rows of the access log and of fill-out sessions, once the counted
/// refusals are written.
async fn rows(app: &TestApp) -> (i64, i64) {
    app.state.flush_refusals().await;
    let count = |table: &str| format!("SELECT COUNT(*) FROM {table}");
    (
        app.sql(&count("access_log")).await.unwrap_or_default(),
        app.sql(&count("fill_out_sessions"))
            .await
            .unwrap_or_default(),
    )
}

/// The `completing_url` of the dossier's first response.
async fn completing_url(app: &TestApp, dossier: &str) -> String {
    app.get(&responses(dossier)).await.body[0]["completing_url"]
        .as_str()
        .expect("a completing_url")
        .to_owned()
}

db_test!(
    async fn ten_thousand_gets_of_a_valid_link_add_no_rows_while_epd_posts_all_succeed(
        app: spawn_with_respondent_limits,
    ) {
        prepare(&app, "d1", "phq9", None, None).await;
        let link = completing_url(&app, "d1").await;
        let before = rows(&app).await;
        let client = tests::reqwest::Client::builder()
            .redirect(tests::reqwest::redirect::Policy::none())
            .build()
            .expect("a client");
        // A loop of GETs (a patient's script, a link preview gone wild),
        // 100 at a time, with an EPD posting responses meanwhile.
        let flood = async {
            for _ in 0..100 {
                let batch = (0..100).map(|_| client.get(&link).send());
                for answer in futures_util::future::join_all(batch).await {
                    let answer = answer.expect("the host answers");
                    assert_eq!(answer.status(), 200);
                    assert!(answer.headers().get("set-cookie").is_none());
                }
            }
        };
        let epd = async {
            let mut created = 0;
            for batch in 0..10 {
                let posts = (0..20).map(|n| {
                    let app = &app;
                    async move {
                        post_phq9(app, "epd", &format!("ext-{batch}-{n}"), phq9_all_answered())
                            .await
                    }
                });
                for answer in futures_util::future::join_all(posts).await {
                    assert_eq!(answer.status, 201, "{}", answer.text);
                    created += 1;
                }
            }
            created
        };
        let ((), created) = tokio::join!(flood, epd);
        assert_eq!(created, 200);
        // Its idle connections closed (a client holds at most 256 at once).
        drop(client);
        // The GETs wrote nothing: no session, no access row. The EPD's 200
        // POSTs wrote their 200 rows, and 200 more for the alarms they
        // raised (item 9 answered above 0).
        let after = rows(&app).await;
        assert_eq!((after.0 - before.0, after.1 - before.1), (400, 0));
        // Pressing Start in a loop (without keeping the cookie, as curl
        // does) opens the link's ten sessions, with their ten rows; the
        // other 990 are answered 429 and counted in one row.
        let mut statuses = Vec::new();
        for _ in 0..20 {
            let batch = (0..50).map(|_| {
                let (app, link) = (&app, &link);
                async move { Visitor::new(app).log_in(link).await }
            });
            for page in futures_util::future::join_all(batch).await {
                statuses.push(page.status);
            }
        }
        assert_eq!(statuses.iter().filter(|s| **s == 303).count(), 10);
        assert_eq!(statuses.iter().filter(|s| **s == 429).count(), 990);
        let opened = rows(&app).await;
        assert_eq!((opened.0 - after.0, opened.1 - after.1), (11, 10));
        // The respondent, still within the minute, is told to wait.
        let page = Visitor::new(&app).log_in(&link).await;
        page.assert_message(429, "Too many attempts");
    }
);

db_test!(
    async fn reopening_a_link_in_the_same_browser_goes_on_in_its_session(
        app: spawn_with_respondent_limits,
    ) {
        prepare(&app, "d1", "phq9", None, None).await;
        let link = completing_url(&app, "d1").await;
        let mut browser = Visitor::new(&app);
        let first = browser.log_in(&link).await;
        assert_eq!(first.status, 303, "{}", first.text);
        let cookie = browser.cookie.clone().expect("a session cookie");
        let before = rows(&app).await;
        // Fifty more clicks on the link in that browser: the same session,
        // nothing written, no link limit spent.
        for _ in 0..50 {
            let again = browser.log_in(&link).await;
            assert_eq!(again.status, 303, "{}", again.text);
            assert_eq!(again.location(), "/fill_out/session");
            assert!(again.header("set-cookie").is_empty());
        }
        assert_eq!(browser.cookie.as_deref(), Some(cookie.as_str()));
        assert_eq!(rows(&app).await, before);
        let form = browser.follow(first).await;
        assert!(form.text.contains("<h1>PHQ-9</h1>"), "{}", form.text);
        // Another browser gets a session of its own.
        assert_eq!(Visitor::new(&app).log_in(&link).await.status, 303);
        assert_eq!(rows(&app).await.1, before.1 + 1);
    }
);

db_test!(
    async fn a_session_reloading_its_page_in_a_loop_is_held_back_before_it_writes(
        app: spawn_with_respondent_limits,
    ) {
        let id = prepare(&app, "d1", "phq9", None, None).await;
        let link = completing_url(&app, "d1").await;
        let mut browser = Visitor::new(&app);
        let form = browser.open(&link).await;
        assert!(form.text.contains("<h1>PHQ-9</h1>"), "{}", form.text);
        let before = rows(&app).await;
        // 500 views of the form: each one shown is a logged read of the
        // dossier; past the session's 20 requests (two were spent getting
        // here), 429 and nothing written one by one.
        let path = format!("/fill_out/session/responses/{id}");
        let mut statuses = Vec::new();
        for _ in 0..500 {
            statuses.push(browser.get(&path).await.status);
        }
        assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 18);
        assert_eq!(statuses.iter().filter(|s| **s == 429).count(), 482);
        let after = rows(&app).await;
        assert_eq!(
            after.0 - before.0,
            18 + 1,
            "a row per view shown, one for the count"
        );
        app.state.flush_refusals().await;
        let log = app
            .state
            .store()
            .access_log(Some("d1"), None)
            .await
            .expect("log");
        let counted = log.last().expect("the counted row");
        assert_eq!(
            (counted.action.as_str(), counted.status, counted.refusals),
            ("GET /fill_out/session/responses/{id}", 429, Some(482))
        );
        let page = browser.get(&path).await;
        page.assert_message(429, "Too many attempts");
        assert!(
            page.header("retry-after")
                .parse::<u64>()
                .is_ok_and(|s| s >= 1)
        );
    }
);

db_test!(
    async fn a_completing_url_s_get_shows_a_start_button_and_opens_nothing(
        app: crate::fill_out_sessions::spawn_with_epd,
    ) {
        prepare(&app, "d1", "phq9", None, None).await;
        let link = completing_url(&app, "d1").await;
        let before = rows(&app).await;
        let mut scanner = Visitor::new(&app);
        let page = scanner.get(&link).await;
        assert_eq!(page.status, 200, "{}", page.text);
        let respondent = link
            .split("/fill_out/respondents/")
            .nth(1)
            .and_then(|rest| rest.split('?').next())
            .expect("the respondent's id");
        assert!(
            page.text.contains(&format!(
                "<form method=\"post\" action=\"/fill_out/respondents/{respondent}\">"
            )),
            "{}",
            page.text
        );
        assert!(page.text.contains("<button type=\"submit\">Start</button>"));
        assert!(
            !page.text.contains("PHQ-9"),
            "nothing of the dossier: {}",
            page.text
        );
        assert!(page.header("set-cookie").is_empty());
        assert!(scanner.cookie.is_none());
        assert_eq!(rows(&app).await, before, "nothing opened, nothing logged");
        // The button opens the questionnaire, with its access row.
        let form = Visitor::new(&app).open(&link).await;
        assert!(form.text.contains("<h1>PHQ-9</h1>"), "{}", form.text);
        let log = app
            .state
            .store()
            .access_log(Some("d1"), None)
            .await
            .expect("log");
        assert!(
            log.iter()
                .any(|e| e.action == "POST /fill_out/respondents/{id}" && e.status == 303),
            "{log:?}"
        );
    }
);

db_test!(
    async fn a_login_form_sent_by_another_site_logs_nobody_in(
        app: crate::fill_out_sessions::spawn_with_epd,
    ) {
        prepare(&app, "d1", "phq9", None, None).await;
        let completing = completing_url(&app, "d1").await;
        let one_time = start_blank(&app, "d2", &["phq9"]).await;
        let before = rows(&app).await;
        for link in [&completing, &one_time] {
            let page = Visitor::new(&app).get(link).await;
            let (action, fields) = page.start_form();
            // The attacker's page posts the form: the browser says where
            // it comes from, in one header or the other.
            for headers in [
                vec![
                    ("origin", "https://evil.example"),
                    ("sec-fetch-site", "cross-site"),
                ],
                vec![("origin", "https://evil.example")],
                vec![("sec-fetch-site", "same-site")],
            ] {
                let mut victim = Visitor::new(&app);
                victim.extra_headers = headers.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
                let refused = victim.post_form(&action, &pairs(&fields)).await;
                refused.assert_message(403, "This form could not be accepted");
                assert!(victim.cookie.is_none(), "{headers:?}");
            }
        }
        let after = rows(&app).await;
        assert_eq!(after.1, before.1, "no session opened");
        // The one-time link is not spent: the respondent's own click, from
        // the service's page, works.
        for link in [&completing, &one_time] {
            let page = Visitor::new(&app).get(link).await;
            let (action, fields) = page.start_form();
            let mut respondent = Visitor::new(&app);
            respondent.extra_headers = vec![
                ("origin", app.base.clone()),
                ("sec-fetch-site", "same-origin".to_owned()),
            ];
            let login = respondent.post_form(&action, &pairs(&fields)).await;
            assert_eq!(login.status, 303, "{}", login.text);
            assert!(respondent.cookie.is_some());
        }
    }
);

/// [`EPD`] allowed; sessions kept a day once over.
async fn spawn_keeping_sessions_a_day(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config: &mut Config| {
        config.allowed_origins = vec![EPD.to_owned()];
        config.fill_out_session_retention = Duration::from_secs(24 * 3600);
    })
    .await
}

/// Runs one scheduler pass at `after` past the start; the sessions it
/// deleted.
async fn purged_at(app: &TestApp, after: Span) -> usize {
    let at = tests::start_time() + after;
    app.clock.advance(at - app.state.now());
    scheduler::tick(app.state.scheduler(), at)
        .await
        .expect("a scheduler pass")
        .sessions_purged
}

db_test!(
    async fn sessions_over_for_longer_than_the_retention_are_deleted(
        app: spawn_keeping_sessions_a_day,
    ) {
        let id = prepare(&app, "d1", "phq9", None, None).await;
        let link = completing_url(&app, "d1").await;
        // Ended at once: interrupted.
        let mut ended = Visitor::new(&app);
        let form = ended.open(&link).await;
        let left = ended
            .post_form(
                &format!("/fill_out/session/responses/{id}"),
                &[
                    ("csrf", form.field("csrf").as_str()),
                    ("action", "interrupt"),
                ],
            )
            .await;
        assert_eq!(left.status, 303, "{}", left.text);
        // Left open (idles out after two hours), and a one-time link never
        // used (expires after ten minutes).
        let mut idle = Visitor::new(&app);
        idle.open(&link).await;
        start_blank(&app, "d2", &["phq9"]).await;
        assert_eq!(rows(&app).await.1, 3);
        // Nothing is deleted before a day has passed since each was over.
        assert_eq!(purged_at(&app, Span::hours(24) - Span::seconds(1)).await, 0);
        assert_eq!(
            purged_at(&app, Span::hours(24) + Span::minutes(11)).await,
            2
        );
        assert_eq!(rows(&app).await.1, 1);
        assert_eq!(purged_at(&app, Span::hours(26)).await, 0);
        assert_eq!(purged_at(&app, Span::hours(26) + Span::minutes(1)).await, 1);
        assert_eq!(rows(&app).await.1, 0);
        // What was done is still in the access log and the responses.
        assert_eq!(app.get(&responses("d1")).await.body[0]["status"], "aborted");
        let log = app
            .state
            .store()
            .access_log(Some("d1"), None)
            .await
            .expect("log");
        let interrupted = format!("POST /fill_out/session/responses/{id}");
        assert!(log.iter().any(|e| e.action == interrupted), "{log:?}");
    }
);

db_test!(
    async fn a_redirect_to_the_progress_page_is_logged(
        app: crate::fill_out_sessions::spawn_with_epd,
    ) {
        let link = start(
            &app,
            "d1",
            json!({"questionnaire_keys": ["phq9"], "return_to": format!("{EPD}/back"),
                   "progress_url": format!("{EPD}/progress")}),
        )
        .await;
        let mut browser = Visitor::new(&app);
        let progress = browser.open(&link).await;
        assert!(progress.location().starts_with(&format!("{EPD}/progress?")));
        assert!(
            progress.location().contains("=phq9"),
            "{}",
            progress.location()
        );
        let log = app
            .state
            .store()
            .access_log(Some("d1"), None)
            .await
            .expect("log");
        let last = log.last().expect("a row");
        assert_eq!(
            (
                last.action.as_str(),
                last.status,
                last.dossier.as_deref(),
                last.consumer_key.as_deref()
            ),
            ("GET /fill_out/session", 303, Some("d1"), None)
        );
    }
);
