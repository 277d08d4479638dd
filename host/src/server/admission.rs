//! Who gets one of the listener's connections (docs/operations.md#connections).
//!
//! Each client, an IPv4 address or an IPv6 /64 (the key of the rate
//! limits, `auth/limits.rs`), may hold `per_client` connections at once;
//! one more is closed as soon as it is accepted. Trusted proxies are
//! exempt: their connections carry many clients. At `max_open` connections
//! the oldest connection that is serving no request (still in its TLS
//! handshake, waiting for a request's headers, or idle between requests)
//! is closed to make room; only when every open connection is serving a
//! request does accepting pause, until one closes or its request ends. So
//! neither one client that opens connections and sends nothing, nor many
//! such clients, keep others out for longer than it takes to accept them.
//!
//! The table is locked when a connection is accepted and when it closes,
//! never per request: a request only counts up and down on its own
//! connection's atomic, which closing to make room claims with one
//! compare-and-swap, so a connection serving a request is never chosen.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use ipnet::IpNet;
use tokio::sync::Notify;

use crate::auth::ip::canonical;
use crate::auth::limits::ClientKey;

/// The bit of a connection's state that says it was closed to make room;
/// the rest counts the requests it is serving.
const CLOSED: u32 = 1 << 31;

/// The open connections of one listener.
pub struct Connections {
    per_client: usize,
    max_open: usize,
    exempt: Vec<IpNet>,
    table: Mutex<Table>,
    room: Arc<Room>,
}

/// How the accept loop, waiting at the cap, learns that there may be room.
#[derive(Default)]
struct Room {
    /// Whether the accept loop waits: then a request that ends leaving its
    /// connection idle says so too.
    awaited: AtomicBool,
    /// Signalled when a connection closes, and when one falls idle while
    /// the accept loop waits.
    made: Notify,
}

#[derive(Default)]
struct Table {
    next: u64,
    /// Open connections by the order they were accepted in, oldest first.
    open: BTreeMap<u64, Arc<Slot>>,
    /// Open connections per client (exempt ones are not counted).
    per_client: HashMap<ClientKey, usize>,
}

/// One open connection, as the table and the connection's task share it.
pub struct Slot {
    /// None for a trusted proxy.
    client: Option<ClientKey>,
    /// Requests being served (from their headers to the end of their
    /// answer), and [`CLOSED`].
    state: AtomicU32,
    close: Notify,
    room: Arc<Room>,
}

/// What [`Connections::admit`] decided.
pub enum Admission {
    /// A place; the connection holds it until the ticket is dropped.
    Admitted(Ticket),
    /// The client holds its share already: close the connection.
    OverQuota,
    /// Every place is held by a connection serving a request: wait for
    /// one to close ([`Connections::released`]), then ask again.
    Full,
}

/// A connection's place in the table; dropping it gives the place back.
pub struct Ticket {
    connections: Arc<Connections>,
    id: u64,
    slot: Arc<Slot>,
}

impl Connections {
    pub fn new(per_client: usize, max_open: usize, exempt: &[IpNet]) -> Arc<Connections> {
        Arc::new(Connections {
            per_client,
            max_open,
            exempt: exempt.to_vec(),
            table: Mutex::new(Table::default()),
            room: Arc::default(),
        })
    }

    /// A place for a connection from `peer`, closing the oldest connection
    /// that serves no request if all are taken.
    pub fn admit(self: &Arc<Self>, peer: IpAddr) -> Admission {
        let peer = canonical(peer);
        let client =
            (!self.exempt.iter().any(|net| net.contains(&peer))).then(|| ClientKey::of(peer));
        let mut table = self.table();
        if let Some(client) = client
            && table.per_client.get(&client).copied().unwrap_or(0) >= self.per_client
        {
            return Admission::OverQuota;
        }
        if table.open.len() >= self.max_open {
            // Said before looking, so that a request ending while it looks
            // still wakes the loop ([`Busy`]'s drop).
            self.room.awaited.store(true, Ordering::SeqCst);
            if !table.close_oldest_idle() {
                return Admission::Full;
            }
        }
        self.room.awaited.store(false, Ordering::SeqCst);
        let id = table.next;
        table.next += 1;
        let slot = Arc::new(Slot {
            client,
            state: AtomicU32::new(0),
            close: Notify::new(),
            room: self.room.clone(),
        });
        table.open.insert(id, slot.clone());
        if let Some(client) = client {
            *table.per_client.entry(client).or_default() += 1;
        }
        Admission::Admitted(Ticket {
            connections: self.clone(),
            id,
            slot,
        })
    }

    /// Returns once a connection closed, or one fell idle while the
    /// accept loop waited, since the last call (at once if that happened
    /// before it).
    pub async fn released(&self) {
        self.room.made.notified().await;
    }

    /// Connections open now.
    #[cfg(test)]
    fn open(&self) -> usize {
        self.table().open.len()
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        // The table is consistent after every statement; a panic elsewhere
        // while it was held does not spoil it.
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Table {
    /// Closes the oldest connection that serves no request; false when
    /// every one does.
    fn close_oldest_idle(&mut self) -> bool {
        let victim = self.open.iter().find_map(|(id, slot)| {
            slot.state
                .compare_exchange(0, CLOSED, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
                .then_some(*id)
        });
        let Some(slot) = victim.and_then(|id| self.remove(id)) else {
            return false;
        };
        // Stored if its task is not waiting yet: it sees it when it does.
        slot.close.notify_one();
        true
    }

    fn remove(&mut self, id: u64) -> Option<Arc<Slot>> {
        let slot = self.open.remove(&id)?;
        if let Some(client) = slot.client
            && let Some(count) = self.per_client.get_mut(&client)
        {
            *count -= 1;
            if *count == 0 {
                self.per_client.remove(&client);
            }
        }
        Some(slot)
    }
}

impl Slot {
    /// Whether the connection was closed to make room.
    pub fn is_closed(&self) -> bool {
        self.state.load(Ordering::SeqCst) & CLOSED != 0
    }

    /// Whether it is serving a request.
    pub fn serving(&self) -> bool {
        self.state.load(Ordering::SeqCst) & !CLOSED != 0
    }
}

impl Ticket {
    /// Returns once the connection was closed to make room.
    pub async fn closed(&self) {
        self.slot.close.notified().await;
    }

    /// The connection's state, for counting its requests ([`Busy`]).
    pub fn slot(&self) -> Arc<Slot> {
        self.slot.clone()
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        // Already gone when it was closed to make room.
        self.connections.table().remove(self.id);
        self.connections.room.made.notify_one();
    }
}

/// A request being served on a connection: while one lives, the
/// connection is not closed to make room.
pub struct Busy(Arc<Slot>);

impl Busy {
    pub fn new(slot: Arc<Slot>) -> Busy {
        slot.state.fetch_add(1, Ordering::SeqCst);
        Busy(slot)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let before = self.0.state.fetch_sub(1, Ordering::SeqCst);
        // The last request over, the connection could make room.
        if before == 1 && self.0.room.awaited.load(Ordering::SeqCst) {
            self.0.room.made.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    fn admitted(admission: Admission) -> Ticket {
        match admission {
            Admission::Admitted(ticket) => ticket,
            Admission::OverQuota => panic!("over its quota"),
            Admission::Full => panic!("full"),
        }
    }

    #[test]
    fn a_client_holds_its_share_and_no_more_and_ipv6_counts_per_64() {
        let connections = Connections::new(2, 100, &[]);
        let held: Vec<Ticket> = [
            "192.0.2.7",
            "192.0.2.7",
            "2001:db8:1:2::1",
            "2001:db8:1:2::9",
        ]
        .iter()
        .map(|a| admitted(connections.admit(ip(a))))
        .collect();
        assert!(matches!(
            connections.admit(ip("192.0.2.7")),
            Admission::OverQuota
        ));
        assert!(matches!(
            connections.admit(ip("::ffff:192.0.2.7")),
            Admission::OverQuota
        ));
        assert!(matches!(
            connections.admit(ip("2001:db8:1:2:ffff::1")),
            Admission::OverQuota
        ));
        // Another client, another /64.
        let _other = admitted(connections.admit(ip("192.0.2.8")));
        let _next = admitted(connections.admit(ip("2001:db8:1:3::1")));
        // A connection closed gives its place back.
        drop(held);
        let _again = admitted(connections.admit(ip("192.0.2.7")));
        assert_eq!(connections.open(), 3);
    }

    #[test]
    fn trusted_proxies_are_not_counted() {
        let proxy: IpNet = "10.0.0.2/32".parse().expect("a net");
        let connections = Connections::new(1, 100, &[proxy]);
        let held: Vec<Ticket> = (0..10)
            .map(|_| admitted(connections.admit(ip("10.0.0.2"))))
            .collect();
        assert_eq!(held.len(), 10);
        let _one = admitted(connections.admit(ip("10.0.0.3")));
        assert!(matches!(
            connections.admit(ip("10.0.0.3")),
            Admission::OverQuota
        ));
    }

    #[test]
    fn at_the_cap_the_oldest_connection_serving_nothing_is_closed() {
        let connections = Connections::new(10, 3, &[]);
        let first = admitted(connections.admit(ip("192.0.2.1")));
        let second = admitted(connections.admit(ip("192.0.2.2")));
        let third = admitted(connections.admit(ip("192.0.2.3")));
        // The oldest serves a request: the next oldest goes.
        let busy = Busy::new(first.slot());
        let _fourth = admitted(connections.admit(ip("192.0.2.4")));
        assert_eq!(connections.open(), 3);
        assert_eq!(second.slot.state.load(Ordering::SeqCst), CLOSED);
        assert_eq!(first.slot.state.load(Ordering::SeqCst), 1);
        // Closed, it no longer counts against its client.
        let _again = admitted(connections.admit(ip("192.0.2.2")));
        assert_eq!(third.slot.state.load(Ordering::SeqCst), CLOSED);
        drop(second);
        drop(third);
        assert_eq!(connections.open(), 3);
        // Every connection serving a request: no room.
        let all: Vec<Busy> = connections
            .table()
            .open
            .values()
            .map(|slot| Busy::new(slot.clone()))
            .collect();
        assert!(matches!(
            connections.admit(ip("192.0.2.5")),
            Admission::Full
        ));
        drop(all);
        drop(busy);
        let _fifth = admitted(connections.admit(ip("192.0.2.5")));
        assert_eq!(first.slot.state.load(Ordering::SeqCst), CLOSED);
    }

    #[tokio::test]
    async fn a_waiting_accept_is_woken_when_a_connection_falls_idle() {
        let connections = Connections::new(10, 1, &[]);
        let only = admitted(connections.admit(ip("192.0.2.1")));
        let busy = Busy::new(only.slot());
        assert!(matches!(
            connections.admit(ip("192.0.2.2")),
            Admission::Full
        ));
        drop(busy);
        tokio::time::timeout(std::time::Duration::from_secs(5), connections.released())
            .await
            .expect("woken");
        let _next = admitted(connections.admit(ip("192.0.2.2")));
        assert_eq!(only.slot.state.load(Ordering::SeqCst), CLOSED);
    }

    #[tokio::test]
    async fn a_closed_connection_is_told_and_a_waiting_accept_woken() {
        let connections = Connections::new(10, 1, &[]);
        let first = admitted(connections.admit(ip("192.0.2.1")));
        let _second = admitted(connections.admit(ip("192.0.2.2")));
        // Told even though it was not waiting yet.
        tokio::time::timeout(std::time::Duration::from_secs(5), first.closed())
            .await
            .expect("told it was closed");
        drop(first);
        tokio::time::timeout(std::time::Duration::from_secs(5), connections.released())
            .await
            .expect("woken");
    }
}
