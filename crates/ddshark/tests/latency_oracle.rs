//! `ddshark latency` against the tshark oracle, on the real two-host fixtures in tests/pcaps.
//!
//! Sample level: every row of `oracle_latency.tsv` (per writer GUID + SN, both directions)
//! must come out with the same direction, send time, receive time and latency, to the
//! nanosecond (the captures have µs resolution, so this is stricter than required).
//! Submessage level: per DATA_FRAG, against the oracle's per-submessage TSVs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use common::{fixtures, latency_args, ns_of, pair_fixtures, read_tsv};
use ddshark::latency::join::{SampleRow, Status};
use ddshark::latency::{direction, join_captures, LatencyArgs, Level, RunSummary};

fn run(a: &LatencyArgs) -> (Vec<SampleRow>, RunSummary) {
    let mut rows = Vec::new();
    let summary = join_captures(a, |r| {
        rows.push(r.clone());
        Ok(())
    })
    .unwrap_or_else(|e| panic!("ddshark latency failed: {e:#}"));
    (rows, summary)
}

fn fmt_us(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1000.0)
}

#[test]
fn sample_latency_matches_oracle_on_every_two_host_fixture() {
    let mut report = Vec::new();
    let mut total = 0usize;
    for dir in pair_fixtures() {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let a = latency_args(&dir.join("a.pcap"), &[dir.join("b.pcap")], Level::Sample);
        let (rows, _) = run(&a);
        let mut mine: HashMap<(String, i64), Vec<&SampleRow>> = HashMap::new();
        for r in &rows {
            mine.entry((r.key.writer.to_string(), r.key.sn))
                .or_default()
                .push(r);
        }
        let oracle = read_tsv(&dir.join("oracle_latency.tsv"));
        assert!(!oracle.is_empty(), "{name}: empty oracle");
        let mut bad = Vec::new();
        let mut complete = 0usize;
        for o in &oracle {
            let key = (o["writer_guid"].clone(), o["seq"].parse::<i64>().unwrap());
            let Some(rs) = mine.get(&key) else {
                bad.push(format!("{key:?}: missing"));
                continue;
            };
            assert_eq!(rs.len(), 1, "{name} {key:?}: one row per sample and pair");
            let r = rs[0];
            let t_send = ns_of(&o["t_send_first"]).unwrap() as i64;
            let mut diffs = Vec::new();
            if direction(r.sender, r.receiver) != o["direction"] {
                diffs.push(format!(
                    "direction {} vs {}",
                    direction(r.sender, r.receiver),
                    o["direction"]
                ));
            }
            if r.t_send != t_send {
                diffs.push(format!("t_send {} vs {t_send}", r.t_send));
            }
            if r.tx_sender.to_string() != o["tx_count_sender"] {
                diffs.push(format!("tx {} vs {}", r.tx_sender, o["tx_count_sender"]));
            }
            if !o["topic"].is_empty() && r.topic.as_deref() != Some(o["topic"].as_str()) {
                diffs.push(format!("topic {:?} vs {}", r.topic, o["topic"]));
            }
            if r.frame_send.to_string() != o["frame_send_first"] {
                diffs.push(format!(
                    "frame_send {} vs {}",
                    r.frame_send, o["frame_send_first"]
                ));
            }
            match ns_of(&o["t_recv_complete"]) {
                Some(t_recv) => {
                    complete += 1;
                    if r.status != Status::Ok
                        || r.t_recv != Some(t_recv as i64)
                        || r.latency_ns.map(fmt_us).as_deref() != Some(o["latency_us"].as_str())
                        || r.frame_recv.map(|f| f.to_string()).as_deref()
                            != Some(o["frame_recv_complete"].as_str())
                    {
                        diffs.push(format!(
                            "recv {:?} {:?} {:?} vs {t_recv} {} (frame {})",
                            r.status,
                            r.t_recv,
                            r.latency_ns,
                            o["latency_us"],
                            o["frame_recv_complete"]
                        ));
                    }
                }
                None => {
                    if r.status != Status::Incomplete || r.latency_ns.is_some() {
                        diffs.push(format!("oracle incomplete, ours {:?}", r.status));
                    }
                }
            }
            if !diffs.is_empty() {
                bad.push(format!("{key:?}: {}", diffs.join("; ")));
            }
        }
        // Rows the oracle does not have must be samples that never reached the receiver.
        let okeys: std::collections::HashSet<(String, i64)> = oracle
            .iter()
            .map(|o| (o["writer_guid"].clone(), o["seq"].parse().unwrap()))
            .collect();
        let extra: Vec<_> = rows
            .iter()
            .filter(|r| !okeys.contains(&(r.key.writer.to_string(), r.key.sn)))
            .filter(|r| r.status != Status::Lost)
            .map(|r| format!("{} {} {:?}", r.key.writer, r.key.sn, r.status))
            .collect();
        assert!(
            extra.is_empty(),
            "{name}: rows not in the oracle: {extra:?}"
        );
        common::assert_oracle_agrees(&name, &bad, oracle.len());
        total += oracle.len();
        report.push(format!(
            "{name}: {} samples ({complete} complete) agree",
            oracle.len()
        ));
    }
    eprintln!("{}\ntotal {total}", report.join("\n"));
}

fn usable_frag(r: &HashMap<String, String>) -> bool {
    let p = |k: &str| r[k].parse::<i64>().ok();
    match (
        p("frag_start"),
        p("frags_in_sm"),
        p("sample_size"),
        p("frag_size"),
    ) {
        (Some(fs), Some(nf), Some(ss), Some(fz)) => {
            fs >= 1 && nf >= 1 && fz > 0 && ss > 0 && fs + nf - 1 <= (ss + fz - 1) / fz
        }
        _ => false,
    }
}

/// (writer, sn, frag_start) → (min t_first_ipfrag, min t_last_ipfrag) of one side.
fn oracle_frags(path: &Path) -> BTreeMap<(String, i64, u32), (i64, i64)> {
    let mut m: BTreeMap<(String, i64, u32), (i64, i64)> = BTreeMap::new();
    for r in read_tsv(path) {
        if r["sm_id"] != "0x16" || !r["malformed"].is_empty() || !r["in_icmp"].is_empty() {
            continue;
        }
        if r["writer_guid"].is_empty() || !usable_frag(&r) {
            continue;
        }
        let (Ok(sn), Ok(fs)) = (r["seq"].parse::<i64>(), r["frag_start"].parse::<u32>()) else {
            continue;
        };
        let tf = ns_of(&r["t_first_ipfrag"]).unwrap() as i64;
        let tl = ns_of(&r["t_last_ipfrag"]).unwrap() as i64;
        let e = m
            .entry((r["writer_guid"].clone(), sn, fs))
            .or_insert((i64::MAX, i64::MAX));
        e.0 = e.0.min(tf);
        e.1 = e.1.min(tl);
    }
    m
}

#[test]
fn submessage_latency_matches_oracle_per_data_frag() {
    let mut checked = 0usize;
    for dir in pair_fixtures() {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let fa = oracle_frags(&dir.join("oracle_a_submsgs.tsv"));
        let fb = oracle_frags(&dir.join("oracle_b_submsgs.tsv"));
        if fa.is_empty() {
            continue;
        }
        let a = latency_args(
            &dir.join("a.pcap"),
            &[dir.join("b.pcap")],
            Level::Submessage,
        );
        let (rows, _) = run(&a);
        let mut n = 0usize;
        for r in rows.iter().filter(|r| r.fragmented) {
            let key = (r.key.writer.to_string(), r.key.sn, r.key.frag_start);
            let (snd, rcv) = match direction(r.sender, r.receiver).as_str() {
                "A->B" => (&fa, &fb),
                "B->A" => (&fb, &fa),
                d => panic!("{name}: direction {d}"),
            };
            let s = snd
                .get(&key)
                .unwrap_or_else(|| panic!("{name}: {key:?} not at the oracle's sender"));
            assert_eq!(r.t_send, s.0, "{name} {key:?}: t_send");
            match rcv.get(&key) {
                Some(x) => {
                    assert_eq!(r.status, Status::Ok, "{name} {key:?}");
                    assert_eq!(r.t_recv, Some(x.1), "{name} {key:?}: t_recv");
                    assert_eq!(r.latency_ns, Some(x.1 - s.0), "{name} {key:?}: latency");
                }
                None => assert_ne!(r.status, Status::Ok, "{name} {key:?}"),
            }
            n += 1;
        }
        // And the other way round: every DATA_FRAG seen on both sides has a row.
        for (key, _) in fa.iter().filter(|(k, _)| fb.contains_key(*k)) {
            assert!(
                rows.iter().any(|r| r.key.writer.to_string() == key.0
                    && r.key.sn == key.1
                    && r.key.frag_start == key.2),
                "{name}: no row for DATA_FRAG {key:?}"
            );
        }
        eprintln!("{name}: {n} DATA_FRAG rows agree");
        checked += n;
    }
    assert!(checked > 100, "too few DATA_FRAGs checked: {checked}");
}

#[test]
fn late_start_shows_the_injected_delay_and_topics_from_a_discovery_capture() {
    let dir = fixtures().join("i_late_start");
    let disc = dir.join("discovery.pcap");
    assert!(disc.exists(), "fixture {} is missing", disc.display());
    let mut a = latency_args(&dir.join("a.pcap"), &[dir.join("b.pcap")], Level::Sample);
    a.discovery = vec![disc];
    let (rows, _) = run(&a);
    let topics: HashMap<String, String> = read_tsv(&dir.join("oracle_writer_topics.tsv"))
        .into_iter()
        .filter_map(|r| {
            let g = r.get("writer_guid")?.clone();
            let t = r.get("topic_from_discovery")?.clone();
            Some((g, t))
        })
        .collect();
    assert!(!topics.is_empty());
    let mut user = 0;
    for r in rows.iter().filter(|r| !r.key.writer.entity.is_builtin()) {
        if let Some(t) = topics.get(&r.key.writer.to_string()) {
            assert_eq!(r.topic.as_deref(), Some(t.as_str()), "{}", r.key.writer);
        }
        if r.status == Status::Ok && direction(r.sender, r.receiver) == "A->B" {
            // 1 ms relay delay A→B: nothing can be faster.
            assert!(r.latency_ns.unwrap() >= 1_000_000, "{r:?}");
            user += 1;
        }
    }
    assert!(user > 100, "only {user} A->B user samples");
}

#[test]
fn dropped_ip_fragments_make_samples_incomplete_not_latencies() {
    let big = fixtures().join("b_large_frag/a.pcap");
    let cut = fixtures().join("e_mixed_robustness/derived/large_first600_dropped_ipfrags.pcap");
    assert!(big.exists() && cut.exists(), "fixtures missing");
    let (rows, _) = run(&latency_args(&big, &[cut], Level::Sample));
    let incomplete: Vec<_> = rows
        .iter()
        .filter(|r| r.status == Status::Incomplete)
        .collect();
    assert!(!incomplete.is_empty(), "no incomplete sample");
    assert!(incomplete.iter().all(|r| r.latency_ns.is_none()));
    assert!(rows.iter().any(|r| r.status == Status::Ok));
}

#[test]
fn the_join_is_bounded_and_counts_its_evictions() {
    let dir = fixtures().join("a_small_reliable");
    let mut a = latency_args(&dir.join("a.pcap"), &[dir.join("b.pcap")], Level::Sample);
    a.max_pending = 8;
    let (rows, s) = run(&a);
    assert!(s.join.pending_peak <= 8, "{:?}", s.join);
    assert!(s.join.evicted_capacity > 0, "{:?}", s.join);
    assert!(!rows.is_empty());
    // A short window finalises early without capacity evictions.
    let mut a = latency_args(&dir.join("a.pcap"), &[dir.join("b.pcap")], Level::Sample);
    a.window_ns = 200_000_000; // longer than the largest latency (65 ms)
    let (rows_w, s) = run(&a);
    assert_eq!(s.join.evicted_capacity, 0);
    assert!(s.join.pending_peak < 208, "{:?}", s.join);
    // Every sample still completes (SPDP re-sends of the same SN after the window are
    // new rows then, hence distinct keys).
    let ok: std::collections::HashSet<_> = rows_w
        .iter()
        .filter(|r| r.status == Status::Ok)
        .map(|r| r.key)
        .collect();
    assert_eq!(
        ok.len(),
        208,
        "a 200 ms window still completes every sample"
    );
}

#[test]
fn offset_shifts_every_latency_and_both_directions_come_out() {
    let dir = fixtures().join("a_small_reliable");
    let (base, _) = run(&latency_args(
        &dir.join("a.pcap"),
        &[dir.join("b.pcap")],
        Level::Sample,
    ));
    let mut a = latency_args(&dir.join("a.pcap"), &[dir.join("b.pcap")], Level::Sample);
    a.offset_ns = 40_000; // B's clock 40 µs ahead: A->B 40 µs shorter, B->A 40 µs longer
    let (shifted, _) = run(&a);
    let by_key: HashMap<_, _> = shifted.iter().map(|r| ((r.key, r.sender), r)).collect();
    let mut dirs = std::collections::BTreeSet::new();
    for r in base.iter().filter(|r| r.status == Status::Ok) {
        let s = by_key[&(r.key, r.sender)];
        let d = if r.sender == 0 { -40_000 } else { 40_000 };
        assert_eq!(s.latency_ns, r.latency_ns.map(|l| l + d), "{:?}", r.key);
        dirs.insert(direction(r.sender, r.receiver));
    }
    assert_eq!(dirs.into_iter().collect::<Vec<_>>(), ["A->B", "B->A"]);
}

#[test]
fn several_receivers_get_one_row_each() {
    // The receiver capture and a copy of it (rewritten with nanosecond timestamps) stand for
    // two receiving hosts on one segment.
    let dir = fixtures().join("b_large_frag");
    let b = dir.join("b.pcap");
    let b2 = std::env::temp_dir().join(format!("ddshark-lat-b2-{}.pcap", std::process::id()));
    common::shifted_copy(&b, &b2, |t| t);
    let (two, _) = run(&latency_args(
        &dir.join("a.pcap"),
        std::slice::from_ref(&b),
        Level::Sample,
    ));
    let (three, s) = run(&latency_args(
        &dir.join("a.pcap"),
        &[b, b2.clone()],
        Level::Sample,
    ));
    let _ = std::fs::remove_file(&b2);
    assert_eq!(s.captures.len(), 3);
    let ab: HashMap<_, _> = two
        .iter()
        .filter(|r| r.sender == 0)
        .map(|r| (r.key, r.latency_ns))
        .collect();
    for recv in [1, 2] {
        let got: HashMap<_, _> = three
            .iter()
            .filter(|r| r.sender == 0 && r.receiver == recv)
            .map(|r| (r.key, r.latency_ns))
            .collect();
        assert_eq!(got, ab, "A->{}", ddshark::latency::label(recv));
    }
}

#[test]
fn datagrams_sent_twice_are_counted_as_repairs() {
    // e_mixed_robustness: noise.py sends each hand-built RTPS datagram twice.
    let dir = fixtures().join("e_mixed_robustness");
    let (rows, _) = run(&latency_args(
        &dir.join("a.pcap"),
        &[dir.join("b.pcap")],
        Level::Sample,
    ));
    let twice: Vec<_> = rows
        .iter()
        .filter(|r| r.key.writer.to_string().starts_with("0f0e0d0c0b0a0908"))
        .filter(|r| r.status == Status::Ok)
        .collect();
    assert!(twice.len() >= 4, "{twice:?}");
    for r in &twice {
        assert_eq!(
            (r.tx_sender, r.repairs_sender, r.rx_receiver),
            (2, 1, 2),
            "{r:?}"
        );
        // The first copy arrived: the latency is the first transmission's.
        assert!(!r.repaired, "{r:?}");
    }
    // Cyclone's own samples in this capture were never repeated.
    assert!(rows
        .iter()
        .filter(|r| r.key.writer.prefix.0[..2] == [0x01, 0x10])
        .all(|r| r.repairs_sender == 0 || r.key.writer.entity.is_builtin()));
}

/// Copy of a classic pcap file without the frames in `drop` (1-based).
fn pcap_without(src: &Path, drop: &[u64], dst: &Path) {
    let b = std::fs::read(src).unwrap();
    let le = match b.get(..4) {
        Some([0xd4, 0xc3, 0xb2, 0xa1]) | Some([0x4d, 0x3c, 0xb2, 0xa1]) => true,
        Some([0xa1, 0xb2, 0xc3, 0xd4]) | Some([0xa1, 0xb2, 0x3c, 0x4d]) => false,
        m => panic!("{}: not a classic pcap ({m:?})", src.display()),
    };
    let mut out = b[..24].to_vec();
    let (mut off, mut n) = (24usize, 0u64);
    while off + 16 <= b.len() {
        let f: [u8; 4] = b[off + 8..off + 12].try_into().unwrap();
        let incl = if le {
            u32::from_le_bytes(f)
        } else {
            u32::from_be_bytes(f)
        } as usize;
        let end = (off + 16 + incl).min(b.len());
        n += 1;
        if !drop.contains(&n) {
            out.extend_from_slice(&b[off..end]);
        }
        off = end;
    }
    std::fs::write(dst, out).unwrap();
}

#[test]
fn a_sample_completed_by_its_retransmission_is_marked_repaired() {
    // Real capture, one frame removed: the receiver loses the first copy of a DATA that
    // noise.py sends twice, so only the second copy (a retransmission) completes it.
    let dir = fixtures().join("e_mixed_robustness");
    let writer = "0f0e0d0c0b0a09080706050400020303";
    let first_copy = read_tsv(&dir.join("oracle_b_submsgs.tsv"))
        .into_iter()
        .filter(|r| r["writer_guid"] == writer && r["seq"] == "1" && r["sm_kind"] == "DATA")
        .map(|r| r["frame"].parse::<u64>().unwrap())
        .min()
        .expect("the duplicated DATA is in the fixture");
    let tmp = std::env::temp_dir().join(format!("ddshark-lat-{}.pcap", std::process::id()));
    pcap_without(&dir.join("b.pcap"), &[first_copy], &tmp);
    let (full, _) = run(&latency_args(
        &dir.join("a.pcap"),
        &[dir.join("b.pcap")],
        Level::Sample,
    ));
    let (cut, _) = run(&latency_args(
        &dir.join("a.pcap"),
        std::slice::from_ref(&tmp),
        Level::Sample,
    ));
    let _ = std::fs::remove_file(&tmp);
    let pick = |rows: &[SampleRow]| {
        rows.iter()
            .find(|r| r.key.writer.to_string() == writer && r.key.sn == 1)
            .cloned()
            .unwrap()
    };
    let (a, b) = (pick(&full), pick(&cut));
    assert!(!a.repaired && b.repaired, "{a:?}\n{b:?}");
    assert_eq!(b.rx_receiver, 1);
    assert_eq!(
        a.t_send, b.t_send,
        "latency counts from the first transmission"
    );
    assert!(b.latency_ns > a.latency_ns);
}
