//! Authentication and authorization of API callers (docs/api/rights.md):
//! HTTP Basic with consumer key and secret, JWT bearer tokens signed with a
//! registered RSA key, rights per endpoint group, IP allow-lists, rate
//! limits, and the append-only access log. The guard (`guard.rs`) is given
//! the auth service (`service.rs`: token table, limits, counted refusals)
//! and nothing else of the application.

pub mod at_rest;
pub mod destination;
pub mod forwarded;
pub mod guard;
pub mod ip;
pub mod jwt;
pub mod limits;
pub mod link_secret;
pub mod links;
pub mod metrics_bearer;
pub mod origin;
pub mod refusals;
pub mod rights;
pub mod secret;
pub mod service;
pub mod tokens;
pub mod webhook;
