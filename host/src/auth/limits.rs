//! Rate limits (docs/operations.md#rate-limits): requests without valid
//! credentials per client address, tight; requests per API token, high;
//! opens of a respondent's link (each may start a session) per link, and
//! requests of a fill-out session per session, each sized for a person at
//! a browser. Token buckets from `governor`, keyed; over the limit is 429
//! with `Retry-After`.
//!
//! The buckets run on governor's own monotonic clock, not the app's
//! settable one: a limit is about real time, and tests configure a burst
//! that does not refill while they run instead of moving time.
//!
//! A client address that has used up its allowance of requests without
//! valid credentials is held back: every request it makes to the API is
//! answered 429 before its credentials are read, until its bucket has room
//! again ([`RateLimits::held_back`]), so a flood of bad credentials costs
//! no hash or signature check past the burst.
//!
//! An IPv6 client counts by its /64. **Invariant:** memory stays bounded
//! under ever new addresses: buckets full again are dropped every few
//! seconds (`startup.rs`) and whenever more than `MAX_ADDRESSES` clients
//! are tracked; if too many remain, the limiter starts over.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use arc_swap::ArcSwap;
use governor::clock::{Clock, DefaultClock, QuantaInstant, Reference};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use super::ip;

/// Client addresses tracked at most; past it the buckets that are full
/// again are dropped, and if that is not enough, all of them. A flood from
/// ever new addresses then gets fresh bursts, which it had anyway, while
/// memory stays bounded.
const MAX_ADDRESSES: usize = 100_000;

/// Who a limit on requests without credentials applies to: an IPv4
/// address, or the /64 an IPv6 address is in (one subscriber's usual
/// allocation, so its 2^64 addresses are one client, not 2^64).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientKey {
    Address(IpAddr),
    Prefix64(Ipv6Addr),
}

impl ClientKey {
    pub fn of(addr: IpAddr) -> ClientKey {
        match ip::canonical(addr) {
            IpAddr::V6(v6) if !v6.is_loopback() => {
                ClientKey::Prefix64(Ipv6Addr::from(u128::from(v6) & !(u128::MAX >> 64)))
            }
            other => ClientKey::Address(other),
        }
    }
}

impl std::fmt::Display for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientKey::Address(addr) => write!(f, "{addr}"),
            ClientKey::Prefix64(net) => write!(f, "{net}/64"),
        }
    }
}

/// A rate limit: `burst` requests at once, then one more each `every`
/// (docs/operations.md#rate-limits). The settings make it
/// (`Config::resolve`); this module only reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub burst: std::num::NonZeroU32,
    pub every: Duration,
}

impl RateLimit {
    /// `burst` at once and `per_second` after; None when `per_second` is 0
    /// (no limit).
    pub fn per_second(burst: u32, per_second: u32) -> Result<Option<RateLimit>, String> {
        RateLimit::per(burst, per_second, Duration::from_secs(1))
    }

    /// `burst` at once and `per_minute` after; None when `per_minute` is 0
    /// (no limit).
    pub fn per_minute(burst: u32, per_minute: u32) -> Result<Option<RateLimit>, String> {
        RateLimit::per(burst, per_minute, Duration::from_secs(60))
    }

    fn per(burst: u32, rate: u32, span: Duration) -> Result<Option<RateLimit>, String> {
        if rate == 0 {
            return Ok(None);
        }
        let burst = std::num::NonZeroU32::new(burst)
            .ok_or("the burst must be at least 1 (turn the limit off with a rate of 0)")?;
        Ok(Some(RateLimit {
            burst,
            every: span / rate,
        }))
    }
}

/// Over a limit: retry after this many seconds (at least 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryAfter(pub u64);

/// The limiters of one process.
#[derive(Debug)]
pub struct RateLimits {
    anonymous: Option<Limiter<ClientKey>>,
    tokens: Option<Limiter<String>>,
    /// Requests to the probes (`/health`, `/livez`, `/readyz`,
    /// `/version`) per client address.
    probes: Option<Limiter<ClientKey>>,
    held: Held,
    links: Option<Limiter<String>>,
    sessions: Option<Limiter<i64>>,
}

/// Clients whose allowance without valid credentials is used up, with the
/// moment their bucket has room again (on governor's clock).
#[derive(Debug, Default)]
struct Held {
    until: Mutex<HashMap<ClientKey, QuantaInstant>>,
    /// How many are held, read without the lock: the usual answer is none.
    count: AtomicUsize,
}

impl Held {
    fn map(&self) -> MutexGuard<'_, HashMap<ClientKey, QuantaInstant>> {
        self.until.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn hold(&self, client: ClientKey, until: QuantaInstant) {
        let mut map = self.map();
        if map.len() >= MAX_ADDRESSES {
            let now = DefaultClock::default().now();
            map.retain(|_, until| *until > now);
        }
        if map.len() < MAX_ADDRESSES {
            map.insert(client, until);
        }
        self.count.store(map.len(), Ordering::Relaxed);
    }

    fn check(&self, client: ClientKey) -> Result<(), RetryAfter> {
        if self.count.load(Ordering::Relaxed) == 0 {
            return Ok(());
        }
        let mut map = self.map();
        let Some(until) = map.get(&client).copied() else {
            return Ok(());
        };
        let now = DefaultClock::default().now();
        if until > now {
            return Err(RetryAfter(seconds_up(until.duration_since(now).into())));
        }
        map.remove(&client);
        self.count.store(map.len(), Ordering::Relaxed);
        Ok(())
    }

    fn prune(&self) {
        let now = DefaultClock::default().now();
        let mut map = self.map();
        map.retain(|_, until| *until > now);
        self.count.store(map.len(), Ordering::Relaxed);
    }
}

/// The limits of the respondents' links and sessions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RespondentLimits {
    /// Opens of one link (a `completing_url`'s Start, a `fill_out_url`'s
    /// button); None: no limit.
    pub link: Option<RateLimit>,
    /// Requests of one fill-out session; None: no limit.
    pub session: Option<RateLimit>,
}

/// Links and sessions tracked at most; past it the buckets full again are
/// dropped, and if that is not enough, all of them.
const MAX_RESPONDENT_KEYS: usize = 100_000;

struct Limiter<K: std::hash::Hash + Eq + Clone> {
    quota: Quota,
    buckets: ArcSwap<DefaultKeyedRateLimiter<K>>,
}

impl<K: std::hash::Hash + Eq + Clone> std::fmt::Debug for Limiter<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limiter")
            .field("quota", &self.quota)
            .field("tracked", &self.buckets.load().len())
            .finish()
    }
}

impl<K: std::hash::Hash + Eq + Clone> Limiter<K> {
    fn new(limit: RateLimit) -> Option<Limiter<K>> {
        let quota = Quota::with_period(limit.every)?.allow_burst(limit.burst);
        Some(Limiter {
            quota,
            buckets: ArcSwap::from_pointee(RateLimiter::keyed(quota)),
        })
    }

    fn admit(&self, key: &K) -> Result<(), (RetryAfter, QuantaInstant)> {
        self.buckets.load().check_key(key).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            (RetryAfter(seconds_up(wait)), not_until.earliest_possible())
        })
    }

    /// [`Limiter::admit`], then, past `max` keys tracked, a prune to half
    /// of it, so memory stays bounded whatever keys clients send.
    fn admit_bounded(&self, key: &K, max: usize) -> Result<(), (RetryAfter, QuantaInstant)> {
        let answer = self.admit(key);
        if self.buckets.load().len() > max {
            self.prune(max / 2);
        }
        answer
    }

    /// Drops the buckets that are full again (they hold nothing a new one
    /// would not); if more than `max` remain, every bucket.
    fn prune(&self, max: usize) {
        let buckets = self.buckets.load();
        buckets.retain_recent();
        if buckets.len() > max {
            tracing::warn!(
                tracked = buckets.len(),
                "rate limits: too many clients to track; starting over"
            );
            self.buckets
                .store(std::sync::Arc::new(RateLimiter::keyed(self.quota)));
        } else {
            buckets.shrink_to_fit();
        }
    }
}

impl RateLimits {
    /// The limiters `anonymous` and `tokens` describe; None: no limit.
    /// The probes are not limited ([`RateLimits::with_probes`]), nor
    /// respondents' links and sessions ([`RateLimits::with_respondents`]).
    pub fn new(anonymous: Option<RateLimit>, tokens: Option<RateLimit>) -> RateLimits {
        RateLimits {
            anonymous: anonymous.and_then(Limiter::new),
            tokens: tokens.and_then(Limiter::new),
            probes: None,
            links: None,
            sessions: None,
            held: Held::default(),
        }
    }

    /// These limits, and `probes` per client address on the probes.
    pub fn with_probes(self, probes: Option<RateLimit>) -> RateLimits {
        RateLimits {
            probes: probes.and_then(Limiter::new),
            ..self
        }
    }

    /// These limits, with `respondents`' limits on links and sessions.
    pub fn with_respondents(self, respondents: RespondentLimits) -> RateLimits {
        RateLimits {
            links: respondents.link.and_then(Limiter::new),
            sessions: respondents.session.and_then(Limiter::new),
            ..self
        }
    }

    /// Counts an open of the respondent's link named `link` (a key that
    /// tells links apart: the respondent's for a `completing_url`, the
    /// session's for a `fill_out_url`), once its signature checked out.
    pub fn admit_link(&self, link: &str) -> Result<(), RetryAfter> {
        let Some(limiter) = &self.links else {
            return Ok(());
        };
        limiter
            .admit_bounded(&link.to_owned(), MAX_RESPONDENT_KEYS)
            .map_err(|(wait, _)| wait)
    }

    /// Counts a request of the live fill-out session with this id.
    pub fn admit_session(&self, session: i64) -> Result<(), RetryAfter> {
        let Some(limiter) = &self.sessions else {
            return Ok(());
        };
        limiter
            .admit_bounded(&session, MAX_RESPONDENT_KEYS)
            .map_err(|(wait, _)| wait)
    }

    /// Counts a request without valid credentials from `client`. Over the
    /// limit, the client is held back until its bucket has room again.
    pub fn admit_anonymous(&self, client: IpAddr) -> Result<(), RetryAfter> {
        let Some(limiter) = &self.anonymous else {
            return Ok(());
        };
        let key = ClientKey::of(client);
        limiter
            .admit_bounded(&key, MAX_ADDRESSES)
            .map_err(|(wait, until)| {
                self.held.hold(key, until);
                wait
            })
    }

    /// Counts a request from `client` to a probe.
    pub fn admit_probe(&self, client: IpAddr) -> Result<(), RetryAfter> {
        let Some(limiter) = &self.probes else {
            return Ok(());
        };
        limiter
            .admit_bounded(&ClientKey::of(client), MAX_ADDRESSES)
            .map_err(|(wait, _)| wait)
    }

    /// Whether `client` is held back: its allowance of requests without
    /// valid credentials is used up and has not refilled yet. Costs an
    /// atomic read while no client is held; consumes nothing.
    pub fn held_back(&self, client: IpAddr) -> Result<(), RetryAfter> {
        self.held.check(ClientKey::of(client))
    }

    /// Counts a request with the valid credentials of `consumer_key`.
    /// Tokens are few (the token table), so their buckets need no pruning.
    pub fn admit_token(&self, consumer_key: &str) -> Result<(), RetryAfter> {
        match &self.tokens {
            Some(limiter) => limiter
                .admit(&consumer_key.to_owned())
                .map_err(|(wait, _)| wait),
            None => Ok(()),
        }
    }

    /// Drops buckets that are full again, so memory follows the clients
    /// of the last little while; run every few seconds.
    pub fn prune(&self) {
        self.held.prune();
        for limiter in [&self.anonymous, &self.probes].into_iter().flatten() {
            limiter.prune(MAX_ADDRESSES / 2);
        }
        if let Some(limiter) = &self.tokens {
            limiter.prune(usize::MAX);
        }
        if let Some(limiter) = &self.links {
            limiter.prune(MAX_RESPONDENT_KEYS / 2);
        }
        if let Some(limiter) = &self.sessions {
            limiter.prune(MAX_RESPONDENT_KEYS / 2);
        }
    }
}

/// Whole seconds, rounded up, at least 1 (`Retry-After` takes seconds,
/// RFC 9110 section 10.2.3).
fn seconds_up(wait: Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(burst: u32, every: Duration) -> Option<RateLimit> {
        Some(RateLimit {
            burst: std::num::NonZeroU32::new(burst).expect("not zero"),
            every,
        })
    }

    #[test]
    fn ipv6_clients_count_per_64_and_mapped_ipv4_as_ipv4() {
        let key = |s: &str| ClientKey::of(s.parse().expect("address"));
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff::9"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("2001:db8:1:2::1").to_string(), "2001:db8:1:2::/64");
        assert_eq!(key("::ffff:192.0.2.7"), key("192.0.2.7"));
        assert_eq!(key("192.0.2.7").to_string(), "192.0.2.7");
        assert_eq!(key("::1").to_string(), "::1");
    }

    #[test]
    fn a_burst_is_admitted_then_refused_with_a_wait() {
        let hour = Duration::from_secs(3600);
        let limits = RateLimits::new(limit(3, hour), limit(2, hour));
        let a: IpAddr = "192.0.2.7".parse().expect("address");
        let b: IpAddr = "192.0.2.8".parse().expect("address");
        for _ in 0..3 {
            assert_eq!(limits.admit_anonymous(a), Ok(()));
        }
        let Err(RetryAfter(wait)) = limits.admit_anonymous(a) else {
            panic!("the fourth is over the burst")
        };
        assert!((3500..=3600).contains(&wait), "{wait}");
        // Another address, and tokens, have buckets of their own.
        assert_eq!(limits.admit_anonymous(b), Ok(()));
        assert_eq!(limits.admit_token("epd"), Ok(()));
        assert_eq!(limits.admit_token("epd"), Ok(()));
        assert!(limits.admit_token("epd").is_err());
        assert_eq!(limits.admit_token("other"), Ok(()));
    }

    #[test]
    fn a_client_over_its_anonymous_limit_is_held_back_and_no_other() {
        let limits = RateLimits::new(limit(2, Duration::from_secs(3600)), None);
        let a: IpAddr = "192.0.2.7".parse().expect("address");
        for _ in 0..2 {
            assert_eq!(limits.held_back(a), Ok(()));
            assert_eq!(limits.admit_anonymous(a), Ok(()));
        }
        // The burst used up without a refusal yet: not held back.
        assert_eq!(limits.held_back(a), Ok(()));
        assert!(limits.admit_anonymous(a).is_err());
        let Err(RetryAfter(wait)) = limits.held_back(a) else {
            panic!("held back once refused")
        };
        assert!((3500..=3600).contains(&wait), "{wait}");
        // Asking does not spend anything, and prunes keep the hold.
        limits.prune();
        assert!(limits.held_back(a).is_err());
        // Another client is not held; an IPv6 client is held by its /64.
        assert_eq!(
            limits.held_back("192.0.2.8".parse().expect("address")),
            Ok(())
        );
        let v6: IpAddr = "2001:db8:1:2::1".parse().expect("address");
        for _ in 0..3 {
            let _ = limits.admit_anonymous(v6);
        }
        assert!(
            limits
                .held_back("2001:db8:1:2::9".parse().expect("address"))
                .is_err()
        );
        assert_eq!(
            limits.held_back("2001:db8:1:3::1".parse().expect("address")),
            Ok(())
        );
    }

    #[test]
    fn probes_count_per_client_apart_from_refusals() {
        let hour = Duration::from_secs(3600);
        let limits = RateLimits::new(limit(1, hour), None).with_probes(limit(3, hour));
        let a: IpAddr = "192.0.2.7".parse().expect("address");
        for _ in 0..3 {
            assert_eq!(limits.admit_probe(a), Ok(()));
        }
        assert!(limits.admit_probe(a).is_err());
        assert_eq!(
            limits.admit_probe("192.0.2.8".parse().expect("address")),
            Ok(())
        );
        assert_eq!(limits.held_back(a), Ok(()), "probes hold nothing back");
        assert_eq!(limits.admit_anonymous(a), Ok(()));
    }

    #[test]
    fn links_and_sessions_have_buckets_of_their_own() {
        let hour = Duration::from_secs(3600);
        let limits =
            RateLimits::new(limit(1, hour), limit(1, hour)).with_respondents(RespondentLimits {
                link: limit(2, hour),
                session: limit(3, hour),
            });
        for _ in 0..2 {
            assert_eq!(limits.admit_link("respondent:7"), Ok(()));
        }
        assert!(limits.admit_link("respondent:7").is_err());
        assert_eq!(limits.admit_link("respondent:8"), Ok(()));
        for _ in 0..3 {
            assert_eq!(limits.admit_session(1), Ok(()));
        }
        assert!(limits.admit_session(1).is_err());
        assert_eq!(limits.admit_session(2), Ok(()));
        // The others are untouched.
        let a: IpAddr = "192.0.2.7".parse().expect("address");
        assert_eq!(limits.admit_anonymous(a), Ok(()));
        assert_eq!(limits.admit_token("epd"), Ok(()));
        assert_eq!(
            RateLimit::per_minute(10, 2).map(|l| l.map(|l| l.every)),
            Ok(Some(Duration::from_secs(30)))
        );
        assert_eq!(RateLimit::per_minute(10, 0), Ok(None));
    }

    #[test]
    fn without_limits_everything_is_admitted() {
        let limits = RateLimits::new(None, None);
        let a: IpAddr = "192.0.2.7".parse().expect("address");
        for _ in 0..1000 {
            assert_eq!(limits.admit_anonymous(a), Ok(()));
            assert_eq!(limits.admit_token("epd"), Ok(()));
        }
    }

    #[test]
    fn memory_stays_bounded_under_ever_new_addresses() {
        let limits = RateLimits::new(limit(5, Duration::from_secs(3600)), None);
        for n in 0..(MAX_ADDRESSES as u32 + 10) {
            let addr = IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + n));
            let _ = limits.admit_anonymous(addr);
        }
        let Some(anonymous) = &limits.anonymous else {
            panic!("limited")
        };
        assert!(anonymous.buckets.load().len() <= MAX_ADDRESSES);
    }

    #[test]
    fn waits_are_whole_seconds_rounded_up() {
        assert_eq!(seconds_up(Duration::ZERO), 1);
        assert_eq!(seconds_up(Duration::from_millis(1)), 1);
        assert_eq!(seconds_up(Duration::from_millis(1001)), 2);
        assert_eq!(seconds_up(Duration::from_secs(60)), 60);
    }
}
