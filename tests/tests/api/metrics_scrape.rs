//! `/metrics` after real traffic (a POST scored by a plugin, a plugin that
//! traps, a 404, a scheduler pass), parsed by a real Prometheus parser:
//! `promtool check metrics` from Debian's `prometheus` package, which
//! `cargo xtask test` installs with the other prerequisites. Each family
//! is there with values that follow from the traffic; no label holds a
//! path or id as sent. And `metrics_listen`: /metrics on its own address
//! only.

use std::io::Write;
use std::process::{Command, Stdio};

use host::config::Config;
use host::metrics::families::FAMILIES;
use tests::plugins::{
    Behaviour, copy_built_plugin, copy_definition, hostile_module, install_module,
    two_item_definition, write_definition,
};
use tests::reqwest::Method;
use tests::{Db, TestApp, db_test, json};

use crate::support::{metric, metrics_text, phq9_all_answered, post_phq9, test_protocols};

/// Checks a scrape with `promtool check metrics`: it must parse as the
/// Prometheus text format, with no lint problem (help text, counter
/// suffixes, units, reserved names).
pub fn promtool_check(text: &str) {
    let spawned = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => panic!(
            "promtool is needed to check /metrics with a real Prometheus parser ({e}): install \
             Debian's `prometheus` package (`apt-get install prometheus`; `cargo xtask test` \
             does it with the other prerequisites)"
        ),
    };
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(text.as_bytes())
            .expect("scrape written to promtool");
    }
    let out = child.wait_with_output().expect("promtool ran");
    assert!(
        out.status.success(),
        "promtool check metrics refused the scrape ({}):\n{}{}\n--- scrape ---\n{text}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
}

/// The host with the real PHQ-9 scorer and `hostile`, a questionnaire
/// whose scorer traps.
async fn spawn_with_trap(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config: &mut Config| {
        let plugins = config.data_dir.join("plugins");
        let questionnaires = config.data_dir.join("questionnaires");
        copy_built_plugin(&plugins, "phq9");
        install_module(
            &plugins,
            "hostile",
            &hostile_module("scorer", "hostile", Behaviour::Trap),
        );
        copy_definition(&questionnaires, "phq9");
        write_definition(
            &questionnaires,
            "hostile",
            &two_item_definition("hostile", "hostile"),
        );
        config.plugins.dir = plugins;
        config.questionnaires_dir = questionnaires;
        config.protocols_dir = test_protocols();
    })
    .await
}

/// Families that appear only once their event happened, which this
/// traffic does not cause (each is counted in its own tests).
const EVENT_ONLY: &[&str] = &[
    // A cached artifact refused (plugin_cache.rs).
    "outcomes_plugin_artifacts_refused_total",
    // Fill-out visits (fill_out_pages.rs).
    "outcomes_fill_out_logins_total",
    "outcomes_fill_out_total",
    "outcomes_fill_out_refusals_total",
    // Shadow scoring, with a candidate on trial (shadow/).
    "outcomes_shadow_calls_total",
    "outcomes_shadow_differences_total",
    "outcomes_shadow_dropped_total",
    // An alarm acknowledged (alarms.rs).
    "outcomes_alarm_time_to_acknowledge_seconds",
];

/// The sum of every sample of `name` whose labels include all of `labels`.
fn sum(text: &str, name: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(series, _)| {
            series.split('{').next() == Some(name) && labels.iter().all(|l| series.contains(l))
        })
        .filter_map(|(_, value)| value.parse::<f64>().ok())
        .sum()
}

db_test!(
    async fn the_scrape_parses_and_holds_every_family_after_real_traffic(app: spawn_with_trap) {
        let scored = post_phq9(&app, "d-metrics-7", "e1", phq9_all_answered()).await;
        assert_eq!(scored.status, 201, "{}", scored.text);
        let trapped = app
            .post(
                "/api/v1/dossiers/d-metrics-7/responses",
                &json!({"external_id": "h1", "questionnaire_key": "hostile",
                        "answer_data": {"v_1": "a1", "v_2": "a0"}}),
            )
            .await;
        assert_eq!(trapped.status, 201, "{}", trapped.text);
        assert_eq!(app.get("/nothing/here-42").await.status, 404);
        assert_eq!(
            app.get("/api/v1/dossiers/d-metrics-7/responses")
                .await
                .status,
            200
        );
        host::scheduler::tick(app.state.scheduler(), tests::start_time())
            .await
            .expect("a scheduler pass");
        assert!(app.state.reload_definitions().await);

        let text = metrics_text(&app).await;
        promtool_check(&text);

        for family in FAMILIES.iter().filter(|f| !EVENT_ONLY.contains(&f.name)) {
            let kind = match family.kind {
                host::metrics::families::Kind::Counter => "counter",
                host::metrics::families::Kind::Gauge => "gauge",
                host::metrics::families::Kind::Histogram => "histogram",
            };
            assert!(
                text.contains(&format!("# TYPE {} {kind}\n", family.name)),
                "{} ({kind}) is missing:\n{text}",
                family.name
            );
            assert!(
                text.contains(&format!("# HELP {} ", family.name)),
                "{}",
                family.name
            );
        }

        // Requests by route template, method and status.
        let posts = r#"route="/api/v1/dossiers/{dossier_id}/responses",method="POST",status="201""#;
        assert_eq!(
            sum(&text, "outcomes_http_requests_total", &[posts]),
            2.0,
            "{text}"
        );
        assert_eq!(
            sum(
                &text,
                "outcomes_http_request_duration_seconds_count",
                &[posts]
            ),
            2.0
        );
        assert_eq!(
            sum(
                &text,
                "outcomes_http_request_duration_seconds_bucket",
                &[posts, r#"le="+Inf""#]
            ),
            2.0
        );
        assert!(
            sum(
                &text,
                "outcomes_http_request_duration_seconds_sum",
                &[posts]
            ) > 0.0
        );
        let unmatched = r#"route="unmatched",method="GET",status="404""#;
        assert_eq!(
            sum(&text, "outcomes_http_requests_total", &[unmatched]),
            1.0,
            "{text}"
        );
        assert!(
            !text.contains("here-42") && !text.contains("d-metrics-7"),
            "{text}"
        );
        // The scrape, on a listener of its own, is no API request in flight.
        assert_eq!(metric(&text, "outcomes_http_requests_in_flight"), Some(0.0));

        // The writer committed the POSTs; reads waited for pool connections.
        assert!(sum(&text, "outcomes_writer_batch_size_count", &[]) >= 1.0);
        assert!(
            sum(&text, "outcomes_writer_batch_size_sum", &[]) >= 2.0,
            "{text}"
        );
        assert!(sum(&text, "outcomes_writer_commit_duration_seconds_count", &[]) >= 1.0);
        assert_eq!(
            metric(&text, "outcomes_writer_failed_batches_total"),
            Some(0.0)
        );
        assert!(sum(&text, "outcomes_database_pool_wait_seconds_count", &[]) >= 1.0);
        assert_eq!(
            metric(&text, "outcomes_database_pool_max_connections"),
            Some(f64::from(app.config.max_connections))
        );

        // Plugin calls, their time and the trap.
        let phq9 = r#"plugin="phq9",kind="scorer""#;
        assert_eq!(
            sum(
                &text,
                "outcomes_plugin_calls_total",
                &[phq9, r#"result="ok""#]
            ),
            1.0
        );
        assert_eq!(
            sum(
                &text,
                "outcomes_plugin_call_duration_seconds_count",
                &[phq9]
            ),
            1.0
        );
        let hostile = r#"plugin="hostile",kind="scorer""#;
        assert_eq!(
            sum(
                &text,
                "outcomes_plugin_call_failures_total",
                &[hostile, r#"failure="trap""#]
            ),
            1.0,
            "{text}"
        );
        assert_eq!(
            sum(
                &text,
                "outcomes_plugin_calls_total",
                &[hostile, r#"result="trap""#]
            ),
            1.0
        );
        assert_eq!(
            metric(
                &text,
                r#"outcomes_scoring_failures_total{questionnaire="hostile",code="trap"}"#
            ),
            Some(1.0)
        );
        assert_eq!(metric(&text, "outcomes_plugins_serving"), Some(2.0));

        // The scheduler pass, its steps and when it ran.
        assert_eq!(
            metric(&text, r#"outcomes_scheduler_ticks_total{result="ok"}"#),
            Some(1.0)
        );
        for step in host::scheduler::STEPS {
            let labels = format!(r#"step="{}",result="ok""#, step.name);
            assert_eq!(
                sum(
                    &text,
                    "outcomes_scheduler_step_duration_seconds_count",
                    &[&labels]
                ),
                1.0,
                "{}",
                step.name
            );
        }
        assert_eq!(
            metric(&text, "outcomes_scheduler_last_pass_timestamp_seconds"),
            Some(tests::start_time().timestamp() as f64)
        );
        assert_eq!(
            metric(&text, r#"outcomes_callbacks_total{result="delivered"}"#),
            Some(0.0)
        );
        assert_eq!(
            metric(
                &text,
                r#"outcomes_definition_reloads_total{result="loaded"}"#
            ),
            Some(1.0)
        );

        // What the binary is, and the process.
        let info = format!(
            r#"outcomes_build_info{{version="{}",commit="{}",abi_version="{}"}}"#,
            host::build_info::VERSION,
            host::build_info::COMMIT,
            host::build_info::ABI_VERSION
        );
        assert_eq!(metric(&text, &info), Some(1.0), "{text}");
        assert!(metric(&text, "outcomes_process_resident_memory_bytes").is_some_and(|b| b > 1e6));
        assert!(metric(&text, "outcomes_process_open_fds").is_some_and(|n| n >= 3.0));
        let started = metric(&text, "outcomes_process_start_time_seconds").expect("start time");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_secs_f64();
        assert!(
            started > now - 86_400.0 * 30.0 && started <= now + 1.0,
            "{started}"
        );
    }
);

db_test!(
    async fn metrics_listen_serves_the_scrape_there_and_only_there(app) {
        let addr = app.state.metrics_addr().expect("bound");
        assert_ne!(addr.port(), 0);
        // The attack: reading how busy the service is, which plugins
        // serve and how each request fares from the API's address. Without
        // a metrics bearer the main listener does not serve /metrics.
        for authorization in [None, Some(app.basic_header())] {
            let main = app.send_as(Method::GET, "/metrics", None, authorization.as_deref()).await;
            assert_eq!(main.status, 404, "{}", main.text);
            assert_eq!(main.body, json!({"errors": {"base": ["not_found"]}}));
        }

        assert_eq!(app.get("/health").await.status, 200);
        let scrape = app
            .client
            .get(format!("http://{addr}/metrics"))
            .send()
            .await
            .expect("the metrics listener answers");
        assert_eq!(scrape.status(), 200);
        assert_eq!(
            scrape.headers()["content-type"],
            "text/plain; version=0.0.4; charset=utf-8"
        );
        let text = scrape.text().await.expect("a body");
        promtool_check(&text);
        // The request to /health on the main listener was counted; the
        // scrape's own listener serves nothing else.
        assert!(
            text.contains(r#"route="/health",method="GET",status="200""#),
            "{text}"
        );
        for path in ["/health", "/api/v1/questionnaires", "/metrics/x"] {
            let other = app
                .client
                .get(format!("http://{addr}{path}"))
                .send()
                .await
                .expect("the metrics listener answers");
            assert_eq!(other.status(), 404, "{path}");
        }
    }
);

/// A metrics bearer secret, as the file holds it.
const SCRAPE_SECRET: &str = "a-metrics-bearer-secret-of-forty-characters";

/// The host whose main listener serves /metrics to [`SCRAPE_SECRET`]; the
/// loopback peer of the tests a trusted proxy, so a request can say it
/// reached the proxy over plain HTTP.
async fn spawn_with_scrape_bearer(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        let file = config.data_dir.join("metrics-bearer");
        std::fs::write(&file, format!("{SCRAPE_SECRET}\n")).expect("the bearer file");
        config.metrics_bearer_file = Some(file);
        config.trusted_proxies.nets = vec!["127.0.0.1/32".parse().expect("a network")];
    })
    .await
}

db_test!(
    async fn the_main_listener_serves_metrics_only_to_the_configured_bearer(
        app: spawn_with_scrape_bearer,
    ) {
        // As the trusted proxy forwards a request that reached it over HTTPS.
        let get = |authorization: Option<String>| {
            let app = &app;
            async move {
                let mut headers = vec![("x-forwarded-proto", "https")];
                if let Some(value) = authorization.as_deref() {
                    headers.push(("authorization", value));
                }
                crate::auth::get_with(app, "/metrics", &headers).await
            }
        };
        let challenge = |answer: &tests::Answer| {
            answer
                .headers
                .get("www-authenticate")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let none = get(None).await;
        assert_eq!(none.status, 401, "{}", none.text);
        assert_eq!(none.body, json!({"errors": {"base": ["unauthorized"]}}));
        assert_eq!(
            challenge(&none).as_deref(),
            Some("Bearer realm=\"metrics\"")
        );
        let wrong = get(Some(format!("Bearer {SCRAPE_SECRET}x"))).await;
        assert_eq!(wrong.status, 401, "{}", wrong.text);
        assert_eq!(
            challenge(&wrong).as_deref(),
            Some("Bearer realm=\"metrics\", error=\"invalid_token\"")
        );
        // An API token is no metrics bearer.
        let api = get(Some(app.basic_header())).await;
        assert_eq!(api.status, 401, "{}", api.text);
        let right = get(Some(format!("Bearer {SCRAPE_SECRET}"))).await;
        assert_eq!(right.status, 200, "{}", right.text);
        assert_eq!(
            right.headers["content-type"],
            "text/plain; version=0.0.4; charset=utf-8"
        );
        promtool_check(&right.text);
        // Sent over plain HTTP to the proxy, the bearer is refused unread.
        let plain = app
            .client
            .get(app.url("/metrics"))
            .header("authorization", format!("Bearer {SCRAPE_SECRET}"))
            .header("x-forwarded-for", "203.0.113.9")
            .header("x-forwarded-proto", "http")
            .send()
            .await
            .expect("an answer");
        assert_eq!(plain.status(), 403);
        assert_eq!(
            plain.json::<serde_json::Value>().await.expect("JSON"),
            json!({"errors": {"base": ["https_required"]}})
        );
        // The metrics listener still serves without credentials.
        assert_eq!(crate::support::scrape(&app).await.status(), 200);
    }
);
