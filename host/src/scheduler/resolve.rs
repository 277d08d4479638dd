//! Name lookup for the callback client: a host name is resolved when the
//! callback is sent, and only the addresses [`Destinations`] allows are
//! handed to the connector. The address checked is the address connected
//! to, so a name that resolves to a public address when the request is
//! made and to 127.0.0.1 or 169.254.169.254 when the callback is sent (DNS
//! rebinding) reaches neither. Addresses written in the URL never come
//! here: the sender checks those itself.

use std::net::SocketAddr;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::auth::destination::{Destinations, Refused};

/// Resolves with the system's resolver and keeps only allowed addresses.
#[derive(Debug, Clone)]
pub struct CheckedResolver {
    destinations: Destinations,
}

impl CheckedResolver {
    pub fn new(destinations: Destinations) -> CheckedResolver {
        CheckedResolver { destinations }
    }
}

/// A host name that resolved only to addresses that are not allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoAllowedAddress {
    pub host: String,
    pub refused: Vec<Refused>,
}

impl std::fmt::Display for NoAllowedAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} resolves to no allowed address", self.host)?;
        for (i, refused) in self.refused.iter().enumerate() {
            f.write_str(if i == 0 { ": " } else { "; " })?;
            write!(f, "{refused}")?;
        }
        Ok(())
    }
}

impl std::error::Error for NoAllowedAddress {}

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let destinations = self.destinations.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            // Port 0: the connector puts in the URL's port.
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let (kept, refused) = keep_allowed(&destinations, found);
            if kept.is_empty() {
                return Err(Box::new(NoAllowedAddress { host, refused }) as _);
            }
            if !refused.is_empty() {
                tracing::warn!(
                    host,
                    refused = ?refused.iter().map(|r| r.address).collect::<Vec<_>>(),
                    "callback host also resolves to addresses that are not allowed; they are skipped"
                );
            }
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}

/// The allowed addresses of `found`, in order, and why the others are not.
fn keep_allowed(
    destinations: &Destinations,
    found: Vec<SocketAddr>,
) -> (Vec<SocketAddr>, Vec<Refused>) {
    let mut kept = Vec::with_capacity(found.len());
    let mut refused = Vec::new();
    for address in found {
        match destinations.check(address.ip()) {
            Ok(()) => kept.push(address),
            Err(why) => refused.push(why),
        }
    }
    (kept, refused)
}

/// The [`NoAllowedAddress`] somewhere in `error`'s chain of causes: the
/// connector wraps what the resolver answered.
pub fn refusal<'e>(error: &'e (dyn std::error::Error + 'static)) -> Option<&'e NoAllowedAddress> {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if let Some(found) = e.downcast_ref::<NoAllowedAddress>() {
            return Some(found);
        }
        cause = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().expect("a socket address")
    }

    #[test]
    fn only_allowed_addresses_are_kept() {
        let (kept, refused) = keep_allowed(
            &Destinations::default(),
            vec![
                addr("127.0.0.1:0"),
                addr("93.184.215.14:0"),
                addr("[::ffff:169.254.169.254]:0"),
                addr("[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:0"),
            ],
        );
        assert_eq!(
            kept,
            [
                addr("93.184.215.14:0"),
                addr("[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:0")
            ]
        );
        assert_eq!(
            refused
                .iter()
                .map(|r| r.address.to_string())
                .collect::<Vec<_>>(),
            ["127.0.0.1", "169.254.169.254"]
        );
    }

    #[tokio::test]
    async fn localhost_resolves_to_nothing_allowed_unless_loopback_is_allowed() {
        let refused = CheckedResolver::new(Destinations::default())
            .resolve("localhost".parse().expect("a name"))
            .await
            .err()
            .expect("refused");
        let found = refusal(&*refused).expect("the refusal");
        assert_eq!(found.host, "localhost");
        assert!(
            found
                .to_string()
                .starts_with("localhost resolves to no allowed address: "),
            "{found}"
        );
        let allowed = CheckedResolver::new(Destinations::new(vec![
            "127.0.0.0/8".parse().expect("a network"),
            "::1/128".parse().expect("a network"),
        ]))
        .resolve("localhost".parse().expect("a name"))
        .await
        .expect("resolved");
        assert!(allowed.into_iter().all(|a| a.ip().is_loopback()));
    }
}
