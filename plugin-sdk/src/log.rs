//! A capped log facility. Plugins have no I/O; their log lines go to the
//! host, which re-emits them through its own logging with the plugin's name
//! and version, and shows them in `outcomes plugin test`. Natively (tests)
//! the lines are kept per thread so the fixture runner can print them.
//!
//! The caps keep a misbehaving plugin from flooding the host: at most
//! [`MAX_LINES`] lines per call, each cut at [`MAX_LINE_BYTES`] bytes. The
//! host enforces the same caps on its side.

use std::cell::RefCell;

/// Lines one call may log; further lines are dropped.
pub const MAX_LINES: usize = 64;
/// Bytes one line may hold; longer lines are cut.
pub const MAX_LINE_BYTES: usize = 1024;

/// Severity of a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u32)]
pub enum Level {
    /// Detail for plugin authors.
    Debug = 0,
    /// Normal operation.
    Info = 1,
    /// Something odd in the input.
    Warn = 2,
    /// The plugin could not do its work.
    Error = 3,
}

impl Level {
    /// The level a raw ABI number stands for (unknown numbers are `Info`).
    pub fn from_raw(raw: u32) -> Level {
        match raw {
            0 => Level::Debug,
            2 => Level::Warn,
            3 => Level::Error,
            _ => Level::Info,
        }
    }
}

thread_local! {
    static LINES: RefCell<Vec<(Level, String)>> = const { RefCell::new(Vec::new()) };
}

/// Logs one line (cut to [`MAX_LINE_BYTES`] at a character boundary).
pub fn emit(level: Level, message: &str) {
    let message = cut(message, MAX_LINE_BYTES);
    let accepted = LINES.with(|lines| {
        let mut lines = lines.borrow_mut();
        if lines.len() >= MAX_LINES {
            return false;
        }
        lines.push((level, message.to_owned()));
        true
    });
    if accepted {
        host::log(level, message);
    }
}

/// Takes the lines logged on this thread since the last call (native tests).
pub fn take() -> Vec<(Level, String)> {
    LINES.with(|lines| std::mem::take(&mut *lines.borrow_mut()))
}

/// `s` cut to at most `max` bytes without splitting a character.
pub fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod host {
    #[link(wasm_import_module = "outcomes")]
    unsafe extern "C" {
        #[link_name = "log"]
        fn outcomes_log(level: u32, ptr: *const u8, len: u32);
    }

    pub fn log(level: super::Level, message: &str) {
        // SAFETY: the host reads `len` bytes at `ptr` during the call; the
        // slice outlives it.
        unsafe { outcomes_log(level as u32, message.as_ptr(), message.len() as u32) }
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod host {
    pub fn log(_level: super::Level, _message: &str) {}
}

/// Logs a formatted line at info level.
#[macro_export]
macro_rules! info {
    ($($arg:tt)*) => { $crate::log::emit($crate::log::Level::Info, &::std::format!($($arg)*)) };
}

/// Logs a formatted line at warn level.
#[macro_export]
macro_rules! warn {
    ($($arg:tt)*) => { $crate::log::emit($crate::log::Level::Warn, &::std::format!($($arg)*)) };
}

/// Logs a formatted line at debug level.
#[macro_export]
macro_rules! debug {
    ($($arg:tt)*) => { $crate::log::emit($crate::log::Level::Debug, &::std::format!($($arg)*)) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_beyond_the_cap_are_dropped_and_long_lines_cut() {
        take();
        for i in 0..MAX_LINES + 5 {
            emit(Level::Info, &format!("line {i}"));
        }
        emit(Level::Info, "dropped");
        let lines = take();
        assert_eq!(lines.len(), MAX_LINES);
        assert_eq!(lines[0].1, "line 0");
        emit(Level::Warn, &"é".repeat(MAX_LINE_BYTES));
        let lines = take();
        assert_eq!(lines[0].1.len(), MAX_LINE_BYTES);
        assert!(lines[0].1.chars().all(|c| c == 'é'));
    }
}
