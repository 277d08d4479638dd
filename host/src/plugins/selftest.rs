//! The self-test a plugin passes before it may serve: its own golden
//! fixtures (`fixtures/*.json` beside the module), run through wasm under
//! its production limits and compared with plugin-sdk's fixture rules, the
//! same rules `cargo test` applies natively.

use std::path::Path;

use plugin_sdk::testing::{self, Fixture};

use super::call::Call;
use super::module::Plugin;

/// One fixture's run.
#[derive(Debug)]
pub struct FixtureRun {
    pub fixture: Fixture,
    /// The input JSON the plugin was called with.
    pub input: Vec<u8>,
    pub call: Call<Vec<u8>>,
    /// `None` when it passed; otherwise why not.
    pub failure: Option<String>,
}

/// Runs one fixture.
pub fn run(plugin: &Plugin, fixture: Fixture) -> FixtureRun {
    // The input as the service would send it: without what the plugin's
    // manifest declines.
    let mut input = fixture.input.clone();
    plugin.manifest.decline(&mut input);
    let input = serde_json::to_vec(&input).unwrap_or_default();
    let call = plugin.invoke_raw(&input);
    let failure = match &call.result {
        Ok(reply) => testing::check(&fixture, reply).err().map(|m| m.to_string()),
        Err(e) => Some(e.to_string()),
    };
    FixtureRun {
        fixture,
        input,
        call,
        failure,
    }
}

/// Runs every fixture in `dir`; `Ok(n)` when all `n` pass (0 when the
/// plugin ships none), otherwise the first failures, one line each.
pub fn self_test(plugin: &Plugin, dir: &Path) -> Result<usize, String> {
    if !dir.is_dir() {
        return Ok(0);
    }
    let fixtures = testing::load_dir(dir).map_err(|e| e.to_string())?;
    let n = fixtures.len();
    let failures: Vec<String> = fixtures
        .into_iter()
        .map(|f| run(plugin, f))
        .filter_map(|r| {
            r.failure
                .map(|why| format!("fixture {}: {why}", r.fixture.name))
        })
        .collect();
    if failures.is_empty() {
        Ok(n)
    } else {
        Err(format!("self-test failed: {}", failures.join("; ")))
    }
}
