//! Authentication and authorization of API callers (docs/api/rights.md):
//! HTTP Basic with consumer key and secret, JWT bearer tokens signed with a
//! registered RSA key, rights per endpoint group, IP allow-lists, rate
//! limits, and the append-only access log.

pub mod at_rest;
pub mod destination;
pub mod forwarded;
pub mod guard;
pub mod ip;
pub mod jwt;
pub mod limits;
pub mod links;
pub mod origin;
pub mod refusals;
pub mod rights;
pub mod secret;
pub mod tokens;
pub mod webhook;
