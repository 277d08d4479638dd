use tests::{db_test, json};

db_test!(async fn health_reports_the_database(app) {
    let answer = app.get("/health").await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body["database"], json!("ok"));
});
