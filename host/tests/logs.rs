//! The log lines of the real `outcomes` binary, its stderr piped as a
//! service manager or container runtime pipes it: JSON lines that parse,
//! one `answered` line per request with its request id, method, matched
//! route, status, latency and the verified token's key; no colour codes,
//! in JSON or in text; and never a secret, a fill-out link's signature or
//! nonce, a dossier id or answers (docs/operations.md#logs).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `outcomes` with settings for a data folder of its own: SQLite, the
/// repository's definitions, no plugins, no scheduler.
fn outcomes(data: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_outcomes"));
    let plugins = data.join("plugins");
    std::fs::create_dir_all(&plugins).expect("a plugin folder");
    command
        .env_clear()
        .env("OUTCOMES_DATA_DIR", data)
        .env(
            "OUTCOMES_DATABASE_URL",
            format!("sqlite://{}", data.join("outcomes.db").display()),
        )
        .env("OUTCOMES_QUESTIONNAIRES_DIR", repo().join("questionnaires"))
        .env("OUTCOMES_PROTOCOLS_DIR", repo().join("protocols"))
        .env("OUTCOMES_PLUGINS_DIR", plugins)
        .env("OUTCOMES_WATCH", "false")
        // Any free port: the default (9187) may be taken by another test.
        .env("OUTCOMES_METRICS_LISTEN", "127.0.0.1:0")
        .env("OUTCOMES_SCHEDULER_INTERVAL", "0")
        .env("OUTCOMES_LISTEN", "127.0.0.1:0")
        // Where fill-out pages may send respondents back to.
        .env("OUTCOMES_ALLOWED_ORIGINS", "http://localhost:9");
    command
}

/// Creates a token with every right; its secret.
fn create_token(data: &Path, key: &str) -> String {
    let out = outcomes(data)
        .args(["token", "create", "--key", key, "--rights", "all", "--json"])
        .output()
        .expect("outcomes token create runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let created: Value = serde_json::from_slice(&out.stdout).expect("JSON from token create");
    created["consumer_secret"]
        .as_str()
        .expect("a secret")
        .to_owned()
}

/// A running `outcomes serve` with stderr piped, and its lines as they come.
struct Served {
    child: Child,
    port: u16,
    lines: mpsc::Receiver<Vec<u8>>,
}

impl Served {
    fn start(data: &Path, log_format: &str) -> Served {
        let mut child = outcomes(data)
            .env("OUTCOMES_LOG_FORMAT", log_format)
            .arg("serve")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("outcomes serve starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stderr);
            loop {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if tx.send(line).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let mut served = Served {
            child,
            port: 0,
            lines,
        };
        // The service says where it listens; wait for that, with a deadline.
        let mut seen: Vec<Vec<u8>> = Vec::new();
        while served.port == 0 {
            let line = served
                .lines
                .recv_timeout(Duration::from_secs(120))
                .unwrap_or_else(|_| {
                    panic!(
                        "no `listening on` line within 120 s: {}",
                        String::from_utf8_lossy(&seen.concat())
                    )
                });
            let text = String::from_utf8_lossy(&line).into_owned();
            if let Some(rest) = text.split("listening on http://127.0.0.1:").nth(1) {
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                served.port = digits.parse().expect("a port");
            }
            seen.push(line);
        }
        served
    }

    /// Sends one HTTP/1.1 request; the status and the body.
    fn request(
        &self,
        method: &str,
        target: &str,
        authorization: Option<&str>,
        body: Option<&str>,
    ) -> (u16, String) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("the service accepts");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("a read timeout");
        let mut head = format!(
            "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n",
            self.port
        );
        if let Some(value) = authorization {
            head.push_str(&format!("Authorization: {value}\r\n"));
        }
        let body = body.unwrap_or_default();
        if !body.is_empty() {
            head.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        head.push_str("\r\n");
        stream
            .write_all(format!("{head}{body}").as_bytes())
            .expect("the request is sent");
        let mut answer = String::new();
        stream
            .read_to_string(&mut answer)
            .expect("the answer is read");
        let status = answer
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let body = answer
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default();
        (status, body)
    }

    /// Stops the service; every line it wrote.
    fn stop(mut self) -> Vec<Vec<u8>> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.lines.iter().collect()
    }
}

fn basic(key: &str, secret: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{key}:{secret}"))
    )
}

/// The value of `name` in a query string.
fn query_value(url: &str, name: &str) -> String {
    url.split(['?', '&'])
        .find_map(|pair| pair.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("{name} in {url}"))
        .to_owned()
}

#[test]
fn json_lines_carry_the_request_and_no_secret_or_link() {
    let data = tempfile::tempdir().expect("a data folder");
    let secret = create_token(data.path(), "logs");
    let served = Served::start(data.path(), "json");
    let auth = basic("logs", &secret);
    let wrong = basic("logs", "wrong-secret-that-must-not-be-logged");

    assert_eq!(served.request("GET", "/livez", None, None).0, 200);
    let (status, _) = served.request(
        "GET",
        "/api/v1/dossiers/dossier-never-logged/responses",
        Some(&auth),
        None,
    );
    assert_eq!(status, 200);
    let answers = r#"{"questionnaire_key": "phq9", "external_id": "answers-1", "answer_data": {"v_1": "a3", "v_2": "a2"}}"#;
    let (status, _) = served.request(
        "POST",
        "/api/v1/dossiers/dossier-never-logged/responses",
        Some(&auth),
        Some(answers),
    );
    assert_eq!(status, 201);
    assert_eq!(
        served
            .request("GET", "/api/v1/protocols", Some(&wrong), None)
            .0,
        401
    );
    assert_eq!(
        served
            .request(
                "GET",
                "/api/v1/dossiers/dossier-never-logged/nothing",
                Some(&auth),
                None
            )
            .0,
        404
    );
    let session = r#"{"questionnaire_keys": ["phq9"], "return_to": "http://localhost:9/back"}"#;
    let (status, body) = served.request(
        "POST",
        "/api/v1/dossiers/dossier-never-logged/fill_out_sessions",
        Some(&auth),
        Some(session),
    );
    assert_eq!(status, 200, "{body}");
    let link: Value = serde_json::from_str(&body).expect("JSON");
    let link = link["fill_out_url"]
        .as_str()
        .expect("a fill_out_url")
        .to_owned();
    let target = link
        .split_once(&format!("127.0.0.1:{}", served.port))
        .map(|(_, t)| t.to_owned())
        .expect("a link to this service");
    // The respondent opens the link: the page with its button.
    assert_eq!(served.request("GET", &target, None, None).0, 200);
    let lines = served.stop();

    let never = [
        secret.clone(),
        "wrong-secret-that-must-not-be-logged".to_owned(),
        query_value(&link, "hmac"),
        query_value(&link, "nonce"),
        query_value(&link, "fill_out_session_key"),
        "dossier-never-logged".to_owned(),
        "answer_data".to_owned(),
        "fill_out_session_key".to_owned(),
    ];
    let mut answered = Vec::new();
    for line in &lines {
        assert!(
            !line.contains(&0x1b),
            "an escape code: {}",
            String::from_utf8_lossy(line)
        );
        let text = String::from_utf8_lossy(line);
        for word in &never {
            assert!(!text.contains(word.as_str()), "{word} logged: {text}");
        }
        let parsed: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
        if parsed["message"] == "answered" {
            answered.push(parsed);
        }
    }
    let line_of = |method: &str, route: &str, status: u16| -> &Value {
        answered
            .iter()
            .find(|l| {
                l["span"]["method"] == method
                    && l["span"]["route"] == route
                    && l["status"] == status
            })
            .unwrap_or_else(|| panic!("no line for {method} {route} {status}: {answered:#?}"))
    };
    for line in &answered {
        assert!(
            line["latency_ms"].as_f64().is_some_and(|ms| ms >= 0.0),
            "{line}"
        );
        assert!(
            line["span"]["request_id"]
                .as_str()
                .is_some_and(|id| !id.is_empty()),
            "{line}"
        );
        assert!(line["timestamp"].is_string(), "{line}");
    }
    assert!(line_of("GET", "/livez", 200)["span"].get("token").is_none());
    assert_eq!(
        line_of("GET", "/api/v1/dossiers/{dossier_id}/responses", 200)["span"]["token"],
        "logs"
    );
    assert_eq!(
        line_of("POST", "/api/v1/dossiers/{dossier_id}/responses", 201)["span"]["token"],
        "logs"
    );
    assert_eq!(
        line_of(
            "POST",
            "/api/v1/dossiers/{dossier_id}/fill_out_sessions",
            200
        )["span"]["token"],
        "logs"
    );
    // Wrong credentials name no token, not even the key they claimed.
    assert!(
        line_of("GET", "/api/v1/protocols", 401)["span"]
            .get("token")
            .is_none()
    );
    line_of("GET", "unmatched", 404);
    line_of("GET", "/fill_out/session/login", 200);
    assert_eq!(answered.len(), 7, "{answered:#?}");
}

#[test]
fn text_lines_to_a_pipe_have_no_colour_codes() {
    let data = tempfile::tempdir().expect("a data folder");
    let secret = create_token(data.path(), "logs");
    let served = Served::start(data.path(), "human");
    assert_eq!(served.request("GET", "/livez", None, None).0, 200);
    assert_eq!(
        served
            .request(
                "GET",
                "/api/v1/protocols",
                Some(&basic("logs", &secret)),
                None
            )
            .0,
        200
    );
    let text = String::from_utf8(served.stop().concat()).expect("UTF-8");
    assert!(!text.contains('\u{1b}'), "escape codes in: {text}");
    assert!(!text.contains(&secret));
    let answered: Vec<&str> = text.lines().filter(|l| l.contains("answered")).collect();
    assert_eq!(answered.len(), 2, "{text}");
    assert!(
        answered[1].contains(r#"route="/api/v1/protocols""#),
        "{text}"
    );
    assert!(answered[1].contains(r#"token="logs""#), "{text}");
    assert!(answered[1].contains("status=200"), "{text}");
}
