//! A small WebDriver client driving headless Chromium (Debian's `chromium`
//! and `chromium-driver`), for tests of the fill-out pages in a real
//! browser: navigate, click, read, run a script, take a screenshot.
//!
//! `chromedriver` is found on the PATH, or at `OUTCOMES_TEST_CHROMEDRIVER`;
//! Chromium at `OUTCOMES_TEST_CHROMIUM`, else `/usr/bin/chromium`, else
//! wherever chromedriver looks. `cargo xtask test` installs both on Debian.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use base64::Engine;
use serde_json::{Value, json};

/// The W3C WebDriver key of an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// WebDriver's Tab key.
pub const KEY_TAB: &str = "\u{e004}";
/// WebDriver's Enter key.
pub const KEY_ENTER: &str = "\u{e007}";
/// WebDriver's right arrow key.
pub const KEY_RIGHT: &str = "\u{e014}";
/// WebDriver's left arrow key.
pub const KEY_LEFT: &str = "\u{e012}";
/// WebDriver's space key.
pub const KEY_SPACE: &str = "\u{e00d}";

/// A headless Chromium session; the driver process ends with it.
#[derive(Debug)]
pub struct Browser {
    driver: Child,
    /// `http://127.0.0.1:PORT/session/ID`
    session: String,
    client: reqwest::Client,
    _profile: tempfile::TempDir,
}

/// A failed WebDriver command, with what the driver said.
fn failed(command: &str, answer: &Value) -> ! {
    panic!("WebDriver {command} failed: {answer}")
}

impl Browser {
    /// Starts chromedriver and a headless Chromium that asks for pages in
    /// `accept_language` (e.g. `en` or `nl`).
    pub async fn start(accept_language: &str) -> Browser {
        let driver_path = std::env::var("OUTCOMES_TEST_CHROMEDRIVER")
            .unwrap_or_else(|_| "chromedriver".to_owned());
        let mut driver = Command::new(&driver_path)
            .arg("--port=0")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {driver_path} ({e}). The browser tests need Chromium and its WebDriver: \
                     `cargo xtask test` installs them on Debian (apt-get install chromium chromium-driver); \
                     elsewhere install them and set OUTCOMES_TEST_CHROMEDRIVER (and OUTCOMES_TEST_CHROMIUM)."
                )
            });
        // chromedriver says which port it took; no waiting on a clock.
        let stdout = driver.stdout.take().expect("chromedriver's output");
        let port = tokio::task::spawn_blocking(move || {
            let mut lines = BufReader::new(stdout).lines();
            let port = lines.by_ref().map_while(Result::ok).find_map(|line| {
                line.split("started successfully on port ")
                    .nth(1)
                    .and_then(|rest| rest.trim_end_matches('.').trim().parse::<u16>().ok())
            });
            // Keep draining, so the driver never blocks on a full pipe.
            std::thread::spawn(move || lines.for_each(drop));
            port
        })
        .await
        .expect("reading chromedriver's output")
        .expect("chromedriver to say its port");
        let profile = tempfile::tempdir().expect("a browser profile folder");
        let mut options = json!({
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-quic", "--no-first-run", "--hide-scrollbars",
                format!("--accept-lang={accept_language}"),
                format!("--user-data-dir={}", profile.path().display()),
            ],
            "prefs": {"intl.accept_languages": accept_language},
        });
        if let Some(binary) = chromium() {
            options["binary"] = json!(binary);
        }
        let client = reqwest::Client::new();
        let answer: Value = client
            .post(format!("http://127.0.0.1:{port}/session"))
            // The console's messages (CSP violations among them) are kept
            // for `console`.
            .json(&json!({"capabilities": {"alwaysMatch": {
                "goog:chromeOptions": options,
                "goog:loggingPrefs": {"browser": "ALL"},
            }}}))
            .send()
            .await
            .expect("chromedriver answers")
            .json()
            .await
            .expect("JSON from chromedriver");
        let id = answer["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| failed("new session", &answer));
        Browser {
            driver,
            session: format!("http://127.0.0.1:{port}/session/{id}"),
            client,
            _profile: profile,
        }
    }

    async fn command(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        self.try_command(method, path, body)
            .await
            .unwrap_or_else(|answer| failed(path, &answer))
    }

    /// A command; the driver's answer when it fails.
    async fn try_command(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, Value> {
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.session));
        if let Some(body) = body {
            req = req.json(&body);
        }
        let answer: Value = req
            .send()
            .await
            .expect("chromedriver answers")
            .json()
            .await
            .expect("JSON from chromedriver");
        if answer["value"]["error"].is_string() {
            return Err(answer);
        }
        Ok(answer["value"].clone())
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        self.command(reqwest::Method::POST, path, Some(body)).await
    }

    async fn get(&self, path: &str) -> Value {
        self.command(reqwest::Method::GET, path, None).await
    }

    /// Opens `url` and waits for it to load.
    pub async fn goto(&self, url: &str) {
        self.post("/url", json!({"url": url})).await;
    }

    /// The URL of the page shown.
    pub async fn url(&self) -> String {
        self.get("/url")
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// The page's HTML as the browser has it.
    pub async fn source(&self) -> String {
        self.get("/source")
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    async fn element(&self, css: &str) -> String {
        let found = self
            .post("/element", json!({"using": "css selector", "value": css}))
            .await;
        found[ELEMENT]
            .as_str()
            .unwrap_or_else(|| failed(&format!("find {css}"), &found))
            .to_owned()
    }

    /// How many elements match `css`.
    pub async fn count(&self, css: &str) -> usize {
        self.post("/elements", json!({"using": "css selector", "value": css}))
            .await
            .as_array()
            .map_or(0, Vec::len)
    }

    /// Clicks the element `css` (and waits for a page it loads).
    pub async fn click(&self, css: &str) {
        let id = self.element(css).await;
        self.post(&format!("/element/{id}/click"), json!({})).await;
    }

    /// Types `text` into the element `css` (a text field), after what it
    /// holds.
    pub async fn type_into(&self, css: &str, text: &str) {
        let id = self.element(css).await;
        self.post(&format!("/element/{id}/value"), json!({"text": text}))
            .await;
    }

    /// Empties the element `css` (a text field).
    pub async fn clear(&self, css: &str) {
        let id = self.element(css).await;
        self.post(&format!("/element/{id}/clear"), json!({})).await;
    }

    /// Presses and releases each key in turn, on whatever has the focus:
    /// a character, or a WebDriver key such as [`KEY_TAB`].
    pub async fn press(&self, keys: &[&str]) {
        let actions: Vec<Value> = keys
            .iter()
            .flat_map(|k| {
                [
                    json!({"type": "keyDown", "value": k}),
                    json!({"type": "keyUp", "value": k}),
                ]
            })
            .collect();
        self.post(
            "/actions",
            json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]}),
        )
        .await;
    }

    /// `name=value` of the element that has the focus.
    pub async fn focused(&self) -> String {
        self.execute(
            "const e = document.activeElement; return (e.name || e.tagName) + '=' + (e.value || '');",
            json!([]),
        )
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
    }

    /// Clicks the element `css`, which leaves the page (a link, a submit
    /// button), and returns once the next page has loaded.
    pub async fn click_to_leave(&self, css: &str) {
        self.leave(|| self.click(css), css).await;
    }

    /// Presses `keys`, the last of which leaves the page (Enter in a
    /// form), and returns once the next page has loaded.
    pub async fn press_to_leave(&self, keys: &[&str]) {
        self.leave(|| self.press(keys), "keys").await;
    }

    /// Does `act`, which leaves the page, and returns once the next page
    /// has loaded. The action may return before the browser has even
    /// started to leave; the document's time origin tells the pages apart.
    async fn leave<F: std::future::Future<Output = ()>>(
        &self,
        act: impl FnOnce() -> F,
        what: &str,
    ) {
        const SCRIPT: &str =
            "return document.readyState === 'complete' ? performance.timeOrigin : null;";
        let before = self.execute(SCRIPT, json!([])).await;
        act().await;
        let started = std::time::Instant::now();
        loop {
            // Between two documents the script may fail: not loaded yet.
            let now = self
                .try_command(
                    reqwest::Method::POST,
                    "/execute/sync",
                    Some(json!({"script": SCRIPT, "args": []})),
                )
                .await
                .unwrap_or(Value::Null);
            if now.is_number() && now != before {
                return;
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(30),
                "no new page 30 s after {what}"
            );
            tokio::task::yield_now().await;
        }
    }

    /// The visible text of the element `css`.
    pub async fn text(&self, css: &str) -> String {
        let id = self.element(css).await;
        self.get(&format!("/element/{id}/text"))
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Whether the radio button or checkbox `css` is chosen.
    pub async fn is_selected(&self, css: &str) -> bool {
        let id = self.element(css).await;
        self.get(&format!("/element/{id}/selected")).await == json!(true)
    }

    /// Runs `script` as a function body with `args`; its return value.
    pub async fn execute(&self, script: &str, args: Value) -> Value {
        self.post("/execute/sync", json!({"script": script, "args": args}))
            .await
    }

    /// Runs `script`, which calls its last argument with the result.
    pub async fn execute_async(&self, script: &str, args: Value) -> Value {
        self.post("/execute/async", json!({"script": script, "args": args}))
            .await
    }

    /// The browser console's messages since the last call: level
    /// (`SEVERE`, `WARNING`, `INFO`, ...) and text. Chromium reports a
    /// Content-Security-Policy violation and a failed load here.
    pub async fn console(&self) -> Vec<(String, String)> {
        let entries = self.post("/se/log", json!({"type": "browser"})).await;
        entries
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| {
                (
                    e["level"].as_str().unwrap_or_default().to_owned(),
                    e["message"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    }

    /// Whether the page scrolls sideways at a window of `width` by
    /// `height` (its content wider than the window).
    pub async fn scrolls_sideways(&self, width: u32, height: u32) -> bool {
        self.post("/window/rect", json!({"width": width, "height": height}))
            .await;
        self.execute(
            "return document.documentElement.scrollWidth > document.documentElement.clientWidth;",
            json!([]),
        )
        .await
            == json!(true)
    }

    /// Resizes the window to `width` and the page's full height (at most
    /// 4,000 pixels), and saves a screenshot as PNG at `path`.
    pub async fn screenshot(&self, width: u32, path: &Path) {
        self.post("/window/rect", json!({"width": width, "height": 800}))
            .await;
        let height = self
            .execute("return document.documentElement.scrollHeight;", json!([]))
            .await
            .as_u64()
            .unwrap_or(800)
            .clamp(400, 4000);
        self.post("/window/rect", json!({"width": width, "height": height}))
            .await;
        let png = self.get("/screenshot").await;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap_or_default())
            .expect("a base64 PNG");
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("the screenshot folder");
        }
        std::fs::write(path, bytes).expect("the screenshot is written");
    }
}

impl Drop for Browser {
    /// A test that failed midway still ends Chromium: the driver closes the
    /// browser when its session is deleted (a plain blocking request, as
    /// drop cannot wait), then the driver goes.
    fn drop(&mut self) {
        use std::io::Write;
        if let Some((address, path)) = self
            .session
            .strip_prefix("http://")
            .and_then(|rest| rest.split_once('/'))
            && let Ok(mut stream) = std::net::TcpStream::connect(address)
        {
            let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
            let _ = write!(
                stream,
                "DELETE /{path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
            );
            let _ = std::io::Read::read(&mut stream, &mut [0u8; 256]);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn chromium() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("OUTCOMES_TEST_CHROMIUM") {
        return Some(path.into());
    }
    let debian = PathBuf::from("/usr/bin/chromium");
    debian.exists().then_some(debian)
}
