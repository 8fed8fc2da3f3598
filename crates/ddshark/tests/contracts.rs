//! One contract per output: on every bundled fixture, `ddshark stats` JSON and, on every
//! two-host pair (a.pcap → b.pcap), `ddshark latency` JSON and JSON lines validate against
//! their schemas under `schemas/` (draft 2020-12), and the JSON documents equal the golden
//! outputs under `tests/golden/` byte for byte. After an intended change to an output:
//!
//!   DDSHARK_BLESS=1 cargo test -p ddshark --test contracts
//!
//! rewrites the goldens (and `DDSHARK_BLESS=1 cargo test -p ddshark --lib contract` the
//! schemas, which `crates/ddshark/src/output/contract/` generates).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::repo_root;
use serde_json::Value;

fn bless() -> bool {
    std::env::var_os("DDSHARK_BLESS").is_some_and(|v| v == "1")
}

/// `ddshark ARGS` run at the repository's top (so the file names it prints are the same
/// relative ones everywhere): its stdout, which must be a success.
fn ddshark(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_ddshark"))
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("run ddshark");
    assert!(
        out.status.success(),
        "ddshark {args:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn validator(name: &str) -> jsonschema::Validator {
    let path = repo_root().join("schemas").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text).expect("schema JSON");
    jsonschema::draft202012::new(&schema).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Every schema violation of `doc`, each with where it is.
fn violations(v: &jsonschema::Validator, doc: &str, what: &str) -> Vec<String> {
    let value: Value = match serde_json::from_str(doc) {
        Ok(value) => value,
        Err(e) => return vec![format!("{what}: not JSON: {e}")],
    };
    v.iter_errors(&value)
        .take(5)
        .map(|e| format!("{what}: {} at {}", e, e.instance_path()))
        .collect()
}

/// The fixtures, relative to the repository's top, in a stable order.
fn captures() -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read tests/pcaps") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path
                .extension()
                .is_some_and(|e| e == "pcap" || e == "pcapng")
            {
                out.push(path);
            }
        }
    }
    let root = repo_root();
    let mut found = Vec::new();
    walk(&root.join("tests/pcaps"), &mut found);
    let mut rel: Vec<String> = found
        .iter()
        .map(|p| {
            p.strip_prefix(&root)
                .expect("under the repository")
                .display()
                .to_string()
        })
        .collect();
    rel.sort();
    assert!(
        rel.len() >= 20,
        "fixtures missing under tests/pcaps: {rel:?}"
    );
    rel
}

/// The two-host pairs: every fixture folder with an a.pcap and a b.pcap.
fn pairs() -> Vec<String> {
    let mut dirs: Vec<String> = captures()
        .iter()
        .filter_map(|c| c.strip_suffix("/a.pcap").map(String::from))
        .filter(|d| repo_root().join(d).join("b.pcap").is_file())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 10, "two-host pairs missing: {dirs:?}");
    dirs
}

/// Compares `actual` with the golden file `dir/name` (or writes it when blessing); says
/// where they first differ.
fn check_golden(dir: &str, name: &str, actual: &str, failures: &mut Vec<String>) {
    let path = repo_root().join("tests/golden").join(dir).join(name);
    if bless() {
        std::fs::create_dir_all(path.parent().expect("golden dir")).expect("create golden dir");
        std::fs::write(&path, actual).expect("write golden");
        return;
    }
    let Ok(expected) = std::fs::read_to_string(&path) else {
        failures.push(format!("{}: no golden output", path.display()));
        return;
    };
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(e, a)| e != a)
            .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
        failures.push(format!(
            "{dir}/{name} differs from line {}: golden {:?}, now {:?}",
            line + 1,
            expected.lines().nth(line).unwrap_or("(end)"),
            actual.lines().nth(line).unwrap_or("(end)")
        ));
    }
}

/// A golden file whose fixture is gone is a failure too (it would never be compared).
fn check_no_stale(dir: &str, expected: &[String], failures: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(repo_root().join("tests/golden").join(dir)) else {
        return;
    };
    for entry in entries {
        let name = entry
            .expect("dir entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if !expected.contains(&name) {
            failures.push(format!(
                "tests/golden/{dir}/{name}: no such fixture any more"
            ));
        }
    }
}

fn report(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}\nafter an intended change: DDSHARK_BLESS=1 cargo test -p ddshark --test contracts",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn stats_json_of_every_fixture_follows_its_schema_and_golden() {
    let schema = validator("stats.schema.json");
    let mut failures = Vec::new();
    let mut names = Vec::new();
    for capture in captures() {
        let doc = ddshark(&["stats", "-q", &capture]);
        failures.extend(violations(&schema, &doc, &capture));
        let name = capture.trim_start_matches("tests/pcaps/").replace('/', "_") + ".json";
        check_golden("stats", &name, &doc, &mut failures);
        names.push(name);
    }
    check_no_stale("stats", &names, &mut failures);
    report(&failures);
}

#[test]
fn latency_json_of_every_pair_follows_its_schemas_and_golden() {
    let document = validator("latency.schema.json");
    let line = validator("latency-line.schema.json");
    let mut failures = Vec::new();
    let mut names = Vec::new();
    for dir in pairs() {
        let (a, b) = (format!("{dir}/a.pcap"), format!("{dir}/b.pcap"));
        let doc = ddshark(&["latency", "-q", "--format", "json", &a, &b]);
        failures.extend(violations(&document, &doc, &dir));
        let name = dir.trim_start_matches("tests/pcaps/").to_string() + ".json";
        check_golden("latency", &name, &doc, &mut failures);
        names.push(name);
        let lines = ddshark(&[
            "latency",
            "-q",
            "--format",
            "jsonl",
            "--level",
            "submessage",
            &a,
            &b,
        ]);
        let mut kinds = Vec::new();
        for (n, l) in lines.lines().enumerate() {
            failures.extend(violations(&line, l, &format!("{dir} line {}", n + 1)));
            let kind = serde_json::from_str::<Value>(l)
                .ok()
                .and_then(|v| v["kind"].as_str().map(String::from));
            if kinds.last() != kind.as_ref() {
                kinds.extend(kind);
            }
        }
        // Samples first, then offsets, topics and the stats, as docs/cli.md says.
        let order = ["sample", "clock_offset", "topic", "stats"];
        let mut at = 0;
        for k in &kinds {
            match order.iter().skip(at).position(|o| o == k) {
                Some(p) => at += p,
                None => failures.push(format!("{dir}: JSON lines out of order: {kinds:?}")),
            }
        }
        if kinds.last().map(String::as_str) != Some("stats") {
            failures.push(format!(
                "{dir}: JSON lines do not end with the stats: {kinds:?}"
            ));
        }
    }
    check_no_stale("latency", &names, &mut failures);
    report(&failures);
}

/// `--no-tui --format jsonl`'s lines and `--final-json` are the same contract's.
#[test]
fn daemon_json_lines_and_final_json_follow_their_schemas() {
    let capture = "tests/pcaps/a_small_reliable/a.pcap";
    let dir = std::env::temp_dir().join(format!("ddshark-contracts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let final_json = dir.join("final.json");
    let lines = ddshark(&[
        "-r",
        capture,
        "--no-tui",
        "--format",
        "jsonl",
        "--final-json",
        final_json.to_str().expect("UTF-8 path"),
    ]);
    let line = validator("stats-line.schema.json");
    let mut failures = Vec::new();
    assert!(lines.lines().count() >= 1, "no JSON line: {lines:?}");
    for (n, l) in lines.lines().enumerate() {
        failures.extend(violations(&line, l, &format!("line {}", n + 1)));
    }
    let doc = std::fs::read_to_string(&final_json).expect("--final-json written");
    failures.extend(violations(
        &validator("stats.schema.json"),
        &doc,
        "--final-json",
    ));
    let _ = std::fs::remove_dir_all(&dir);
    report(&failures);
}
