//! The alarm phase's receiver: a small HTTP server on loopback that the
//! server under test delivers its alarm webhooks to, as an EPD's endpoint
//! would take them. Every call is recorded with the moment it arrived and
//! whether its signature verified; each is answered 204, or refused while
//! the receiver is down: then the port is closed, so connecting is refused
//! as with a receiver that is off, and open connections are cut.
//!
//! The signature is checked here on its own (HMAC-SHA256 over
//! `{webhook-id}.{webhook-timestamp}.{body}` with the `whsec_` key, as
//! Standard Webhooks has it), not with the server's code, and the
//! timestamp must be within 5 minutes of this clock.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use sha2::Sha256;
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

/// How far a `webhook-timestamp` may be from this clock.
const TOLERANCE_SECONDS: i64 = 300;

/// One call the receiver took.
#[derive(Debug, Clone)]
pub struct Arrival {
    /// When it arrived, on the benchmark's clock.
    pub at: Instant,
    /// The same moment on the wall clock (the server's deadlines are
    /// wall-clock times).
    pub wall: DateTime<Utc>,
    pub webhook_id: String,
    /// The signature verified with the key, and the timestamp was fresh.
    pub verified: bool,
    pub body: serde_json::Value,
}

#[derive(Debug, Default)]
struct Shared {
    arrivals: Vec<Arrival>,
    /// Calls refused while going down (answered 503, not recorded).
    refused: u64,
    down: bool,
}

/// The receiver; stops listening when dropped.
#[derive(Debug)]
pub struct Receiver {
    addr: SocketAddr,
    key: Arc<Mutex<Vec<u8>>>,
    shared: Arc<Mutex<Shared>>,
    serving: Option<JoinHandle<()>>,
}

impl Receiver {
    /// Listens on a free loopback port.
    pub async fn start() -> anyhow::Result<Receiver> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let mut receiver = Receiver {
            addr,
            key: Arc::new(Mutex::new(Vec::new())),
            shared: Arc::new(Mutex::new(Shared::default())),
            serving: None,
        };
        receiver.serve(listener);
        Ok(receiver)
    }

    /// The URL the server is to deliver to.
    pub fn url(&self) -> String {
        format!("http://{}/alarms", self.addr)
    }

    /// The key signatures are checked with: the `whsec_` secret the
    /// server's operator was shown.
    pub fn set_key(&self, shown: &str) -> anyhow::Result<()> {
        let bytes = STANDARD
            .decode(shown.strip_prefix("whsec_").unwrap_or(shown))
            .context("the webhook secret is not base64")?;
        *lock(&self.key) = bytes;
        Ok(())
    }

    /// Every call taken so far, in order of arrival.
    pub fn arrivals(&self) -> Vec<Arrival> {
        lock(&self.shared).arrivals.clone()
    }

    /// Goes down: calls arriving from now on are refused (503), and after
    /// a moment, for the answers already given to be sent, the port is
    /// closed and every connection cut.
    pub async fn go_down(&mut self) {
        lock(&self.shared).down = true;
        tokio::time::sleep(Duration::from_millis(200)).await;
        if let Some(serving) = self.serving.take() {
            serving.abort();
            let _ = serving.await;
        }
    }

    /// Listens again on the same port.
    pub async fn come_back(&mut self) -> anyhow::Result<()> {
        let started = Instant::now();
        let listener = loop {
            match TcpListener::bind(self.addr).await {
                Ok(listener) => break listener,
                Err(e) if started.elapsed() < Duration::from_secs(30) => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(e).context("listening again on the receiver's port"),
            }
        };
        lock(&self.shared).down = false;
        self.serve(listener);
        Ok(())
    }

    /// Calls refused while going down.
    pub fn refused(&self) -> u64 {
        lock(&self.shared).refused
    }

    fn serve(&mut self, listener: TcpListener) {
        let key = self.key.clone();
        let shared = self.shared.clone();
        self.serving = Some(tokio::spawn(async move {
            // Dropped with this task: every connection is cut with it.
            let mut connections = JoinSet::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let (key, shared) = (key.clone(), shared.clone());
                connections.spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        take(request, key.clone(), shared.clone())
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
                // Reap the finished ones.
                while connections.try_join_next().is_some() {}
            }
        }));
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(serving) = self.serving.take() {
            serving.abort();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Takes one call: records it and answers 204, or 503 while going down.
async fn take(
    request: Request<Incoming>,
    key: Arc<Mutex<Vec<u8>>>,
    shared: Arc<Mutex<Shared>>,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let header = |name: &str| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let (id, timestamp, signature) = (
        header("webhook-id"),
        header("webhook-timestamp"),
        header("webhook-signature"),
    );
    let body = request.into_body().collect().await?.to_bytes();
    let at = Instant::now();
    let wall = Utc::now();
    let verified = verify(&lock(&key), &id, &timestamp, &signature, &body, wall);
    let mut shared = lock(&shared);
    if shared.down {
        shared.refused += 1;
        return Ok(answer(503));
    }
    shared.arrivals.push(Arrival {
        at,
        wall,
        webhook_id: id,
        verified,
        body: serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
    });
    Ok(answer(204))
}

fn answer(status: u16) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or_default();
    response
}

/// Whether `signature` (a space-separated list of `v1,<base64>`) holds
/// the HMAC-SHA256 of `{id}.{timestamp}.{body}` under `key`, and
/// `timestamp` is within [`TOLERANCE_SECONDS`] of `now`.
pub fn verify(
    key: &[u8],
    id: &str,
    timestamp: &str,
    signature: &str,
    body: &[u8],
    now: DateTime<Utc>,
) -> bool {
    let Ok(seconds) = timestamp.parse::<i64>() else {
        return false;
    };
    if (now.timestamp() - seconds).abs() > TOLERANCE_SECONDS || key.is_empty() || id.is_empty() {
        return false;
    }
    signature.split(' ').any(|one| {
        let Some(encoded) = one.strip_prefix("v1,") else {
            return false;
        };
        let Ok(given) = STANDARD.decode(encoded) else {
            return false;
        };
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else {
            return false;
        };
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.as_bytes());
        mac.update(b".");
        mac.update(body);
        // Constant time.
        mac.verify_slice(&given).is_ok()
    })
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    /// The example of the Standard Webhooks reference libraries' tests:
    /// key, id, timestamp, body and the signature they expect.
    const KEY: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TIMESTAMP: i64 = 1_614_265_330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn key() -> Vec<u8> {
        STANDARD
            .decode(KEY.strip_prefix("whsec_").expect("prefix"))
            .expect("base64")
    }

    fn at(seconds: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(seconds, 0).single().expect("a time")
    }

    #[test]
    fn the_reference_signature_verifies() {
        let ts = TIMESTAMP.to_string();
        assert!(verify(&key(), ID, &ts, SIGNATURE, BODY, at(TIMESTAMP)));
        // One of several signatures is enough.
        let several = format!("v1,bm90IGl0 {SIGNATURE}");
        assert!(verify(&key(), ID, &ts, &several, BODY, at(TIMESTAMP + 10)));
    }

    #[test]
    fn a_changed_message_or_a_stale_timestamp_does_not_verify() {
        let ts = TIMESTAMP.to_string();
        let now = at(TIMESTAMP);
        assert!(!verify(&key(), ID, &ts, SIGNATURE, b"{}", now));
        assert!(!verify(&key(), "msg_other", &ts, SIGNATURE, BODY, now));
        assert!(!verify(&key(), ID, "1614265331", SIGNATURE, BODY, now));
        assert!(!verify(b"another key", ID, &ts, SIGNATURE, BODY, now));
        assert!(!verify(&key(), ID, &ts, "v2,abc", BODY, now));
        assert!(!verify(&key(), ID, &ts, "", BODY, now));
        assert!(!verify(&[], ID, &ts, SIGNATURE, BODY, now));
        // Five minutes either way, no more.
        assert!(verify(
            &key(),
            ID,
            &ts,
            SIGNATURE,
            BODY,
            at(TIMESTAMP + 300)
        ));
        assert!(!verify(
            &key(),
            ID,
            &ts,
            SIGNATURE,
            BODY,
            at(TIMESTAMP + 301)
        ));
        assert!(!verify(
            &key(),
            ID,
            &ts,
            SIGNATURE,
            BODY,
            at(TIMESTAMP - 301)
        ));
    }
}
