//! Black-box tests of the HTTP API. Every test runs on SQLite and on
//! PostgreSQL (see `db_test!`), against the real host on a real socket.
//!
//! Index:
//! - `smoke`: the host starts, answers /health and the OpenAPI document.

mod smoke;
