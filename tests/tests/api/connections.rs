//! The listener under hostile connections (docs/operations.md#connections):
//! silent and slow clients, stalled TLS handshakes and bodies, idle
//! keep-alive connections, more connections than one client's share or
//! than the limit, on raw sockets. Each test shortens the one timeout it is
//! about to a second and waits for the service to close the connection
//! (reading until EOF), never for a fixed time. Loopback is 127.0.0.0/8:
//! a socket bound to an address of its own there is a client of its own.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
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
        per_client: 512,
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

/// Four connections per client, six in all.
async fn four_per_client(db: Db) -> TestApp {
    spawn_with_limits(db, |l| {
        l.per_client = 4;
        l.max_open = 6;
    })
    .await
}

/// Two connections per client, with [`PROXY`] a trusted proxy.
async fn two_per_client_behind_a_proxy(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config| {
        config.connections = ConnectionLimits {
            per_client: 2,
            ..long_limits()
        };
        config.trusted_proxies.nets = vec![IpAddr::V4(Ipv4Addr::from(PROXY)).into()];
    })
    .await
}

/// Loopback addresses of clients apart.
const ATTACKER: [u8; 4] = [127, 0, 0, 2];
const OTHER: [u8; 4] = [127, 0, 0, 3];
const PROXY: [u8; 4] = [127, 0, 0, 4];

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

fn port(app: &TestApp) -> u16 {
    app.base
        .rsplit(':')
        .next()
        .and_then(|p| p.parse::<u16>().ok())
        .expect("port in the base URL")
}

async fn connect(app: &TestApp) -> TcpStream {
    TcpStream::connect(("127.0.0.1", port(app)))
        .await
        .expect("connect")
}

/// A connection from loopback address `client`.
async fn connect_from(app: &TestApp, client: [u8; 4]) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket
        .bind(SocketAddr::from((client, 0)))
        .expect("bind to a loopback address");
    socket
        .connect(SocketAddr::from(([127, 0, 0, 1], port(app))))
        .await
        .expect("connect")
}

/// GET /health from loopback address `client` on a connection of its own,
/// answered within a second.
async fn served_within_a_second(app: &TestApp, client: [u8; 4]) -> reqwest::StatusCode {
    let http = reqwest::Client::builder()
        .local_address(IpAddr::V4(Ipv4Addr::from(client)))
        .timeout(SHORT)
        .build()
        .expect("a client");
    http.get(app.url("/health"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("not served within {SHORT:?}: {e}"))
        .status()
}

/// Sends a GET on `stream` and reads its answer.
async fn get_health(stream: &mut TcpStream) -> String {
    stream.write_all(GET_HEALTH).await.expect("write");
    read_answer(stream).await
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
    async fn one_client_holding_its_share_of_silent_connections_does_not_keep_another_out(
        app: four_per_client,
    ) {
        // Its share, silent, then six more, as many as the whole limit.
        let mut held = Vec::new();
        for _ in 0..4 {
            held.push(connect_from(&app, ATTACKER).await);
        }
        let mut more = Vec::new();
        for _ in 0..6 {
            more.push(connect_from(&app, ATTACKER).await);
        }
        assert_eq!(served_within_a_second(&app, OTHER).await, 200);
        // Those past its share were closed unanswered as they came.
        let since = Instant::now();
        for stream in more {
            let (sent, _) = read_until_closed(stream, since).await;
            assert_eq!(sent, "", "closed without an answer");
        }
        // Its share it keeps.
        for stream in &mut held {
            assert!(get_health(stream).await.starts_with("HTTP/1.1 200 "));
        }
    }
);

db_test!(
    async fn a_trusted_proxys_connections_have_no_share_per_client(
        app: two_per_client_behind_a_proxy,
    ) {
        let mut proxied = Vec::new();
        for _ in 0..6 {
            proxied.push(connect_from(&app, PROXY).await);
        }
        for stream in &mut proxied {
            assert!(get_health(stream).await.starts_with("HTTP/1.1 200 "));
        }
        // Anyone else has a share of two.
        let _held = [
            connect_from(&app, ATTACKER).await,
            connect_from(&app, ATTACKER).await,
        ];
        let since = Instant::now();
        let (sent, _) = read_until_closed(connect_from(&app, ATTACKER).await, since).await;
        assert_eq!(sent, "");
    }
);

db_test!(
    async fn at_the_limit_a_new_client_is_served_because_the_oldest_idle_connection_is_closed(
        app: three_connections,
    ) {
        let mut held = Vec::new();
        for _ in 0..3 {
            let mut stream = connect_from(&app, ATTACKER).await;
            // Answered, so accepted: it holds one of the three places,
            // idle now.
            assert!(get_health(&mut stream).await.starts_with("HTTP/1.1 200 "));
            held.push(stream);
        }
        assert_eq!(served_within_a_second(&app, OTHER).await, 200);
        // The oldest made room; the others still serve.
        let oldest = held.remove(0);
        let (sent, _) = read_until_closed(oldest, Instant::now()).await;
        assert_eq!(sent, "");
        for stream in &mut held {
            assert!(get_health(stream).await.starts_with("HTTP/1.1 200 "));
        }
    }
);

db_test!(
    async fn connections_serving_requests_are_never_closed_to_make_room(app: three_connections) {
        // Three requests in progress: each handler waits for its body
        // (the interim 100 answer says it started reading it).
        let mut busy = Vec::new();
        let head = post_head(&app).replace("\r\n\r\n", "\r\nExpect: 100-continue\r\n\r\n");
        for _ in 0..3 {
            let mut stream = connect(&app).await;
            stream.write_all(head.as_bytes()).await.expect("write");
            let interim = read_answer(&mut stream).await;
            assert!(interim.starts_with("HTTP/1.1 100 "), "{interim}");
            busy.push(stream);
        }
        // The operating system completes a fourth connection; the service
        // does not take it while all three serve. Waiting for an answer
        // that must not come is the only way to see that.
        let mut fourth = connect_from(&app, OTHER).await;
        fourth.write_all(GET_HEALTH).await.expect("write");
        let mut byte = [0u8; 1];
        let early = tokio::time::timeout(Duration::from_millis(500), fourth.read(&mut byte)).await;
        assert!(early.is_err(), "a fourth connection was served: {early:?}");
        // One request ends (its body completes: not a response, so 400):
        // that connection, idle now, makes room, and the fourth is served.
        let mut first = busy.remove(0);
        let body = format!("{{\"questionnaire_key\":{}", " ".repeat(79));
        first.write_all(body.as_bytes()).await.expect("write");
        let (answered, _) = read_until_closed(first, Instant::now()).await;
        assert!(answered.starts_with("HTTP/1.1 400 "), "{answered}");
        let answer = tokio::time::timeout(PATIENCE, read_answer(&mut fourth))
            .await
            .expect("the fourth connection is served once a request ended");
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
        // The two still busy were left alone: their requests go on.
        for mut stream in busy {
            stream.write_all(body.as_bytes()).await.expect("write");
            let answer = read_answer(&mut stream).await;
            assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
        }
    }
);
