//! Helpers shared by the integration tests: fixture paths and the tshark oracle TSVs.
#![allow(dead_code)]

pub mod public;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use public::PUBLIC_PREFIX;

/// `tests/pcaps` at the workspace root.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/pcaps")
}

/// A fixture file: `public/…` from the public captures folder (see [`public::checkable`]),
/// anything else from `tests/pcaps`.
pub fn fixture(rel: &str) -> PathBuf {
    let p = match rel.strip_prefix(PUBLIC_PREFIX) {
        Some(rest) => public::public_path(rest),
        None => fixtures().join(rel),
    };
    assert!(
        p.exists(),
        "fixture {} is missing (see tests/pcaps/README.md)",
        p.display()
    );
    p
}

/// One TSV file as rows of column → value (empty cells kept as "").
pub fn read_tsv(path: &Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split('\t').collect();
    lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            header
                .iter()
                .zip(l.split('\t').chain(std::iter::repeat("")))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// "1795273347.497942000" → ns since the epoch, exactly.
pub fn ns_of(s: &str) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let (a, b) = s.split_once('.').unwrap_or((s, ""));
    let frac: String = format!("{b:0<9}").chars().take(9).collect();
    Some(a.parse::<u64>().ok()? * 1_000_000_000 + frac.parse::<u64>().ok()?)
}
