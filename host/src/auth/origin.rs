//! Origins a token may send respondents back to: an https scheme (http only
//! for loopback hosts), a host and an optional port, nothing else; the
//! URLs the service sends respondents or callbacks to, which must be
//! absolute URLs of such an origin; and the rule that allows one, the
//! token's own origins and those of every token
//! (docs/api/fill-out.md#allowed-urls).

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

/// An absolute https URL (http for loopback hosts) that the service may
/// redirect a respondent to, load a stylesheet from or call back: written
/// as `scheme://host...`, with no user info, and no backslash, whitespace
/// or control character anywhere (browsers read `https:\\evil.example` and
/// `https://epd.example.org\\@evil.example` in ways a plain parser does
/// not). The URL and its normalized origin, or None.
pub fn absolute_url(text: &str) -> Option<(url::Url, String)> {
    if text.len() > 2048
        || text
            .chars()
            .any(|c| c.is_control() || c.is_whitespace() || c == '\\')
    {
        return None;
    }
    let (scheme, rest) = text.split_once("://")?;
    // `https:///x` would be read as the host `x`.
    if rest.is_empty() || rest.starts_with('/') {
        return None;
    }
    if !scheme.eq_ignore_ascii_case("https") && !scheme.eq_ignore_ascii_case("http") {
        return None;
    }
    let url = url::Url::parse(text).ok()?;
    if !url.username().is_empty() || url.password().is_some() {
        return None;
    }
    let host = url.host_str().filter(|h| !h.is_empty())?;
    let origin = match url.port() {
        Some(port) => format!("{}://{host}:{port}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    };
    let origin = parse(&origin).ok()?;
    Some((url, origin))
}

/// Whether respondents and callbacks may be sent to `origin` (normalized,
/// as [`absolute_url`] gives it): it is one of the calling token's allowed
/// origins or one allowed for every token (`allowed_origins`).
pub fn allowed(origin: &str, token: &[String], every_token: &[String]) -> bool {
    token.iter().chain(every_token).any(|o| o == origin)
}

/// Whether a form posted to this service at `public_origin` (normalized)
/// was sent by one of its own pages, as the browser tells: login forms
/// carry no session yet, so no CSRF token, and a page of another site
/// could otherwise log a browser in with a link of its choosing (login
/// CSRF). `Sec-Fetch-Site` decides when present: `same-origin` (our page)
/// or `none` (the user's own doing); without it `Origin` must be absent or
/// be `public_origin`. A request that says neither is no browser's
/// cross-site post; its link is still checked.
pub fn sent_from_own_page(
    public_origin: &str,
    origin: Option<&str>,
    fetch_site: Option<&str>,
) -> bool {
    match fetch_site {
        Some(site) => {
            let site = site.trim();
            site.eq_ignore_ascii_case("same-origin") || site.eq_ignore_ascii_case("none")
        }
        None => origin.is_none_or(|o| parse(o).is_ok_and(|o| o == public_origin)),
    }
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
    fn an_origin_is_allowed_by_the_token_or_for_every_token() {
        let token = ["https://epd.example.org".to_owned()];
        let every = ["https://portal.example.org".to_owned()];
        assert!(allowed("https://epd.example.org", &token, &every));
        assert!(allowed("https://portal.example.org", &token, &every));
        assert!(allowed("https://portal.example.org", &[], &every));
        assert!(!allowed("https://evil.example", &token, &every));
        assert!(!allowed("https://epd.example.org:8443", &token, &every));
        assert!(!allowed("https://epd.example.org", &[], &[]));
    }

    #[test]
    fn only_posts_from_the_service_s_own_pages_count_as_its_own() {
        let ours = "https://rom.example.org";
        let from = |origin, site| sent_from_own_page(ours, origin, site);
        assert!(from(Some("https://rom.example.org"), Some("same-origin")));
        // Under `Referrer-Policy: no-referrer` a browser may send `null`.
        assert!(from(Some("null"), Some("same-origin")));
        assert!(from(None, Some("none")));
        assert!(from(Some("https://ROM.example.org:443"), None));
        assert!(from(None, None), "no browser's cross-site post");
        assert!(!from(Some("https://evil.example"), Some("cross-site")));
        assert!(!from(
            Some("https://sub.rom.example.org"),
            Some("same-site")
        ));
        assert!(!from(Some("https://evil.example"), None));
        assert!(!from(Some("null"), None));
        assert!(!from(None, Some("cross-site")));
    }

    #[test]
    fn absolute_urls_name_their_origin() {
        let (url, origin) =
            absolute_url("https://EPD.example.org:443/rom/back?x=1#top").expect("valid");
        assert_eq!(origin, "https://epd.example.org");
        assert_eq!(url.as_str(), "https://epd.example.org/rom/back?x=1#top");
        let (_, origin) = absolute_url("http://127.0.0.1:9000/cb").expect("valid");
        assert_eq!(origin, "http://127.0.0.1:9000");
        let (_, origin) = absolute_url("https://[::1]:8443/x").expect("valid");
        assert_eq!(origin, "https://[::1]:8443");
    }

    #[test]
    fn urls_with_tricks_are_refused() {
        for bad in [
            "http://epd.example.org/back",
            "https://user@epd.example.org/back",
            "https://epd.example.org@evil.example/back",
            "https://:pw@epd.example.org/back",
            "https://epd.example.org\\@evil.example/back",
            "https:\\\\evil.example/back",
            "https:evil.example/back",
            "//evil.example/back",
            "/relative/path",
            "javascript:alert(1)",
            "JaVaScRiPt://epd.example.org/%0aalert(1)",
            "data:text/html,<script>alert(1)</script>",
            "ftp://epd.example.org/",
            "https://epd.example.org /back",
            "https://epd.example.org/\nSet-Cookie:x",
            "https:///back",
            "",
        ] {
            assert_eq!(absolute_url(bad), None, "{bad}");
        }
        assert_eq!(
            absolute_url(&format!("https://e.org/{}", "x".repeat(2048))),
            None
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
