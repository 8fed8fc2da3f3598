//! RTPS over RTI Connext's TCP transport and over a plain 4-byte length prefix, end to
//! end. RTI's libraries are proprietary, so the connection is built byte by byte from the
//! layout Wireshark's packet-rtitcp.c documents (common/rti.rs: control messages on both
//! directions, optional CRC, every message cut across 90-byte segments) around the RTPS
//! messages of the byte-built RTI batch capture; tests/rti_tshark.rs checks it against
//! tshark. Every sample must be found as over UDP.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::rti::{self, TcpWrap};
use ddshark::capture::file::FileSource;
use ddshark::dissect::dissect_source;
use ddshark::record::SubmessageRecord;
use ddshark::stats_cmd::{stats_file, StatsOptions};

const WRAPS: [(TcpWrap, &str); 3] = [
    (TcpWrap::RtiTcp { crc: false }, "rti_tcp"),
    (TcpWrap::RtiTcp { crc: true }, "rti_tcp_crc"),
    (TcpWrap::LengthPrefixed, "length_prefixed"),
];

/// The sender's capture and the receiver's (every frame 250 µs later).
fn captures(test: &str, wrap: TcpWrap, label: &str) -> (PathBuf, PathBuf) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("rti_tcp")
        .join(test)
        .join(label);
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (dir.join("a.pcap"), dir.join("b.pcap"));
    rti::write_tcp_pcap(&a, 1_700_000_000, 0, wrap);
    rti::write_tcp_pcap(&b, 1_700_000_000, 250, wrap);
    (a, b)
}

fn records(path: &Path) -> Vec<SubmessageRecord> {
    let mut source = FileSource::open(path).unwrap();
    let mut out = Vec::new();
    dissect_source(&mut source, |r| {
        out.push(r.clone());
        Ok(true)
    })
    .unwrap();
    out
}

#[test]
fn stats_counts_every_sample_and_control_message() {
    for (wrap, label) in WRAPS {
        let (a, _) = captures("stats", wrap, label);
        let snap = stats_file(&a, &StatsOptions::default()).unwrap();
        let w = snap
            .writers
            .iter()
            .find(|w| w.guid == rti::WRITER)
            .unwrap_or_else(|| panic!("{label}: the writer"));
        let samples = rti::samples();
        assert_eq!(w.totals.samples, samples.len() as u64, "{label}");
        let bytes: u64 = samples.iter().map(|s| u64::from(s.1)).sum();
        assert_eq!(w.totals.bytes, bytes, "{label}");
        assert_eq!(w.totals.heartbeats, 1, "{label}: HEARTBEAT_BATCH");
        assert_eq!((w.totals.lost, w.totals.retransmitted), (0, 0), "{label}");
        let t = snap.health.dissector.tcp;
        assert!(snap.health.reconciles, "{label}: {t:?}");
        assert_eq!(t.rtps_messages(), 5, "{label}: {t:?}");
        assert_eq!(
            (t.gaps, t.resyncs, t.messages_malformed, t.streams_opened),
            (0, 0, 0, if label == "length_prefixed" { 1 } else { 2 }),
            "{label}: {t:?}"
        );
        if label == "length_prefixed" {
            assert_eq!(t.rtps_length_prefixed, 5, "{t:?}");
            assert_eq!(t.control_messages(), 0, "{t:?}");
        } else {
            assert_eq!(t.rtps_rti_tcp, 5, "{label}: {t:?}");
            assert_eq!(
                (
                    t.rti_control_bind,
                    t.rti_control_logical_port,
                    t.rti_control_liveliness,
                    t.rti_control_unknown
                ),
                (2, 2, 2, 0),
                "{label}: {t:?}"
            );
        }
    }
}

#[test]
fn dissect_reads_the_same_submessages_as_over_udp() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("rti_tcp");
    std::fs::create_dir_all(&dir).unwrap();
    let udp = dir.join("udp.pcap");
    rti::write_pcap(&udp, 1_700_000_000, 0);
    let key = |r: &SubmessageRecord| {
        (
            r.kind,
            r.writer_guid.clone(),
            r.sn,
            r.first_sn,
            r.last_sn,
            r.batch
                .as_ref()
                .map(|b| b.iter().map(|s| (s.sn, s.size)).collect::<Vec<_>>()),
            r.error.clone(),
        )
    };
    let over_udp: Vec<_> = records(&udp).iter().map(key).collect();
    assert_eq!(over_udp.len(), 5);
    for (wrap, label) in WRAPS {
        let (a, _) = captures("dissect", wrap, label);
        let recs = records(&a);
        assert_eq!(
            recs.iter().map(key).collect::<Vec<_>>(),
            over_udp,
            "{label}"
        );
        let framing = if label == "length_prefixed" {
            "length_prefixed"
        } else {
            "rti_tcp"
        };
        for r in &recs {
            assert_eq!(r.tcp_framing, Some(framing), "{label}");
            assert_eq!(r.src, "10.0.0.1:40000", "{label}");
            assert!(r.ts_last_ns >= r.ts_first_ns, "{label}");
        }
        // The 20-sample batch spans several 90-byte segments.
        assert!(
            recs[4].ts_last_ns - recs[4].ts_first_ns >= 1_000_000,
            "{label}"
        );
    }
}

#[test]
fn latency_joins_every_sample_at_its_segments_times() {
    for (wrap, label) in WRAPS {
        let (a, b) = captures("latency", wrap, label);
        // Per SN: the sender's first segment and the receiver's last, from dissect.
        let first_last = |p: &Path, first: bool| {
            let mut m = std::collections::HashMap::new();
            for r in records(p) {
                let t = if first { r.ts_first_ns } else { r.ts_last_ns };
                let sns: Vec<i64> = match (&r.batch, r.kind) {
                    (Some(b), _) => b.iter().map(|s| s.sn).collect(),
                    (None, "DATA_SESSION") => vec![r.sn.unwrap()],
                    _ => vec![],
                };
                for sn in sns {
                    m.insert(sn, t as i64);
                }
            }
            m
        };
        let (sent, received) = (first_last(&a, true), first_last(&b, false));
        let args = common::latency_args(
            &a,
            std::slice::from_ref(&b),
            ddshark::latency::Level::Sample,
        );
        let mut rows = Vec::new();
        ddshark::latency::join_captures(&args, |r| {
            rows.push((r.key.sn, r.latency_ns));
            Ok(())
        })
        .unwrap();
        rows.sort();
        assert_eq!(rows.len(), rti::samples().len(), "{label}");
        for (sn, latency) in rows {
            let want = received[&sn] - sent[&sn];
            assert_eq!(latency, Some(want), "{label} SN {sn}");
            // 250 µs between the capture points plus whole 1 ms segment steps.
            assert_eq!((want - 250_000) % 1_000_000, 0, "{label} SN {sn}: {want}");
        }
    }
}
