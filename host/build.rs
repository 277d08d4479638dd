//! Records which commit the binary was built from, for `build_info`
//! (host/src/build_info.rs). `OUTCOMES_COMMIT` wins (an image build from a
//! tarball has no `.git`); otherwise `git rev-parse`; otherwise "unknown".

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=OUTCOMES_COMMIT");
    let commit = std::env::var("OUTCOMES_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_owned());
    // A new commit or checkout appends to the reflog of HEAD; rebuilding
    // then keeps the recorded commit true.
    if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={git_dir}/logs/HEAD");
        println!("cargo:rerun-if-changed={git_dir}/HEAD");
    }
    println!("cargo:rustc-env=OUTCOMES_COMMIT={}", commit.trim());
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
}
