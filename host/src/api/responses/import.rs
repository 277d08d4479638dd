//! Bulk import: NDJSON, one response a line in the shape of a POST body
//! plus `dossier_id` (docs/api/import.md). Each line goes the POST's way
//! (`create.rs`: checked, scored with the serving scorer, stored with its
//! access row through the store's one create path) and is answered with
//! its line number, dossier, external id, and the response's id or the
//! errors a POST would have been answered with.
//!
//! Lines are read as they arrive and at most [`IN_FLIGHT`] are being
//! stored at once, so memory does not grow with the file, while the
//! writer commits the lines in flight together. Idempotent as a POST is:
//! a line whose external id its dossier already holds, with the same
//! questionnaire and answers, is `existing` (its id answered, nothing
//! stored); with other data it is refused as `taken`. So an import that
//! stopped half-way (a crash, a lost connection) is run again whole.
//!
//! Used by `POST /api/v1/responses/import` (`api/import.rs`) and
//! `outcomes import` (`commands/import.rs`). Order of use: [`Lines`] (the
//! NDJSON reader) → one line's check and store → [`check_all`] and
//! [`import_all`], the two passes.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash as _, Hasher as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures_util::{Stream, StreamExt as _};
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::io::AsyncWriteExt as _;
use tokio::sync::mpsc;
use utoipa::ToSchema;

use super::create::{Scorer, check, score_and_store};
use crate::api::rules;
use crate::clock::Clock;
use crate::domain::catalog::Catalog;
use crate::error::{ApiError, Errors};
use crate::metrics::Metrics;
use crate::store::{AccessEntry, CreateResult, Store};
use crate::trials::Trials;

/// Lines being checked, scored and stored at once: enough to fill the
/// writer's batches, few enough that memory stays small.
pub const IN_FLIGHT: usize = 64;

/// The alias of `filled_out_at` on an import line: what other systems call
/// the time a response was completed.
const COMPLETED_AT: &str = "completed_at";
const FILLED_OUT_AT: &str = "filled_out_at";

/// What an import stores with, for every line alike: one catalog snapshot
/// for the whole import, the serving scorers, and the access-log row each
/// line's is made of.
pub struct Importer {
    pub store: Store,
    pub catalog: Arc<Catalog>,
    pub trials: Arc<Trials>,
    pub metrics: Arc<Metrics>,
    pub clock: Arc<dyn Clock>,
    /// Who imports, from where, as what action: each line's access-log
    /// row is this one with the line's dossier, time and status.
    pub access: AccessEntry,
    /// A JWT speaks for one patient: only lines of its `sub`'s dossier are
    /// stored, others are refused `sub_mismatch`.
    pub only_dossier: Option<String>,
    /// The longest line, in bytes (a POST body's limit).
    pub max_line: usize,
}

impl std::fmt::Debug for Importer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Importer")
            .field("access", &self.access)
            .field("only_dossier", &self.only_dossier)
            .field("max_line", &self.max_line)
            .finish_non_exhaustive()
    }
}

impl Importer {
    /// The access-log row of a line of `dossier`, at `now`.
    fn access_row(&self, dossier: &str, now: DateTime<Utc>) -> AccessEntry {
        AccessEntry {
            at: now,
            dossier: Some(dossier.to_owned()),
            ..self.access.clone()
        }
    }

    /// Records a refused line of a known dossier, as the guard records a
    /// refused POST: a row with the status it was answered with. The
    /// answer holds no dossier data, so a row that cannot be written is
    /// logged, not answered.
    async fn log_refusal(&self, mut row: AccessEntry, status: u16) {
        row.status = status;
        if let Err(e) = self.store.append_access(row).await {
            tracing::warn!(error = %e, "the access-log row of a refused import line was not written");
        }
    }
}

/// Why the body or file stopped before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadError {
    /// The request body did not arrive within `request_body_timeout`.
    Timeout,
    /// The connection or the file failed.
    Failed,
    /// A line's work failed inside the service (logged).
    Internal,
}

impl ReadError {
    /// The summary's `stopped` code.
    pub fn code(self) -> &'static str {
        match self {
            ReadError::Timeout => "request_timeout",
            ReadError::Failed => "read_failed",
            ReadError::Internal => "internal_error",
        }
    }
}

/// A line longer than the limit: answered `too_large`, not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLong;

/// A line as read: its number (from 1, blank lines counted) and its bytes.
pub type RawLine = (u64, Result<Vec<u8>, TooLong>);

/// NDJSON lines out of a stream of byte chunks (a request body, a file),
/// holding at most one chunk and one line. Blank lines are skipped (but
/// numbered); a line over the limit is skipped to its end and reported;
/// `\r\n` ends a line as `\n` does.
#[derive(Debug)]
pub struct Lines<S> {
    chunks: S,
    buf: Vec<u8>,
    /// Where the current line starts in `buf`.
    start: usize,
    /// How far `buf` was searched for a newline.
    scanned: usize,
    number: u64,
    max: usize,
    /// Inside a line over `max`: its bytes are dropped until its end.
    skipping: bool,
    ended: bool,
    /// Where every chunk read is also written (the strict check's copy of
    /// a request body, to import from once it checked).
    spool: Option<tokio::fs::File>,
    /// Bytes read so far, for progress.
    read: Arc<AtomicU64>,
}

impl<S: Stream<Item = Result<Bytes, ReadError>> + Unpin> Lines<S> {
    pub fn new(chunks: S, max: usize) -> Lines<S> {
        Lines {
            chunks,
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            number: 0,
            max,
            skipping: false,
            ended: false,
            spool: None,
            read: Arc::default(),
        }
    }

    /// Also writes every chunk read to `file`.
    pub fn spooling(mut self, file: tokio::fs::File) -> Lines<S> {
        self.spool = Some(file);
        self
    }

    /// The count of bytes read, as it grows.
    pub fn bytes_read(&self) -> Arc<AtomicU64> {
        self.read.clone()
    }

    /// Writes what the spool holds to disk, at the end: it is read back
    /// once the lines checked.
    async fn finish_spool(&mut self) -> Result<(), ReadError> {
        if let Some(mut spool) = self.spool.take() {
            spool.flush().await.map_err(|e| {
                tracing::error!(error = %e, "writing the import's spool file");
                ReadError::Failed
            })?;
        }
        Ok(())
    }

    /// The next line that is not blank; None at the end, and after an
    /// error.
    pub async fn next(&mut self) -> Option<Result<RawLine, ReadError>> {
        loop {
            if let Some(at) = self.buf[self.scanned..].iter().position(|b| *b == b'\n') {
                let end = self.scanned + at;
                let start = self.start;
                self.start = end + 1;
                self.scanned = self.start;
                if let Some(line) = self.take(start, end) {
                    return Some(Ok(line));
                }
                continue;
            }
            if self.buf.len() - self.start > self.max {
                // Too long already: the rest of it need not be kept.
                self.skipping = true;
                self.buf.clear();
                self.start = 0;
            }
            self.scanned = self.buf.len();
            if self.ended {
                if self.start == self.buf.len() && !self.skipping {
                    return self.finish_spool().await.err().map(Err);
                }
                // The last line, without a newline.
                let (start, end) = (self.start, self.buf.len());
                self.start = end;
                self.scanned = end;
                if let Some(line) = self.take(start, end) {
                    return Some(Ok(line));
                }
                continue;
            }
            match self.chunks.next().await {
                None => self.ended = true,
                Some(Err(e)) => {
                    self.ended = true;
                    self.buf.clear();
                    self.start = 0;
                    self.scanned = 0;
                    self.skipping = false;
                    return Some(Err(e));
                }
                Some(Ok(chunk)) => {
                    self.read.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                    if let Some(spool) = &mut self.spool
                        && let Err(e) = spool.write_all(&chunk).await
                    {
                        tracing::error!(error = %e, "writing the import's spool file");
                        self.ended = true;
                        self.buf.clear();
                        self.start = 0;
                        self.scanned = 0;
                        self.skipping = false;
                        return Some(Err(ReadError::Failed));
                    }
                    if self.start > 0 {
                        self.buf.drain(..self.start);
                        self.scanned -= self.start;
                        self.start = 0;
                    }
                    self.buf.extend_from_slice(&chunk);
                }
            }
        }
    }

    /// The line `buf[start..end]`, numbered; None when blank.
    fn take(&mut self, start: usize, end: usize) -> Option<RawLine> {
        self.number += 1;
        let skipped = std::mem::take(&mut self.skipping);
        let mut line = &self.buf[start..end];
        if let Some(trimmed) = line.strip_suffix(b"\r") {
            line = trimmed;
        }
        if skipped || line.len() > self.max {
            return Some((self.number, Err(TooLong)));
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        Some((self.number, Ok(line.to_vec())))
    }
}

/// What one line came to.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LineResult {
    /// The line's number in the file or body, from 1 (blank lines count).
    pub line: u64,
    /// The line's `dossier_id`, when it had one.
    pub dossier_id: Option<String>,
    /// The line's `external_id` as given (an integer in its decimal form),
    /// when it had one.
    pub external_id: Option<String>,
    /// The status a POST of the line would have been answered with: 201
    /// stored, 200 stored before (the same questionnaire and answers under
    /// this external id), else the error's.
    pub status: u16,
    /// `created`, `existing` or `refused`.
    #[schema(value_type = String)]
    pub result: &'static str,
    /// The response's id (created or existing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    /// What a POST would have answered (docs/api/errors.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub errors: Option<Value>,
    /// Answers to questions that are not enabled: not stored (as a POST's
    /// `dropped_answers`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dropped_answers: Vec<String>,
}

impl LineResult {
    fn new(line: u64) -> LineResult {
        LineResult {
            line,
            dossier_id: None,
            external_id: None,
            status: 0,
            result: "refused",
            id: None,
            errors: None,
            dropped_answers: Vec::new(),
        }
    }

    fn refused(mut self, error: &ApiError) -> LineResult {
        self.status = error.status().as_u16();
        self.result = "refused";
        self.id = None;
        self.errors = error.errors().body().get("errors").cloned();
        self
    }

    fn stored(mut self, result: &CreateResult) -> LineResult {
        match result {
            CreateResult::Created(r) => {
                self.result = "created";
                self.id = Some(r.id.0);
            }
            CreateResult::Retry(r) => {
                self.result = "existing";
                self.id = Some(r.id.0);
            }
            CreateResult::Taken => {
                return self.refused(&ApiError::Invalid(Errors::one("external_id", "taken")));
            }
        }
        self.status = result.status();
        self
    }

    /// Whether the import cannot go on after this line: the database is
    /// unavailable or failed (a re-run continues where it stopped).
    fn is_fatal(&self) -> bool {
        self.status >= 500
    }
}

/// What an import came to: the last line of the answer (`{"summary":
/// {...}}`) and of `outcomes import`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct Summary {
    /// Lines answered (blank lines are not).
    pub lines: u64,
    pub created: u64,
    pub existing: u64,
    pub refused: u64,
    /// Why the import stopped before the end: `strict` (a line was bad:
    /// nothing was written), `request_timeout`, `read_failed`,
    /// `unavailable`, `internal_error`. Absent when every line was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

impl Summary {
    fn count(&mut self, line: &LineResult) {
        self.lines += 1;
        match line.result {
            "created" => self.created += 1,
            "existing" => self.existing += 1,
            _ => self.refused += 1,
        }
    }
}

/// One line of what an import answers.
#[derive(Debug, Clone)]
pub enum Report {
    Line(LineResult),
    Summary(Summary),
}

impl Report {
    /// The report as one NDJSON line, newline included.
    pub fn ndjson(&self) -> Vec<u8> {
        let value = match self {
            Report::Line(line) => serde_json::to_value(line),
            Report::Summary(summary) => {
                serde_json::to_value(summary).map(|s| serde_json::json!({ "summary": s }))
            }
        };
        let mut bytes = value
            .and_then(|v| serde_json::to_vec(&v))
            .unwrap_or_else(|_| b"{}".to_vec());
        bytes.push(b'\n');
        bytes
    }
}

/// A line read as a JSON object; `filled_out_at` under its alias
/// `completed_at` (the flag says so, to name it in errors as given).
fn object_of(raw: Result<Vec<u8>, TooLong>) -> Result<(Map<String, Value>, bool), ApiError> {
    let bytes = raw.map_err(|TooLong| ApiError::TooLarge)?;
    let Ok(Value::Object(mut map)) = serde_json::from_slice::<Value>(&bytes) else {
        return Err(ApiError::MalformedJson);
    };
    let aliased = !map.contains_key(FILLED_OUT_AT) && map.contains_key(COMPLETED_AT);
    if aliased && let Some(value) = map.remove(COMPLETED_AT) {
        map.insert(FILLED_OUT_AT.to_owned(), value);
    }
    Ok((map, aliased))
}

/// An id as the line gave it, for the answer: a string (at most 255
/// characters shown) or an integer.
fn shown(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(s.chars().take(255).collect()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

/// The line's dossier ([`rules::DOSSIER_ID`]; an integer is read in its
/// decimal form, as external ids are): `blank` when missing, `invalid`
/// otherwise.
fn dossier_of(map: &Map<String, Value>) -> Result<String, &'static str> {
    let text = match map.get("dossier_id") {
        None | Some(Value::Null) => return Err("blank"),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
        Some(_) => return Err("invalid"),
    };
    rules::DOSSIER_ID
        .check(&text)
        .map(|()| text)
        .map_err(|refused| refused.code())
}

/// `error` with the `dossier_id` error added: a shape error like the
/// body's, answered with them (before a 404).
fn with_dossier_error(error: Result<(), ApiError>, code: &str) -> ApiError {
    match error {
        Err(ApiError::Invalid(mut errors)) => {
            errors.add("dossier_id", code);
            ApiError::Invalid(errors)
        }
        _ => ApiError::Invalid(Errors::one("dossier_id", code)),
    }
}

/// The errors named as the line named its fields: `completed_at` when it
/// gave the time under that name.
fn renamed(mut result: LineResult, aliased: bool) -> LineResult {
    if aliased
        && let Some(Value::Object(errors)) = &mut result.errors
        && let Some(codes) = errors.remove(FILLED_OUT_AT)
    {
        errors.insert(COMPLETED_AT.to_owned(), codes);
    }
    result
}

/// A line checked as a POST would check it, scored and stored.
async fn store_line(imp: &Importer, number: u64, raw: Result<Vec<u8>, TooLong>) -> LineResult {
    let result = LineResult::new(number);
    let (map, aliased) = match object_of(raw) {
        Ok(read) => read,
        Err(e) => return result.refused(&e),
    };
    let result = LineResult {
        external_id: shown(map.get("external_id")),
        dossier_id: shown(map.get("dossier_id")),
        ..result
    };
    let now = imp.clock.now();
    let dossier = match dossier_of(&map) {
        Ok(dossier) => dossier,
        Err(code) => {
            let body = check(&imp.catalog, String::new(), &map, now, false, None).map(|_| ());
            let refused = result.refused(&with_dossier_error(body, code));
            return renamed(refused, aliased);
        }
    };
    let row = imp.access_row(&dossier, now);
    if imp
        .only_dossier
        .as_ref()
        .is_some_and(|only| *only != dossier)
    {
        let e = ApiError::Forbidden("sub_mismatch");
        imp.log_refusal(row, e.status().as_u16()).await;
        return result.refused(&e);
    }
    let checked = match check(&imp.catalog, dossier, &map, now, false, Some(row.clone())) {
        Ok(checked) => checked,
        Err(e) => {
            imp.log_refusal(row, e.status().as_u16()).await;
            return renamed(result.refused(&e), aliased);
        }
    };
    let dropped = checked.dropped;
    let scorer = Scorer {
        trials: &imp.trials,
        metrics: &imp.metrics,
    };
    match score_and_store(&imp.store, scorer, checked.new).await {
        Ok(stored) => LineResult {
            dropped_answers: dropped,
            ..result.stored(&stored)
        },
        Err(e) => {
            let e = ApiError::from(e);
            if let ApiError::Internal(cause) = &e {
                tracing::error!(
                    line = number,
                    error = format!("{cause:#}"),
                    "an import line failed"
                );
            }
            result.refused(&e)
        }
    }
}

/// The keys of the strict check's memory of the lines before: a hash of
/// dossier and external id, and one of the data stored under them.
type Seen = HashMap<u64, u64>;

fn hash_of(parts: &[&[u8]]) -> u64 {
    let mut h = DefaultHasher::new();
    for part in parts {
        part.hash(&mut h);
    }
    h.finish()
}

/// A line checked as [`store_line`] would store it, writing nothing: its
/// refusal, if any, and the hashes of its external id and of its data, to
/// find a later line that takes the id for other data.
async fn check_line(
    imp: &Importer,
    number: u64,
    raw: Result<Vec<u8>, TooLong>,
) -> (LineResult, Option<(u64, u64)>) {
    let result = LineResult::new(number);
    let (map, aliased) = match object_of(raw) {
        Ok(read) => read,
        Err(e) => return (result.refused(&e), None),
    };
    let result = LineResult {
        external_id: shown(map.get("external_id")),
        dossier_id: shown(map.get("dossier_id")),
        ..result
    };
    let now = imp.clock.now();
    let dossier = match dossier_of(&map) {
        Ok(dossier) => dossier,
        Err(code) => {
            let body = check(&imp.catalog, String::new(), &map, now, false, None).map(|_| ());
            let refused = result.refused(&with_dossier_error(body, code));
            return (renamed(refused, aliased), None);
        }
    };
    if imp
        .only_dossier
        .as_ref()
        .is_some_and(|only| *only != dossier)
    {
        return (result.refused(&ApiError::Forbidden("sub_mismatch")), None);
    }
    let checked = match check(&imp.catalog, dossier.clone(), &map, now, false, None) {
        Ok(checked) => checked,
        Err(e) => return (renamed(result.refused(&e), aliased), None),
    };
    let new = checked.new;
    match imp
        .store
        .response_by_external_id(&dossier, &new.external_id)
        .await
    {
        Ok(Some(stored)) if !CreateResult::is_retry(&stored, &new.completion) => {
            return (result.stored(&CreateResult::Taken), None);
        }
        Ok(_) => {}
        Err(e) => return (result.refused(&ApiError::from(e)), None),
    }
    let key = hash_of(&[dossier.as_bytes(), new.external_id.as_bytes()]);
    let answers = Value::Object(new.completion.answers.to_json()).to_string();
    let data = hash_of(&[
        &new.completion.questionnaire_id.0.to_be_bytes(),
        answers.as_bytes(),
    ]);
    (
        LineResult {
            status: CreateResult::CREATED,
            result: "created",
            ..result
        },
        Some((key, data)),
    )
}

/// The lines of `lines`, each handed to `step` as a task of its own (so
/// that lines are checked and scored on every core while the writer
/// stores), at most [`IN_FLIGHT`] at once, answered in order.
fn in_order<S, F, Fut, T>(lines: Lines<S>, step: F) -> impl Stream<Item = Result<T, ReadError>>
where
    S: Stream<Item = Result<Bytes, ReadError>> + Unpin,
    F: Fn(RawLine) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    futures_util::stream::unfold(lines, |mut lines| async move {
        lines.next().await.map(|item| (item, lines))
    })
    .map(move |item| {
        let task = item.map(|line| tokio::spawn(step(line)));
        async move {
            match task {
                Ok(task) => task.await.map_err(|e| {
                    tracing::error!(error = %e, "an import line's task failed");
                    ReadError::Internal
                }),
                Err(e) => Err(e),
            }
        }
    })
    .buffered(IN_FLIGHT)
}

/// Checks every line as the import would, writing nothing: each refused
/// line is sent to `out` (the strict mode's first pass). A line that
/// would take an external id stored before, or given on an earlier line,
/// for other data is refused `taken`; to know the earlier lines it keeps
/// 16 bytes per line.
pub async fn check_all<S>(
    imp: &Arc<Importer>,
    lines: Lines<S>,
    out: &mpsc::Sender<Report>,
) -> Summary
where
    S: Stream<Item = Result<Bytes, ReadError>> + Unpin,
{
    let mut summary = Summary::default();
    let mut seen = Seen::new();
    let checked = in_order(lines, |(number, raw)| {
        let imp = imp.clone();
        async move { check_line(&imp, number, raw).await }
    });
    let mut checked = std::pin::pin!(checked);
    while let Some(item) = checked.next().await {
        let (mut line, hashes) = match item {
            Ok(checked) => checked,
            Err(e) => {
                summary.stopped = Some(e.code().to_owned());
                break;
            }
        };
        if let Some((key, data)) = hashes
            && *seen.entry(key).or_insert(data) != data
        {
            line = line.stored(&CreateResult::Taken);
        }
        let fatal = line.is_fatal().then(|| line.errors.clone()).flatten();
        summary.count(&line);
        if line.result == "refused" && out.send(Report::Line(line)).await.is_err() {
            summary.stopped = Some("cancelled".to_owned());
            break;
        }
        if let Some(errors) = fatal {
            summary.stopped = Some(base_code(&errors));
            break;
        }
    }
    // Nothing was stored: what would have been.
    summary.created = 0;
    summary.existing = 0;
    summary
}

/// Stores every line, sending each one's result to `out` in line order,
/// until the end, a read error, or a line the database could not store
/// (unavailable, failed); returns the tally. A receiver that has gone (the
/// client disconnected) stops it after the lines in flight.
pub async fn import_all<S>(
    imp: &Arc<Importer>,
    lines: Lines<S>,
    out: &mpsc::Sender<Report>,
) -> Summary
where
    S: Stream<Item = Result<Bytes, ReadError>> + Unpin,
{
    let mut summary = Summary::default();
    let stored = in_order(lines, |(number, raw)| {
        let imp = imp.clone();
        async move { store_line(&imp, number, raw).await }
    });
    let mut stored = std::pin::pin!(stored);
    while let Some(item) = stored.next().await {
        let line = match item {
            Ok(line) => line,
            Err(e) => {
                summary.stopped = Some(e.code().to_owned());
                break;
            }
        };
        let fatal = line.is_fatal().then(|| line.errors.clone()).flatten();
        summary.count(&line);
        if out.send(Report::Line(line)).await.is_err() {
            summary.stopped = Some("cancelled".to_owned());
            break;
        }
        if let Some(errors) = fatal {
            summary.stopped = Some(base_code(&errors));
            break;
        }
    }
    summary
}

/// The first `base` code of an errors object (`unavailable`,
/// `internal_error`).
fn base_code(errors: &Value) -> String {
    errors["base"][0]
        .as_str()
        .unwrap_or("internal_error")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line `Lines` reads from `chunks`, and the error it stopped on.
    async fn read(
        chunks: Vec<Result<&'static [u8], ReadError>>,
        max: usize,
    ) -> Vec<Result<RawLine, ReadError>> {
        let stream = futures_util::stream::iter(
            chunks
                .into_iter()
                .map(|c| c.map(Bytes::from_static))
                .collect::<Vec<_>>(),
        );
        let mut lines = Lines::new(stream, max);
        let mut out = Vec::new();
        while let Some(line) = lines.next().await {
            out.push(line);
        }
        out
    }

    fn ok(number: u64, text: &str) -> Result<RawLine, ReadError> {
        Ok((number, Ok(text.as_bytes().to_vec())))
    }

    #[tokio::test]
    async fn lines_are_read_across_chunks_and_numbered_with_blank_ones() {
        let got = read(
            vec![
                Ok(b"{\"a\":"),
                Ok(b"1}\r\n\n  \n{\"b\""),
                Ok(b":2}\n{\"c\":3}"),
            ],
            100,
        )
        .await;
        assert_eq!(
            got,
            [ok(1, "{\"a\":1}"), ok(4, "{\"b\":2}"), ok(5, "{\"c\":3}")]
        );
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_reported_and_skipped_to_its_end() {
        let got = read(
            vec![
                Ok(b"short\n0123456789"),
                Ok(b"0123456789"),
                Ok(b"01\nnext\n0123456789012"),
            ],
            10,
        )
        .await;
        assert_eq!(
            got,
            [
                ok(1, "short"),
                Ok((2, Err(TooLong))),
                ok(3, "next"),
                Ok((4, Err(TooLong)))
            ]
        );
    }

    #[tokio::test]
    async fn a_read_error_ends_the_lines() {
        let got = read(
            vec![Ok(b"one\ntw"), Err(ReadError::Timeout), Ok(b"o\n")],
            10,
        )
        .await;
        assert_eq!(got, [ok(1, "one"), Err(ReadError::Timeout)]);
    }

    #[test]
    fn a_summary_is_one_line_under_its_name() {
        let summary = Summary {
            lines: 3,
            created: 1,
            existing: 1,
            refused: 1,
            stopped: None,
        };
        assert_eq!(
            Report::Summary(summary).ndjson(),
            b"{\"summary\":{\"lines\":3,\"created\":1,\"existing\":1,\"refused\":1}}\n"
        );
    }
}
