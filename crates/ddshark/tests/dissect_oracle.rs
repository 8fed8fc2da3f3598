//! Every submessage `ddshark dissect` finds in the real fixtures, compared field by
//! field with the tshark oracle made from the same file (tests/pcaps/README.md).
//!
//! Known, deliberate deviations from Wireshark, each checked below:
//! 1. A submessage whose octetsToNextHeader runs past the captured bytes (snaplen)
//!    reports its on-wire payload size; tshark counts only the captured bytes.
//! 2. An undecodable submessage keeps the fields read before the fault (entity ids,
//!    SN) and leaves the rest null; tshark shows whatever it could read.
//! 3. RTPS with a major version other than 1 or 2 is not RTPS (tshark agrees).
//! 4. RTPS quoted inside ICMP errors is not traffic: oracle rows with in_icmp=1 are
//!    expected to have no counterpart.
//!
//! Vendor-specific submessages (ids 0x80–0xff) are `VENDOR_SPECIFIC` here; tshark calls
//! them "Vendor-specific", or by RTI's names when RTI sent them (`RTI_CRC`, …), which
//! must then be our `vendor_submessage` too.
//!
//! Each fixture's agreement (submessages with every compared field equal, over all
//! submessages either side reports) is printed and must be at least 99.9 %.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;

use common::public::checkable;
use common::{fixture, ns_of, read_tsv, ORACLE_CASES};
use ddshark::capture::file::FileSource;
use ddshark::dissect::dissect_source;
use ddshark::record::SubmessageRecord;

/// Derived robustness files of e_mixed_robustness (their oracles sit in derived/oracle_<name>/).
const DERIVED: &[&str] = &[
    "a.pcapng",
    "a_nsec.pcap",
    "a_snaplen128.pcap",
    "a_truncated_file.pcap",
    "large_first600_dropped_ipfrags.pcap",
];

/// Fast DDS over TCP (l_fastdds_tcp: everything over TCP; l2_fastdds_udp_tcp: UDP discovery,
/// TCP data). tshark dissects no RTPS over TCP, so it is the oracle of their UDP part only;
/// the TCP-carried submessages are checked against the applications' logs (tcp_fastdds.rs).
const TCP_CASES: &[(&str, &str)] = &[
    ("l_fastdds_tcp/a.pcap", "l_fastdds_tcp/oracle_a_submsgs.tsv"),
    ("l_fastdds_tcp/b.pcap", "l_fastdds_tcp/oracle_b_submsgs.tsv"),
    (
        "l2_fastdds_udp_tcp/a.pcap",
        "l2_fastdds_udp_tcp/oracle_a_submsgs.tsv",
    ),
    (
        "l2_fastdds_udp_tcp/b.pcap",
        "l2_fastdds_udp_tcp/oracle_b_submsgs.tsv",
    ),
];

fn dissect_all(rel: &str) -> (Vec<SubmessageRecord>, ddshark::dissect::DissectSummary) {
    let mut source = FileSource::open(&fixture(rel)).expect("open fixture");
    let mut records = Vec::new();
    let summary = dissect_source(&mut source, |r| {
        records.push(r.clone());
        Ok(true)
    })
    .expect("dissect");
    (records, summary)
}

/// tshark's names of RTI's vendor-specific submessages, as ours.
const RTI_SUBMESSAGES: &[(&str, &str)] = &[
    ("RTI_CRC", "RTI_CRC"),
    ("DATA_FRAG_SESSION", "RTI_DATA_FRAG_SESSION"),
    ("UDP_WAN_BINDING_PING", "RTI_UDP_WAN_BINDING_PING"),
];

/// tshark's kind names → ours, with the vendor submessage name where tshark gives one.
fn oracle_kind(k: &str) -> (&str, Option<&'static str>) {
    if let Some((_, ours)) = RTI_SUBMESSAGES.iter().find(|(t, _)| *t == k) {
        return ("VENDOR_SPECIFIC", Some(ours));
    }
    match k {
        "Vendor-specific" => ("VENDOR_SPECIFIC", None),
        "Unknown" => ("UNKNOWN", None),
        other => (other, None),
    }
}

/// Least share of a fixture's submessages that must agree with tshark in every field.
const MIN_AGREEMENT: f64 = 0.999;

fn opt(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

#[derive(Default)]
struct Report {
    compared: usize,
    /// Submessages reported by tshark, by us, or both.
    submessages: usize,
    /// Keys of the submessages with at least one difference.
    disagreeing: std::collections::HashSet<String>,
    mismatches: Vec<String>,
    /// Submessages carried over TCP, which tshark does not dissect.
    over_tcp: usize,
}

impl Report {
    fn check<T: PartialEq + std::fmt::Debug>(&mut self, what: &str, key: &str, oracle: T, ours: T) {
        if oracle == ours {
            return;
        }
        self.disagreeing.insert(key.to_string());
        if self.mismatches.len() < 40 {
            self.mismatches
                .push(format!("{key} {what}: tshark {oracle:?}, ddshark {ours:?}"));
        }
    }

    fn agreement(&self) -> f64 {
        if self.submessages == 0 {
            return 1.0;
        }
        1.0 - self.disagreeing.len() as f64 / self.submessages as f64
    }
}

fn compare(pcap: &str, tsv: &str) -> Report {
    let (records, summary) = dissect_all(pcap);
    assert!(
        summary.stats.reconciles(),
        "{pcap}: frame counters do not reconcile: {:?}",
        summary.stats
    );
    // A TCP segment may complete several RTPS messages: (frame, index) names UDP ones only.
    let over_udp: Vec<&SubmessageRecord> =
        records.iter().filter(|r| r.tcp_framing.is_none()).collect();
    let ours: HashMap<(u64, usize), &SubmessageRecord> = over_udp
        .iter()
        .map(|r| ((r.frame, r.sm_index + 1), *r))
        .collect();
    assert_eq!(
        ours.len(),
        over_udp.len(),
        "{pcap}: duplicate (frame, index)"
    );
    let oracle = read_tsv(&fixture(tsv));
    let mut rep = Report {
        submessages: oracle.len(),
        ..Report::default()
    };
    let mut matched = 0usize;
    for o in &oracle {
        let frame: u64 = o["frame"].parse().expect("frame");
        let idx: usize = o["sm_idx"].parse().expect("sm_idx");
        let key = format!("{pcap} frame {frame} #{idx} {}", o["sm_kind"]);
        let found = ours.get(&(frame, idx));
        if o["in_icmp"] == "1" {
            rep.check(
                "ICMP-quoted RTPS reported as traffic",
                &key,
                None,
                found.map(|r| r.kind),
            );
            continue;
        }
        let Some(r) = found else {
            rep.check("submessage", &key, "present", "missing");
            continue;
        };
        matched += 1;
        rep.compared += 1;
        let kind = r.kind;
        let (want_kind, want_vendor_submessage) = oracle_kind(&o["sm_kind"]);
        rep.check("kind", &key, want_kind, kind);
        if want_vendor_submessage.is_some() {
            rep.check(
                "vendor submessage",
                &key,
                want_vendor_submessage,
                r.vendor_submessage,
            );
        }
        rep.check(
            "vendor",
            &key,
            o["vendor_id"].as_str(),
            r.vendor_id.as_str(),
        );
        rep.check(
            "source prefix",
            &key,
            o["src_guid_prefix"].as_str(),
            r.guid_prefix.as_str(),
        );
        rep.check(
            "src",
            &key,
            format!("{}:{}", o["src"], o["sport"]),
            r.src.clone(),
        );
        rep.check(
            "dst",
            &key,
            format!("{}:{}", o["dst"], o["dport"]),
            r.dst.clone(),
        );
        rep.check(
            "first IP fragment time",
            &key,
            ns_of(&o["t_first_ipfrag"]),
            Some(r.ts_first_ns),
        );
        rep.check(
            "last IP fragment time",
            &key,
            ns_of(&o["t_last_ipfrag"]),
            Some(r.ts_last_ns),
        );
        rep.check(
            "pcp",
            &key,
            o.get("pcp").and_then(|p| p.parse::<u8>().ok()),
            r.pcp,
        );
        let failed = r.error.is_some();
        // Deviation 2: where we stopped at a fault, only what we kept is compared.
        let cmp_opt =
            |rep: &mut Report, what: &str, oracle: Option<String>, ours: Option<String>| {
                if failed && (ours.is_none() || oracle.is_none()) {
                    return;
                }
                rep.check(what, &key, oracle, ours);
            };
        cmp_opt(
            &mut rep,
            "writer GUID",
            opt(&o["writer_guid"]),
            r.writer_guid.clone(),
        );
        if matches!(
            kind,
            "DATA" | "DATA_FRAG" | "HEARTBEAT" | "ACKNACK" | "GAP" | "NACK_FRAG" | "HEARTBEAT_FRAG"
        ) {
            let rd = o["reader_entity"].trim_start_matches("0x").to_string();
            cmp_opt(&mut rep, "reader entity", opt(&rd), r.reader_entity.clone());
        }
        // (the kinds that carry it, what, the oracle's column, ours)
        fn text<T: ToString>(v: Option<T>) -> Option<String> {
            v.map(|v| v.to_string())
        }
        let numbers: [(&[&str], &str, &str, Option<String>); 9] = [
            (
                &["DATA", "DATA_FRAG", "NACK_FRAG", "HEARTBEAT_FRAG"],
                "sn",
                "seq",
                text(r.sn),
            ),
            (&["HEARTBEAT"], "first sn", "seq_first", text(r.first_sn)),
            (&["HEARTBEAT"], "last sn", "seq_last", text(r.last_sn)),
            (&["GAP"], "gap start", "seq_first", text(r.first_sn)),
            (
                &["DATA_FRAG"],
                "frag start",
                "frag_start",
                text(r.frag_start),
            ),
            (
                &["DATA_FRAG"],
                "frags in submessage",
                "frags_in_sm",
                text(r.frags_in_submessage),
            ),
            (
                &["DATA_FRAG"],
                "fragment size",
                "frag_size",
                text(r.fragment_size),
            ),
            (
                &["DATA_FRAG"],
                "sample size",
                "sample_size",
                text(r.sample_size),
            ),
            (
                &["HEARTBEAT_FRAG"],
                "last fragment",
                "last_frag_num",
                text(r.last_frag_num),
            ),
        ];
        for (kinds, what, column, ours) in numbers {
            if kinds.contains(&kind) {
                cmp_opt(&mut rep, what, opt(&o[column]), ours);
            }
        }
        if matches!(kind, "DATA" | "DATA_FRAG") && !r.truncated && !failed {
            // Deviation 1: truncated submessages report their on-wire size.
            rep.check(
                "payload size",
                &key,
                opt(&o["data_len"]),
                r.payload_size.map(|v| v.to_string()),
            );
        }
        if !o["topic_tshark"].is_empty() {
            rep.check("topic", &key, opt(&o["topic_tshark"]), r.topic.clone());
        }
    }
    // Everything we report, tshark reports too.
    let oracle_keys: std::collections::HashSet<(u64, usize)> = oracle
        .iter()
        .map(|o| {
            (
                o["frame"].parse().unwrap_or(0),
                o["sm_idx"].parse().unwrap_or(0),
            )
        })
        .collect();
    for r in &records {
        if r.tcp_framing.is_some() {
            rep.over_tcp += 1;
            continue;
        }
        if !oracle_keys.contains(&(r.frame, r.sm_index + 1)) {
            rep.submessages += 1;
            rep.check(
                "submessage",
                &format!("{pcap} frame {} #{}", r.frame, r.sm_index + 1),
                "absent",
                r.kind,
            );
        }
    }
    assert!(matched > 0 || oracle.is_empty(), "{pcap}: nothing matched");
    rep
}

#[test]
fn every_submessage_matches_the_tshark_oracle() {
    use std::io::Write;
    let mut total = 0;
    let mut failures = Vec::new();
    let mut table = String::from("\ndissect agreement with tshark, per fixture:\n");
    let mut below = Vec::new();
    let mut account = |label: &str, rep: Report| {
        total += rep.compared;
        let a = rep.agreement();
        table.push_str(&format!(
            "  {:>8.4} %  {:>6} submessages  {label}{}\n",
            a * 100.0,
            rep.submessages,
            if rep.over_tcp > 0 {
                format!(" (+{} over TCP, checked against the logs)", rep.over_tcp)
            } else {
                String::new()
            }
        ));
        if a < MIN_AGREEMENT {
            below.push(format!("{label}: {:.4} %", a * 100.0));
        }
        failures.extend(rep.mismatches);
    };
    let pairs = checkable(
        "dissect_oracle::every_submessage_matches_the_tshark_oracle",
        ORACLE_CASES,
        |c| c.0,
    );
    for (pcap, tsv) in pairs.into_iter().chain(TCP_CASES) {
        account(pcap, compare(pcap, tsv));
    }
    for name in DERIVED {
        let label = name.replace('.', "_");
        let dir = format!("e_mixed_robustness/derived/oracle_{label}");
        let tsv = std::fs::read_dir(common::fixtures().join(&dir))
            .expect("derived oracle dir")
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|f| f.ends_with("_submsgs.tsv"))
            .expect("derived submsgs oracle");
        let pcap = format!("e_mixed_robustness/derived/{name}");
        account(&pcap, compare(&pcap, &format!("{dir}/{tsv}")));
    }
    // Past libtest's capture, so a passing run shows the figures too.
    let _ = std::io::stderr().lock().write_all(table.as_bytes());
    assert!(total > 10_000, "only {total} submessages compared");
    assert!(
        below.is_empty(),
        "agreement below {} %: {below:?}\n{} mismatches (first 40 per fixture):\n{}",
        MIN_AGREEMENT * 100.0,
        failures.len(),
        failures.join("\n")
    );
    assert_no_mismatches(&failures);
}

#[test]
fn truncated_file_is_reported_not_fatal() {
    let (records, summary) = dissect_all("e_mixed_robustness/derived/a_truncated_file.pcap");
    assert!(
        summary.truncated.is_some(),
        "the cut last record must be reported"
    );
    assert!(!records.is_empty());
}

#[test]
fn dropped_ip_fragments_leave_incomplete_datagrams_counted() {
    let (_, summary) =
        dissect_all("e_mixed_robustness/derived/large_first600_dropped_ipfrags.pcap");
    let ip = summary.stats.ip;
    assert!(ip.reassembled > 0);
    assert!(
        ip.evicted_idle > 0,
        "the datagrams missing a fragment are given up and counted: {ip:?}"
    );
}

/// Every SPDP/SEDP announcement tshark decoded (oracle_*_discovery.tsv) is decoded by us
/// too, with the same GUIDs, topic, type, reliability, durability and history.
#[test]
fn discovery_records_match_the_tshark_oracle() {
    use ddshark::capture::PacketSource;
    use rtps_dissect::discovery::{Durability, History, Reliability};
    use rtps_dissect::{DiscoveryRecord, Dissector, FrameOutcome};

    let mut compared = 0usize;
    let mut failures = Vec::new();
    let pairs = checkable(
        "dissect_oracle::discovery_records_match_the_tshark_oracle",
        ORACLE_CASES,
        |c| c.0,
    );
    for (pcap, tsv) in pairs {
        let disc_tsv = tsv.replace("_submsgs.tsv", "_discovery.tsv");
        let oracle = read_tsv(&fixture(&disc_tsv));
        // Ours, by the frame that completed the datagram (the oracle's frame).
        let mut ours: HashMap<u64, Vec<DiscoveryRecord>> = HashMap::new();
        let mut source = FileSource::open(&fixture(pcap)).expect("open");
        let mut d = Dissector::default();
        while let Ok(Some(frame)) = source.next_frame() {
            if let FrameOutcome::Rtps(dg) = d.process(&frame) {
                for rec in &dg.discovery {
                    ours.entry(dg.frame_last).or_default().push(rec.clone());
                }
            }
        }
        for o in &oracle {
            if o["sm_kind"] != "DATA" || o["status_info"].ends_with('3') {
                continue;
            }
            let frame: u64 = o["frame"].parse().expect("frame");
            let key = format!("{pcap} frame {frame} {}", o["kind"]);
            let recs = ours.get(&frame).cloned().unwrap_or_default();
            compared += 1;
            match o["kind"].as_str() {
                "SPDP_participant" => {
                    let want = o["participant_guid"].get(..24).unwrap_or("").to_string();
                    let found = recs.iter().any(|r| {
                        matches!(r, DiscoveryRecord::Participant(p) if p.guid_prefix.to_string() == want)
                    });
                    if !found {
                        failures.push(format!("{key}: participant {want} not decoded"));
                    }
                }
                "SEDP_publication" | "SEDP_subscription" => {
                    let want = o["endpoint_guid"].clone();
                    let Some(e) = recs.iter().find_map(|r| match r {
                        DiscoveryRecord::Endpoint(e) if e.guid.to_string() == want => Some(e),
                        _ => None,
                    }) else {
                        failures.push(format!("{key}: endpoint {want} not decoded"));
                        continue;
                    };
                    let mut check = |what: &str, a: String, b: String| {
                        if a != b {
                            failures
                                .push(format!("{key} {want} {what}: tshark {a:?}, ddshark {b:?}"));
                        }
                    };
                    check("topic", o["topic"].clone(), e.topic.clone());
                    check("type", o["type"].clone(), e.type_name.clone());
                    let rel = match e.qos.reliability {
                        Some(Reliability::BestEffort) => "0x00000001".to_string(),
                        Some(Reliability::Reliable) => "0x00000002".to_string(),
                        Some(Reliability::Other(v)) => format!("0x{v:08x}"),
                        None => String::new(),
                    };
                    check("reliability", o["reliability_kind"].clone(), rel);
                    let dur = e.qos.durability.map(|d| match d {
                        Durability::Other(v) => format!("0x{v:08x}"),
                        d => format!("0x{:08x}", d.rank()),
                    });
                    check(
                        "durability",
                        o["durability"].clone(),
                        dur.unwrap_or_default(),
                    );
                    let hist = match e.qos.history {
                        Some(History::KeepLast(_)) => "0x00000000".to_string(),
                        Some(History::KeepAll) => "0x00000001".to_string(),
                        Some(History::Other(v)) => format!("0x{v:08x}"),
                        None => String::new(),
                    };
                    check("history", o["history_kind"].clone(), hist);
                }
                _ => {}
            }
        }
    }
    assert!(
        compared > 300,
        "only {compared} discovery announcements compared"
    );
    assert_no_mismatches(&failures);
}

/// RTI Connext's 16-byte `NDDSPING` probes (RTPS header, no submessage) in the public RTI
/// captures are counted as pings, not as malformed frames.
#[test]
fn rti_pings_are_not_malformed() {
    let cases: &[(&str, u64)] = &[
        ("public/eprosima_nidr_rti_helloworld/capture.pcap", 4),
        ("public/ndpi_rti_connext/rtps.pcap", 1),
    ];
    for (pcap, pings) in checkable("dissect_oracle::rti_pings_are_not_malformed", cases, |c| {
        c.0
    }) {
        let (_, summary) = dissect_all(pcap);
        let s = summary.stats;
        assert_eq!((s.rti_pings, s.malformed), (*pings, 0), "{pcap}");
        assert!(s.reconciles(), "{pcap}");
    }
}

fn assert_no_mismatches(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
