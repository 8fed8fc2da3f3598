//! The live latency join (`span-join`, what `ddshark-join` runs) against the tshark oracle:
//! each two-host fixture's per-host halves — the SAMPLE spans ddshark exports for each
//! capture, made in-process — are fed to the streaming join in capture-time order with a
//! push every 2 s of capture time, and its `dds_latency` and `dds_lost` points must be
//! `oracle_latency.tsv` sample by sample: direction, send time, receive time, and the
//! incomplete samples as lost. (Through the real Telegraf and InfluxDB: tests/flux/run.py.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use common::{add_sample_span, fixtures, host_samples, ns_of, read_tsv};
use span_join::{JoinSettings, Line, LineWriter, SpanJoin};

const S: i64 = 1_000_000_000;

/// Every fixture directory with a two-host oracle.
fn pair_fixtures() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("oracle_latency.tsv").exists() && p.join("b.pcap").exists())
        .collect();
    v.sort();
    assert!(v.len() >= 4, "expected the two-host fixtures, found {v:?}");
    v
}

/// What the join said of one sample towards one receiver.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Delivered { t_send: i64, t_recv: i64 },
    Lost { t_send: i64, incomplete: bool },
}

/// (writer, sn, "A->B") → outcomes, from the join's points.
type Outcomes = BTreeMap<(String, i64, String), Vec<Outcome>>;

fn live_join(dir: &std::path::Path) -> Outcomes {
    let mut spans = Vec::new();
    for host in ["A", "B"] {
        let pcap = dir.join(format!("{}.pcap", host.to_lowercase()));
        spans.extend(host_samples(&pcap).into_iter().map(|s| (host, s)));
    }
    spans.sort_by_key(|(_, s)| s.t_first);
    let mut join = SpanJoin::new(JoinSettings::default());
    let mut out = LineWriter::default();
    let mut next_push = spans.first().map_or(0, |(_, s)| s.t_first) + 2 * S;
    for (host, s) in &spans {
        while s.t_first >= next_push {
            join.push(&mut out);
            next_push += 2 * S;
        }
        add_sample_span(&mut join, host, s);
    }
    join.flush(&mut out);

    let mut got = Outcomes::new();
    for text in out.buf.lines() {
        let Some(line) = Line::parse(text).unwrap() else {
            continue;
        };
        if line.measurement != "dds_latency" && line.measurement != "dds_lost" {
            continue;
        }
        let tags: BTreeMap<String, String> = line
            .tags()
            .map(|t| {
                let (k, v) = t.unwrap();
                (k.into_owned(), v.into_owned())
            })
            .collect();
        let fields: BTreeMap<String, i64> = line
            .fields()
            .filter_map(|f| {
                let (k, v) = f.unwrap();
                Some((k.into_owned(), v.as_i64()?))
            })
            .collect();
        let t_send = line.timestamp.unwrap();
        let key = (
            tags["writer_id"].clone(),
            fields["sn"],
            format!("{}->{}", tags["sender"], tags["receiver"]),
        );
        let outcome = if line.measurement == "dds_latency" {
            assert_eq!(fields["latency_ns"], fields["t_recv_ns"] - t_send);
            Outcome::Delivered {
                t_send,
                t_recv: fields["t_recv_ns"],
            }
        } else {
            Outcome::Lost {
                t_send,
                incomplete: fields["incomplete"] == 1,
            }
        };
        got.entry(key).or_default().push(outcome);
    }
    got
}

#[test]
fn live_join_matches_the_oracle_on_every_two_host_fixture() {
    let mut report = Vec::new();
    for dir in pair_fixtures() {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let got = live_join(&dir);
        let oracle = read_tsv(&dir.join("oracle_latency.tsv"));
        let mut bad = Vec::new();
        let mut keys = HashSet::new();
        let (mut delivered, mut incomplete) = (0, 0);
        for o in &oracle {
            let key = (
                o["writer_guid"].clone(),
                o["seq"].parse::<i64>().unwrap(),
                o["direction"].clone(),
            );
            let t_send = ns_of(&o["t_send_first"]).unwrap() as i64;
            let want = match ns_of(&o["t_recv_complete"]) {
                Some(t_recv) => {
                    delivered += 1;
                    Outcome::Delivered {
                        t_send,
                        t_recv: t_recv as i64,
                    }
                }
                None => {
                    incomplete += 1;
                    Outcome::Lost {
                        t_send,
                        incomplete: true,
                    }
                }
            };
            match got.get(&key).map(Vec::as_slice) {
                Some([one]) if *one == want => {}
                other => bad.push(format!("{key:?}: oracle {want:?}, join {other:?}")),
            }
            keys.insert(key);
        }
        // Points the oracle has no row for may only be samples that never arrived at all.
        for (key, outcomes) in &got {
            if keys.contains(key) {
                continue;
            }
            if outcomes.iter().any(|o| {
                !matches!(
                    o,
                    Outcome::Lost {
                        incomplete: false,
                        ..
                    }
                )
            }) {
                bad.push(format!("{key:?}: not in the oracle, join {outcomes:?}"));
            }
        }
        assert!(
            bad.is_empty(),
            "{name}: {} of {} oracle samples differ:\n{}",
            bad.len(),
            oracle.len(),
            bad.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
        );
        report.push(format!(
            "{name}: {} samples ({delivered} delivered, {incomplete} incomplete) as the oracle",
            oracle.len()
        ));
    }
    eprintln!("{}", report.join("\n"));
}
