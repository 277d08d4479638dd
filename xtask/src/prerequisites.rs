//! What the tasks need on the machine, checked (and where it can be done
//! safely, installed) before they start.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, bail};

/// The workspace root (the parent of this crate's folder).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// Makes sure the WebAssembly target that plugins build for is installed.
/// rust-toolchain.toml asks rustup for it; this covers toolchains where the
/// file was not honoured.
pub fn wasm_target() -> anyhow::Result<()> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .current_dir(workspace_root())
        .output();
    match installed {
        Ok(out)
            if String::from_utf8_lossy(&out.stdout)
                .lines()
                .any(|l| l.trim() == WASM_TARGET) =>
        {
            Ok(())
        }
        Ok(_) => {
            eprintln!("xtask: installing the {WASM_TARGET} target with rustup");
            let status = Command::new("rustup")
                .args(["target", "add", WASM_TARGET])
                .current_dir(workspace_root())
                .status()?;
            anyhow::ensure!(
                status.success(),
                "`rustup target add {WASM_TARGET}` failed; run it by hand and try again"
            );
            Ok(())
        }
        Err(_) => {
            let sysroot = Command::new("rustc")
                .args(["--print", "sysroot"])
                .output()
                .context("running rustc")?;
            let sysroot = String::from_utf8_lossy(&sysroot.stdout).trim().to_owned();
            if Path::new(&sysroot)
                .join("lib/rustlib")
                .join(WASM_TARGET)
                .exists()
            {
                Ok(())
            } else {
                bail!(
                    "the {WASM_TARGET} target is missing and rustup is not installed: install Rust with rustup (https://rustup.rs) or add the target to your toolchain"
                )
            }
        }
    }
}

/// The PostgreSQL server the tests use (`OUTCOMES_TEST_POSTGRES_URL`, default
/// 127.0.0.1:5432). If it does not answer and this is a Debian machine with a
/// local cluster, starts that cluster.
pub fn postgres() -> anyhow::Result<()> {
    let url = std::env::var("OUTCOMES_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    postgres_at(&url)
}

/// The PostgreSQL server of `url`; as [`postgres`].
pub fn postgres_at(url: &str) -> anyhow::Result<()> {
    let address = host_port(url).with_context(|| format!("reading host and port from {url}"))?;
    if reachable(&address) {
        return Ok(());
    }
    if let Some(version) = debian_cluster() {
        eprintln!(
            "xtask: PostgreSQL does not answer at {address}; starting the local cluster {version}/main"
        );
        let status = Command::new("pg_ctlcluster")
            .args(["--skip-systemctl-redirect", &version, "main", "start"])
            .status()
            .context("running pg_ctlcluster")?;
        if status.success()
            && (0..50).any(|_| reachable(&address) || wait(Duration::from_millis(200)))
        {
            return Ok(());
        }
    }
    bail!(
        "PostgreSQL does not answer at {address}. The tests run on SQLite and on PostgreSQL: start a PostgreSQL \
         server there (trust authentication for user postgres; on Debian: \
         pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start), \
         or point OUTCOMES_TEST_POSTGRES_URL at one where the user may create databases."
    )
}

/// Headless Chromium and its WebDriver, for the browser tests of the
/// fill-out pages. On a Debian machine where we are root, installs Debian's
/// `chromium` and `chromium-driver`; elsewhere says what to install.
pub fn browser() -> anyhow::Result<()> {
    if let Ok(driver) = std::env::var("OUTCOMES_TEST_CHROMEDRIVER") {
        anyhow::ensure!(
            Path::new(&driver).exists(),
            "OUTCOMES_TEST_CHROMEDRIVER names {driver}, which does not exist"
        );
        return Ok(());
    }
    let works = || {
        Command::new("chromedriver")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if works() {
        return Ok(());
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if root && Path::new("/usr/bin/apt-get").exists() {
        eprintln!(
            "xtask: installing Chromium and its WebDriver for the browser tests (apt-get install chromium chromium-driver)"
        );
        let install = || {
            Command::new("apt-get")
                .args([
                    "install",
                    "-y",
                    "-q",
                    "--no-install-recommends",
                    "chromium",
                    "chromium-driver",
                ])
                .env("DEBIAN_FRONTEND", "noninteractive")
                .status()
                .is_ok_and(|s| s.success())
        };
        // A fresh machine may not know the packages until it updates.
        let updated_and_installed = || {
            Command::new("apt-get")
                .args(["update", "-q"])
                .status()
                .is_ok_and(|s| s.success())
                && install()
        };
        if (install() || updated_and_installed()) && works() {
            return Ok(());
        }
    }
    bail!(
        "the browser tests need headless Chromium and chromedriver: on Debian or Ubuntu \
         `apt-get install chromium chromium-driver` (as root); elsewhere install Chromium and a matching \
         chromedriver and set OUTCOMES_TEST_CHROMEDRIVER (and OUTCOMES_TEST_CHROMIUM to the browser)"
    )
}

/// `promtool`, the Prometheus parser and linter the metrics tests check
/// `/metrics` with (tests/tests/api/metrics_scrape.rs). On a Debian machine
/// where we are root, installs Debian's `prometheus` package (which also
/// ships a server; nothing starts it here); elsewhere says what to install.
pub fn promtool() -> anyhow::Result<()> {
    let works = || {
        Command::new("promtool")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if works() {
        return Ok(());
    }
    eprintln!("xtask: installing promtool for the metrics tests (apt-get install prometheus)");
    if apt_install(&["prometheus"]) && works() {
        return Ok(());
    }
    bail!(
        "the metrics tests need promtool: on Debian or Ubuntu `apt-get install prometheus` (as \
         root); elsewhere install Prometheus's promtool on the PATH"
    )
}

/// Installs Debian packages with apt-get, updating the package lists once
/// if they are not known yet; false when not root, not Debian, or it
/// failed.
fn apt_install(packages: &[&str]) -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root || !Path::new("/usr/bin/apt-get").exists() {
        return false;
    }
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .is_ok_and(|s| s.success())
    };
    install()
        || (Command::new("apt-get")
            .args(["update", "-q"])
            .status()
            .is_ok_and(|s| s.success())
            && install())
}

/// HAProxy, the load balancer the tests put in front of two hosts on one
/// PostgreSQL database (`tests/tests/api/multihost.rs`). On a Debian
/// machine where we are root, installs Debian's `haproxy` (only the
/// program is used: the tests start it with their own configuration);
/// elsewhere says what to install.
pub fn haproxy() -> anyhow::Result<()> {
    let program = std::env::var("OUTCOMES_TEST_HAPROXY").unwrap_or_else(|_| "haproxy".into());
    let works = || {
        Command::new(&program)
            .arg("-v")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if works() {
        return Ok(());
    }
    eprintln!("xtask: installing HAProxy for the tests of several hosts (apt-get install haproxy)");
    if apt_install(&["haproxy"]) && works() {
        return Ok(());
    }
    bail!(
        "the tests of several hosts need HAProxy: on Debian or Ubuntu `apt-get install haproxy` \
         (as root); elsewhere install HAProxy 2.x and put it on PATH or set OUTCOMES_TEST_HAPROXY \
         to it"
    )
}

/// axe-core, the accessibility checker the browser tests load into the
/// pages, installed from the npm registry as `tests/browser/package-lock.json`
/// pins it.
pub fn axe() -> anyhow::Result<()> {
    if std::env::var_os("OUTCOMES_TEST_AXE").is_some() {
        return Ok(());
    }
    npm_ci(
        "tests/browser",
        "axe-core",
        "axe-core for the browser tests",
    )
}

/// The AssemblyScript compiler, with which the tests build the example
/// scorer of `examples/assemblyscript-scorer/` (and small modules of their
/// own), installed from the npm registry as that folder's
/// `package-lock.json` pins it.
pub fn assemblyscript() -> anyhow::Result<()> {
    npm_ci(
        "examples/assemblyscript-scorer",
        "assemblyscript",
        "the AssemblyScript compiler for the AssemblyScript plugin tests",
    )
}

/// Runs `npm ci` in `folder` (relative to the workspace root) unless the
/// version of `package` its lock file pins is installed there already.
fn npm_ci(folder: &str, package: &str, what: &str) -> anyhow::Result<()> {
    let folder = workspace_root().join(folder);
    let version = |path: PathBuf, pointer: &str| -> Option<String> {
        let text = std::fs::read_to_string(path).ok()?;
        let json: serde_json::Value = serde_json::from_str(&text).ok()?;
        json.pointer(pointer)?.as_str().map(str::to_owned)
    };
    let wanted = version(
        folder.join("package-lock.json"),
        &format!("/packages/node_modules~1{package}/version"),
    );
    let installed = version(
        folder.join(format!("node_modules/{package}/package.json")),
        "/version",
    );
    if wanted.is_some() && wanted == installed {
        return Ok(());
    }
    eprintln!("xtask: installing {what} (npm ci in {})", folder.display());
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(&folder)
        .status();
    match status {
        Ok(s) if s.success() => Ok(()),
        Ok(_) => bail!(
            "`npm ci` in {} failed; run it by hand to see why",
            folder.display()
        ),
        Err(_) => bail!(
            "the tests install {what} from the npm registry: install Node.js and npm \
             (Debian: apt-get install nodejs npm) and try again"
        ),
    }
}

/// Schemathesis, the property-based tester the contract test runs against
/// the OpenAPI document (tests/tests/api/contract.rs), installed from PyPI
/// into a virtual environment in the build folder, exactly as
/// `tests/contract/requirements.txt` pins it (versions and hashes). Answers
/// the path of its program, which the tests find in
/// `OUTCOMES_TEST_SCHEMATHESIS`; a program named there already is used as
/// it is. Reinstalls when the requirements change.
pub fn schemathesis() -> anyhow::Result<PathBuf> {
    if let Some(program) = std::env::var_os("OUTCOMES_TEST_SCHEMATHESIS") {
        return Ok(PathBuf::from(program));
    }
    let requirements_file = workspace_root().join("tests/contract/requirements.txt");
    let requirements = std::fs::read_to_string(&requirements_file)
        .with_context(|| format!("reading {}", requirements_file.display()))?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"));
    let venv = target.join("schemathesis");
    let program = venv.join("bin/schemathesis");
    // The requirements it was installed from, written after the install.
    let installed = venv.join("installed-requirements.txt");
    if program.exists() && std::fs::read_to_string(&installed).ok() == Some(requirements.clone()) {
        return Ok(program);
    }
    eprintln!(
        "xtask: installing Schemathesis for the contract test (a Python virtual environment in {})",
        venv.display()
    );
    let made = Command::new("python3")
        .args(["-m", "venv", "--clear"])
        .arg(&venv)
        .status();
    if !made.is_ok_and(|s| s.success()) {
        bail!(
            "the contract test needs Python 3 with its venv module to install Schemathesis: on Debian or \
             Ubuntu `apt-get install python3 python3-venv`; or install Schemathesis 4 yourself and set \
             OUTCOMES_TEST_SCHEMATHESIS to its program"
        );
    }
    let status = Command::new(venv.join("bin/pip"))
        .args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--require-hashes",
            "--only-binary=:all:",
            "-r",
        ])
        .arg(&requirements_file)
        .status()
        .context("running pip")?;
    anyhow::ensure!(
        status.success() && program.exists(),
        "installing Schemathesis from PyPI failed (pip install --require-hashes -r {}); run it by hand \
         to see why",
        requirements_file.display()
    );
    std::fs::write(&installed, requirements)?;
    Ok(program)
}

fn wait(d: Duration) -> bool {
    std::thread::sleep(d);
    false
}

fn reachable(address: &str) -> bool {
    address
        .to_socket_addrs()
        .map(|mut addrs| {
            addrs.any(|a: SocketAddr| {
                TcpStream::connect_timeout(&a, Duration::from_millis(500)).is_ok()
            })
        })
        .unwrap_or(false)
}

/// `host:port` of a postgres:// URL (port 5432 when not given).
fn host_port(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host_port.is_empty() {
        return Some("127.0.0.1:5432".to_owned());
    }
    Some(if host_port.contains(':') {
        host_port.to_owned()
    } else {
        format!("{host_port}:5432")
    })
}

/// The version of the single local Debian cluster, if there is one.
fn debian_cluster() -> Option<String> {
    let mut versions: Vec<String> = std::fs::read_dir("/etc/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    versions.sort();
    versions.pop()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_port_come_from_the_url() {
        assert_eq!(
            host_port("postgres://postgres@127.0.0.1:5432/test").as_deref(),
            Some("127.0.0.1:5432")
        );
        assert_eq!(
            host_port("postgres://u:p@db.example.org/x?sslmode=require").as_deref(),
            Some("db.example.org:5432")
        );
        assert_eq!(
            host_port("postgres:///test").as_deref(),
            Some("127.0.0.1:5432")
        );
    }
}
