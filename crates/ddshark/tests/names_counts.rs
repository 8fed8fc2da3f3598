//! Names, counts and histograms mean one thing in every output: built-in topics are named
//! in every format, `stats` text lists the topics its JSON lists, each frame count says
//! what it counts, and negative latencies get one histogram bin. All on bundled captures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeSet;

fn pcap(rel: &str) -> String {
    common::fixture(rel).to_string_lossy().into_owned()
}

use common::ddshark_stdout as stdout;

/// A built-in writer's GUID ends in a built-in entity kind (0xc2, 0xc3).
fn builtin_guid(guid: &str) -> bool {
    guid.ends_with("c2") || guid.ends_with("c3")
}

#[test]
fn builtin_topics_are_named_in_every_latency_format() {
    let (a, b) = (
        pcap("a_small_reliable/a.pcap"),
        pcap("a_small_reliable/b.pcap"),
    );
    let tsv = stdout(&["latency", &a, &b, "--format", "tsv"]);
    let mut rows = 0;
    for line in tsv.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        if builtin_guid(cols[1]) {
            rows += 1;
            assert!(cols[2].starts_with("DCPS"), "TSV: unnamed built-in: {line}");
        }
    }
    assert!(rows > 10, "TSV: {rows} built-in rows");
    let jsonl = stdout(&["latency", &a, &b, "--format", "jsonl"]);
    let mut rows = 0;
    for line in jsonl.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["kind"] == "sample" && v["builtin"] == true {
            rows += 1;
            assert!(
                v["topic"].as_str().is_some_and(|t| t.starts_with("DCPS")),
                "JSONL: {line}"
            );
        }
    }
    assert!(rows > 10, "JSONL: {rows} built-in rows");
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&["latency", &a, &b, "--format", "json"])).unwrap();
    for s in json["samples"].as_array().unwrap() {
        if s["builtin"] == true {
            assert!(
                s["topic"].as_str().is_some_and(|t| t.starts_with("DCPS")),
                "JSON: {s}"
            );
        }
    }
}

#[test]
fn builtin_topics_are_named_in_dissect_json() {
    let json: serde_json::Value = serde_json::from_str(&stdout(&[
        "dissect",
        &pcap("a_small_reliable/a.pcap"),
        "--format",
        "json",
    ]))
    .unwrap();
    let participant: Vec<&serde_json::Value> = json
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            r["writer_guid"]
                .as_str()
                .is_some_and(|g| g.ends_with("000100c2"))
        })
        .collect();
    assert!(!participant.is_empty());
    for r in participant {
        assert_eq!(r["topic"], "DCPSParticipant", "{r}");
        assert_eq!(r["type"], "ParticipantBuiltinTopicData", "{r}");
    }
}

#[test]
fn stats_text_lists_the_topics_its_json_lists() {
    let f = pcap("h_vlan_pcp/a.pcap");
    let json: serde_json::Value = serde_json::from_str(&stdout(&["stats", &f, "-q"])).unwrap();
    let text = stdout(&["stats", &f, "-q", "--format", "text"]);
    let table: BTreeSet<String> = text
        .split("\n\n")
        .find(|block| block.starts_with("TOPIC "))
        .expect("the topics table")
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with('*'))
        .map(|l| l.split("  ").next().unwrap().trim().to_string())
        .collect();
    let listed: BTreeSet<String> = json["topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let name = t["name"].as_str().unwrap();
            if t["builtin"] == true {
                format!("{name} [built-in]")
            } else {
                name.to_string()
            }
        })
        .collect();
    assert!(listed.iter().any(|n| n.ends_with("[built-in]")));
    assert_eq!(table, listed);
}

/// `N frames dissected` of a summary's first line, and `M frames read (K read, not
/// dissected yet)` of its health line.
fn frame_counts(summary: &str) -> (u64, u64, u64) {
    let number_before = |text: &str, what: &str| -> Option<u64> {
        let i = text.find(what)?;
        text[..i]
            .rsplit(' ')
            .next()?
            .trim_start_matches('(')
            .parse()
            .ok()
    };
    let dissected = number_before(summary, " frames dissected").expect("frames dissected");
    let health = summary
        .lines()
        .find(|l| l.starts_with("health: "))
        .expect("a health line");
    let read = number_before(health, " frames read").expect("frames read");
    let in_flight = number_before(health, " read, not dissected yet").unwrap_or(0);
    (dissected, read, in_flight)
}

#[test]
fn every_frame_count_says_what_it_counts_and_they_add_up() {
    // Before: "359 frames" in the first line and "777 frames" in the health line below.
    let out = stdout(&["-r", &pcap("b_large_frag/a.pcap"), "--no-tui"]);
    let summaries: Vec<&str> = out.split("=== ").filter(|s| !s.is_empty()).collect();
    assert!(summaries.len() > 1, "{out}");
    for s in &summaries {
        let (dissected, read, in_flight) = frame_counts(s);
        assert_eq!(read, dissected + in_flight, "{s}");
    }
    let (dissected, read, in_flight) = frame_counts(summaries.last().unwrap());
    assert_eq!((dissected, read, in_flight), (2779, 2779, 0));
}

#[test]
fn negative_latencies_have_one_bin_not_a_bin_per_nanosecond_decade() {
    // 2.5 ms added to B's clock turns most A->B latencies (2.24 ms p50) negative.
    let (a, b) = (
        pcap("a_small_reliable/a.pcap"),
        pcap("a_small_reliable/b.pcap"),
    );
    let text = stdout(&["latency", &a, &b, "--offset-ns", "2500000"]);
    let hist = text
        .split("\n\n")
        .find(|block| block.starts_with("histogram A->B rt/chatter"))
        .expect("the histogram");
    let bins: Vec<&str> = hist.lines().skip(1).collect();
    assert!(
        bins[0].trim_start().starts_with('-') && bins[0].contains(" .. 0 ns "),
        "{hist}"
    );
    for pair in bins.windows(2) {
        let empty =
            |l: &str| l.split_whitespace().nth(5) == Some("0") || l.trim_end().ends_with(" 0");
        assert!(
            !(empty(pair[0]) && empty(pair[1])),
            "two empty bins in a row:\n{hist}"
        );
    }
    assert!(bins.iter().all(|l| !l.contains(" 2 ns ")), "{hist}");
}
