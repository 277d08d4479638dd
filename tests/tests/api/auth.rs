//! Authentication and authorization from the outside (docs/api/rights.md):
//! HTTP Basic, JWT bearer tokens and a few representative ways to forge one
//! (every other forged token is a unit test beside the verifier, in the
//! host's `auth::jwt` module), rights per endpoint group, IP allow-lists,
//! X-Forwarded-For, the JWT subject, HTTPS and other dossiers' ids.
//!
//! Every refusal is asserted with its exact status and body, and every 401
//! with its `WWW-Authenticate` challenge. JWT times are relative to the
//! host's injected clock (`app.state.now()`), never the wall clock.

use std::net::{IpAddr, Ipv4Addr};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::Duration;
use host::auth::jwt::RsaPublicKey;
use host::store::StoredKey;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::Value;
use tests::reqwest::{self, Method};
use tests::{Answer, Db, TestApp, basic, create_token, create_token_with, db_test, json};

use crate::support::*;

/// The private key JWT consumers sign with (test-only, see
/// tests/fixtures/keys/README.md) and its public half, registered on
/// [`JWT_KEY`].
pub const PRIVATE_PEM: &[u8] = include_bytes!("../../fixtures/keys/rsa2048.pem");
pub const PUBLIC_PEM: &str = include_str!("../../fixtures/keys/rsa2048.pub.pem");
/// A second key pair, registered nowhere: the attacker's.
pub const OTHER_PRIVATE_PEM: &[u8] = include_bytes!("../../fixtures/keys/other2048.pem");

/// Consumer key (and so JWT `kid`) of the token with a registered key.
pub const JWT_KEY: &str = "epd-jwt";
/// The `iss` of the JWTs the tests sign.
pub const ISSUER: &str = "https://epd.example";

/// The challenge to a request that used the Basic scheme; only to such a
/// request, so a browser is never invited to prompt for credentials.
pub const BASIC_CHALLENGE: &str = "Basic realm=\"api\"";
/// The challenge to a refused bearer token.
pub const BEARER_CHALLENGE: &str = "Bearer realm=\"api\", error=\"invalid_token\"";
/// The challenge to a request without credentials, or with a scheme the
/// API does not speak.
pub const NO_CREDENTIALS_CHALLENGE: &str = "Bearer realm=\"api\"";

/// The PHQ-9 responses of dossier d1, a dossier endpoint.
pub const D1_RESPONSES: &str = "/api/v1/dossiers/d1/responses";
/// The protocol list, an endpoint outside any dossier.
pub const PROTOCOLS: &str = "/api/v1/protocols";

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// Registers `pem` as a JWT key on the token `key` for RS256, the way the
/// admin command does, and makes the host see it.
pub async fn register_key(app: &TestApp, key: &str, pem: &str) {
    register_key_for(app, key, pem, "RS256").await;
}

/// Registers `pem` as a JWT key on the token `key` for `algorithms` (as
/// stored: `RS256`, `RS512`, or both comma-separated as keys registered
/// before algorithms were recorded) and makes the host see it.
pub async fn register_key_for(app: &TestApp, key: &str, pem: &str, algorithms: &str) {
    let fingerprint = RsaPublicKey::from_pem(pem)
        .expect("fixture public key")
        .fingerprint();
    let stored = StoredKey {
        pem: pem.to_owned(),
        fingerprint,
        algorithms: algorithms.to_owned(),
    };
    let added = app
        .state
        .store()
        .add_token_key(key.to_owned(), stored, app.state.now())
        .await;
    assert!(added.expect("store"), "token {key} exists");
    app.state.reload_tokens().await.expect("reload tokens");
}

/// Creates the token `key` with `rights` and the test public key (RS256);
/// returns its Basic secret.
pub async fn jwt_consumer(app: &TestApp, key: &str, rights: &str) -> String {
    let secret = create_token(&app.state, key, rights).await;
    register_key(app, key, PUBLIC_PEM).await;
    secret
}

/// The host with the token [`JWT_KEY`] (all rights, test key registered
/// for RS256).
pub async fn spawn_jwt(db: Db) -> TestApp {
    let app = TestApp::spawn(db).await;
    jwt_consumer(&app, JWT_KEY, "all").await;
    app
}

/// Valid claims at the host's now: 10 minutes of life, `sub` if given.
pub fn claims(app: &TestApp, sub: Option<&str>) -> Value {
    let now = app.state.now().timestamp();
    let mut c = json!({"iss": ISSUER, "aud": "api", "iat": now, "exp": now + 600});
    if let Some(sub) = sub {
        c["sub"] = json!(sub);
    }
    c
}

/// `claims` with one claim replaced.
pub fn with(mut claims: Value, name: &str, value: Value) -> Value {
    claims[name] = value;
    claims
}

pub fn private_key() -> EncodingKey {
    EncodingKey::from_rsa_pem(PRIVATE_PEM).expect("fixture private key")
}

fn other_private_key() -> EncodingKey {
    EncodingKey::from_rsa_pem(OTHER_PRIVATE_PEM).expect("fixture private key")
}

/// A JWT with the header {typ: JWT, alg, kid}, signed by the library with
/// the registered key.
pub fn sign(alg: Algorithm, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.typ = Some("JWT".to_owned());
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, &private_key()).expect("sign")
}

/// The standard valid JWT: RS256, kid [`JWT_KEY`], these claims.
pub fn jwt(claims: &Value) -> String {
    sign(Algorithm::RS256, JWT_KEY, claims)
}

pub fn b64(bytes: impl AsRef<[u8]>) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A hand-built JWT: exactly this header and payload JSON, signed with
/// `key` by `alg` (whatever the header claims).
pub fn raw_signed(header: &Value, claims: &Value, alg: Algorithm, key: &EncodingKey) -> String {
    let input = format!("{}.{}", b64(header.to_string()), b64(claims.to_string()));
    let signature = jsonwebtoken::crypto::sign(input.as_bytes(), key, alg).expect("sign");
    format!("{input}.{signature}")
}

/// A hand-built JWT with an empty signature segment.
pub fn unsigned(header: &Value, claims: &Value) -> String {
    format!("{}.{}.", b64(header.to_string()), b64(claims.to_string()))
}

/// The standard header, as JSON, for hand-built tokens.
pub fn standard_header() -> Value {
    json!({"typ": "JWT", "alg": "RS256", "kid": JWT_KEY})
}

pub fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// GET with this Authorization header.
pub async fn get_as(app: &TestApp, path: &str, authorization: &str) -> Answer {
    app.send_as(Method::GET, path, None, Some(authorization))
        .await
}

/// Sends a request with any headers, through `client`, to `url`.
pub async fn send_raw(
    client: &reqwest::Client,
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Answer {
    let mut req = client.request(method, url);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    if let Some(body) = body {
        req = req
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let res = req.send().await.expect("the host answers");
    let status = res.status();
    let headers = res.headers().clone();
    let text = res.text().await.unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    Answer {
        status,
        headers,
        body,
        text,
    }
}

/// GET on the app with extra headers.
pub async fn get_with(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> Answer {
    send_raw(&app.client, Method::GET, &app.url(path), headers, None).await
}

fn challenge(answer: &Answer) -> Option<&str> {
    answer
        .headers
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
}

/// 401 `unauthorized` with exactly this challenge.
#[track_caller]
pub fn assert_unauthorized(answer: &Answer, expected_challenge: &str) {
    assert_error(answer, 401, error("base", "unauthorized"));
    assert_eq!(
        challenge(answer),
        Some(expected_challenge),
        "WWW-Authenticate of {}",
        answer.text
    );
    assert_eq!(
        answer.headers.get_all("www-authenticate").iter().count(),
        1,
        "one challenge"
    );
}

/// A refused JWT: 401 with the Bearer challenge.
#[track_caller]
pub fn assert_bad_jwt(answer: &Answer) {
    assert_unauthorized(answer, BEARER_CHALLENGE);
}

/// 403 with this reason and no challenge.
#[track_caller]
pub fn assert_forbidden(answer: &Answer, reason: &str) {
    assert_error(answer, 403, error("base", reason));
    assert_eq!(
        challenge(answer),
        None,
        "a 403 asks for no other credentials"
    );
}

/// The JWT, sent as a bearer token to d1's responses.
async fn d1_with(app: &TestApp, token: &str) -> Answer {
    get_as(app, D1_RESPONSES, &bearer(token)).await
}

/// An IPv4 address of this machine that is not loopback: the source address
/// the kernel would pick to reach a few well-known unroutable or public
/// destinations (a UDP `connect` sends nothing), else the first
/// non-loopback address `ip -4 -o addr` lists.
pub fn non_loopback_ipv4() -> Ipv4Addr {
    let usable = |ip: &Ipv4Addr| !ip.is_loopback() && !ip.is_unspecified() && !ip.is_link_local();
    for target in [
        "192.0.2.1:9",
        "198.51.100.1:9",
        "10.255.255.254:9",
        "8.8.8.8:53",
    ] {
        let Ok(socket) = std::net::UdpSocket::bind("0.0.0.0:0") else {
            continue;
        };
        if socket.connect(target).is_err() {
            continue;
        }
        if let Ok(std::net::SocketAddr::V4(local)) = socket.local_addr()
            && usable(local.ip())
        {
            return *local.ip();
        }
    }
    let listed = std::process::Command::new("ip")
        .args(["-4", "-o", "addr"])
        .output();
    if let Ok(out) = listed {
        let text = String::from_utf8_lossy(&out.stdout);
        for word in text.split_whitespace() {
            if let Some(ip) = word
                .split('/')
                .next()
                .and_then(|a| a.parse::<Ipv4Addr>().ok())
                && word.contains('/')
                && usable(&ip)
            {
                return ip;
            }
        }
    }
    panic!(
        "this machine has no non-loopback IPv4 address, so the https_required test cannot send a request \
         from one; give it one (e.g. `ip addr add 192.0.2.2/24 dev eth0`) rather than skipping the test"
    );
}

/// A client whose requests leave from `ip`, with no proxy in between.
pub fn client_from(ip: Ipv4Addr) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(IpAddr::V4(ip))
        .no_proxy()
        .build()
        .expect("client")
}

/// The host listening on every interface (its `base` then names 0.0.0.0),
/// optionally trusting `proxy` to terminate TLS.
pub async fn spawn_on_all_interfaces(db: Db, proxy: Option<Ipv4Addr>) -> TestApp {
    TestApp::spawn_with(db, move |config| {
        config.listen = "0.0.0.0:0".parse().expect("address");
        if let Some(ip) = proxy {
            config.trusted_proxies.nets = vec![IpAddr::V4(ip).into()];
        }
    })
    .await
}

async fn spawn_behind_proxy(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        config.trusted_proxies.nets = vec!["127.0.0.1/32".parse().expect("net")]
    })
    .await
}

// ---------------------------------------------------------------------------
// Valid JWTs
// ---------------------------------------------------------------------------

db_test!(
    async fn a_valid_rs256_jwt_reaches_the_handler(app: spawn_jwt) {
        let stored = posted(&app, "d1", "ext-1").await;
        let answer = d1_with(&app, &jwt(&claims(&app, Some("d1")))).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert_eq!(ids(&answer.body), vec![id_of(&stored)]);
    }
);

db_test!(
    async fn a_valid_rs512_jwt_reaches_the_handler(app) {
        create_token(&app.state, JWT_KEY, "all").await;
        register_key_for(&app, JWT_KEY, PUBLIC_PEM, "RS512").await;
        let token = sign(Algorithm::RS512, JWT_KEY, &claims(&app, Some("d1")));
        let body = json!({"questionnaire_key": "phq9", "external_id": "ext-1", "answer_data": phq9_all_answered()});
        let created = app
            .send_as(
                Method::POST,
                D1_RESPONSES,
                Some((body.to_string().into_bytes(), "application/json")),
                Some(&bearer(&token)),
            )
            .await;
        assert_eq!(created.status, 201, "{}", created.text);
        let list = d1_with(&app, &token).await;
        assert_eq!(list.status, 200, "{}", list.text);
        assert_eq!(ids(&list.body), vec![id_of(&created.body)]);
    }
);

db_test!(
    async fn a_jwt_without_sub_works_on_a_non_dossier_route(app: spawn_jwt) {
        let answer = get_as(&app, PROTOCOLS, &bearer(&jwt(&claims(&app, None)))).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert_eq!(answer.body, app.get(PROTOCOLS).await.body);
        let questionnaire = get_as(
            &app,
            "/api/v1/questionnaires/phq9",
            &bearer(&jwt(&claims(&app, None))),
        )
        .await;
        assert_eq!(questionnaire.status, 200, "{}", questionnaire.text);
    }
);

db_test!(
    async fn a_jwt_sub_matches_the_dossier_under_every_path_form(app: spawn_jwt) {
        let token = jwt(&claims(&app, Some("d1")));
        for path in [
            "/api/v1/dossier/d1/responses",
            "/api/v1/dossiers/d1/responses.json",
            "/api/v1/dossiers/d1/responses/",
        ] {
            let answer = get_as(&app, path, &bearer(&token)).await;
            assert_eq!(answer.status, 200, "{path}: {}", answer.text);
        }
        // The path is compared percent-decoded.
        let spaced = jwt(&claims(&app, Some("a b")));
        let answer = get_as(&app, "/api/v1/dossiers/a%20b/responses", &bearer(&spaced)).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
    }
);

// ---------------------------------------------------------------------------
// Forged and unacceptable JWTs: every one a 401 with the Bearer challenge.
// Representatives of each stage of verification (header, signature,
// claims, time, key lookup); the verifier's unit tests hold the rest.
// ---------------------------------------------------------------------------

db_test!(
    async fn alg_none_is_refused_in_every_spelling(app: spawn_jwt) {
        let claims = claims(&app, Some("d1"));
        let real_signature = jwt(&claims)
            .rsplit('.')
            .next()
            .map(str::to_owned)
            .expect("signature");
        for alg in ["none", "None", "NONE", "nOnE", " none", "none "] {
            let header = json!({"typ": "JWT", "alg": alg, "kid": JWT_KEY});
            let bare = unsigned(&header, &claims);
            assert_bad_jwt(&d1_with(&app, &bare).await);
            // With a signature that is valid for RS256 over other bytes.
            assert_bad_jwt(&d1_with(&app, &format!("{bare}{real_signature}")).await);
        }
        // No alg at all, or not a string.
        for header in [
            json!({"typ": "JWT", "kid": JWT_KEY}),
            json!({"typ": "JWT", "alg": null, "kid": JWT_KEY}),
        ] {
            assert_bad_jwt(&d1_with(&app, &unsigned(&header, &claims)).await);
        }
    }
);

db_test!(
    async fn a_jwt_signed_with_an_unregistered_key_is_refused(app: spawn_jwt) {
        let token = raw_signed(
            &standard_header(),
            &claims(&app, Some("d1")),
            Algorithm::RS256,
            &other_private_key(),
        );
        assert_bad_jwt(&d1_with(&app, &token).await);
    }
);

db_test!(
    async fn a_kid_with_sql_characters_is_refused(app: spawn_jwt) {
        for kid in [
            "epd-jwt' OR '1'='1",
            "' OR 1=1 --",
            "x'; DELETE FROM api_tokens; --",
            "x\"; DROP TABLE api_token_keys; --",
            "epd-jwt%",
            "%",
            "_______",
        ] {
            let token = sign(Algorithm::RS256, kid, &claims(&app, Some("d1")));
            assert_bad_jwt(&d1_with(&app, &token).await);
        }
        app.state
            .reload_tokens()
            .await
            .expect("token tables still readable");
        assert_eq!(
            d1_with(&app, &jwt(&claims(&app, Some("d1")))).await.status,
            200
        );
        assert_eq!(app.get(D1_RESPONSES).await.status, 200);
    }
);

db_test!(
    async fn a_jwt_for_another_audience_is_refused(app: spawn_jwt) {
        for aud in [
            json!("API"),
            json!("apis"),
            json!("https://api"),
            json!(" api"),
            json!(""),
            json!(null),
            json!(1),
        ] {
            let token = jwt(&with(claims(&app, Some("d1")), "aud", aud.clone()));
            assert_bad_jwt(&d1_with(&app, &token).await);
        }
    }
);

db_test!(
    async fn an_expired_jwt_is_refused(app: spawn_jwt) {
        let token = jwt(&claims(&app, Some("d1")));
        assert_eq!(d1_with(&app, &token).await.status, 200);
        // exp is now + 600; past it by more than the 60 s leeway.
        app.clock.advance(Duration::seconds(600 + 61));
        assert_bad_jwt(&d1_with(&app, &token).await);
        // Issued long ago and expired long ago.
        let now = app.state.now().timestamp();
        let mut old = with(claims(&app, Some("d1")), "iat", json!(now - 4000));
        old["exp"] = json!(now - 3600);
        assert_bad_jwt(&d1_with(&app, &jwt(&old)).await);
    }
);

// ---------------------------------------------------------------------------
// The JWT subject
// ---------------------------------------------------------------------------

db_test!(
    async fn a_jwt_without_sub_is_refused_on_a_dossier_route(app: spawn_jwt) {
        let token = jwt(&claims(&app, None));
        assert_forbidden(&d1_with(&app, &token).await, "sub_missing");
        assert_forbidden(
            &get_as(&app, "/api/v1/dossiers/d1/respondents", &bearer(&token)).await,
            "sub_missing",
        );
        // Nothing is written either.
        let body = json!({"questionnaire_key": "phq9", "external_id": "ext-1", "answer_data": phq9_all_answered()});
        let answer = app
            .send_as(
                Method::POST,
                D1_RESPONSES,
                Some((body.to_string().into_bytes(), "application/json")),
                Some(&bearer(&token)),
            )
            .await;
        assert_forbidden(&answer, "sub_missing");
        assert_eq!(app.get(D1_RESPONSES).await.body, json!([]));
    }
);

db_test!(
    async fn a_jwt_whose_sub_differs_from_the_path_dossier_is_refused(app: spawn_jwt) {
        let token = jwt(&claims(&app, Some("d1")));
        for path in [
            "/api/v1/dossiers/d2/responses",
            "/api/v1/dossier/d2/responses",
            "/api/v1/dossiers/D1/responses",
            "/api/v1/dossiers/d1x/responses",
        ] {
            assert_forbidden(&get_as(&app, path, &bearer(&token)).await, "sub_mismatch");
        }
    }
);

db_test!(
    async fn a_jwt_for_dossier_a_cannot_read_or_write_dossier_b(app: spawn_jwt) {
        posted(&app, "b", "ext-b").await;
        let respondent = app.get("/api/v1/dossiers/b/respondents").await.body[0]["id"]
            .as_i64()
            .expect("respondent of b");
        let token = bearer(&jwt(&claims(&app, Some("a"))));
        assert_forbidden(
            &get_as(&app, "/api/v1/dossiers/b/responses", &token).await,
            "sub_mismatch",
        );
        assert_forbidden(
            &get_as(&app, "/api/v1/dossiers/b/respondents", &token).await,
            "sub_mismatch",
        );
        assert_forbidden(
            &get_as(
                &app,
                &format!("/api/v1/dossiers/b/respondents/{respondent}"),
                &token,
            )
            .await,
            "sub_mismatch",
        );
        let delete = app
            .send_as(
                Method::DELETE,
                "/api/v1/dossiers/b/responses/ext-b",
                None,
                Some(&token),
            )
            .await;
        assert_forbidden(&delete, "sub_mismatch");
        // And under its own dossier, b's ids name nothing.
        let own = get_as(
            &app,
            &format!("/api/v1/dossiers/a/respondents/{respondent}"),
            &token,
        )
        .await;
        assert_error(&own, 404, error("respondent", "not_found"));
        let own_delete = app
            .send_as(
                Method::DELETE,
                "/api/v1/dossiers/a/responses/ext-b",
                None,
                Some(&token),
            )
            .await;
        assert_error(&own_delete, 404, error("external_id", "not_found"));
        assert_eq!(
            ids(&app.get("/api/v1/dossiers/b/responses").await.body).len(),
            1
        );
    }
);

// ---------------------------------------------------------------------------
// Basic credentials and revocation
// ---------------------------------------------------------------------------

db_test!(async fn wrong_secret_and_unknown_key_get_the_identical_answer(app) {
    let wrong_secret = get_as(&app, D1_RESPONSES, &basic(tests::TEST_KEY, "not-the-secret")).await;
    let unknown_key = get_as(&app, D1_RESPONSES, &basic("nobody", &app.secret)).await;
    assert_unauthorized(&wrong_secret, BASIC_CHALLENGE);
    assert_unauthorized(&unknown_key, BASIC_CHALLENGE);
    assert_eq!(wrong_secret.status, unknown_key.status);
    assert_eq!(wrong_secret.text, unknown_key.text);
    for header in ["www-authenticate", "content-type", "cache-control"] {
        assert_eq!(wrong_secret.headers.get(header), unknown_key.headers.get(header), "{header}");
    }
});

db_test!(async fn basic_credentials_must_match_exactly(app) {
    let secret = app.secret.clone();
    for (key, secret) in [
        ("TEST", secret.clone()),
        ("test ", secret.clone()),
        ("test", format!("{secret} ")),
        ("test", secret.to_uppercase()),
        ("test", secret[..secret.len() - 1].to_owned()),
        ("test", String::new()),
        ("", secret.clone()),
    ] {
        assert_unauthorized(&get_as(&app, D1_RESPONSES, &basic(key, &secret)).await, BASIC_CHALLENGE);
    }
});

db_test!(async fn a_revoked_token_is_refused_with_basic(app) {
    let secret = create_token(&app.state, "old-epd", "all").await;
    assert_eq!(get_as(&app, D1_RESPONSES, &basic("old-epd", &secret)).await.status, 200);
    assert!(app.state.store().revoke_token("old-epd".to_owned(), app.state.now()).await.expect("store"));
    app.state.reload_tokens().await.expect("reload");
    assert_unauthorized(&get_as(&app, D1_RESPONSES, &basic("old-epd", &secret)).await, BASIC_CHALLENGE);
    assert_unauthorized(&get_as(&app, PROTOCOLS, &basic("old-epd", &secret)).await, BASIC_CHALLENGE);
});

db_test!(
    async fn a_revoked_token_is_refused_with_jwt(app: spawn_jwt) {
        let token = jwt(&claims(&app, Some("d1")));
        assert_eq!(d1_with(&app, &token).await.status, 200);
        assert!(
            app.state
                .store()
                .revoke_token(JWT_KEY.to_owned(), app.state.now())
                .await
                .expect("store")
        );
        app.state.reload_tokens().await.expect("reload");
        assert_bad_jwt(&d1_with(&app, &token).await);
        assert_bad_jwt(&d1_with(&app, &jwt(&claims(&app, Some("d1")))).await);
        assert_bad_jwt(&get_as(&app, PROTOCOLS, &bearer(&jwt(&claims(&app, None)))).await);
    }
);

db_test!(async fn no_credentials_are_refused_on_every_endpoint_group(app) {
    let respondent_path = "/api/v1/dossiers/d1/respondents";
    for (method, path) in [
        (Method::GET, D1_RESPONSES),
        (Method::POST, D1_RESPONSES),
        (Method::PUT, "/api/v1/dossiers/d1/responses/x"),
        (Method::DELETE, "/api/v1/dossiers/d1/responses/x"),
        (Method::GET, respondent_path),
        (Method::GET, PROTOCOLS),
        (Method::GET, "/api/v1/questionnaires/phq9"),
    ] {
        let answer = app.send_as(method.clone(), path, None, None).await;
        assert_unauthorized(&answer, NO_CREDENTIALS_CHALLENGE);
    }
    // The public routes stay public.
    assert_eq!(app.send_as(Method::GET, "/health", None, None).await.status, 200);
    assert_eq!(app.send_as(Method::GET, "/api/v1/openapi.json", None, None).await.status, 200);
});

db_test!(async fn malformed_authorization_headers_are_refused(app) {
    use base64::engine::general_purpose::STANDARD;
    let no_colon = format!("Basic {}", STANDARD.encode(format!("test{}", app.secret)));
    let not_utf8 = format!("Basic {}", STANDARD.encode([0xff, 0xfe, b':', b'x']));
    let doubled = format!("{} {}", app.basic_header(), app.basic_header());
    let cases: Vec<(String, &str)> = vec![
        ("Basic".to_owned(), BASIC_CHALLENGE),
        ("Basic !!!".to_owned(), BASIC_CHALLENGE),
        (no_colon, BASIC_CHALLENGE),
        (not_utf8, BASIC_CHALLENGE),
        (doubled, BASIC_CHALLENGE),
        (format!("Digest {}", &app.basic_header()[6..]), NO_CREDENTIALS_CHALLENGE),
        (format!("Token {}", app.secret), NO_CREDENTIALS_CHALLENGE),
        (app.secret.clone(), NO_CREDENTIALS_CHALLENGE),
        ("Bearer".to_owned(), BEARER_CHALLENGE),
        ("Bearer not-a-jwt".to_owned(), BEARER_CHALLENGE),
        ("Bearer a.b".to_owned(), BEARER_CHALLENGE),
        ("Bearer a.b.c.d".to_owned(), BEARER_CHALLENGE),
        ("Bearer ...".to_owned(), BEARER_CHALLENGE),
        ("Bearer e30.e30.e30".to_owned(), BEARER_CHALLENGE),
    ];
    for (header, expected) in cases {
        let answer = get_as(&app, D1_RESPONSES, &header).await;
        assert_eq!(answer.status, 401, "{header:?}: {}", answer.text);
        assert_unauthorized(&answer, expected);
    }
    // A header value with bytes that are not visible ASCII.
    let raw = reqwest::header::HeaderValue::from_bytes(b"Basic \xe9\xe9\xe9").expect("obs-text is a valid header value");
    let answer = app.client.get(app.url(D1_RESPONSES)).header("authorization", raw).send().await.expect("answer");
    assert_eq!(answer.status(), 401);
    assert_eq!(answer.headers().get("www-authenticate").and_then(|v| v.to_str().ok()), Some(BASIC_CHALLENGE));
});

// ---------------------------------------------------------------------------
// Rights
// ---------------------------------------------------------------------------

db_test!(async fn a_token_without_the_responses_right_cannot_touch_responses(app) {
    let secret = create_token(&app.state, "protocols-only", "protocols").await;
    let auth = basic("protocols-only", &secret);
    assert_eq!(get_as(&app, PROTOCOLS, &auth).await.status, 200);
    assert_forbidden(&get_as(&app, D1_RESPONSES, &auth).await, "right_missing");
    let body = json!({"questionnaire_key": "phq9", "external_id": "ext-1", "answer_data": phq9_all_answered()});
    let created = app.send_as(Method::POST, D1_RESPONSES, Some((body.to_string().into_bytes(), "application/json")), Some(&auth)).await;
    assert_forbidden(&created, "right_missing");
    assert_forbidden(&get_as(&app, "/api/v1/dossiers/d1/respondents", &auth).await, "right_missing");
    assert_eq!(app.get(D1_RESPONSES).await.body, json!([]), "the refused POST stored nothing");
});

db_test!(async fn a_token_with_only_the_responses_right_cannot_read_protocols_or_questionnaires(app) {
    let secret = create_token(&app.state, "responses-only", "responses").await;
    let auth = basic("responses-only", &secret);
    assert_eq!(get_as(&app, D1_RESPONSES, &auth).await.status, 200);
    assert_forbidden(&get_as(&app, PROTOCOLS, &auth).await, "right_missing");
    assert_forbidden(&get_as(&app, "/api/v1/questionnaires/phq9", &auth).await, "right_missing");
    assert_forbidden(&get_as(&app, "/api/v1/dossiers/d1/respondents", &auth).await, "right_missing");
});

db_test!(async fn a_jwt_carries_only_the_rights_of_its_token(app) {
    jwt_consumer(&app, "jwt-protocols", "protocols").await;
    let token = sign(Algorithm::RS256, "jwt-protocols", &claims(&app, Some("d1")));
    assert_eq!(get_as(&app, PROTOCOLS, &bearer(&token)).await.status, 200);
    assert_forbidden(&d1_with(&app, &token).await, "right_missing");
});

// ---------------------------------------------------------------------------
// IP allow-lists and X-Forwarded-For
// ---------------------------------------------------------------------------

db_test!(async fn a_token_used_outside_its_ip_allow_list_is_refused(app) {
    let secret = create_token_with(&app.state, "remote-epd", "all", "192.0.2.0/24", "").await;
    let auth = basic("remote-epd", &secret);
    assert_forbidden(&get_as(&app, D1_RESPONSES, &auth).await, "ip_not_allowed");
    assert_forbidden(&get_as(&app, PROTOCOLS, &auth).await, "ip_not_allowed");
    // The same for a JWT of such a token.
    register_key(&app, "remote-epd", PUBLIC_PEM).await;
    let token = sign(Algorithm::RS256, "remote-epd", &claims(&app, Some("d1")));
    assert_forbidden(&d1_with(&app, &token).await, "ip_not_allowed");
});

db_test!(async fn a_token_used_from_an_allowed_address_is_admitted(app) {
    for (key, list) in [("single", "192.0.2.7, 127.0.0.1"), ("range", "127.0.0.0/8"), ("mapped", "::ffff:127.0.0.1")] {
        let secret = create_token_with(&app.state, key, "all", list, "").await;
        let answer = get_as(&app, D1_RESPONSES, &basic(key, &secret)).await;
        assert_eq!(answer.status, 200, "{list}: {}", answer.text);
    }
});

db_test!(async fn x_forwarded_for_is_ignored_without_a_trusted_proxy(app) {
    let secret = create_token_with(&app.state, "spoofer", "all", "192.0.2.7", "").await;
    let auth = basic("spoofer", &secret);
    for forwarded in ["192.0.2.7", "198.51.100.1, 192.0.2.7", "192.0.2.7, 127.0.0.1"] {
        let answer = get_with(&app, D1_RESPONSES, &[("authorization", &auth), ("x-forwarded-for", forwarded)]).await;
        assert_forbidden(&answer, "ip_not_allowed");
    }
    let answer = get_with(&app, D1_RESPONSES, &[("authorization", &auth), ("forwarded", "for=192.0.2.7"), ("x-real-ip", "192.0.2.7")]).await;
    assert_forbidden(&answer, "ip_not_allowed");
});

db_test!(
    async fn x_forwarded_for_is_honoured_behind_a_trusted_proxy(app: spawn_behind_proxy) {
        let secret = create_token_with(&app.state, "proxied", "all", "192.0.2.7", "").await;
        let auth = basic("proxied", &secret);
        // The proxy terminated TLS and says so.
        async fn via_proxy(app: &TestApp, auth: &str, forwarded: Option<&str>) -> Answer {
            let mut headers = vec![("authorization", auth), ("x-forwarded-proto", "https")];
            headers.extend(forwarded.map(|f| ("x-forwarded-for", f)));
            get_with(app, D1_RESPONSES, &headers).await
        }
        let answer = via_proxy(&app, &auth, Some("192.0.2.7")).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        // The proxy itself is not the allowed client.
        assert_forbidden(&via_proxy(&app, &auth, None).await, "ip_not_allowed");
        // The client may prepend anything; the proxy appends what it saw.
        for forwarded in ["192.0.2.7, 198.51.100.3", "192.0.2.7, garbage"] {
            assert_forbidden(
                &via_proxy(&app, &auth, Some(forwarded)).await,
                "ip_not_allowed",
            );
        }
    }
);

db_test!(
    async fn the_ip_check_comes_before_the_right_and_subject_checks(app: spawn_jwt) {
        // A caller at a refused address learns nothing about what the token may do.
        let secret = create_token_with(&app.state, "narrow", "protocols", "192.0.2.0/24", "").await;
        assert_forbidden(
            &get_as(&app, D1_RESPONSES, &basic("narrow", &secret)).await,
            "ip_not_allowed",
        );
        register_key(&app, "narrow", PUBLIC_PEM).await;
        let no_sub = sign(Algorithm::RS256, "narrow", &claims(&app, None));
        assert_forbidden(&d1_with(&app, &no_sub).await, "ip_not_allowed");
    }
);

// ---------------------------------------------------------------------------
// Transport
// ---------------------------------------------------------------------------

/// The host on every interface, trusting no proxy.
pub async fn spawn_on_all_interfaces_untrusted(db: Db) -> TestApp {
    spawn_on_all_interfaces(db, None).await
}

/// The host on every interface, trusting this machine's own non-loopback
/// address as a TLS-terminating proxy.
async fn spawn_on_all_interfaces_behind_own_proxy(db: Db) -> TestApp {
    spawn_on_all_interfaces(db, Some(non_loopback_ipv4())).await
}

/// The port of an app started by [`spawn_on_all_interfaces`].
pub fn port_of(app: &TestApp) -> u16 {
    app.base
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port in the base URL")
}

db_test!(
    async fn credentials_over_plain_http_from_a_non_loopback_address_are_refused(
        app: spawn_on_all_interfaces_untrusted,
    ) {
        let ip = non_loopback_ipv4();
        let port = port_of(&app);
        jwt_consumer(&app, JWT_KEY, "all").await;
        let client = client_from(ip);
        let url = |path: &str| format!("http://{ip}:{port}{path}");
        let basic_header = app.basic_header();
        let answer = send_raw(
            &client,
            Method::GET,
            &url(D1_RESPONSES),
            &[("authorization", &basic_header)],
            None,
        )
        .await;
        assert_forbidden(&answer, "https_required");
        let token = bearer(&jwt(&claims(&app, Some("d1"))));
        assert_forbidden(
            &send_raw(
                &client,
                Method::GET,
                &url(D1_RESPONSES),
                &[("authorization", &token)],
                None,
            )
            .await,
            "https_required",
        );
        assert_forbidden(
            &send_raw(
                &client,
                Method::GET,
                &url(PROTOCOLS),
                &[("authorization", &token)],
                None,
            )
            .await,
            "https_required",
        );
        // Wrong credentials too: the refusal does not depend on their validity.
        let wrong = send_raw(
            &client,
            Method::GET,
            &url(D1_RESPONSES),
            &[("authorization", "Basic Zm9vOmJhcg==")],
            None,
        )
        .await;
        assert_forbidden(&wrong, "https_required");
        // Forwarding headers do not make a stranger a proxy.
        let headers = [
            ("authorization", basic_header.as_str()),
            ("x-forwarded-for", "127.0.0.1"),
            ("x-forwarded-proto", "https"),
        ];
        assert_forbidden(
            &send_raw(&client, Method::GET, &url(D1_RESPONSES), &headers, None).await,
            "https_required",
        );
        // Without credentials there is nothing to protect: the usual 401, and
        // the public routes answer.
        assert_unauthorized(
            &send_raw(&client, Method::GET, &url(D1_RESPONSES), &[], None).await,
            NO_CREDENTIALS_CHALLENGE,
        );
        assert_eq!(
            send_raw(&client, Method::GET, &url("/health"), &[], None)
                .await
                .status,
            200
        );
        // Loopback on the same listener is fine.
        let local_url = format!("http://127.0.0.1:{port}{D1_RESPONSES}");
        let local = send_raw(
            &client_from(Ipv4Addr::LOCALHOST),
            Method::GET,
            &local_url,
            &[("authorization", &basic_header)],
            None,
        )
        .await;
        assert_eq!(local.status, 200, "{}", local.text);
    }
);

db_test!(
    async fn credentials_over_plain_http_from_a_trusted_proxy_are_accepted(
        app: spawn_on_all_interfaces_behind_own_proxy,
    ) {
        let ip = non_loopback_ipv4();
        let url = format!("http://{ip}:{}{D1_RESPONSES}", port_of(&app));
        let basic_header = app.basic_header();
        let answer = send_raw(
            &client_from(ip),
            Method::GET,
            &url,
            &[
                ("authorization", &basic_header),
                ("x-forwarded-proto", "https"),
            ],
            None,
        )
        .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert_eq!(answer.body, json!([]));
        // A proxy that does not say https may have taken the request in clear.
        for proto in [None, Some("http")] {
            let mut headers = vec![("authorization", basic_header.as_str())];
            headers.extend(proto.map(|p| ("x-forwarded-proto", p)));
            let answer = send_raw(&client_from(ip), Method::GET, &url, &headers, None).await;
            assert_forbidden(&answer, "https_required");
        }
    }
);

// ---------------------------------------------------------------------------
// Other dossiers' ids
// ---------------------------------------------------------------------------

db_test!(async fn ids_of_another_dossier_are_not_found(app) {
    let stored = posted(&app, "a", "ext-a").await;
    let prepared = prepare(&app, "a", "phq9", None, None).await;
    let respondent = app.get("/api/v1/dossiers/a/respondents").await.body[0]["id"].as_i64().expect("respondent of a");
    posted(&app, "b", "ext-b").await;

    let answer = app.get(&format!("/api/v1/dossiers/b/respondents/{respondent}")).await;
    assert_error(&answer, 404, error("respondent", "not_found"));
    let body = json!({"questionnaire_key": "phq9", "answer_data": phq9_all_answered()});
    assert_error(&app.put(&response("b", prepared), &body).await, 404, error("external_id", "not_found"));
    assert_error(&app.put(&response("b", "ext-a"), &body).await, 404, error("external_id", "not_found"));
    assert_error(&app.delete(&response("b", "ext-a")).await, 404, error("external_id", "not_found"));
    assert_error(&app.delete(&response("b", id_of(&stored))).await, 404, error("external_id", "not_found"));
    // Dossier b lists only its own; a's responses are untouched.
    let b = app.get(&responses("b")).await.body;
    assert_eq!(b.as_array().map(Vec::len), Some(1));
    assert_eq!(b[0]["external_id"], "ext-b");
    let a = app.get(&responses("a")).await.body;
    assert_eq!(ids(&a), vec![id_of(&stored), prepared]);
    assert_eq!(a[1]["status"], "open");
});
