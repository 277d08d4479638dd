//! Black-box tests of the HTTP API. Every test runs on SQLite and on
//! PostgreSQL (see `db_test!`), against the real host on a real socket.
//!
//! Index:
//! - `tls`: HTTPS served by the host with a certificate made in the test.
//! - `smoke`: the host starts, answers /health and the OpenAPI document.
//! - `support`: shared helpers (request bodies, preparing responses through
//!   the store, times on the wire); no tests.
//! - `responses_create`: POST a response: the Response object, retries,
//!   external ids, answer validation, field types, dossier creation.

mod responses_create;
mod smoke;
mod tls;
mod support;
