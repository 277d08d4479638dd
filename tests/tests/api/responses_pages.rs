//! The response list in pages (docs/api/responses.md#pages): `page[size]`
//! and `page[after]`, the `Link` header to the next page, the filters kept
//! across pages, and bad page parameters.

use host::store::Preparation;
use tests::{Answer, TestApp, db_test, json};

use crate::support::*;

/// The dossier every test here pages through.
const DOSSIER: &str = "diary-1";

/// Fills [`DOSSIER`] with 250 responses: 200 prepared and 50 completed by
/// POST, interleaved, with another dossier's responses between them (so its
/// ids are not consecutive). Answers the ids of the completed ones.
async fn two_hundred_fifty(app: &TestApp) -> Vec<i64> {
    let item = || Preparation {
        questionnaire_id: questionnaire_id(app, "phq9"),
        ..Preparation::default()
    };
    let mut completed = Vec::new();
    for round in 0..5 {
        prepare_items(app, DOSSIER, (0..40).map(|_| item()).collect()).await;
        prepare_items(app, "someone-else", (0..3).map(|_| item()).collect()).await;
        for n in 0..10 {
            let body = posted(app, DOSSIER, &format!("r{round}-{n}")).await;
            completed.push(id_of(&body));
        }
    }
    completed
}

/// The target of a `Link: <...>; rel="next"` header, if the answer has one.
fn next(answer: &Answer) -> Option<String> {
    let value = answer.headers.get("link")?.to_str().expect("ASCII");
    let (target, rel) = value.split_once(">; ")?;
    assert_eq!(rel, "rel=\"next\"", "{value}");
    Some(target.strip_prefix('<').expect("<target>").to_owned())
}

/// Follows the `Link` headers from `first` to the last page; the ids of
/// every page, page by page.
async fn walk(app: &TestApp, first: &str) -> Vec<Vec<i64>> {
    let mut pages = Vec::new();
    let mut path = Some(first.to_owned());
    while let Some(p) = path {
        let answer = app.get(&p).await;
        assert_eq!(answer.status, 200, "{p}: {}", answer.text);
        pages.push(ids(&answer.body));
        path = next(&answer);
        assert!(pages.len() <= 1000, "the pages never end");
    }
    pages
}

async fn whole(app: &TestApp, query: &str) -> Vec<i64> {
    let answer = app.get(&format!("{}?{query}", responses(DOSSIER))).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert!(
        answer.headers.get("link").is_none(),
        "a whole list has no Link"
    );
    ids(&answer.body)
}

db_test!(async fn every_page_of_a_long_dossier_adds_up_to_the_whole_list(app) {
    two_hundred_fifty(&app).await;
    let all = whole(&app, "").await;
    assert_eq!(all.len(), 250);
    let pages = walk(&app, &format!("{}?page[size]=7", responses(DOSSIER))).await;
    assert_eq!(pages.len(), 36, "250 = 35 pages of 7 and one of 5");
    assert!(pages[..35].iter().all(|p| p.len() == 7));
    assert_eq!(pages[35].len(), 5);
    assert_eq!(pages.concat(), all, "exactly the whole list, in order");
});

db_test!(async fn a_page_that_ends_the_list_has_no_link(app) {
    two_hundred_fifty(&app).await;
    let all = whole(&app, "").await;
    // Exactly as many as there are: one page, nothing follows.
    let exact = app.get(&format!("{}?page[size]=250", responses(DOSSIER))).await;
    assert_eq!(ids(&exact.body), all);
    assert_eq!(next(&exact), None);
    // Two halves: the first links to the second, the second to nothing.
    let pages = walk(&app, &format!("{}?page[size]=125", responses(DOSSIER))).await;
    assert_eq!(pages, [all[..125].to_vec(), all[125..].to_vec()]);
    // The largest page holds them all.
    let big = app.get(&format!("{}?page[size]=1000", responses(DOSSIER))).await;
    assert_eq!((ids(&big.body), next(&big)), (all.clone(), None));
    // A dossier without responses: an empty page without a Link.
    let empty = app.get(&format!("{}?page[size]=10", responses("nobody"))).await;
    assert_eq!((empty.status.as_u16(), empty.body.clone(), next(&empty)), (200, json!([]), None));
});

db_test!(async fn the_link_keeps_the_filters_and_the_spelling_of_the_path(app) {
    let completed = two_hundred_fifty(&app).await;
    assert_eq!(whole(&app, "status=completed").await, completed);
    // The filters stay in every link; only completed responses are paged.
    let first = format!(
        "/api/v1/dossier/{DOSSIER}/responses.json?status=completed&questionnaire_keys[]=phq9&page[size]=8"
    );
    let answer = app.get(&first).await;
    let link = next(&answer).expect("a link to page two");
    assert!(
        link.starts_with(&format!("/api/v1/dossier/{DOSSIER}/responses.json?status=completed&questionnaire_keys%5B%5D=phq9&page%5Bsize%5D=8&page%5Bafter%5D=")),
        "{link}"
    );
    let pages = walk(&app, &first).await;
    assert_eq!(pages.len(), 7, "50 = 6 pages of 8 and one of 2");
    assert_eq!(pages.concat(), completed);
    // Status open: the 200 prepared ones, none of the completed.
    let open = walk(&app, &format!("{}?status=open&page[size]=64", responses(DOSSIER))).await;
    assert_eq!(open.iter().map(Vec::len).collect::<Vec<_>>(), [64, 64, 64, 8]);
    assert_eq!(open.concat(), whole(&app, "status=open").await);
    // A filter that keeps nothing: an empty page without a Link.
    let none = app.get(&format!("{}?questionnaire_keys[]=gad7&page[size]=5", responses(DOSSIER))).await;
    assert_eq!((ids(&none.body), next(&none)), (Vec::new(), None));
});

db_test!(async fn a_cursor_alone_pages_by_a_hundred_and_skips_nothing_added_meanwhile(app) {
    two_hundred_fifty(&app).await;
    let all = whole(&app, "").await;
    let first = app.get(&format!("{}?page[size]=100", responses(DOSSIER))).await;
    assert_eq!(ids(&first.body), all[..100]);
    let link = next(&first).expect("page two");
    // Responses stored between two pages come at the end, and a deleted
    // one is simply not there: keyset pages neither repeat nor skip.
    let late = id_of(&posted(&app, DOSSIER, "late").await);
    assert_eq!(app.delete(&response(DOSSIER, "r4-9")).await.status, 204);
    let cursor = link.split("page%5Bafter%5D=").nth(1).expect("a cursor");
    let rest = walk(&app, &format!("{}?page[after]={cursor}", responses(DOSSIER))).await;
    assert_eq!(rest.iter().map(Vec::len).collect::<Vec<_>>(), [100, 50]);
    let mut expected: Vec<i64> = all[100..].iter().copied().filter(|&id| id != all[249]).collect();
    expected.push(late);
    assert_eq!(rest.concat(), expected);
    // Past the last response: an empty page.
    let end = app.get(&format!("{}?page[size]=5&page[after]={}", responses(DOSSIER), cursor_after(&rest))).await;
    assert_eq!((end.body.clone(), next(&end)), (json!([]), None));
});

/// The cursor after the last id of `pages`, taken from a real link.
fn cursor_after(pages: &[Vec<i64>]) -> String {
    use base64::Engine;
    let last = pages.concat().last().copied().expect("an id");
    // The cursor is opaque to clients; the test knows how it is made
    // (host/src/api/responses/page.rs) to point one past the end.
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(last.to_string())
}

db_test!(async fn bad_page_parameters_are_refused_by_name(app) {
    two_hundred_fifty(&app).await;
    let page_error = |field: &str| json!({"errors": {"page": {field: ["invalid"]}}});
    for size in ["0", "1001", "-1", "ten", "", "2.5", "99999999999999999999"] {
        let answer = app.get(&format!("{}?page[size]={size}", responses(DOSSIER))).await;
        assert_error(&answer, 422, page_error("size"));
    }
    for cursor in ["x", "!!!", "MA", "LTE", "YWJj", "MTIz%3D", "%00", "OTIyMzM3MjAzNjg1NDc3NTgwOA"] {
        let answer = app.get(&format!("{}?page[after]={cursor}", responses(DOSSIER))).await;
        assert_error(&answer, 422, page_error("after"));
    }
    // Every problem at once, the filters' too.
    let answer = app.get(&format!("{}?page[size]=0&page[after]=x&status=nope", responses(DOSSIER))).await;
    assert_error(
        &answer,
        422,
        json!({"errors": {"status": ["invalid"], "page": {"size": ["invalid"], "after": ["invalid"]}}}),
    );
    // A very long cursor is just as wrong, and no 500.
    let long = "A".repeat(10_000);
    let answer = app.get(&format!("{}?page[after]={long}", responses(DOSSIER))).await;
    assert_error(&answer, 422, page_error("after"));
});

db_test!(async fn the_pages_are_in_the_openapi_document(app) {
    let doc = app.get("/api/v1/openapi.json").await.body;
    let operation = &doc["paths"]["/api/v1/dossiers/{dossier_id}/responses"]["get"];
    let names: Vec<&str> = operation["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .filter(|p| p["in"] == "query")
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(names.contains(&"page[size]") && names.contains(&"page[after]"), "{names:?}");
    assert!(operation["responses"]["200"]["headers"]["Link"].is_object(), "{operation}");
});
