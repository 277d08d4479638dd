//! The access log (docs/api/rights.md#access-log, after NEN 7513): every
//! request that touches dossier data appends one row (reads, writes and
//! refusals) with time, token, JWT issuer, dossier, action, status and
//! client address; routes outside dossiers append none; and the table
//! refuses UPDATE and DELETE at the database level, whoever sends them.

use chrono::Duration;
use host::store::AccessEntry;
use jsonwebtoken::Algorithm;
use sqlx::Connection as _;
use tests::reqwest::Method;
use tests::{Answer, TestApp, basic, create_token, create_token_with, db_test, json, start_time};

use crate::auth::{
    BASIC_CHALLENGE, D1_RESPONSES, ISSUER, JWT_KEY, NO_CREDENTIALS_CHALLENGE, PROTOCOLS,
    PUBLIC_PEM, assert_forbidden, assert_unauthorized, bearer, claims, client_from, get_as,
    get_with, jwt, non_loopback_ipv4, port_of, raw_signed, register_key, send_raw, sign, spawn_jwt,
    spawn_on_all_interfaces_untrusted, standard_header, unsigned,
};
use crate::support::*;

/// The route of the responses list, as logged.
const LIST_ACTION: &str = "GET /api/v1/dossiers/{dossier_id}/responses";

/// The rows of one dossier's requests, oldest first, once the counted
/// refusals (docs/api/rights.md#access-log) are written. The steps of the
/// alarms the PHQ-9s posted here raise (item 9 answered 1) have rows of
/// their own, which `alarms.rs` checks; they are left out here.
async fn log_of(app: &TestApp, dossier: &str) -> Vec<AccessEntry> {
    app.state.flush_refusals().await;
    requests(
        app.state
            .store()
            .access_log(Some(dossier), None)
            .await
            .expect("access log"),
    )
}

/// Every request's row, oldest first, once the counted refusals are
/// written (alarm steps left out, as in [`log_of`]).
async fn whole_log(app: &TestApp) -> Vec<AccessEntry> {
    app.state.flush_refusals().await;
    requests(
        app.state
            .store()
            .access_log(None, None)
            .await
            .expect("access log"),
    )
}

/// The rows of requests: all but the steps of alarms.
fn requests(rows: Vec<AccessEntry>) -> Vec<AccessEntry> {
    rows.into_iter()
        .filter(|row| !row.action.starts_with("alarm "))
        .collect()
}

/// The request id the host gave `answer` (and so logged with it).
fn request_id(answer: &Answer) -> Option<String> {
    answer
        .headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The row a loopback request should leave: at the host's now, from
/// 127.0.0.1, with the answer's request id and status.
fn row(
    app: &TestApp,
    answer: &Answer,
    consumer_key: Option<&str>,
    dossier: &str,
    action: &str,
) -> AccessEntry {
    AccessEntry {
        at: app.state.now(),
        consumer_key: consumer_key.map(str::to_owned),
        jwt_issuer: None,
        dossier: Some(dossier.to_owned()),
        action: action.to_owned(),
        status: answer.status.as_u16(),
        client: "127.0.0.1".to_owned(),
        request_id: request_id(answer),
        ..AccessEntry::default()
    }
}

/// `row` as the count of `n` refusals without valid credentials.
fn counted(n: u32, row: AccessEntry) -> AccessEntry {
    AccessEntry {
        refusals: Some(n),
        ..row
    }
}

/// `row` of a refused caller who claimed `key`: no verified key.
fn claimed(mut row: AccessEntry, key: &str) -> AccessEntry {
    row.consumer_key = None;
    row.claimed_key = Some(key.to_owned());
    row
}

/// Runs one statement on the test's database as an outside client would
/// (not through the host); the rows it changed, or the database's error.
pub(crate) async fn raw_sql(app: &TestApp, statement: &str) -> Result<u64, String> {
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(&app.database_url)
        .await
        .expect("connect to the test database");
    let result = sqlx::query(statement)
        .execute(&mut conn)
        .await
        .map(|r| r.rows_affected())
        .map_err(|e| e.to_string());
    let _ = conn.close().await;
    result
}

/// Three rows in the log: a read, a write and a refusal.
async fn some_history(app: &TestApp) -> Vec<AccessEntry> {
    assert_eq!(app.get(D1_RESPONSES).await.status, 200);
    posted(app, "d1", "ext-1").await;
    assert_eq!(
        app.send_as(Method::GET, D1_RESPONSES, None, None)
            .await
            .status,
        401
    );
    let log = whole_log(app).await;
    assert_eq!(log.len(), 3);
    log
}

// ---------------------------------------------------------------------------
// What a row holds
// ---------------------------------------------------------------------------

db_test!(async fn a_read_appends_one_row_with_every_field(app) {
    let answer = app.get(D1_RESPONSES).await;
    assert_eq!(answer.status, 200);
    assert!(request_id(&answer).is_some(), "the host names every request");
    let expected = AccessEntry {
        at: start_time(),
        consumer_key: Some(tests::TEST_KEY.to_owned()),
        jwt_issuer: None,
        dossier: Some("d1".to_owned()),
        action: LIST_ACTION.to_owned(),
        status: 200,
        client: "127.0.0.1".to_owned(),
        request_id: request_id(&answer),
        ..AccessEntry::default()
    };
    assert_eq!(log_of(&app, "d1").await, vec![expected]);
    assert_eq!(whole_log(&app).await.len(), 1);
});

db_test!(async fn the_request_id_a_client_sends_is_recorded(app) {
    let auth = app.basic_header();
    let answer = get_with(&app, D1_RESPONSES, &[("authorization", &auth), ("x-request-id", "epd-trace-42")]).await;
    assert_eq!(answer.status, 200);
    assert_eq!(request_id(&answer).as_deref(), Some("epd-trace-42"));
    assert_eq!(log_of(&app, "d1").await[0].request_id.as_deref(), Some("epd-trace-42"));
});

db_test!(async fn writes_append_rows_with_their_status(app) {
    let created = post_phq9(&app, "d1", "ext-1", phq9_all_answered()).await;
    assert_eq!(created.status, 201);
    let prepared = prepare(&app, "d1", "phq9", None, None).await;
    let body = json!({"questionnaire_key": "phq9", "answer_data": phq9_all_answered()});
    let updated = app.put(&response("d1", prepared), &body).await;
    assert_eq!(updated.status, 200, "{}", updated.text);
    let deleted = app.delete(&response("d1", "ext-1")).await;
    assert_eq!(deleted.status, 204);
    let key = Some(tests::TEST_KEY);
    assert_eq!(
        log_of(&app, "d1").await,
        vec![
            row(&app, &created, key, "d1", "POST /api/v1/dossiers/{dossier_id}/responses"),
            row(&app, &updated, key, "d1", "PUT /api/v1/dossiers/{dossier_id}/responses/{external_id}"),
            row(&app, &deleted, key, "d1", "DELETE /api/v1/dossiers/{dossier_id}/responses/{external_id}"),
        ]
    );
});

/// The route of a POST of a response, as logged.
const POST_ACTION: &str = "POST /api/v1/dossiers/{dossier_id}/responses";

db_test!(async fn every_answer_to_a_post_is_logged_once_with_its_status(app) {
    // Stored, a retry, a taken external id: the row is stored with the
    // response; a refused body and an unknown questionnaire: by the guard.
    let created = post_phq9(&app, "d1", "ext-1", phq9_all_answered()).await;
    let retried = post_phq9(&app, "d1", "ext-1", phq9_all_answered()).await;
    let taken = post_phq9(&app, "d1", "ext-1", phq9_items("0 0 0 0 0 0 0 0 1")).await;
    let invalid = post_phq9(&app, "d1", "ext-2", json!({"v_1": "nope"})).await;
    let unknown = app
        .post(
            &responses("d1"),
            &json!({"questionnaire_key": "nope", "external_id": "ext-3", "answer_data": phq9_all_answered()}),
        )
        .await;
    let statuses: Vec<u16> = [&created, &retried, &taken, &invalid, &unknown]
        .iter()
        .map(|a| a.status.as_u16())
        .collect();
    assert_eq!(statuses, [201, 200, 422, 422, 404]);
    let key = Some(tests::TEST_KEY);
    let expected: Vec<AccessEntry> = [&created, &retried, &taken, &invalid, &unknown]
        .into_iter()
        .map(|answer| row(&app, answer, key, "d1", POST_ACTION))
        .collect();
    assert_eq!(log_of(&app, "d1").await, expected);
});

db_test!(async fn concurrent_posts_each_leave_one_row(app) {
    // Enough at once that the writer stores them in shared batches, with a
    // retry and a taken id among them.
    let posts = (0..40).map(|n| {
        let app = &app;
        async move {
            let external_id = format!("ext-{}", n % 30);
            let answers = if n == 35 { phq9_items("0 0 0 0 0 0 0 0 1") } else { phq9_all_answered() };
            post_phq9(app, "d1", &external_id, answers).await
        }
    });
    let answers = futures_util::future::join_all(posts).await;
    let mut statuses: Vec<u16> = answers.iter().map(|a| a.status.as_u16()).collect();
    let mut logged: Vec<u16> = log_of(&app, "d1").await.iter().map(|e| e.status).collect();
    statuses.sort_unstable();
    logged.sort_unstable();
    assert_eq!(logged, statuses);
    assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 30);
    assert_eq!(statuses.iter().filter(|s| **s == 422).count(), 1);
});

db_test!(async fn each_row_is_stamped_with_the_hosts_clock(app) {
    app.get(D1_RESPONSES).await;
    app.clock.advance(Duration::hours(5) + Duration::milliseconds(250));
    app.get(D1_RESPONSES).await;
    let times: Vec<_> = log_of(&app, "d1").await.iter().map(|e| e.at).collect();
    assert_eq!(times, vec![start_time(), start_time() + Duration::hours(5) + Duration::milliseconds(250)]);
});

db_test!(
    async fn a_bearer_call_records_the_kid_and_the_issuer(app: spawn_jwt) {
        let answer = get_as(&app, D1_RESPONSES, &bearer(&jwt(&claims(&app, Some("d1"))))).await;
        assert_eq!(answer.status, 200);
        let mut expected = row(&app, &answer, Some(JWT_KEY), "d1", LIST_ACTION);
        expected.jwt_issuer = Some(ISSUER.to_owned());
        assert_eq!(log_of(&app, "d1").await, vec![expected]);
    }
);

db_test!(async fn respondent_reads_are_recorded(app) {
    posted(&app, "d1", "ext-1").await;
    let list = app.get("/api/v1/dossiers/d1/respondents").await;
    let id = list.body[0]["id"].as_i64().expect("a respondent");
    let one = app.get(&format!("/api/v1/dossiers/d1/respondents/{id}")).await;
    assert_eq!(one.status, 200);
    let log = log_of(&app, "d1").await;
    let key = Some(tests::TEST_KEY);
    assert_eq!(log[1..], [
        row(&app, &list, key, "d1", "GET /api/v1/dossiers/{dossier_id}/respondents"),
        row(&app, &one, key, "d1", "GET /api/v1/dossiers/{dossier_id}/respondents/{id}"),
    ]);
});

db_test!(async fn alias_paths_are_recorded_under_the_route_and_the_dossier(app) {
    let answer = app.get("/api/v1/dossier/d1/responses.json").await;
    assert_eq!(answer.status, 200);
    let slash = app.get("/api/v1/dossiers/d1/responses/").await;
    assert_eq!(slash.status, 200);
    let key = Some(tests::TEST_KEY);
    assert_eq!(log_of(&app, "d1").await, vec![row(&app, &answer, key, "d1", LIST_ACTION), row(&app, &slash, key, "d1", LIST_ACTION)]);
});

db_test!(async fn an_encoded_dossier_id_is_recorded_decoded(app) {
    let answer = app.get("/api/v1/dossiers/a%20b%2Fc/responses").await;
    assert_eq!(answer.status, 200);
    assert_eq!(log_of(&app, "a b/c").await, vec![row(&app, &answer, Some(tests::TEST_KEY), "a b/c", LIST_ACTION)]);
});

db_test!(async fn a_dossiers_log_holds_only_its_own_rows(app) {
    let d1 = app.get(D1_RESPONSES).await;
    let d2 = app.get("/api/v1/dossiers/d2/responses").await;
    app.get(PROTOCOLS).await;
    let key = Some(tests::TEST_KEY);
    assert_eq!(log_of(&app, "d1").await, vec![row(&app, &d1, key, "d1", LIST_ACTION)]);
    assert_eq!(log_of(&app, "d2").await, vec![row(&app, &d2, key, "d2", LIST_ACTION)]);
    assert_eq!(log_of(&app, "d3").await, vec![]);
    assert_eq!(whole_log(&app).await.len(), 2);
});

// ---------------------------------------------------------------------------
// Refusals
// ---------------------------------------------------------------------------

db_test!(async fn a_refused_basic_call_records_the_claimed_consumer_key_apart(app) {
    // The claimed key is kept, but never where verified callers are: a
    // query for what the token "test" did finds only what it did.
    let wrong_secret = get_as(&app, D1_RESPONSES, &basic(tests::TEST_KEY, "guess")).await;
    assert_unauthorized(&wrong_secret, BASIC_CHALLENGE);
    let unknown_key = get_as(&app, D1_RESPONSES, &basic("ghost", "guess")).await;
    assert_unauthorized(&unknown_key, BASIC_CHALLENGE);
    let verified = app.get(D1_RESPONSES).await;
    assert_eq!(verified.status, 200);
    assert_eq!(
        log_of(&app, "d1").await,
        vec![
            // Written at once; the refusals are counted and written after.
            row(&app, &verified, Some(tests::TEST_KEY), "d1", LIST_ACTION),
            counted(1, claimed(row(&app, &wrong_secret, None, "d1", LIST_ACTION), tests::TEST_KEY)),
            counted(1, claimed(row(&app, &unknown_key, None, "d1", LIST_ACTION), "ghost")),
        ]
    );
});

db_test!(async fn a_call_without_credentials_is_recorded_without_a_consumer_key(app) {
    let none = app.send_as(Method::GET, D1_RESPONSES, None, None).await;
    assert_unauthorized(&none, NO_CREDENTIALS_CHALLENGE);
    let garbled = get_as(&app, D1_RESPONSES, "Basic !!!").await;
    assert_unauthorized(&garbled, BASIC_CHALLENGE);
    // Counted together: the first one's request id, the count of both.
    assert_eq!(log_of(&app, "d1").await, vec![counted(2, row(&app, &none, None, "d1", LIST_ACTION))]);
});

db_test!(
    async fn a_refused_jwt_records_its_claims_apart_from_verified_ones(app: spawn_jwt) {
        let other = tests::repo_root().join("tests/fixtures/keys/other2048.pem");
        let other =
            jsonwebtoken::EncodingKey::from_rsa_pem(&std::fs::read(other).expect("fixture"))
                .expect("key");
        let forged = raw_signed(
            &standard_header(),
            &claims(&app, Some("d1")),
            Algorithm::RS256,
            &other,
        );
        let answer = get_as(&app, D1_RESPONSES, &bearer(&forged)).await;
        assert_eq!(answer.status, 401);
        // An unreadable header names nobody.
        let none = unsigned(
            &json!({"typ": "JWT", "alg": "none", "kid": JWT_KEY}),
            &claims(&app, Some("d1")),
        );
        let anonymous = get_as(&app, D1_RESPONSES, &bearer(&none)).await;
        assert_eq!(anonymous.status, 401);
        // The forged token's kid, iss and sub, as claimed: apart from the
        // verified columns.
        let mut forged_row = claimed(row(&app, &answer, None, "d1", LIST_ACTION), JWT_KEY);
        forged_row.claimed_issuer = Some(ISSUER.to_owned());
        forged_row.claimed_subject = Some("d1".to_owned());
        assert_eq!(
            log_of(&app, "d1").await,
            vec![
                counted(1, forged_row),
                counted(1, row(&app, &anonymous, None, "d1", LIST_ACTION))
            ]
        );
    }
);

db_test!(
    async fn forbidden_calls_are_recorded(app: spawn_jwt) {
        let secret = create_token(&app.state, "protocols-only", "protocols").await;
        let right_missing = get_as(&app, D1_RESPONSES, &basic("protocols-only", &secret)).await;
        assert_forbidden(&right_missing, "right_missing");
        let secret = create_token_with(&app.state, "remote", "all", "192.0.2.0/24", "").await;
        let ip_refused = get_as(&app, D1_RESPONSES, &basic("remote", &secret)).await;
        assert_forbidden(&ip_refused, "ip_not_allowed");
        let no_sub = get_as(&app, D1_RESPONSES, &bearer(&jwt(&claims(&app, None)))).await;
        assert_forbidden(&no_sub, "sub_missing");
        let other_sub = get_as(&app, D1_RESPONSES, &bearer(&jwt(&claims(&app, Some("d2"))))).await;
        assert_forbidden(&other_sub, "sub_mismatch");
        let with_issuer = |mut e: AccessEntry| {
            e.jwt_issuer = Some(ISSUER.to_owned());
            e
        };
        assert_eq!(
            log_of(&app, "d1").await,
            // Counted, like every refusal (one row per client, token,
            // route and status each minute).
            vec![
                counted(
                    1,
                    row(
                        &app,
                        &right_missing,
                        Some("protocols-only"),
                        "d1",
                        LIST_ACTION
                    )
                ),
                counted(1, row(&app, &ip_refused, Some("remote"), "d1", LIST_ACTION)),
                // The JWT's two refusals share client, token, route and
                // status: one row, the first one's.
                counted(
                    2,
                    with_issuer(row(&app, &no_sub, Some(JWT_KEY), "d1", LIST_ACTION))
                ),
            ]
        );
        assert_eq!(
            log_of(&app, "d2").await,
            vec![],
            "the row names the dossier asked for, not the JWT's"
        );
    }
);

db_test!(async fn a_miss_inside_a_dossier_is_recorded(app) {
    posted(&app, "a", "ext-a").await;
    let id = app.get("/api/v1/dossiers/a/respondents").await.body[0]["id"].as_i64().expect("a respondent");
    let answer = app.get(&format!("/api/v1/dossiers/b/respondents/{id}")).await;
    assert_eq!(answer.status, 404);
    let deleted = app.delete(&response("b", "ext-a")).await;
    assert_eq!(deleted.status, 404);
    let key = Some(tests::TEST_KEY);
    assert_eq!(
        log_of(&app, "b").await,
        vec![
            row(&app, &answer, key, "b", "GET /api/v1/dossiers/{dossier_id}/respondents/{id}"),
            row(&app, &deleted, key, "b", "DELETE /api/v1/dossiers/{dossier_id}/responses/{external_id}"),
        ]
    );
});

// ---------------------------------------------------------------------------
// The client address
// ---------------------------------------------------------------------------

db_test!(async fn a_spoofed_forwarded_address_is_not_recorded(app) {
    let auth = app.basic_header();
    let answer = get_with(&app, D1_RESPONSES, &[("authorization", &auth), ("x-forwarded-for", "192.0.2.7")]).await;
    assert_eq!(answer.status, 200);
    assert_eq!(log_of(&app, "d1").await[0].client, "127.0.0.1");
});

async fn spawn_behind_loopback_proxy(db: tests::Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        config.trusted_proxies.nets = vec!["127.0.0.1/32".parse().expect("net")]
    })
    .await
}

db_test!(
    async fn behind_a_trusted_proxy_the_forwarded_address_is_recorded(
        app: spawn_behind_loopback_proxy,
    ) {
        let auth = app.basic_header();
        let answer = get_with(
            &app,
            D1_RESPONSES,
            &[
                ("authorization", &auth),
                ("x-forwarded-for", "198.51.100.1, 192.0.2.7"),
                ("x-forwarded-proto", "https"),
            ],
        )
        .await;
        assert_eq!(answer.status, 200);
        let direct = get_with(
            &app,
            D1_RESPONSES,
            &[("authorization", &auth), ("x-forwarded-proto", "https")],
        )
        .await;
        let mut forwarded = row(&app, &answer, Some(tests::TEST_KEY), "d1", LIST_ACTION);
        forwarded.client = "192.0.2.7".to_owned();
        assert_eq!(
            log_of(&app, "d1").await,
            vec![
                forwarded,
                row(&app, &direct, Some(tests::TEST_KEY), "d1", LIST_ACTION)
            ]
        );
    }
);

db_test!(
    async fn a_refusal_for_plain_http_is_recorded_with_the_remote_address(
        app: spawn_on_all_interfaces_untrusted,
    ) {
        let ip = non_loopback_ipv4();
        let url = format!("http://{ip}:{}{D1_RESPONSES}", port_of(&app));
        let answer = send_raw(
            &client_from(ip),
            Method::GET,
            &url,
            &[("authorization", &app.basic_header())],
            None,
        )
        .await;
        assert_forbidden(&answer, "https_required");
        let log = log_of(&app, "d1").await;
        assert_eq!(log.len(), 1);
        assert_eq!(log[0].client, ip.to_string());
        assert_eq!(log[0].status, 403);
        assert_eq!(log[0].action, LIST_ACTION);
        assert_eq!(log[0].at, start_time());
        assert_eq!(log[0].refusals, Some(1));
        // Credentials sent in the clear are never checked: claimed only.
        assert_eq!(log[0].consumer_key, None);
        assert_eq!(log[0].claimed_key.as_deref(), Some(tests::TEST_KEY));
    }
);

// ---------------------------------------------------------------------------
// What is not recorded
// ---------------------------------------------------------------------------

db_test!(
    async fn routes_outside_dossiers_write_no_rows(app: spawn_jwt) {
        for path in [
            PROTOCOLS,
            "/api/v1/protocols.json",
            "/api/v1/questionnaires",
            "/api/v1/questionnaires/phq9",
            "/health",
            "/api/v1/openapi.json",
        ] {
            assert_eq!(app.get(path).await.status, 200, "{path}");
        }
        let protocols = app.get(PROTOCOLS).await.body;
        if let Some(id) = protocols[0]["id"].as_i64() {
            assert_eq!(
                app.get(&format!("/api/v1/protocols/{id}")).await.status,
                200
            );
        }
        assert_eq!(
            get_as(&app, PROTOCOLS, &bearer(&jwt(&claims(&app, None))))
                .await
                .status,
            200
        );
        // Refusals outside dossiers are not dossier accesses either.
        assert_eq!(
            app.send_as(Method::GET, PROTOCOLS, None, None).await.status,
            401
        );
        let secret = create_token(&app.state, "responses-only", "responses").await;
        assert_eq!(
            get_as(&app, PROTOCOLS, &basic("responses-only", &secret))
                .await
                .status,
            403
        );
        // Nor are unknown paths.
        assert_eq!(app.get("/api/v1/nothing").await.status, 404);
        assert_eq!(whole_log(&app).await, vec![]);
    }
);

// ---------------------------------------------------------------------------
// Append-only at the database level
// ---------------------------------------------------------------------------

db_test!(async fn access_log_rows_cannot_be_updated_through_sql(app) {
    let before = some_history(&app).await;
    for statement in [
        "UPDATE access_log SET status = 200",
        "UPDATE access_log SET consumer_key = 'someone-else' WHERE status = 401",
        "UPDATE access_log SET dossier = NULL",
    ] {
        let result = raw_sql(&app, statement).await;
        let problem = result.expect_err(statement);
        assert!(problem.contains("append-only"), "{statement}: {problem}");
    }
    assert_eq!(whole_log(&app).await, before);
});

db_test!(async fn access_log_rows_cannot_be_deleted_through_sql(app) {
    let before = some_history(&app).await;
    for statement in ["DELETE FROM access_log", "DELETE FROM access_log WHERE dossier = 'd1'", "DELETE FROM access_log WHERE status = 401"] {
        let result = raw_sql(&app, statement).await;
        let problem = result.expect_err(statement);
        assert!(problem.contains("append-only"), "{statement}: {problem}");
    }
    assert_eq!(whole_log(&app).await, before);
});

// Row triggers never fire for TRUNCATE; PostgreSQL needs its own
// `BEFORE TRUNCATE` trigger (this test failed until 9e80ef6 added it).
db_test!(async fn the_access_log_cannot_be_emptied_with_truncate(app) {
    let before = some_history(&app).await;
    // SQLite has no TRUNCATE (it is a syntax error there); on PostgreSQL the
    // row triggers do not fire for it.
    let _ = raw_sql(&app, "TRUNCATE access_log").await;
    assert_eq!(whole_log(&app).await, before);
});

db_test!(async fn the_host_keeps_appending_after_a_refused_change(app) {
    some_history(&app).await;
    assert!(raw_sql(&app, "DELETE FROM access_log").await.is_err());
    assert_eq!(app.get(D1_RESPONSES).await.status, 200);
    assert_eq!(whole_log(&app).await.len(), 4);
    // Rows are only ever added: a new token's key shows in new rows only.
    let secret = create_token(&app.state, "late", "responses").await;
    register_key(&app, "late", PUBLIC_PEM).await;
    let token = sign(Algorithm::RS256, "late", &claims(&app, Some("d1")));
    assert_eq!(get_as(&app, D1_RESPONSES, &bearer(&token)).await.status, 200);
    assert_eq!(get_as(&app, D1_RESPONSES, &basic("late", &secret)).await.status, 200);
    let keys: Vec<Option<String>> = whole_log(&app).await.into_iter().map(|e| e.consumer_key).collect();
    let test = Some(tests::TEST_KEY.to_owned());
    assert_eq!(keys, vec![test.clone(), test.clone(), None, test, Some("late".to_owned()), Some("late".to_owned())]);
});
