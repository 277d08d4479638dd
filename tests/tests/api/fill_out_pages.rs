//! The fill-out pages over HTTP: logging in with a signed link (tampered,
//! replayed and expired ones refused with a page, never the questionnaire),
//! the session cookie, the progress page and its parameters, a
//! questionnaire page and its submission (incomplete, complete and scored,
//! interrupted and resumed), CSRF, other dossiers' responses, the
//! `completing_url` flow, security headers, and hostile form input. The
//! stored responses are checked over the API.

use chrono::Duration;
use host::domain::ids::QuestionnaireId;
use host::store::Preparation;
use serde_json::{Map, Value};
use tests::{TestApp, db_test, json};

use crate::fill_out_sessions::{EPD, query_of, spawn_with_epd};
use crate::support::*;
use crate::visitor::{Page, Visitor, pairs, phq9_form, start, start_blank};

/// The responses of a dossier over the API, by questionnaire key.
async fn stored(app: &TestApp, dossier: &str, key: &str) -> Vec<Value> {
    app.get(&responses(dossier))
        .await
        .body
        .as_array()
        .expect("a list")
        .iter()
        .filter(|r| r["questionnaire_key"] == key)
        .cloned()
        .collect()
}

/// The id of the dossier's first response to the questionnaire.
async fn first_id(app: &TestApp, dossier: &str, key: &str) -> i64 {
    stored(app, dossier, key).await[0]["id"]
        .as_i64()
        .expect("an id")
}

/// Asserts that a page's Content-Security-Policy lets nothing but this
/// service be loaded besides stylesheets: an allowed stylesheet could
/// otherwise send what the page holds out in the URLs of images or fonts
/// (`input[value^="a"] { background: url(...) }`).
pub fn assert_only_self_loads(csp: &str) {
    let directives: Vec<(&str, Vec<&str>)> = csp
        .split(';')
        .filter_map(|d| {
            let mut words = d.split_whitespace();
            Some((words.next()?, words.collect()))
        })
        .collect();
    let sources = |name: &str| {
        directives
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, s)| s.clone())
    };
    assert_eq!(sources("default-src"), Some(vec!["'none'"]), "{csp}");
    for name in ["img-src", "font-src"] {
        assert_eq!(sources(name), Some(vec!["'self'"]), "{name} in {csp}");
    }
    // Connections, media, objects, frames, workers and manifests fall back
    // to default-src 'none'.
    for name in [
        "connect-src",
        "media-src",
        "object-src",
        "frame-src",
        "child-src",
        "worker-src",
        "manifest-src",
        "script-src",
        "prefetch-src",
    ] {
        assert_eq!(sources(name), None, "{name} in {csp}");
    }
    assert_eq!(sources("base-uri"), Some(vec!["'none'"]), "{csp}");
}

/// Logs in with `link`, follows to the first page that is not a redirect
/// within the app.
async fn open<'a>(app: &'a TestApp, link: &str) -> (Visitor<'a>, Page) {
    let mut visitor = Visitor::new(app);
    let login = visitor.log_in(link).await;
    assert_eq!(login.status, 303, "{}", login.text);
    let page = visitor.follow(login).await;
    (visitor, page)
}

db_test!(
    async fn a_link_logs_in_once_with_a_locked_down_cookie(app: spawn_with_epd) {
        let link = start_blank(&app, "d1", &["phq9"]).await;
        let mut visitor = Visitor::new(&app);
        let login = visitor.log_in(&link).await;
        assert_eq!(login.status, 303, "{}", login.text);
        assert_eq!(login.location(), "/fill_out/session");
        let cookie = login.header("set-cookie");
        assert!(cookie.starts_with("__Host-outcomes_fill_out="), "{cookie}");
        for attribute in ["; Path=/", "; HttpOnly", "; Secure", "; SameSite=Lax"] {
            assert!(cookie.contains(attribute), "{attribute} in {cookie}");
        }
        assert!(!cookie.contains("Domain"), "{cookie}");
        assert_eq!(login.header("referrer-policy"), "no-referrer");
        // The same link again: spent, whoever uses it.
        let mut other = Visitor::new(&app);
        let replay = other.log_in(&link).await;
        replay.assert_message(403, "This link has been used already");
        assert!(replay.header("set-cookie").is_empty());
        // A mail client or chat app looking at a link (HEAD) spends nothing.
        // (Another dossier, so d1 keeps the one response counted below.)
        let fresh = start_blank(&app, "d2", &["phq9"]).await;
        let head = reqwest::Client::new()
            .head(&fresh)
            .send()
            .await
            .expect("an answer");
        assert_eq!(head.status(), 200);
        assert!(head.headers().get("set-cookie").is_none());
        assert_eq!(
            Visitor::new(&app).log_in(&fresh).await.status,
            303,
            "still usable"
        );
        // The first browser is in: the questionnaire (no progress page).
        let next = visitor.get("/fill_out/session").await;
        assert_eq!(next.status, 303);
        let form = visitor.follow(next).await;
        assert_eq!(form.status, 200, "{}", form.text);
        assert!(form.text.contains("<h1>PHQ-9</h1>"), "{}", form.text);
        // Logging in prepared the response: open, with its completing_url.
        let phq9 = stored(&app, "d1", "phq9").await;
        assert_eq!(phq9.len(), 1);
        assert_eq!(phq9[0]["status"], "open");
        assert_eq!(phq9[0]["external_id"], Value::Null);
        assert!(
            phq9[0]["completing_url"]
                .as_str()
                .is_some_and(|u| u.contains("/fill_out/respondents/"))
        );
    }
);

db_test!(
    async fn tampered_links_never_show_the_questionnaire(app: spawn_with_epd) {
        let link = start_blank(&app, "d1", &["phq9"]).await;
        let query = query_of(&link);
        let base = format!("{}/fill_out/session/login", app.base);
        type Query = Vec<(String, String)>;
        let rebuild = |change: &dyn Fn(&mut Query)| {
            let mut q = query.clone();
            change(&mut q);
            let parts: Vec<String> = q.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{base}?{}", parts.join("&"))
        };
        let flip = |text: &str| {
            let first = if text.starts_with('0') { "1" } else { "0" };
            format!("{first}{}", &text[1..])
        };
        let tampered = [
            rebuild(&|q| q[0].1.push('x')),
            rebuild(&|q| q[1].1 = flip(&q[1].1)),
            rebuild(&|q| q[2].1 = flip(&q[2].1)),
            rebuild(&|q| q[3].1 = (START_UNIX + 60).to_string()),
            rebuild(&|q| q[3].1 = "soon".to_owned()),
            rebuild(&|q| {
                q.remove(1);
            }),
            rebuild(&|q| q[1].1 = "not-hex".to_owned()),
            rebuild(&|q| q.clear()),
            format!("{base}?hmac=%FF%FE&nonce=%00"),
        ];
        for url in tampered {
            let mut visitor = Visitor::new(&app);
            let page = visitor.get(&url).await;
            page.assert_message(403, "This link does not work");
            assert!(page.header("set-cookie").is_empty(), "{url}");
            assert!(visitor.cookie.is_none());
        }
        // None of that spent the real link, nor prepared anything.
        assert_eq!(app.get(&responses("d1")).await.body, json!([]));
        let (_, page) = open(&app, &link).await;
        assert_eq!(page.status, 200, "{}", page.text);
    }
);

db_test!(
    async fn a_link_expires_after_its_window(app: spawn_with_epd) {
        let early = start_blank(&app, "d1", &["phq9"]).await;
        let late = start_blank(&app, "d1", &["phq9"]).await;
        app.clock
            .advance(Duration::minutes(9) + Duration::seconds(59));
        let (_, page) = open(&app, &early).await;
        assert_eq!(page.status, 200, "{}", page.text);
        app.clock.advance(Duration::seconds(1));
        let mut visitor = Visitor::new(&app);
        let page = visitor.get(&late).await;
        page.assert_message(410, "This link has expired");
        assert!(visitor.cookie.is_none());
        // In Dutch for a Dutch browser.
        let mut dutch = Visitor::new(&app);
        dutch.accept_language = Some("nl-NL,nl;q=0.9,en;q=0.5");
        let page = dutch.get(&late).await;
        page.assert_message(410, "Deze link is verlopen");
        assert!(page.text.contains("<html lang=\"nl\">"));
    }
);

db_test!(
    async fn the_flow_visits_the_progress_page_and_ends_at_return_to(app: spawn_with_epd) {
        let link = start(
            &app,
            "d1",
            json!({"questionnaire_keys": ["phq9", "gad7"], "return_to": format!("{EPD}/back?visit=7"),
                   "progress_url": format!("{EPD}/progress?visit=7"), "stylesheet": format!("{EPD}/rom.css")}),
        )
        .await;
        let (mut visitor, progress) = open(&app, &link).await;
        // Before the first questionnaire: the progress page.
        assert_eq!(progress.status, 303);
        let location = progress.location().to_owned();
        assert!(
            location.starts_with(&format!("{EPD}/progress?visit=7&continue_url=")),
            "{location}"
        );
        let params = query_of(&location);
        let value = |name: &str| -> Vec<String> {
            params
                .iter()
                .filter(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .collect()
        };
        assert_eq!(value("visit"), ["7"]);
        assert_eq!(
            value("continue_url"),
            [format!("{}/fill_out/session/continue", app.base)]
        );
        assert_eq!(
            value("completed_questionnaire_keys[]"),
            Vec::<String>::new()
        );
        assert_eq!(value("pending_questionnaire_keys[]"), ["phq9", "gad7"]);
        let interrupt_url = value("interrupt_url").pop().expect("an interrupt_url");
        assert!(
            interrupt_url.starts_with(&format!("{}/fill_out/session/interrupt?token=", app.base))
        );
        // Continue: the PHQ-9 page.
        let form = visitor.go(&value("continue_url")[0]).await;
        assert_eq!(form.status, 200, "{}", form.text);
        let csp = form.header("content-security-policy");
        assert!(csp.contains("default-src 'none'"), "{csp}");
        assert!(
            csp.contains("style-src 'self' https://epd.example.org;"),
            "{csp}"
        );
        assert!(
            csp.contains("form-action 'self' https://epd.example.org;"),
            "{csp}"
        );
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        assert!(!csp.contains("script-src"), "{csp}");
        assert_only_self_loads(csp);
        assert_eq!(form.header("x-frame-options"), "DENY");
        assert_eq!(form.header("x-content-type-options"), "nosniff");
        assert_eq!(form.header("cache-control"), "no-store");
        assert!(form.text.contains("Questionnaire 1 of 2"), "{}", form.text);
        let own = form
            .text
            .find("/fill_out/assets/style.css")
            .expect("built-in stylesheet");
        let theirs = form
            .text
            .find("https://epd.example.org/rom.css")
            .expect("the caller's stylesheet");
        assert!(own < theirs);
        for n in 1..=9 {
            assert!(
                form.text.contains(&format!("<fieldset id=\"q-v_{n}\"")),
                "v_{n}"
            );
        }
        // The difficulty item follows a problem checked off: not yet.
        assert!(!form.text.contains("q-v_10"), "{}", form.text);
        assert!(!form.text.contains("<script"));
        let action = format!(
            "/fill_out/session/responses/{}",
            stored(&app, "d1", "phq9").await[0]["id"]
        );
        assert!(form.text.contains(&format!("action=\"{action}\"")));
        let csrf = form.field("csrf");

        // Incomplete: sent back with the answers kept and what is missing marked.
        let partial = [
            ("csrf", csrf.as_str()),
            ("action", "submit"),
            ("v_1", "a2"),
            ("v_2", "a1"),
            ("v_10", "a1"),
        ];
        let back = visitor.post_form(&action, &partial).await;
        assert_eq!(back.status, 422, "{}", back.text);
        assert!(
            back.is_checked("v_1", "a2")
                && back.is_checked("v_2", "a1")
                && back.is_checked("v_10", "a1")
        );
        assert!(back.text.contains("Some questions still need an answer"));
        for n in 3..=9 {
            assert!(
                back.text.contains(&format!("<li><a href=\"#q-v_{n}\">")),
                "v_{n} listed"
            );
            assert!(
                back.text
                    .contains(&format!("<p class=\"error\" id=\"e-v_{n}\">")),
                "v_{n} marked"
            );
        }
        assert!(!back.text.contains("href=\"#q-v_10\""), "v_10 is optional");
        assert_eq!(
            stored(&app, "d1", "phq9").await[0]["status"],
            "open",
            "nothing stored"
        );

        // Complete: scored, stored, on to the progress page.
        app.clock.advance(Duration::minutes(3));
        let mut fields = phq9_form(&csrf, "a1");
        fields.push(("shown_at".to_owned(), form.field("shown_at")));
        let done = visitor.post_form(&action, &pairs(&fields)).await;
        assert_eq!(done.status, 303, "{}", done.text);
        assert_eq!(done.location(), "/fill_out/session");
        let progress = visitor.get("/fill_out/session").await;
        let params = query_of(progress.location());
        let keys = |name: &str| -> Vec<String> {
            params
                .iter()
                .filter(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .collect()
        };
        assert_eq!(keys("completed_questionnaire_keys[]"), ["phq9"]);
        assert_eq!(keys("pending_questionnaire_keys[]"), ["gad7"]);
        let phq9 = stored(&app, "d1", "phq9").await.remove(0);
        assert_eq!(phq9["status"], "completed");
        assert_eq!(phq9["completing_url"], Value::Null);
        assert_eq!(phq9["external_id"], Value::Null);
        assert_eq!(
            phq9["outcome"]["scores"]["total"]["value"],
            json!(9.0),
            "{phq9}"
        );
        assert_eq!(
            phq9["outcome"]["scores"]["total"]["interpretation"], "mild",
            "{phq9}"
        );
        assert_eq!(
            phq9["outcome"]["alarm"],
            json!(["v_9"]),
            "item 9 answered above 0"
        );
        assert_eq!(phq9["values"]["v_10"], Value::Null);
        assert_eq!(phq9["values"]["v_1"], "a1");
        assert_eq!(phq9["completed_at"], "2026-03-01T09:03:00.000+00:00");
        assert_eq!(phq9["started_at"], START_WIRE, "when the page was shown");

        // The GAD-7 page; stop half-way: back to return_to, answers kept.
        let form = visitor.go("/fill_out/session/continue").await;
        assert!(form.text.contains("<h1>GAD-7</h1>") && form.text.contains("Questionnaire 2 of 2"));
        assert!(form.text.contains(">Send answers</button>"), "the last one");
        let gad7_id = first_id(&app, "d1", "gad7").await;
        let interrupt = [
            ("csrf", csrf.as_str()),
            ("action", "interrupt"),
            ("v_1", "a3"),
            ("v_2", "zz"),
        ];
        let left = visitor
            .post_form(
                &format!("/fill_out/session/responses/{gad7_id}"),
                &interrupt,
            )
            .await;
        assert_eq!(left.status, 303, "{}", left.text);
        assert_eq!(left.location(), format!("{EPD}/back?visit=7"));
        assert!(
            left.header("set-cookie").contains("Max-Age=0"),
            "the cookie goes"
        );
        let gad7 = stored(&app, "d1", "gad7").await.remove(0);
        assert_eq!(gad7["status"], "aborted");
        assert_eq!(gad7["values"], json!({}), "not completed");
        assert!(gad7["completing_url"].is_string());
        // The session is over.
        let mut old = Visitor::new(&app);
        old.cookie = visitor.cookie.clone().or(Some("gone".to_owned()));
        old.get("/fill_out/session")
            .await
            .assert_message(403, "Your session has ended");

        // Resume: the answer given is there again; finish; back to return_to.
        let link = start(
            &app,
            "d1",
            json!({"response_ids": [gad7_id], "return_to": format!("{EPD}/back"), "progress_url": format!("{EPD}/progress")}),
        )
        .await;
        let (mut visitor, progress) = open(&app, &link).await;
        let pending: Vec<String> = query_of(progress.location())
            .into_iter()
            .filter(|(k, _)| k == "pending_questionnaire_keys[]")
            .map(|(_, v)| v)
            .collect();
        assert_eq!(pending, ["gad7"]);
        let form = visitor.go("/fill_out/session/continue").await;
        assert!(form.is_checked("v_1", "a3"), "{}", form.text);
        assert!(form.text.contains("Questionnaire 1 of 1"));
        let csrf = form.field("csrf");
        let mut fields = vec![
            ("csrf".to_owned(), csrf),
            ("action".to_owned(), "submit".to_owned()),
        ];
        fields.extend((1..=7).map(|n| {
            (
                format!("v_{n}"),
                if n == 1 { "a3" } else { "a0" }.to_owned(),
            )
        }));
        let done = visitor
            .post_form(
                &format!("/fill_out/session/responses/{gad7_id}"),
                &pairs(&fields),
            )
            .await;
        assert_eq!(done.location(), "/fill_out/session");
        let end = visitor.get("/fill_out/session").await;
        assert_eq!(end.status, 303);
        assert_eq!(
            end.location(),
            format!("{EPD}/back"),
            "after the last: return_to, no progress page"
        );
        let gad7 = stored(&app, "d1", "gad7").await.remove(0);
        assert_eq!(gad7["status"], "completed");
        assert_eq!(
            gad7["outcome"]["scores"]["total"]["value"],
            json!(3.0),
            "{gad7}"
        );
        assert_eq!(gad7["values"]["v_1"], "a3");
    }
);

db_test!(
    async fn forms_and_the_interrupt_url_need_the_session_s_tokens(app: spawn_with_epd) {
        let with_progress = json!({"questionnaire_keys": ["phq9"], "return_to": format!("{EPD}/back"),
                                   "progress_url": format!("{EPD}/progress")});
        let (mut visitor, progress) = open(&app, &start(&app, "d1", with_progress).await).await;
        let interrupt_url = query_of(progress.location())
            .into_iter()
            .find(|(k, _)| k == "interrupt_url")
            .map(|(_, v)| v)
            .expect("an interrupt_url");
        let interrupt_token = query_of(&interrupt_url)
            .into_iter()
            .find(|(k, _)| k == "token")
            .map(|(_, v)| v)
            .expect("a token");
        let form = visitor.go("/fill_out/session/continue").await;
        let csrf = form.field("csrf");
        let id = first_id(&app, "d1", "phq9").await;
        let action = format!("/fill_out/session/responses/{id}");
        let mut without = phq9_form("", "a1");
        without.remove(0);
        visitor
            .post_form(&action, &pairs(&without))
            .await
            .assert_message(403, "This form could not be accepted");
        visitor
            .post_form(&action, &pairs(&phq9_form("00", "a1")))
            .await
            .assert_message(403, "This form could not be accepted");
        // The interrupt_url's token went to the caller's progress page: it
        // posts no form.
        visitor
            .post_form(&action, &pairs(&phq9_form(&interrupt_token, "a1")))
            .await
            .assert_message(403, "This form could not be accepted");
        // Another session's token does not do either.
        let (_, other_form) = open(&app, &start_blank(&app, "d1", &["phq9"]).await).await;
        let theirs = other_form.field("csrf");
        assert_ne!(theirs, csrf);
        visitor
            .post_form(&action, &pairs(&phq9_form(&theirs, "a1")))
            .await
            .assert_message(403, "This form could not be accepted");
        // Nor does the form's token interrupt.
        for token in [theirs.as_str(), csrf.as_str(), ""] {
            visitor
                .get(&format!("/fill_out/session/interrupt?token={token}"))
                .await
                .assert_message(403, "This form could not be accepted");
        }
        assert_eq!(stored(&app, "d1", "phq9").await[0]["status"], "open");
        // Its own link works.
        let left = visitor.go(&interrupt_url).await;
        assert_eq!(left.location(), format!("{EPD}/back"));
        assert_eq!(stored(&app, "d1", "phq9").await[0]["status"], "aborted");
    }
);

db_test!(
    async fn a_form_sent_twice_counts_once_and_moves_on(app: spawn_with_epd) {
        let (mut visitor, form) =
            open(&app, &start_blank(&app, "d1", &["phq9", "gad7"]).await).await;
        let csrf = form.field("csrf");
        let phq9 = first_id(&app, "d1", "phq9").await;
        let action = format!("/fill_out/session/responses/{phq9}");
        // Another host, whose clock runs a minute behind, answers this one.
        app.clock.advance(Duration::minutes(-1));
        let first = visitor
            .post_form(&action, &pairs(&phq9_form(&csrf, "a1")))
            .await;
        assert_eq!(first.status, 303, "{}", first.text);
        let completed = stored(&app, "d1", "phq9").await.remove(0);
        assert_eq!(completed["status"], "completed");
        // Sent again with other answers (the back button, then changes):
        // not stored, and the respondent is told so; the first answers stay.
        app.clock.advance(Duration::minutes(2));
        let changed = visitor
            .post_form(&action, &pairs(&phq9_form(&csrf, "a3")))
            .await;
        changed.assert_message(409, "This questionnaire was completed already");
        // The double click (the same answers): on to what is next.
        let second = visitor
            .post_form(&action, &pairs(&phq9_form(&csrf, "a1")))
            .await;
        assert_eq!(second.status, 303, "{}", second.text);
        assert_eq!(second.location(), "/fill_out/session");
        let next = visitor.follow(second).await;
        assert!(next.text.contains("<h1>GAD-7</h1>"), "{}", next.text);
        assert_eq!(stored(&app, "d1", "phq9").await.remove(0), completed);
        // The back button to the completed page goes on too.
        let back = visitor.get(&action).await;
        assert_eq!(back.location(), "/fill_out/session");
    }
);

db_test!(
    async fn a_reloaded_link_keeps_its_browser_in_and_no_other(app: spawn_with_epd) {
        let link = start_blank(&app, "d1", &["phq9"]).await;
        let (mut visitor, form) = open(&app, &link).await;
        assert_eq!(form.status, 200, "{}", form.text);
        let reload = visitor.log_in(&link).await;
        assert_eq!(reload.status, 303, "{}", reload.text);
        assert_eq!(reload.location(), "/fill_out/session");
        assert!(reload.header("set-cookie").is_empty(), "the same session");
        // Another browser, or this one after the session ended, is refused.
        Visitor::new(&app)
            .log_in(&link)
            .await
            .assert_message(403, "This link has been used already");
        let id = first_id(&app, "d1", "phq9").await;
        let csrf = form.field("csrf");
        let cookie = visitor.cookie.clone();
        let left = visitor
            .post_form(
                &format!("/fill_out/session/responses/{id}"),
                &[("csrf", csrf.as_str()), ("action", "interrupt")],
            )
            .await;
        assert_eq!(left.status, 303, "{}", left.text);
        // The ended session's cookie, kept, does not bring it back.
        let mut ended = Visitor::new(&app);
        ended.cookie = cookie;
        ended
            .log_in(&link)
            .await
            .assert_message(403, "This link has been used already");
    }
);

db_test!(
    async fn a_link_used_twice_at_once_logs_in_once(app: spawn_with_epd) {
        let link = start_blank(&app, "d1", &["phq9", "gad7"]).await;
        let (mut a, mut b) = (Visitor::new(&app), Visitor::new(&app));
        let (a, b) = tokio::join!(a.log_in(&link), b.log_in(&link));
        let mut statuses = [a.status, b.status];
        statuses.sort_unstable();
        assert_eq!(statuses, [303, 403], "{} / {}", a.text, b.text);
        // One set of responses was prepared.
        assert_eq!(
            app.get(&responses("d1"))
                .await
                .body
                .as_array()
                .map(Vec::len),
            Some(2)
        );
    }
);

db_test!(
    async fn a_session_reaches_only_its_own_responses(app: spawn_with_epd) {
        let foreign = prepare(&app, "d2", "phq9", None, None).await;
        let own_other = prepare(&app, "d1", "gad7", None, None).await;
        let (mut visitor, form) = open(&app, &start_blank(&app, "d1", &["phq9"]).await).await;
        let csrf = form.field("csrf");
        for id in [
            foreign.to_string(),
            own_other.to_string(),
            "x".to_owned(),
            "-1".to_owned(),
            "99999999999999999999".to_owned(),
        ] {
            let path = format!("/fill_out/session/responses/{id}");
            visitor
                .get(&path)
                .await
                .assert_message(404, "This questionnaire is not available");
            visitor
                .post_form(&path, &pairs(&phq9_form(&csrf, "a1")))
                .await
                .assert_message(404, "This questionnaire is not available");
        }
        assert_eq!(stored(&app, "d2", "phq9").await[0]["status"], "open");
        assert_eq!(stored(&app, "d1", "gad7").await[0]["status"], "open");
        // Without a cookie, or with a made-up one, nothing at all.
        let mut stranger = Visitor::new(&app);
        let path = format!("/fill_out/session/responses/{foreign}");
        stranger
            .get(&path)
            .await
            .assert_message(403, "Your session has ended");
        stranger.cookie = Some("made-up".to_owned());
        stranger
            .get(&path)
            .await
            .assert_message(403, "Your session has ended");
        stranger
            .get("/fill_out/session")
            .await
            .assert_message(403, "Your session has ended");
    }
);

db_test!(
    async fn a_completing_url_opens_every_open_response_of_the_respondent(app: spawn_with_epd) {
        let first = prepare(&app, "d1", "gad7", None, Some(Duration::days(7))).await;
        let later = prepare(
            &app,
            "d1",
            "phq9",
            Some(Duration::days(1)),
            Some(Duration::days(8)),
        )
        .await;
        let list = app.get(&responses("d1")).await.body;
        let link = list[0]["completing_url"]
            .as_str()
            .expect("a link")
            .to_owned();
        assert_eq!(
            list[1]["completing_url"],
            json!(link),
            "one link per respondent"
        );
        assert_eq!(list[1]["status"], "scheduled");
        // Tampered, or another respondent's id with this token: refused.
        let respondent = list[0]["respondent_id"].as_i64().expect("an id");
        for bad in [
            link.replace("token=", "token=0"),
            link.replace(
                &format!("/respondents/{respondent}?"),
                &format!("/respondents/{}?", respondent + 1),
            ),
            format!("{}/fill_out/respondents/{respondent}", app.base),
            format!("{}/fill_out/respondents/x?token=00", app.base),
        ] {
            Visitor::new(&app)
                .get(&bad)
                .await
                .assert_message(403, "This link does not work");
        }
        // The link works again and again; only the open one is offered.
        let (mut visitor, form) = open(&app, &link).await;
        assert!(form.text.contains("<h1>GAD-7</h1>"), "{}", form.text);
        assert!(form.text.contains("Questionnaire 1 of 1"));
        let csrf = form.field("csrf");
        let mut fields = vec![
            ("csrf".to_owned(), csrf),
            ("action".to_owned(), "submit".to_owned()),
        ];
        fields.extend((1..=7).map(|n| (format!("v_{n}"), "a1".to_owned())));
        let done = visitor
            .post_form(
                &format!("/fill_out/session/responses/{first}"),
                &pairs(&fields),
            )
            .await;
        let end = visitor.follow(done).await;
        assert_eq!(end.status, 200);
        assert!(end.text.contains("<h1>Thank you</h1>"), "{}", end.text);
        assert_eq!(stored(&app, "d1", "gad7").await[0]["status"], "completed");
        // Nothing open now: the link says so.
        let page = Visitor::new(&app).log_in(&link).await;
        page.assert_message(200, "There is nothing to fill out now");
        // A day later the PHQ-9 opens; stopping there ends on our own page.
        app.clock.advance(Duration::days(1));
        let (mut visitor, form) = open(&app, &link).await;
        assert!(form.text.contains("<h1>PHQ-9</h1>"));
        let csrf = form.field("csrf");
        let left = visitor
            .post_form(
                &format!("/fill_out/session/responses/{later}"),
                &[
                    ("csrf", csrf.as_str()),
                    ("action", "interrupt"),
                    ("v_1", "a2"),
                ],
            )
            .await;
        assert_eq!(left.location(), "/fill_out/paused");
        visitor
            .get("/fill_out/paused")
            .await
            .assert_message(200, "You can continue later with the same link.");
        // Resuming through the same link shows the answer given.
        let (_, form) = open(&app, &link).await;
        assert!(form.is_checked("v_1", "a2"), "{}", form.text);
    }
);

db_test!(
    async fn flags_hide_questions_and_textvars_fill_texts(app: spawn_with_epd) {
        let mut flags = Map::new();
        flags.insert("phq8".to_owned(), json!(true));
        let mut textvars = Map::new();
        textvars.insert("period".to_owned(), json!("30 days"));
        let id = |key: &str| -> QuestionnaireId { questionnaire_id(&app, key) };
        prepare_items(
            &app,
            "d1",
            vec![
                Preparation {
                    questionnaire_id: id("phq9"),
                    flags,
                    ..Preparation::default()
                },
                Preparation {
                    questionnaire_id: id("k10"),
                    textvars,
                    ..Preparation::default()
                },
            ],
        )
        .await;
        let link = app.get(&responses("d1")).await.body[0]["completing_url"]
            .as_str()
            .expect("a link")
            .to_owned();
        let (mut visitor, form) = open(&app, &link).await;
        assert!(form.text.contains("<h1>PHQ-9</h1>"));
        assert!(
            !form.text.contains("q-v_9"),
            "item 9 is hidden in the PHQ-8"
        );
        assert!(form.text.contains("q-v_8"));
        let csrf = form.field("csrf");
        let phq9 = first_id(&app, "d1", "phq9").await;
        // All shown questions answered: complete, although item 9 is not;
        // an answer to it anyway is not kept.
        let mut fields = phq9_form(&csrf, "a1");
        fields.retain(|(k, _)| k != "v_9");
        fields.push(("v_9".to_owned(), "a3".to_owned()));
        let done = visitor
            .post_form(
                &format!("/fill_out/session/responses/{phq9}"),
                &pairs(&fields),
            )
            .await;
        assert_eq!(done.status, 303, "{}", done.text);
        let stored_phq9 = stored(&app, "d1", "phq9").await.remove(0);
        assert_eq!(stored_phq9["values"]["v_9"], Value::Null);
        assert_eq!(
            stored_phq9["outcome"]["scores"]["total"]["value"],
            json!(8.0),
            "{stored_phq9}"
        );
        let k10 = visitor.go("/fill_out/session").await;
        assert!(k10.text.contains("over the past 30 days"), "{}", k10.text);
        // In Dutch, the K10 speaks Dutch (it has a Dutch text); the
        // response's textvar is used as given.
        visitor.accept_language = Some("nl");
        let dutch = visitor.go("/fill_out/session").await;
        assert!(dutch.text.contains("<html lang=\"nl\">"), "{}", dutch.text);
        assert!(
            dutch.text.contains("in de afgelopen 30 days"),
            "{}",
            dutch.text
        );
        assert!(dutch.text.contains(">Antwoorden versturen</button>"));
    }
);

db_test!(
    async fn a_session_ends_when_left_alone(app: spawn_with_epd) {
        let (mut visitor, form) =
            open(&app, &start_blank(&app, "d1", &["phq9", "gad7"]).await).await;
        let csrf = form.field("csrf");
        let id = first_id(&app, "d1", "phq9").await;
        // Activity keeps it going...
        app.clock.advance(Duration::minutes(90));
        let done = visitor
            .post_form(
                &format!("/fill_out/session/responses/{id}"),
                &pairs(&phq9_form(&csrf, "a0")),
            )
            .await;
        assert_eq!(done.status, 303, "{}", done.text);
        // ... and so does reading a page (the respondent takes their time
        // over the GAD-7).
        app.clock.advance(Duration::minutes(90));
        let next = visitor.get("/fill_out/session").await;
        assert_eq!(next.status, 303);
        app.clock.advance(Duration::minutes(90));
        let form = visitor.follow(next).await;
        assert!(form.text.contains("<h1>GAD-7</h1>"), "{}", form.text);
        // ... two idle hours end it.
        app.clock.advance(Duration::hours(2));
        visitor
            .get("/fill_out/session")
            .await
            .assert_message(403, "Your session has ended");
    }
);

db_test!(
    async fn hostile_form_input_gets_a_page_never_a_failure(app: spawn_with_epd) {
        let (mut visitor, form) = open(&app, &start_blank(&app, "d1", &["phq9"]).await).await;
        let csrf = form.field("csrf");
        let id = first_id(&app, "d1", "phq9").await;
        let action = format!("/fill_out/session/responses/{id}");
        // Too large.
        let mut big = format!("csrf={csrf}&v_1=").into_bytes();
        big.extend(std::iter::repeat_n(b'a', 70 * 1024));
        visitor
            .post_raw(&action, big)
            .await
            .assert_message(413, "This form was too large");
        // Not UTF-8, not an option, not a question: sent back, nothing stored.
        let mut odd =
            format!("csrf={csrf}&action=submit&v_1=%FF%FE&v_2=a9&v_99=a1&v_3[]=a1&").into_bytes();
        odd.extend([0xff, 0xfe, b'=', 0x80]);
        let back = visitor.post_raw(&action, odd).await;
        assert_eq!(back.status, 422, "{}", back.text);
        assert!(
            back.text
                .contains("<p class=\"error\" id=\"e-v_1\">Please choose one of the answers.</p>")
        );
        assert!(
            back.text
                .contains("<p class=\"error\" id=\"e-v_2\">Please choose one of the answers.</p>")
        );
        assert!(
            back.text
                .contains("<p class=\"error\" id=\"e-v_3\">Please answer this question.</p>")
        );
        // Script in a value comes back escaped, if at all.
        let back = visitor
            .post_form(
                &action,
                &[("csrf", &csrf), ("v_1", "<script>alert(1)</script>")],
            )
            .await;
        assert_eq!(back.status, 422);
        assert!(!back.text.contains("<script>"));
        // An unknown action is a submit; an empty body has no token.
        let back = visitor
            .post_form(&action, &[("csrf", &csrf), ("action", "delete")])
            .await;
        assert_eq!(back.status, 422);
        visitor
            .post_raw(&action, Vec::new())
            .await
            .assert_message(403, "This form could not be accepted");
        assert_eq!(stored(&app, "d1", "phq9").await[0]["status"], "open");
        // Unknown pages and methods get pages too.
        visitor
            .get("/fill_out/nothing/here")
            .await
            .assert_message(404, "This questionnaire is not available");
        visitor
            .post_form("/fill_out/session", &[])
            .await
            .assert_message(405, "This form could not be accepted");
        // A long cookie is no cookie.
        visitor.cookie = Some("c".repeat(5000));
        visitor
            .get("/fill_out/session")
            .await
            .assert_message(403, "Your session has ended");
    }
);

db_test!(
    async fn logins_and_submissions_are_in_the_access_log(app: spawn_with_epd) {
        let (mut visitor, form) = open(&app, &start_blank(&app, "d1", &["phq9"]).await).await;
        let csrf = form.field("csrf");
        let id = first_id(&app, "d1", "phq9").await;
        let done = visitor
            .post_form(
                &format!("/fill_out/session/responses/{id}"),
                &pairs(&phq9_form(&csrf, "a0")),
            )
            .await;
        assert_eq!(done.status, 303);
        let log = app
            .state
            .store()
            .access_log(Some("d1"), None)
            .await
            .expect("the log");
        let actions: Vec<(&str, u16, Option<&str>)> = log
            .iter()
            .map(|e| (e.action.as_str(), e.status, e.consumer_key.as_deref()))
            .collect();
        assert!(
            actions.contains(&("POST /fill_out/session/login", 303, None)),
            "{actions:?}"
        );
        assert!(
            actions.contains(&(
                format!("POST /fill_out/session/responses/{id}").as_str(),
                303,
                None
            )),
            "{actions:?}"
        );
        assert!(
            actions.contains(&(
                "POST /api/v1/dossiers/{dossier_id}/fill_out_sessions",
                200,
                Some("test")
            )),
            "{actions:?}"
        );
        // Showing the page was a read of the dossier.
        assert!(
            actions.contains(&(
                format!("GET /fill_out/session/responses/{id}").as_str(),
                200,
                None
            )),
            "{actions:?}"
        );
        // Refusals are logged too: a form without its token (with the
        // dossier), a tampered link and a replayed one.
        let link = start_blank(&app, "d1", &["gad7"]).await;
        let (mut visitor, _) = open(&app, &link).await;
        let refused = visitor
            .post_form(
                &format!("/fill_out/session/responses/{id}"),
                &pairs(&phq9_form("00", "a0")),
            )
            .await;
        assert_eq!(refused.status, 403);
        Visitor::new(&app).log_in(&link).await;
        Visitor::new(&app)
            .get(&format!("{link}0"))
            .await
            .assert_message(403, "This link does not work");
        // A link that does not work is counted, written within the minute.
        app.state.flush_refusals().await;
        let log = app
            .state
            .store()
            .access_log(None, None)
            .await
            .expect("the log");
        let rows: Vec<(&str, u16, Option<&str>)> = log
            .iter()
            .map(|e| (e.action.as_str(), e.status, e.dossier.as_deref()))
            .collect();
        for row in [
            ("POST /fill_out/session/responses/{id}", 403, Some("d1")),
            ("POST /fill_out/session/login", 403, Some("d1")),
            ("GET /fill_out/session/login", 403, None),
        ] {
            assert!(rows.contains(&row), "{row:?} in {rows:?}");
        }
    }
);
