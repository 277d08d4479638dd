//! IP allow-lists: their entries, and whether one admits a client
//! (docs/api/rights.md#ip-allow-lists). Who the client is, is
//! `forwarded.rs`'s to say.
//!
//! An unknown client passes only an empty list.

use std::net::IpAddr;

use ipnet::{IpNet, Ipv4Net};

/// One entry of an allow-list: an address or a CIDR range.
pub fn parse_entry(text: &str) -> Result<IpNet, String> {
    let text = text.trim();
    let net = match text.parse::<IpNet>() {
        Ok(net) => net.trunc(),
        Err(_) => text
            .parse::<IpAddr>()
            .map(IpNet::from)
            .map_err(|_| format!("{text:?} is neither an IP address nor a CIDR range"))?,
    };
    Ok(canonical_net(net))
}

/// An IPv4-mapped range (`::ffff:10.0.0.1`, `::ffff:10.0.0.0/104`) as the
/// IPv4 range it denotes: client addresses are compared in IPv4 form (see
/// [`canonical`]), so a mapped entry would otherwise never match anyone.
fn canonical_net(net: IpNet) -> IpNet {
    match net {
        IpNet::V6(v6) if v6.prefix_len() >= 96 => v6
            .addr()
            .to_ipv4_mapped()
            .and_then(|v4| Ipv4Net::new(v4, v6.prefix_len() - 96).ok())
            .map_or(net, IpNet::V4),
        other => other,
    }
}

/// Parses a comma-separated allow-list (empty = no restriction).
pub fn parse_list(text: &str) -> Result<Vec<IpNet>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(parse_entry)
        .collect()
}

/// The stored form.
pub fn to_list(nets: &[IpNet]) -> String {
    nets.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Whether a client at `addr` may use a token with this allow-list. An
/// unknown client (None) passes only an empty list.
pub fn allowed(list: &[IpNet], addr: Option<IpAddr>) -> bool {
    list.is_empty()
        || addr
            .map(canonical)
            .is_some_and(|addr| list.iter().any(|net| net.contains(&addr)))
}

/// IPv4-mapped IPv6 addresses (`::ffff:10.0.0.1`) as IPv4.
pub fn canonical(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(addr, IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().expect("address"))
    }

    #[test]
    fn allow_lists_take_addresses_and_ranges() {
        let list = parse_list("10.0.0.0/8, 192.0.2.7").expect("valid");
        assert!(allowed(&list, ip("10.20.30.40")));
        assert!(allowed(&list, ip("192.0.2.7")));
        assert!(allowed(&list, ip("::ffff:192.0.2.7")));
        assert!(!allowed(&list, ip("192.0.2.8")));
        assert!(allowed(&[], ip("203.0.113.1")));
        // An unknown client passes only an empty list.
        assert!(allowed(&[], None));
        assert!(!allowed(&parse_list("0.0.0.0/0").expect("valid"), None));
        assert!(parse_list("10.0.0.0/33").is_err());
        assert!(parse_list("example.org").is_err());
        assert_eq!(to_list(&list), "10.0.0.0/8,192.0.2.7/32");
        // IPv4-mapped entries mean their IPv4 address or range.
        let mapped = parse_list("::ffff:127.0.0.1, ::ffff:10.0.0.0/104").expect("valid");
        assert_eq!(to_list(&mapped), "127.0.0.1/32,10.0.0.0/8");
        assert!(allowed(&mapped, ip("127.0.0.1")));
        assert!(allowed(&mapped, ip("::ffff:10.1.2.3")));
        assert!(!allowed(&mapped, ip("192.0.2.7")));
        assert_eq!(
            to_list(&parse_list("::ffff:0:0/64").expect("valid")),
            "::/64"
        );
    }
}
