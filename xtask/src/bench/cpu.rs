//! CPU time and I/O of the server under test and of this process (the load
//! generator), and the whole machine's CPU time, from /proc: what a
//! benchmark round cost. None off Linux.

use std::time::Instant;

/// CPU time of the server and of this process (the load generator), and of
/// the whole machine, from /proc. None off Linux.
#[derive(Debug, Clone, Copy)]
pub struct CpuSample {
    server: u32,
    at: Instant,
    server_ticks: u64,
    client_ticks: u64,
    machine_busy: u64,
    machine_total: u64,
    /// The server's /proc/<pid>/io counters, where readable.
    io: Option<Io>,
}

/// I/O counters of a process (/proc/<pid>/io): bytes through read and
/// write calls, the calls, and bytes that reached the storage layer.
#[derive(Debug, Clone, Copy, Default)]
pub struct Io {
    pub read_calls: u64,
    pub write_calls: u64,
    pub read_bytes: u64,
    pub written_bytes: u64,
    pub storage_written: u64,
}

impl Io {
    fn of(pid: u32) -> Option<Io> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
        let mut io = Io::default();
        for line in text.lines() {
            let (key, value) = line.split_once(':')?;
            let value: u64 = value.trim().parse().ok()?;
            match key {
                "rchar" => io.read_bytes = value,
                "wchar" => io.written_bytes = value,
                "syscr" => io.read_calls = value,
                "syscw" => io.write_calls = value,
                "write_bytes" => io.storage_written = value,
                _ => {}
            }
        }
        Some(io)
    }

    fn since(self, before: Io) -> Io {
        Io {
            read_calls: self.read_calls.saturating_sub(before.read_calls),
            write_calls: self.write_calls.saturating_sub(before.write_calls),
            read_bytes: self.read_bytes.saturating_sub(before.read_bytes),
            written_bytes: self.written_bytes.saturating_sub(before.written_bytes),
            storage_written: self.storage_written.saturating_sub(before.storage_written),
        }
    }
}

/// CPU use over an interval.
#[derive(Debug, Clone, Copy)]
pub struct CpuUse {
    /// Server process, in cores (1.0 = one core busy all the time).
    pub server: f64,
    /// Load generator, in cores.
    pub client: f64,
    /// Busy share of all the machine's cores (0..1), other tenants included.
    pub machine: f64,
    /// The server's I/O over the interval (socket traffic included).
    pub io: Option<Io>,
}

impl CpuSample {
    pub fn take(server: u32) -> Option<CpuSample> {
        let (machine_busy, machine_total) = machine_ticks()?;
        Some(CpuSample {
            server,
            at: Instant::now(),
            server_ticks: process_ticks(&format!("/proc/{server}/stat"))?,
            client_ticks: process_ticks("/proc/self/stat")?,
            machine_busy,
            machine_total,
            io: Io::of(server),
        })
    }

    /// The use since this sample.
    pub fn since(&self) -> Option<CpuUse> {
        let now = CpuSample::take(self.server)?;
        let ticks = TICKS_PER_SECOND * now.at.duration_since(self.at).as_secs_f64();
        let total = now.machine_total.saturating_sub(self.machine_total) as f64;
        Some(CpuUse {
            server: now.server_ticks.saturating_sub(self.server_ticks) as f64 / ticks,
            client: now.client_ticks.saturating_sub(self.client_ticks) as f64 / ticks,
            machine: if total > 0.0 {
                now.machine_busy.saturating_sub(self.machine_busy) as f64 / total
            } else {
                0.0
            },
            io: now.io.zip(self.io).map(|(n, b)| n.since(b)),
        })
    }
}

/// USER_HZ: 100 on every Linux architecture we run on.
const TICKS_PER_SECOND: f64 = 100.0;

/// utime + stime of a /proc/<pid>/stat file.
fn process_ticks(path: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    // The command name may hold spaces: fields count from after its ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// Busy and total ticks of all cores from /proc/stat.
fn machine_ticks() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().next()?.strip_prefix("cpu ")?;
    let values: Vec<u64> = line
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is in user)
    let total: u64 = values.iter().take(8).sum();
    let idle = values.get(3)? + values.get(4)?;
    Some((total - idle, total))
}
