//! Stats per dossier (docs/api/stats.md), checked against hand-counted
//! fixtures, through every way of naming dossiers.

use chrono::Duration;
use serde_json::Value;
use tests::{TestApp, db_test, json};

use crate::auth::{bearer, claims, get_as, jwt, spawn_jwt};
use crate::support::*;

/// Counters as the API writes them.
fn counters(responses: [i64; 7], invitations: [i64; 4], subscriptions: [i64; 3]) -> Value {
    let [total, completed, aborted, expired, pending, scheduled, open] = responses;
    let [i_total, active, i_expired, unexpired] = invitations;
    let [s_total, to_be_prepared, to_be_stopped] = subscriptions;
    json!({
        "responses": {"total": total, "completed": completed, "aborted": aborted, "expired": expired,
                      "pending": pending, "scheduled": scheduled, "open": open},
        "invitations": {"total": i_total, "active": active, "expired": i_expired, "unexpired": unexpired},
        "protocol_subscriptions": {"total": s_total, "to_be_prepared": to_be_prepared, "to_be_stopped": to_be_stopped},
    })
}

fn zeros() -> Value {
    counters([0; 7], [0; 4], [0; 3])
}

/// d1: a POSTed response (completed); a subscription to the monthly
/// protocol (two responses, one completed); a response prepared by hand
/// opening tomorrow (scheduled), one open till yesterday (expired), one
/// aborted. d2: a stopped subscription. Then a day passes.
async fn history(app: &TestApp) {
    posted(app, "d1", "ext-1").await;
    let subscribed = app
        .post(
            "/api/v1/dossiers/d1/protocol_subscriptions",
            &json!({"protocol_key": "rom_monthly"}),
        )
        .await;
    assert_eq!(subscribed.status, 200, "{}", subscribed.text);
    let phq9 = subscribed.body["responses"][0]["id"].to_string();
    let put = app
        .put(
            &response("d1", &phq9),
            &json!({"questionnaire_key": "phq9", "answer_data": phq9_all_answered()}),
        )
        .await;
    assert_eq!(put.status, 200, "{}", put.text);
    prepare(
        app,
        "d1",
        "phq9",
        Some(Duration::days(2)),
        Some(Duration::days(9)),
    )
    .await;
    prepare(app, "d1", "phq9", None, Some(Duration::hours(12))).await;
    let aborted = prepare(app, "d1", "phq9", None, None).await;
    abort(app, "d1", aborted).await;
    let d2 = app
        .post(
            "/api/v1/dossiers/d2/protocol_subscriptions",
            &json!({"protocol_key": "rom_monthly"}),
        )
        .await;
    assert_eq!(d2.status, 200, "{}", d2.text);
    let stopped = app
        .delete(&format!(
            "/api/v1/dossiers/d2/protocol_subscriptions/{}",
            d2.body["id"]
        ))
        .await;
    assert_eq!(stopped.status, 200, "{}", stopped.text);
    app.clock.advance(Duration::days(1));
}

/// d1 a day later, counted by hand: 6 responses, 2 completed (the POST
/// and the subscription's PHQ-9), 1 aborted, 1 expired (the one open till
/// 12 hours in), 2 pending (the subscription's GAD-7, open; the one
/// opening on day 2, scheduled). One invitation (the subscription's first
/// month), open. One subscription, more months to prepare, and a stop date.
fn d1() -> Value {
    counters([6, 2, 1, 1, 2, 1, 1], [1, 1, 0, 1], [1, 1, 1])
}

/// d2: its two responses stay (they were open when it stopped), open; the
/// invitation likewise; the subscription counts in total only.
fn d2() -> Value {
    counters([2, 0, 0, 0, 2, 0, 2], [1, 1, 0, 1], [1, 0, 0])
}

db_test!(async fn one_dossier_is_counted_by_hand(app) {
    history(&app).await;
    let answer = app.get("/api/v1/dossier/d1/stats").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.body, json!({"d1": d1()}));
});

db_test!(async fn dossiers_are_named_in_every_form(app) {
    history(&app).await;
    let both = json!({"d1": d1(), "d2": d2()});
    for path in [
        "/api/v1/dossier/d1,d2/stats",
        "/api/v1/dossiers/d2,d1/stats.json",
        "/api/v1/dossier/%5B%22d1%22%2C%22d2%22%5D/stats",
        "/api/v1/stats?epd_ids=d1,d2",
        "/api/v1/stats?epd_ids[]=d1&epd_ids[]=d2",
        "/api/v1/stats?epd_ids=d1&epd_ids=d2&epd_ids=d1",
        "/api/v1/stats",
    ] {
        let answer = app.get(path).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.text);
        assert_eq!(answer.body, both, "{path}");
    }
    // A dossier that does not exist is left out; only unknown ids give an
    // empty object.
    for path in ["/api/v1/dossier/d1,nobody/stats", "/api/v1/stats?epd_ids=nobody,d1"] {
        let answer = app.get(path).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.text);
        assert_eq!(answer.body, json!({"d1": d1()}), "{path}");
    }
    for path in ["/api/v1/dossier/nobody,nobody2/stats", "/api/v1/stats?epd_ids=nobody"] {
        let answer = app.get(path).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.text);
        assert_eq!(answer.body, json!({}), "{path}");
    }
    // A dossier that exists but counts nothing (its one response withdrawn)
    // has zeros.
    posted(&app, "d3", "ext-3").await;
    let deleted = app.delete(&response("d3", "ext-3")).await;
    assert_eq!(deleted.status, 204, "{}", deleted.text);
    let answer = app.get("/api/v1/dossier/d3,nobody/stats").await;
    assert_eq!(answer.body, json!({"d3": zeros()}));
});

db_test!(async fn stats_follow_the_clock(app) {
    history(&app).await;
    // Eight days in: the subscription's month-one window (7 days) closed;
    // the day-2 response is open.
    app.clock.advance(Duration::days(7));
    let answer = app.get("/api/v1/dossier/d1/stats").await;
    assert_eq!(answer.body["d1"], counters([6, 2, 1, 2, 1, 0, 1], [1, 0, 1, 0], [1, 1, 1]));
});

db_test!(async fn bad_dossier_lists_are_refused(app) {
    for path in [
        "/api/v1/dossier/d1,,d2/stats",
        "/api/v1/dossier/%5B1%2C2%5D/stats",
        "/api/v1/dossier/%5B%22d1%22/stats",
        "/api/v1/stats?epd_ids=",
        "/api/v1/stats?epd_ids[]=%01",
    ] {
        assert_error(&app.get(path).await, 422, error("epd_ids", "invalid"));
    }
    let many = vec!["d"; 10_001].join(",");
    assert_error(&app.get(&format!("/api/v1/stats?epd_ids={many}")).await, 422, error("epd_ids", "invalid"));
});

db_test!(
    async fn a_jwt_sees_the_stats_of_its_own_dossier_only(app: spawn_jwt) {
        history(&app).await;
        let token = bearer(&jwt(&claims(&app, Some("d1"))));
        let own = get_as(&app, "/api/v1/dossier/d1/stats", &token).await;
        assert_eq!(own.status, 200, "{}", own.text);
        assert_eq!(own.body, json!({"d1": d1()}));
        let own = get_as(&app, "/api/v1/stats?epd_ids=d1", &token).await;
        assert_eq!(own.status, 200, "{}", own.text);
        for path in [
            "/api/v1/stats",
            "/api/v1/stats?epd_ids=d1,d2",
            "/api/v1/dossier/d1,d2/stats",
            "/api/v1/dossier/d2/stats",
        ] {
            assert_error(
                &get_as(&app, path, &token).await,
                403,
                error("base", "sub_mismatch"),
            );
        }
    }
);
