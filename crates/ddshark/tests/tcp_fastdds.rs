//! RTPS over TCP on the real Fast DDS TCP captures: `l_fastdds_tcp` (discovery and data over
//! Fast DDS' TCPv4 transport) and `l2_fastdds_udp_tcp` (UDP discovery, TCP data), both in
//! tests/pcaps. tshark cannot dissect RTPS over TCP, so the truth is the applications' own
//! logs: `logs/pub.log` has every sample written and `logs/sub.log` every sample taken, each
//! with its writer GUID and SN.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, HashMap};

use common::{fixture, latency_args};
use ddshark::capture::file::FileSource;
use ddshark::dissect::dissect_source;
use ddshark::latency::join::{SampleRow, Status};
use ddshark::latency::{join_captures, Level};
use ddshark::stats_cmd::{stats_file, StatsOptions};

const FIXTURES: [&str; 2] = ["l_fastdds_tcp", "l2_fastdds_udp_tcp"];

/// (writer GUID, SN) of every sample a log line names for `what` ("pub" or "sub"), by topic.
fn logged(dir: &str, what: &str) -> BTreeMap<String, Vec<(String, i64)>> {
    let file = if what == "pub" { "pub.log" } else { "sub.log" };
    let log = std::fs::read_to_string(fixture(&format!("{dir}/logs/{file}"))).unwrap();
    let mut by_topic: BTreeMap<String, Vec<(String, i64)>> = BTreeMap::new();
    for l in log.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() == 7 && f[1] == what {
            by_topic
                .entry(f[2].to_string())
                .or_default()
                .push((f[5].to_string(), f[6].parse().unwrap()));
        }
    }
    assert!(by_topic.len() == 3, "{dir}/{file}: topics {by_topic:?}");
    by_topic
}

#[test]
fn samples_per_topic_and_writer_equal_the_publishers_log() {
    for dir in FIXTURES {
        let written = logged(dir, "pub");
        let taken = logged(dir, "sub");
        assert_eq!(written, taken, "{dir}: the subscriber took every sample");
        for side in ["a", "b"] {
            let snap = stats_file(
                &fixture(&format!("{dir}/{side}.pcap")),
                &StatsOptions::default(),
            )
            .unwrap();
            for (topic, samples) in &written {
                let t = snap.topics.iter().find(|t| &t.name == topic).unwrap();
                assert_eq!(
                    t.totals.samples,
                    samples.len() as u64,
                    "{dir}/{side} {topic}"
                );
                let w = snap
                    .writers
                    .iter()
                    .find(|w| w.topic.as_deref() == Some(topic))
                    .unwrap();
                assert_eq!(w.guid, samples[0].0, "{dir}/{side} {topic}: writer");
                assert_eq!(w.totals.samples, samples.len() as u64, "{dir}/{side}");
                assert_eq!(w.totals.lost, 0, "{dir}/{side} {topic}");
            }
            let tcp = &snap.health.dissector.tcp;
            assert!(snap.health.reconciles, "{dir}/{side}: counters reconcile");
            assert!(
                tcp.rtps_rtcp > 450 && tcp.control_bind > 0,
                "{dir}/{side}: {tcp:?}"
            );
            assert_eq!(
                (
                    tcp.gaps,
                    tcp.resyncs,
                    tcp.messages_malformed,
                    tcp.ahead_dropped
                ),
                (0, 0, 0, 0),
                "{dir}/{side}: {tcp:?}"
            );
        }
    }
}

/// Per (writer GUID, SN) from `dissect`'s records of one capture: the capture time of the
/// first TCP segment that carried any of the sample, and the time the sample was complete
/// (every fragment's earliest copy held: the latest of those).
fn sample_times(path: &std::path::Path) -> HashMap<(String, i64), (u64, u64)> {
    let mut first: HashMap<(String, i64), u64> = HashMap::new();
    let mut frags: HashMap<(String, i64), (u32, BTreeMap<u32, u64>)> = HashMap::new();
    let mut src = FileSource::open(path).unwrap();
    dissect_source(&mut src, |r| {
        let (Some(w), Some(sn)) = (&r.writer_guid, r.sn) else {
            return Ok(true);
        };
        if !matches!(r.kind, "DATA" | "DATA_FRAG") {
            return Ok(true);
        }
        let key = (w.clone(), sn);
        let f = first.entry(key.clone()).or_insert(r.ts_first_ns);
        *f = (*f).min(r.ts_first_ns);
        let (units, seen) = frags.entry(key).or_default();
        match (
            r.frag_start,
            r.frags_in_submessage,
            r.fragment_size,
            r.sample_size,
        ) {
            (Some(start), Some(n), Some(size), Some(total)) => {
                *units = total.div_ceil(u64::from(size)) as u32;
                for k in start..start + u32::from(n) {
                    seen.entry(k).or_insert(r.ts_last_ns);
                }
            }
            _ => {
                *units = 1;
                seen.entry(1).or_insert(r.ts_last_ns);
            }
        }
        Ok(true)
    })
    .unwrap();
    first
        .into_iter()
        .filter_map(|(k, t_first)| {
            let (units, seen) = &frags[&k];
            let complete = *seen.values().max()?;
            (seen.len() as u32 == *units).then(|| (k.clone(), (t_first, complete)))
        })
        .collect()
}

#[test]
fn latency_join_finds_every_logged_sample_at_its_segments_capture_times() {
    for dir in FIXTURES {
        let (a, b) = (
            fixture(&format!("{dir}/a.pcap")),
            fixture(&format!("{dir}/b.pcap")),
        );
        let mut rows: HashMap<(String, i64), SampleRow> = HashMap::new();
        join_captures(
            &latency_args(&a, std::slice::from_ref(&b), Level::Sample),
            |r| {
                rows.insert((r.key.writer.to_string(), r.key.sn), r.clone());
                Ok(())
            },
        )
        .unwrap();
        let (sent, received) = (sample_times(&a), sample_times(&b));
        let mut checked = 0;
        for samples in logged(dir, "pub").values() {
            for key in samples {
                let r = rows
                    .get(key)
                    .unwrap_or_else(|| panic!("{dir} {key:?}: no latency row"));
                assert_eq!(
                    (r.sender, r.receiver, r.status),
                    (0, 1, Status::Ok),
                    "{dir} {key:?}"
                );
                let (t_send, _) = sent[key];
                let (_, t_recv) = received[key];
                assert_eq!(r.t_send, t_send as i64, "{dir} {key:?}: t_send");
                assert_eq!(r.t_recv, Some(t_recv as i64), "{dir} {key:?}: t_recv");
                let latency = r.latency_ns.unwrap();
                assert_eq!(latency, t_recv as i64 - t_send as i64, "{dir} {key:?}");
                // The relay between the two capture points delays A -> B by 1 ms.
                assert!(latency >= 1_000_000, "{dir} {key:?}: {latency} ns");
                checked += 1;
            }
        }
        assert_eq!(checked, 452, "{dir}: samples written");
    }
}

/// The frames of a capture, owned: (timestamp, link, bytes).
fn frames_of(rel: &str) -> Vec<(u64, rtps_dissect::LinkType, Vec<u8>)> {
    use ddshark::capture::PacketSource;
    let mut src = FileSource::open(&fixture(rel)).unwrap();
    let mut out = Vec::new();
    while let Some(f) = src.next_frame().unwrap() {
        out.push((f.ts_ns, f.link, f.data.to_vec()));
    }
    out
}

/// Whole user samples (writer GUID, SN) the dissector finds in `frames`, and its stats.
fn whole_samples(
    frames: &[(u64, rtps_dissect::LinkType, Vec<u8>)],
) -> (
    std::collections::BTreeSet<(String, i64)>,
    rtps_dissect::DissectorStats,
) {
    let mut d = rtps_dissect::Dissector::default();
    let mut frags: HashMap<(String, i64), (u64, std::collections::BTreeSet<u32>)> = HashMap::new();
    for (i, (ts, link, data)) in frames.iter().enumerate() {
        let frame = rtps_dissect::Frame {
            number: i as u64 + 1,
            ts_ns: *ts,
            link: *link,
            data,
            orig_len: data.len() as u32,
        };
        d.process_with(&frame, |outcome| {
            for dg in outcome.datagrams() {
                for r in ddshark::record::SubmessageRecord::all(dg) {
                    let (Some(w), Some(sn)) = (&r.writer_guid, r.sn) else {
                        continue;
                    };
                    if !w.ends_with("03") {
                        continue; // user writers only (Fast DDS: entity kind 0x03)
                    }
                    let (units, seen) = frags.entry((w.clone(), sn)).or_default();
                    match (
                        r.frag_start,
                        r.frags_in_submessage,
                        r.fragment_size,
                        r.sample_size,
                    ) {
                        (Some(start), Some(n), Some(size), Some(total)) => {
                            *units = total.div_ceil(u64::from(size));
                            seen.extend(start..start + u32::from(n));
                        }
                        _ if r.kind == "DATA" => {
                            *units = 1;
                            seen.insert(1);
                        }
                        _ => {}
                    }
                }
            }
        });
    }
    d.finish();
    let whole = frags
        .into_iter()
        .filter(|(_, (units, seen))| *units > 0 && seen.len() as u64 == *units)
        .map(|(k, _)| k)
        .collect();
    (whole, d.stats())
}

fn logged_set(dir: &str) -> std::collections::BTreeSet<(String, i64)> {
    logged(dir, "pub").into_values().flatten().collect()
}

#[test]
fn reordered_and_repeated_segments_give_every_sample() {
    let frames = frames_of("l_fastdds_tcp/b.pcap");
    let (as_captured, s) = whole_samples(&frames);
    assert_eq!(as_captured, logged_set("l_fastdds_tcp"));
    assert_eq!((s.tcp.out_of_order, s.tcp.retransmitted), (0, 0));
    // Swap every 7th frame with the next, and repeat every 11th a few frames later.
    let mut shuffled = frames.clone();
    for i in (0..shuffled.len() - 1).step_by(7) {
        shuffled.swap(i, i + 1);
    }
    let mut perturbed = Vec::new();
    for (i, f) in shuffled.iter().enumerate() {
        perturbed.push(f.clone());
        if i % 11 == 0 && i >= 3 {
            perturbed.push(shuffled[i - 3].clone());
        }
    }
    let (got, s) = whole_samples(&perturbed);
    assert_eq!(got, logged_set("l_fastdds_tcp"));
    let t = s.tcp;
    assert!(t.out_of_order > 20 && t.retransmitted > 20, "{t:?}");
    assert_eq!(
        (t.gaps, t.resyncs, t.messages_malformed),
        (0, 0, 0),
        "{t:?}"
    );
    assert!(s.reconciles());
}

#[test]
fn a_lost_segment_is_one_counted_gap_and_costs_only_its_message() {
    let frames = frames_of("l_fastdds_tcp/b.pcap");
    let logged = logged_set("l_fastdds_tcp");
    // Drop one full-size segment from the middle of the first image (a DATA_FRAG message
    // of ~64 kB spans ~45 segments).
    let big: Vec<usize> = (0..frames.len())
        .filter(|&i| frames[i].2.len() > 1400)
        .collect();
    let lost = big[big.len() / 8];
    let mut cut = frames.clone();
    cut.remove(lost);
    let (got, s) = whole_samples(&cut);
    let t = s.tcp;
    assert_eq!((t.gaps, t.ahead_dropped), (1, 0), "{t:?}");
    assert!(t.gap_bytes > 1000 && t.resyncs == 0, "{t:?}");
    let missing: Vec<_> = logged.difference(&got).collect();
    assert_eq!(
        missing.len(),
        1,
        "only the sample the hole cut: {missing:?}"
    );
    assert!(got.is_subset(&logged));
    assert!(s.reconciles());
}
