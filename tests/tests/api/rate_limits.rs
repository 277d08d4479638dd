//! Rate limits and counted refusals (docs/operations.md#rate-limits,
//! docs/api/rights.md#access-log): requests without valid credentials meet
//! 429 past a burst per client address, a token past its own limit, and
//! refusals without valid credentials are counted a row per client and
//! minute instead of written one by one; an address past its burst is
//! answered 429 before its credentials are read. Limits here never refill
//! while a test runs (one request an hour), so the tests count, never
//! wait.

use std::time::Duration;

use chrono::Duration as Minutes;
use host::config::{Config, RateLimit};
use host::store::AccessEntry;
use tests::reqwest::Method;
use tests::{Answer, Db, TestApp, basic, db_test, start_time};

use crate::auth::{D1_RESPONSES, NO_CREDENTIALS_CHALLENGE, PROTOCOLS, assert_unauthorized, get_as};
use crate::support::*;
use crate::visitor::{Visitor, start_blank};

/// The route of the responses list, as logged.
const LIST_ACTION: &str = "GET /api/v1/dossiers/{dossier_id}/responses";
const LOGIN_ACTION: &str = "GET /fill_out/session/login";
/// The button's POST, which spends a working link.
const LOGIN_POST_ACTION: &str = "POST /fill_out/session/login";

/// `burst` requests, then one an hour: no refill while a test runs.
fn burst_of(burst: u32) -> Option<RateLimit> {
    Some(RateLimit {
        burst: std::num::NonZeroU32::new(burst).expect("not zero"),
        every: Duration::from_secs(3600),
    })
}

/// Three requests without valid credentials per address.
async fn spawn_with_three_refusals(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config: &mut Config| {
        config.anonymous_limit = burst_of(3);
    })
    .await
}

/// Five requests per token.
async fn spawn_with_five_per_token(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config: &mut Config| {
        config.token_limit = burst_of(5);
    })
    .await
}

/// The fill-out pages' app, with three refusals per address.
async fn spawn_pages_with_three_refusals(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config: &mut Config| {
        config.allowed_origins = vec![crate::fill_out_sessions::EPD.to_owned()];
        config.anonymous_limit = burst_of(3);
    })
    .await
}

/// `GET path` with the test token's credentials, from another loopback
/// address (127.0.0.2; loopback is 127.0.0.0/8): the status.
async fn from_other_address(app: &TestApp, path: &str) -> u16 {
    let other = tests::reqwest::Client::builder()
        .local_address(Some("127.0.0.2".parse().expect("address")))
        .build()
        .expect("a client");
    other
        .get(app.url(path))
        .header("authorization", app.basic_header())
        .send()
        .await
        .expect("an answer")
        .status()
        .as_u16()
}

async fn anonymous(app: &TestApp) -> Answer {
    app.send_as(Method::GET, D1_RESPONSES, None, None).await
}

/// Every row, once the counted refusals are written.
async fn whole_log(app: &TestApp) -> Vec<AccessEntry> {
    app.state.flush_refusals().await;
    app.state
        .store()
        .access_log(None, None)
        .await
        .expect("access log")
}

/// The `Retry-After` of a 429, in seconds.
fn retry_after(answer_headers: &tests::reqwest::header::HeaderMap) -> u64 {
    answer_headers
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("a 429 says when to retry: {answer_headers:?}"))
}

fn assert_too_many(answer: &Answer) {
    assert_error(answer, 429, error("base", "too_many_requests"));
    let wait = retry_after(&answer.headers);
    assert!((1..=3600).contains(&wait), "Retry-After: {wait}");
}

// ---------------------------------------------------------------------------
// Requests without valid credentials
// ---------------------------------------------------------------------------

db_test!(async fn a_thousand_refusals_are_written_as_a_handful_of_rows(app) {
    // The default limits: a burst of 200 per address, then 10 a second.
    let mut statuses = Vec::new();
    for _ in 0..20 {
        let batch = (0..50).map(|_| anonymous(&app));
        for answer in futures_util::future::join_all(batch).await {
            if answer.status == 429 {
                assert_too_many(&answer);
            } else {
                assert_unauthorized(&answer, NO_CREDENTIALS_CHALLENGE);
            }
            statuses.push(answer.status.as_u16());
        }
    }
    let refused = statuses.iter().filter(|s| **s == 401).count();
    let limited = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!(refused + limited, 1000);
    assert!(refused >= 200, "the burst is answered 401: {refused}");
    assert!(limited >= 500, "past the burst, 429: {limited}");
    // Nothing is written per request: the counts wait for their minute.
    assert_eq!(app.state.store().access_log(None, None).await.expect("log"), vec![]);
    let log = whole_log(&app).await;
    let rows: Vec<(u16, Option<u32>)> = log.iter().map(|e| (e.status, e.refusals)).collect();
    assert_eq!(rows, vec![(401, Some(refused as u32)), (429, Some(limited as u32))]);
    for row in &log {
        assert_eq!(row.client, "127.0.0.1");
        assert_eq!(row.action, LIST_ACTION);
        assert_eq!(row.dossier.as_deref(), Some("d1"));
        assert_eq!(row.consumer_key, None);
        assert_eq!(row.at, start_time());
    }
});

db_test!(
    async fn past_the_burst_refusals_meet_429_with_retry_after_and_the_error_body(
        app: spawn_with_three_refusals,
    ) {
        for _ in 0..3 {
            assert_unauthorized(&anonymous(&app).await, NO_CREDENTIALS_CHALLENGE);
        }
        let limited = anonymous(&app).await;
        assert_too_many(&limited);
        assert_eq!(
            limited.headers["content-type"],
            "application/json; charset=utf-8"
        );
        // Guessing a secret is no way around it, on any endpoint.
        assert_too_many(&get_as(&app, D1_RESPONSES, &basic(tests::TEST_KEY, "guess")).await);
        assert_too_many(
            &app.send_as(Method::GET, "/api/v1/protocols", None, None)
                .await,
        );
        // Nor are valid credentials from that address: it is held back
        // until its allowance refills. Another address is not.
        assert_too_many(&app.get(D1_RESPONSES).await);
        assert_eq!(from_other_address(&app, D1_RESPONSES).await, 200);
        // The document says so on every operation that needs credentials.
        let doc = app.get("/api/v1/openapi.json").await.body;
        let operation = &doc["paths"]["/api/v1/dossiers/{dossier_id}/responses"]["get"];
        assert!(
            operation["responses"]["429"]["headers"]["Retry-After"].is_object(),
            "{operation}"
        );
    }
);

db_test!(
    async fn a_client_past_its_burst_is_answered_429_before_its_credentials_are_read(
        app: spawn_with_three_refusals,
    ) {
        // The attack: a flood of wrong secrets and forged JWTs from one
        // address, each costing a hash or a signature check. Past the
        // burst the address is answered 429 before its Authorization header
        // is read: the test token's real secret, which a check would
        // accept, meets the same 429, so nothing was checked.
        for _ in 0..3 {
            assert_eq!(
                get_as(&app, D1_RESPONSES, &basic(tests::TEST_KEY, "guess"))
                    .await
                    .status,
                401
            );
        }
        assert_too_many(&get_as(&app, D1_RESPONSES, &basic(tests::TEST_KEY, "guess")).await);
        let forged = "Bearer e30.e30.QUFBQQ".to_owned();
        for authorization in [forged, app.basic_header()] {
            assert_too_many(&get_as(&app, D1_RESPONSES, &authorization).await);
        }
        assert_too_many(&get_as(&app, PROTOCOLS, &app.basic_header()).await);
        // Another address is served, with the same credentials.
        assert_eq!(from_other_address(&app, D1_RESPONSES).await, 200);
        // Counted as refusals without credentials. The guesses claimed the
        // test token's key (the 429 that held the address back too); the
        // requests held back claim nobody: their header was never read.
        let log: Vec<AccessEntry> = whole_log(&app)
            .await
            .into_iter()
            .filter(|e| e.client == "127.0.0.1")
            .collect();
        assert!(log.iter().all(|e| e.consumer_key.is_none()));
        let rows: Vec<(u16, Option<u32>, Option<String>)> = log
            .into_iter()
            .map(|e| (e.status, e.refusals, e.claimed_key))
            .collect();
        let test = Some(tests::TEST_KEY.to_owned());
        assert_eq!(
            rows,
            vec![
                (401, Some(3), test.clone()),
                (429, Some(1), test),
                (429, Some(2), None),
            ]
        );
    }
);

db_test!(async fn refusals_of_a_minute_are_written_when_the_next_begins(app) {
    for _ in 0..3 {
        assert_eq!(anonymous(&app).await.status, 401);
    }
    assert_eq!(app.state.store().access_log(None, None).await.expect("log"), vec![]);
    app.clock.advance(Minutes::seconds(60));
    assert_eq!(anonymous(&app).await.status, 401);
    // The next minute's first refusal wrote the last minute's count.
    let written = app.state.store().access_log(None, None).await.expect("log");
    let rows: Vec<_> = written.iter().map(|e| (e.at, e.refusals)).collect();
    assert_eq!(rows, vec![(start_time(), Some(3))]);
    let rows: Vec<_> = whole_log(&app).await.iter().map(|e| (e.at, e.refusals)).collect();
    assert_eq!(
        rows,
        vec![(start_time(), Some(3)), (start_time() + Minutes::seconds(60), Some(1))]
    );
});

db_test!(async fn refusals_counted_at_shutdown_are_written(app) {
    let mut app = app;
    assert_eq!(anonymous(&app).await.status, 401);
    assert_eq!(anonymous(&app).await.status, 401);
    app.shut_down().await;
    assert_eq!(app.sql("SELECT refusals FROM access_log").await, Some(2));
});

/// A counted row of a token: key, status, count, dossier, client.
type TokenRow = (Option<String>, u16, Option<u32>, Option<String>, String);

db_test!(async fn refusals_with_valid_credentials_are_counted_under_the_token(app) {
    // A valid token without the right, and one used from outside its
    // allow-list, each refused 150 times (within the address's burst).
    let secret = tests::create_token(&app.state, "protocols-only", "protocols").await;
    let fenced = tests::create_token_with(&app.state, "fenced", "all", "10.0.0.0/8", "").await;
    for (key, secret, reason) in [
        ("protocols-only", &secret, "right_missing"),
        ("fenced", &fenced, "ip_not_allowed"),
    ] {
        for _ in 0..3 {
            let batch = (0..50).map(|n| {
                let path = responses(&format!("d{n}"));
                let app = &app;
                async move { get_as(app, &path, &basic(key, secret)).await }
            });
            for answer in futures_util::future::join_all(batch).await {
                assert_error(&answer, 403, error("base", reason));
            }
        }
    }
    // Nothing written one by one: a row per token, each minute.
    assert_eq!(app.state.store().access_log(None, None).await.expect("log"), vec![]);
    let rows: Vec<TokenRow> = whole_log(&app)
        .await
        .into_iter()
        .map(|e| (e.consumer_key, e.status, e.refusals, e.dossier, e.client))
        .collect();
    assert_eq!(
        rows,
        vec![
            (Some("protocols-only".into()), 403, Some(150), None, "127.0.0.1".into()),
            (Some("fenced".into()), 403, Some(150), None, "127.0.0.1".into()),
        ]
    );
});

db_test!(
    async fn a_stolen_secret_used_outside_the_allow_list_leaves_the_epd_s_limit_alone(
        app: spawn_with_five_per_token,
    ) {
        let secret = tests::create_token_with(&app.state, "epd", "all", "127.0.0.1/32", "").await;
        let credentials = basic("epd", &secret);
        // From 127.0.0.2, off the token's allow-list, with its secret.
        let thief = crate::auth::client_from(std::net::Ipv4Addr::new(127, 0, 0, 2));
        for _ in 0..20 {
            let answer = thief
                .get(app.url(D1_RESPONSES))
                .header("authorization", &credentials)
                .send()
                .await
                .expect("the host answers");
            assert_eq!(answer.status(), 403);
        }
        // The EPD, from its own address, has its five.
        for _ in 0..5 {
            let answer = get_as(&app, D1_RESPONSES, &credentials).await;
            assert_eq!(answer.status, 200, "{}", answer.text);
        }
        assert_too_many(&get_as(&app, D1_RESPONSES, &credentials).await);
    }
);

db_test!(
    async fn a_stolen_secret_used_outside_the_allow_list_meets_the_address_limit(
        app: spawn_with_three_refusals,
    ) {
        let secret = tests::create_token_with(&app.state, "epd", "all", "127.0.0.1/32", "").await;
        let thief = crate::auth::client_from(std::net::Ipv4Addr::new(127, 0, 0, 2));
        let mut statuses = Vec::new();
        for _ in 0..5 {
            let answer = thief
                .get(app.url(D1_RESPONSES))
                .header("authorization", basic("epd", &secret))
                .send()
                .await
                .expect("the host answers");
            statuses.push(answer.status().as_u16());
        }
        assert_eq!(statuses, vec![403, 403, 403, 429, 429]);
    }
);

/// Sends `GET path` without credentials from loopback address `from`, on
/// a connection of its own.
async fn anonymous_from(app: &TestApp, from: std::net::Ipv4Addr, path: &str) -> u16 {
    crate::auth::client_from(from)
        .get(app.url(path))
        .send()
        .await
        .expect("the host answers")
        .status()
        .as_u16()
}

db_test!(async fn refusals_from_many_addresses_are_a_bounded_number_of_rows(app) {
    // 300 client addresses (127.0.1.0 to 127.0.2.43), two refusals each,
    // within one minute.
    let clients: Vec<std::net::Ipv4Addr> = (0..300u32)
        .map(|n| std::net::Ipv4Addr::from(0x7f00_0100 + n))
        .collect();
    for round in 0..2 {
        for chunk in clients.chunks(50) {
            let batch = chunk.iter().map(|ip| anonymous_from(&app, *ip, D1_RESPONSES));
            for status in futures_util::future::join_all(batch).await {
                assert_eq!(status, 401, "round {round}");
            }
        }
    }
    let log = whole_log(&app).await;
    let max = host::auth::refusals::MAX_ROWS_PER_MINUTE;
    assert_eq!(log.len(), max + 1, "a row per client up to the bound, one overflow row");
    let overflow: Vec<_> = log.iter().filter(|e| e.client == "others").collect();
    assert_eq!(overflow.len(), 1);
    assert_eq!(overflow[0].refusals, Some(2 * (300 - max as u32)));
    assert_eq!((overflow[0].status, overflow[0].action.as_str()), (401, LIST_ACTION));
    assert!(log.iter().filter(|e| e.client != "others").all(|e| e.refusals == Some(2)));
    let counted: u32 = log.iter().filter_map(|e| e.refusals).sum();
    assert_eq!(counted, 600);
});

// ---------------------------------------------------------------------------
// Tokens
// ---------------------------------------------------------------------------

db_test!(
    async fn a_valid_tokens_bulk_upload_is_never_refused(app: spawn_with_three_refusals) {
        // Another address is over its limit for requests without
        // credentials...
        let other = tests::reqwest::Client::builder()
            .local_address(Some("127.0.0.2".parse().expect("address")))
            .build()
            .expect("a client");
        for _ in 0..4 {
            other
                .get(app.url(D1_RESPONSES))
                .send()
                .await
                .expect("an answer");
        }
        assert_eq!(from_other_address(&app, D1_RESPONSES).await, 429);
        // ...and an EPD on its own uploads as fast as the service takes
        // it, under the default limit per token.
        let mut created = 0;
        for batch in 0..10 {
            let posts = (0..100).map(|n| {
                let app = &app;
                async move {
                    post_phq9(
                        app,
                        "bulk",
                        &format!("ext-{batch}-{n}"),
                        phq9_all_answered(),
                    )
                    .await
                }
            });
            for answer in futures_util::future::join_all(posts).await {
                assert_eq!(answer.status, 201, "{}", answer.text);
                created += 1;
            }
        }
        assert_eq!(created, 1000);
        let listed = app.get(&responses("bulk")).await;
        assert_eq!(listed.body.as_array().map(Vec::len), Some(1000));
    }
);

db_test!(
    async fn a_token_over_its_limit_is_answered_429_and_logged_by_name(
        app: spawn_with_five_per_token,
    ) {
        for _ in 0..5 {
            assert_eq!(app.get(D1_RESPONSES).await.status, 200);
        }
        let limited = app.get(D1_RESPONSES).await;
        assert_too_many(&limited);
        // Another token has its own.
        let secret = tests::create_token(&app.state, "other", "all").await;
        assert_eq!(
            get_as(&app, D1_RESPONSES, &basic("other", &secret))
                .await
                .status,
            200
        );
        // An identified caller's refusals are counted under its name.
        let log = whole_log(&app).await;
        let rows: Vec<(Option<&str>, u16, Option<u32>)> = log
            .iter()
            .map(|e| (e.consumer_key.as_deref(), e.status, e.refusals))
            .collect();
        let test = Some(tests::TEST_KEY);
        assert_eq!(
            rows,
            vec![
                (test, 200, None),
                (test, 200, None),
                (test, 200, None),
                (test, 200, None),
                (test, 200, None),
                (Some("other"), 200, None),
                (test, 429, Some(1)),
            ]
        );
    }
);

// ---------------------------------------------------------------------------
// Fill-out links
// ---------------------------------------------------------------------------

db_test!(
    async fn bad_fill_out_links_count_as_refusals(app: spawn_pages_with_three_refusals) {
        let link = start_blank(&app, "d1", &["phq9"]).await;
        let tampered = format!("{link}0");
        for _ in 0..3 {
            Visitor::new(&app)
                .get(&tampered)
                .await
                .assert_message(403, "This link does not work");
        }
        let limited = Visitor::new(&app).get(&tampered).await;
        limited.assert_message(429, "Too many attempts");
        assert!((1..=3600).contains(&retry_after(&limited.headers)));
        // API refusals count against the same address.
        assert_too_many(&anonymous(&app).await);
        // A link that works still does: the respondent is not locked out.
        let page = Visitor::new(&app).log_in(&link).await;
        assert_eq!(page.status, 303, "{}", page.text);
        let rows: Vec<(String, u16, Option<u32>, Option<String>)> = whole_log(&app)
            .await
            .into_iter()
            .filter(|e| e.action == LOGIN_ACTION || e.action == LOGIN_POST_ACTION)
            .map(|e| (e.action, e.status, e.refusals, e.dossier))
            .collect();
        assert_eq!(
            rows,
            vec![
                (
                    LOGIN_POST_ACTION.to_owned(),
                    303,
                    None,
                    Some("d1".to_owned())
                ),
                (LOGIN_ACTION.to_owned(), 403, Some(3), None),
                (LOGIN_ACTION.to_owned(), 429, Some(1), None),
            ]
        );
    }
);
