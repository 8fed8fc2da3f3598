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

/// One direction of a TCP connection as the capture holds it, put together here without
/// ddshark's reassembly: its bytes from the SYN on, and per byte the capture time of the
/// first segment that brought it (`u64::MAX` where no segment did).
#[derive(Default)]
struct RawStream {
    next_after_syn: Option<u32>,
    bytes: Vec<u8>,
    arrival: Vec<u64>,
}

/// Every TCP direction of an Ethernet/IPv4 capture, by (source, destination) address and port.
fn raw_streams(path: &std::path::Path) -> HashMap<([u8; 6], [u8; 6]), RawStream> {
    use ddshark::capture::PacketSource;
    let be16 = |b: &[u8], at: usize| u16::from_be_bytes([b[at], b[at + 1]]);
    let mut streams: HashMap<([u8; 6], [u8; 6]), RawStream> = HashMap::new();
    let mut src = FileSource::open(path).unwrap();
    while let Some(f) = src.next_frame().unwrap() {
        let d = f.data;
        assert_eq!(f.link, rtps_dissect::LinkType::Ethernet);
        if be16(d, 12) != 0x0800 || d[14 + 9] != 6 {
            continue; // not IPv4/TCP
        }
        let ip = &d[14..14 + usize::from(be16(d, 16))];
        let tcp = &ip[usize::from(ip[0] & 0x0f) * 4..];
        let key = |a: usize, p: usize| -> [u8; 6] {
            let mut k = [0; 6];
            k[..4].copy_from_slice(&ip[a..a + 4]);
            k[4..].copy_from_slice(&tcp[p..p + 2]);
            k
        };
        let stream = streams.entry((key(12, 0), key(16, 2))).or_default();
        let seq = u32::from_be_bytes(tcp[4..8].try_into().unwrap());
        if tcp[13] & 0x02 != 0 {
            *stream = RawStream {
                next_after_syn: Some(seq.wrapping_add(1)),
                ..RawStream::default()
            };
            continue;
        }
        let payload = &tcp[usize::from(tcp[12] >> 4) * 4..];
        let Some(first) = stream.next_after_syn else {
            continue;
        };
        let at = seq.wrapping_sub(first) as usize;
        if stream.bytes.len() < at + payload.len() {
            stream.bytes.resize(at + payload.len(), 0);
            stream.arrival.resize(at + payload.len(), u64::MAX);
        }
        for (i, &b) in payload.iter().enumerate() {
            if stream.arrival[at + i] == u64::MAX {
                stream.bytes[at + i] = b;
                stream.arrival[at + i] = f.ts_ns;
            }
        }
    }
    streams
}

/// Per (writer GUID, SN) of the user samples in a capture, found by walking Fast DDS'
/// RTCP-framed messages and their RTPS submessages byte by byte in [`raw_streams`]: the
/// capture time of the segment that brought the first byte of the first message carrying
/// any of the sample, and the time the sample was complete (per fragment the earliest
/// message completing it, i.e. its last segment; the latest of those).
fn sample_times(path: &std::path::Path) -> HashMap<(String, i64), (u64, u64)> {
    let mut first: HashMap<(String, i64), u64> = HashMap::new();
    let mut frags: HashMap<(String, i64), (u32, BTreeMap<u32, u64>)> = HashMap::new();
    for stream in raw_streams(path).values() {
        let (bytes, arrival) = (&stream.bytes, &stream.arrival);
        let mut pos = 0;
        while pos + 14 <= bytes.len() {
            assert_eq!(&bytes[pos..pos + 4], b"RTCP", "{}: framing", path.display());
            let len = u32::from_le_bytes(bytes[pos + 4..pos + 8].try_into().unwrap()) as usize;
            let Some(message_arrival) = arrival.get(pos..pos + len) else {
                break; // the capture ended inside this message
            };
            let (t_first, t_done) = (message_arrival[0], *message_arrival.iter().max().unwrap());
            let rtps = &bytes[pos + 14..pos + len];
            pos += len;
            if t_done == u64::MAX || !rtps.starts_with(b"RTPS") {
                continue; // a hole, or a control message
            }
            let prefix: String = rtps[8..20].iter().map(|b| format!("{b:02x}")).collect();
            let mut at = 20;
            while at + 4 <= rtps.len() {
                let (id, little) = (rtps[at], rtps[at + 1] & 1 == 1);
                let u16_at = |i: usize| {
                    let b = [rtps[i], rtps[i + 1]];
                    if little {
                        u16::from_le_bytes(b)
                    } else {
                        u16::from_be_bytes(b)
                    }
                };
                let u32_at = |i: usize| {
                    let b: [u8; 4] = rtps[i..i + 4].try_into().unwrap();
                    if little {
                        u32::from_le_bytes(b)
                    } else {
                        u32::from_be_bytes(b)
                    }
                };
                let body = at + 4;
                let octets = usize::from(u16_at(at + 2));
                at = if octets == 0 {
                    rtps.len()
                } else {
                    body + octets
                };
                // DATA (0x15) and DATA_FRAG (0x16) of user writers (entity kind 0x03).
                if !matches!(id, 0x15 | 0x16) || rtps[body + 11] != 0x03 {
                    continue;
                }
                let writer: String = rtps[body + 8..body + 12]
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                let sn = (i64::from(u32_at(body + 12) as i32) << 32) | i64::from(u32_at(body + 16));
                let key = (format!("{prefix}{writer}"), sn);
                let f = first.entry(key.clone()).or_insert(t_first);
                *f = (*f).min(t_first);
                let (units, seen) = frags.entry(key).or_default();
                if id == 0x15 {
                    *units = 1;
                    seen.entry(1).or_insert(t_done);
                } else {
                    let (start, n) = (u32_at(body + 20), u32::from(u16_at(body + 24)));
                    let (size, total) = (u32::from(u16_at(body + 26)), u32_at(body + 28));
                    *units = total.div_ceil(size);
                    for k in start..start + n {
                        let t = seen.entry(k).or_insert(t_done);
                        *t = (*t).min(t_done);
                    }
                }
            }
        }
    }
    first
        .into_iter()
        .filter_map(|(k, t_first)| {
            let (units, seen) = &frags[&k];
            let complete = *seen.values().max()?;
            (seen.len() as u32 == *units).then(|| (k.clone(), (t_first, complete)))
        })
        .collect()
}

/// Every sample the publisher logged has a latency row A -> B equal to the one computed from
/// the logged (writer, SN) and the raw segments' capture times ([`sample_times`]).
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
        let logged_keys: std::collections::BTreeSet<_> =
            logged(dir, "pub").into_values().flatten().collect();
        for (side, times) in [("a", &sent), ("b", &received)] {
            let found: std::collections::BTreeSet<_> = times.keys().cloned().collect();
            assert_eq!(
                found, logged_keys,
                "{dir}/{side}: whole samples on the wire"
            );
        }
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

/// Frame `i` (0-based) of `frames_of`'s list, as the dissector takes it.
fn frame_at(
    i: usize,
    (ts, link, data): &(u64, rtps_dissect::LinkType, Vec<u8>),
) -> rtps_dissect::Frame<'_> {
    rtps_dissect::Frame {
        number: i as u64 + 1,
        ts_ns: *ts,
        link: *link,
        data,
        orig_len: data.len() as u32,
    }
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
    for (i, f) in frames.iter().enumerate() {
        d.process_with(&frame_at(i, f), |outcome| {
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

/// Fast DDS' logical ports: every RTPS message on a TCP connection goes to the participant
/// whose announced TCP locator (SPDP: address, physical port, logical port) is the
/// connection's destination address and port (back towards the connecting side: its
/// address) with the RTCP header's logical port; where the message names its destination
/// (INFO_DST), it is that participant.
#[test]
fn logical_ports_map_to_the_locators_announced_in_discovery() {
    use rtps_dissect::{DiscoveryRecord, Dissector};
    for dir in FIXTURES {
        for side in ["a", "b"] {
            let frames = frames_of(&format!("{dir}/{side}.pcap"));
            let mut d = Dissector::default();
            let mut locators: Vec<(String, rtps_dissect::Locator)> = Vec::new();
            // (destination, logical port, INFO_DST prefix) of every TCP-carried submessage.
            let mut carried: Vec<(String, u16, Option<String>)> = Vec::new();
            for (i, f) in frames.iter().enumerate() {
                d.process_with(&frame_at(i, f), |outcome| {
                    for dg in outcome.datagrams() {
                        for rec in &dg.discovery {
                            if let DiscoveryRecord::Participant(p) = rec {
                                for l in p.default_unicast.iter().chain(&p.metatraffic_unicast) {
                                    locators.push((p.guid_prefix.to_string(), *l));
                                }
                            }
                        }
                        for r in ddshark::record::SubmessageRecord::all(dg) {
                            if let Some(port) = r.tcp_logical_port {
                                carried.push((r.dst.clone(), port, r.dst_guid_prefix.clone()));
                            }
                        }
                    }
                });
            }
            assert!(carried.len() > 1000, "{dir}/{side}: {}", carried.len());
            let mut participants = std::collections::BTreeSet::new();
            for (dst, logical, info_dst) in &carried {
                let addr: std::net::SocketAddr = dst.parse().unwrap();
                // Towards the listening side the physical port is the destination port;
                // back towards the side that connected it is that side's ephemeral port.
                let exact: Vec<&String> = locators
                    .iter()
                    .filter(|(_, l)| l.is_tcp_destination(addr.ip(), addr.port(), *logical))
                    .map(|(p, _)| p)
                    .collect();
                let to = if exact.is_empty() {
                    locators
                        .iter()
                        .filter(|(_, l)| {
                            l.ip() == Some(addr.ip())
                                && l.tcp_ports().is_some_and(|(_, lp)| lp == *logical)
                        })
                        .map(|(p, _)| p)
                        .collect()
                } else {
                    exact
                };
                let Some(participant) = to.first() else {
                    panic!("{dir}/{side}: {dst} logical {logical}: no announced locator");
                };
                assert!(to.iter().all(|p| p == participant), "{dir}/{side}: {to:?}");
                if let Some(named) = info_dst {
                    assert_eq!(named, *participant, "{dir}/{side}: {dst} logical {logical}");
                }
                participants.insert((*participant).clone());
            }
            assert_eq!(
                participants.len(),
                2,
                "{dir}/{side}: both participants receive"
            );
        }
    }
}
