//! The forwarding rules on header text: which address is the client, and
//! when a proxied request counts as HTTPS.

use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().expect("address")
}

fn nets(list: &str) -> Vec<IpNet> {
    super::super::ip::parse_list(list).expect("valid list")
}

/// Headers as lines: `("x-forwarded-for", "a, b")`, one pair per line.
fn headers(lines: &[(&str, &str)]) -> ProxyHeaders {
    let mut map = HeaderMap::new();
    for (name, value) in lines {
        map.append(
            axum::http::HeaderName::from_bytes(name.as_bytes()).expect("name"),
            axum::http::HeaderValue::from_str(value).expect("value"),
        );
    }
    ProxyHeaders::of(&map)
}

/// `trusted` writing `header`.
fn proxies(trusted: &str, header: ProxyHeader) -> TrustedProxies {
    TrustedProxies {
        nets: nets(trusted),
        header,
    }
}

/// The client behind proxies that write X-Forwarded-For (the default).
fn client(peer: &str, lines: &[(&str, &str)], trusted: &str) -> Option<IpAddr> {
    client_by(ProxyHeader::XForwardedFor, peer, lines, trusted)
}

fn client_by(
    header: ProxyHeader,
    peer: &str,
    lines: &[(&str, &str)],
    trusted: &str,
) -> Option<IpAddr> {
    Remote::of(Some(ip(peer)), &headers(lines), &proxies(trusted, header)).client
}

fn https(peer: &str, lines: &[(&str, &str)], trusted: &str) -> bool {
    https_by(ProxyHeader::XForwardedFor, peer, lines, trusted)
}

fn https_by(header: ProxyHeader, peer: &str, lines: &[(&str, &str)], trusted: &str) -> bool {
    Remote::of(Some(ip(peer)), &headers(lines), &proxies(trusted, header)).proxied_https
}

const FORWARDED: ProxyHeader = ProxyHeader::Forwarded;

const PROXY: &str = "10.0.0.1";

#[test]
fn headers_count_only_from_a_trusted_proxy() {
    let forged = [
        ("x-forwarded-for", "192.0.2.7"),
        ("forwarded", "for=192.0.2.7"),
    ];
    assert_eq!(
        client("203.0.113.9", &forged, PROXY),
        Some(ip("203.0.113.9"))
    );
    assert_eq!(client("127.0.0.1", &forged, ""), Some(ip("127.0.0.1")));
    assert_eq!(
        client(PROXY, &[("x-forwarded-for", "192.0.2.7")], PROXY),
        Some(ip("192.0.2.7"))
    );
    // A proxy that says nothing is the client.
    assert_eq!(client(PROXY, &[], PROXY), Some(ip(PROXY)));
    assert_eq!(
        client(PROXY, &[("x-forwarded-for", " , ")], PROXY),
        Some(ip(PROXY))
    );
}

#[test]
fn every_x_forwarded_for_line_is_read_from_the_right() {
    // HAProxy's `option forwardfor` adds a line of its own after the
    // client's forged one.
    let two_lines = [
        ("x-forwarded-for", "192.0.2.7"),
        ("x-forwarded-for", "198.51.100.3"),
    ];
    assert_eq!(client(PROXY, &two_lines, PROXY), Some(ip("198.51.100.3")));
    // The same as one line.
    assert_eq!(
        client(
            PROXY,
            &[("x-forwarded-for", "192.0.2.7, 198.51.100.3")],
            PROXY
        ),
        Some(ip("198.51.100.3"))
    );
    // Trusted proxies in the chain are skipped, on any line.
    let chain = [
        ("x-forwarded-for", "192.0.2.7, 198.51.100.3"),
        ("x-forwarded-for", "10.0.0.2"),
    ];
    assert_eq!(
        client(PROXY, &chain, "10.0.0.0/24"),
        Some(ip("198.51.100.3"))
    );
    // Every hop a trusted proxy: the leftmost.
    assert_eq!(
        client(
            PROXY,
            &[("x-forwarded-for", "10.0.0.3, 10.0.0.2")],
            "10.0.0.0/24"
        ),
        Some(ip("10.0.0.3"))
    );
    // Ports, brackets and IPv4-mapped addresses.
    for (entry, expected) in [
        ("192.0.2.7:4711", "192.0.2.7"),
        ("2001:db8::7", "2001:db8::7"),
        ("[2001:db8::7]:4711", "2001:db8::7"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
    ] {
        assert_eq!(
            client(PROXY, &[("x-forwarded-for", entry)], PROXY),
            Some(ip(expected)),
            "{entry}"
        );
    }
}

#[test]
fn an_unusable_entry_makes_the_client_unknown() {
    for entry in ["garbage", "unknown", "192.0.2.7, garbage", "[2001:db8::7"] {
        assert_eq!(
            client(PROXY, &[("x-forwarded-for", entry)], PROXY),
            None,
            "{entry}"
        );
    }
    // Garbage left of the client is never read.
    assert_eq!(
        client(PROXY, &[("x-forwarded-for", "garbage, 192.0.2.7")], PROXY),
        Some(ip("192.0.2.7"))
    );
}

#[test]
fn forwarded_is_read_like_x_forwarded_for_when_the_proxies_write_it() {
    let cases = [
        ("for=192.0.2.7", Some("192.0.2.7")),
        ("For=\"192.0.2.7:4711\";proto=https", Some("192.0.2.7")),
        ("for=\"[2001:db8::7]:4711\"", Some("2001:db8::7")),
        ("for=\"[2001:db8::7]\"", Some("2001:db8::7")),
        ("for=192.0.2.7, for=198.51.100.3", Some("198.51.100.3")),
        (
            "for=198.51.100.3;by=10.0.0.1;host=\"rom.example\"",
            Some("198.51.100.3"),
        ),
        ("for=198.51.100.3, for=10.0.0.2", Some("198.51.100.3")),
        // RFC 7239 §6: unknown and obfuscated nodes name no address.
        ("for=unknown", None),
        ("for=_hidden", None),
        ("for=\"_hidden:4711\"", None),
        // Malformed elements.
        ("for", None),
        ("for=192.0.2.7;for=198.51.100.3", None),
        ("proto=https", None),
        ("for=\"192.0.2.7", None),
        ("for=192.0.2.7\"", None),
    ];
    for (header, expected) in cases {
        assert_eq!(
            client_by(FORWARDED, PROXY, &[("forwarded", header)], "10.0.0.0/24"),
            expected.map(ip),
            "{header}"
        );
    }
    // A client's line with an open quote does not swallow the proxy's.
    let lines = [
        ("forwarded", "for=\"192.0.2.7, "),
        ("forwarded", "for=198.51.100.3"),
    ];
    assert_eq!(
        client_by(FORWARDED, PROXY, &lines, PROXY),
        Some(ip("198.51.100.3"))
    );
    // A quoted comma does not split an element.
    assert_eq!(
        client_by(
            FORWARDED,
            PROXY,
            &[("forwarded", "for=198.51.100.3;host=\"a,b\"")],
            PROXY
        ),
        Some(ip("198.51.100.3"))
    );
}

#[test]
fn only_the_header_the_proxies_write_names_the_client() {
    // The proxy wrote one; the client forged the other, which changes
    // nothing: it neither names the client nor makes it unknown.
    let forged_forwarded = [
        ("x-forwarded-for", "198.51.100.3"),
        ("forwarded", "for=192.0.2.7"),
    ];
    assert_eq!(
        client(PROXY, &forged_forwarded, PROXY),
        Some(ip("198.51.100.3"))
    );
    let forged_xff = [
        ("x-forwarded-for", "192.0.2.7"),
        ("forwarded", "for=198.51.100.3"),
    ];
    assert_eq!(
        client_by(FORWARDED, PROXY, &forged_xff, PROXY),
        Some(ip("198.51.100.3"))
    );
    // Garbage in the other header does not make the client unknown.
    let garbage = [
        ("x-forwarded-for", "198.51.100.3"),
        ("forwarded", "for=unknown"),
    ];
    assert_eq!(client(PROXY, &garbage, PROXY), Some(ip("198.51.100.3")));
    // The other header alone: the proxy wrote nothing the service reads,
    // so it is the client, never the address the other header names.
    assert_eq!(
        client(PROXY, &[("forwarded", "for=192.0.2.7")], PROXY),
        Some(ip(PROXY))
    );
    assert_eq!(
        client_by(FORWARDED, PROXY, &[("x-forwarded-for", "192.0.2.7")], PROXY),
        Some(ip(PROXY))
    );
}

#[test]
fn the_proxy_header_setting_takes_its_two_names() {
    assert_eq!("x-forwarded-for".parse(), Ok(ProxyHeader::XForwardedFor));
    assert_eq!("forwarded".parse(), Ok(ProxyHeader::Forwarded));
    assert!("x-real-ip".parse::<ProxyHeader>().is_err());
}

#[test]
fn missing_connection_info_trusts_nothing() {
    let lines = headers(&[
        ("x-forwarded-for", "192.0.2.7"),
        ("x-forwarded-proto", "https"),
    ]);
    let remote = Remote::of(
        None,
        &lines,
        &proxies("0.0.0.0/0", ProxyHeader::XForwardedFor),
    );
    assert_eq!(
        remote,
        Remote {
            peer: None,
            client: None,
            proxied_https: false,
        }
    );
}

#[test]
fn a_proxy_must_say_https() {
    let https_proto = [("x-forwarded-proto", "https")];
    let https_element = [("forwarded", "for=192.0.2.7;proto=https")];
    // With a proxy configured, from the proxy or loopback, in the header
    // the proxies write.
    for peer in [PROXY, "127.0.0.1", "::1"] {
        assert!(https(peer, &https_proto, PROXY), "{peer}");
        assert!(
            https(peer, &[("x-forwarded-proto", "HTTPS")], PROXY),
            "{peer}"
        );
        assert!(!https(peer, &[], PROXY), "{peer} said nothing");
        assert!(
            !https(peer, &[("x-forwarded-proto", "http")], PROXY),
            "{peer}"
        );
        assert!(https_by(FORWARDED, peer, &https_element, PROXY), "{peer}");
        assert!(
            !https_by(
                FORWARDED,
                peer,
                &[("forwarded", "for=192.0.2.7;proto=http")],
                PROXY
            ),
            "{peer}"
        );
        // The other header saying https is not the proxy's word.
        assert!(!https(peer, &https_element, PROXY), "{peer}");
        assert!(!https_by(FORWARDED, peer, &https_proto, PROXY), "{peer}");
    }
    // Never from anyone else.
    assert!(!https("203.0.113.9", &https_proto, PROXY));
    assert!(!https("203.0.113.9", &https_proto, ""));
    // Without a proxy, loopback counts unless it says otherwise.
    assert!(https("127.0.0.1", &[], ""));
    assert!(https("127.0.0.1", &https_proto, ""));
    assert!(!https("127.0.0.1", &[("x-forwarded-proto", "http")], ""));
    assert!(!https(
        "127.0.0.1",
        &[("forwarded", "for=192.0.2.7;proto=http")],
        ""
    ));
    // The nearest proxy's word: the last entry of the last line.
    let lines = [
        ("x-forwarded-proto", "https"),
        ("x-forwarded-proto", "http"),
    ];
    assert!(!https(PROXY, &lines, PROXY));
    assert!(https(PROXY, &[("x-forwarded-proto", "http, https")], PROXY));
    // Either header saying anything but https refuses: believing it can
    // only refuse credentials.
    let mixed = [
        ("x-forwarded-proto", "https"),
        ("forwarded", "for=192.0.2.7;proto=http"),
    ];
    assert!(!https(PROXY, &mixed, PROXY));
    let mixed = [
        ("x-forwarded-proto", "http"),
        ("forwarded", "for=192.0.2.7;proto=https"),
    ];
    assert!(!https_by(FORWARDED, PROXY, &mixed, PROXY));
    // Forwarded: the proto of the client's element, written by the proxy
    // the client reached; an inner hop over http does not matter, a
    // client's forged element further left is not read.
    let chain = "for=192.0.2.7;proto=https, for=10.0.0.2;proto=http";
    assert!(https_by(
        FORWARDED,
        PROXY,
        &[("forwarded", chain)],
        "10.0.0.0/24"
    ));
    let forged = "for=198.51.100.3;proto=https, for=192.0.2.7;proto=http";
    assert!(!https_by(FORWARDED, PROXY, &[("forwarded", forged)], PROXY));
}

#[test]
fn unsafe_settings_are_named() {
    let loopback: SocketAddr = "127.0.0.1:8080".parse().expect("address");
    let everywhere: SocketAddr = "0.0.0.0:8080".parse().expect("address");
    assert!(unsafe_settings(loopback, false, &[]).is_empty());
    assert!(unsafe_settings(everywhere, true, &[]).is_empty());
    assert!(unsafe_settings(everywhere, false, &nets("10.0.0.0/8, 203.0.113.9")).is_empty());
    assert!(unsafe_settings(loopback, false, &nets("fd00::/8, 127.0.0.1")).is_empty());
    let plain = unsafe_settings(everywhere, false, &[]);
    assert_eq!(plain.len(), 1);
    assert!(plain[0].contains("0.0.0.0:8080"), "{plain:?}");
    for list in ["0.0.0.0/0", "::/0", "203.0.113.0/24", "10.0.0.0/7"] {
        let warnings = unsafe_settings(loopback, false, &nets(list));
        assert_eq!(warnings.len(), 1, "{list}: {warnings:?}");
        assert!(warnings[0].contains(list), "{warnings:?}");
    }
}
