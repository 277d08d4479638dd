//! Who is calling, and over what: the connection's peer, and what trusted
//! proxies say in `X-Forwarded-For` and `X-Forwarded-Proto`, or in
//! `Forwarded` (RFC 7239) (docs/operations.md#behind-a-reverse-proxy).
//!
//! A header is read only from a trusted peer, and only as far as trusted
//! proxies wrote it: each proxy appends the address it received the request
//! from, so a list is read from the right, skipping trusted proxies, and the
//! first other address is the client. What a client wrote further left is
//! never read.
//!
//! A proxy writes one of the two headers and passes the other on as the
//! client sent it, and nothing in a request tells which is which. So the
//! operator names the one the proxies write (`proxy_header`, default
//! `X-Forwarded-For`, what nginx, HAProxy's `option forwardfor` and most
//! load balancers write), and the client is read from that header alone:
//! another header, forged or not, neither names the client nor makes it
//! unknown. (Requiring both to agree, as before, let any client blank its
//! own address in the access log by sending a `Forwarded` of its own.)
//! The protocol is stricter: the named header must say `https`, and a
//! statement of the other that says anything else is believed too, since
//! believing it can only refuse credentials.
//!
//! Without connection info nothing is believed. `unsafe_settings` words
//! the start-up warnings about proxy settings that would let a client
//! choose its own address.

use std::net::{IpAddr, SocketAddr};
use std::ops::Deref;

use axum::http::HeaderMap;
use ipnet::IpNet;

use super::ip::canonical;

/// Which header the trusted proxies write the client's address in (the
/// setting `proxy_header`); the client is read from it alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ProxyHeader {
    /// `X-Forwarded-For`, with `X-Forwarded-Proto` for the protocol.
    #[default]
    XForwardedFor,
    /// RFC 7239 `Forwarded`: its `for` and `proto` parameters.
    Forwarded,
}

/// As a flag gives it (and the settings table's default).
impl std::str::FromStr for ProxyHeader {
    type Err = String;

    fn from_str(text: &str) -> Result<ProxyHeader, String> {
        <ProxyHeader as clap::ValueEnum>::from_str(text, false)
    }
}

/// The reverse proxies in front of the service (`trusted_proxies`) and the
/// header they write (`proxy_header`). Derefs to the proxies' networks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies {
    pub nets: Vec<IpNet>,
    pub header: ProxyHeader,
}

impl Deref for TrustedProxies {
    type Target = [IpNet];

    fn deref(&self) -> &[IpNet] {
        &self.nets
    }
}

/// The forwarding headers of a request, every line of each, in order.
/// Several lines of a list header mean what one line joining them with
/// commas means (RFC 9110 §5.3), so all of them are read: a proxy that adds
/// a line of its own (HAProxy's `option forwardfor`) puts it last.
#[derive(Debug, Clone, Default)]
pub struct ProxyHeaders {
    forwarded_for: Vec<String>,
    forwarded: Vec<String>,
    forwarded_proto: Vec<String>,
}

impl ProxyHeaders {
    pub fn of(headers: &HeaderMap) -> ProxyHeaders {
        let lines = |name: &str| {
            headers
                .get_all(name)
                .iter()
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .collect()
        };
        ProxyHeaders {
            forwarded_for: lines("x-forwarded-for"),
            forwarded: lines("forwarded"),
            forwarded_proto: lines("x-forwarded-proto"),
        }
    }
}

/// Who sent a request, as far as the service can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remote {
    /// The connection's peer; None when the server recorded none (then
    /// nothing about the request is trusted).
    pub peer: Option<IpAddr>,
    /// The client: the peer, or what trusted proxies say in the header
    /// they write; None when that is unusable (`unknown`, an obfuscated or
    /// garbled entry). An unknown client passes no IP allow-list.
    pub client: Option<IpAddr>,
    /// Whether the client's request reached a proxy over HTTPS, as a
    /// loopback or trusted-proxy peer says (TLS served by this process
    /// aside): see [`proxied_https`].
    pub proxied_https: bool,
}

impl Remote {
    pub fn of(peer: Option<IpAddr>, headers: &ProxyHeaders, trusted: &TrustedProxies) -> Remote {
        let Some(peer) = peer.map(canonical) else {
            return Remote {
                peer: None,
                client: None,
                proxied_https: false,
            };
        };
        let nets = &trusted.nets;
        let by_forwarded = forwarded(&headers.forwarded, nets);
        let client = if is_trusted(peer, nets) {
            let said = match trusted.header {
                ProxyHeader::XForwardedFor => {
                    walk(&x_forwarded_for(&headers.forwarded_for), nets).map(|(_, c)| c)
                }
                ProxyHeader::Forwarded => by_forwarded.map(|(client, _)| client),
            };
            // A proxy that wrote nothing is the client itself.
            said.unwrap_or(Some(peer))
        } else {
            Some(peer)
        };
        let by_x_forwarded = last_entry(&headers.forwarded_proto);
        let by_forwarded = by_forwarded.and_then(|(_, proto)| proto);
        let (written, passed_on) = match trusted.header {
            ProxyHeader::XForwardedFor => (by_x_forwarded, by_forwarded),
            ProxyHeader::Forwarded => (by_forwarded, by_x_forwarded),
        };
        let proxied_https = (peer.is_loopback() || is_trusted(peer, nets))
            && proxied_https(written, passed_on, !nets.is_empty(), peer.is_loopback());
        Remote {
            peer: Some(peer),
            client,
            proxied_https,
        }
    }

    /// The address a rate limit counts this request against: the client,
    /// else the peer (an unusable forwarded entry is the proxy's client's
    /// doing, so it shares the proxy's bucket), else the unspecified
    /// address (no connection info: all such requests share one bucket).
    pub fn rate_key(self) -> IpAddr {
        self.client
            .or(self.peer)
            .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED))
    }
}

/// Whether a loopback or trusted-proxy peer's request counts as HTTPS.
/// The header the proxies write (`written`: `X-Forwarded-Proto`, or the
/// `proto` of the client's `Forwarded` element) must say `https`, and the
/// other one, when present, must not say anything else: it may be the
/// client's, but believing it can only refuse. With a proxy configured
/// the written one must be present: a proxy that says nothing may be
/// listening on plain HTTP. Without one, a loopback peer that says
/// nothing is a local client (development, operators' scripts) and counts.
fn proxied_https(
    written: Option<&str>,
    passed_on: Option<&str>,
    proxy_configured: bool,
    loopback: bool,
) -> bool {
    if [written, passed_on]
        .iter()
        .flatten()
        .any(|proto| !proto.eq_ignore_ascii_case("https"))
    {
        return false;
    }
    written.is_some() || (!proxy_configured && loopback)
}

fn is_trusted(addr: IpAddr, trusted: &[IpNet]) -> bool {
    trusted.iter().any(|net| net.contains(&addr))
}

/// Reads hops from the right, skipping trusted proxies: the index and
/// address of the first other hop (None for an unusable one), or of the
/// leftmost when every hop is a trusted proxy. None for no hops.
fn walk(hops: &[Option<IpAddr>], trusted: &[IpNet]) -> Option<(usize, Option<IpAddr>)> {
    let mut found = None;
    for (i, hop) in hops.iter().enumerate().rev() {
        found = Some((i, *hop));
        if !hop.is_some_and(|addr| is_trusted(addr, trusted)) {
            break;
        }
    }
    found
}

/// The entries of every `X-Forwarded-For` line, in order; empty list
/// elements are skipped (RFC 9110 §5.6.1).
fn x_forwarded_for(lines: &[String]) -> Vec<Option<IpAddr>> {
    lines
        .iter()
        .flat_map(|line| line.split(','))
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(node)
        .collect()
}

/// The last entry of every `X-Forwarded-Proto` line: what the nearest proxy
/// said.
fn last_entry(lines: &[String]) -> Option<&str> {
    lines
        .iter()
        .flat_map(|line| line.split(','))
        .map(str::trim)
        .rfind(|entry| !entry.is_empty())
}

/// The client and its protocol by `Forwarded`: the `for` of the element
/// the walk stops at, and that element's `proto` (written by the trusted
/// proxy the client reached). None when no line holds an element.
fn forwarded<'a>(
    lines: &'a [String],
    trusted: &[IpNet],
) -> Option<(Option<IpAddr>, Option<&'a str>)> {
    // Each line on its own: a client's line with an open quote cannot
    // swallow the proxy's line after it.
    let elements: Vec<Option<Element<'_>>> = lines
        .iter()
        .flat_map(|line| split_outside_quotes(line, ','))
        .filter(|element| !element.trim().is_empty())
        .map(Element::parse)
        .collect();
    let hops: Vec<Option<IpAddr>> = elements
        .iter()
        .map(|e| e.as_ref().and_then(|e| e.for_node).and_then(node))
        .collect();
    let (i, client) = walk(&hops, trusted)?;
    let proto = elements[i].as_ref().and_then(|e| e.proto);
    Some((client, proto))
}

/// One `Forwarded` element (RFC 7239 §4): `for` and `proto`, values with
/// their quotes removed. Other parameters (`by`, `host`) are not used.
#[derive(Debug, Default)]
struct Element<'a> {
    for_node: Option<&'a str>,
    proto: Option<&'a str>,
}

impl<'a> Element<'a> {
    /// None for an element that is not `name=value` pairs separated by `;`,
    /// or that names a parameter twice (RFC 7239 §4).
    fn parse(text: &'a str) -> Option<Element<'a>> {
        let mut element = Element::default();
        // Empty pairs are allowed (`for=192.0.2.7;`).
        for pair in split_outside_quotes(text, ';') {
            if pair.trim().is_empty() {
                continue;
            }
            let (name, value) = pair.split_once('=')?;
            let name = name.trim();
            let value = unquote(value.trim())?;
            let slot = if name.eq_ignore_ascii_case("for") {
                &mut element.for_node
            } else if name.eq_ignore_ascii_case("proto") {
                &mut element.proto
            } else if name.is_empty() {
                return None;
            } else {
                continue;
            };
            if slot.replace(value).is_some() {
                return None;
            }
        }
        Some(element)
    }
}

/// A token, or a quoted string without its quotes. Escapes (`\"`) are left
/// in: no address or protocol contains one, so such a value never matches.
fn unquote(value: &str) -> Option<&str> {
    match value.strip_prefix('"') {
        Some(rest) => rest.strip_suffix('"'),
        None if value.contains('"') => None,
        None => Some(value),
    }
}

/// `text` split at `separator` where it is not inside a quoted string
/// (RFC 9110 §5.6.4; a backslash escapes the next character in one).
fn split_outside_quotes(text: &str, separator: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in text.char_indices() {
        if escaped {
            escaped = false;
        } else if quoted && c == '\\' {
            escaped = true;
        } else if c == '"' {
            quoted = !quoted;
        } else if c == separator && !quoted {
            parts.push(&text[start..i]);
            start = i + c.len_utf8();
        }
    }
    parts.push(&text[start..]);
    parts
}

/// An address in a forwarding header: IPv4 or IPv6, with or without a port
/// (`192.0.2.7:4711`, `[2001:db8::7]:4711`), an IPv6 address in brackets or
/// bare (as `X-Forwarded-For` writes it). `unknown` and obfuscated
/// identifiers (`_hidden`, RFC 7239 §6) name no address.
fn node(text: &str) -> Option<IpAddr> {
    let text = text.trim();
    let host = match text.strip_prefix('[') {
        Some(rest) => {
            let (host, port) = rest.split_once(']')?;
            if !(port.is_empty() || port.starts_with(':')) {
                return None;
            }
            host
        }
        None if text.matches(':').count() == 1 => text.split_once(':')?.0,
        None => text,
    };
    host.parse::<IpAddr>().ok().map(canonical)
}

/// Settings that leave the service open to forged addresses or to answers
/// in clear, each named in a sentence for the start-up log
/// (docs/operations.md#behind-a-reverse-proxy).
pub fn unsafe_settings(listen: SocketAddr, tls: bool, trusted: &[IpNet]) -> Vec<String> {
    let mut warnings = Vec::new();
    for net in trusted {
        if net.prefix_len() == 0 {
            warnings.push(format!(
                "trusted_proxies holds {net}: every client is believed about its own address \
                 and about HTTPS, so IP allow-lists and the https_required check protect nothing"
            ));
        } else if net.prefix_len() < net.max_prefix_len() && !private(*net) {
            warnings.push(format!(
                "trusted_proxies holds the range {net}, which reaches beyond private networks: \
                 anyone with an address in it is believed about the client's address and HTTPS"
            ));
        }
    }
    if !tls && trusted.is_empty() && !listen.ip().is_loopback() {
        warnings.push(format!(
            "the service listens on {listen} over plain HTTP, without TLS (tls_cert, tls_key) \
             and without a TLS-terminating proxy (trusted_proxies): fill-out pages and their \
             answers travel the network in clear"
        ));
    }
    warnings
}

/// Whether every address of `net` is loopback, private (RFC 1918, RFC 4193)
/// or link-local.
fn private(net: IpNet) -> bool {
    const PRIVATE: [&str; 8] = [
        "127.0.0.0/8",
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "169.254.0.0/16",
        "::1/128",
        "fc00::/7",
        "fe80::/10",
    ];
    PRIVATE
        .iter()
        .filter_map(|p| p.parse::<IpNet>().ok())
        .any(|p| p.contains(&net))
}

#[cfg(test)]
mod tests;
