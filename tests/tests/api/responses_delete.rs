//! DELETE /api/v1/dossiers/:dossier_id/responses/:external_id: only
//! responses uploaded through the API, only by external id.

use tests::{db_test, json};

use crate::support::*;

db_test!(async fn deleting_a_posted_response_answers_204_without_a_body(app) {
    posted(&app, "d1", "ext-1").await;
    let answer = app.delete(&response("d1", "ext-1")).await;
    assert_eq!(answer.status, 204);
    assert_eq!(answer.text, "");
    assert!(answer.headers.get("content-type").is_none());
    assert_eq!(answer.headers["cache-control"], "no-store");
});

db_test!(async fn deleted_response_is_gone(app) {
    let kept = posted(&app, "d1", "ext-1").await;
    posted(&app, "d1", "ext-2").await;
    assert_eq!(app.delete(&response("d1", "ext-2")).await.status, 204);
    assert_eq!(app.get(&responses("d1")).await.body, json!([kept]));
    assert_error(&app.delete(&response("d1", "ext-2")).await, 404, error("external_id", "not_found"));
    let put = app.put(&response("d1", "ext-2"), &json!({"questionnaire_key": "phq9", "answer_data": {"v_1": "a0"}})).await;
    assert_error(&put, 404, error("external_id", "not_found"));
    // The external id is free again; the new response gets a new id.
    let again = posted(&app, "d1", "ext-2").await;
    assert!(id_of(&again) > id_of(&kept) + 1, "{again}");
});

db_test!(async fn prepared_response_cannot_be_deleted_by_its_numeric_id(app) {
    let id = prepare(&app, "d1", "phq9", None, None).await;
    assert_error(&app.delete(&response("d1", id)).await, 404, error("external_id", "not_found"));
    assert_eq!(ids(&app.get(&responses("d1")).await.body), [id]);
});

db_test!(async fn posted_response_cannot_be_deleted_by_its_numeric_id(app) {
    let posted = posted(&app, "d1", "ext-1").await;
    assert_error(&app.delete(&response("d1", id_of(&posted))).await, 404, error("external_id", "not_found"));
    assert_eq!(app.get(&responses("d1")).await.body, json!([posted]));
});

db_test!(async fn response_of_another_dossier_cannot_be_deleted(app) {
    let posted = posted(&app, "d1", "ext-1").await;
    assert_error(&app.delete(&response("d2", "ext-1")).await, 404, error("external_id", "not_found"));
    // The same external id in another dossier is another response.
    crate::support::posted(&app, "d3", "ext-1").await;
    assert_eq!(app.delete(&response("d3", "ext-1")).await.status, 204);
    assert_eq!(app.get(&responses("d1")).await.body, json!([posted]));
});

db_test!(async fn unknown_dossier_has_nothing_to_delete(app) {
    assert_error(&app.delete(&response("nobody", "ext-1")).await, 404, error("external_id", "not_found"));
    assert_eq!(app.get("/api/v1/dossiers/nobody/respondents").await.body, json!([]));
});
