//! Where the service may connect to on its own account (callbacks to an
//! EPD): addresses on the public internet only. Loopback, private,
//! link-local and the other special-purpose addresses are refused unless
//! the operator allows their network (`--callback-allowed-networks`), so a
//! callback URL cannot make the service call itself, the machines beside
//! it or a cloud metadata service (docs/operations.md#callbacks).
//!
//! The kinds follow the IANA special-purpose address registries (RFC 6890
//! and its updates): iana-ipv4-special-registry and
//! iana-ipv6-special-registry. Every range there that is not globally
//! reachable is refused; IPv6 forms that carry an IPv4 address (mapped,
//! NAT64, 6to4) are judged by that address. Pure: no lookups here.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

use super::ip::canonical;

/// What kind of address an IP address is, for deciding whether the service
/// may connect to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Globally reachable: may be called.
    Public,
    /// `0.0.0.0/8`, `::`: "this host"; connecting to it reaches this machine.
    Unspecified,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// `10/8`, `172.16/12`, `192.168/16` (RFC 1918), `100.64/10` (shared,
    /// RFC 6598), `fc00::/7` (unique local, RFC 4193), `fec0::/10`
    /// (site-local, deprecated by RFC 3879).
    Private,
    /// `169.254/16` (where cloud metadata services answer), `fe80::/10`.
    LinkLocal,
    /// `224/4`, `ff00::/8`.
    Multicast,
    /// `192.0.2/24`, `198.51.100/24`, `203.0.113/24` (RFC 5737),
    /// `2001:db8::/32` (RFC 3849), `3fff::/20` (RFC 9637).
    Documentation,
    /// Every other range the registries list as not globally reachable:
    /// `192.0.0/24`, `192.88.99/24`, `198.18/15`, `240/4` (with the
    /// broadcast address), `::/96` (IPv4-compatible), `64:ff9b:1::/48`,
    /// `100::/64`, `2001::/23`.
    Reserved,
}

impl Kind {
    /// The kind of `address`.
    pub fn of(address: IpAddr) -> Kind {
        match canonical(address) {
            IpAddr::V4(v4) => v4_kind(v4),
            IpAddr::V6(v6) => v6_kind(v6),
        }
    }

    /// A short name, for logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Public => "public",
            Kind::Unspecified => "unspecified",
            Kind::Loopback => "loopback",
            Kind::Private => "private",
            Kind::LinkLocal => "link_local",
            Kind::Multicast => "multicast",
            Kind::Documentation => "documentation",
            Kind::Reserved => "reserved",
        }
    }
}

fn v4_kind(a: Ipv4Addr) -> Kind {
    let [b0, b1, b2, _] = a.octets();
    match (b0, b1, b2) {
        (0, _, _) => Kind::Unspecified,
        (127, _, _) => Kind::Loopback,
        (10, _, _) | (192, 168, _) => Kind::Private,
        (172, 16..=31, _) | (100, 64..=127, _) => Kind::Private,
        (169, 254, _) => Kind::LinkLocal,
        (224..=239, _, _) => Kind::Multicast,
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => Kind::Documentation,
        (192, 0, 0) | (192, 88, 99) | (198, 18..=19, _) | (240..=255, _, _) => Kind::Reserved,
        _ => Kind::Public,
    }
}

fn v6_kind(a: Ipv6Addr) -> Kind {
    let s = a.segments();
    if a.is_unspecified() {
        return Kind::Unspecified;
    }
    if a.is_loopback() {
        return Kind::Loopback;
    }
    match s {
        // NAT64 (RFC 6052): the IPv4 address is the last 32 bits.
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => v4_kind(embedded(hi, lo)),
        [0x64, 0xff9b, 1, ..] => Kind::Reserved,
        // 6to4 (RFC 3056): the IPv4 address follows the prefix.
        [0x2002, hi, lo, ..] => v4_kind(embedded(hi, lo)),
        // IPv4-compatible (deprecated, RFC 4291), and ::/8 around it.
        [0, ..] => Kind::Reserved,
        [0x100, 0, 0, 0, ..] => Kind::Reserved,
        [0x2001, 0xdb8, ..] => Kind::Documentation,
        [0x2001, 0..=0x1ff, ..] => Kind::Reserved,
        [0x3fff, 0..=0xfff, ..] => Kind::Documentation,
        [first, ..] if first & 0xfe00 == 0xfc00 => Kind::Private,
        [first, ..] if first & 0xffc0 == 0xfe80 => Kind::LinkLocal,
        [first, ..] if first & 0xffc0 == 0xfec0 => Kind::Private,
        [first, ..] if first & 0xff00 == 0xff00 => Kind::Multicast,
        _ => Kind::Public,
    }
}

/// The IPv4 address held in two IPv6 segments.
fn embedded(hi: u16, lo: u16) -> Ipv4Addr {
    let [a, b] = hi.to_be_bytes();
    let [c, d] = lo.to_be_bytes();
    Ipv4Addr::new(a, b, c, d)
}

/// Why an address may not be connected to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    pub address: IpAddr,
    pub kind: Kind,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            Kind::Public => "a public",
            Kind::Unspecified => "an unspecified",
            Kind::Loopback => "a loopback",
            Kind::Private => "a private",
            Kind::LinkLocal => "a link-local",
            Kind::Multicast => "a multicast",
            Kind::Documentation => "a documentation",
            Kind::Reserved => "a reserved",
        };
        write!(
            f,
            "{} is {kind} address, not allowed by --callback-allowed-networks",
            self.address
        )
    }
}

impl std::error::Error for Refused {}

/// The addresses the service may connect to: every public one, and those
/// in the networks the operator allows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Destinations {
    allowed: Vec<IpNet>,
}

impl Destinations {
    /// Public addresses, and any address inside `allowed`.
    pub fn new(allowed: Vec<IpNet>) -> Destinations {
        Destinations { allowed }
    }

    /// Ok when the service may connect to `address`.
    pub fn check(&self, address: IpAddr) -> Result<(), Refused> {
        let address = canonical(address);
        match Kind::of(address) {
            Kind::Public => Ok(()),
            _ if self.allowed.iter().any(|net| net.contains(&address)) => Ok(()),
            kind => Err(Refused { address, kind }),
        }
    }

    /// Checks the host of `url` when it is an address written out (which
    /// no name lookup will see); Ok for a host name.
    pub fn check_literal(&self, url: &url::Url) -> Result<(), Refused> {
        match url.host() {
            Some(url::Host::Ipv4(v4)) => self.check(IpAddr::V4(v4)),
            Some(url::Host::Ipv6(v6)) => self.check(IpAddr::V6(v6)),
            Some(url::Host::Domain(_)) | None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(text: &str) -> Kind {
        Kind::of(text.parse().expect("an address"))
    }

    #[test]
    fn ipv4_special_ranges_are_classified() {
        for (address, expected) in [
            ("0.0.0.0", Kind::Unspecified),
            ("0.1.2.3", Kind::Unspecified),
            ("127.0.0.1", Kind::Loopback),
            ("127.255.255.254", Kind::Loopback),
            ("10.0.0.1", Kind::Private),
            ("172.16.0.1", Kind::Private),
            ("172.31.255.255", Kind::Private),
            ("192.168.1.1", Kind::Private),
            ("100.64.0.1", Kind::Private),
            ("100.127.255.255", Kind::Private),
            ("169.254.169.254", Kind::LinkLocal),
            ("224.0.0.1", Kind::Multicast),
            ("239.255.255.250", Kind::Multicast),
            ("192.0.2.10", Kind::Documentation),
            ("198.51.100.7", Kind::Documentation),
            ("203.0.113.9", Kind::Documentation),
            ("192.0.0.8", Kind::Reserved),
            ("192.88.99.1", Kind::Reserved),
            ("198.18.0.1", Kind::Reserved),
            ("198.19.255.255", Kind::Reserved),
            ("240.0.0.1", Kind::Reserved),
            ("255.255.255.255", Kind::Reserved),
        ] {
            assert_eq!(kind(address), expected, "{address}");
        }
    }

    #[test]
    fn public_ipv4_addresses_next_to_the_special_ranges_are_public() {
        for address in [
            "1.1.1.1",
            "9.255.255.255",
            "11.0.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "126.255.255.255",
            "128.0.0.0",
            "169.253.255.255",
            "169.255.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.0.1.1",
            "192.0.3.0",
            "192.167.255.255",
            "192.169.0.0",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
        ] {
            assert_eq!(kind(address), Kind::Public, "{address}");
        }
    }

    #[test]
    fn ipv6_special_ranges_are_classified() {
        for (address, expected) in [
            ("::", Kind::Unspecified),
            ("::1", Kind::Loopback),
            ("fe80::1", Kind::LinkLocal),
            ("febf::1", Kind::LinkLocal),
            ("fc00::1", Kind::Private),
            ("fd12:3456::1", Kind::Private),
            ("fec0::1", Kind::Private),
            ("ff02::1", Kind::Multicast),
            ("2001:db8::1", Kind::Documentation),
            ("3fff::1", Kind::Documentation),
            ("3fff:fff::1", Kind::Documentation),
            ("2001::1", Kind::Reserved),
            ("2001:1ff::1", Kind::Reserved),
            ("100::1", Kind::Reserved),
            ("64:ff9b:1::1", Kind::Reserved),
            // IPv4-compatible, deprecated: never a real destination.
            ("::7f00:1", Kind::Reserved),
            ("::808:808", Kind::Reserved),
        ] {
            assert_eq!(kind(address), expected, "{address}");
        }
        for address in [
            "2606:4700::1111",
            "2a00:1450::1",
            "2001:200::1",
            "3fff:1000::1",
            "4000::1",
        ] {
            assert_eq!(kind(address), Kind::Public, "{address}");
        }
    }

    #[test]
    fn ipv6_forms_of_an_ipv4_address_are_judged_by_that_address() {
        for (address, expected) in [
            ("::ffff:127.0.0.1", Kind::Loopback),
            ("::ffff:0.0.0.0", Kind::Unspecified),
            ("::ffff:10.1.2.3", Kind::Private),
            ("::ffff:169.254.169.254", Kind::LinkLocal),
            ("::ffff:8.8.8.8", Kind::Public),
            ("64:ff9b::127.0.0.1", Kind::Loopback),
            ("64:ff9b::a9fe:a9fe", Kind::LinkLocal),
            ("64:ff9b::8.8.8.8", Kind::Public),
            ("2002:7f00:1::1", Kind::Loopback),
            ("2002:c0a8:101::1", Kind::Private),
            ("2002:808:808::1", Kind::Public),
        ] {
            assert_eq!(kind(address), expected, "{address}");
        }
    }

    #[test]
    fn only_public_addresses_and_allowed_networks_may_be_called() {
        let none = Destinations::default();
        let ip = |t: &str| -> IpAddr { t.parse().expect("an address") };
        assert_eq!(none.check(ip("8.8.8.8")), Ok(()));
        assert_eq!(
            none.check(ip("127.0.0.1")),
            Err(Refused {
                address: ip("127.0.0.1"),
                kind: Kind::Loopback
            })
        );
        // A mapped address is reported, and allowed, as its IPv4 address.
        assert_eq!(
            none.check(ip("::ffff:127.0.0.1")).map_err(|r| r.address),
            Err(ip("127.0.0.1"))
        );
        let loopback = Destinations::new(vec![
            "127.0.0.0/8".parse().expect("a network"),
            "::1/128".parse().expect("a network"),
        ]);
        assert_eq!(loopback.check(ip("127.0.0.1")), Ok(()));
        assert_eq!(loopback.check(ip("::ffff:127.0.0.2")), Ok(()));
        assert_eq!(loopback.check(ip("::1")), Ok(()));
        assert_eq!(
            loopback.check(ip("169.254.169.254")).map_err(|r| r.kind),
            Err(Kind::LinkLocal)
        );
        assert_eq!(
            loopback.check(ip("10.0.0.1")).map_err(|r| r.kind),
            Err(Kind::Private)
        );
    }

    #[test]
    fn literal_hosts_are_checked_and_names_left_to_the_lookup() {
        let none = Destinations::default();
        let url = |t: &str| url::Url::parse(t).expect("a URL");
        for refused in [
            "https://127.0.0.1/cb",
            "https://10.0.0.1/cb",
            "https://169.254.169.254/latest/meta-data",
            "https://[::1]:8443/cb",
            "https://[::ffff:127.0.0.1]/cb",
            "https://0.0.0.0/cb",
            // Other spellings of 127.0.0.1 that URL parsing normalizes.
            "https://2130706433/cb",
            "https://0x7f.1/cb",
            "https://127.1/cb",
        ] {
            assert!(none.check_literal(&url(refused)).is_err(), "{refused}");
        }
        assert_eq!(none.check_literal(&url("https://8.8.8.8/cb")), Ok(()));
        assert_eq!(
            none.check_literal(&url("https://localhost/cb")),
            Ok(()),
            "names are checked when they are looked up"
        );
    }

    #[test]
    fn refusals_say_what_the_address_is() {
        let refused = Destinations::default()
            .check("169.254.169.254".parse().expect("an address"))
            .expect_err("refused");
        assert_eq!(
            refused.to_string(),
            "169.254.169.254 is a link-local address, not allowed by --callback-allowed-networks"
        );
    }
}
