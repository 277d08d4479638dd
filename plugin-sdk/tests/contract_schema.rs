//! The committed `contract.schema.json` is the schema the types generate.
//! Regenerate it with
//! `UPDATE_SCHEMA=1 cargo test -p plugin-sdk --features schema`.

#![cfg(feature = "schema")]

use std::path::Path;

#[test]
fn committed_schema_is_up_to_date() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("contract.schema.json");
    let generated = plugin_sdk::schema::contract_schema_json();
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &generated).expect("contract.schema.json is writable");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "plugin-sdk/contract.schema.json is not the schema the contract types generate \
         (missing, or the types changed). Regenerate it with\n\n    \
         UPDATE_SCHEMA=1 cargo test -p plugin-sdk --features schema\n\nand commit it."
    );
}
