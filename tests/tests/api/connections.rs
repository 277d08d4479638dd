//! The listener under hostile connections (docs/operations.md#connections):
//! silent and slow clients, stalled TLS handshakes and bodies, idle
//! keep-alive connections and more connections than the limit, on raw
//! sockets. Each test shortens the one timeout it is about to a second and
//! waits for the service to close the connection (reading until EOF), never
//! for a fixed time.

use std::time::{Duration, Instant};

use host::config::ConnectionLimits;
use tests::{Db, TestApp, db_test, reqwest};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The timeout a test is about.
const SHORT: Duration = Duration::from_secs(1);

/// Every other timeout: far longer than any test waits.
const LONG: Duration = Duration::from_secs(60);

/// How long a test waits for the service to close a connection before it
/// fails: well beyond [`SHORT`], well below [`LONG`].
const PATIENCE: Duration = Duration::from_secs(20);

/// A complete request without a body.
const GET_HEALTH: &[u8] = b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n";

/// Every timeout [`LONG`].
fn long_limits() -> ConnectionLimits {
    ConnectionLimits {
        header_read: LONG,
        request_body: LONG,
        keep_alive: LONG,
        tls_handshake: LONG,
        max_open: 512,
    }
}

/// The host with [`long_limits`], then `adjust` applied.
async fn spawn_with_limits(db: Db, adjust: impl FnOnce(&mut ConnectionLimits)) -> TestApp {
    let mut limits = long_limits();
    adjust(&mut limits);
    TestApp::spawn_with(db, move |config| config.connections = limits).await
}

async fn short_header_timeout(db: Db) -> TestApp {
    spawn_with_limits(db, |l| l.header_read = SHORT).await
}

async fn short_body_timeout(db: Db) -> TestApp {
    spawn_with_limits(db, |l| l.request_body = SHORT).await
}

async fn short_keep_alive(db: Db) -> TestApp {
    spawn_with_limits(db, |l| l.keep_alive = SHORT).await
}

async fn three_connections(db: Db) -> TestApp {
    spawn_with_limits(db, |l| l.max_open = 3).await
}

/// Over TLS, with a short handshake timeout. The certificate files are read
/// at start-up, so their folder may go afterwards.
async fn tls_short_handshake(db: Db) -> TestApp {
    let dir = tempfile::tempdir().expect("tempdir");
    let (files, _trusted) = crate::tls::certificate(dir.path());
    TestApp::spawn_with(db, move |config| {
        config.connections = ConnectionLimits {
            tls_handshake: SHORT,
            ..long_limits()
        };
        config.tls = Some(files);
    })
    .await
}

async fn connect(app: &TestApp) -> TcpStream {
    let port = app
        .base
        .rsplit(':')
        .next()
        .and_then(|p| p.parse::<u16>().ok())
        .expect("port in the base URL");
    TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect")
}

/// Reads until the service closes the connection (EOF, or a reset): what
/// it sent, and the time from `since`. Fails after [`PATIENCE`].
async fn read_until_closed(
    mut stream: impl AsyncRead + Unpin,
    since: Instant,
) -> (String, Duration) {
    let mut bytes = Vec::new();
    let read = tokio::time::timeout(PATIENCE, async {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = stream.read(&mut buf).await {
            bytes.extend_from_slice(&buf[..n]);
        }
    })
    .await;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    assert!(
        read.is_ok(),
        "the connection was still open after {PATIENCE:?}; it had sent {text:?}"
    );
    (text, since.elapsed())
}

/// Reads one answer to a request without a body: head and
/// `Content-Length` bytes of body.
async fn read_answer(stream: &mut TcpStream) -> String {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|n| n.trim().parse::<usize>())
                })
                .and_then(Result::ok)
                .unwrap_or(0);
            if body.len() >= length {
                return text;
            }
        }
        let n = stream.read(&mut buf).await.expect("read");
        assert!(n > 0, "closed before the answer was complete: {text:?}");
        bytes.extend_from_slice(&buf[..n]);
    }
}

#[track_caller]
fn assert_closed_by_timeout(elapsed: Duration) {
    assert!(
        elapsed >= SHORT,
        "closed after {elapsed:?}, before the timeout of {SHORT:?}"
    );
}

db_test!(
    async fn connections_that_send_nothing_are_closed_while_others_are_served(
        app: short_header_timeout,
    ) {
        let since = Instant::now();
        let mut silent = Vec::new();
        for _ in 0..20 {
            silent.push(connect(&app).await);
        }
        let served = reqwest::get(app.url("/health")).await.expect("request");
        assert_eq!(served.status(), 200);
        for stream in silent {
            let (sent, elapsed) = read_until_closed(stream, since).await;
            assert_eq!(sent, "", "no answer to a request never sent");
            assert_closed_by_timeout(elapsed);
        }
    }
);

db_test!(
    async fn headers_sent_a_byte_at_a_time_are_cut_off_at_the_header_timeout(
        app: short_header_timeout,
    ) {
        let since = Instant::now();
        let mut attackers = Vec::new();
        for _ in 0..10 {
            let (reader, mut writer) = connect(&app).await.into_split();
            // Slowloris: a header line that never ends, a byte every 100 ms.
            let drip = tokio::spawn(async move {
                let head = b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Slow: ";
                let mut sent = writer.write_all(head).await;
                let mut every = tokio::time::interval(Duration::from_millis(100));
                while sent.is_ok() {
                    every.tick().await;
                    sent = writer.write_all(b"x").await;
                }
            });
            attackers.push((reader, drip));
        }
        let served = reqwest::get(app.url("/health")).await.expect("request");
        assert_eq!(
            served.status(),
            200,
            "a normal client is served during the attack"
        );
        for (reader, drip) in attackers {
            let (sent, elapsed) = read_until_closed(reader, since).await;
            assert_eq!(sent, "", "headers never completed get no answer");
            assert_closed_by_timeout(elapsed);
            drip.abort();
        }
    }
);

db_test!(
    async fn a_tls_handshake_that_never_finishes_is_closed(app: tls_short_handshake) {
        assert!(app.base.starts_with("https://"));
        let since = Instant::now();
        let mut stream = connect(&app).await;
        // The first bytes of a TLS record, then nothing.
        stream.write_all(&[0x16, 0x03, 0x01]).await.expect("write");
        let (sent, elapsed) = read_until_closed(stream, since).await;
        assert_eq!(sent, "");
        assert_closed_by_timeout(elapsed);
        // A client that says nothing at all is closed too.
        let since = Instant::now();
        let (_, elapsed) = read_until_closed(connect(&app).await, since).await;
        assert_closed_by_timeout(elapsed);
    }
);

/// A POST of a response whose body promises 100 bytes.
fn post_head(app: &TestApp) -> String {
    format!(
        "POST /api/v1/dossiers/d1/responses HTTP/1.1\r\nHost: localhost\r\nAuthorization: {}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n",
        app.basic_header()
    )
}

#[track_caller]
fn assert_request_timeout(answer: &str) {
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("\r\nconnection: close\r\n"),
        "{answer}"
    );
    assert!(
        answer.ends_with(r#"{"errors":{"base":["request_timeout"]}}"#),
        "{answer}"
    );
}

db_test!(
    async fn a_body_that_stops_arriving_is_answered_408_and_the_connection_closed(
        app: short_body_timeout,
    ) {
        let since = Instant::now();
        let mut stream = connect(&app).await;
        let request = format!("{}{{\"questionnaire_key\":", post_head(&app));
        stream.write_all(request.as_bytes()).await.expect("write");
        let (answer, elapsed) = read_until_closed(stream, since).await;
        assert_request_timeout(&answer);
        assert_closed_by_timeout(elapsed);
    }
);

db_test!(
    async fn a_body_sent_a_byte_at_a_time_is_cut_off_at_the_body_timeout(app: short_body_timeout) {
        // Every byte comes in time for a timeout between bytes; the whole
        // body (100 bytes, one each 100 ms) would take ten seconds.
        let since = Instant::now();
        let (reader, mut writer) = connect(&app).await.into_split();
        let head = post_head(&app);
        let drip = tokio::spawn(async move {
            let mut sent = writer.write_all(head.as_bytes()).await;
            let mut every = tokio::time::interval(Duration::from_millis(100));
            for _ in 0..100 {
                if sent.is_err() {
                    break;
                }
                every.tick().await;
                sent = writer.write_all(b" ").await;
            }
        });
        let (answer, elapsed) = read_until_closed(reader, since).await;
        assert_request_timeout(&answer);
        assert_closed_by_timeout(elapsed);
        assert!(
            elapsed < Duration::from_secs(10),
            "cut off before the body was complete"
        );
        drip.abort();
    }
);

db_test!(
    async fn an_idle_connection_is_closed_after_the_keep_alive_timeout(app: short_keep_alive) {
        let since = Instant::now();
        let mut stream = connect(&app).await;
        stream.write_all(GET_HEALTH).await.expect("write");
        let (sent, elapsed) = read_until_closed(stream, since).await;
        assert!(sent.starts_with("HTTP/1.1 200 "), "{sent}");
        assert_eq!(sent.matches("HTTP/1.1 ").count(), 1, "one answer: {sent}");
        assert_closed_by_timeout(elapsed);
        // A connection that never sends a request is idle from the start.
        let since = Instant::now();
        let (sent, elapsed) = read_until_closed(connect(&app).await, since).await;
        assert_eq!(sent, "");
        assert_closed_by_timeout(elapsed);
    }
);

db_test!(
    async fn connections_beyond_the_limit_wait_until_one_closes(app: three_connections) {
        let mut held = Vec::new();
        for _ in 0..3 {
            let mut stream = connect(&app).await;
            // Answered, so accepted: it holds one of the three places.
            stream.write_all(GET_HEALTH).await.expect("write");
            assert!(read_answer(&mut stream).await.starts_with("HTTP/1.1 200 "));
            held.push(stream);
        }
        // The operating system completes the fourth connection; the
        // service does not take it while three are open. Waiting for an
        // answer that must not come is the only way to see that.
        let mut fourth = connect(&app).await;
        fourth.write_all(GET_HEALTH).await.expect("write");
        let mut byte = [0u8; 1];
        let early = tokio::time::timeout(Duration::from_millis(500), fourth.read(&mut byte)).await;
        assert!(early.is_err(), "a fourth connection was served: {early:?}");
        // One closes: the fourth is served.
        drop(held.pop());
        let answer = tokio::time::timeout(PATIENCE, read_answer(&mut fourth))
            .await
            .expect("the fourth connection is served once one closed");
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
        // And a new client, once another closes.
        drop(held.pop());
        let served = reqwest::get(app.url("/health")).await.expect("request");
        assert_eq!(served.status(), 200);
    }
);
