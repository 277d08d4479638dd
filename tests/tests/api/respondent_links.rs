//! A respondent's links as credentials: the one-time `fill_out_url` is
//! spent by the button's POST only (a mail scanner's GET spends nothing);
//! a `completing_url` expires and is revoked by the API or the command
//! line; the secret that signs them comes from a file, or is kept in the
//! database encrypted with a key that is not there.

use chrono::Duration;
use host::auth::at_rest::SecretsKey;
use host::auth::links::Links;
use host::commands::{RespondentCommand, respondent};
use host::config::SecretSource;
use tests::{Db, TestApp, basic, create_token, db_test, json, reqwest};

use crate::fill_out_pages::assert_only_self_loads;
use crate::fill_out_sessions::{EPD, spawn_with_epd};
use crate::support::*;
use crate::visitor::{Visitor, pairs, start, start_blank};

fn revoke(dossier: &str, respondent: impl std::fmt::Display) -> String {
    format!("/api/v1/dossiers/{dossier}/respondents/{respondent}/revoke_links")
}

/// The `completing_url` and respondent of the dossier's first response.
async fn completing_url(app: &TestApp, dossier: &str) -> (String, i64) {
    let list = app.get(&responses(dossier)).await.body;
    let url = list[0]["completing_url"]
        .as_str()
        .unwrap_or_else(|| panic!("a completing_url in {list}"))
        .to_owned();
    (
        url,
        list[0]["respondent_id"].as_i64().expect("a respondent"),
    )
}

/// The link signer a host with this secret has.
fn signer(app: &TestApp, secret: &str) -> Links {
    Links::new(
        secret.as_bytes(),
        &app.base,
        Duration::minutes(10),
        Duration::days(30),
    )
}

/// The link-signing secret as stored in the database.
async fn stored_secret(app: &TestApp) -> String {
    let rows = app
        .sql_strings("SELECT value FROM host_secrets WHERE name = 'fill_out_links'")
        .await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    rows[0].clone()
}

db_test!(
    async fn a_mail_scanner_s_visit_spends_nothing_and_the_click_logs_in_once(app: spawn_with_epd) {
        let link = start(
            &app,
            "d1",
            json!({"questionnaire_keys": ["phq9"], "return_to": format!("{EPD}/back"),
                   "stylesheet": format!("{EPD}/rom.css")}),
        )
        .await;
        // A scanner fetches the link twice, and looks at it (HEAD).
        let mut scanner = Visitor::new(&app);
        for _ in 0..2 {
            let page = scanner.get(&link).await;
            assert_eq!(page.status, 200, "{}", page.text);
            assert!(
                page.text.contains("<h1>Your questionnaires</h1>"),
                "{}",
                page.text
            );
            assert!(
                page.text
                    .contains("<form method=\"post\" action=\"/fill_out/session/login\">")
            );
            assert!(page.text.contains("<button type=\"submit\">Start</button>"));
            assert!(!page.text.contains("<script"));
            assert!(page.header("set-cookie").is_empty());
            let csp = page.header("content-security-policy");
            assert_only_self_loads(csp);
            assert!(
                csp.contains("style-src 'self' https://epd.example.org;"),
                "{csp}"
            );
            assert!(
                csp.contains("form-action 'self' https://epd.example.org;"),
                "{csp}"
            );
        }
        let head = reqwest::Client::new()
            .head(&link)
            .send()
            .await
            .expect("an answer");
        assert_eq!(head.status(), 200);
        assert!(head.headers().get("set-cookie").is_none());
        assert!(scanner.cookie.is_none());
        assert_eq!(
            app.get(&responses("d1")).await.body,
            json!([]),
            "nothing prepared"
        );
        // The respondent's click logs in.
        let mut respondent = Visitor::new(&app);
        let login = respondent.log_in(&link).await;
        assert_eq!(login.status, 303, "{}", login.text);
        assert_eq!(login.location(), "/fill_out/session");
        assert!(respondent.cookie.is_some());
        assert_eq!(
            app.get(&responses("d1"))
                .await
                .body
                .as_array()
                .map(Vec::len),
            Some(1)
        );
        // The POST again, from the scanner or anyone else: spent.
        let again = Visitor::new(&app).log_in(&link).await;
        again.assert_message(403, "This link has been used already");
        // A POST with a changed part is tampering; one without a body too.
        let page = respondent.get(&link).await;
        let mut fields: Vec<(String, String)> =
            ["fill_out_session_key", "nonce", "timestamp", "hmac"]
                .into_iter()
                .map(|n| (n.to_owned(), page.field(n)))
                .collect();
        fields[1].1.push('x');
        let forged = Visitor::new(&app)
            .post_form("/fill_out/session/login", &pairs(&fields))
            .await;
        forged.assert_message(403, "This link does not work");
        Visitor::new(&app)
            .post_form("/fill_out/session/login", &[])
            .await
            .assert_message(403, "This link does not work");
        // The page speaks the browser's language.
        let fresh = start_blank(&app, "d2", &["phq9"]).await;
        let mut dutch = Visitor::new(&app);
        dutch.accept_language = Some("nl");
        let page = dutch.get(&fresh).await;
        assert!(page.text.contains("<html lang=\"nl\">"), "{}", page.text);
        assert!(
            page.text
                .contains("<button type=\"submit\">Beginnen</button>")
        );
    }
);

db_test!(
    async fn a_revoked_respondent_s_links_open_nothing(app: spawn_with_epd) {
        prepare(&app, "d1", "phq9", None, None).await;
        let (old, respondent) = completing_url(&app, "d1").await;
        // Someone holds a session opened with the link, and a one-time link
        // waits unused.
        let (mut holder, form) = {
            let mut v = Visitor::new(&app);
            let first = v.log_in(&old).await;
            assert_eq!(first.status, 303, "{}", first.text);
            let form = v.follow(first).await;
            (v, form)
        };
        assert!(form.text.contains("<h1>PHQ-9</h1>"), "{}", form.text);
        let waiting = start_blank(&app, "d1", &["gad7"]).await;
        let answer = app.post(&revoke("d1", respondent), &json!({})).await;
        assert_eq!(answer.status, 204, "{}", answer.text);
        assert_eq!(answer.text, "");
        // The old link, the session it opened and the unused link are dead.
        Visitor::new(&app)
            .log_in(&old)
            .await
            .assert_message(410, "This link no longer works");
        holder
            .get("/fill_out/session")
            .await
            .assert_message(403, "Your session has ended");
        Visitor::new(&app)
            .log_in(&waiting)
            .await
            .assert_message(410, "This link no longer works");
        // Responses read now carry a new link, which works.
        let (new, _) = completing_url(&app, "d1").await;
        assert_ne!(new, old);
        assert!(new.contains("generation=1&"), "{new}");
        assert_eq!(Visitor::new(&app).log_in(&new).await.status, 303);
        // The stored response is untouched: still open.
        assert_eq!(app.get(&responses("d1")).await.body[0]["status"], "open");
        // Another dossier's respondent, an unknown or a malformed id: 404.
        post_phq9(&app, "d2", "x1", phq9_all_answered()).await;
        for path in [
            revoke("d2", respondent),
            revoke("d1", respondent + 1000),
            revoke("d1", "x"),
            revoke("nobody", respondent),
        ] {
            let answer = app.post(&path, &json!({})).await;
            assert_error(&answer, 404, error("respondent", "not_found"));
        }
        // In the access log, with the dossier.
        let log = app
            .state
            .store()
            .access_log(Some("d1"), None)
            .await
            .expect("the log");
        assert!(
            log.iter()
                .any(|e| e.action.ends_with("/respondents/{id}/revoke_links")
                    && e.status == 204
                    && e.consumer_key.as_deref() == Some("test")),
            "{log:?}"
        );
        // It takes the respondents right.
        let secret = create_token(&app.state, "reader", "responses").await;
        let answer = app
            .send_as(
                reqwest::Method::POST,
                &revoke("d1", respondent),
                None,
                Some(&basic("reader", &secret)),
            )
            .await;
        assert_eq!(answer.status, 403, "{}", answer.text);
    }
);

db_test!(
    async fn the_command_line_revokes_a_respondent_s_links(app) {
        prepare(&app, "d1", "phq9", None, None).await;
        let (old, id) = completing_url(&app, "d1").await;
        let store = app.state.store();
        let now = app.state.now();
        let command = |dossier: &str, respondent: i64| RespondentCommand::RevokeLinks {
            dossier: dossier.to_owned(),
            respondent,
        };
        respondent(store, command("d1", id), now)
            .await
            .expect("revoked");
        Visitor::new(&app)
            .log_in(&old)
            .await
            .assert_message(410, "This link no longer works");
        let (new, _) = completing_url(&app, "d1").await;
        assert_eq!(Visitor::new(&app).log_in(&new).await.status, 303);
        let refused = respondent(store, command("d2", id), now).await;
        assert!(refused.is_err_and(|e| e.to_string().contains("no respondent")));
        let log = store.access_log(Some("d1"), None).await.expect("the log");
        assert!(
            log.iter().any(|e| e.action == "outcomes respondent revoke-links" && e.status == 204),
            "{log:?}"
        );
    }
);

db_test!(
    async fn a_completing_url_expires_after_its_lifetime(app) {
        prepare(&app, "d1", "phq9", None, None).await;
        let (url, respondent) = completing_url(&app, "d1").await;
        assert!(
            url.contains(&format!("expires={}&", START_UNIX + 30 * 24 * 3600)),
            "{url}"
        );
        app.clock.advance(Duration::days(30) - Duration::seconds(1));
        assert_eq!(Visitor::new(&app).log_in(&url).await.status, 303);
        app.clock.advance(Duration::seconds(1));
        Visitor::new(&app)
            .log_in(&url)
            .await
            .assert_message(410, "This link has expired");
        // A later expiry, signed with the old token: tampering.
        let later = url.replace(
            &format!("expires={}", START_UNIX + 30 * 24 * 3600),
            &format!("expires={}", START_UNIX + 300 * 24 * 3600),
        );
        Visitor::new(&app)
            .log_in(&later)
            .await
            .assert_message(403, "This link does not work");
        // The first format (a token for the respondent alone): refused.
        let token = url.split("token=").nth(1).expect("a token");
        Visitor::new(&app)
            .log_in(&app.url(&format!("/fill_out/respondents/{respondent}?token={token}")))
            .await
            .assert_message(403, "This link does not work");
        // A link handed out now lasts from now.
        let (fresh, _) = completing_url(&app, "d1").await;
        assert_eq!(Visitor::new(&app).log_in(&fresh).await.status, 303);
    }
);

/// A host whose completing_urls last an hour.
async fn spawn_with_hour_links(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        config.completing_url_ttl = std::time::Duration::from_secs(3600);
    })
    .await
}

db_test!(
    async fn the_lifetime_of_a_completing_url_is_a_setting(app: spawn_with_hour_links) {
        prepare(&app, "d1", "phq9", None, None).await;
        let (url, _) = completing_url(&app, "d1").await;
        app.clock.advance(Duration::hours(1));
        Visitor::new(&app)
            .log_in(&url)
            .await
            .assert_message(410, "This link has expired");
    }
);

db_test!(
    async fn the_secret_kept_in_the_database_is_encrypted(app) {
        prepare(&app, "d1", "phq9", None, None).await;
        let (url, respondent) = completing_url(&app, "d1").await;
        let stored = stored_secret(&app).await;
        assert!(stored.starts_with("aes256gcm:"), "{stored}");
        // The key is a file outside the database, for its owner only.
        let key_file = &app.config.secrets_key_file;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(key_file).expect("the key file").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let secret = SecretsKey::load_or_create(key_file)
            .expect("the key")
            .open("fill_out_links", &stored)
            .expect("opens with the key");
        assert!(!stored.contains(&secret));
        // With the key, the real secret: it signs this very link.
        let now = app.state.now();
        assert_eq!(
            signer(&app, &secret).completing_url(host::domain::ids::RespondentId(respondent), 0, now),
            url
        );
        // With the database alone, nothing: what is stored signs no link.
        let forged = signer(&app, &stored)
            .completing_url(host::domain::ids::RespondentId(respondent), 0, now);
        Visitor::new(&app)
            .get(&forged)
            .await
            .assert_message(403, "This link does not work");
        // A second host on the database, with the same key, agrees.
        let other = app.another_host().await;
        assert_eq!(stored_secret(&app).await, stored);
        let on_other = url.replace(&app.base, &other.base);
        assert_eq!(Visitor::new(&other).log_in(&on_other).await.status, 303);
    }
);

db_test!(
    async fn a_plain_secret_of_an_older_version_is_replaced_on_start_and_signs_nothing(app) {
        let plain = "a plain secret kept by an older version";
        app.sql(&format!(
            "UPDATE host_secrets SET value = '{plain}' WHERE name = 'fill_out_links' RETURNING created_at"
        ))
        .await
        .expect("the secret row");
        // The upgraded host starts on the database.
        let other = app.another_host().await;
        let stored = stored_secret(&app).await;
        assert!(stored.starts_with("aes256gcm:"), "{stored}");
        assert!(!stored.contains(plain));
        let key = SecretsKey::load_or_create(&app.config.secrets_key_file).expect("the key");
        let secret = key.open("fill_out_links", &stored).expect("opens");
        assert_ne!(secret, plain, "a new secret, not the old one sealed");
        // A link signed with the old secret (what a copy of the database
        // made before the upgrade would forge) no longer works.
        prepare(&app, "d1", "phq9", None, None).await;
        let (_, respondent) = completing_url(&other, "d1").await;
        let now = other.state.now();
        let forged =
            signer(&other, plain).completing_url(host::domain::ids::RespondentId(respondent), 0, now);
        Visitor::new(&other)
            .get(&forged)
            .await
            .assert_message(403, "This link does not work");
        // The links the upgraded host hands out work, signed with the new one.
        let (url, _) = completing_url(&other, "d1").await;
        assert_eq!(
            signer(&other, &secret).completing_url(host::domain::ids::RespondentId(respondent), 0, now),
            url
        );
        assert_eq!(Visitor::new(&other).log_in(&url).await.status, 303);
        // A host started later reads that secret: it replaces nothing more.
        let third = app.another_host().await;
        assert_eq!(stored_secret(&app).await, stored);
        let on_third = url.replace(&other.base, &third.base);
        assert_eq!(Visitor::new(&third).log_in(&on_third).await.status, 303);
    }
);

/// The secret in the file a secret store would mount.
const FILE_SECRET: &str = "a secret from the secret store, long enough";

/// A host whose link secret is in a file.
async fn spawn_with_secret_file(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        let path = config.data_dir.join("link-secret");
        std::fs::write(&path, format!("  {FILE_SECRET}\n")).expect("the secret file");
        config.fill_out_secret = Some(SecretSource::File(path));
    })
    .await
}

db_test!(
    async fn the_secret_can_come_from_a_file(app: spawn_with_secret_file) {
        prepare(&app, "d1", "phq9", None, None).await;
        let (url, respondent) = completing_url(&app, "d1").await;
        let now = app.state.now();
        assert_eq!(
            signer(&app, FILE_SECRET).completing_url(
                host::domain::ids::RespondentId(respondent),
                0,
                now
            ),
            url
        );
        assert_eq!(Visitor::new(&app).log_in(&url).await.status, 303);
        // Nothing kept in the database.
        assert_eq!(
            app.sql_strings("SELECT name FROM host_secrets").await,
            Vec::<String>::new()
        );
        // A file with too short a secret stops start-up, saying which.
        let short = app.dir().join("short-secret");
        std::fs::write(&short, "short").expect("write");
        let mut config = app.config.clone();
        config.fill_out_secret = Some(SecretSource::File(short));
        let failed = host::startup::App::build(config, app.clock.clone())
            .await
            .expect_err("refused");
        assert!(
            format!("{failed:#}").contains("fill_out_secret_file"),
            "{failed:#}"
        );
    }
);
