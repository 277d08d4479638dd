//! HTTPS served by the host itself, with a certificate made in the test.

use host::config::TlsFiles;
use tests::{Db, TEST_KEY, TestApp, basic};

/// A self-signed certificate for localhost, written to `dir`.
pub fn certificate(dir: &std::path::Path) -> (TlsFiles, reqwest::Certificate) {
    let made =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("certificate");
    let files = TlsFiles {
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    };
    std::fs::write(&files.cert, made.cert.pem()).expect("write certificate");
    std::fs::write(&files.key, made.key_pair.serialize_pem()).expect("write key");
    let trusted =
        reqwest::Certificate::from_pem(made.cert.pem().as_bytes()).expect("parse certificate");
    (files, trusted)
}

async fn tls_app(db: Db) -> (TestApp, reqwest::Client, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (files, trusted) = certificate(dir.path());
    let app = TestApp::spawn_with(db, move |config| config.tls = Some(files)).await;
    let client = reqwest::Client::builder()
        .add_root_certificate(trusted)
        .https_only(true)
        .build()
        .expect("client");
    (app, client, dir)
}

async fn authenticated_request_over_tls_reaches_the_handler(db: Db) {
    let (app, client, _dir) = tls_app(db).await;
    assert!(app.base.starts_with("https://"));
    let res = client
        .get(app.url("/api/v1/dossiers/d1/responses"))
        .header("authorization", basic(TEST_KEY, &app.secret))
        .send()
        .await
        .expect("TLS request");
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.headers()["strict-transport-security"],
        "max-age=31536000"
    );
    assert_eq!(res.text().await.expect("body"), "[]");
}

async fn every_answer_over_tls_carries_hsts(db: Db) {
    let (app, client, _dir) = tls_app(db).await;
    for path in [
        "/health",
        "/api/v1/dossiers/d1/responses",
        "/nowhere",
        "/fill_out/nothing",
    ] {
        let res = client.get(app.url(path)).send().await.expect("TLS request");
        assert_eq!(
            res.headers()["strict-transport-security"],
            "max-age=31536000",
            "{path} answered {}",
            res.status()
        );
    }
}

async fn plain_http_answers_carry_no_hsts(db: Db) {
    let app = TestApp::spawn(db).await;
    let res = reqwest::get(app.url("/health")).await.expect("request");
    assert_eq!(res.status(), 200);
    assert!(res.headers().get("strict-transport-security").is_none());
}

async fn plain_http_to_the_tls_port_gets_no_answer(db: Db) {
    let (app, _client, _dir) = tls_app(db).await;
    let plain = app.base.replace("https://", "http://");
    let result = reqwest::Client::new()
        .get(format!("{plain}/health"))
        .send()
        .await;
    assert!(
        result.is_err(),
        "a plain HTTP request to the TLS listener must not be answered: {result:?}"
    );
}

/// The TLS error somewhere in `error`'s chain of causes, if any. An I/O
/// error's `source` skips the error it wraps, so that one is opened
/// instead.
fn tls_error<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        next = match e
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            Some(wrapped) => Some(wrapped as &(dyn std::error::Error + 'static)),
            None => e.source(),
        };
    }
    None
}

async fn a_client_that_does_not_trust_the_certificate_is_refused(db: Db) {
    let (app, trusting, _dir) = tls_app(db).await;
    // The host answers a client that trusts its certificate: what follows
    // is about the certificate, not a closed port.
    let answer = trusting
        .get(app.url("/health"))
        .send()
        .await
        .expect("TLS request");
    assert_eq!(answer.status(), 200);
    let stranger = reqwest::Client::builder()
        .https_only(true)
        .build()
        .expect("client");
    let error = stranger
        .get(app.url("/health"))
        .send()
        .await
        .expect_err("a client without the certificate's issuer refuses it");
    assert!(
        matches!(
            tls_error(&error),
            Some(rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer
            ))
        ),
        "refused for another reason than the certificate: {error:?}"
    );
}

macro_rules! both {
    ($($name:ident),*) => {$(
        mod $name {
            #[tokio::test]
            async fn sqlite() { super::$name(tests::Db::Sqlite).await }
            #[tokio::test]
            async fn postgres() { super::$name(tests::Db::Postgres).await }
        }
    )*};
}

both!(
    authenticated_request_over_tls_reaches_the_handler,
    every_answer_over_tls_carries_hsts,
    plain_http_answers_carry_no_hsts,
    plain_http_to_the_tls_port_gets_no_answer,
    a_client_that_does_not_trust_the_certificate_is_refused
);
