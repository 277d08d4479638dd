//! `/api/v1/docs`, the interactive API reference, in headless Chromium:
//! it renders the operations of the OpenAPI document from files this
//! service serves, under its Content-Security-Policy, with no console
//! error, no policy violation and no request to another origin. Over HTTP:
//! its headers, files and what it refuses. The page reads no database, so
//! these run on SQLite only.

use std::time::{Duration, Instant};

use serde_json::Value;
use tests::browser::Browser;
use tests::reqwest::Method;
use tests::{Db, TestApp, json};

/// The policy the page and its files are served with.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; font-src 'self'; connect-src 'self'; form-action 'self'; \
     frame-ancestors 'none'; base-uri 'none'";

/// The paths of the operations the page shows, once it shows some.
async fn rendered_paths(browser: &Browser) -> Vec<String> {
    const SCRIPT: &str = "return Array.from(document.querySelectorAll('.opblock-summary-path'))\
                          .map(e => e.getAttribute('data-path') || e.textContent);";
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let paths: Vec<String> = browser
            .execute(SCRIPT, json!([]))
            .await
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            // Swagger UI breaks long paths with zero-width spaces.
            .map(|p| p.replace('\u{200b}', ""))
            .collect();
        if !paths.is_empty() {
            return paths;
        }
        assert!(
            Instant::now() < deadline,
            "no operation rendered within 60 s; console: {:?}",
            browser.console().await
        );
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn the_reference_renders_every_operation_from_this_service_alone() {
    let app = TestApp::spawn(Db::Sqlite).await;
    let browser = Browser::start("en").await;
    browser.goto(&app.url("/api/v1/docs")).await;
    let paths = rendered_paths(&browser).await;

    // Every documented operation is on the page, the dossier ones included.
    let doc = app.get("/api/v1/openapi.json").await.body;
    let documented: usize = doc["paths"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(_, item)| {
            item.as_object().map_or(0, |ops| {
                ops.keys().filter(|k| k.as_str() != "parameters").count()
            })
        })
        .sum();
    assert_eq!(paths.len(), documented, "{paths:?}");
    assert!(
        paths
            .iter()
            .any(|p| p == "/api/v1/dossiers/{dossier_id}/responses"),
        "{paths:?}"
    );

    // Every load came from this service: the page, its files, the document.
    let loaded = browser
        .execute(
            "return [location.href].concat(performance.getEntriesByType('resource').map(e => e.name));",
            json!([]),
        )
        .await;
    let loaded: Vec<&str> = loaded
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    assert!(loaded.len() >= 4, "{loaded:?}");
    for url in &loaded {
        assert!(
            url.starts_with(&format!("{}/", app.base)),
            "{url} left this service"
        );
    }
    assert!(
        loaded.iter().any(|u| u.ends_with("/api/v1/openapi.json")),
        "{loaded:?}"
    );

    // No policy violation, no failed load, no script error.
    let console = browser.console().await;
    let bad: Vec<_> = console
        .iter()
        .filter(|(level, text)| level == "SEVERE" || text.contains("Content Security Policy"))
        .collect();
    assert!(bad.is_empty(), "console: {console:?}");

    let shot = tests::repo_root().join("target/tmp/api-docs.png");
    browser.screenshot(1280, &shot).await;
}

#[tokio::test]
async fn the_page_and_its_files_come_from_the_binary_under_the_policy() {
    let app = TestApp::spawn(Db::Sqlite).await;
    for (path, content_type) in [
        ("/api/v1/docs", "text/html; charset=utf-8"),
        (
            "/api/v1/docs/initializer.js",
            "text/javascript; charset=utf-8",
        ),
        ("/api/v1/docs/swagger-ui-bundle.js", "text/javascript"),
        ("/api/v1/docs/swagger-ui.css", "text/css"),
        ("/api/v1/docs/favicon-32x32.png", "image/png"),
    ] {
        let answer = app.send_as(Method::GET, path, None, None).await;
        assert_eq!(answer.status, 200, "{path}");
        assert!(
            answer.headers["content-type"]
                .to_str()
                .unwrap_or_default()
                .starts_with(content_type),
            "{path}: {:?}",
            answer.headers["content-type"]
        );
        assert_eq!(answer.headers["content-security-policy"], POLICY, "{path}");
        assert_eq!(
            answer.headers["x-content-type-options"], "nosniff",
            "{path}"
        );
        assert_eq!(answer.headers["x-frame-options"], "DENY", "{path}");
        // Nothing refers to another origin.
        if path.ends_with(".html") || path == "/api/v1/docs" || path.ends_with("initializer.js") {
            assert!(
                !answer.text.contains("http"),
                "{path} names an address: {}",
                answer.text
            );
        }
    }
    // The page has no inline script: the policy would refuse it.
    let page = app
        .send_as(Method::GET, "/api/v1/docs", None, None)
        .await
        .text;
    assert_eq!(
        page.matches("<script").count(),
        page.matches("<script src=\"/api/v1/docs/").count()
    );
    // Only the files the page loads; everything else is the API's 404.
    for path in [
        "/api/v1/docs/index.html",
        "/api/v1/docs/swagger-initializer.js",
        "/api/v1/docs/..%2F..%2Fopenapi.json",
        "/api/v1/docs/nothing.js",
    ] {
        let answer = app.send_as(Method::GET, path, None, None).await;
        assert_eq!(answer.status, 404, "{path}");
        assert_eq!(
            answer.body,
            json!({"errors": {"base": ["not_found"]}}),
            "{path}"
        );
    }
    let answer = app.send_as(Method::POST, "/api/v1/docs", None, None).await;
    assert_eq!(answer.status, 405);
}
