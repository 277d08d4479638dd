//! The OpenAPI document against the service it describes: Schemathesis
//! (from PyPI, pinned in `tests/contract/requirements.txt`; `cargo xtask
//! test` installs it) reads `/api/v1/openapi.json` of a real host, makes
//! requests the document calls valid and invalid, follows its links, and
//! runs every check it has (`--checks all`): no server error, no answer
//! outside the document, no valid request refused, no invalid one
//! accepted. A bounded number of examples per operation, from a fixed
//! seed, keeps the run short and repeatable. `tests/contract/schemathesis.toml`
//! names what the document cannot state, operation by operation.

use std::path::PathBuf;
use std::process::Stdio;

use host::config::Config;
use tests::{Db, TEST_KEY, TestApp, db_test};

/// Examples per operation and phase: enough to reach every parameter's
/// edges, few enough that both databases take a minute or two.
const EXAMPLES: &str = "15";
/// Fixed, so a failure repeats with the same requests.
const SEED: &str = "30";

/// The host with rate limits off: Schemathesis sends a thousand requests,
/// many without credentials, from one address.
async fn spawn_unlimited(db: Db) -> TestApp {
    TestApp::spawn_with(db, |config: &mut Config| {
        config.anonymous_limit = None;
        config.token_limit = None;
    })
    .await
}

/// The Schemathesis program: `OUTCOMES_TEST_SCHEMATHESIS` (what `cargo
/// xtask test` installs), else `schemathesis` on the PATH.
fn schemathesis() -> PathBuf {
    std::env::var_os("OUTCOMES_TEST_SCHEMATHESIS")
        .map_or_else(|| PathBuf::from("schemathesis"), PathBuf::from)
}

db_test!(
    async fn the_service_does_what_its_openapi_document_says(app: spawn_unlimited) {
        let work = tempfile::tempdir().expect("a folder for the run");
        let config = tests::repo_root().join("tests/contract/schemathesis.toml");
        let mut command = std::process::Command::new(schemathesis());
        command
            .arg("--config-file")
            .arg(&config)
            .args(["--no-color", "run"])
            .arg(app.url("/api/v1/openapi.json"))
            .args([
                "--checks",
                "all",
                "--max-examples",
                EXAMPLES,
                "--seed",
                SEED,
            ])
            .args(["--workers", "1", "--generation-database", "none"])
            .arg("--auth")
            .arg(format!("{TEST_KEY}:{}", app.secret))
            // How to send an NDJSON body (the import's).
            .env(
                "SCHEMATHESIS_HOOKS",
                tests::repo_root().join("tests/contract/hooks.py"),
            )
            // Its reports and caches go to a folder of the test's own.
            .current_dir(work.path())
            .stdin(Stdio::null());
        // On a thread of its own: the host serves on this test's runtime.
        let run = tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("the run's thread")
        .unwrap_or_else(|e| {
            panic!(
                "Schemathesis could not be started ({e}): run the tests with `cargo xtask test`, \
                 which installs it, or set OUTCOMES_TEST_SCHEMATHESIS to its program"
            )
        });
        let stdout = String::from_utf8_lossy(&run.stdout);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(
            run.status.success(),
            "Schemathesis found failures ({}):\n{stdout}\n{stderr}",
            run.status
        );
        // It ran, and ran checks: the summary names the operations tested.
        assert!(
            stdout.contains("passed") && !stdout.contains("No operations"),
            "Schemathesis tested nothing:\n{stdout}\n{stderr}"
        );
    }
);
