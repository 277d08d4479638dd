//! Several hosts on one PostgreSQL database behind a load balancer
//! (docs/operations.md, "Several hosts on one PostgreSQL"): two `outcomes
//! serve` processes of the built binary behind HAProxy, driven at once.
//!
//! PostgreSQL only: that is the database hosts share. The scheduler part
//! runs two hosts in this process instead ([`TestApp::another_host`]): the
//! binary reads the system clock, and a scheduler driven by it could only
//! be tested by waiting; in-process hosts take `scheduler::tick` at
//! explicit times, each with its own pool and writer, as processes have.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use chrono::NaiveDateTime;
use futures_util::future::join_all;
use host::domain::schedule::resolve;
use host::scheduler;
use serde_json::Value;
use tests::processes::{Haproxy, ServeProcess, wait_until};
use tests::{Db, TestApp, json};

use crate::fill_out_sessions::{EPD, sessions};
use crate::support::*;
use crate::visitor::{Visitor, pairs, phq9_form};

/// Two hosts of the built binary on the database of `app` (the operator's
/// host in this process, which made the database, the token and the
/// secrets key), and HAProxy in front of them.
struct Cluster {
    app: TestApp,
    hosts: Vec<ServeProcess>,
    proxy: Haproxy,
}

async fn cluster() -> Cluster {
    let app = TestApp::spawn_with(Db::Postgres, |config| {
        config.allowed_origins = vec![EPD.to_owned()];
    })
    .await;
    // The hosts share what docs/operations.md#secrets says they must: the
    // secrets key file, which opens the link secret kept in the database.
    let key = app.config.secrets_key_file.display().to_string();
    let extra: Vec<String> = [
        "--secrets-key-file",
        &key,
        "--allowed-origins",
        EPD,
        "--scheduler-interval",
        "0",
        "--max-connections",
        "4",
    ]
    .map(str::to_owned)
    .to_vec();
    let a = ServeProcess::start(&app.database_url, &app.dir().join("host-a"), &extra).await;
    let b = ServeProcess::start(&app.database_url, &app.dir().join("host-b"), &extra).await;
    let proxy = Haproxy::start(&[a.port, b.port]).await;
    Cluster {
        app,
        hosts: vec![a, b],
        proxy,
    }
}

impl Cluster {
    /// POSTs `body` as JSON to `base` + `path` with the test token; status
    /// and body, or None when no answer came (a killed host).
    async fn post(
        &self,
        client: &reqwest::Client,
        base: &str,
        path: &str,
        body: &Value,
    ) -> Option<(u16, Value)> {
        let answer = client
            .post(format!("{base}{path}"))
            .header("authorization", self.app.basic_header())
            .json(body)
            .send()
            .await
            .ok()?;
        let status = answer.status().as_u16();
        let text = answer.text().await.ok()?;
        Some((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }
}

fn phq9_body(external_id: &str, option: &str) -> Value {
    let answers: serde_json::Map<String, Value> =
        (1..=9).map(|n| (format!("v_{n}"), json!(option))).collect();
    json!({"questionnaire_key": "phq9", "external_id": external_id, "answer_data": answers})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_external_id_posted_to_both_hosts_at_once_is_stored_once() {
    let cluster = cluster().await;
    let (a, b) = (&cluster.hosts[0].base, &cluster.hosts[1].base);
    let (to_a, to_b) = (reqwest::Client::new(), reqwest::Client::new());
    let rounds = 60;
    for round in 0..rounds {
        // Every other round in a dossier neither host has seen: the two
        // also race to make the dossier and its patient.
        let dossier = format!("race-{}", round / 2);
        let external_id = format!("e{round}");
        let same = round % 2 == 0;
        let first = phq9_body(&external_id, "a1");
        let second = if same {
            first.clone()
        } else {
            phq9_body(&external_id, "a2")
        };
        let path = responses(&dossier);
        let (x, y) = tokio::join!(
            cluster.post(&to_a, a, &path, &first),
            cluster.post(&to_b, b, &path, &second)
        );
        let (x, y) = (x.expect("host a answers"), y.expect("host b answers"));
        let mut answers = [x, y];
        answers.sort_by_key(|(status, _)| *status);
        let [(low, low_body), (high, high_body)] = answers;
        if same {
            // One stored it; the other's is a retry of it: 200, the same.
            assert_eq!(
                (low, high),
                (200, 201),
                "round {round}: {low_body} {high_body}"
            );
            assert_eq!(low_body, high_body, "round {round}");
        } else {
            assert_eq!(
                (low, high),
                (201, 422),
                "round {round}: {low_body} {high_body}"
            );
            assert_eq!(high_body, error("external_id", "taken"), "round {round}");
        }
    }
    assert_eq!(
        cluster.app.sql("SELECT COUNT(*) FROM responses").await,
        Some(rounds)
    );
    assert_eq!(
        cluster.app.sql("SELECT COUNT(*) FROM dossiers").await,
        Some(rounds / 2)
    );
    // One patient per dossier, however the race went.
    assert_eq!(
        cluster.app.sql("SELECT COUNT(*) FROM (SELECT dossier_id FROM respondents GROUP BY dossier_id, respondent_type HAVING COUNT(*) > 1) AS twice").await,
        Some(0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fill_out_session_started_on_one_host_continues_on_the_other() {
    let cluster = cluster().await;
    let (a, b) = (cluster.hosts[0].base.clone(), cluster.hosts[1].base.clone());
    let client = reqwest::Client::new();
    // The EPD starts the session through the load balancer.
    let started = cluster
        .post(
            &client,
            &cluster.proxy.base,
            &sessions("walker"),
            &json!({"questionnaire_keys": ["phq9"], "return_to": format!("{EPD}/back")}),
        )
        .await
        .expect("an answer");
    assert_eq!(started.0, 200, "{}", started.1);
    let link = started.1["fill_out_url"].as_str().expect("a fill_out_url");
    let path = &link[link.find("/fill_out/").expect("a fill-out path")..];
    // The link's page from host a, its button posted to host b.
    let mut visitor = Visitor::new(&cluster.app);
    visitor.base = a.clone();
    let page = visitor.get(path).await;
    assert_eq!(page.status, 200, "{}", page.text);
    let fields: Vec<(String, String)> = ["fill_out_session_key", "nonce", "timestamp", "hmac"]
        .into_iter()
        .map(|name| (name.to_owned(), page.field(name)))
        .collect();
    visitor.base = b.clone();
    let login = visitor
        .post_form("/fill_out/session/login", &pairs(&fields))
        .await;
    assert_eq!(login.status, 303, "{}", login.text);
    assert!(visitor.cookie.is_some(), "a session cookie");
    // The questionnaire shown by host a, with the session host b began.
    visitor.base = a.clone();
    let form = visitor.follow(login).await;
    assert_eq!(form.status, 200, "{}", form.text);
    let csrf = form.field("csrf");
    let id = cluster
        .app
        .sql("SELECT id FROM responses")
        .await
        .expect("the prepared response");
    // Submitted to host b: scored, stored, and back to the EPD.
    visitor.base = b.clone();
    let mut answers = phq9_form(&csrf, "a2");
    answers.push(("shown_at".to_owned(), form.field("shown_at")));
    let done = visitor
        .post_form(
            &format!("/fill_out/session/responses/{id}"),
            &pairs(&answers),
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.text);
    let back = visitor.follow(done).await;
    assert_eq!(back.location(), format!("{EPD}/back"));
    // Every host sees it completed.
    for base in [&a, &b, &cluster.proxy.base] {
        let listed = client
            .get(format!("{base}{}", responses("walker")))
            .header("authorization", cluster.app.basic_header())
            .send()
            .await
            .expect("an answer")
            .json::<Value>()
            .await
            .expect("JSON");
        assert_eq!(listed[0]["status"], "completed", "{listed}");
        assert_eq!(listed[0]["values"]["v_9"], "a2", "{listed}");
        assert_eq!(
            listed[0]["outcome"]["scores"]["total"]["value"].as_f64(),
            Some(18.0),
            "{listed}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_a_host_mid_load_loses_nothing_it_acknowledged() {
    let mut cluster = cluster().await;
    let mut hosts = std::mem::take(&mut cluster.hosts);
    let (stop, acknowledged) = (
        AtomicBool::new(false),
        Mutex::new(Vec::<(String, String)>::new()),
    );
    let (failed, next) = (AtomicUsize::new(0), AtomicUsize::new(0));
    // References, so that each worker's future may copy them.
    let (cluster, stop, acknowledged, failed, next) =
        (&cluster, &stop, &acknowledged, &failed, &next);
    let ok = move || acknowledged.lock().expect("lock").len();
    let worker = move || async move {
        // Each worker on its own keep-alive connections to the balancer.
        let client = reqwest::Client::new();
        while !stop.load(Ordering::Relaxed) {
            let n = next.fetch_add(1, Ordering::Relaxed);
            let (dossier, external_id) = (format!("load-{}", n % 50), format!("x{n}"));
            let answer = cluster
                .post(
                    &client,
                    &cluster.proxy.base,
                    &responses(&dossier),
                    &phq9_body(&external_id, "a1"),
                )
                .await;
            match answer {
                Some((201, _)) => acknowledged
                    .lock()
                    .expect("lock")
                    .push((dossier, external_id)),
                Some((500, body)) => panic!("a 500 under load: {body}"),
                _ => {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    };
    let control = async {
        wait_until(
            Duration::from_secs(60),
            "200 POSTs stored before the kill",
            move || async move { ok() >= 200 },
        )
        .await;
        hosts[0].kill();
        let at_kill = ok();
        wait_until(
            Duration::from_secs(60),
            "200 POSTs stored after the kill",
            move || async move { ok() >= at_kill + 200 },
        )
        .await;
        stop.store(true, Ordering::Relaxed);
        at_kill
    };
    let (_, at_kill) = tokio::join!(join_all((0..8).map(|_| worker())), control);
    let acknowledged = acknowledged.lock().expect("lock").clone();
    let stored: BTreeSet<String> = cluster
        .app
        .sql_strings("SELECT d.epd_id || '/' || r.external_id FROM responses r JOIN dossiers d ON d.id = r.dossier_id")
        .await
        .into_iter()
        .collect();
    let lost: Vec<String> = acknowledged
        .iter()
        .map(|(d, e)| format!("{d}/{e}"))
        .filter(|key| !stored.contains(key))
        .collect();
    assert!(
        lost.is_empty(),
        "acknowledged with 201 but not stored: {lost:?}"
    );
    // What was stored without an answer died with the host: at most the
    // requests in flight to it.
    assert!(
        stored.len() >= acknowledged.len(),
        "{} stored, {} acknowledged",
        stored.len(),
        acknowledged.len()
    );
    eprintln!(
        "{} acknowledged ({at_kill} before the kill), {} stored, {} without a 201",
        acknowledged.len(),
        stored.len(),
        failed.load(Ordering::Relaxed)
    );
}

/// The host with the test protocols in Europe/Amsterdam.
async fn spawn_amsterdam(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        with_test_definitions(config);
        config.time_zone = chrono_tz::Europe::Amsterdam;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_due_work_of_subscriptions_is_prepared_once_by_two_hosts() {
    let app = spawn_amsterdam(Db::Postgres).await;
    let other = app.another_host().await;
    let local = |text: &str| {
        resolve(
            chrono_tz::Europe::Amsterdam,
            NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M").expect("a local time"),
        )
    };
    let begin = local("2027-05-03 08:00");
    app.clock.advance(begin - app.state.now());
    let dossiers = 30;
    for n in 0..dossiers {
        // Half through each host.
        let host = if n % 2 == 0 { &app } else { &other };
        let answer = host
            .post(
                &format!("/api/v1/dossiers/s{n}/protocol_subscriptions"),
                &json!({"protocol_key": "phq9_diary"}),
            )
            .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
    }
    let before = app
        .sql("SELECT COUNT(*) FROM invitations")
        .await
        .unwrap_or(0);
    // Both schedulers at each moment of two days of a diary four times a day.
    let mut prepared = 0;
    for day in ["2027-05-03", "2027-05-04"] {
        for time in ["09:30", "13:30", "17:30", "21:30"] {
            let at = local(&format!("{day} {time}"));
            app.clock.advance(at - app.state.now());
            let (x, y) = tokio::join!(
                scheduler::tick(app.state.scheduler(), at),
                scheduler::tick(other.state.scheduler(), at)
            );
            let (x, y) = (x.expect("a tick"), y.expect("a tick"));
            prepared += x.invitations + y.invitations;
            assert_eq!(x.missed + y.missed, 0, "{x:?} {y:?}");
        }
    }
    let after = app
        .sql("SELECT COUNT(*) FROM invitations")
        .await
        .unwrap_or(0);
    assert_eq!(after - before, i64::try_from(prepared).expect("a count"));
    assert!(prepared >= dossiers * 7, "{prepared} occurrences prepared");
    // No occurrence twice: one response per dossier and opening time.
    assert_eq!(
        app.sql("SELECT COUNT(*) FROM (SELECT dossier_id, open_from FROM responses GROUP BY dossier_id, open_from HAVING COUNT(*) > 1) AS twice").await,
        Some(0)
    );
    // And every dossier has as many as every other.
    assert_eq!(
        app.sql("SELECT COUNT(DISTINCT n) FROM (SELECT COUNT(*) AS n FROM responses GROUP BY dossier_id) AS per_dossier").await,
        Some(1)
    );
}
