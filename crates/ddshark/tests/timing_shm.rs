//! Timing, DEADLINE misses, shared-memory-only topics and the Fast DDS domain id, on the
//! real Fast DDS captures (tests/pcaps/k_fastdds, k2_fastdds_shm, k3_fastdds_deadline).
//! The truth is the publisher's own log (`logs/pub.log`: one line per write with its
//! wall-clock time, and the writes it left out) and the tshark oracle.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashSet;
use std::sync::Arc;

use common::{fixture, ns_of, read_tsv};
use ddshark::output::contract::stats::Document as StatsDocument;
use ddshark::state::snapshot::{Snapshot, TopicView, WriterView};
use ddshark::stats_cmd::{stats_file, StatsOptions};

fn stats(rel: &str) -> Arc<Snapshot> {
    stats_file(&fixture(rel), &StatsOptions::default()).unwrap()
}

fn topic<'a>(s: &'a Snapshot, name: &str) -> &'a TopicView {
    s.topics
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no topic {name}"))
}

fn writer<'a>(s: &'a Snapshot, topic: &str) -> &'a WriterView {
    s.writers
        .iter()
        .find(|w| w.topic.as_deref() == Some(topic))
        .unwrap_or_else(|| panic!("no writer of {topic}"))
}

/// The publisher's rate from its log: writes minus one over the time between the first
/// and the last write of `topic`.
fn logged_rate(dir: &str, topic: &str) -> f64 {
    let log = std::fs::read_to_string(fixture(&format!("{dir}/logs/pub.log"))).unwrap();
    let times: Vec<f64> = log
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let t: f64 = f.next()?.parse().ok()?;
            (f.next()? == "pub" && f.next()? == topic).then_some(t)
        })
        .collect();
    assert!(
        times.len() > 100,
        "{dir}: {} writes of {topic}",
        times.len()
    );
    (times.len() - 1) as f64 / (times[times.len() - 1] - times[0])
}

fn within(value: f64, truth: f64, share: f64) -> bool {
    (value - truth).abs() <= truth * share
}

#[test]
fn fastdds_publishers_rates_within_3_percent_with_jitter() {
    for side in ["a", "b"] {
        let s = stats(&format!("k_fastdds/{side}.pcap"));
        for (name, nominal) in [("rt/imu", 100.0), ("rt/chatter", 50.0)] {
            let logged = logged_rate("k_fastdds", name);
            let (t, w) = (topic(&s, name), writer(&s, name));
            for (what, t, rate) in [
                ("topic", &t.timing, &t.rate),
                ("writer", &w.timing, &w.rate),
            ] {
                let rate = rate.hz.unwrap();
                assert!(
                    within(rate, nominal, 0.03) && within(rate, logged, 0.03),
                    "{side} {what} {name}: {rate:.3} Hz, nominal {nominal}, publisher log {logged:.3}"
                );
                let jitter = t.period_stddev_ns.unwrap();
                assert!(jitter > 0.0, "{side} {name}: no jitter figure");
                let mean = t.period_mean_ns.unwrap();
                assert!(
                    within(mean, 1e9 / nominal, 0.03),
                    "{side} {name}: mean period {mean} ns"
                );
                assert!(t.period_min_ns.unwrap() <= t.period_max_ns.unwrap());
                assert_eq!(t.deadline_ns, None);
                assert_eq!(t.deadline_misses, 0);
            }
        }
    }
}

/// Inter-arrival periods of the rt/chatter writer's new samples, from the tshark oracle:
/// the first IP fragment time of each DATA whose SN is higher than any before.
fn oracle_periods_ns(dir: &str, side: &str) -> Vec<u64> {
    let disc = read_tsv(&fixture(&format!("{dir}/oracle_{side}_discovery.tsv")));
    let chatter: HashSet<String> = disc
        .iter()
        .filter(|r| r["topic"] == "rt/chatter" && r["kind"] == "SEDP_publication")
        .map(|r| r["endpoint_guid"].clone())
        .collect();
    assert!(
        !chatter.is_empty(),
        "{dir}: no rt/chatter writer in the oracle"
    );
    let rows = read_tsv(&fixture(&format!("{dir}/oracle_{side}_submsgs.tsv")));
    let mut last_sn = 0i64;
    let mut times = Vec::new();
    for r in rows
        .iter()
        .filter(|r| r["sm_kind"] == "DATA" && chatter.contains(&r["writer_guid"]))
    {
        let sn: i64 = r["seq"].parse().unwrap();
        if sn > last_sn {
            last_sn = sn;
            times.push(ns_of(&r["t_first_ipfrag"]).unwrap());
        }
    }
    times.windows(2).map(|w| w[1] - w[0]).collect()
}

#[test]
fn deadline_misses_on_a_writer_that_misses_its_deadline() {
    let dir = "k3_fastdds_deadline";
    let log = std::fs::read_to_string(fixture(&format!("{dir}/logs/pub.log"))).unwrap();
    let skipped = log
        .lines()
        .filter(|l| l.contains(" skip rt/chatter "))
        .count() as u64;
    assert_eq!(skipped, 12, "the publisher leaves out 12 writes");
    for side in ["a", "b"] {
        let s = stats(&format!("{dir}/{side}.pcap"));
        let t = &topic(&s, "rt/chatter").timing;
        assert_eq!(t.deadline_ns, Some(30_000_000), "SEDP DEADLINE 30 ms");
        let periods = oracle_periods_ns(dir, side);
        let expected = periods.iter().filter(|p| **p > 30_000_000).count() as u64;
        assert_eq!(
            t.deadline_misses, expected,
            "{side}: periods over 30 ms in the tshark oracle"
        );
        // Each left-out write is one miss; the rest are the publisher's own stalls.
        assert!(
            t.deadline_misses >= skipped,
            "{side}: {}",
            t.deadline_misses
        );
        assert_eq!(writer(&s, "rt/chatter").timing.deadline_misses, expected);
        // The best-effort IMU announces no deadline.
        assert_eq!(topic(&s, "rt/imu").timing.deadline_ns, None);
        let json = serde_json::to_value(StatsDocument::of(&s)).unwrap();
        let chatter = json["topics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "rt/chatter")
            .unwrap();
        assert_eq!(chatter["timing"]["deadline_misses"], expected);
        assert_eq!(chatter["timing"]["deadline_ns"], 30_000_000);
    }
}

#[test]
fn shared_memory_only_topics_are_flagged() {
    for side in ["a", "b"] {
        let s = stats(&format!("k2_fastdds_shm/{side}.pcap"));
        for name in ["rt/imu", "rt/camera/image_raw"] {
            let t = topic(&s, name);
            assert!(t.shared_memory_only, "{side} {name}");
            assert_eq!((t.writers, t.readers, t.totals.samples), (1, 1, 0));
            let w = writer(&s, name);
            assert!(w.shared_memory_only && !w.shared_memory_peers.is_empty());
            // Fast DDS also announces UDPv4 locators: the locators alone do not say it.
            assert!(w.locators.iter().any(|l| l.starts_with("udpv4:")));
        }
        let chatter = topic(&s, "rt/chatter");
        assert!(!chatter.shared_memory_only && chatter.totals.samples > 0);
        let text = ddshark::output::stats::text_report(&s, &Default::default());
        assert!(
            text.contains("rt/imu: shared memory only: traffic invisible here"),
            "{text}"
        );
    }
    // UDP-only Fast DDS and the other vendors' fixtures have nothing of the kind.
    for rel in [
        "k_fastdds/a.pcap",
        "a_small_reliable/a.pcap",
        "d_rustdds_interop/a.pcap",
    ] {
        let s = stats(rel);
        assert!(
            s.topics.iter().all(|t| !t.shared_memory_only),
            "{rel}: a topic flagged shared-memory-only"
        );
    }
}

#[test]
fn fastdds_domain_id_from_the_port_mapping() {
    let s = stats("k_fastdds/a.pcap");
    assert_eq!(s.participants.len(), 2);
    for p in &s.participants {
        assert_eq!(p.domain_id, Some(0), "{}", p.guid_prefix);
        assert_eq!(p.domain_id_source, Some("port_mapping"));
    }
    // Cyclone sends PID_DOMAIN_ID.
    let s = stats("a_small_reliable/a.pcap");
    assert!(s
        .participants
        .iter()
        .filter(|p| p.discovered)
        .all(|p| p.domain_id_source == Some("pid_domain_id")));
}
