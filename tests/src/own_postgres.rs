//! A PostgreSQL server of the test's own, for tests that stop and start the
//! database under a running service: the shared server at
//! `OUTCOMES_TEST_POSTGRES_URL` serves every other test and is never
//! restarted. Made with `initdb` in a temporary folder, on a free loopback
//! port, with trust authentication; stopped and removed when dropped.
//!
//! The PostgreSQL server programs are looked up in `OUTCOMES_TEST_PG_BIN`,
//! else in Debian's `/usr/lib/postgresql/<version>/bin` (the newest), else
//! on `PATH`. `initdb` refuses to run as root: as root the server runs as
//! the `postgres` user (`runuser`), which owns the folder.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A running (or stopped) server of the test's own.
#[derive(Debug)]
pub struct OwnPostgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    /// Run the server programs as `postgres` (we are root).
    as_postgres: bool,
}

impl OwnPostgres {
    /// Makes a new cluster and starts it; panics saying what is missing.
    pub fn start() -> OwnPostgres {
        let bin = server_programs();
        let as_postgres = is_root();
        let dir = tempfile::Builder::new()
            .prefix("outcomes-own-pg-")
            .tempdir()
            .expect("a temporary folder");
        if as_postgres {
            let uid = id_of("postgres");
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(uid))
                .expect("give the folder to postgres");
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let server = OwnPostgres {
            dir,
            bin,
            port,
            as_postgres,
        };
        server.run(
            "initdb",
            &[
                "-D",
                &server.data(),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        server.start_again();
        server
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres`: the superuser, who
    /// may create databases.
    pub fn admin_url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The URL of database `name` on this server.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    /// Stops the server as an operator's restart does (`pg_ctl stop -m
    /// fast`: sessions are ended, then it shuts down), and returns once it
    /// is down.
    pub fn stop(&self) {
        self.run("pg_ctl", &["-D", &self.data(), "-m", "fast", "-w", "stop"]);
    }

    /// Starts the stopped server; returns once it accepts connections.
    pub fn start_again(&self) {
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {} -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("server.log");
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-l",
                &log.display().to_string(),
                "-o",
                &options,
                "-w",
                "start",
            ],
        );
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    fn run(&self, program: &str, args: &[&str]) {
        let path = self.bin.join(program);
        let mut command = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&path);
            c
        } else {
            Command::new(&path)
        };
        let out = command
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", path.display()));
        assert!(
            out.status.success(),
            "{program} {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        // Whatever state it is in; the folder goes with `dir`.
        let data = self.data();
        let path = self.bin.join("pg_ctl");
        let mut command = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&path);
            c
        } else {
            Command::new(&path)
        };
        let _ = command
            .args(["-D", &data, "-m", "immediate", "-w", "stop"])
            .output();
    }
}

/// The folder holding `initdb` and `pg_ctl`.
fn server_programs() -> PathBuf {
    if let Ok(dir) = std::env::var("OUTCOMES_TEST_PG_BIN") {
        return PathBuf::from(dir);
    }
    let debian = std::fs::read_dir("/usr/lib/postgresql")
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path().join("bin"))
                .filter(|bin| bin.join("initdb").exists())
                .max_by_key(|bin| {
                    bin.parent()
                        .and_then(Path::file_name)
                        .and_then(|v| v.to_str())
                        .and_then(|v| v.parse::<u32>().ok())
                        .unwrap_or(0)
                })
        })
        .ok()
        .flatten();
    if let Some(bin) = debian {
        return bin;
    }
    let on_path = std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).find(|dir| dir.join("initdb").exists()));
    on_path.unwrap_or_else(|| {
        panic!(
            "this test runs a PostgreSQL server of its own and needs its programs (initdb, pg_ctl): \
             on Debian `apt-get install postgresql`; elsewhere set OUTCOMES_TEST_PG_BIN to the folder \
             holding them"
        )
    })
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn id_of(user: &str) -> u32 {
    let out = Command::new("id")
        .args(["-u", user])
        .output()
        .expect("run id");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| {
            panic!("running PostgreSQL as root needs a `{user}` user (initdb refuses root)")
        })
}
