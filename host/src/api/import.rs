//! `POST /api/v1/responses/import`: many responses in one streamed NDJSON
//! body, under the right `import` (docs/api/import.md). The lines are read,
//! stored and answered as they arrive (`responses/import.rs`), one NDJSON
//! answer line per line and a summary last, so neither the body nor the
//! answer is held whole. With `?strict=true` the body is first copied to a
//! private temporary file while every line is checked, and imported from
//! there only if none is bad.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Extension;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use futures_util::{Stream, StreamExt as _};
use tokio::sync::mpsc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::QueryParams;
use super::responses::import::{
    Importer, LineResult, Lines, ReadError, Report, Summary, check_all, import_all,
};
use super::rules;
use crate::AppState;
use crate::auth::guard::{AccessLogged, Caller, PendingAccess};
use crate::error::{ApiError, ErrorBody};

/// The media type of the body and of the answer.
pub const NDJSON: &str = "application/x-ndjson";

/// Answer lines waiting for a slow client before the import waits too.
const ANSWER_QUEUE: usize = 256;

/// The routes of this resource (endpoint group `import`).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(import_responses))
}

/// Import responses
///
/// Stores many completed responses, one a line of an NDJSON body
/// (`Content-Type: application/x-ndjson`): each line a POST body of
/// `/dossiers/{dossier_id}/responses` plus `dossier_id` (string or
/// integer), with `completed_at` accepted as another name of
/// `filled_out_at`. Each line is checked, scored and stored exactly as that
/// POST would be, with its access-log row. The answer is NDJSON too,
/// streamed while the body is read: one line per line of the body, in
/// order (`line`, `dossier_id`, `external_id`, `status` as the POST would
/// have answered, `result` `created`, `existing` or `refused`, `id` or
/// `errors`), then `{"summary": {...}}`. A line whose external id its
/// dossier already holds with the same questionnaire and answers is
/// `existing` (status 200): an import that stopped is run again whole, and
/// stores each response once. A bad line does not stop the others; with
/// `strict=true` every line is checked first and nothing is stored if any
/// is bad (then only the bad lines are answered). Each line at most
/// `body_limit` bytes (else `too_large`); the whole body must arrive within
/// `request_body_timeout`, so split a large history into several requests
/// or use `outcomes import` (docs/api/import.md#limits). A JWT imports
/// only into the dossier of its `sub`.
#[utoipa::path(
    post,
    path = "/responses/import",
    tag = "responses",
    params(
        ("strict" = Option<rules::Boolean>, Query, description = "true: check every line first and store nothing if any is bad; default false. (Answers to questions that are not enabled are dropped and named either way.)"),
    ),
    request_body(content = String, content_type = "application/x-ndjson", description = "One response a line: a POST body of /dossiers/{dossier_id}/responses plus `dossier_id`"),
    responses(
        (status = 200, description = "NDJSON, one line per line of the body, then `{\"summary\": {\"lines\", \"created\", \"existing\", \"refused\", \"stopped\"}}`; `stopped` (absent when every line was read): `strict`, `request_timeout`, `read_failed`, `unavailable`, `internal_error`", content_type = "application/x-ndjson", body = LineResult),
        (status = 403, description = "`{\"errors\":{\"base\":[\"sub_missing\"]}}`: a JWT without `sub`", body = ErrorBody),
        (status = 415, description = "`{\"errors\":{\"base\":[\"unsupported_media_type\"]}}`: the body is not declared `application/x-ndjson`", body = ErrorBody),
        (status = 422, description = "`{\"errors\":{\"strict\":[\"invalid\"]}}`", body = ErrorBody),
    )
)]
pub async fn import_responses(
    State(app): State<AppState>,
    Extension(caller): Extension<Caller>,
    access: Option<Extension<PendingAccess>>,
    query: QueryParams,
    request: Request,
) -> Result<Response, ApiError> {
    check_content_type(request.headers())?;
    let strict = query.boolean("strict", false)?;
    // A JWT speaks for one patient: the dossier of its `sub`.
    let only_dossier = match &caller.jwt {
        Some(jwt) => Some(jwt.sub.clone().ok_or(ApiError::Forbidden("sub_missing"))?),
        None => None,
    };
    let access = access
        .map(|Extension(PendingAccess(entry))| entry)
        .unwrap_or_default();
    let spool = if strict {
        Some(spool_file(&app)?)
    } else {
        None
    };
    let importer = Arc::new(Importer {
        store: app.store().clone(),
        catalog: app.catalog(),
        trials: app.trials().clone(),
        metrics: app.metrics().clone(),
        clock: app.clock(),
        access,
        only_dossier,
        max_line: app.config().body_limit,
    });
    let chunks = request
        .into_body()
        .into_data_stream()
        .map(|chunk| chunk.map_err(read_error));
    let (out, answers) = mpsc::channel(ANSWER_QUEUE);
    tokio::spawn(async move {
        let summary = match spool {
            None => import_all(&importer, Lines::new(chunks, importer.max_line), &out).await,
            Some((writing, reading)) => {
                let lines = Lines::new(chunks, importer.max_line).spooling(writing);
                strictly(&importer, lines, reading, &out).await
            }
        };
        let _ = out.send(Report::Summary(summary)).await;
    });
    let body = futures_util::stream::unfold(answers, |mut answers| async move {
        let report = answers.recv().await?;
        Some((Ok::<_, Infallible>(Bytes::from(report.ndjson())), answers))
    });
    let mut response = Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, NDJSON)
        .header(header::CACHE_CONTROL, "no-store")
        .body(Body::from_stream(body))
        .map_err(|e| ApiError::Internal(e.into()))?;
    // Each line's access row is stored with it (or, refused, after it):
    // the request itself touched no dossier of its own.
    response.extensions_mut().insert(AccessLogged);
    Ok(response)
}

/// The strict import: every line checked while the body is copied to
/// `reading`'s file, then, if none was bad, imported from that copy.
async fn strictly<S>(
    importer: &Arc<Importer>,
    lines: Lines<S>,
    reading: tokio::fs::File,
    out: &mpsc::Sender<Report>,
) -> Summary
where
    S: Stream<Item = Result<Bytes, ReadError>> + Unpin,
{
    let checked = check_all(importer, lines, out).await;
    if checked.refused > 0 || checked.stopped.is_some() {
        return Summary {
            stopped: checked.stopped.or_else(|| Some("strict".to_owned())),
            ..checked
        };
    }
    let mut reading = reading;
    if let Err(e) = tokio::io::AsyncSeekExt::rewind(&mut reading).await {
        tracing::error!(error = %e, "reading the import's spool file");
        return Summary {
            stopped: Some(ReadError::Failed.code().to_owned()),
            ..Summary::default()
        };
    }
    let lines = Lines::new(file_chunks(reading), importer.max_line);
    import_all(importer, lines, out).await
}

/// A private temporary file in the data folder, removed at once so that
/// it goes when closed, whatever happens: a handle to write the body to,
/// and one to read it back.
fn spool_file(app: &AppState) -> Result<(tokio::fs::File, tokio::fs::File), ApiError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let failed = |e: std::io::Error| {
        ApiError::Internal(anyhow::anyhow!("making the import's spool file: {e}"))
    };
    let name = format!("import-{:016x}.ndjson", rand::random::<u64>());
    let path = app.config().data_dir.join(name);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(failed)?;
    std::fs::remove_file(&path).map_err(failed)?;
    let reading = file.try_clone().map_err(failed)?;
    Ok((
        tokio::fs::File::from_std(file),
        tokio::fs::File::from_std(reading),
    ))
}

/// A file's bytes as chunks of 64 KiB.
pub fn file_chunks(
    file: tokio::fs::File,
) -> impl Stream<Item = Result<Bytes, ReadError>> + Unpin + Send {
    Box::pin(futures_util::stream::unfold(
        Some(file),
        |file| async move {
            let mut file = file?;
            let mut chunk = vec![0; 64 * 1024];
            match tokio::io::AsyncReadExt::read(&mut file, &mut chunk).await {
                Ok(0) => None,
                Ok(n) => {
                    chunk.truncate(n);
                    Some((Ok(Bytes::from(chunk)), Some(file)))
                }
                Err(e) => {
                    tracing::error!(error = %e, "reading an import file");
                    Some((Err(ReadError::Failed), None))
                }
            }
        },
    ))
}

/// Why the body stopped: its deadline passed, or the connection failed.
fn read_error(e: axum::Error) -> ReadError {
    if crate::server::is_body_timeout(&*e.into_inner()) {
        ReadError::Timeout
    } else {
        ReadError::Failed
    }
}

/// `application/x-ndjson`, with or without parameters; anything else, and
/// none, 415 (docs/api/import.md).
fn check_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let essence = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase());
    match essence.as_deref() {
        Some(NDJSON) => Ok(()),
        _ => Err(ApiError::UnsupportedMediaType),
    }
}
