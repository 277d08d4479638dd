//! The fill-out pages of a questionnaire of every question type and four
//! pages (tests/fixtures/fillout/steps, with a Dutch test overlay), over
//! HTTP: each type as its controls and read back as the API reads it,
//! wrong answers named next to their question with the API's rules, Back
//! and Next keeping what was entered, progress, questions and pages that
//! appear and disappear with earlier answers (a condition on the same page
//! shows the page again), answers to questions no longer enabled dropped,
//! resuming at the page where the respondent stopped, and the language
//! asked by a session or a fill-out request.

use host::domain::questionnaire::sha256_hex;
use serde_json::Value;
use tests::{Db, TestApp, db_test, json};

use crate::fill_out_sessions::EPD;
use crate::support::*;
use crate::visitor::{Page, Visitor, start};

/// The host with the questionnaire `steps` and [`EPD`] allowed.
pub async fn spawn_steps(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        config.questionnaires_dir = tests::repo_root().join("tests/fixtures/fillout");
        config.protocols_dir = config.data_dir.join("no-protocols");
        config.allowed_origins = vec![EPD.to_owned()];
    })
    .await
}

/// The stored `steps` response of the dossier, over the API.
pub async fn stored_steps(app: &TestApp, dossier: &str) -> Value {
    app.get(&responses(dossier))
        .await
        .body
        .as_array()
        .and_then(|list| {
            list.iter()
                .find(|r| r["questionnaire_key"] == "steps")
                .cloned()
        })
        .unwrap_or_else(|| panic!("a steps response in {dossier}"))
}

/// A browser logged in with a session on `steps` (plus `body`'s fields),
/// on the first page.
async fn open_steps<'a>(
    app: &'a TestApp,
    dossier: &str,
    extra: Value,
    accept_language: Option<&'static str>,
) -> (Visitor<'a>, Page) {
    let mut body = json!({"questionnaire_keys": ["steps"], "return_to": format!("{EPD}/back")});
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    let link = start(app, dossier, body).await;
    let mut visitor = Visitor::new(app);
    visitor.accept_language = accept_language;
    let login = visitor.log_in(&link).await;
    assert_eq!(login.status, 303, "{}", login.text);
    let page = visitor.follow(login).await;
    assert_eq!(page.status, 200, "{}", page.text);
    (visitor, page)
}

/// The form's action (the response's page).
fn action_of(page: &Page) -> String {
    let marker = "<form method=\"post\" novalidate action=\"";
    let start = page.text.find(marker).expect("a form") + marker.len();
    let end = page.text[start..].find('"').expect("a quote");
    page.text[start..start + end].to_owned()
}

/// Sends `page` with `action` (`submit`, `back`, `interrupt`) and these
/// fields, as its form does: its CSRF token, page and the questions it
/// showed.
async fn send(
    visitor: &mut Visitor<'_>,
    page: &Page,
    action: &str,
    fields: &[(&str, &str)],
) -> Page {
    let (csrf, number, shown) = (page.field("csrf"), page.field("page"), page.field("shown"));
    let mut all = vec![
        ("csrf", csrf.as_str()),
        ("page", number.as_str()),
        ("shown", shown.as_str()),
        ("action", action),
    ];
    all.extend_from_slice(fields);
    visitor.post_form(&action_of(page), &all).await
}

/// Sends the page and follows to the next one within the app.
async fn next(visitor: &mut Visitor<'_>, page: &Page, fields: &[(&str, &str)]) -> Page {
    let sent = send(visitor, page, "submit", fields).await;
    assert_eq!(sent.status, 303, "{}", sent.text);
    visitor.follow(sent).await
}

db_test!(
    async fn every_type_is_a_labelled_control_and_reads_back_as_the_api_would(app: spawn_steps) {
        let (mut visitor, first) = open_steps(&app, "d1", json!({}), None).await;
        let text = &first.text;
        // Without "Yes" on v_1 the second page is not shown: 1 of 3.
        assert!(
            text.contains("Questionnaire 1 of 1 · Page 1 of 3"),
            "{text}"
        );
        assert!(
            text.contains("<h2 class=\"page-title\">About you</h2>"),
            "{text}"
        );
        assert!(
            text.contains("<p class=\"description\">Test texts for you</p>"),
            "{text}"
        );
        // A display item: its paragraphs, no number, no control.
        assert!(text.contains(
            "<div class=\"display\">\n<p>Please answer what applies to you.</p>\n<p>There are no right or wrong answers.</p>\n</div>"
        ), "{text}");
        assert!(
            text.contains(
                "<fieldset id=\"q-v_1\">\n<legend><span class=\"number\">1.</span> Any complaints?"
            ),
            "{text}"
        );
        assert!(
            text.contains("<input type=\"checkbox\" name=\"v_2\" value=\"a1\">"),
            "{text}"
        );
        // "or" before the exclusive option.
        assert!(text.contains(
            "<p class=\"or\">or</p>\n<label><input type=\"checkbox\" name=\"v_2\" value=\"a9\"> <span>None of these</span></label>"
        ), "{text}");
        // v_3 waits for "Other".
        assert!(!text.contains("q-v_3"), "{text}");
        assert_eq!(first.field("shown"), "v_intro v_1 v_2");
        assert!(
            !text.contains("value=\"back\""),
            "no Back on the first page"
        );

        let second = next(
            &mut visitor,
            &first,
            &[("v_1", "a1"), ("v_2", "a1"), ("v_2", "a2")],
        )
        .await;
        let text = &second.text;
        assert!(text.contains("Page 2 of 4"), "{text}");
        assert!(text.contains(">Back</button>"), "{text}");
        // The slider: a radio button per step, none chosen, the anchors
        // describing the ends.
        for n in 0..=10 {
            assert!(
                text.contains(&format!("name=\"v_4\" value=\"{n}\"")),
                "{n} in {text}"
            );
        }
        assert!(!text.contains("name=\"v_4\" value=\"5\" checked"));
        assert!(
            text.contains(
                "<span id=\"lo-v_4\">Very bad</span> <span id=\"hi-v_4\">Very good</span>"
            ),
            "{text}"
        );
        assert!(
            text.contains("value=\"0\" aria-describedby=\"lo-v_4\""),
            "{text}"
        );
        assert!(
            text.contains("value=\"10\" aria-describedby=\"hi-v_4\""),
            "{text}"
        );
        assert!(
            text.contains("<p class=\"hint\" id=\"h-v_4\">Choose a number from 0 to 10.</p>"),
            "{text}"
        );
        // Numbers: a text field with its range as hint and its unit.
        assert!(text.contains("<label class=\"title\" for=\"q-v_5\"><span class=\"number\">4.</span> Drinks per week"), "{text}");
        assert!(
            text.contains("<p class=\"hint\" id=\"h-v_5\">A whole number from 0 to 100</p>"),
            "{text}"
        );
        assert!(text.contains("inputmode=\"numeric\" id=\"q-v_5\" name=\"v_5\" aria-describedby=\"h-v_5 u-v_5\" value=\"\"> <span class=\"unit\" id=\"u-v_5\">drinks</span>"), "{text}");
        assert!(
            text.contains("inputmode=\"decimal\" id=\"q-v_6\""),
            "{text}"
        );

        let third = next(
            &mut visitor,
            &second,
            &[("v_4", "7"), ("v_5", "14"), ("v_6", "7,5")],
        )
        .await;
        let text = &third.text;
        assert!(text.contains("Page 3 of 4"), "{text}");
        // Dates in parts, as much as each asks for.
        for field in [
            "v_7.day",
            "v_7.month",
            "v_7.year",
            "v_8.month",
            "v_8.year",
            "v_9.year",
        ] {
            assert!(
                text.contains(&format!("name=\"{field}\"")),
                "{field} in {text}"
            );
        }
        assert!(!text.contains("name=\"v_8.day\"") && !text.contains("name=\"v_9.month\""));
        assert!(
            text.contains("<label for=\"q-v_7-first\">Day</label>"),
            "{text}"
        );
        // A drop-down, nothing chosen.
        assert!(
            text.contains(
                "<select id=\"q-v_10\" name=\"v_10\">\n<option value=\"\">Choose an answer</option>"
            ),
            "{text}"
        );

        let fourth = next(
            &mut visitor,
            &third,
            &[
                ("v_7.day", "7"),
                ("v_7.month", "5"),
                ("v_7.year", "2024"),
                ("v_8.month", "11"),
                ("v_8.year", "1999"),
                ("v_9.year", "1987"),
                ("v_10", "a2"),
            ],
        )
        .await;
        let text = &fourth.text;
        assert!(text.contains("Page 4 of 4"), "{text}");
        assert!(text.contains("<textarea rows=\"5\" id=\"q-v_11\" name=\"v_11\" aria-describedby=\"h-v_11\" maxlength=\"30\"></textarea>"), "{text}");
        assert!(
            text.contains("<p class=\"hint\" id=\"h-v_11\">At most 30 characters</p>"),
            "{text}"
        );
        // The chain: v_3 was not asked, so neither is v_12.
        assert!(!text.contains("q-v_12"), "{text}");
        assert!(text.contains(">Send answers</button>"), "{text}");

        let done = send(&mut visitor, &fourth, "submit", &[("v_11", "fine\nthanks")]).await;
        assert_eq!(done.status, 303, "{}", done.text);
        assert_eq!(done.location(), "/fill_out/session");
        let steps = stored_steps(&app, "d1").await;
        assert_eq!(steps["status"], "completed");
        assert_eq!(
            steps["values"],
            json!({"v_1": "a1", "v_2": ["a1", "a2"], "v_3": null, "v_4": 7, "v_5": 14, "v_6": 7.5,
                   "v_7": "2024-05-07", "v_8": "1999-11", "v_9": "1987", "v_10": "a2",
                   "v_11": "fine\nthanks", "v_12": null})
        );
        assert_eq!(steps["language"], "en");
        let recorded = app
            .sql_strings("SELECT COALESCE(translation_sha256, '-') FROM responses")
            .await;
        assert_eq!(recorded, ["-"], "the definition's own texts");
    }
);

db_test!(
    async fn wrong_answers_are_named_next_to_their_question_by_the_api_s_rules(app: spawn_steps) {
        let (mut visitor, first) = open_steps(&app, "d1", json!({}), None).await;
        // No answer to v_1; "None of these" with another: the server says no.
        let back = send(
            &mut visitor,
            &first,
            "submit",
            &[("v_2", "a1"), ("v_2", "a9")],
        )
        .await;
        assert_eq!(back.status, 422, "{}", back.text);
        let text = &back.text;
        assert!(text.contains("role=\"alert\""), "{text}");
        assert!(
            text.contains("<li><a href=\"#q-v_1\">1. Any complaints?</a></li>"),
            "{text}"
        );
        assert!(
            text.contains("<li><a href=\"#q-v_2\">2. Which of these bother you?</a></li>"),
            "{text}"
        );
        assert!(
            text.contains("<fieldset id=\"q-v_1\" class=\"invalid\" aria-describedby=\"e-v_1\">"),
            "{text}"
        );
        assert!(
            text.contains("<p class=\"error\" id=\"e-v_1\">Please answer this question.</p>"),
            "{text}"
        );
        assert!(text.contains(
            "<p class=\"error\" id=\"e-v_2\">Tick \u{201c}None of these\u{201d} on its own, or other answers without it.</p>"
        ), "{text}");
        // What was ticked stays ticked.
        assert!(back.is_checked("v_2", "a1") && back.is_checked("v_2", "a9"));

        let second = next(&mut visitor, &back, &[("v_1", "a1"), ("v_2", "a9")]).await;
        // A number off the scale, a fraction, a number out of range.
        let wrong = send(
            &mut visitor,
            &second,
            "submit",
            &[("v_4", "11"), ("v_5", "2.5"), ("v_6", "25")],
        )
        .await;
        assert_eq!(wrong.status, 422, "{}", wrong.text);
        let text = &wrong.text;
        assert!(
            text.contains("<p class=\"error\" id=\"e-v_4\">Enter a number from 0 to 10.</p>"),
            "{text}"
        );
        assert!(
            text.contains(
                "<p class=\"error\" id=\"e-v_5\">Enter a whole number, without a decimal point.</p>"
            ),
            "{text}"
        );
        assert!(
            text.contains("<p class=\"error\" id=\"e-v_6\">Enter a number from 0 to 24.</p>"),
            "{text}"
        );
        // The control says what describes it and that it is wrong; what
        // was typed is there to correct.
        assert!(text.contains("id=\"q-v_5\" name=\"v_5\" aria-describedby=\"h-v_5 e-v_5 u-v_5\" aria-invalid=\"true\" value=\"2.5\""), "{text}");
        assert!(text.contains("<li><a href=\"#q-v_5\">"), "{text}");
        // The slider left untouched: unanswered.
        let untouched = send(&mut visitor, &second, "submit", &[("v_5", "3")]).await;
        assert_eq!(untouched.status, 422, "{}", untouched.text);
        assert!(
            untouched
                .text
                .contains("<p class=\"error\" id=\"e-v_4\">Please answer this question.</p>")
        );
        assert!(!untouched.text.contains("id=\"e-v_5\""));

        let third = next(&mut visitor, &second, &[("v_4", "0"), ("v_5", "3")]).await;
        let wrong = send(
            &mut visitor,
            &third,
            "submit",
            &[
                ("v_7.day", "31"),
                ("v_7.month", "2"),
                ("v_7.year", "2024"),
                ("v_8.month", "13"),
                ("v_8.year", "2024"),
                ("v_9.year", "87"),
                ("v_10", "a7"),
            ],
        )
        .await;
        assert_eq!(wrong.status, 422, "{}", wrong.text);
        let text = &wrong.text;
        assert!(
            text.contains(
                "id=\"e-v_7\">Enter a date that exists: day, month and year (four digits).</p>"
            ),
            "{text}"
        );
        assert!(
            text.contains("id=\"e-v_8\">Enter a month from 1 to 12 and a year of four digits.</p>"),
            "{text}"
        );
        assert!(
            text.contains("id=\"e-v_9\">Enter a year of four digits.</p>"),
            "{text}"
        );
        assert!(
            text.contains("id=\"e-v_10\">Please choose one of the answers.</p>"),
            "{text}"
        );
        // A date's link goes to its first part.
        assert!(text.contains("<li><a href=\"#q-v_7-first\">"), "{text}");
        assert!(
            text.contains("name=\"v_7.day\" class=\"two\" maxlength=\"2\" value=\"31\""),
            "{text}"
        );

        let fourth = next(
            &mut visitor,
            &third,
            &[("v_7.day", "29"), ("v_7.month", "2"), ("v_7.year", "2024")],
        )
        .await;
        let long = "x".repeat(31);
        let wrong = send(&mut visitor, &fourth, "submit", &[("v_11", &long)]).await;
        assert_eq!(wrong.status, 422, "{}", wrong.text);
        assert!(
            wrong
                .text
                .contains("id=\"e-v_11\">Use at most 30 characters.</p>"),
            "{}",
            wrong.text
        );
        assert_eq!(
            stored_steps(&app, "d1").await["status"],
            "open",
            "nothing completed"
        );
        // A form that names a page that is not there, and garbage for the
        // questions shown: the page where the respondent is, again (its
        // question was not among those shown).
        let csrf = fourth.field("csrf");
        let odd = visitor
            .post_form(
                &action_of(&fourth),
                &[
                    ("csrf", &csrf),
                    ("page", "999"),
                    ("shown", "v_99 \u{0}"),
                    ("v_11", "ok"),
                ],
            )
            .await;
        assert_eq!(odd.status, 200, "{}", odd.text);
        assert!(
            odd.text.contains("Page 4 of 4") && odd.text.contains("role=\"status\""),
            "{}",
            odd.text
        );
        // Forms that name no page they can: the page where the respondent
        // is; sent twice, completed once.
        for page in ["-1", "x"] {
            let sent = visitor
                .post_form(
                    &action_of(&fourth),
                    &[("csrf", &csrf), ("page", page), ("v_11", "ok")],
                )
                .await;
            assert_eq!(sent.status, 303, "{page}: {}", sent.text);
        }
        let steps = stored_steps(&app, "d1").await;
        assert_eq!(steps["status"], "completed");
        assert_eq!(steps["values"]["v_2"], json!(["a9"]));
        assert_eq!(steps["values"]["v_7"], "2024-02-29");
        assert_eq!(steps["values"]["v_11"], "ok");
    }
);

db_test!(
    async fn back_keeps_what_was_entered_and_next_shows_it_again(app: spawn_steps) {
        let (mut visitor, first) = open_steps(&app, "d1", json!({}), None).await;
        let second = next(&mut visitor, &first, &[("v_1", "a1")]).await;
        // Half of page 2, then Back: nothing asked for, what was entered kept.
        let back = send(
            &mut visitor,
            &second,
            "back",
            &[("v_5", "3"), ("v_6", "seven")],
        )
        .await;
        assert_eq!(back.status, 303, "{}", back.text);
        let first = visitor.follow(back).await;
        assert!(first.text.contains("Page 1 of 4"), "{}", first.text);
        assert!(first.is_checked("v_1", "a1"));
        let second = next(&mut visitor, &first, &[("v_1", "a1")]).await;
        assert!(second.text.contains("Page 2 of 4"), "{}", second.text);
        assert!(
            second
                .text
                .contains("name=\"v_5\" aria-describedby=\"h-v_5 u-v_5\" value=\"3\""),
            "{}",
            second.text
        );
        // What could not be read was not kept.
        assert!(
            second
                .text
                .contains("name=\"v_6\" aria-describedby=\"h-v_6 u-v_6\" value=\"\""),
            "{}",
            second.text
        );
        // Reloading shows the same page.
        let again = visitor.get(&action_of(&second)).await;
        assert!(again.text.contains("Page 2 of 4"), "{}", again.text);
        // The same page sent twice (a double click) lands on the same page.
        let third = next(&mut visitor, &second, &[("v_4", "4"), ("v_5", "3")]).await;
        let twice = next(&mut visitor, &second, &[("v_4", "4"), ("v_5", "3")]).await;
        assert!(third.text.contains("Page 3 of 4") && twice.text.contains("Page 3 of 4"));
    }
);

db_test!(
    async fn questions_and_pages_appear_and_disappear_with_earlier_answers(app: spawn_steps) {
        let (mut visitor, first) = open_steps(&app, "d1", json!({}), None).await;
        // "Other" ticked: v_3, on the same page, comes to be asked; the page
        // comes back with it (no script could show it), nothing missing.
        let again = send(
            &mut visitor,
            &first,
            "submit",
            &[("v_1", "a1"), ("v_2", "a3")],
        )
        .await;
        assert_eq!(again.status, 200, "{}", again.text);
        let text = &again.text;
        assert!(text.contains("<div class=\"notice\" role=\"status\">\n<h2>There are more questions on this page</h2>"), "{text}");
        assert!(text.contains("<div class=\"question new\">\n<label class=\"title\" for=\"q-v_3\"><span class=\"number\">3.</span> Other, namely <span class=\"required\""), "{text}");
        assert!(
            text.contains("<span class=\"tag\" lang=\"en\">new</span>"),
            "{text}"
        );
        assert!(!text.contains("role=\"alert\""), "{text}");
        assert!(again.is_checked("v_1", "a1") && again.is_checked("v_2", "a3"));
        assert_eq!(again.field("shown"), "v_intro v_1 v_2 v_3");
        // Sent again without it: now it is missing.
        let missing = send(
            &mut visitor,
            &again,
            "submit",
            &[("v_1", "a1"), ("v_2", "a3")],
        )
        .await;
        assert_eq!(missing.status, 422, "{}", missing.text);
        assert!(
            missing
                .text
                .contains("id=\"e-v_3\">Please answer this question.</p>")
        );
        let second = next(
            &mut visitor,
            &again,
            &[("v_1", "a1"), ("v_2", "a3"), ("v_3", "back pain")],
        )
        .await;
        let third = next(&mut visitor, &second, &[("v_4", "2"), ("v_5", "0")]).await;
        let fourth = next(
            &mut visitor,
            &third,
            &[("v_7.day", "1"), ("v_7.month", "1"), ("v_7.year", "2025")],
        )
        .await;
        // The chain: v_3 answered, so v_12 is asked.
        assert!(fourth.text.contains("q-v_12"), "{}", fourth.text);

        // Back to the first page; "No" complaints and "Other" unticked.
        let mut page = fourth;
        for expected in ["Page 3 of 4", "Page 2 of 4", "Page 1 of 4"] {
            let back = send(&mut visitor, &page, "back", &[]).await;
            page = visitor.follow(back).await;
            assert!(page.text.contains(expected), "{expected}: {}", page.text);
        }
        assert!(page.text.contains("value=\"back pain\""), "{}", page.text);
        let shown = page.field("shown");
        assert_eq!(shown, "v_intro v_1 v_2 v_3");
        // v_3 goes with "Other" (it is not missing: not enabled any more),
        // and the second page with "No".
        let dates = next(
            &mut visitor,
            &page,
            &[("v_1", "a0"), ("v_2", "a1"), ("v_3", "back pain")],
        )
        .await;
        assert!(dates.text.contains("Page 2 of 3"), "{}", dates.text);
        assert!(
            dates.text.contains("<h2 class=\"page-title\">Dates</h2>"),
            "{}",
            dates.text
        );
        let last = next(
            &mut visitor,
            &dates,
            &[("v_7.day", "1"), ("v_7.month", "1"), ("v_7.year", "2025")],
        )
        .await;
        assert!(last.text.contains("Page 3 of 3"), "{}", last.text);
        assert!(
            !last.text.contains("q-v_12"),
            "the chain follows: {}",
            last.text
        );
        // Back from the last page skips the page no longer shown.
        let back = send(&mut visitor, &last, "back", &[]).await;
        let dates = visitor.follow(back).await;
        assert!(dates.text.contains("Page 2 of 3"), "{}", dates.text);
        let last = next(
            &mut visitor,
            &dates,
            &[("v_7.day", "1"), ("v_7.month", "1"), ("v_7.year", "2025")],
        )
        .await;
        // An answer sent anyway to v_12 is not kept.
        let done = send(&mut visitor, &last, "submit", &[("v_12", "a1")]).await;
        assert_eq!(done.status, 303, "{}", done.text);
        let steps = stored_steps(&app, "d1").await;
        assert_eq!(steps["status"], "completed");
        assert_eq!(
            steps["values"],
            json!({"v_1": "a0", "v_2": ["a1"], "v_3": null, "v_4": null, "v_5": null, "v_6": null,
                   "v_7": "2025-01-01", "v_8": null, "v_9": null, "v_10": null, "v_11": null, "v_12": null})
        );
    }
);

db_test!(
    async fn a_respondent_resumes_at_the_page_where_they_stopped(app: spawn_steps) {
        let (mut visitor, first) = open_steps(&app, "d1", json!({}), None).await;
        let second = next(&mut visitor, &first, &[("v_1", "a1")]).await;
        let third = next(&mut visitor, &second, &[("v_4", "9"), ("v_5", "1")]).await;
        // Stop on page 3, with one of its answers given.
        let left = send(&mut visitor, &third, "interrupt", &[("v_9.year", "2001")]).await;
        assert_eq!(left.status, 303, "{}", left.text);
        assert_eq!(left.location(), format!("{EPD}/back"));
        let steps = stored_steps(&app, "d1").await;
        assert_eq!(steps["status"], "aborted");
        // A new session resumes it: on page 3, with its answer.
        let link = start(
            &app,
            "d1",
            json!({"response_ids": [steps["id"]], "return_to": format!("{EPD}/back")}),
        )
        .await;
        let mut visitor = Visitor::new(&app);
        let login = visitor.log_in(&link).await;
        let third = visitor.follow(login).await;
        assert!(third.text.contains("Page 3 of 4"), "{}", third.text);
        assert!(
            third
                .text
                .contains("name=\"v_9.year\" class=\"year\" maxlength=\"4\" value=\"2001\""),
            "{}",
            third.text
        );
        // And the pages before keep theirs.
        let back = send(&mut visitor, &third, "back", &[("v_9.year", "2001")]).await;
        let second = visitor.follow(back).await;
        assert!(second.is_checked("v_4", "9"), "{}", second.text);
        let third = next(&mut visitor, &second, &[("v_4", "9"), ("v_5", "1")]).await;
        // Closing the browser on page 4 (no Stop): the completing_url opens
        // page 4 in a new session.
        let fourth = next(
            &mut visitor,
            &third,
            &[
                ("v_7.day", "2"),
                ("v_7.month", "3"),
                ("v_7.year", "2020"),
                ("v_9.year", "2001"),
            ],
        )
        .await;
        assert!(fourth.text.contains("Page 4 of 4"));
        let steps = stored_steps(&app, "d1").await;
        // Aborted until completed, and fillable.
        assert_eq!(steps["status"], "aborted");
        let link = steps["completing_url"]
            .as_str()
            .expect("a completing_url")
            .to_owned();
        let mut other = Visitor::new(&app);
        let page = other.open(&link).await;
        assert!(page.text.contains("Page 4 of 4"), "{}", page.text);
        let done = send(&mut other, &page, "submit", &[]).await;
        assert_eq!(done.status, 303, "{}", done.text);
        let steps = stored_steps(&app, "d1").await;
        assert_eq!(steps["status"], "completed");
        assert_eq!(steps["values"]["v_4"], 9);
        assert_eq!(steps["values"]["v_7"], "2020-03-02");
        assert_eq!(steps["values"]["v_9"], "2001");
    }
);

db_test!(
    async fn the_language_asked_for_chooses_the_translation_and_is_recorded(app: spawn_steps) {
        // The session asks for Dutch; the browser would rather have English.
        let (mut visitor, first) =
            open_steps(&app, "d1", json!({"language": "nl"}), Some("en")).await;
        let text = &first.text;
        assert!(text.contains("<html lang=\"nl\">"), "{text}");
        assert!(text.contains("<h1>Stappen (test)</h1>"), "{text}");
        assert!(
            text.contains("Vragenlijst 1 van 1 · Pagina 1 van 3"),
            "{text}"
        );
        assert!(text.contains("Heeft u klachten? (test)"), "{text}");
        assert!(text.contains("<p class=\"or\">of</p>"), "{text}");
        let second = next(&mut visitor, &first, &[("v_1", "a1")]).await;
        assert!(
            second.text.contains("Heel slecht") && second.text.contains(">Vorige</button>"),
            "{}",
            second.text
        );
        assert!(
            second.text.contains("Een heel getal van 0 tot en met 100"),
            "{}",
            second.text
        );
        let wrong = send(
            &mut visitor,
            &second,
            "submit",
            &[("v_4", "3"), ("v_5", "1"), ("v_6", "30")],
        )
        .await;
        assert!(
            wrong.text.contains("Vul een getal in van 0 tot en met 24."),
            "{}",
            wrong.text
        );
        let third = next(
            &mut visitor,
            &second,
            &[("v_4", "3"), ("v_5", "1"), ("v_6", "6,5")],
        )
        .await;
        assert!(
            third
                .text
                .contains("<label for=\"q-v_7-first\">Dag</label>"),
            "{}",
            third.text
        );
        let fourth = next(
            &mut visitor,
            &third,
            &[("v_7.day", "2"), ("v_7.month", "3"), ("v_7.year", "2020")],
        )
        .await;
        let done = send(&mut visitor, &fourth, "submit", &[]).await;
        assert_eq!(done.status, 303, "{}", done.text);
        let steps = stored_steps(&app, "d1").await;
        assert_eq!(steps["language"], "nl");
        assert_eq!(steps["values"]["v_6"], 6.5);
        let overlay = std::fs::read(
            tests::repo_root().join("tests/fixtures/fillout/steps/translations/nl.toml"),
        )
        .expect("the overlay");
        let recorded = app
            .sql_strings("SELECT COALESCE(translation_sha256, '-') FROM responses ORDER BY id")
            .await;
        assert_eq!(recorded, [sha256_hex(&overlay)]);

        // No language asked: the browser's.
        let (_, dutch) = open_steps(&app, "d2", json!({}), Some("nl-NL,nl;q=0.9")).await;
        assert!(
            dutch.text.contains("Heeft u klachten? (test)"),
            "{}",
            dutch.text
        );
        // A language the questionnaire has no texts in: the browser's, then
        // the definition's.
        let (_, german) = open_steps(&app, "d3", json!({"language": "de"}), Some("en")).await;
        assert!(
            german.text.contains("<html lang=\"en\">") && german.text.contains("Any complaints?")
        );
        let (_, plain) = open_steps(&app, "d4", json!({"language": "de"}), None).await;
        assert!(plain.text.contains("Any complaints?"));

        // A fill-out request asks for Dutch: its completing_url opens Dutch
        // pages in an English browser.
        let asked = app
            .post(
                "/api/v1/dossiers/d5/fill_out_requests",
                &json!({"questionnaire_keys": ["steps"], "open_till": START_UNIX + 86_400, "language": "nl"}),
            )
            .await;
        assert_eq!(asked.status, 200, "{}", asked.text);
        let link = asked.body["completing_url"]
            .as_str()
            .expect("a completing_url")
            .to_owned();
        let mut visitor = Visitor::new(&app);
        visitor.accept_language = Some("en");
        let page = visitor.open(&link).await;
        assert!(
            page.text.contains("Heeft u klachten? (test)"),
            "{}",
            page.text
        );

        // Not a language code: refused on both.
        for body in [json!({"language": "dutch"}), json!({"language": 1})] {
            let mut session =
                json!({"questionnaire_keys": ["steps"], "return_to": format!("{EPD}/back")});
            session["language"] = body["language"].clone();
            let refused = app
                .post("/api/v1/dossiers/d6/fill_out_sessions", &session)
                .await;
            assert_eq!(refused.status, 422, "{}", refused.text);
            assert_eq!(refused.body, json!({"errors": {"language": ["invalid"]}}));
            let request = json!({"questionnaire_keys": ["steps"], "open_till": START_UNIX + 86_400,
                                 "language": body["language"]});
            let refused = app
                .post("/api/v1/dossiers/d6/fill_out_requests", &request)
                .await;
            assert_eq!(refused.status, 422, "{}", refused.text);
            assert_eq!(refused.body, json!({"errors": {"language": ["invalid"]}}));
        }
    }
);
