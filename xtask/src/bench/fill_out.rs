//! The fill-out phase: a respondent's two requests, timed one after the
//! other on one keep-alive connection as a browser sends them: render a
//! questionnaire page (the session found by its cookie, its responses
//! read, the PHQ-9 form written), and submit it complete (the CSRF token
//! checked, the answers validated, scored through the PHQ-9 plugin, stored
//! durably with the access-log row, answered with a redirect). Sessions of
//! 50 PHQ-9s each are started over the API; logging in and the redirect
//! between pages are not timed.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, bail};
use hdrhistogram::Histogram;
use hyper::Method;
use hyper::body::Bytes;
use hyper::header::{CONTENT_TYPE, COOKIE, HeaderMap, HeaderValue, LOCATION, SET_COOKIE};

use super::args::BenchArgs;
use super::load::{self, Latency};
use super::server::{Backend, Fresh, RETURN_ORIGIN, Server};

/// Questionnaires per session (the most one session may hold).
const PER_SESSION: usize = 50;

/// The two latencies of the phase.
#[derive(Debug)]
pub struct FillOutReport {
    pub render: Latency,
    pub submit: Latency,
}

pub async fn fill_out_phase(
    backend: Backend,
    args: &BenchArgs,
    binary: &Path,
    root: &Path,
    fresh: &Fresh,
) -> anyhow::Result<FillOutReport> {
    let server = Server::start(binary, root, fresh).await?;
    println!(
        "Fill-out: {} pages rendered and submitted one after another, after {} untimed ({} at {})",
        args.fill_out_pages,
        args.fill_out_warmup,
        backend.name(),
        server.addr()
    );
    let mut browser = Browser {
        sender: load::connect(server.addr())
            .await
            .context("connecting to the server")?,
        target: server.target().clone(),
        cookie: String::new(),
    };
    let (mut render, mut submit) = (histogram(), histogram());
    let (mut page_bytes, mut cpu_from) = (0, None);
    let total = args.fill_out_warmup + args.fill_out_pages;
    let mut done = 0;
    for session in 0.. {
        if done == total {
            break;
        }
        let mut location = browser.log_in(session).await?;
        for _ in 0..PER_SESSION.min(total - done) {
            if done == args.fill_out_warmup {
                cpu_from = super::cpu::CpuSample::take(server.pid());
            }
            let timed = done >= args.fill_out_warmup;
            let started = Instant::now();
            let (status, _, page) = browser.send(Method::GET, &location, None).await?;
            let took = started.elapsed();
            anyhow::ensure!(status == 200, "GET {location}: HTTP {status}");
            let page = String::from_utf8_lossy(&page).into_owned();
            page_bytes = page.len();
            let form = phq9_answers(&field(&page, "csrf")?, &field(&page, "shown_at")?);
            if timed {
                render.record(load::micros(took))?;
            }
            let started = Instant::now();
            let (status, headers, _) = browser.send(Method::POST, &location, Some(form)).await?;
            let took = started.elapsed();
            anyhow::ensure!(
                status == 303 && header(&headers, LOCATION) == "/fill_out/session",
                "POST {location}: HTTP {status}"
            );
            if timed {
                submit.record(load::micros(took))?;
            }
            done += 1;
            // On to the next page, untimed.
            let (status, headers, _) = browser.send(Method::GET, "/fill_out/session", None).await?;
            anyhow::ensure!(status == 303, "GET /fill_out/session: HTTP {status}");
            location = header(&headers, LOCATION);
        }
    }
    let cpu = cpu_from.and_then(|s| s.since());
    server.stop();
    let stored = super::seed::count_responses(&fresh.url()).await?;
    println!("      stored: {stored} responses (every submission, warm-up included)");
    let report = FillOutReport {
        render: Latency {
            histogram: render,
            bytes: page_bytes,
            cpu,
        },
        submit: Latency {
            histogram: submit,
            bytes: 0,
            cpu,
        },
    };
    println!("Fill-out: render a page: {}", report.render.describe());
    println!("Fill-out: submit a page: {}", report.submit.describe());
    Ok(report)
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid histogram bounds")
}

/// One keep-alive connection with a session cookie.
struct Browser {
    sender: load::Sender,
    target: load::Target,
    cookie: String,
}

impl Browser {
    /// Starts a session over the API and logs in with its link; the path
    /// of the first page.
    async fn log_in(&mut self, session: usize) -> anyhow::Result<String> {
        let body = serde_json::json!({
            "questionnaire_keys": vec!["phq9"; PER_SESSION],
            "return_to": format!("{RETURN_ORIGIN}/back"),
        });
        let (status, answer) = load::post_once(
            &self.target,
            &format!("/api/v1/dossiers/bench-fill-out-{session}/fill_out_sessions"),
            body.to_string(),
        )
        .await?;
        anyhow::ensure!(
            status == 200,
            "starting a session: HTTP {status}: {}",
            String::from_utf8_lossy(&answer)
        );
        let answer: serde_json::Value = serde_json::from_slice(&answer)?;
        let link = answer["fill_out_url"].as_str().unwrap_or_default();
        let path = link
            .find("/fill_out/")
            .map(|at| &link[at..])
            .context("a fill_out_url")?
            .to_owned();
        let (status, headers, _) = self.send(Method::GET, &path, None).await?;
        anyhow::ensure!(status == 303, "logging in: HTTP {status}");
        let set = header(&headers, SET_COOKIE);
        self.cookie = set.split(';').next().unwrap_or_default().to_owned();
        let (status, headers, _) = self.send(Method::GET, "/fill_out/session", None).await?;
        anyhow::ensure!(status == 303, "the first page: HTTP {status}");
        Ok(header(&headers, LOCATION))
    }

    async fn send(
        &mut self,
        method: Method,
        path: &str,
        form: Option<String>,
    ) -> anyhow::Result<(u16, HeaderMap, Bytes)> {
        let mut extra = HeaderMap::new();
        if !self.cookie.is_empty() {
            extra.insert(COOKIE, HeaderValue::from_str(&self.cookie)?);
        }
        if form.is_some() {
            extra.insert(
                CONTENT_TYPE,
                HeaderValue::from_static("application/x-www-form-urlencoded"),
            );
        }
        load::send_with(
            &mut self.sender,
            &self.target,
            method,
            path,
            extra,
            form.map(Bytes::from),
        )
        .await
    }
}

fn header(headers: &HeaderMap, name: hyper::header::HeaderName) -> String {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// The value of a hidden field of a page.
fn field(page: &str, name: &str) -> anyhow::Result<String> {
    let marker = format!("name=\"{name}\" value=\"");
    let Some(at) = page.find(&marker) else {
        bail!("no field {name} on the page")
    };
    let rest = &page[at + marker.len()..];
    Ok(rest[..rest.find('"').unwrap_or(0)].to_owned())
}

/// A complete PHQ-9 page: items 1-9 answered (total 9, "mild").
fn phq9_answers(csrf: &str, shown_at: &str) -> String {
    let mut form = format!("csrf={csrf}&shown_at={shown_at}&action=submit");
    for n in 1..=9 {
        form.push_str(&format!("&v_{n}=a1"));
    }
    form
}
