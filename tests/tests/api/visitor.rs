//! A respondent's browser without the browser, for HTTP-level tests of the
//! fill-out pages: it follows no redirect by itself and keeps the session
//! cookie the way a browser would (set, replaced, removed). No tests here.

use reqwest::header::{HeaderMap, LOCATION, SET_COOKIE};
use tests::{TestApp, json};

use crate::fill_out_sessions::{EPD, sessions};

/// One answer: status, headers, body, and where it redirects to.
#[derive(Debug)]
pub struct Page {
    pub status: u16,
    pub headers: HeaderMap,
    pub text: String,
}

impl Page {
    /// The `Location` of a redirect.
    pub fn location(&self) -> &str {
        self.headers
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("no Location in a {} answer: {}", self.status, self.text))
    }

    /// The header as text, or "".
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    /// The value of the form field `name` (a hidden input).
    pub fn field(&self, name: &str) -> String {
        let marker = format!("name=\"{name}\" value=\"");
        let start = self
            .text
            .find(&marker)
            .unwrap_or_else(|| panic!("no field {name} in {}", self.text))
            + marker.len();
        let end = self.text[start..].find('"').expect("a closing quote");
        self.text[start..start + end].to_owned()
    }

    /// The action of a link's start page (the one-time link's, or a
    /// `completing_url`'s) and the hidden fields its button posts.
    pub fn start_form(&self) -> (String, Vec<(String, String)>) {
        let marker = "<form method=\"post\" action=\"";
        let start = self
            .text
            .find(marker)
            .unwrap_or_else(|| panic!("no form in {}", self.text))
            + marker.len();
        let end = self.text[start..].find('"').expect("a closing quote");
        let action = self.text[start..start + end].to_owned();
        let names: &[&str] = if action == "/fill_out/session/login" {
            &["fill_out_session_key", "nonce", "timestamp", "hmac"]
        } else {
            assert!(action.starts_with("/fill_out/respondents/"), "{action}");
            &["expires", "generation", "token"]
        };
        let fields = names
            .iter()
            .map(|name| ((*name).to_owned(), self.field(name)))
            .collect();
        (action, fields)
    }

    /// Whether the radio button of `question` with `option` is chosen.
    pub fn is_checked(&self, question: &str, option: &str) -> bool {
        self.text
            .contains(&format!("name=\"{question}\" value=\"{option}\" checked"))
    }

    /// Asserts an HTML page with `status` that shows no form.
    pub fn assert_message(&self, status: u16, says: &str) {
        assert_eq!(self.status, status, "{}", self.text);
        assert_eq!(self.header("content-type"), "text/html; charset=utf-8");
        assert!(self.text.contains(says), "{says:?} in {}", self.text);
        assert!(!self.text.contains("<form"), "{}", self.text);
        assert!(
            self.header("content-security-policy")
                .starts_with("default-src 'none'"),
            "{:?}",
            self.headers
        );
    }
}

/// A browser's worth of state: its cookie.
#[derive(Debug)]
pub struct Visitor<'a> {
    /// The visitor starts at this app.
    app: std::marker::PhantomData<&'a TestApp>,
    /// The host the visitor's paths go to (the app's, unless another host
    /// of the same database takes over).
    pub base: String,
    client: reqwest::Client,
    pub cookie: Option<String>,
    pub accept_language: Option<&'static str>,
    /// Headers a browser adds to every request (`Origin`,
    /// `Sec-Fetch-Site`, ...).
    pub extra_headers: Vec<(&'static str, String)>,
}

impl<'a> Visitor<'a> {
    pub fn new(app: &'a TestApp) -> Visitor<'a> {
        Visitor {
            app: std::marker::PhantomData,
            base: app.base.clone(),
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("a client"),
            cookie: None,
            accept_language: None,
            extra_headers: Vec::new(),
        }
    }

    /// GET an absolute URL or a path of the app.
    pub async fn get(&mut self, url: &str) -> Page {
        let req = self.client.get(self.absolute(url));
        self.send(req).await
    }

    /// POST a form (`application/x-www-form-urlencoded`).
    pub async fn post_form(&mut self, url: &str, fields: &[(&str, &str)]) -> Page {
        let body: String = fields
            .iter()
            .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
            .collect::<Vec<_>>()
            .join("&");
        self.post_raw(url, body.into_bytes()).await
    }

    /// POST these bytes as a form.
    pub async fn post_raw(&mut self, url: &str, body: Vec<u8>) -> Page {
        let req = self
            .client
            .post(self.absolute(url))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        self.send(req).await
    }

    fn absolute(&self, url: &str) -> String {
        if url.starts_with("http") {
            url.to_owned()
        } else {
            format!("{}{url}", self.base)
        }
    }

    async fn send(&mut self, mut req: reqwest::RequestBuilder) -> Page {
        if let Some(cookie) = &self.cookie {
            req = req.header("cookie", format!("__Host-outcomes_fill_out={cookie}"));
        }
        if let Some(lang) = self.accept_language {
            req = req.header("accept-language", lang);
        }
        for (name, value) in &self.extra_headers {
            req = req.header(*name, value);
        }
        let res = req.send().await.expect("the host answers");
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        for set in headers.get_all(SET_COOKIE) {
            let set = set.to_str().unwrap_or_default();
            let value = set
                .strip_prefix("__Host-outcomes_fill_out=")
                .and_then(|rest| rest.split(';').next())
                .unwrap_or_default();
            self.cookie =
                (!value.is_empty() && !set.contains("Max-Age=0")).then(|| value.to_owned());
        }
        let text = res.text().await.unwrap_or_default();
        Page {
            status,
            headers,
            text,
        }
    }

    /// Uses a link as a respondent does: a one-time `fill_out_url` or a
    /// `completing_url`, whose GET shows a page with a button (and spends
    /// and opens nothing); the button posts the link's parts back. The
    /// answer to that POST; the GET's answer when it shows no such page (a
    /// refused link).
    pub async fn log_in(&mut self, link: &str) -> Page {
        let page = self.get(link).await;
        if page.status != 200 || !page.text.contains("<form method=\"post\"") {
            return page;
        }
        let (action, fields) = page.start_form();
        self.post_form(&action, &pairs(&fields)).await
    }

    /// [`Visitor::log_in`], then follows redirects within the app.
    pub async fn open(&mut self, link: &str) -> Page {
        let page = self.log_in(link).await;
        self.follow(page).await
    }

    /// GET, then follow redirects within the app.
    pub async fn go(&mut self, url: &str) -> Page {
        let first = self.get(url).await;
        self.follow(first).await
    }

    /// Follows redirects within the app (not to other origins), up to ten.
    pub async fn follow(&mut self, mut page: Page) -> Page {
        for _ in 0..10 {
            if page.status != 303 {
                return page;
            }
            let location = page.location().to_owned();
            if location.starts_with("http") && !location.starts_with(&self.base) {
                return page;
            }
            page = self.get(&location).await;
        }
        panic!("more than ten redirects");
    }
}

/// Percent-encoding of a form value.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            b' ' => "+".to_owned(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// Starts a session over the API: its `fill_out_url`.
pub async fn start(app: &TestApp, dossier: &str, body: serde_json::Value) -> String {
    let answer = app.post(&sessions(dossier), &body).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.body["fill_out_url"]
        .as_str()
        .expect("a fill_out_url")
        .to_owned()
}

/// Starts a session on `keys` that returns to the EPD, without a progress
/// page: its `fill_out_url`.
pub async fn start_blank(app: &TestApp, dossier: &str, keys: &[&str]) -> String {
    start(
        app,
        dossier,
        json!({"questionnaire_keys": keys, "return_to": format!("{EPD}/back")}),
    )
    .await
}

/// The answers a PHQ-9 page sends for items 1..=9 (and none for item 10).
pub fn phq9_form(csrf: &str, option: &str) -> Vec<(String, String)> {
    let mut fields = vec![
        ("csrf".to_owned(), csrf.to_owned()),
        ("action".to_owned(), "submit".to_owned()),
    ];
    for n in 1..=9 {
        fields.push((format!("v_{n}"), option.to_owned()));
    }
    fields
}

/// `&[(String, String)]` as `&[(&str, &str)]`.
pub fn pairs(fields: &[(String, String)]) -> Vec<(&str, &str)> {
    fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}
