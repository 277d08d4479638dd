//! The writer's batches of POSTed responses and access-log entries, run as
//! the loop runs them: stored together or one by one, they answer the same.

use chrono::{DateTime, Utc};
use sqlx::{AnyConnection, Connection, Executor};
use tokio::sync::oneshot;

use super::commit::{Batch, Op, Pending, run_batch};
use super::items::Results;
use super::{BoxFuture, Writer};
use crate::domain::answers::{Answers, GivenAnswers};
use crate::domain::ids::{DossierId, QuestionnaireId, RespondentId};
use crate::domain::outcome::{Outcome, Provenance};
use crate::domain::response::Completion;
use crate::domain::time::from_millis;
use crate::store::access_log::AccessEntry;
use crate::store::create::{CreateResult, DossierCache, DossierRespondents, NewResponse};
use crate::store::{Backend, StoreError};

/// A migrated SQLite database with one questionnaire; its URL.
async fn sqlite() -> (tempfile::TempDir, String) {
    let (dir, store, url) = crate::store::testing::sqlite_store().await;
    store.close().await;
    (dir, url)
}

fn now() -> DateTime<Utc> {
    from_millis(1_700_000_000_123)
}

/// Two text questions: the writer stores whatever it is given, so any text
/// will do as an answer (the shared test questionnaire has options only).
const TEXTS: &str = r#"
key = "texts"
name = "Texts"
short_description = "Two texts"
language = "en"
licence = "test"
scorer = "texts"

[[questions]]
key = "v_1"
type = "string"
title = "First"

[[questions]]
key = "v_2"
type = "string"
title = "Second"
"#;

/// `answer` to `v_1`, nothing to `v_2`.
fn answers(answer: &str) -> Answers {
    let q = crate::domain::questionnaire::parse(TEXTS, "texts").expect("valid");
    let data = serde_json::json!({ "v_1": answer });
    GivenAnswers::check(&q, data.as_object().expect("an object"))
        .expect("valid answers")
        .enabled(&q, &Default::default())
        .answers
}

fn item(epd_id: &str, external_id: &str, professional: bool, answer: &str) -> NewResponse {
    NewResponse {
        epd_id: epd_id.to_owned(),
        external_id: external_id.to_owned(),
        professional,
        entered_by: professional.then(|| "dr. x".to_owned()),
        completion: Completion {
            questionnaire_id: QuestionnaireId(7),
            answers: answers(answer),
            started_at: Some(from_millis(1_699_999_999_000)),
            completed_at: now(),
            variant: Default::default(),
            language: "en".to_owned(),
            translation_sha256: None,
            outcome: Outcome::empty(),
            provenance: Provenance::default(),
        },
        definition: std::sync::Arc::new(crate::domain::testing::questionnaire()),
        now: now(),
        access: None,
    }
}

/// `item`, POSTed by a request whose access-log row it carries.
fn logged_item(epd_id: &str, external_id: &str, answer: &str) -> NewResponse {
    NewResponse {
        access: Some(AccessEntry {
            status: 0,
            request_id: Some(external_id.to_owned()),
            ..access(epd_id)
        }),
        ..item(epd_id, external_id, false, answer)
    }
}

fn access(dossier: &str) -> AccessEntry {
    AccessEntry {
        at: now(),
        consumer_key: Some("k".into()),
        jwt_issuer: None,
        dossier: Some(dossier.into()),
        action: "POST /api/v1/dossiers/{dossier_id}/responses".into(),
        status: 201,
        client: "127.0.0.1".into(),
        request_id: None,
        ..AccessEntry::default()
    }
}

/// Runs one batch as the writer does; with `closure`, a write given as a
/// closure joins it, which takes the batch down the savepoint path.
async fn run(
    url: &str,
    cache: &mut DossierCache,
    items: Vec<NewResponse>,
    accesses: Vec<AccessEntry>,
    closure: bool,
) -> Results {
    let mut conn = AnyConnection::connect(url).await.expect("connects");
    conn.execute("PRAGMA foreign_keys = ON")
        .await
        .expect("pragma");
    let mut batch = Batch::default();
    for item in items {
        batch.creates.push(Pending {
            item: Box::new(item),
            reply: oneshot::channel().0,
        });
    }
    for item in accesses {
        batch.accesses.push(Pending {
            item: vec![item],
            reply: oneshot::channel().0,
        });
    }
    if closure {
        fn nothing(_: &mut AnyConnection) -> BoxFuture<'_, Result<(), StoreError>> {
            Box::pin(async { Ok(()) })
        }
        batch.writes.push(Box::new(Op {
            f: Some(nothing),
            result: None,
            reply: oneshot::channel().0,
        }));
    }
    let results = run_batch(
        &mut conn,
        &mut batch,
        Backend::Sqlite,
        cache,
        &crate::domain::alarm::AlarmPolicy::default(),
    )
    .await
    .expect("batch");
    conn.close().await.expect("closes");
    results
}

fn describe(result: &Result<CreateResult, StoreError>) -> String {
    match result {
        Ok(CreateResult::Created(r)) => {
            format!("created {}", r.external_id.as_deref().unwrap_or_default())
        }
        Ok(CreateResult::Retry(r)) => {
            format!("retry {}", r.external_id.as_deref().unwrap_or_default())
        }
        Ok(CreateResult::Taken) => "taken".to_owned(),
        Err(e) => format!("error {e}"),
    }
}

async fn count(url: &str, sql: &str) -> i64 {
    let mut conn = AnyConnection::connect(url).await.expect("connects");
    sqlx::query_scalar(sql)
        .fetch_one(&mut conn)
        .await
        .expect("counts")
}

/// Every path a batch takes (scripted, a savepoint, one by one) links its
/// access-log rows into one chain.
async fn assert_chained(url: &str, rows: u64) {
    let store = crate::store::Store::connect(url, &Default::default())
        .await
        .expect("connects");
    let verification = store.verify_access_log().await.expect("verifies");
    store.close().await;
    assert!(
        matches!(verification, crate::store::Verification::Intact { chained, .. } if chained == rows),
        "{verification:?}"
    );
}

#[tokio::test]
async fn batches_answer_as_a_read_back() {
    for closure in [false, true] {
        let (_dir, url) = sqlite().await;
        let mut cache = DossierCache::default();
        let items = vec![
            item("d1", "a", false, "x"),
            item("d2", "b", true, "y"),
            item("d1", "c", true, "x"),
        ];
        let results = run(
            &url,
            &mut cache,
            items,
            vec![access("d1"), access("d2")],
            closure,
        )
        .await;
        // Stored together: the dossiers are cached.
        assert!(cache.get("d1").is_some() && cache.get("d2").is_some());
        assert_eq!(results.accessed.len(), 2);
        assert!(results.accessed.iter().all(Result::is_ok));
        let mut conn = AnyConnection::connect(&url).await.expect("connects");
        for result in &results.created {
            let Ok(CreateResult::Created(made)) = result else {
                panic!("not created: {}", describe(result))
            };
            let mut read = crate::store::responses::fetch(&mut conn, made.id)
                .await
                .expect("reads back");
            // A read also names the respondent's link generation, which the
            // batch does not (a POSTed response gets no completing_url).
            assert_eq!(read.link_generation, Some(0));
            read.link_generation = None;
            assert_eq!(format!("{made:?}"), format!("{read:?}"));
        }
        assert_eq!(count(&url, "SELECT COUNT(*) FROM access_log").await, 2);
        // The ids given are AUTOINCREMENT's, which carries on after them.
        assert_eq!(
            count(
                &url,
                "SELECT seq FROM sqlite_sequence WHERE name = 'responses'"
            )
            .await,
            3
        );
    }
}

#[tokio::test]
async fn repeats_in_a_batch_answer_as_one_by_one() {
    for closure in [false, true] {
        let (_dir, url) = sqlite().await;
        let mut cache = DossierCache::default();
        run(
            &url,
            &mut cache,
            vec![item("d1", "a", false, "x")],
            Vec::new(),
            closure,
        )
        .await;
        // Repeats, in the database and within the batch: a retry with the
        // same answers, taken with others.
        let items = vec![
            item("d1", "a", false, "x"),
            item("d1", "a", false, "z"),
            item("d3", "e", false, "x"),
            item("d3", "e", false, "x"),
            item("d3", "f", false, "z"),
            item("d3", "f", false, "x"),
        ];
        let results = run(&url, &mut cache, items, vec![access("d3")], closure).await;
        let got: Vec<String> = results.created.iter().map(describe).collect();
        assert_eq!(
            got,
            [
                "retry a",
                "taken",
                "created e",
                "retry e",
                "created f",
                "taken"
            ]
        );
        assert_eq!(count(&url, "SELECT COUNT(*) FROM responses").await, 3);
        assert_eq!(count(&url, "SELECT COUNT(*) FROM access_log").await, 1);
    }
}

#[tokio::test]
async fn an_external_id_taken_before_the_batch_answers_as_one_by_one() {
    for closure in [false, true] {
        let (_dir, url) = sqlite().await;
        let mut cache = DossierCache::default();
        run(
            &url,
            &mut cache,
            vec![item("d1", "a", false, "x"), item("d1", "b", false, "x")],
            Vec::new(),
            closure,
        )
        .await;
        let items = vec![
            item("d2", "c", false, "x"),
            item("d1", "a", false, "x"),
            item("d1", "b", false, "y"),
        ];
        let results = run(&url, &mut cache, items, vec![access("d1")], closure).await;
        let got: Vec<String> = results.created.iter().map(describe).collect();
        assert_eq!(got, ["created c", "retry a", "taken"]);
        assert_eq!(count(&url, "SELECT COUNT(*) FROM responses").await, 3);
        assert_eq!(count(&url, "SELECT MAX(id) FROM responses").await, 3);
        assert_eq!(count(&url, "SELECT COUNT(*) FROM access_log").await, 1);
    }
}

#[tokio::test]
async fn a_stale_cache_falls_back_to_one_by_one() {
    for closure in [false, true] {
        let (_dir, url) = sqlite().await;
        let mut cache = DossierCache::default();
        // A dossier the database does not have.
        cache.insert(
            "d1".into(),
            DossierRespondents {
                dossier: DossierId(999),
                patient: RespondentId(999),
                professional: None,
            },
        );
        let results = run(
            &url,
            &mut cache,
            vec![item("d1", "a", false, "x"), item("d2", "b", false, "y")],
            vec![access("d1")],
            closure,
        )
        .await;
        let got: Vec<String> = results.created.iter().map(describe).collect();
        assert_eq!(got, ["created a", "created b"]);
        assert!(
            cache
                .get("d1")
                .is_none_or(|ids| ids.dossier != DossierId(999)),
            "the stale entry is gone"
        );
        // Then together again, with AUTOINCREMENT's ids carrying on.
        let more = run(
            &url,
            &mut cache,
            vec![item("d1", "c", false, "x"), item("d2", "d", false, "y")],
            Vec::new(),
            closure,
        )
        .await;
        let ids: Vec<i64> = results
            .created
            .iter()
            .chain(&more.created)
            .map(|r| match r {
                Ok(CreateResult::Created(made)) => made.id.0,
                other => panic!("not created: {}", describe(other)),
            })
            .collect();
        assert_eq!(ids, [1, 2, 3, 4]);
        assert_eq!(count(&url, "SELECT COUNT(*) FROM access_log").await, 1);
        assert_chained(&url, 1).await;
    }
}

#[tokio::test]
async fn a_post_stores_its_access_row_with_the_status_it_is_answered() {
    for closure in [false, true] {
        let (_dir, url) = sqlite().await;
        let mut cache = DossierCache::default();
        // Stored together (scripted, or in the batch's savepoint).
        run(
            &url,
            &mut cache,
            vec![logged_item("d1", "a", "x"), logged_item("d2", "b", "x")],
            vec![access("d1")],
            closure,
        )
        .await;
        // A retry, a taken id and a repeat in the batch: one by one.
        let results = run(
            &url,
            &mut cache,
            vec![
                logged_item("d1", "a", "x"),
                logged_item("d1", "b", "y"),
                logged_item("d2", "b", "z"),
                logged_item("d3", "c", "x"),
                logged_item("d3", "c", "y"),
            ],
            Vec::new(),
            closure,
        )
        .await;
        let got: Vec<String> = results.created.iter().map(describe).collect();
        assert_eq!(got, ["retry a", "created b", "taken", "created c", "taken"]);
        let mut conn = AnyConnection::connect(&url).await.expect("connects");
        let rows: Vec<(Option<String>, Option<String>, i64)> = sqlx::query_as(
            "SELECT dossier, request_id, status FROM access_log ORDER BY dossier, request_id, status",
        )
        .fetch_all(&mut conn)
        .await
        .expect("reads the log");
        let rows: Vec<(String, String, i64)> = rows
            .into_iter()
            .map(|(d, r, s)| (d.unwrap_or_default(), r.unwrap_or_default(), s))
            .collect();
        let expected: Vec<(String, String, i64)> = [
            ("d1", "", 201),
            ("d1", "a", 200),
            ("d1", "a", 201),
            ("d1", "b", 201),
            ("d2", "b", 201),
            ("d2", "b", 422),
            ("d3", "c", 201),
            ("d3", "c", 422),
        ]
        .into_iter()
        .map(|(d, r, s)| (d.to_owned(), r.to_owned(), s))
        .collect();
        assert_eq!(rows, expected, "closure: {closure}");
        assert_chained(&url, 8).await;
    }
}

#[tokio::test]
async fn a_write_that_finds_no_room_in_the_queue_in_time_is_answered_busy() {
    let (_dir, url) = sqlite().await;
    let deadline = std::time::Duration::from_millis(100);
    let writer = Writer::spawn_with_queue(Backend::Sqlite, 1, deadline, move || {
        let url = url.clone();
        Box::pin(async move { AnyConnection::connect(&url).await })
    });
    // The first write holds the writer inside its transaction until released.
    let (started, running) = oneshot::channel::<()>();
    let (release, released) = oneshot::channel::<()>();
    let held = tokio::spawn({
        let writer = writer.clone();
        async move {
            writer
                .write(move |_| {
                    Box::pin(async move {
                        let _ = started.send(());
                        let _ = released.await;
                        Ok(())
                    })
                })
                .await
        }
    });
    running.await.expect("the writer runs the first write");
    // The second waits in the queue and fills it.
    let queued = tokio::spawn({
        let writer = writer.clone();
        async move { writer.append_access(vec![access("d1")]).await }
    });
    while writer.jobs.capacity() > 0 {
        tokio::task::yield_now().await;
    }
    // The third finds no room before its deadline.
    let refused = writer.append_access(vec![access("d2")]).await;
    assert!(
        matches!(refused, Err(StoreError::Busy(d)) if d == deadline),
        "{refused:?}"
    );
    // Once the writer moves on, the waiting ones are stored.
    release.send(()).expect("the first write waits");
    held.await.expect("joins").expect("the first write commits");
    queued
        .await
        .expect("joins")
        .expect("the second write commits");
    writer
        .append_access(vec![access("d3")])
        .await
        .expect("room again");
}
