//! Behind a reverse proxy (docs/operations.md#behind-a-reverse-proxy): every
//! `X-Forwarded-For` line, or RFC 7239 `Forwarded` when the proxies write
//! that (`proxy_header`), decides the client for IP allow-lists and the
//! access log, and the other header changes nothing; credentials relayed by
//! a proxy or a loopback peer count as HTTPS only when the proxy says so.
//! The test client connects from loopback and plays the proxy.

use host::config::ProxyHeader;
use tests::{Answer, Db, TestApp, create_token_with, db_test};

use crate::auth::{D1_RESPONSES, assert_forbidden, get_with};

/// A client address outside the test machine, on the token's allow-list.
const ALLOWED: &str = "192.0.2.7";
/// The client's real address as the proxy saw it: not on the allow-list.
const REAL: &str = "198.51.100.3";

/// The host trusting the loopback address as its proxy, which writes
/// X-Forwarded-For (the default).
async fn behind_loopback_proxy(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        config.trusted_proxies.nets = vec!["127.0.0.1/32".parse().expect("net")];
    })
    .await
}

/// The host trusting the loopback address as its proxy, which writes
/// Forwarded.
async fn behind_loopback_forwarded_proxy(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        config.trusted_proxies.nets = vec!["127.0.0.1/32".parse().expect("net")];
        config.trusted_proxies.header = ProxyHeader::Forwarded;
    })
    .await
}

/// The host trusting a proxy elsewhere (loopback is then no proxy).
async fn behind_another_proxy(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        config.trusted_proxies.nets = vec!["10.0.0.1/32".parse().expect("net")];
    })
    .await
}

/// The `Authorization` header of a token usable only from [`ALLOWED`].
async fn allow_listed(app: &TestApp) -> String {
    let secret = create_token_with(&app.state, "allow-listed", "all", ALLOWED, "").await;
    tests::basic("allow-listed", &secret)
}

/// The client addresses of d1's access log, oldest first, once the
/// counted refusals are written (refusals of a minute are one row per
/// client, route, status and token, after the rows of the requests served).
async fn logged_clients(app: &TestApp) -> Vec<String> {
    app.state.flush_refusals().await;
    let log = app.state.store().access_log(Some("d1"), None).await;
    log.expect("access log")
        .into_iter()
        .map(|row| row.client)
        .collect()
}

/// A request as the proxy relays it: over TLS, with `headers` added.
async fn relayed(app: &TestApp, auth: &str, headers: &[(&str, &str)]) -> Answer {
    let mut all = vec![("authorization", auth), ("x-forwarded-proto", "https")];
    all.extend_from_slice(headers);
    get_with(app, D1_RESPONSES, &all).await
}

db_test!(
    async fn a_forged_first_x_forwarded_for_line_does_not_pass_the_allow_list(
        app: behind_loopback_proxy,
    ) {
        let auth = allow_listed(&app).await;
        // The client sends its own line; the proxy adds one (HAProxy's
        // `option forwardfor`) instead of appending to it.
        let forged = relayed(
            &app,
            &auth,
            &[("x-forwarded-for", ALLOWED), ("x-forwarded-for", REAL)],
        )
        .await;
        assert_forbidden(&forged, "ip_not_allowed");
        // The client whose real address is allowed passes, whatever it forged.
        let genuine = relayed(
            &app,
            &auth,
            &[("x-forwarded-for", REAL), ("x-forwarded-for", ALLOWED)],
        )
        .await;
        assert_eq!(genuine.status, 200, "{}", genuine.text);
        assert_eq!(logged_clients(&app).await, vec![ALLOWED, REAL]);
    }
);

db_test!(
    async fn a_forged_forwarded_header_neither_names_nor_hides_the_client(
        app: behind_loopback_proxy,
    ) {
        let auth = allow_listed(&app).await;
        // The proxy writes X-Forwarded-For and passes on the Forwarded the
        // client made up: an allowed address, or none at all.
        for forged in ["for=192.0.2.7", "for=unknown", "for=_hidden", "garbage"] {
            let answer = relayed(
                &app,
                &auth,
                &[("forwarded", forged), ("x-forwarded-for", REAL)],
            )
            .await;
            assert_forbidden(&answer, "ip_not_allowed");
        }
        // The log names the client the proxy saw, every time: the four
        // refusals are counted in one row.
        assert_eq!(logged_clients(&app).await, vec![REAL]);
        let log = app
            .state
            .store()
            .access_log(Some("d1"), None)
            .await
            .expect("log");
        assert_eq!(log[0].refusals, Some(4));
    }
);

db_test!(
    async fn forwarded_names_the_client_behind_a_trusted_proxy_that_writes_it(
        app: behind_loopback_forwarded_proxy,
    ) {
        let auth = allow_listed(&app).await;
        let by_forwarded = |header: &'static str| [("forwarded", header)];
        let answer = relayed(&app, &auth, &by_forwarded("for=192.0.2.7;proto=https")).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        let quoted = relayed(
            &app,
            &auth,
            &by_forwarded("for=\"192.0.2.7:4711\";proto=https"),
        )
        .await;
        assert_eq!(quoted.status, 200, "{}", quoted.text);
        // A client's element left of the proxy's is not read.
        let forged = relayed(
            &app,
            &auth,
            &by_forwarded("for=192.0.2.7;proto=https, for=198.51.100.3;proto=https"),
        )
        .await;
        assert_forbidden(&forged, "ip_not_allowed");
        let forged_line = relayed(
            &app,
            &auth,
            &[
                ("forwarded", "for=192.0.2.7;proto=https"),
                ("forwarded", "for=198.51.100.3;proto=https"),
            ],
        )
        .await;
        assert_forbidden(&forged_line, "ip_not_allowed");
        // An address the proxy hides names no client: no allow-list
        // admits it, and the log says so.
        let hidden = relayed(&app, &auth, &by_forwarded("for=_hidden;proto=https")).await;
        assert_forbidden(&hidden, "ip_not_allowed");
        // X-Forwarded-For, which this proxy passes on, changes nothing.
        let passed_on = relayed(
            &app,
            &auth,
            &[
                ("forwarded", "for=198.51.100.3;proto=https"),
                ("x-forwarded-for", ALLOWED),
            ],
        )
        .await;
        assert_forbidden(&passed_on, "ip_not_allowed");
        assert_eq!(
            logged_clients(&app).await,
            vec![ALLOWED, ALLOWED, REAL, "unknown"]
        );
        // An IPv6 client, written as RFC 7239 §6 asks.
        let v6 = relayed(
            &app,
            &auth,
            &by_forwarded("for=\"[2001:db8::7]:4711\";proto=https"),
        )
        .await;
        assert_forbidden(&v6, "ip_not_allowed");
        assert_eq!(
            logged_clients(&app).await.last().map(String::as_str),
            Some("2001:db8::/64")
        );
    }
);

db_test!(
    async fn credentials_from_a_proxy_count_only_when_it_says_https(app: behind_loopback_proxy) {
        let auth = app.basic_header();
        let plain = get_with(&app, D1_RESPONSES, &[("authorization", &auth)]).await;
        assert_forbidden(&plain, "https_required");
        let http = get_with(
            &app,
            D1_RESPONSES,
            &[("authorization", &auth), ("x-forwarded-proto", "http")],
        )
        .await;
        assert_forbidden(&http, "https_required");
        let https = get_with(
            &app,
            D1_RESPONSES,
            &[("authorization", &auth), ("x-forwarded-proto", "https")],
        )
        .await;
        assert_eq!(https.status, 200, "{}", https.text);
        // Forwarded is not what this proxy writes: its https is not the
        // proxy's word.
        let by_forwarded = get_with(
            &app,
            D1_RESPONSES,
            &[
                ("authorization", &auth),
                ("forwarded", "for=192.0.2.7;proto=https"),
            ],
        )
        .await;
        assert_forbidden(&by_forwarded, "https_required");
        // Any statement saying other than https refuses.
        let mixed = get_with(
            &app,
            D1_RESPONSES,
            &[
                ("authorization", &auth),
                ("x-forwarded-proto", "https"),
                ("forwarded", "for=192.0.2.7;proto=http"),
            ],
        )
        .await;
        assert_forbidden(&mixed, "https_required");
        // Without credentials nothing is refused for the transport.
        let open = get_with(&app, "/health", &[]).await;
        assert_eq!(open.status, 200);
    }
);

db_test!(
    async fn credentials_from_a_proxy_writing_forwarded_count_when_its_element_says_https(
        app: behind_loopback_forwarded_proxy,
    ) {
        let auth = app.basic_header();
        let get = |headers: Vec<(&'static str, &'static str)>| {
            let mut all = vec![("authorization", auth.as_str())];
            all.extend(headers);
            let app = &app;
            async move { get_with(app, D1_RESPONSES, &all).await }
        };
        let https = get(vec![("forwarded", "for=192.0.2.7;proto=https")]).await;
        assert_eq!(https.status, 200, "{}", https.text);
        // X-Forwarded-Proto is not what this proxy writes.
        let passed_on = get(vec![("x-forwarded-proto", "https")]).await;
        assert_forbidden(&passed_on, "https_required");
        let http = get(vec![("forwarded", "for=192.0.2.7;proto=http")]).await;
        assert_forbidden(&http, "https_required");
    }
);

db_test!(
    async fn with_a_proxy_configured_a_loopback_peer_must_say_https(app: behind_another_proxy) {
        // A local reverse proxy the operator did not list still relays.
        let auth = app.basic_header();
        let plain = get_with(&app, D1_RESPONSES, &[("authorization", &auth)]).await;
        assert_forbidden(&plain, "https_required");
        let https = get_with(
            &app,
            D1_RESPONSES,
            &[("authorization", &auth), ("x-forwarded-proto", "https")],
        )
        .await;
        assert_eq!(https.status, 200, "{}", https.text);
    }
);

db_test!(async fn without_a_proxy_loopback_counts_unless_it_says_http(app) {
    let auth = app.basic_header();
    let local = get_with(&app, D1_RESPONSES, &[("authorization", &auth)]).await;
    assert_eq!(local.status, 200, "{}", local.text);
    // A local proxy on port 80 that nobody listed, saying what it received.
    let relayed_plain = get_with(
        &app,
        D1_RESPONSES,
        &[("authorization", &auth), ("x-forwarded-proto", "http")],
    )
    .await;
    assert_forbidden(&relayed_plain, "https_required");
});
