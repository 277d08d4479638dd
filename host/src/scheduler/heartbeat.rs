//! When the scheduler last finished a pass, read from the injected clock
//! (`clock.rs`), so the readiness probe can tell a scheduler that stopped
//! ticking, and tests can move time instead of sleeping.

use chrono::{DateTime, Utc};
use tokio::sync::watch;

/// The last pass of this process's scheduler.
#[derive(Debug)]
pub struct Heartbeat {
    /// When the process started: a scheduler that has not yet passed is
    /// late counted from here.
    started: DateTime<Utc>,
    last: watch::Sender<Option<DateTime<Utc>>>,
}

impl Heartbeat {
    pub fn new(started: DateTime<Utc>) -> Heartbeat {
        Heartbeat {
            started,
            last: watch::Sender::new(None),
        }
    }

    /// A pass done at `at`. Never moves back: a pass run for an earlier
    /// moment (tests call `tick` at chosen times) leaves a later one.
    pub fn beat(&self, at: DateTime<Utc>) {
        self.last.send_if_modified(|last| {
            let later = last.is_none_or(|l| at > l);
            if later {
                *last = Some(at);
            }
            later
        });
    }

    /// When the last pass was done, if any.
    pub fn last(&self) -> Option<DateTime<Utc>> {
        *self.last.borrow()
    }

    /// The last pass, or the start when there was none yet.
    pub fn since(&self) -> DateTime<Utc> {
        self.last().unwrap_or(self.started)
    }

    /// Tells of every pass (tests wait on the first).
    pub fn subscribe(&self) -> watch::Receiver<Option<DateTime<Utc>>> {
        self.last.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn the_last_pass_never_moves_back() {
        let at = |s| Utc.timestamp_opt(s, 0).single().unwrap_or_default();
        let beat = Heartbeat::new(at(100));
        assert_eq!(beat.since(), at(100));
        beat.beat(at(200));
        beat.beat(at(150));
        assert_eq!(beat.last(), Some(at(200)));
        assert_eq!(beat.since(), at(200));
    }
}
