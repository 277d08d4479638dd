//! PostgreSQL restarted under load (docs/operations.md, "Several hosts on
//! one PostgreSQL"): while it is down every request is answered 503
//! `unavailable`, never 500; once it is back the same host serves again
//! within 5 seconds, without a restart of its own; and every response
//! acknowledged with 201 is stored.
//!
//! PostgreSQL only (SQLite has no server to restart), on a server of the
//! test's own ([`OwnPostgres`]): the shared one is never restarted.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use sqlx::{Connection, Executor, PgConnection};
use tests::own_postgres::OwnPostgres;
use tests::processes::wait_until;
use tests::{TestApp, json};

use crate::support::*;

/// One request of the load and how it ended.
#[derive(Debug, Clone)]
struct Event {
    sent: Instant,
    done: Instant,
    post: bool,
    status: u16,
    text: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_restart_is_answered_503_and_served_through_again() {
    let pg = Arc::new(OwnPostgres::start());
    let mut admin = PgConnection::connect(&pg.admin_url())
        .await
        .expect("the test's own PostgreSQL");
    admin
        .execute("CREATE DATABASE outcomes")
        .await
        .expect("create the database");
    let _ = admin.close().await;
    let app = TestApp::spawn_on_postgres(pg.url("outcomes"), |config| {
        // A request waits this long for the database before its 503.
        config.database_acquire_timeout = Duration::from_secs(1);
    })
    .await;

    let events = Mutex::new(Vec::<Event>::new());
    let acknowledged = Mutex::new(Vec::<String>::new());
    let stop = AtomicBool::new(false);
    let next = AtomicUsize::new(0);
    // References, so that each worker's future may copy them.
    let (app, events, acknowledged, stop, next) = (&app, &events, &acknowledged, &stop, &next);
    let worker = move || async move {
        while !stop.load(Ordering::Relaxed) {
            let n = next.fetch_add(1, Ordering::Relaxed);
            let dossier = format!("d{}", n % 20);
            let post = n % 2 == 0;
            let sent = Instant::now();
            let answer = if post {
                let body = json!({"questionnaire_key": "phq9", "external_id": format!("x{n}"),
                                  "answer_data": phq9_all_answered()});
                app.post(&responses(&dossier), &body).await
            } else {
                app.get(&responses(&dossier)).await
            };
            if answer.status == 201 {
                acknowledged
                    .lock()
                    .expect("lock")
                    .push(format!("{dossier}/x{n}"));
            }
            events.lock().expect("lock").push(Event {
                sent,
                done: Instant::now(),
                post,
                status: answer.status.as_u16(),
                text: answer.text,
            });
        }
    };
    let count = move |keep: &dyn Fn(&Event) -> bool| {
        events
            .lock()
            .expect("lock")
            .iter()
            .filter(|e| keep(e))
            .count()
    };
    let count = &count;
    let control = async {
        let ok = &|e: &Event| e.status == 200 || e.status == 201;
        wait_until(
            Duration::from_secs(60),
            "100 requests served before the restart",
            move || async move { count(ok) >= 100 },
        )
        .await;
        let stopping = pg.clone();
        tokio::task::spawn_blocking(move || stopping.stop())
            .await
            .expect("stopped");
        let down = Instant::now();
        wait_until(
            Duration::from_secs(60),
            "30 answers while PostgreSQL is down",
            move || async move { count(&|e: &Event| e.sent >= down) >= 30 },
        )
        .await;
        let health = app
            .send_as(reqwest::Method::GET, "/health", None, None)
            .await;
        assert_eq!(health.status, 503, "/health while down: {}", health.text);
        let restarting = Instant::now();
        let starting = pg.clone();
        tokio::task::spawn_blocking(move || starting.start_again())
            .await
            .expect("started");
        let up = Instant::now();
        // Within 5 s of PostgreSQL accepting connections again, a request
        // sent after that is stored.
        wait_until(
            Duration::from_secs(5),
            "a POST stored after PostgreSQL came back",
            move || async move { count(&|e: &Event| e.post && e.status == 201 && e.sent >= up) >= 1 },
        )
        .await;
        let recovered = events
            .lock()
            .expect("lock")
            .iter()
            .filter(|e| e.post && e.status == 201 && e.sent >= up)
            .map(|e| e.done)
            .min()
            .expect("a POST stored");
        wait_until(
            Duration::from_secs(60),
            "100 requests served after the restart",
            move || async move { count(&|e: &Event| ok(e) && e.sent >= recovered) >= 100 },
        )
        .await;
        stop.store(true, Ordering::Relaxed);
        (down, restarting, up, recovered)
    };
    let (_, (down, restarting, up, recovered)) =
        tokio::join!(join_all((0..6).map(|_| worker())), control);
    let events = events.lock().expect("lock").clone();

    // Never a 500, nor anything but success or 503 `unavailable`.
    for e in &events {
        match e.status {
            200 | 201 => {}
            503 => assert_eq!(e.text, r#"{"errors":{"base":["unavailable"]}}"#),
            other => panic!("{other} {}", e.text),
        }
    }
    // While it was down: 503 only.
    let while_down: Vec<&Event> = events
        .iter()
        .filter(|e| e.sent >= down && e.done <= restarting)
        .collect();
    assert!(
        while_down.len() >= 30,
        "{} requests while down",
        while_down.len()
    );
    assert!(while_down.iter().all(|e| e.status == 503), "{while_down:?}");
    assert!(while_down.iter().any(|e| e.post) && while_down.iter().any(|e| !e.post));
    // Once one request was served again, every later one was.
    let late_failures: Vec<&Event> = events
        .iter()
        .filter(|e| e.sent >= recovered && e.status == 503)
        .collect();
    assert!(late_failures.is_empty(), "{late_failures:?}");
    eprintln!(
        "down {:.1} s; first POST stored {:.0} ms after PostgreSQL accepted connections; {} requests, {} answered 503",
        (restarting - down).as_secs_f64(),
        (recovered - up).as_secs_f64() * 1000.0,
        events.len(),
        events.iter().filter(|e| e.status == 503).count()
    );

    // Every 201 is stored.
    let stored: BTreeSet<String> = app
        .sql_strings("SELECT d.epd_id || '/' || r.external_id FROM responses r JOIN dossiers d ON d.id = r.dossier_id")
        .await
        .into_iter()
        .collect();
    let acknowledged = acknowledged.lock().expect("lock").clone();
    let lost: Vec<&String> = acknowledged
        .iter()
        .filter(|k| !stored.contains(*k))
        .collect();
    assert!(lost.is_empty(), "acknowledged but not stored: {lost:?}");
}
