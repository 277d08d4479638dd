//! Black-box tests of the HTTP API. Every test runs on SQLite and on
//! PostgreSQL (see `db_test!`), against the real host on a real socket.
//!
//! Index:
//! - `auth`: Basic and JWT authentication, forged and unacceptable JWTs,
//!   rights, IP allow-lists, X-Forwarded-For, JWT subject, HTTPS, other
//!   dossiers' ids.
//! - `access_log`: one row per dossier access (reads, writes, refusals), none
//!   outside dossiers; append-only at the database level.
//! - `tls`: HTTPS served by the host with a certificate made in the test.
//! - `smoke`: the host starts, answers /health and the OpenAPI document.
//! - `support`: shared helpers (request bodies, preparing responses through
//!   the store, times on the wire); no tests.
//! - `responses_create`: POST a response: the Response object, retries,
//!   external ids, answer validation, field types, dossier creation.

mod access_log;
mod auth;
mod responses_create;
mod smoke;
mod tls;
mod support;
