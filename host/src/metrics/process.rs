//! The process's own figures, read from `/proc` when `/metrics` is scraped:
//! resident and virtual memory, open and allowed file descriptors, CPU
//! time, start time. Linux only; elsewhere these families are absent. The
//! parsing is pure and tested on sample text; only [`read`] touches files.
//!
//! Field positions follow proc(5). Times in `/proc/<pid>/stat` are in
//! USER_HZ ticks, which the kernel fixes at 100 per second for every
//! architecture it reports to user space that way (the same constant
//! Prometheus's own procfs library uses), so no `sysconf` call is needed.

/// Clock ticks per second of `/proc/<pid>/stat` times (USER_HZ).
const TICKS_PER_SECOND: f64 = 100.0;

/// What `/proc/self/stat` says that we use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// User and system CPU time, in ticks.
    pub cpu_ticks: u64,
    /// Start time after boot, in ticks.
    pub start_ticks: u64,
}

/// The figures of one scrape; a figure that could not be read is `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Figures {
    pub resident_bytes: Option<u64>,
    pub virtual_bytes: Option<u64>,
    pub open_fds: Option<u64>,
    pub max_fds: Option<u64>,
    pub cpu_seconds: Option<f64>,
    pub start_time_seconds: Option<f64>,
}

/// `/proc/<pid>/stat`: the command name (field 2) is in parentheses and
/// may itself hold spaces and parentheses, so fields are counted from the
/// last `)`. utime, stime and starttime are fields 14, 15 and 22.
pub fn parse_stat(text: &str) -> Option<Stat> {
    let (_, rest) = text.rsplit_once(')')?;
    // rest starts with field 3 (state).
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(Stat {
        cpu_ticks: field(14)?.checked_add(field(15)?)?,
        start_ticks: field(22)?,
    })
}

/// A `Name:   1234 kB` line of `/proc/<pid>/status`, in bytes.
pub fn parse_status_kb(text: &str, name: &str) -> Option<u64> {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))?;
    let mut parts = line.split_whitespace();
    let value: u64 = parts.next()?.parse().ok()?;
    match parts.next() {
        Some("kB") => value.checked_mul(1024),
        _ => None,
    }
}

/// The boot time (`btime` of `/proc/stat`), Unix seconds.
pub fn parse_boot_time(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

/// The soft limit of `Max open files` in `/proc/<pid>/limits`; `None`
/// when unlimited.
pub fn parse_max_fds(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("Max open files"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// CPU seconds and the start time (Unix seconds) from a stat and the boot
/// time.
pub fn times(stat: Stat, boot_time: Option<u64>) -> (f64, Option<f64>) {
    let cpu = stat.cpu_ticks as f64 / TICKS_PER_SECOND;
    let start = boot_time.map(|b| b as f64 + stat.start_ticks as f64 / TICKS_PER_SECOND);
    (cpu, start)
}

/// The process's figures now; `None` where `/proc` is not there.
pub fn read() -> Option<Figures> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let file = |path: &str| std::fs::read_to_string(path).ok();
    let stat = file("/proc/self/stat").as_deref().and_then(parse_stat)?;
    let status = file("/proc/self/status").unwrap_or_default();
    let boot = file("/proc/stat").as_deref().and_then(parse_boot_time);
    let (cpu, start) = times(stat, boot);
    // The listing's own descriptor is counted too, as Prometheus's client
    // libraries do.
    let open_fds = std::fs::read_dir("/proc/self/fd")
        .ok()
        .map(|d| d.count() as u64);
    Some(Figures {
        resident_bytes: parse_status_kb(&status, "VmRSS"),
        virtual_bytes: parse_status_kb(&status, "VmSize"),
        open_fds,
        max_fds: file("/proc/self/limits").as_deref().and_then(parse_max_fds),
        cpu_seconds: Some(cpu),
        start_time_seconds: start,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stat line whose command name holds a space and a parenthesis.
    const STAT: &str = "4242 (out comes) x) S 1 4242 4242 0 -1 4194560 2500 0 0 0 \
                        1234 567 0 0 20 0 9 0 880000 1073741824 5000 18446744073709551615 \
                        1 1 0 0 0 0 0 4096 17663 0 0 0 17 1 0 0 0 0 0\n";

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        assert_eq!(
            parse_stat(STAT),
            Some(Stat {
                cpu_ticks: 1234 + 567,
                start_ticks: 880000,
            })
        );
        assert_eq!(parse_stat("4242 (short) S 1 2"), None);
        assert_eq!(parse_stat(""), None);
    }

    #[test]
    fn cpu_and_start_time_are_in_seconds() {
        let stat = parse_stat(STAT).expect("parses");
        let (cpu, start) = times(stat, Some(1_700_000_000));
        assert!((cpu - 18.01).abs() < 1e-9, "{cpu}");
        assert_eq!(start, Some(1_700_000_000.0 + 8800.0));
        assert_eq!(times(stat, None).1, None);
    }

    #[test]
    fn memory_comes_from_status_in_bytes() {
        let status =
            "Name:\toutcomes\nVmPeak:\t  300000 kB\nVmSize:\t  250000 kB\nVmRSS:\t   51200 kB\n";
        assert_eq!(parse_status_kb(status, "VmRSS"), Some(51200 * 1024));
        assert_eq!(parse_status_kb(status, "VmSize"), Some(250000 * 1024));
        assert_eq!(parse_status_kb(status, "VmSwap"), None);
        assert_eq!(parse_status_kb("VmRSS:\t12 MB\n", "VmRSS"), None);
    }

    #[test]
    fn boot_time_and_the_open_files_limit_are_found() {
        let stat = "cpu  1 2 3 4\nintr 5\nctxt 6\nbtime 1764140000\nprocesses 7\n";
        assert_eq!(parse_boot_time(stat), Some(1_764_140_000));
        assert_eq!(parse_boot_time("cpu 1\n"), None);
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max cpu time              unlimited            unlimited            seconds   \n\
                      Max open files            1024                 524288               files     \n";
        assert_eq!(parse_max_fds(limits), Some(1024));
        let unlimited =
            "Max open files            unlimited            unlimited            files\n";
        assert_eq!(parse_max_fds(unlimited), None);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn this_process_has_figures() {
        let figures = read().expect("/proc is there");
        assert!(figures.resident_bytes.is_some_and(|b| b > 0), "{figures:?}");
        assert!(figures.open_fds.is_some_and(|n| n >= 3), "{figures:?}");
        assert!(
            figures.start_time_seconds.is_some_and(|t| t > 1.0e9),
            "{figures:?}"
        );
    }
}
