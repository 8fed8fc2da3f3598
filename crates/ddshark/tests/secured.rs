//! DDS Security traffic accounting on real Fast DDS captures made with SROS2's default
//! governance (`m_fastdds_sros2`: discovery, liveliness and metadata ENCRYPT, RTPS
//! messages SIGNed) and with only the payload encrypted (`m2_fastdds_sros2_payload`).
//! The truth is tshark's: `oracle_{a,b}_secured.json` (tests/traffic/secured_oracle.py) has,
//! per participant pair, the secured messages, those with SRTPS_PREFIX, the SEC_PREFIX
//! groups and the sum of their UDP payloads; and the applications' logs (every sample
//! written and taken).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;

use common::fixture;
use ddshark::stats_cmd::{stats_file, StatsOptions};

const FIXTURES: [&str; 2] = ["m_fastdds_sros2", "m2_fastdds_sros2_payload"];

type Row = [u64; 4];

fn row(v: &serde_json::Value) -> Row {
    ["messages", "srtps_messages", "sec_submessages", "bytes"]
        .map(|k| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}")))
}

/// (src, dst) → [messages, srtps_messages, sec_submessages, bytes] from the oracle.
fn oracle(dir: &str, side: &str) -> (BTreeMap<(String, String), Row>, Row) {
    let path = fixture(&format!("{dir}/oracle_{side}_secured.json"));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let pairs = doc["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let key = (
                p["src"].as_str().unwrap().to_string(),
                p["dst"].as_str().unwrap().to_string(),
            );
            (key, row(p))
        })
        .collect();
    (pairs, row(&doc["total"]))
}

fn logged(dir: &str, file: &str, what: &str) -> u64 {
    let log = std::fs::read_to_string(fixture(&format!("{dir}/logs/{file}"))).unwrap();
    log.lines()
        .filter(|l| l.split_whitespace().nth(1) == Some(what))
        .count() as u64
}

#[test]
fn secured_bytes_messages_and_submessages_per_pair_equal_tsharks() {
    for dir in FIXTURES {
        for side in ["a", "b"] {
            let (want, want_total) = oracle(dir, side);
            assert!(!want.is_empty(), "{dir}/{side}: oracle without pairs");
            let snap = stats_file(
                &fixture(&format!("{dir}/{side}.pcap")),
                &StatsOptions::default(),
            )
            .unwrap();
            let sec = &snap.secured;
            let got: BTreeMap<(String, String), Row> = sec
                .pairs
                .iter()
                .map(|p| {
                    let t = &p.totals;
                    (
                        (p.src.clone(), p.dst.clone()),
                        [t.messages, t.srtps_messages, t.sec_submessages, t.bytes],
                    )
                })
                .collect();
            assert_eq!(got, want, "{dir}/{side}: per participant pair");
            let t = &sec.totals;
            assert_eq!(
                [t.messages, t.srtps_messages, t.sec_submessages, t.bytes],
                want_total,
                "{dir}/{side}: totals"
            );
            assert_eq!(
                t.encrypted_submessages + t.signed_submessages,
                t.sec_submessages,
                "{dir}/{side}: every SEC_PREFIX has a known AES-GCM-GMAC transformation"
            );
            let by_participant: u64 = sec.participants.iter().map(|p| p.totals.bytes).sum();
            assert_eq!(by_participant, t.bytes, "{dir}/{side}: participants sum");
            assert!(sec.window.messages_per_s > 0.0, "{dir}/{side}: a rate");
            eprintln!(
                "{dir}/{side}: {} pairs; secured {} messages ({} SRTPS), {} SEC_PREFIX, {} B = oracle",
                got.len(),
                t.messages,
                t.srtps_messages,
                t.sec_submessages,
                t.bytes
            );
        }
    }
}

#[test]
fn protected_discovery_is_reported_as_protected_and_clear_metadata_keeps_every_statistic() {
    // SROS2 default: SEDP and every user submessage encrypted: no topic, the endpoints behind
    // the protected traffic counted instead.
    let dir = "m_fastdds_sros2";
    assert_eq!(logged(dir, "pub.log", "pub"), 200);
    assert_eq!(logged(dir, "sub.log", "sub"), 200);
    let snap = stats_file(&fixture(&format!("{dir}/a.pcap")), &StatsOptions::default()).unwrap();
    assert!(
        snap.topics.iter().all(|t| t.builtin),
        "{dir}: a user topic behind protected discovery"
    );
    assert_eq!(snap.secured.participants.len(), 2);
    for p in &snap.secured.participants {
        assert!(p.protected_endpoints > 0, "{dir}: {p:?}");
    }
    assert_eq!(
        snap.secured.totals.encrypted_submessages, snap.secured.totals.sec_submessages,
        "{dir}: metadata protection ENCRYPT"
    );

    // Payload-only encryption: discovery and submessages in the clear, so rt/chatter keeps
    // its sample count (the logs'), only the key exchange is secured.
    let dir = "m2_fastdds_sros2_payload";
    let written = logged(dir, "pub.log", "pub");
    assert_eq!(written, logged(dir, "sub.log", "sub"));
    for side in ["a", "b"] {
        let snap = stats_file(
            &fixture(&format!("{dir}/{side}.pcap")),
            &StatsOptions::default(),
        )
        .unwrap();
        let t = snap
            .topics
            .iter()
            .find(|t| t.name == "rt/chatter")
            .expect("rt/chatter discovered");
        assert_eq!(t.totals.samples, written, "{dir}/{side}");
        assert_eq!(t.totals.lost, 0, "{dir}/{side}");
        assert_eq!(snap.secured.totals.srtps_messages, 0, "{dir}/{side}");
    }
}

#[test]
fn a_full_pair_map_evicts_counts_and_keeps_the_totals() {
    use ddshark::capture::file::FileSource;
    use ddshark::pipeline::{run_threaded, CaptureInput, Engine, RunOptions};
    use ddshark::stats_cmd::stats_engine_config;

    let path = fixture("m_fastdds_sros2/a.pcap");
    let (_, want_total) = oracle("m_fastdds_sros2", "a");
    let mut config = stats_engine_config(&StatsOptions::default());
    config.state.max_secured_pairs = 1;
    let mut engine = Engine::new(config);
    let snap = run_threaded(
        vec![CaptureInput {
            source: Box::new(FileSource::open(&path).unwrap()),
            live: false,
            size_hint: None,
            filter: None,
        }],
        &mut engine,
        &RunOptions::default(),
    )
    .unwrap();
    let sec = &snap.secured;
    assert_eq!(sec.pairs.len(), 1, "the cap");
    assert!(sec.pairs_evicted > 0, "evictions counted: {sec:?}");
    assert_eq!(
        sec.pairs_evicted,
        snap.health.state.secured_pairs_evicted_capacity()
    );
    let t = &sec.totals;
    assert_eq!(
        [t.messages, t.srtps_messages, t.sec_submessages, t.bytes],
        want_total,
        "totals survive evictions"
    );
}
