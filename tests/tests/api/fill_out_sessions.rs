//! POST /api/v1/dossiers/:id/fill_out_sessions: the answer's signed link,
//! every error shape of docs/api/fill-out.md (the bare-string `missing`
//! pair, `return_url`, `not_allowed` for URLs outside the allowed origins,
//! whatever trick they hide behind), the 404s, and the right it needs.

use chrono::Duration;
use serde_json::Value;
use tests::{Db, TestApp, create_token_with, db_test, json};

use crate::support::*;

/// The origin every token of these tests may send respondents to.
pub const EPD: &str = "https://epd.example.org";

pub fn sessions(dossier: &str) -> String {
    format!("/api/v1/dossiers/{dossier}/fill_out_sessions")
}

/// The host with [`EPD`] allowed for every token.
pub async fn spawn_with_epd(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| config.allowed_origins = vec![EPD.to_owned()]).await
}

/// The query parameters of a URL, in order, decoded.
pub fn query_of(url: &str) -> Vec<(String, String)> {
    tests::reqwest::Url::parse(url)
        .map(|u| {
            u.query_pairs()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect()
        })
        .unwrap_or_default()
}

db_test!(
    async fn a_session_answers_a_signed_one_time_link(app: spawn_with_epd) {
        let body = json!({"questionnaire_keys": ["phq9", "gad7"], "return_to": format!("{EPD}/back"),
                          "progress_url": format!("{EPD}/progress?step=1"), "stylesheet": format!("{EPD}/rom.css")});
        let answer = app.post(&sessions("new-dossier"), &body).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        let url = answer.body["fill_out_url"]
            .as_str()
            .expect("a link")
            .to_owned();
        assert_eq!(answer.body, json!({"fill_out_url": url}), "only the link");
        assert!(
            url.starts_with(&format!("{}/fill_out/session/login?", app.base)),
            "{url}"
        );
        let names: Vec<String> = query_of(&url).into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            names,
            ["fill_out_session_key", "hmac", "nonce", "timestamp"]
        );
        let query = query_of(&url);
        assert_eq!(query[3].1, START_UNIX.to_string(), "the time it was made");
        assert_eq!(query[1].1.len(), 64, "HMAC-SHA256 in hex");
        // Each session gets its own key and nonce.
        let again = app.post(&sessions("new-dossier"), &body).await;
        assert_ne!(
            query_of(again.body["fill_out_url"].as_str().unwrap_or_default())[0],
            query[0]
        );
        // The dossier exists now, with its patient; nothing is prepared
        // before the link is used.
        let respondents = app.get("/api/v1/dossiers/new-dossier/respondents").await;
        assert_eq!(
            respondents.body.as_array().map(Vec::len),
            Some(1),
            "{}",
            respondents.text
        );
        assert_eq!(app.get(&responses("new-dossier")).await.body, json!([]));
        // Trailing slash and the singular path form work too.
        let answer = app
            .post("/api/v1/dossier/new-dossier/fill_out_sessions/", &body)
            .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
    }
);

db_test!(
    async fn neither_keys_nor_ids_is_the_bare_missing_pair(app: spawn_with_epd) {
        let back = format!("{EPD}/back");
        for body in [
            json!({"return_to": back}),
            json!({"questionnaire_keys": [], "response_ids": [], "return_to": back}),
            json!({"questionnaire_keys": null, "return_to": back}),
        ] {
            assert_error(
                &app.post(&sessions("d1"), &body).await,
                422,
                json!({"errors": {"questionnaire_keys": "missing", "response_ids": "missing"}}),
            );
        }
        // Without return_to as well: one body names everything.
        assert_error(
            &app.post(&sessions("d1"), &json!({})).await,
            422,
            json!({"errors": {"questionnaire_keys": "missing", "response_ids": "missing", "return_url": ["missing"]}}),
        );
    }
);

db_test!(
    async fn a_missing_return_to_is_named_return_url(app: spawn_with_epd) {
        for body in [
            json!({"questionnaire_keys": ["phq9"]}),
            json!({"questionnaire_keys": ["phq9"], "return_to": null}),
            json!({"questionnaire_keys": ["phq9"], "return_to": "  "}),
        ] {
            assert_error(
                &app.post(&sessions("d1"), &body).await,
                422,
                error("return_url", "missing"),
            );
        }
        assert_error(
            &app.post(
                &sessions("d1"),
                &json!({"questionnaire_keys": ["phq9"], "return_to": 7}),
            )
            .await,
            422,
            error("return_to", "invalid"),
        );
    }
);

db_test!(
    async fn urls_outside_the_allowed_origins_are_not_allowed(app: spawn_with_epd) {
        let tricks = [
            "https://evil.example/back",
            "http://epd.example.org/back",
            "https://epd.example.org.evil.example/back",
            "https://epd.example.org@evil.example/back",
            "https://user:pw@epd.example.org/back",
            "//evil.example/back",
            "/back",
            "javascript:alert(document.cookie)",
            "JAVASCRIPT://epd.example.org/%0Aalert(1)",
            "data:text/html,<script>alert(1)</script>",
            "https://epd.example.org\\@evil.example/back",
            "https:\\\\evil.example/back",
            "https:/\\evil.example/back",
            "https:evil.example/back",
            "https:///evil.example/back",
            "https://epd.example.org/back\r\nSet-Cookie: x=1",
            "https://epd.example.org:8443/back",
            "ftp://epd.example.org/back",
        ];
        for field in ["return_to", "progress_url", "stylesheet"] {
            for trick in tricks {
                let mut body =
                    json!({"questionnaire_keys": ["phq9"], "return_to": format!("{EPD}/back")});
                body[field] = json!(trick);
                assert_error(
                    &app.post(&sessions("d1"), &body).await,
                    422,
                    error(field, "not_allowed"),
                );
            }
            let mut body =
                json!({"questionnaire_keys": ["phq9"], "return_to": format!("{EPD}/back")});
            body[field] = json!(["https://epd.example.org/x"]);
            assert_error(
                &app.post(&sessions("d1"), &body).await,
                422,
                error(field, "invalid"),
            );
        }
        // The allowed origin in other spellings is fine.
        let body = json!({"questionnaire_keys": ["phq9"], "return_to": "HTTPS://EPD.example.org:443/back?x=1#y"});
        assert_eq!(app.post(&sessions("d1"), &body).await.status, 200);
    }
);

db_test!(
    async fn a_token_may_allow_its_own_origins(app) {
        let secret = create_token_with(&app.state, "epd-b", "fill_out_sessions", "", "https://b.example.org").await;
        let b = tests::basic("epd-b", &secret);
        let post = |return_to: &str| {
            let body = json!({"questionnaire_keys": ["phq9"], "return_to": return_to});
            let (app, b) = (&app, &b);
            async move {
                app.send_as(
                    tests::reqwest::Method::POST,
                    &sessions("d1"),
                    Some((body.to_string().into_bytes(), "application/json")),
                    Some(b),
                )
                .await
            }
        };
        assert_eq!(post("https://b.example.org/back").await.status, 200);
        assert_error(&post(&format!("{EPD}/back")).await, 422, error("return_to", "not_allowed"));
        // The test token allows no origin at all.
        let body = json!({"questionnaire_keys": ["phq9"], "return_to": "https://b.example.org/back"});
        assert_error(&app.post(&sessions("d1"), &body).await, 422, error("return_to", "not_allowed"));
        // A token without the right is refused.
        let secret = create_token_with(&app.state, "no-right", "responses", "", "https://b.example.org").await;
        let answer = app
            .send_as(
                tests::reqwest::Method::POST,
                &sessions("d1"),
                Some((body.to_string().into_bytes(), "application/json")),
                Some(&tests::basic("no-right", &secret)),
            )
            .await;
        assert_error(&answer, 403, error("base", "right_missing"));
    }
);

db_test!(
    async fn lists_of_the_wrong_kind_are_invalid(app: spawn_with_epd) {
        let back = format!("{EPD}/back");
        let too_many: Vec<&str> = vec!["phq9"; 51];
        for (body, field) in [
            (
                json!({"questionnaire_keys": "phq9", "return_to": back}),
                "questionnaire_keys",
            ),
            (
                json!({"questionnaire_keys": [1], "return_to": back}),
                "questionnaire_keys",
            ),
            (
                json!({"questionnaire_keys": too_many, "return_to": back}),
                "questionnaire_keys",
            ),
            (
                json!({"response_ids": [0], "return_to": back}),
                "response_ids",
            ),
            (
                json!({"response_ids": [-3], "return_to": back}),
                "response_ids",
            ),
            (
                json!({"response_ids": ["x"], "return_to": back}),
                "response_ids",
            ),
            (
                json!({"response_ids": 5, "return_to": back}),
                "response_ids",
            ),
            (
                json!({"response_ids": [1.5], "return_to": back}),
                "response_ids",
            ),
        ] {
            assert_error(
                &app.post(&sessions("d1"), &body).await,
                422,
                error(field, "invalid"),
            );
        }
    }
);

db_test!(
    async fn unknown_questionnaires_and_foreign_or_unfinished_responses_are_not_found(
        app: spawn_with_epd,
    ) {
        let back = format!("{EPD}/back");
        assert_error(
            &app.post(
                &sessions("d1"),
                &json!({"questionnaire_keys": ["phq9", "nope"], "return_to": back}),
            )
            .await,
            404,
            error("questionnaire_keys", "not_found"),
        );
        let aborted = prepare(&app, "d1", "phq9", None, None).await;
        abort(&app, "d1", aborted).await;
        let open = prepare(&app, "d1", "phq9", None, None).await;
        let expired = prepare(&app, "d1", "phq9", None, Some(Duration::hours(1))).await;
        abort(&app, "d1", expired).await;
        let completed = id_of(&posted(&app, "d1", "ext-1").await);
        let foreign = prepare(&app, "d2", "phq9", None, None).await;
        abort(&app, "d2", foreign).await;
        app.clock.advance(Duration::hours(2));
        for id in [open, expired, completed, foreign, 999_999] {
            assert_error(
                &app.post(
                    &sessions("d1"),
                    &json!({"response_ids": [aborted, id], "return_to": back}),
                )
                .await,
                404,
                error("response_ids", "not_found"),
            );
        }
        // An unknown dossier has no responses to resume, and is not made.
        assert_error(
            &app.post(
                &sessions("d9"),
                &json!({"response_ids": [aborted], "return_to": back}),
            )
            .await,
            404,
            error("response_ids", "not_found"),
        );
        assert_eq!(
            app.get("/api/v1/dossiers/d9/respondents").await.body,
            json!([])
        );
        // The aborted one resumes; ids may come as strings, and twice.
        let answer = app
            .post(
                &sessions("d1"),
                &json!({"response_ids": [aborted, aborted.to_string()], "return_to": back}),
            )
            .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
    }
);

db_test!(
    async fn bad_bodies_get_the_documented_errors(app: spawn_with_epd) {
        use tests::reqwest::Method;
        let send = |bytes: Vec<u8>, content_type: &'static str| {
            let app = &app;
            async move {
                app.send(Method::POST, &sessions("d1"), Some((bytes, content_type)))
                    .await
            }
        };
        assert_error(
            &send(b"{".to_vec(), "application/json").await,
            400,
            error("base", "malformed_json"),
        );
        assert_error(
            &send(b"[1]".to_vec(), "application/json").await,
            400,
            error("base", "malformed_json"),
        );
        assert_error(
            &send(vec![0xff, 0xfe], "application/json").await,
            400,
            error("base", "malformed_json"),
        );
        assert_error(
            &send(vec![b' '; 2 * 1024 * 1024], "application/json").await,
            413,
            error("base", "too_large"),
        );
        assert_error(
            &send(
                b"questionnaire_keys=phq9".to_vec(),
                "application/x-www-form-urlencoded",
            )
            .await,
            415,
            error("base", "unsupported_media_type"),
        );
        let long = "x".repeat(10_000);
        let answer = app
            .post(
                &sessions(&long),
                &json!({"questionnaire_keys": ["phq9"], "return_to": format!("{EPD}/back")}),
            )
            .await;
        assert_error(&answer, 422, error("dossier_id", "invalid"));
        let answer = app
            .post(
                "/api/v1/dossiers//fill_out_sessions",
                &json!({"questionnaire_keys": ["phq9"]}),
            )
            .await;
        assert_error(&answer, 404, error("dossier_id", "not_found"));
        let long_url = format!("{EPD}/{}", "x".repeat(5000));
        let answer = app
            .post(
                &sessions("d1"),
                &json!({"questionnaire_keys": ["phq9"], "return_to": long_url}),
            )
            .await;
        assert_error(&answer, 422, error("return_to", "not_allowed"));
        let answer = app
            .post(&sessions("d1"), &json!({"questionnaire_keys": [Value::String(long)], "return_to": format!("{EPD}/back")}))
            .await;
        assert_error(&answer, 404, error("questionnaire_keys", "not_found"));
    }
);
