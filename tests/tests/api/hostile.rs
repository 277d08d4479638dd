//! Hostile and broken input: malformed, oversized, deeply nested, non-UTF-8
//! and mistyped bodies, absurd ids, odd query strings. Every answer is a
//! clean JSON 4xx; none is a 500.

use reqwest::Method;
use tests::{Answer, TestApp, db_test, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::*;

/// POSTs raw bytes as `content_type` to the response list of d1.
async fn post_raw(app: &TestApp, bytes: impl Into<Vec<u8>>, content_type: &str) -> Answer {
    app.send(
        Method::POST,
        &responses("d1"),
        Some((bytes.into(), content_type)),
    )
    .await
}

fn assert_malformed(answer: &Answer, what: &str) {
    assert_eq!(answer.status, 400, "{what}: {}", answer.text);
    assert_eq!(answer.body, error("base", "malformed_json"), "{what}");
}

db_test!(async fn malformed_json_is_a_400(app) {
    for body in ["{", "{\"external_id\": }", "nul", "{} x", "{\"a\": 1,}", "{'a': 1}", "\u{feff}{}", "{\"a\": 1e400}"] {
        assert_malformed(&post_raw(&app, body, "application/json").await, body);
        let put = app.send(Method::PUT, &response("d1", "x"), Some((body.into(), "application/json"))).await;
        assert_malformed(&put, body);
    }
    assert_eq!(app.get(&responses("d1")).await.body, json!([]));
});

db_test!(async fn json_that_is_not_an_object_is_a_400(app) {
    for body in ["[]", "[{\"questionnaire_key\": \"phq9\"}]", "\"phq9\"", "42", "null", "true"] {
        assert_malformed(&post_raw(&app, body, "application/json").await, body);
    }
});

db_test!(async fn an_empty_body_is_a_400_and_no_body_at_all_a_415(app) {
    assert_malformed(&post_raw(&app, "", "application/json").await, "empty, declared JSON");
    // No body and no Content-Type at all: nothing declared JSON.
    for method in [Method::POST, Method::PUT] {
        let path = if method == Method::POST { responses("d1") } else { response("d1", "x") };
        let answer = app.send(method.clone(), &path, None).await;
        assert_error(&answer, 415, error("base", "unsupported_media_type"));
    }
});

db_test!(async fn a_body_over_the_limit_is_a_413(app) {
    // Valid JSON, 2 MiB: a long string in an otherwise fine body.
    let filler = "x".repeat(2 * 1024 * 1024);
    let body = json!({"questionnaire_key": "phq9", "external_id": "big", "answer_data": {"v_1": "a0"}, "entered_by": filler});
    let answer = app.post(&responses("d1"), &body).await;
    assert_error(&answer, 413, error("base", "too_large"));
    let answer = app.put(&response("d1", "big"), &body).await;
    assert_error(&answer, 413, error("base", "too_large"));
    assert_eq!(app.get(&responses("d1")).await.body, json!([]));
});

db_test!(async fn a_chunked_body_over_the_limit_is_a_413(app) {
    // No Content-Length: the limit must hold while reading.
    let address = app.base.trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&address).await.expect("connect");
    let head = format!(
        "POST /api/v1/dossiers/d1/responses HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\nAuthorization: {}\r\n\r\n",
        app.basic_header()
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    let chunk = format!("{:x}\r\n{}\r\n", 64 * 1024, " ".repeat(64 * 1024));
    // Up to 2 MiB of whitespace; the host may answer and stop reading early.
    for _ in 0..32 {
        if stream.write_all(chunk.as_bytes()).await.is_err() {
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n").await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.ends_with(r#"{"errors":{"base":["too_large"]}}"#), "{answer}");
});

db_test!(async fn deeply_nested_json_is_a_400(app) {
    for depth in [200, 100_000] {
        let arrays = "[".repeat(depth);
        assert_malformed(&post_raw(&app, arrays.clone(), "application/json").await, "arrays");
        let objects = format!("{{\"answer_data\": {}}}", "{\"a\": ".repeat(depth));
        assert_malformed(&post_raw(&app, objects, "application/json").await, "objects");
        let closed = format!("{{\"answer_data\": {}{}}}", "[".repeat(depth), "]".repeat(depth));
        assert_malformed(&post_raw(&app, closed, "application/json").await, "closed arrays");
    }
    // The host is still fine.
    assert_eq!(post_phq9(&app, "d1", "ext-1", json!({"v_1": "a0"})).await.status, 201);
});

db_test!(async fn a_body_that_is_not_utf8_is_a_400(app) {
    let mut bytes = br#"{"questionnaire_key": "phq9", "external_id": ""#.to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe, 0xc3]);
    bytes.extend_from_slice(br#"", "answer_data": {"v_1": "a0"}}"#);
    assert_malformed(&post_raw(&app, bytes.clone(), "application/json").await, "invalid UTF-8");
    assert_malformed(&post_raw(&app, bytes, "application/json; charset=latin1").await, "latin1");
    let utf16: Vec<u8> = "{}".encode_utf16().flat_map(u16::to_le_bytes).collect();
    assert_malformed(&post_raw(&app, utf16, "application/json").await, "UTF-16");
});

db_test!(async fn a_cross_site_post_a_browser_sends_without_asking_stores_nothing(app) {
    // What a page on another site can make a browser send, credentials
    // included, without a CORS preflight: a JSON text with no type (a
    // fetch of a Blob), as plain text, or as a form.
    let body = json!({"questionnaire_key": "phq9", "external_id": "forged", "answer_data": {"v_1": "a0"}}).to_string();
    let bare = app.client.post(app.url(&responses("d1"))).header("authorization", app.basic_header()).body(body.clone());
    let answer = bare.send().await.expect("the host answers");
    assert_eq!(answer.status(), 415);
    assert_eq!(answer.json::<serde_json::Value>().await.expect("json"), error("base", "unsupported_media_type"));
    for content_type in ["text/plain;charset=UTF-8", "application/x-www-form-urlencoded"] {
        assert_error(&post_raw(&app, body.clone(), content_type).await, 415, error("base", "unsupported_media_type"));
    }
    assert_eq!(app.get(&responses("d1")).await.body, json!([]));
});

db_test!(async fn bodies_that_are_not_json_are_a_415(app) {
    let body = json!({"questionnaire_key": "phq9", "external_id": "ext-1", "answer_data": {"v_1": "a0"}}).to_string();
    for content_type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml", "json"] {
        let answer = post_raw(&app, body.clone(), content_type).await;
        assert_error(&answer, 415, error("base", "unsupported_media_type"));
        let put = app.send(Method::PUT, &response("d1", "x"), Some((body.clone().into_bytes(), content_type))).await;
        assert_error(&put, 415, error("base", "unsupported_media_type"));
    }
    assert_eq!(app.get(&responses("d1")).await.body, json!([]));
});

db_test!(async fn ten_thousand_character_ids_get_a_clean_4xx(app) {
    let long = "x".repeat(10_000);
    let body = json!({"questionnaire_key": "phq9", "external_id": "ext-1", "answer_data": {"v_1": "a0"}});
    let invalid_dossier = error("dossier_id", "invalid");
    assert_error(&app.get(&responses(&long)).await, 422, invalid_dossier.clone());
    assert_error(&app.post(&responses(&long), &body).await, 422, invalid_dossier.clone());
    assert_error(&app.put(&response(&long, "ext-1"), &body).await, 422, invalid_dossier.clone());
    assert_error(&app.delete(&response(&long, "ext-1")).await, 422, invalid_dossier.clone());
    assert_error(&app.get(&format!("/api/v1/dossier/{long}/respondents")).await, 422, invalid_dossier.clone());
    assert_error(&app.get(&format!("/api/v1/dossier/{long}/respondents/1")).await, 422, invalid_dossier);

    let answer = post_phq9(&app, "d1", &long, json!({"v_1": "a0"})).await;
    assert_error(&answer, 422, error("external_id", "invalid"));
    let answer = app.put(&response("d1", &long), &json!({"questionnaire_key": "phq9", "answer_data": {"v_1": "a0"}})).await;
    assert_error(&answer, 404, error("external_id", "not_found"));
    assert_error(&app.delete(&response("d1", &long)).await, 404, error("external_id", "not_found"));
    let answer = app.post(&responses("d1"), &json!({"questionnaire_key": long, "external_id": "x", "answer_data": {"v_1": "a0"}})).await;
    assert_error(&answer, 422, error("questionnaire_key", "invalid"));
    assert_error(&app.get(&format!("/api/v1/questionnaires/{long}")).await, 404, error("questionnaire", "not_found"));
    assert_error(&app.get(&format!("/api/v1/protocols/{long}")).await, 404, error("protocol", "not_found"));
    // 255 characters is the longest id that is accepted.
    let longest = "y".repeat(255);
    assert_eq!(post_phq9(&app, &longest, &longest, json!({"v_1": "a0"})).await.status, 201);
    assert_eq!(app.get(&responses(&longest)).await.body[0]["external_id"], longest);
    assert_error(&post_phq9(&app, "d1", &"y".repeat(256), json!({"v_1": "a0"})).await, 422, error("external_id", "invalid"));
});

db_test!(async fn control_characters_in_ids_are_invalid(app) {
    assert_error(&app.get(&responses("a%0Ab")).await, 422, error("dossier_id", "invalid"));
    assert_error(&app.get(&responses("a%07b")).await, 422, error("dossier_id", "invalid"));
    assert_error(&post_phq9(&app, "d1", "a\u{0}b", json!({"v_1": "a0"})).await, 422, error("external_id", "invalid"));
    assert_error(&post_phq9(&app, "d1", "line\nbreak", json!({"v_1": "a0"})).await, 422, error("external_id", "invalid"));
});

db_test!(async fn nul_bytes_in_a_dossier_id_are_invalid(app) {
    // The guard logs the dossier id before the handler checks it; PostgreSQL
    // text cannot hold NUL, so the log must not pass it through.
    assert_error(&app.get(&responses("a%00b")).await, 422, error("dossier_id", "invalid"));
    let body = json!({"questionnaire_key": "phq9", "external_id": "ext-1", "answer_data": {"v_1": "a0"}});
    assert_error(&app.post(&responses("%00"), &body).await, 422, error("dossier_id", "invalid"));
});

db_test!(async fn nul_bytes_in_credentials_are_refused_cleanly(app) {
    // "a\0b:secret" in Basic: the consumer key is logged before it is refused.
    let authorization = "Basic YQBiOnNlY3JldA==";
    let answer = app.send_as(Method::GET, &responses("d1"), None, Some(authorization)).await;
    assert_error(&answer, 401, error("base", "unauthorized"));
});

db_test!(async fn quotes_and_sql_in_ids_are_just_text(app) {
    let nasty = "x'; DROP TABLE responses; --";
    let encoded = "x'%3B%20DROP%20TABLE%20responses%3B%20--";
    let stored = posted(&app, encoded, nasty).await;
    assert_eq!(stored["external_id"], nasty);
    let emoji = post_phq9(&app, encoded, "ü-🩺-\"quoted\"", json!({"v_1": "a0"})).await;
    assert_eq!(emoji.status, 201, "{}", emoji.text);
    assert_eq!(ids(&app.get(&responses(encoded)).await.body), [id_of(&stored), id_of(&emoji.body)]);
    assert_eq!(app.delete(&response(encoded, "x'%3B%20DROP%20TABLE%20responses%3B%20--")).await.status, 204);
    assert_eq!(ids(&app.get(&responses(encoded)).await.body), [id_of(&emoji.body)]);
});

db_test!(async fn absurd_numbers_are_invalid_not_errors(app) {
    let cases = [
        ("started_at", json!(i64::MAX), "invalid"),
        ("started_at", json!(u64::MAX), "invalid"),
        ("started_at", json!(i64::MIN), "too_early"),
        ("filled_out_at", json!(-1), "too_early"),
        ("filled_out_at", json!(1e300), "invalid"),
        ("filled_out_at", json!("99999999999999999999999"), "invalid"),
        ("external_id", json!(1e300), "invalid"),
        ("external_id", json!(0.5), "invalid"),
        ("external_id", json!(-12.25), "invalid"),
    ];
    for (field, value, code) in cases {
        let mut body = json!({"questionnaire_key": "phq9", "external_id": "ext-1", "answer_data": {"v_1": "a0"}});
        body[field] = value.clone();
        let answer = app.post(&responses("d1"), &body).await;
        assert_eq!(answer.status, 422, "{field} = {value}: {}", answer.text);
        assert_eq!(answer.body, error(field, code), "{field} = {value}");
    }
    // JSON has one number type: a whole number written with a fraction is
    // that integer, as a JSON Schema validator reads it (docs/api/import.md).
    let body = json!({"questionnaire_key": "phq9", "external_id": -1988.0, "answer_data": {"v_1": "a0"}});
    let answer = app.post(&responses("d1"), &body).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    assert_eq!(answer.body["external_id"], "-1988");
});

db_test!(async fn odd_query_strings_are_read_or_refused_cleanly(app) {
    posted(&app, "d1", "ext-1").await;
    let many_keys = "questionnaire_keys=x&".repeat(999);
    let answer = app.get(&format!("{}?{many_keys}questionnaire_keys[]=phq9", responses("d1"))).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.body.as_array().map(Vec::len), Some(1));
    // Past a thousand keys: refused, as documented.
    let too_many = "questionnaire_keys=x&".repeat(2_500);
    let answer = app.get(&format!("{}?{too_many}questionnaire_keys[]=phq9", responses("d1"))).await;
    assert_error(&answer, 422, error("questionnaire_keys", "invalid"));
    for query in ["status", "status=&status=", "%ZZ=1", "status=%ZZ", "&&&", "status[]=", "status[x]=open", "=open"] {
        let answer = app.get(&format!("{}?{query}", responses("d1"))).await;
        assert!(answer.status == 200 || answer.status == 422, "{query}: {} {}", answer.status, answer.text);
        assert!(answer.body.is_array() || answer.body["errors"].is_object(), "{query}: {}", answer.text);
    }
    for value in ["new", "Open", " open", "open ", "opened", "expired,open", "1", "null"] {
        let answer = app.get(&format!("{}?status={}", responses("d1"), value.replace(' ', "%20"))).await;
        assert_error(&answer, 422, error("status", "invalid"));
    }
});
