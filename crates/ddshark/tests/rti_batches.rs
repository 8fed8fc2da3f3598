//! RTI's DATA_BATCH, HEARTBEAT_BATCH and DATA_SESSION end to end: every sample in a
//! batch is counted with its SN and size by `stats`, listed by `dissect`, turned into a
//! span and joined by `latency`; HEARTBEAT_BATCH counts in the reliability accounting.
//! The capture is built byte by byte (common/rti.rs); tests/rti_tshark.rs checks the
//! same bytes against tshark.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;

use common::rti;
use ddshark::capture::file::FileSource;
use ddshark::capture::PacketSource;
use ddshark::dissect::dissect_source;
use ddshark::stats_cmd::{stats_file, StatsOptions};
use rtps_dissect::{Dissector, FrameOutcome};

/// The sender's capture and the receiver's (every frame 250 µs later), in a folder of
/// the test's own (the tests run at once).
fn captures(test: &str) -> (PathBuf, PathBuf) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("rti_batches")
        .join(test);
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (dir.join("a.pcap"), dir.join("b.pcap"));
    rti::write_pcap(&a, 1_700_000_000, 0);
    rti::write_pcap(&b, 1_700_000_000, 250);
    (a, b)
}

#[test]
fn stats_counts_every_sample_of_a_batch() {
    let (a, _) = captures("stats_counts_every_sample_of_a_batch");
    let snap = stats_file(&a, &StatsOptions::default()).unwrap();
    let w = snap
        .writers
        .iter()
        .find(|w| w.guid == rti::WRITER)
        .expect("the writer");
    let samples = rti::samples();
    assert_eq!(w.totals.samples, samples.len() as u64);
    let bytes: u64 = samples.iter().map(|s| u64::from(s.1)).sum();
    assert_eq!(w.totals.bytes, bytes);
    assert_eq!(w.totals.heartbeats, 1, "HEARTBEAT_BATCH counts");
    assert_eq!((w.totals.lost, w.totals.retransmitted), (0, 0));
    assert_eq!(snap.health.dissector.submessage_errors, 0);
}

#[test]
fn dissect_lists_the_samples_of_each_batch() {
    let (a, _) = captures("dissect_lists_the_samples_of_each_batch");
    let mut source = FileSource::open(&a).unwrap();
    let mut records = Vec::new();
    dissect_source(&mut source, |r| {
        records.push(r.clone());
        Ok(true)
    })
    .unwrap();
    let kinds: Vec<&str> = records.iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        [
            "DATA_BATCH",
            "DATA_BATCH",
            "DATA_SESSION",
            "HEARTBEAT_BATCH",
            "DATA_BATCH"
        ]
    );
    let listed: Vec<(i64, u32)> = records
        .iter()
        .flat_map(|r| match (&r.batch, r.kind) {
            (Some(b), _) => b.iter().map(|s| (s.sn, s.size)).collect(),
            (None, "DATA_SESSION") => vec![(r.sn.unwrap(), r.sample_size.unwrap() as u32)],
            _ => vec![],
        })
        .collect();
    assert_eq!(listed, rti::samples());
    assert_eq!(records[2].session_sn, Some(1));
    assert_eq!(
        (records[3].first_sn, records[3].last_sn),
        (Some(1), Some(6))
    );
    assert!(records.iter().all(|r| r.error.is_none() && !r.truncated));
}

#[test]
fn every_batch_sample_becomes_a_span() {
    let (a, _) = captures("every_batch_sample_becomes_a_span");
    let mut source = FileSource::open(&a).unwrap();
    let mut dissector = Dissector::default();
    let mut mapper = otel_export::schema::SpanMapper::new("host-a", None);
    let mut spans = Vec::new();
    while let Some(frame) = source.next_frame().unwrap() {
        if let FrameOutcome::Rtps(d) = dissector.process(&frame) {
            mapper.map(&d, |s| spans.push((s.sn, s.sample_size)));
        }
    }
    let want: Vec<(i64, u64)> = rti::samples()
        .iter()
        .map(|&(sn, size)| (sn, u64::from(size)))
        .collect();
    assert_eq!(spans, want);
}

#[test]
fn latency_joins_every_batch_sample() {
    let (a, b) = captures("latency_joins_every_batch_sample");
    let args = common::latency_args(&a, &[b], ddshark::latency::Level::Sample);
    let mut rows = Vec::new();
    ddshark::latency::join_captures(&args, |r| {
        rows.push((r.key.sn, r.sample_size, r.latency_ns));
        Ok(())
    })
    .unwrap();
    rows.sort();
    let want: Vec<(i64, u64, Option<i64>)> = rti::samples()
        .iter()
        .map(|&(sn, size)| (sn, u64::from(size), Some(250_000)))
        .collect();
    assert_eq!(rows, want);
}
