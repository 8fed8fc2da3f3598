//! What scripts read: the JSON documents and lines of `stats` (`stats.rs`, `health.rs`) and
//! `latency` (`latency.rs`), as types of their own. The views the TUI renders (the state's
//! snapshot, the latency run) convert into these and are never serialised themselves, so a
//! change to a view does not change an output until the contract here changes too.
//!
//! Each output has a JSON Schema (draft 2020-12) under `schemas/` at the repository's top,
//! generated from these types; the test `committed_schemas_are_generated` fails when a
//! committed schema differs from the generated one (`DDSHARK_BLESS=1` rewrites them). The
//! types derive `JsonSchema` only under test: the binary does not carry schemars.

pub mod latency;
pub mod stats;

mod health;

/// A struct of counters, every field a `u64` named as in the struct it is copied from:
/// naming each field here keeps a counter added or renamed there out of the output until
/// the contract names it too.
macro_rules! counters {
    ($(#[$attr:meta])* $name:ident from $src:ty { $($(#[$field_attr:meta])* $field:ident),* $(,)? }) => {
        $(#[$attr])*
        #[derive(Debug, Clone, Copy, serde::Serialize)]
        #[cfg_attr(test, derive(schemars::JsonSchema))]
        pub struct $name {
            $($(#[$field_attr])* pub $field: u64,)*
        }

        impl From<&$src> for $name {
            fn from(s: &$src) -> Self {
                Self { $($field: s.$field,)* }
            }
        }
    };
}
pub(crate) use counters;

/// A string field with one fixed value (a JSON line's `kind`): an enum of one variant, so
/// the schema says `const`.
macro_rules! kind {
    ($(#[$attr:meta])* $name:ident = $value:literal) => {
        $(#[$attr])*
        #[derive(Debug, Clone, Copy, serde::Serialize)]
        #[cfg_attr(test, derive(schemars::JsonSchema))]
        pub enum $name {
            #[serde(rename = $value)]
            Only,
        }
    };
}
pub(crate) use kind;

#[cfg(test)]
mod schemas {
    use std::path::PathBuf;

    use schemars::generate::SchemaSettings;
    use schemars::JsonSchema;
    use serde_json::Value;

    /// Every output's schema file (under `schemas/`) and its type.
    fn generated() -> Vec<(&'static str, Value)> {
        vec![
            ("stats.schema.json", schema_of::<super::stats::Document>()),
            (
                "stats-line.schema.json",
                schema_of::<super::stats::SummaryLine>(),
            ),
            (
                "latency.schema.json",
                schema_of::<super::latency::Document>(),
            ),
            (
                "latency-line.schema.json",
                schema_of::<super::latency::Line>(),
            ),
        ]
    }

    /// The schema of what `T` serialises to, every object closed (`additionalProperties:
    /// false`): an output key the contract does not name is a change to it.
    fn schema_of<T: JsonSchema>() -> Value {
        let schema = SchemaSettings::draft2020_12()
            .for_serialize()
            .into_generator()
            .into_root_schema_for::<T>();
        let mut v = schema.to_value();
        close_objects(&mut v);
        v
    }

    fn close_objects(v: &mut Value) {
        match v {
            Value::Object(m) => {
                if m.contains_key("properties") {
                    m.entry("additionalProperties")
                        .or_insert(Value::Bool(false));
                }
                m.values_mut().for_each(close_objects);
            }
            Value::Array(a) => a.iter_mut().for_each(close_objects),
            _ => {}
        }
    }

    fn schemas_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas")
    }

    #[test]
    fn committed_schemas_are_generated() {
        let bless = std::env::var_os("DDSHARK_BLESS").is_some_and(|v| v == "1");
        let mut stale = Vec::new();
        for (name, schema) in generated() {
            let path = schemas_dir().join(name);
            let text = serde_json::to_string_pretty(&schema).unwrap_or_default() + "\n";
            if bless {
                std::fs::write(&path, &text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                stale.push(name);
            }
        }
        assert!(
            stale.is_empty(),
            "schemas/{stale:?} differ from the types in crates/ddshark/src/output/contract/; \
             after an intended change: DDSHARK_BLESS=1 cargo test -p ddshark --lib contract"
        );
    }
}
