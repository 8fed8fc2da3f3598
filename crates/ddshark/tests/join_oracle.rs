//! The live latency join (`span-join`, what `ddshark-join` runs) against the tshark oracle:
//! each two-host fixture's per-host halves — the SAMPLE spans ddshark exports for each
//! capture, made in-process — are fed to the streaming join in capture-time order with a
//! push every 2 s of capture time, and its `dds_latency` and `dds_lost` points must be
//! `oracle_latency.tsv` sample by sample: direction, send time, receive time, and the
//! incomplete samples as lost. (Through the real collector, the join's binary and InfluxDB: tests/flux/run.sh.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, HashSet};

use common::{live_join, live_join_arriving, ns_of, pair_fixtures, read_tsv};
use span_join::Line;

/// What the join said of one sample towards one receiver.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Delivered { t_send: i64, t_recv: i64 },
    Lost { t_send: i64, incomplete: bool },
}

/// (writer, sn, "A->B") → outcomes, from the join's points.
type Outcomes = BTreeMap<(String, i64, String), Vec<Outcome>>;

fn outcomes(text: &str) -> Outcomes {
    let mut got = Outcomes::new();
    for text in text.lines() {
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
    matches_the_oracle(|dir| {
        let (a, b) = (dir.join("a.pcap"), dir.join("b.pcap"));
        live_join(&[("A", &a), ("B", &b)])
    });
}

/// B's spans stop arriving 3 s into the capture and come 45 s later (B's export held up,
/// as by a collector outage, while A's flows): the join waits in capture time, so the
/// outcomes are the oracle's still, and nothing is called lost that B received.
#[test]
fn live_join_matches_the_oracle_when_one_hosts_spans_arrive_45_s_late() {
    const S: i64 = 1_000_000_000;
    matches_the_oracle(|dir| {
        let (a, b) = (dir.join("a.pcap"), dir.join("b.pcap"));
        let t0 = common::host_samples(&a)
            .iter()
            .map(|s| s.t_first)
            .min()
            .unwrap();
        live_join_arriving(&[("A", &a), ("B", &b)], |host, t| {
            if host == 1 && t >= t0 + 3 * S {
                t + 45 * S
            } else {
                t
            }
        })
    });
}

/// The outcomes of `join(fixture dir)` (its points) against each two-host fixture's oracle.
fn matches_the_oracle(join: impl Fn(&std::path::Path) -> String) {
    let mut report = Vec::new();
    for dir in pair_fixtures() {
        report.push(agrees_with_the_oracle(&dir, &outcomes(&join(&dir))));
    }
    eprintln!("{}", report.join("\n"));
}

/// Two robots at once, as a fleet's join sees them: the Fast DDS pair (hosts A, B) and the
/// RustDDS pair (C, D: another vendor and topics, a capture 2 days older and 8 s shorter)
/// replayed together, arriving at the same time. Each pair's points are exactly its own
/// oracle's, and nothing waited for the backstop (`forced` 0): a sample waits only for the
/// hosts that exchanged traffic with its sender, not for the other robot's.
#[test]
fn two_robots_at_once_each_match_their_own_oracle() {
    let fixtures = common::fixtures();
    let (ab, cd) = (
        fixtures.join("k_fastdds"),
        fixtures.join("d_rustdds_interop"),
    );
    let t0 = |dir: &std::path::Path| {
        common::host_samples(&dir.join("a.pcap"))
            .iter()
            .map(|s| s.t_first)
            .min()
            .unwrap()
    };
    let shift = t0(&ab) - t0(&cd);
    let (a, b, c, d) = (
        ab.join("a.pcap"),
        ab.join("b.pcap"),
        cd.join("a.pcap"),
        cd.join("b.pcap"),
    );
    let out = live_join_arriving(&[("A", &a), ("B", &b), ("C", &c), ("D", &d)], |host, t| {
        if host >= 2 {
            t + shift
        } else {
            t
        }
    });
    let last = out
        .lines()
        .rfind(|l| l.starts_with("ddshark_join "))
        .unwrap();
    assert!(last.contains(",forced=0i,"), "{last}");
    let got = outcomes(&out);
    let across: Vec<_> = got
        .keys()
        .filter(|(_, _, d)| !["A->B", "B->A", "C->D", "D->C"].contains(&d.as_str()))
        .collect();
    assert!(across.is_empty(), "points between the robots: {across:?}");
    // a pair's points, its hosts named A and B as in its oracle
    let of_pair = |[x, y]: [&str; 2]| -> Outcomes {
        let (forth, back) = (format!("{x}->{y}"), format!("{y}->{x}"));
        got.iter()
            .filter_map(|((writer, sn, direction), o)| {
                let renamed = if *direction == forth {
                    "A->B"
                } else if *direction == back {
                    "B->A"
                } else {
                    return None;
                };
                Some(((writer.clone(), *sn, renamed.to_string()), o.clone()))
            })
            .collect()
    };
    let report = [
        agrees_with_the_oracle(&ab, &of_pair(["A", "B"])),
        agrees_with_the_oracle(&cd, &of_pair(["C", "D"])),
    ];
    eprintln!("{}", report.join("\n"));
}

/// `got` against the oracle of the fixture in `dir` (asserted); its report line.
fn agrees_with_the_oracle(dir: &std::path::Path, got: &Outcomes) -> String {
    let name = dir.file_name().unwrap().to_string_lossy().to_string();
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
    for (key, outcomes) in got {
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
    common::assert_oracle_agrees(&name, &bad, oracle.len());
    format!(
        "{name}: {} samples ({delivered} delivered, {incomplete} incomplete) as the oracle",
        oracle.len()
    )
}
