//! The schema's consumers outside Rust agree with it: the attribute and measurement tables
//! of docs/span-schema.md, the measurements the Flux queries, dashboards and Python checks
//! name, and the file the Python checks read (scripts/stack/span_schema.json).
//! `UPDATE_SCHEMA=1` rewrites that file from the schema.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use span_schema::{
    influx, influx_span_fields, influx_span_tags, measurement, raw_writer_fields, raw_writer_tags,
    Stored, ValueType, JOIN_COUNTERS, JOIN_MEASUREMENTS, SAMPLE_WINDOW_NS, SPAN_ATTRIBUTES,
};

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn set<'a>(v: impl IntoIterator<Item = &'a str>) -> BTreeSet<String> {
    v.into_iter().map(String::from).collect()
}

#[test]
fn the_stack_gives_the_join_the_schemas_sample_window() {
    let seconds = SAMPLE_WINDOW_NS / 1_000_000_000;
    assert_eq!(
        seconds * 1_000_000_000,
        SAMPLE_WINDOW_NS,
        "a whole number of seconds"
    );
    let window = format!("${{DDSHARK_JOIN_SAMPLE_WINDOW:-{seconds}s}}");
    for path in ["scripts/stack/start.sh", "deploy/docker-compose.yml"] {
        let text = read(path);
        assert!(
            text.contains(&window),
            "{path}: the join's sample window {window}"
        );
    }
}

/// The quoted `dds_…` names in `text` (JSON's escaped quotes too).
fn quoted_dds_names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in text.match_indices("\"dds_") {
        let name: String = text[at + 1..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let after = text[at + 1 + name.len()..].trim_start_matches('\\');
        if after.starts_with('"') {
            out.insert(name);
        }
    }
    out
}

#[test]
fn flux_dashboards_and_python_name_only_the_joins_measurements() {
    let mut files = Vec::new();
    for (dir, ext) in [
        ("flux-queries", "flux"),
        ("flux-queries/tasks", "flux"),
        ("grafana/dashboards", "json"),
        ("scripts/ddtools", "py"),
    ] {
        for e in std::fs::read_dir(repo(dir)).unwrap_or_else(|e| panic!("{dir}: {e}")) {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == ext) {
                files.push(p);
            }
        }
    }
    // (and the writers' facts of the raw bucket)
    let mut known = set(JOIN_MEASUREMENTS);
    known.insert(measurement::WRITERS.to_string());
    let mut named = BTreeSet::new();
    for p in &files {
        let text = std::fs::read_to_string(p).unwrap();
        for m in quoted_dds_names(&text) {
            assert!(
                known.contains(&m),
                "{}: measurement {m:?} is not one the join writes (span_schema::JOIN_MEASUREMENTS, measurement::WRITERS)",
                p.display()
            );
            named.insert(m);
        }
    }
    assert!(
        named.contains(measurement::LATENCY),
        "found no measurement names: {files:?}"
    );
}

/// `(key, type)` of the rows of the first markdown table after `heading`.
fn doc_table(doc: &str, heading: &str) -> BTreeSet<(String, String)> {
    let from = doc
        .find(heading)
        .unwrap_or_else(|| panic!("span-schema.md: no {heading}"));
    let mut out = BTreeSet::new();
    let mut in_table = false;
    for line in doc[from..].lines() {
        let is_row = line.starts_with("| `");
        if in_table && !line.starts_with('|') {
            break;
        }
        in_table |= line.starts_with('|');
        if !is_row {
            continue;
        }
        let cols: Vec<&str> = line.split('|').map(str::trim).collect();
        for key in backticked(cols[1]) {
            out.insert((key, cols[2].to_string()));
        }
    }
    out
}

fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s.to_string())
        .collect()
}

/// The backticked words of the paragraph starting with `start`.
fn doc_paragraph(doc: &str, start: &str) -> BTreeSet<String> {
    let from = doc
        .find(start)
        .unwrap_or_else(|| panic!("span-schema.md: no paragraph {start:?}"));
    let para = doc[from..].split("\n\n").next().unwrap_or("");
    backticked(para).into_iter().collect()
}

#[test]
fn docs_tables_match_the_schema() {
    let doc = read("docs/span-schema.md");
    let typed = |keep: &dyn Fn(&span_schema::SpanAttribute) -> bool| {
        SPAN_ATTRIBUTES
            .iter()
            .filter(|a| keep(a))
            .map(|a| (a.key.to_string(), a.ty.doc_name().to_string()))
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(
        doc_table(&doc, "### Span attributes"),
        typed(&|a| a.on_submessage_spans()),
        "DATA/DATA_FRAG attributes"
    );
    let mut lean = doc_paragraph(&doc, "With `--otlp-lean`");
    lean.remove("--otlp-lean");
    assert_eq!(
        lean,
        set(SPAN_ATTRIBUTES
            .iter()
            .filter(|a| a.lean_drops)
            .map(|a| a.key)),
        "what --otlp-lean leaves out"
    );
    let sample_own = doc_table(&doc, "Attributes: `traffic_type`");
    let mut sample: BTreeSet<String> = sample_own.iter().map(|(k, _)| k.clone()).collect();
    sample.extend(doc_paragraph(&doc, "Attributes: `traffic_type`"));
    assert_eq!(
        sample,
        set(SPAN_ATTRIBUTES
            .iter()
            .filter(|a| a.on_sample_spans())
            .map(|a| a.key)),
        "SAMPLE attributes"
    );
    assert!(sample_own.is_subset(&typed(&|a| a.on_sample_spans())));
    let stored_tags: BTreeSet<String> = doc_table(&doc, "| tags (bounded by the deployment)")
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        stored_tags,
        set(influx_span_tags()),
        "the tags of measurement spans"
    );
    let stored_fields: BTreeSet<(String, String)> = doc_table(&doc, "| fields | type |")
        .into_iter()
        .map(|(k, ty)| (k, ty.split(' ').next().unwrap_or("").to_string()))
        .collect();
    let influx_type = |t: ValueType| match t {
        ValueType::Int => "integer",
        ValueType::Str => "string",
    };
    assert_eq!(
        stored_fields,
        influx_span_fields()
            .into_iter()
            .map(|(k, t)| (k.to_string(), influx_type(t).to_string()))
            .collect(),
        "the fields of measurement spans"
    );
    let writer_tags: BTreeSet<String> = doc_table(&doc, "| writer series tags |")
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        writer_tags,
        set(raw_writer_tags()),
        "the tags of measurement dds_writers"
    );
    let writer_fields: BTreeSet<(String, String)> =
        doc_table(&doc, "| writer series fields | type |")
            .into_iter()
            .map(|(k, ty)| (k, ty.split(' ').next().unwrap_or("").to_string()))
            .collect();
    assert_eq!(
        writer_fields,
        raw_writer_fields()
            .into_iter()
            .map(|(k, t)| (k.to_string(), influx_type(t).to_string()))
            .collect(),
        "the fields of measurement dds_writers"
    );
    let join: BTreeSet<String> = doc_table(&doc, "### Materialised latencies")
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(join, set(JOIN_MEASUREMENTS), "the join's measurements");
    let long_bucket = doc
        .lines()
        .find(|l| l.starts_with("| `ddshark_long` |"))
        .expect("span-schema.md: the retention table's long bucket row");
    let held = set(backticked(long_bucket).iter().map(String::as_str));
    for m in JOIN_MEASUREMENTS {
        assert!(
            held.contains(m),
            "span-schema.md: the long bucket holds {m}"
        );
    }
    assert!(
        doc.contains(&format!("`{}`", measurement::JOIN)),
        "span-schema.md: the join's counters"
    );
}

/// What scripts/stack/span_schema.json must hold.
fn python_schema() -> String {
    let list = |v: Vec<&str>| {
        v.iter()
            .map(|s| format!("\"{s}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let influx_type = |t: ValueType| match t {
        ValueType::Int => "long",
        ValueType::Str => "string",
    };
    let fields = influx_span_fields()
        .into_iter()
        .map(|(k, t)| format!("    \"{k}\": \"{}\"", influx_type(t)))
        .collect::<Vec<_>>()
        .join(",\n");
    let optional: Vec<&str> = SPAN_ATTRIBUTES
        .iter()
        .filter(|a| a.stored == Stored::Field && a.optional)
        .map(|a| a.key)
        .collect();
    format!(
        "{{\n  \"_generated\": \"by UPDATE_SCHEMA=1 cargo test -p span-schema, from crates/span-schema/src/lib.rs: do not edit\",\n  \
         \"measurement\": \"{}\",\n  \"tags\": [{}],\n  \"fields\": {{\n{fields}\n  }},\n  \
         \"optional_fields\": [{}],\n  \"lean_drops\": [{}]\n}}\n",
        influx::SPANS,
        list(influx_span_tags()),
        list(optional),
        list(
            SPAN_ATTRIBUTES
                .iter()
                .filter(|a| a.lean_drops)
                .map(|a| a.key)
                .collect()
        ),
    )
}

#[test]
fn python_schema_file_is_generated_from_the_schema() {
    let path = repo("scripts/stack/span_schema.json");
    let want = python_schema();
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} is not what the schema gives: UPDATE_SCHEMA=1 cargo test -p span-schema rewrites it",
        path.display()
    );
}

/// The join's counters the health query reads are fields the join writes, and the docs
/// name every one.
#[test]
fn the_join_health_query_and_the_docs_name_the_joins_counters() {
    let query = read("flux-queries/join_health.flux");
    let mut read_fields = BTreeSet::new();
    for (at, m) in query.match_indices("r._field == \"") {
        let rest = &query[at + m.len()..];
        read_fields.insert(rest[..rest.find('"').unwrap()].to_string());
    }
    let written = set(JOIN_COUNTERS);
    assert!(!read_fields.is_empty());
    assert!(
        read_fields.is_subset(&written),
        "join_health.flux reads {:?}, not among span_schema::JOIN_COUNTERS",
        read_fields.difference(&written).collect::<Vec<_>>()
    );
    let doc = read("docs/span-schema.md");
    let documented = doc_paragraph(&doc, "**Bounded.**");
    assert!(
        written.is_subset(&documented),
        "docs/span-schema.md's **Bounded.** paragraph does not name {:?}",
        written.difference(&documented).collect::<Vec<_>>()
    );
}
