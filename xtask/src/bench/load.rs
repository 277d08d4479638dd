//! The load generator: a lean HTTP/1.1 client on hyper's connection API,
//! one task per keep-alive connection, loopback only.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::cpu::{CpuSample, CpuUse};

pub(super) type Sender = SendRequest<Full<Bytes>>;

/// Where requests go, and the `Authorization` header they carry (none when
/// empty).
#[derive(Debug, Clone)]
pub struct Target {
    pub addr: SocketAddr,
    pub authorization: String,
}

impl Target {
    fn request(
        &self,
        method: Method,
        path: &str,
        json: Option<Bytes>,
    ) -> anyhow::Result<Request<Full<Bytes>>> {
        let mut builder = Request::builder()
            .method(method)
            .uri(path)
            .header(HOST, self.addr.to_string());
        if !self.authorization.is_empty() {
            builder = builder.header(AUTHORIZATION, self.authorization.as_str());
        }
        Ok(match json {
            Some(body) => builder
                .header(CONTENT_TYPE, "application/json")
                .body(Full::new(body))?,
            None => builder.body(Full::new(Bytes::new()))?,
        })
    }
}

/// Latencies are kept in microseconds, up to a minute.
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid histogram bounds")
}

pub(super) fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

pub(super) async fn connect(addr: SocketAddr) -> anyhow::Result<Sender> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

/// Sends one request and reads the whole answer.
async fn send(sender: &mut Sender, request: Request<Full<Bytes>>) -> anyhow::Result<(u16, Bytes)> {
    sender.ready().await?;
    let response = sender.send_request(request).await?;
    let status = response.status().as_u16();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, body))
}

/// Sends one request with `extra` headers (and the target's
/// `Authorization`) and reads the whole answer, headers included.
pub(super) async fn send_with(
    sender: &mut Sender,
    target: &Target,
    method: Method,
    path: &str,
    extra: hyper::HeaderMap,
    body: Option<Bytes>,
) -> anyhow::Result<(u16, hyper::HeaderMap, Bytes)> {
    let mut request = target.request(method, path, None)?;
    request.headers_mut().extend(extra);
    if let Some(body) = body {
        *request.body_mut() = Full::new(body);
    }
    sender.ready().await?;
    let response = sender.send_request(request).await?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, headers, body))
}

/// One GET on a new connection (while the server starts).
pub async fn get_once(target: &Target, path: &str) -> anyhow::Result<(u16, Bytes)> {
    let mut sender = tokio::time::timeout(Duration::from_secs(2), connect(target.addr)).await??;
    tokio::time::timeout(
        Duration::from_secs(5),
        send(&mut sender, target.request(Method::GET, path, None)?),
    )
    .await?
}

/// One POST of a JSON body on a new connection.
pub async fn post_once(target: &Target, path: &str, body: String) -> anyhow::Result<(u16, Bytes)> {
    let mut sender = connect(target.addr).await?;
    send(
        &mut sender,
        target.request(Method::POST, path, Some(Bytes::from(body)))?,
    )
    .await
}

/// What a load came to, over the measured window.
#[derive(Debug)]
pub struct LoadReport {
    /// What the requests were, for the report line (`POST`, `GET Basic`).
    pub label: String,
    /// The answer status that counts as success.
    pub expect: u16,
    /// Successes completed in the window.
    pub ok: u64,
    /// Successes in all, warm-up and stragglers after the window included.
    pub ok_total: u64,
    /// Other answers by status, and transport errors, in the window.
    pub errors: BTreeMap<String, u64>,
    /// One error answer, to show what went wrong.
    pub error_sample: Option<String>,
    /// Latency of the successes, in microseconds.
    pub histogram: Histogram<u64>,
    pub window: Duration,
    pub cpu: Option<CpuUse>,
    /// How requests were paced, which says what the percentiles mean.
    pub pace: Pace,
}

/// How a load sends its requests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// Each connection sends its next request when the previous answer
    /// arrives. A slow answer delays the requests behind it, which are then
    /// never timed as waiting (coordinated omission): the percentiles
    /// understate what clients arriving on their own would see.
    Closed,
    /// Requests are due at this many per second in all, each connection
    /// taking every `clients`-th due time; latency is measured from the due
    /// time, not from when the request could be sent, so time spent queued
    /// behind a slow answer counts (as wrk2 does).
    Open(f64),
}

impl Pace {
    /// The words that go next to the percentiles.
    pub fn label(self) -> String {
        match self {
            Pace::Closed => {
                "closed-loop: coordinated omission, the percentiles understate queueing".to_owned()
            }
            Pace::Open(rate) => {
                format!("open-loop at {rate:.0}/s: latency from the intended send time")
            }
        }
    }
}

impl LoadReport {
    pub fn throughput(&self) -> f64 {
        self.ok as f64 / self.window.as_secs_f64()
    }

    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Server CPU time per successful request, in microseconds, when the
    /// server's CPU use was measured.
    pub fn server_cpu_micros(&self) -> Option<f64> {
        let cpu = self.cpu.as_ref()?;
        (self.ok > 0).then(|| cpu.server * self.window.as_secs_f64() * 1e6 / self.ok as f64)
    }

    pub fn describe(&self) -> String {
        let h = &self.histogram;
        let ms = |p: f64| h.value_at_percentile(p) as f64 / 1000.0;
        let mut out = format!(
            "{}: {:.0} req/s ({} x {} in {:.1} s); latency ({}) p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            self.label,
            self.throughput(),
            self.ok,
            self.expect,
            self.window.as_secs_f64(),
            self.pace.label(),
            ms(50.0),
            ms(90.0),
            ms(99.0),
            h.max() as f64 / 1000.0
        );
        if self.errors.is_empty() {
            out.push_str("; errors: none");
        } else {
            let list: Vec<String> = self
                .errors
                .iter()
                .map(|(k, v)| format!("{v} x {k}"))
                .collect();
            let _ = write!(out, "; errors: {}", list.join(", "));
            if let Some(sample) = &self.error_sample {
                let _ = write!(out, "\n      e.g. {sample}");
            }
        }
        if let Some(cpu) = &self.cpu {
            let _ = write!(
                out,
                "\n      CPU: server {:.2} cores ({:.0} µs per request), load generator {:.2} cores, machine {:.0}% busy",
                cpu.server,
                self.server_cpu_micros().unwrap_or(0.0),
                cpu.client,
                cpu.machine * 100.0
            );
            if let Some(io) = cpu.io
                && self.ok > 0
            {
                // Per request over the window: socket traffic is in the
                // call and byte counts too; storage bytes are the disk's.
                let per = |v: u64| v as f64 / self.ok as f64;
                let _ = write!(
                    out,
                    "\n      I/O per request: {:.1} read calls ({:.1} KB), {:.1} write calls ({:.1} KB), {:.1} KB to storage",
                    per(io.read_calls),
                    per(io.read_bytes) / 1024.0,
                    per(io.write_calls),
                    per(io.written_bytes) / 1024.0,
                    per(io.storage_written) / 1024.0
                );
            }
        }
        out
    }
}

/// What one connection saw.
struct ClientResult {
    ok: u64,
    ok_total: u64,
    errors: BTreeMap<String, u64>,
    error_sample: Option<String>,
    histogram: Histogram<u64>,
}

/// One request of a load: method, path and JSON body, made from the
/// request's sequence number (unique across connections).
pub type MakeRequest = Arc<dyn Fn(usize) -> (Method, String, Option<Bytes>) + Send + Sync>;

/// `clients` connections send `make`'s requests until `warmup + duration`
/// has passed; answers completed within the last `duration` are counted,
/// those with status `expect` as successes.
#[allow(clippy::too_many_arguments)]
pub async fn run_load(
    label: &str,
    target: &Target,
    server_pid: u32,
    clients: usize,
    warmup: Duration,
    duration: Duration,
    expect: u16,
    make: MakeRequest,
    pace: Pace,
) -> anyhow::Result<LoadReport> {
    let start = Instant::now();
    let measure_from = start + warmup;
    let end = measure_from + duration;
    let tasks: Vec<_> = (0..clients)
        .map(|client| {
            tokio::spawn(client_loop(
                target.clone(),
                client,
                clients,
                expect,
                make.clone(),
                Schedule {
                    start,
                    measure_from,
                    end,
                    pace,
                },
            ))
        })
        .collect();
    tokio::time::sleep_until(measure_from.into()).await;
    let cpu_from = CpuSample::take(server_pid);
    tokio::time::sleep_until(end.into()).await;
    let cpu = cpu_from.and_then(|s| s.since());
    let mut report = LoadReport {
        label: label.to_owned(),
        expect,
        ok: 0,
        ok_total: 0,
        errors: BTreeMap::new(),
        error_sample: None,
        histogram: histogram(),
        window: duration,
        cpu,
        pace,
    };
    for task in tasks {
        let r = task.await.context("a load task failed")?;
        report.ok += r.ok;
        report.ok_total += r.ok_total;
        for (k, v) in r.errors {
            *report.errors.entry(k).or_default() += v;
        }
        report.error_sample = report.error_sample.or(r.error_sample);
        report
            .histogram
            .add(&r.histogram)
            .context("merging histograms")?;
    }
    Ok(report)
}

/// `clients` connections post PHQ-9 responses to `dossiers` dossiers; a
/// 201 is a success.
#[allow(clippy::too_many_arguments)]
pub async fn post_load(
    target: &Target,
    server_pid: u32,
    clients: usize,
    dossiers: usize,
    warmup: Duration,
    duration: Duration,
    pace: Pace,
) -> anyhow::Result<LoadReport> {
    let make: MakeRequest = Arc::new(move |n| {
        // Every request a new external id; consecutive requests of one
        // connection go to different dossiers.
        let mut body = String::with_capacity(256);
        let _ = write!(
            body,
            r#"{{"questionnaire_key":"phq9","external_id":"b{n}","answer_data":{{"#
        );
        for q in 1..=9 {
            let _ = write!(
                body,
                r#"{}"v_{q}":"a{}""#,
                if q == 1 { "" } else { "," },
                (n + q) % 4
            );
        }
        body.push_str("}}");
        let path = format!("/api/v1/dossiers/bench-{}/responses", n % dossiers);
        (Method::POST, path, Some(Bytes::from(body)))
    });
    run_load(
        "POST", target, server_pid, clients, warmup, duration, 201, make, pace,
    )
    .await
}

/// When a load runs and how it is paced.
#[derive(Debug, Clone, Copy)]
struct Schedule {
    start: Instant,
    measure_from: Instant,
    end: Instant,
    pace: Pace,
}

async fn client_loop(
    target: Target,
    client: usize,
    clients: usize,
    expect: u16,
    make: MakeRequest,
    schedule: Schedule,
) -> ClientResult {
    let Schedule {
        start,
        measure_from,
        end,
        pace,
    } = schedule;
    let mut result = ClientResult {
        ok: 0,
        ok_total: 0,
        errors: BTreeMap::new(),
        error_sample: None,
        histogram: histogram(),
    };
    let mut sender: Option<Sender> = None;
    let mut seq = 0usize;
    while Instant::now() < end {
        let s = match sender.as_mut() {
            Some(s) => s,
            None => match connect(target.addr).await {
                Ok(s) => sender.insert(s),
                Err(e) => {
                    *result.errors.entry("connect failed".into()).or_default() += 1;
                    result
                        .error_sample
                        .get_or_insert_with(|| format!("connect: {e}"));
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let n = seq * clients + client;
        seq += 1;
        // Open loop: request n is due at n / rate; the connection waits for
        // that time if it is early, and is timed from it if it is late.
        let due = match pace {
            Pace::Closed => None,
            Pace::Open(rate) => {
                let due = start + Duration::from_secs_f64(n as f64 / rate);
                if due >= end {
                    break;
                }
                tokio::time::sleep_until(due.into()).await;
                Some(due)
            }
        };
        let (method, path, body) = make(n);
        let request = match target.request(method, &path, body) {
            Ok(r) => r,
            Err(e) => {
                result
                    .error_sample
                    .get_or_insert_with(|| format!("building a request: {e:#}"));
                break;
            }
        };
        let sent = due.unwrap_or_else(Instant::now);
        let answer = send(s, request).await;
        let done = Instant::now();
        let counted = done >= measure_from && done <= end;
        match answer {
            Ok((status, _)) if status == expect => {
                result.ok_total += 1;
                if counted {
                    result.ok += 1;
                    let _ = result.histogram.record(micros(done - sent));
                }
            }
            Ok((status, text)) => {
                if counted {
                    *result.errors.entry(format!("HTTP {status}")).or_default() += 1;
                }
                result.error_sample.get_or_insert_with(|| {
                    format!("HTTP {status}: {}", String::from_utf8_lossy(&text))
                });
            }
            Err(e) => {
                sender = None;
                if counted {
                    *result.errors.entry("transport error".into()).or_default() += 1;
                }
                result
                    .error_sample
                    .get_or_insert_with(|| format!("transport: {e:#}"));
            }
        }
    }
    result
}

/// Latency of sequential GETs.
#[derive(Debug)]
pub struct Latency {
    /// Microseconds.
    pub histogram: Histogram<u64>,
    /// Size of one answer.
    pub bytes: usize,
    pub cpu: Option<CpuUse>,
}

impl Latency {
    pub fn median_ms(&self) -> f64 {
        self.histogram.value_at_percentile(50.0) as f64 / 1000.0
    }

    pub fn describe(&self) -> String {
        let h = &self.histogram;
        let ms = |p: f64| h.value_at_percentile(p) as f64 / 1000.0;
        let mut out = format!(
            "median {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, mean {:.3} ms ({} requests, {} bytes each)",
            ms(50.0),
            ms(90.0),
            ms(99.0),
            h.mean() / 1000.0,
            h.len(),
            self.bytes
        );
        if let Some(cpu) = &self.cpu {
            let _ = write!(out, "; machine {:.0}% busy", cpu.machine * 100.0);
        }
        out
    }
}

/// Times `requests` sequential GETs of a dossier's response list on one
/// keep-alive connection, after `warmup` untimed ones. Every answer must be
/// a 200 with the same size as the first, which must hold `expect` items.
pub async fn list_latency(
    target: &Target,
    server_pid: u32,
    dossier: &str,
    expect: usize,
    warmup: usize,
    requests: usize,
) -> anyhow::Result<Latency> {
    let path = format!("/api/v1/dossiers/{dossier}/responses");
    let mut sender = connect(target.addr)
        .await
        .context("connecting to the server")?;
    let (status, first) = send(&mut sender, target.request(Method::GET, &path, None)?).await?;
    if status != 200 {
        bail!(
            "GET {path}: HTTP {status}: {}",
            String::from_utf8_lossy(&first)
        );
    }
    let items: serde_json::Value = serde_json::from_slice(&first).context("reading the list")?;
    let count = items.as_array().map(Vec::len);
    anyhow::ensure!(
        count == Some(expect),
        "GET {path}: expected {expect} responses, got {count:?}"
    );
    let bytes = first.len();
    let mut h = histogram();
    let mut cpu_from = None;
    for i in 0..warmup + requests {
        if i == warmup {
            cpu_from = CpuSample::take(server_pid);
        }
        let request = target.request(Method::GET, &path, None)?;
        let sent = Instant::now();
        let (status, body) = send(&mut sender, request).await?;
        let took = sent.elapsed();
        anyhow::ensure!(
            status == 200 && body.len() == bytes,
            "GET {path}: HTTP {status}, {} bytes instead of {bytes}",
            body.len()
        );
        if i >= warmup {
            h.record(micros(took))?;
        }
    }
    Ok(Latency {
        histogram: h,
        bytes,
        cpu: cpu_from.and_then(|s| s.since()),
    })
}

/// The median of some figures (the mean of the middle two for an even
/// count); NaN for none.
pub fn median(figures: &[f64]) -> f64 {
    let mut sorted = figures.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}
