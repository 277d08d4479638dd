//! Origins a token may send respondents back to (decisions.md §6): an https
//! scheme (http only for loopback hosts), a host and an optional port,
//! nothing else.

/// Normalizes one origin: lower-case, no trailing slash, default port
/// dropped. Refuses paths, queries, user info and other schemes.
pub fn parse(text: &str) -> Result<String, String> {
    let text = text.trim().trim_end_matches('/');
    let bad =
        || format!("{text:?} is not an origin like https://epd.example.org or https://host:8443");
    let (scheme, rest) = text.split_once("://").ok_or_else(bad)?;
    let scheme = scheme.to_ascii_lowercase();
    if rest.is_empty() || rest.contains(['/', '?', '#', '@', '\\', ' ']) {
        return Err(bad());
    }
    let rest = rest.to_ascii_lowercase();
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || rest.starts_with('[') => match p.parse::<u16>() {
            Ok(port) => (h.to_owned(), Some(port)),
            Err(_) if rest.starts_with('[') && rest.ends_with(']') => (rest.clone(), None),
            Err(_) => return Err(bad()),
        },
        _ => (rest.clone(), None),
    };
    if host.is_empty() {
        return Err(bad());
    }
    match scheme.as_str() {
        "https" => {}
        "http" if is_loopback(&host) => {}
        "http" => {
            return Err(format!(
                "{text:?}: plain http is allowed only for loopback hosts"
            ));
        }
        _ => return Err(bad()),
    }
    let default_port = if scheme == "https" { 443 } else { 80 };
    Ok(match port {
        Some(p) if p != default_port => format!("{scheme}://{host}:{p}"),
        _ => format!("{scheme}://{host}"),
    })
}

/// `localhost`, `127.x.x.x` or `[::1]`.
pub fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host == "[::1]"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|a| a.is_loopback())
}

/// Parses a comma-separated list of origins.
pub fn parse_list(text: &str) -> Result<Vec<String>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(parse)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_normalized() {
        assert_eq!(
            parse("https://EPD.example.org/").as_deref(),
            Ok("https://epd.example.org")
        );
        assert_eq!(
            parse("https://epd.example.org:443").as_deref(),
            Ok("https://epd.example.org")
        );
        assert_eq!(
            parse("https://epd.example.org:8443").as_deref(),
            Ok("https://epd.example.org:8443")
        );
        assert_eq!(
            parse("http://127.0.0.1:3000").as_deref(),
            Ok("http://127.0.0.1:3000")
        );
        assert_eq!(
            parse("http://[::1]:3000").as_deref(),
            Ok("http://[::1]:3000")
        );
    }

    #[test]
    fn anything_but_an_origin_is_refused() {
        for bad in [
            "http://epd.example.org",
            "https://epd.example.org/path",
            "https://user@epd.example.org",
            "ftp://x",
            "epd.example.org",
            "https://",
            "javascript:alert(1)",
            "https://a\\b",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
