//! README.md's "Try it" section, run as a new user runs it, so that its
//! examples cannot rot: every command of the section's ```sh blocks, read
//! from README.md when the test runs, goes to bash against the built
//! `outcomes` binary serving on a port of its own, with a data folder and
//! a database of the test's own. Each must exit 0 and print what the
//! README says it prints; a command this test does not know fails it until
//! it says what that command prints.
//!
//! What the test adapts, and why:
//! - `cargo run -q -p host --bin outcomes --` becomes this build's binary
//!   ([`outcomes_binary`]), with `OUTCOMES_DATABASE_URL` and
//!   `OUTCOMES_DATA_DIR` in its environment naming the service's database
//!   and data folder (the README's service keeps both in `./data`, the
//!   default, which a test must not touch);
//! - `http://127.0.0.1:8080` becomes the service's address, and
//!   `http://127.0.0.1:9187` (where /metrics is served) its metrics
//!   listener's;
//! - `SECRET=...` takes the `consumer_secret` that `token create` printed;
//! - the service runs with its own address in `--allowed-origins`, as the
//!   section says to for the fill-out session;
//! - after `token create` the test waits until the service accepts the
//!   token (a condition, not a sleep): the README says a new token is
//!   usable within two seconds, as the service reloads tokens that often;
//!   the bound is looser, for a busy machine.
//!
//! No command waits for time: the scheduler's work the section shows is
//! what subscribing does at once (the first measurement prepared), so the
//! service runs with the README's default `--scheduler-interval`, and its
//! real clock.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use tests::processes::{ServeProcess, outcomes_binary, wait_until};
use tests::{Db, ScratchDatabase, basic, json, repo_root};

/// What the README writes for the `outcomes` binary.
const CARGO_RUN: &str = "cargo run -q -p host --bin outcomes --";
/// The address the README's service listens at.
const README_ADDRESS: &str = "http://127.0.0.1:8080";
/// The address the README's service serves /metrics at (the default
/// `metrics_listen`).
const README_METRICS_ADDRESS: &str = "http://127.0.0.1:9187";

/// The commands of the ```sh blocks in README.md's "Try it" section, in
/// order. A command is one line, or several joined by a trailing `\` or
/// by a quoted string that spans lines; lines that are only a comment are
/// left out (bash drops comments after a command itself).
fn try_it_commands(readme: &str) -> Vec<String> {
    let section = readme
        .split("\n## ")
        .find(|s| s.starts_with("Try it\n"))
        .expect("README.md has a \"## Try it\" section");
    let mut commands = Vec::new();
    let mut current = String::new();
    let mut in_block = false;
    let mut quote: Option<char> = None;
    for line in section.lines() {
        if !in_block {
            in_block = line.trim() == "```sh";
            continue;
        }
        if current.is_empty() {
            if line.trim() == "```" {
                in_block = false;
                continue;
            }
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
        }
        current.push_str(line);
        current.push('\n');
        quote = scan_quotes(line, quote);
        if quote.is_none() && !line.ends_with('\\') {
            commands.push(current.trim_end().to_owned());
            current.clear();
        }
    }
    assert!(
        current.is_empty() && !in_block,
        "a command or block of README.md's Try it does not end: {current}"
    );
    commands
}

/// The quote still open at the end of `line`, given the one open at its
/// start: bash's single quotes (no escapes inside), double quotes
/// (backslash escapes) and comments (`#` after a blank, outside quotes).
fn scan_quotes(line: &str, mut quote: Option<char>) -> Option<char> {
    let mut escaped = false;
    let mut previous = ' ';
    for c in line.chars() {
        match quote {
            _ if escaped => escaped = false,
            Some('\'') if c == '\'' => quote = None,
            Some('\'') => {}
            Some(_) if c == '\\' => escaped = true,
            Some(_) if c == '"' => quote = None,
            Some(_) => {}
            None if c == '\\' => escaped = true,
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '#' && previous.is_whitespace() => break,
            None => {}
        }
        previous = c;
    }
    quote
}

/// What a command of the section is.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// `outcomes` with these arguments (the part after the binary).
    Outcomes(String),
    /// `SECRET=...`: the secret `token create` printed.
    Secret,
    /// `curl` with this method and path (no query).
    Curl { method: String, path: String },
}

fn step(command: &str) -> Step {
    if let Some(args) = command.strip_prefix(CARGO_RUN) {
        return Step::Outcomes(args.trim().to_owned());
    }
    if command.starts_with("SECRET=...") {
        return Step::Secret;
    }
    assert!(
        command.starts_with("curl "),
        "README.md's Try it runs something this test does not know: {command}"
    );
    let words: Vec<&str> = command.split_whitespace().collect();
    let method = words
        .iter()
        .position(|w| *w == "-X")
        .and_then(|i| words.get(i + 1))
        .map_or("GET", |m| m);
    let (at, address) = [README_ADDRESS, README_METRICS_ADDRESS]
        .into_iter()
        .find_map(|address| Some((command.find(address)?, address)))
        .unwrap_or_else(|| panic!("a curl command without {README_ADDRESS}: {command}"));
    let path: String = command[at + address.len()..]
        .chars()
        .take_while(|c| !matches!(c, '?' | '\'' | '"' | ' ' | '\n'))
        .collect();
    Step::Curl {
        method: method.to_owned(),
        path,
    }
}

/// What one command printed.
#[derive(Debug)]
struct Ran {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// Runs `command` with bash in `dir`, with `env` and no other `OUTCOMES_*`
/// variable.
async fn bash(command: &str, dir: &Path, env: &HashMap<&str, String>) -> Ran {
    let mut bash = Command::new("bash");
    bash.arg("-c").arg(command).current_dir(dir);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("OUTCOMES_") {
            bash.env_remove(key);
        }
    }
    bash.envs(env).env("NO_COLOR", "1");
    let output = tokio::task::spawn_blocking(move || bash.output())
        .await
        .expect("joins")
        .expect("bash runs (this test needs bash and curl)");
    Ran {
        ok: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The JSON a command printed; never an error body.
fn json_of(command: &str, ran: &Ran) -> Value {
    let value: Value = serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("{command}\nprinted no JSON ({e}): {:?}", ran.stdout));
    assert!(
        value.get("errors").is_none(),
        "{command}\nanswered an error: {value}"
    );
    value
}

/// Checks that `ran` printed what README.md says `step` prints; the secret
/// it printed, for `token create`.
fn check(command: &str, step: &Step, ran: &Ran, base: &str) -> Option<String> {
    let json = || json_of(command, ran);
    let total = |response: &Value| response["outcome"]["scores"]["total"].clone();
    match step {
        Step::Outcomes(args) if args.starts_with("token create") => {
            let secret = ran
                .stdout
                .lines()
                .find_map(|line| line.strip_prefix("consumer_secret:"))
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| panic!("{command}\nprinted no consumer_secret: {}", ran.stdout));
            return Some(secret);
        }
        Step::Outcomes(args) if args.starts_with("access-log --dossier patient-1") => {
            // The POST and the list of the dossier, by the demo token.
            let rows: Vec<&str> = ran.stdout.lines().collect();
            for (status, action) in [(" 201 ", "POST "), (" 200 ", "GET ")] {
                assert!(
                    rows.iter().any(|r| r.contains(status)
                        && r.contains(action)
                        && r.contains("/responses")
                        && r.contains(" demo ")),
                    "{command}\nno {status}{action}row: {}",
                    ran.stdout
                );
            }
        }
        Step::Outcomes(args) => {
            panic!("README.md's Try it runs `outcomes {args}`: say here what it prints")
        }
        Step::Secret => {}
        Step::Curl { method, path } => match (method.as_str(), path.as_str()) {
            ("GET", "/health") => assert_eq!(json()["status"], "ok", "{command}"),
            ("POST", "/api/v1/dossiers/patient-1/responses") => {
                // The outcome the PHQ-9 scorer computed: 1+2+0+1+0+0+1+0+0.
                let posted = json();
                let total = total(&posted);
                assert_eq!(total["value"], 5.0, "{posted}");
                assert_eq!(total["interpretation"], "mild", "{posted}");
                assert!(total["tscore"].is_number(), "{posted}");
                // Item 9 answered "not at all": no alarm.
                assert_eq!(posted["outcome"]["alarm"], json!([]), "{posted}");
            }
            ("GET", "/api/v1/dossiers/patient-1/responses") => {
                let list = json();
                let listed = list
                    .as_array()
                    .and_then(|l| l.iter().find(|r| r["external_id"] == "epd-42"));
                assert_eq!(
                    listed.map(|r| total(r)["value"].clone()),
                    Some(5.0.into()),
                    "{list}"
                );
            }
            ("GET", "/api/v1/questionnaires/phq9") => {
                let wrapped = json();
                let questionnaire = &wrapped["questionnaire"];
                assert_eq!(questionnaire["key"], "phq9", "{wrapped}");
                assert!(questionnaire["questions"]["v_1"].is_object(), "{wrapped}");
            }
            ("GET", "/api/v1/dossiers/patient-1/report_calculations") => {
                let report = json();
                let series = &report["results"]["series"][0];
                assert_eq!(series["questionnaire_key"], "phq9", "{report}");
                assert_eq!(series["points"][0]["value"], 5.0, "{report}");
            }
            ("GET", "/api/v1/plugins") => {
                let plugins = json();
                let phq9 = plugins["plugins"]
                    .as_array()
                    .and_then(|p| p.iter().find(|p| p["folder"] == "phq9"));
                assert_eq!(
                    phq9.map(|p| p["state"].clone()),
                    Some("serving".into()),
                    "{plugins}"
                );
            }
            ("GET", "/metrics") => assert!(
                ran.stdout.contains("\noutcomes_http_requests_total{"),
                "{command}\n{}",
                ran.stdout
            ),
            ("POST", "/api/v1/dossiers/patient-1/protocol_subscriptions") => {
                // The first measurement, prepared at once: PHQ-9 and GAD-7.
                let made = json();
                assert_eq!(made["protocol_key"], "rom_monthly", "{made}");
                let mut prepared: Vec<&str> = made["responses"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r["questionnaire_key"].as_str())
                    .collect();
                prepared.sort_unstable();
                assert_eq!(prepared, ["gad7", "phq9"], "{made}");
            }
            ("GET", "/api/v1/dossiers/patient-1/protocol_subscriptions") => {
                let list = json();
                assert_eq!(list[0]["protocol_key"], "rom_monthly", "{list}");
            }
            ("GET", "/api/v1/dossier/patient-1/stats") => {
                let stats = json();
                let counts = &stats["patient-1"];
                assert_eq!(counts["responses"]["completed"], 1, "{stats}");
                assert_eq!(counts["responses"]["pending"], 2, "{stats}");
                assert_eq!(counts["protocol_subscriptions"]["total"], 1, "{stats}");
            }
            ("GET", "/api/v1/dossiers/patient-1/non_responses") => {
                // Nothing has expired unanswered yet.
                assert_eq!(json(), json!([]), "{command}");
            }
            ("POST", "/api/v1/dossiers/patient-1/fill_out_requests") => {
                // The request, with the link that opens it for the patient.
                let made = json();
                assert!(made["id"].is_number(), "{made}");
                let url = made["completing_url"].as_str().unwrap_or_default();
                assert!(url.starts_with(&format!("{base}/fill_out/")), "{made}");
            }
            ("POST", "/api/v1/dossiers/patient-1/fill_out_sessions") => {
                let made = json();
                let url = made["fill_out_url"].as_str().unwrap_or_default();
                assert!(url.starts_with(base), "{made}");
            }
            (method, path) => {
                panic!("README.md's Try it sends {method} {path}: say here what it prints")
            }
        },
    }
    None
}

async fn the_try_it_commands_run_and_print_what_the_readme_says(db: Db) {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let commands = try_it_commands(&readme);
    assert!(
        commands.iter().any(|c| c.starts_with(CARGO_RUN)),
        "the section runs the binary as `{CARGO_RUN}`: {commands:#?}"
    );
    let dir = tempfile::tempdir().expect("a scratch folder");
    let data = dir.path().join("data");
    let database = ScratchDatabase::create(db, &data).await;
    std::fs::create_dir_all(&data).expect("the data folder");
    // The address is known only once the host runs: it allows its own.
    let port = tests::processes::free_port();
    let base = format!("http://127.0.0.1:{port}");
    let host = ServeProcess::start_on(
        port,
        &database.url,
        &data,
        &["--allowed-origins".to_owned(), base.clone()],
    )
    .await;
    let binary = format!("'{}'", outcomes_binary().display());
    let mut env: HashMap<&str, String> = HashMap::new();
    env.insert("OUTCOMES_DATABASE_URL", database.url.clone());
    env.insert("OUTCOMES_DATA_DIR", data.display().to_string());
    let mut secret = None;
    for command in &commands {
        let step = step(command);
        if step == Step::Secret {
            let value = secret
                .clone()
                .expect("`token create` comes before `SECRET=...`");
            env.insert("SECRET", value);
            continue;
        }
        let runnable = command
            .replace(CARGO_RUN, &binary)
            .replace(README_ADDRESS, &host.base)
            .replace(README_METRICS_ADDRESS, &host.metrics_base);
        let ran = bash(&runnable, dir.path(), &env).await;
        assert!(
            ran.ok,
            "{runnable}\nfailed: {}\n{}",
            ran.stderr,
            host.log_tail()
        );
        if let Some(printed) = check(command, &step, &ran, &host.base) {
            // Usable within two seconds, says the README.
            let client = tests::reqwest::Client::new();
            let authorization = basic("demo", &printed);
            let url = format!("{}/api/v1/plugins", host.base);
            wait_until(
                Duration::from_secs(10),
                "the service accepts the new token",
                || {
                    let request = client
                        .get(&url)
                        .header("authorization", &authorization)
                        .send();
                    async move { request.await.is_ok_and(|r| r.status() == 200) }
                },
            )
            .await;
            secret = Some(printed);
        }
    }
}

mod the_try_it_commands_run_and_print_what_the_readme_says {
    #[tokio::test]
    async fn sqlite() {
        super::the_try_it_commands_run_and_print_what_the_readme_says(tests::Db::Sqlite).await;
    }

    #[tokio::test]
    async fn postgres() {
        super::the_try_it_commands_run_and_print_what_the_readme_says(tests::Db::Postgres).await;
    }
}

#[test]
fn commands_are_read_whole_and_comments_left_out() {
    let readme = "# T\n\n## Try it\n\n```sh\n# a comment\ncurl -s http://127.0.0.1:8080/x \\\n  -d '{\"a\":\n  1}'   # it's this\nSECRET=...   # the secret\n\necho \"a \\\" b\n c\"\n```\n\n## Next\n\n```sh\nnot this\n```\n";
    assert_eq!(
        try_it_commands(readme),
        [
            "curl -s http://127.0.0.1:8080/x \\\n  -d '{\"a\":\n  1}'   # it's this",
            "SECRET=...   # the secret",
            "echo \"a \\\" b\n c\"",
        ]
    );
    assert_eq!(
        step("curl -s -u k:s -X POST http://127.0.0.1:8080/api/v1/x?y=1 \\\n -d '{}'"),
        Step::Curl {
            method: "POST".into(),
            path: "/api/v1/x".into()
        }
    );
}
