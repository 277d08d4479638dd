//! Authentication under attack (docs/api/rights.md, docs/operations.md#jwt-keys-and-tokens):
//! JWT keys pinned to one algorithm, duplicate JSON members in a JWT,
//! JWT-only tokens that HTTP Basic cannot use, and a token table whose
//! reloads keep failing (stale, then refused). The JWT helpers are those
//! of `auth`.

use host::commands::{self, CreateToken};
use jsonwebtoken::Algorithm;
use serde_json::Value;
use tests::reqwest::Method;
use tests::{Db, TestApp, basic, create_token, db_test, json};

use crate::auth::*;
use crate::support::*;

/// A JWT whose header and payload are exactly these texts, validly RS256
/// signed with the registered key: only the duplicate is wrong.
fn raw_text_signed(header: &str, payload: &str) -> String {
    let input = format!("{}.{}", b64(header), b64(payload));
    let signature = jsonwebtoken::crypto::sign(input.as_bytes(), &private_key(), Algorithm::RS256)
        .expect("sign");
    format!("{input}.{signature}")
}

// ---------------------------------------------------------------------------
// Duplicate members
// ---------------------------------------------------------------------------

db_test!(
    async fn a_duplicate_member_jwt_is_refused(app: spawn_jwt) {
        let now = app.state.now().timestamp();
        let exp = now + 600;
        let header = format!(r#"{{"typ":"JWT","alg":"RS256","kid":"{JWT_KEY}"}}"#);
        let payload =
            format!(r#"{{"iss":"{ISSUER}","aud":"api","iat":{now},"exp":{exp},"sub":"d1"}}"#);
        // The same token without a duplicate is fine.
        let fine = raw_text_signed(&header, &payload);
        assert_eq!(get_as(&app, D1_RESPONSES, &bearer(&fine)).await.status, 200);

        let cases = [
            // alg: a reader keeping the first sees RS256, one keeping the last none.
            (
                format!(r#"{{"typ":"JWT","alg":"RS256","kid":"{JWT_KEY}","alg":"none"}}"#),
                payload.clone(),
            ),
            (
                format!(r#"{{"typ":"JWT","alg":"RS256","kid":"nobody","kid":"{JWT_KEY}"}}"#),
                payload.clone(),
            ),
            // sub: first d2, last d1 (the dossier asked for).
            (
                header.clone(),
                format!(
                    r#"{{"iss":"{ISSUER}","aud":"api","iat":{now},"exp":{exp},"sub":"d2","sub":"d1"}}"#
                ),
            ),
            // exp: first a day away (over the lifetime limit), last valid.
            (
                header.clone(),
                format!(
                    r#"{{"iss":"{ISSUER}","aud":"api","iat":{now},"exp":{},"sub":"d1","exp":{exp}}}"#,
                    now + 86_400
                ),
            ),
            // The second name spelled with an escape is the same name.
            (
                header.clone(),
                format!(
                    r#"{{"iss":"{ISSUER}","aud":"api","iat":{now},"exp":{exp},"sub":"d2","\u0073ub":"d1"}}"#
                ),
            ),
        ];
        for (header, payload) in cases {
            let token = raw_text_signed(&header, &payload);
            let answer = get_as(&app, D1_RESPONSES, &bearer(&token)).await;
            assert_bad_jwt(&answer);
        }
        // Nothing was read or written with them: only the fine request's
        // row and the refusals are in the log, the refusals counted
        // (docs/api/rights.md#access-log).
        app.state.flush_refusals().await;
        let rows = app
            .sql_strings(
                "SELECT CAST(status AS TEXT) || ' ' || CAST(COALESCE(refusals, 0) AS TEXT) \
                 FROM access_log ORDER BY id",
            )
            .await;
        assert_eq!(rows[0], "200 0", "{rows:?}");
        let refused: u32 = rows[1..]
            .iter()
            .map(|row| {
                let (status, count) = row.split_once(' ').expect("two fields");
                assert_eq!(status, "401", "{rows:?}");
                count.parse::<u32>().expect("a count")
            })
            .sum();
        assert_eq!(refused, 5, "{rows:?}");
    }
);

// ---------------------------------------------------------------------------
// Algorithms per key
// ---------------------------------------------------------------------------

db_test!(
    async fn an_rs512_jwt_is_refused_by_a_key_registered_for_rs256(app: spawn_jwt) {
        let claims = claims(&app, Some("d1"));
        let rs256 = sign(Algorithm::RS256, JWT_KEY, &claims);
        let rs512 = sign(Algorithm::RS512, JWT_KEY, &claims);
        assert_eq!(
            get_as(&app, D1_RESPONSES, &bearer(&rs256)).await.status,
            200
        );
        assert_bad_jwt(&get_as(&app, D1_RESPONSES, &bearer(&rs512)).await);

        // A key registered for RS512 refuses RS256 the same way.
        create_token(&app.state, "epd-512", "all").await;
        register_key_for(&app, "epd-512", PUBLIC_PEM, "RS512").await;
        let by_512 = sign(Algorithm::RS512, "epd-512", &claims);
        let by_256 = sign(Algorithm::RS256, "epd-512", &claims);
        assert_eq!(
            get_as(&app, D1_RESPONSES, &bearer(&by_512)).await.status,
            200
        );
        assert_bad_jwt(&get_as(&app, D1_RESPONSES, &bearer(&by_256)).await);

        // Registering the same key again re-pins it: now RS512 only.
        register_key_for(&app, JWT_KEY, PUBLIC_PEM, "RS512").await;
        assert_bad_jwt(&get_as(&app, D1_RESPONSES, &bearer(&rs256)).await);
        assert_eq!(
            get_as(&app, D1_RESPONSES, &bearer(&rs512)).await.status,
            200
        );
    }
);

db_test!(
    async fn an_unknown_kid_gets_the_answer_of_a_wrong_signature(app: spawn_jwt) {
        let claims = claims(&app, Some("d1"));
        let unknown = sign(Algorithm::RS256, "nobody", &claims);
        let wrong_signature = raw_signed(
            &standard_header(),
            &claims,
            Algorithm::RS256,
            &jsonwebtoken::EncodingKey::from_rsa_pem(OTHER_PRIVATE_PEM).expect("other key"),
        );
        let unregistered_alg = sign(Algorithm::RS512, JWT_KEY, &claims);
        let answers = [
            get_as(&app, D1_RESPONSES, &bearer(&unknown)).await,
            get_as(&app, D1_RESPONSES, &bearer(&wrong_signature)).await,
            get_as(&app, D1_RESPONSES, &bearer(&unregistered_alg)).await,
        ];
        for answer in &answers {
            assert_bad_jwt(answer);
            assert_eq!(answer.text, answers[0].text);
            for header in ["www-authenticate", "content-type", "cache-control"] {
                assert_eq!(
                    answer.headers.get(header),
                    answers[0].headers.get(header),
                    "{header}"
                );
            }
        }
    }
);

// ---------------------------------------------------------------------------
// JWT-only tokens
// ---------------------------------------------------------------------------

fn create_args(key: &str, jwt_only: bool) -> CreateToken {
    CreateToken {
        key: key.to_owned(),
        rights: "all".to_owned(),
        ips: Vec::new(),
        origins: Vec::new(),
        jwt_only,
        json: true,
    }
}

db_test!(
    async fn a_jwt_only_token_is_refused_over_basic_and_accepted_as_jwt(app) {
        // `outcomes token create --jwt-only --json` prints no secret.
        let printed = commands::create_token(app.state.store(), app.state.secrets_key(), &create_args("epd-jwt-only", true))
            .await
            .expect("created");
        assert_eq!(printed["jwt_only"], json!(true));
        assert_eq!(printed.get("consumer_secret"), None, "{printed}");
        app.state.reload_tokens().await.expect("reload");
        register_key(&app, "epd-jwt-only", PUBLIC_PEM).await;

        let token = sign(Algorithm::RS256, "epd-jwt-only", &claims(&app, Some("d1")));
        assert_eq!(get_as(&app, D1_RESPONSES, &bearer(&token)).await.status, 200);
        let unknown = get_as(&app, D1_RESPONSES, &basic("nobody", "guess")).await;
        for secret in ["", "guess", app.secret.as_str()] {
            let answer = get_as(&app, D1_RESPONSES, &basic("epd-jwt-only", secret)).await;
            assert_unauthorized(&answer, BASIC_CHALLENGE);
            assert_eq!(answer.text, unknown.text);
        }
        // A token made without the flag prints its secret, which works.
        let printed = commands::create_token(app.state.store(), app.state.secrets_key(), &create_args("epd-basic", false))
            .await
            .expect("created");
        assert_eq!(printed["jwt_only"], json!(false));
        let secret = printed["consumer_secret"].as_str().expect("a secret").to_owned();
        app.state.reload_tokens().await.expect("reload");
        assert_eq!(get_as(&app, D1_RESPONSES, &basic("epd-basic", &secret)).await.status, 200);
    }
);

db_test!(
    async fn a_token_made_jwt_only_loses_its_basic_secret_that_bypassed_sub(app) {
        let secret = create_token(&app.state, "epd", "all").await;
        register_key(&app, "epd", PUBLIC_PEM).await;
        let d1_only = sign(Algorithm::RS256, "epd", &claims(&app, Some("d1")));
        let d2 = "/api/v1/dossiers/d2/responses";
        // Before: the JWT is held to d1, but the same token's Basic secret
        // reads any dossier.
        assert_forbidden(&get_as(&app, d2, &bearer(&d1_only)).await, "sub_mismatch");
        assert_eq!(get_as(&app, d2, &basic("epd", &secret)).await.status, 200);

        // `outcomes token jwt-only epd`.
        let forgotten = host::auth::secret::to_hex(&host::auth::secret::hash(
            &host::auth::secret::generate(),
        ));
        assert!(
            app.state
                .store()
                .make_token_jwt_only("epd".to_owned(), forgotten)
                .await
                .expect("store")
        );
        app.state.reload_tokens().await.expect("reload");
        let wrong = get_as(&app, d2, &basic("epd", "not-the-secret")).await;
        let refused = get_as(&app, d2, &basic("epd", &secret)).await;
        assert_unauthorized(&refused, BASIC_CHALLENGE);
        assert_eq!(refused.text, wrong.text);
        assert_forbidden(&get_as(&app, d2, &bearer(&d1_only)).await, "sub_mismatch");
        assert_eq!(get_as(&app, D1_RESPONSES, &bearer(&d1_only)).await.status, 200);
    }
);

// ---------------------------------------------------------------------------
// Failed token reloads
// ---------------------------------------------------------------------------

/// The host with [`JWT_KEY`] that refuses credentials after 10 failed
/// token reloads in a row.
async fn spawn_jwt_with_limit(db: Db) -> TestApp {
    let app = TestApp::spawn_with(db, |config| config.token_reload_failure_limit = Some(10)).await;
    jwt_consumer(&app, JWT_KEY, "all").await;
    app
}

/// `/health`'s status code and the fields this file is about (other
/// fields may be added without concern to it).
async fn health(app: &TestApp) -> (u16, Value) {
    let answer = app.send_as(Method::GET, "/health", None, None).await;
    let body = &answer.body;
    (
        answer.status.as_u16(),
        json!({"status": body["status"], "database": body["database"], "tokens": body["tokens"]}),
    )
}

db_test!(
    async fn failed_token_reloads_make_health_report_stale_then_credentials_refused(
        app: spawn_jwt_with_limit,
    ) {
        let ok = json!({"status": "ok", "database": "ok", "tokens": "ok"});
        assert_eq!(health(&app).await, (200, ok.clone()));
        let token = bearer(&jwt(&claims(&app, Some("d1"))));
        assert_eq!(get_as(&app, D1_RESPONSES, &token).await.status, 200);

        // The tokens table cannot be read: every reload fails.
        app.sql("ALTER TABLE api_tokens RENAME TO api_tokens_away")
            .await;
        for _ in 0..3 {
            assert!(app.state.reload_tokens().await.is_err());
        }
        let stale = json!({"status": "ok", "database": "ok", "tokens": "stale"});
        assert_eq!(health(&app).await, (200, stale));
        // A revocation made elsewhere now is not seen: the stale table
        // still admits the token (verified in full, not from memory).
        app.sql(&format!(
            "UPDATE api_tokens_away SET revoked_at = 1 WHERE consumer_key = '{JWT_KEY}'"
        ))
        .await;
        assert_eq!(get_as(&app, D1_RESPONSES, &token).await.status, 200);

        // Up to the limit: every credential is refused with 503.
        for _ in 3..10 {
            assert!(app.state.reload_tokens().await.is_err());
        }
        let expired = json!({"status": "unavailable", "database": "ok", "tokens": "expired"});
        assert_eq!(health(&app).await, (503, expired));
        assert_error(
            &get_as(&app, D1_RESPONSES, &token).await,
            503,
            error("base", "unavailable"),
        );
        assert_error(&app.get(PROTOCOLS).await, 503, error("base", "unavailable"));
        // Without credentials, still the usual 401.
        assert_unauthorized(
            &app.send_as(Method::GET, PROTOCOLS, None, None).await,
            NO_CREDENTIALS_CHALLENGE,
        );

        // The table is back: the revocation holds, the rest works again.
        app.sql("ALTER TABLE api_tokens_away RENAME TO api_tokens")
            .await;
        app.state.reload_tokens().await.expect("reload");
        assert_eq!(health(&app).await, (200, ok));
        assert_bad_jwt(&get_as(&app, D1_RESPONSES, &token).await);
        assert_eq!(app.get(D1_RESPONSES).await.status, 200);
    }
);

db_test!(async fn a_browser_is_invited_to_send_basic_credentials_only_after_it_sent_some(app) {
    // The attack: a page elsewhere makes a browser call the API. A Basic
    // challenge to a request without credentials would make the browser
    // prompt for them, and then send them along with every request other
    // sites make it send. Only a request that used the Basic scheme is
    // answered with the Basic challenge.
    let cases = [
        (None, NO_CREDENTIALS_CHALLENGE),
        (Some("Negotiate abc".to_owned()), NO_CREDENTIALS_CHALLENGE),
        (Some(basic(tests::TEST_KEY, "guess")), BASIC_CHALLENGE),
        (Some("basic !!!".to_owned()), BASIC_CHALLENGE),
        (Some("Bearer e30.e30.QUFBQQ".to_owned()), BEARER_CHALLENGE),
    ];
    for (authorization, expected) in cases {
        for path in [D1_RESPONSES, PROTOCOLS] {
            let answer = app.send_as(Method::GET, path, None, authorization.as_deref()).await;
            assert_unauthorized(&answer, expected);
        }
    }
});
