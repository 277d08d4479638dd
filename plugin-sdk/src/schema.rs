//! The JSON Schema of the contract, for plugin authors in other languages
//! and for tools that check plugin output (feature `schema`).
//!
//! [`contract_schema`] generates one JSON Schema document (draft 2020-12)
//! from the same serde types the host and the Rust guests use, so it cannot
//! drift from them. Its `$defs` hold one schema per message:
//!
//! | definition | what it is |
//! |---|---|
//! | `ScorerInput` | the input of a scorer's `outcomes_call` |
//! | `ScorerOutput` | the `ok` value of a scorer's reply |
//! | `ScorerReply` | what a scorer's `outcomes_call` returns |
//! | `CalculatorInput` | the input of a calculator's `outcomes_call` |
//! | `CalculatorOutput` | the `ok` value of a calculator's reply |
//! | `CalculatorReply` | what a calculator's `outcomes_call` returns |
//! | `Manifest` | what `outcomes_describe` returns |
//!
//! plus the types these refer to. The schemas describe what each side
//! accepts when it deserializes: fields with a default may be left out.
//! The crate ships the generated document as `contract.schema.json`; a test
//! fails when it is stale.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

use crate::contract::{
    ABI_VERSION, CONTRACT_VERSION, CalculatorInput, CalculatorOutput, Manifest, Reply, ScorerInput,
    ScorerOutput,
};

/// The contract as one JSON Schema document (draft 2020-12), its messages
/// in `$defs` under the names in the [module docs](self), sorted by name.
pub fn contract_schema() -> Value {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let mut messages = Vec::new();
    add::<ScorerInput>(&mut generator, "ScorerInput", &mut messages);
    add::<ScorerOutput>(&mut generator, "ScorerOutput", &mut messages);
    add::<Reply<ScorerOutput>>(&mut generator, "ScorerReply", &mut messages);
    add::<CalculatorInput>(&mut generator, "CalculatorInput", &mut messages);
    add::<CalculatorOutput>(&mut generator, "CalculatorOutput", &mut messages);
    add::<Reply<CalculatorOutput>>(&mut generator, "CalculatorReply", &mut messages);
    add::<Manifest>(&mut generator, "Manifest", &mut messages);

    let mut defs = generator.take_definitions(true);
    // Give each message its name here (generic types like `Reply<T>` get
    // generated names), then point every reference at the new names.
    let mut renamed = Vec::new();
    for (name, schema) in messages {
        let target = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/$defs/"))
            .filter(|old| defs.contains_key(*old))
            .map(str::to_owned);
        match target {
            Some(old) if old == name => {}
            Some(old) => {
                if let Some(def) = defs.remove(&old) {
                    defs.insert(name.to_owned(), def);
                }
                renamed.push((format!("#/$defs/{old}"), format!("#/$defs/{name}")));
            }
            None => {
                defs.insert(name.to_owned(), schema);
            }
        }
    }
    let mut defs: Vec<(String, Value)> = defs.into_iter().collect();
    defs.sort_by(|a, b| a.0.cmp(&b.0));
    let mut defs: Value = Value::Object(defs.into_iter().collect::<Map<_, _>>());
    rewrite_refs(&mut defs, &renamed);

    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "outcomes plugin contract",
        "description": format!(
            "The JSON the outcomes host and its WebAssembly plugins exchange, ABI_VERSION \
             {ABI_VERSION} (the major version a module's outcomes_abi_version export returns; \
             within a major version fields are only added, as optional), contract version \
             {CONTRACT_VERSION} (which of the added fields a module knows: its Manifest's \
             `contract`, 1 when absent; the host sends each module its version's fields). A scorer's \
             outcomes_call takes a ScorerInput and returns a ScorerReply, a calculator's takes \
             a CalculatorInput and returns a CalculatorReply; a reply is {{\"ok\": output}} \
             or {{\"error\": {{\"message\": text}}}}. outcomes_describe returns a Manifest. \
             Generated from the plugin-sdk crate's types."
        ),
        "$defs": defs,
    })
}

/// [`contract_schema`] as pretty-printed JSON with a trailing newline: the
/// text of the committed `contract.schema.json`.
pub fn contract_schema_json() -> String {
    let mut text = serde_json::to_string_pretty(&contract_schema())
        .unwrap_or_else(|e| format!("\"schema not serializable: {e}\""));
    text.push('\n');
    text
}

fn add<T: JsonSchema>(
    generator: &mut SchemaGenerator,
    name: &'static str,
    messages: &mut Vec<(&'static str, Value)>,
) {
    messages.push((name, generator.subschema_for::<T>().to_value()));
}

fn rewrite_refs(value: &mut Value, renamed: &[(String, String)]) {
    match value {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if key == "$ref"
                    && let Value::String(r) = value
                    && let Some((_, new)) = renamed.iter().find(|(old, _)| old == r)
                {
                    *r = new.clone();
                } else {
                    rewrite_refs(value, renamed);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rewrite_refs(v, renamed)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    match (key.as_str(), value) {
                        ("$ref", Value::String(r)) => out.push(r.clone()),
                        _ => refs(value, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }

    #[test]
    fn every_message_is_defined_and_every_reference_resolves() {
        let schema = contract_schema();
        let defs = schema["$defs"].as_object().expect("$defs");
        for name in [
            "ScorerInput",
            "ScorerOutput",
            "ScorerReply",
            "CalculatorInput",
            "CalculatorOutput",
            "CalculatorReply",
            "Manifest",
        ] {
            assert!(defs.contains_key(name), "no {name} in {:?}", defs.keys());
        }
        let mut found = Vec::new();
        refs(&schema, &mut found);
        assert!(!found.is_empty());
        for r in found {
            let name = r.strip_prefix("#/$defs/").expect("local reference");
            assert!(defs.contains_key(name), "{r} does not resolve");
        }
        let description = schema["description"].as_str().expect("description");
        assert!(description.contains(&format!("ABI_VERSION {ABI_VERSION}")));
    }

    #[test]
    fn replies_reference_their_outputs() {
        let schema = contract_schema();
        let text = |name: &str| schema["$defs"][name].to_string();
        assert!(text("ScorerReply").contains("#/$defs/ScorerOutput"));
        assert!(text("CalculatorReply").contains("#/$defs/CalculatorOutput"));
        assert!(text("ScorerReply").contains("#/$defs/PluginError"));
    }
}
