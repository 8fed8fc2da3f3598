//! `ddshark stats` against the tshark oracle of every real fixture: per writer and
//! per topic, samples, bytes, repeats (retransmitted + fan-out) and losses are
//! recomputed here from `oracle_*_submsgs.tsv` + `oracle_*_discovery.tsv` and must
//! equal what the pipeline reports.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::public::checkable;
use common::{fixture, read_tsv, ORACLE_CASES};
use ddshark::output::contract::stats::Document as StatsDocument;
use ddshark::state::snapshot::Snapshot;
use ddshark::stats_cmd::{stats_file, StatsOptions};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Expect {
    samples: u64,
    bytes: u64,
    /// Samples seen more than once (= retransmitted + fan-out in ddshark).
    repeated: u64,
    /// Samples repeated towards a destination that already had them (⊆ retransmitted).
    same_dst_repeated: u64,
    lost: u64,
}

fn is_builtin(guid: &str) -> bool {
    let kind = u8::from_str_radix(&guid[guid.len() - 2..], 16).unwrap();
    kind & 0xc0 == 0xc0
}

/// Expected per-writer values, from the oracle alone.
fn expected(submsgs: &Path) -> BTreeMap<String, Expect> {
    #[derive(Default)]
    struct Sample {
        size: u64,
        /// (destination, fragment number or 0) → copies
        copies: HashMap<(String, u32), u32>,
    }
    let mut samples: BTreeMap<String, BTreeMap<i64, Sample>> = BTreeMap::new();
    let mut gaps: HashMap<String, Vec<(i64, i64)>> = HashMap::new();
    for r in read_tsv(submsgs) {
        if !r["malformed"].is_empty() || !r["in_icmp"].is_empty() {
            continue;
        }
        let kind = r["sm_kind"].as_str();
        let writer = r["writer_guid"].clone();
        if writer.is_empty() || is_builtin(&writer) {
            continue;
        }
        if kind == "GAP" {
            // [gap_start, bitmap_base - 1] (bitmap bits are not in the oracle).
            if let (Ok(a), Ok(b)) = (
                r["seq_first"].parse::<i64>(),
                r["bitmap_base"].parse::<i64>(),
            ) {
                gaps.entry(writer).or_default().push((a, b - 1));
            }
            continue;
        }
        if kind != "DATA" && kind != "DATA_FRAG" {
            continue;
        }
        let Ok(sn) = r["seq"].parse::<i64>() else {
            continue;
        };
        let dst = format!("{}:{}", r["dst"], r["dport"]);
        let s = samples.entry(writer).or_default().entry(sn).or_default();
        if kind == "DATA" {
            s.size = r["data_len"].parse().unwrap_or(0);
            *s.copies.entry((dst, 0)).or_default() += 1;
        } else {
            s.size = r["sample_size"].parse().unwrap();
            let start: u32 = r["frag_start"].parse().unwrap();
            let n: u32 = r["frags_in_sm"].parse().unwrap();
            for f in start..start + n {
                *s.copies.entry((dst.clone(), f)).or_default() += 1;
            }
        }
    }
    let mut out = BTreeMap::new();
    for (w, sns) in samples {
        let mut e = Expect::default();
        for s in sns.values() {
            e.samples += 1;
            e.bytes += s.size;
            let frags: BTreeSet<u32> = s.copies.keys().map(|(_, f)| *f).collect();
            let per_frag_max = frags
                .iter()
                .map(|f| {
                    s.copies
                        .iter()
                        .filter(|((_, g), _)| g == f)
                        .map(|(_, n)| n)
                        .sum::<u32>()
                })
                .max()
                .unwrap_or(0);
            if per_frag_max > 1 {
                e.repeated += 1;
            }
            if s.copies.values().any(|n| *n > 1) {
                e.same_dst_repeated += 1;
            }
        }
        let (lo, hi) = (*sns.keys().next().unwrap(), *sns.keys().last().unwrap());
        let g = gaps.get(&w).cloned().unwrap_or_default();
        e.lost = (lo..=hi)
            .filter(|sn| !sns.contains_key(sn) && !g.iter().any(|(a, b)| a <= sn && sn <= b))
            .count() as u64;
        out.insert(w, e);
    }
    out
}

/// writer GUID → topic, from the oracle's SEDP publications.
fn topics(discovery: &Path) -> HashMap<String, String> {
    read_tsv(discovery)
        .into_iter()
        .filter(|r| {
            r["kind"] == "SEDP_publication"
                && !r["endpoint_guid"].is_empty()
                && !r["topic"].is_empty()
        })
        .map(|r| (r["endpoint_guid"].clone(), r["topic"].clone()))
        .collect()
}

fn check(capture: &Path, submsgs: &Path, discovery: &Path) -> Vec<String> {
    let snap: std::sync::Arc<Snapshot> = stats_file(capture, &StatsOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e:#}", capture.display()));
    let mut errors = Vec::new();
    let name = capture.display().to_string();
    if !snap.health.reconciles {
        errors.push(format!(
            "{name}: counters do not reconcile: {:?}",
            snap.health.checks
        ));
    }
    let exp = expected(submsgs);
    let topic_of = topics(discovery);
    let writers: HashMap<&str, _> = snap.writers.iter().map(|w| (w.guid.as_str(), w)).collect();
    let mut per_topic: BTreeMap<String, Expect> = BTreeMap::new();
    for (guid, e) in &exp {
        let Some(w) = writers.get(guid.as_str()) else {
            errors.push(format!("{name}: writer {guid} missing"));
            continue;
        };
        let t = &w.totals;
        let got_repeated = t.retransmitted + t.fanout;
        if t.samples != e.samples
            || t.bytes != e.bytes
            || got_repeated != e.repeated
            || t.lost != e.lost
            || t.retransmitted < e.same_dst_repeated
        {
            errors.push(format!(
                "{name}: writer {guid} ({:?}): got samples {} bytes {} retransmitted {} fanout {} lost {}; oracle samples {} bytes {} repeated {} (same destination {}) lost {}",
                w.topic, t.samples, t.bytes, t.retransmitted, t.fanout, t.lost, e.samples, e.bytes, e.repeated, e.same_dst_repeated, e.lost
            ));
        }
        // Topic attribution: ddshark names the writer's topic exactly when the oracle does.
        if w.topic.as_ref() != topic_of.get(guid) {
            errors.push(format!(
                "{name}: writer {guid}: topic {:?}, oracle {:?}",
                w.topic,
                topic_of.get(guid)
            ));
        }
        if let Some(topic) = topic_of.get(guid) {
            let a = per_topic.entry(topic.clone()).or_default();
            a.samples += e.samples;
            a.bytes += e.bytes;
            a.repeated += e.repeated;
            a.lost += e.lost;
        }
    }
    for (topic, e) in &per_topic {
        let Some(t) = snap.topics.iter().find(|t| &t.name == topic) else {
            errors.push(format!("{name}: topic {topic} missing"));
            continue;
        };
        let got = (
            t.totals.samples,
            t.totals.bytes,
            t.totals.retransmitted + t.totals.fanout,
            t.totals.lost,
        );
        if got != (e.samples, e.bytes, e.repeated, e.lost) {
            errors.push(format!(
                "{name}: topic {topic}: got (samples, bytes, repeated, lost) {got:?}, oracle {:?}",
                (e.samples, e.bytes, e.repeated, e.lost)
            ));
        }
    }
    // No user writer with samples that the oracle does not know.
    for w in &snap.writers {
        if !w.builtin && w.totals.samples > 0 && !exp.contains_key(&w.guid) {
            errors.push(format!("{name}: writer {} not in the oracle", w.guid));
        }
    }
    errors
}

/// Cases whose statistics differ from the oracle for a known, still open reason. They
/// must keep differing (so a fix is noticed and the case moves back to the checked ones).
const KNOWN_DIFFERENT: &[(&str, &str)] = &[];

#[test]
fn stats_match_the_tshark_oracle_on_every_fixture() {
    let cases = checkable(
        "stats_oracle::stats_match_the_tshark_oracle_on_every_fixture",
        ORACLE_CASES,
        |c| c.0,
    );
    let mut errors = Vec::new();
    for (capture, submsgs) in cases {
        let discovery = submsgs.replace("_submsgs.tsv", "_discovery.tsv");
        let found = check(&fixture(capture), &fixture(submsgs), &fixture(&discovery));
        match KNOWN_DIFFERENT.iter().find(|(c, _)| c == capture) {
            Some((_, why)) if found.is_empty() => errors.push(format!(
                "{capture} now matches the oracle: remove it from KNOWN_DIFFERENT ({why})"
            )),
            Some(_) => {}
            None => errors.extend(found),
        }
    }
    assert!(
        errors.is_empty(),
        "{} mismatches:\n{}",
        errors.len(),
        errors.join("\n")
    );
}

#[test]
fn stats_json_has_the_documented_fields() {
    let p = fixture("a_small_reliable/a.pcap");
    let snap = stats_file(&p, &StatsOptions::default()).unwrap();
    let v = serde_json::to_value(StatsDocument::of(&snap)).unwrap();
    for key in ["participants", "writers", "readers", "topics", "health"] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    let t = v["topics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "rt/chatter")
        .unwrap();
    for key in [
        "name",
        "type",
        "writers",
        "readers",
        "samples",
        "bytes",
        "lost",
        "retransmitted",
    ] {
        assert!(t.get(key).is_some(), "topic lacks {key}");
    }
    assert_eq!(t["ros_name"], "/chatter");
    assert_eq!(t["ros_type"], "std_msgs/msg/String");
    assert!(v["health"]["reconciles"].as_bool().unwrap());
}
