//! The per-host half of the latency join (what `--otlp` exports as SAMPLE spans):
//! a join over ONE capture must give, for every row `ddshark latency` computes from two
//! captures, the sender's t_send and repairs and the receiver's t_recv (or its missing
//! fragments), on every two-host fixture. The database joins hosts on these.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use common::{fixtures, host_samples, latency_args};
use ddshark::latency::extract::Key;
use ddshark::latency::join::{LocalSample, SampleRow, Status};
use ddshark::latency::{join_captures, Level};

const WINDOW_NS: i64 = span_schema::SAMPLE_WINDOW_NS;

fn local_samples(path: &Path) -> HashMap<Key, Vec<LocalSample>> {
    let mut by_key: HashMap<Key, Vec<LocalSample>> = HashMap::new();
    for s in host_samples(path) {
        by_key.entry(s.key).or_default().push(s);
    }
    by_key
}

fn latency_rows(a: &Path, b: &Path) -> Vec<SampleRow> {
    let args = latency_args(a, &[b.to_path_buf()], Level::Sample);
    let mut rows = Vec::new();
    join_captures(&args, |r| {
        rows.push(r.clone());
        Ok(())
    })
    .unwrap();
    rows
}

/// The local sample of `key` whose first copy is at `t_first`.
fn at(samples: &HashMap<Key, Vec<LocalSample>>, key: &Key, t_first: i64) -> Option<LocalSample> {
    samples
        .get(key)?
        .iter()
        .find(|s| s.t_first == t_first)
        .cloned()
}

#[test]
fn one_capture_halves_give_every_two_capture_row() {
    let mut fixtures_seen = 0;
    let mut rows_seen = 0;
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let dir: PathBuf = entry.unwrap().path();
        let (a, b) = (dir.join("a.pcap"), dir.join("b.pcap"));
        if !a.exists() || !b.exists() {
            continue;
        }
        fixtures_seen += 1;
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let local = [local_samples(&a), local_samples(&b)];
        for r in latency_rows(&a, &b) {
            rows_seen += 1;
            let what = format!(
                "{name} {:?} sn {} {}",
                r.key.writer,
                r.key.sn,
                r.status.name()
            );
            let sender = at(&local[r.sender], &r.key, r.t_send)
                .unwrap_or_else(|| panic!("{what}: no local sample at t_send on the sender"));
            assert_eq!(sender.repairs, r.repairs_sender, "{what}: repairs");
            assert_eq!(sender.submessages, r.tx_sender, "{what}: submessages");
            assert_eq!(sender.sample_size, r.sample_size, "{what}: size");
            let received = local[r.receiver]
                .get(&r.key)
                .into_iter()
                .flatten()
                .find(|s| s.t_first >= r.t_send && s.t_first.saturating_sub(r.t_send) < WINDOW_NS);
            match r.status {
                Status::Ok => {
                    let s = received.unwrap_or_else(|| panic!("{what}: not on the receiver"));
                    assert_eq!(s.t_complete, r.t_recv, "{what}: t_recv");
                    assert_eq!(s.units_seen, s.units, "{what}: complete");
                }
                Status::Incomplete => {
                    let s = received.unwrap_or_else(|| panic!("{what}: not on the receiver"));
                    assert!(s.units_seen < s.units && s.t_complete.is_none(), "{what}");
                }
                Status::Lost => assert!(received.is_none(), "{what}: seen on the receiver"),
            }
        }
    }
    assert!(fixtures_seen >= 8, "two-host fixtures: {fixtures_seen}");
    assert!(rows_seen > 1000, "rows: {rows_seen}");
}
