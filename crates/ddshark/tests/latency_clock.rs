//! Two hosts, two clocks: `ddshark latency` on real two-host fixtures whose B side is moved
//! by a known clock offset (and drift), made here by rewriting the B capture's timestamps.
//!
//! On every shifted pair: the reported interval holds the true offset, its half-width is no
//! wider than NTP's bound from the pair's minimum true delays (the oracle's, unshifted), each
//! sample keeps its direction (the writer's host does not follow the clocks), and
//! `--offset auto` latencies equal the tshark oracle's within the half-width.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use common::{fixtures, latency_args, ns_of, read_tsv, shifted_copy};
use ddshark::latency::join::{SampleRow, Status};
use ddshark::latency::{
    direction, join_captures, Correction, LatencyArgs, Level, OffsetMode, RunSummary,
};

const MS: i64 = 1_000_000;
const S: i64 = 1_000_000_000;

fn run(a: &LatencyArgs) -> anyhow::Result<(Vec<SampleRow>, RunSummary)> {
    let mut rows = Vec::new();
    let summary = join_captures(a, |r| {
        rows.push(r.clone());
        Ok(())
    })?;
    Ok((rows, summary))
}

/// Clock of the shifted host: true offset θ(t) = `offset` + `ppb`·(t − t0) at A-time t.
#[derive(Debug, Clone, Copy)]
struct Clock {
    offset: i64,
    ppb: i64,
    t0: i64,
}

impl Clock {
    fn theta(&self, t: i64) -> i64 {
        self.offset + ((i128::from(t - self.t0) * i128::from(self.ppb)) / 1_000_000_000) as i64
    }
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ddshark-clock-{}-{name}", std::process::id()))
}

/// NTP's bound from the minimum true delays of the unshifted pair (the oracle's latencies).
fn ntp_bound(oracle: &[HashMap<String, String>]) -> i64 {
    let min = |dir: &str| {
        oracle
            .iter()
            .filter(|o| o["direction"] == dir && !o["latency_us"].is_empty())
            .map(|o| (o["latency_us"].parse::<f64>().unwrap() * 1000.0).round() as i64)
            .min()
            .unwrap_or_else(|| panic!("no {dir} sample in the oracle"))
    };
    (min("A->B") + min("B->A") + 1) / 2
}

struct Outcome {
    offset_ns: i64,
    half_width_ns: i64,
    bound_ns: i64,
    worst_auto_error_ns: i64,
    drift_ppb: i64,
}

/// One shifted pair, checked end to end.
fn check_pair(fixture: &str, offset: i64, ppb: i64) -> Outcome {
    let dir = fixtures().join(fixture);
    let a = dir.join("a.pcap");
    let b = tmp(&format!("{fixture}_{offset}_{ppb}.pcap"));
    // The B host's clock: B-time = A-time + θ(A-time); t0 = the capture's first frame.
    let t0 = shifted_copy(&dir.join("b.pcap"), &b, |t| t);
    let clock = Clock { offset, ppb, t0 };
    shifted_copy(&dir.join("b.pcap"), &b, |t| t + clock.theta(t));
    let name = format!("{fixture} shifted by {offset} ns, {ppb} ppb");

    let oracle = read_tsv(&dir.join("oracle_latency.tsv"));
    let bound = ntp_bound(&oracle);

    // Unshifted rows: every sample's direction.
    let (base, _) = run(&latency_args(&a, &[dir.join("b.pcap")], Level::Sample)).unwrap();
    let dirs: BTreeMap<_, _> = base
        .iter()
        .map(|r| ((r.key, r.receiver), direction(r.sender, r.receiver)))
        .collect();

    // --offset auto: no other flag, whatever the offset (the coarse alignment pairs clocks
    // further apart than --window).
    let mut auto = latency_args(&a, std::slice::from_ref(&b), Level::Sample);
    auto.offset = Some(OffsetMode::Auto);
    let (rows, s) = run(&auto).unwrap_or_else(|e| panic!("{name} auto: {e:#}"));
    let est = s
        .offsets
        .iter()
        .find(|o| (o.x, o.y) == (0, 1))
        .unwrap_or_else(|| panic!("{name}: no pair A-B"))
        .estimate
        .unwrap_or_else(|e| panic!("{name}: no estimate: {e}"));
    // Without --offset, the same evidence (clocks within the window pair raw).
    if offset.abs() < 5 * S {
        let (_, raw) = run(&latency_args(&a, std::slice::from_ref(&b), Level::Sample))
            .unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert_eq!(raw.offsets[0].estimate, Ok(est), "{name}");
        assert_eq!(raw.corrections[1], Correction::None, "{name}");
    }
    // The interval holds the true offset at every sample's send time.
    for r in rows.iter().filter(|r| r.sender == 0) {
        assert!(
            est.holds(r.t_send, clock.theta(r.t_send)),
            "{name}: θ {} at {} outside {est:?}",
            clock.theta(r.t_send),
            r.t_send
        );
    }
    // No wider than NTP's bound from the true minimum delays; with drift, the estimate's
    // drift error over the capture may widen it by as much.
    let span = est.t_last - est.t_ref;
    let drift_slack =
        ((est.drift_ppb - ppb).abs() as i128 * i128::from(span) / 1_000_000_000) as i64;
    assert!(
        est.half_width_ns <= bound + drift_slack,
        "{name}: half-width {} > NTP bound {bound} (+{drift_slack})",
        est.half_width_ns
    );
    // Hosts do not follow the clocks: same directions as unshifted (one clock).
    let got: BTreeMap<_, _> = rows
        .iter()
        .map(|r| ((r.key, r.receiver), direction(r.sender, r.receiver)))
        .collect();
    let moved: Vec<_> = dirs
        .iter()
        .filter(|(k, d)| got.get(k) != Some(d))
        .take(5)
        .collect();
    assert!(moved.is_empty(), "{name}: directions changed: {moved:?}");
    assert!(
        s.hosts_from_clock.is_empty(),
        "{name}: hosts from the clock: {:?}",
        s.hosts_from_clock
    );

    // --offset auto: latencies equal the oracle's within what they claim: the half-width
    // when corrected; kept raw (the bound holds 0), the estimate's distance from 0 plus it.
    let claimed = s.corrections[1]
        .residual_ns()
        .unwrap_or_else(|| panic!("{name}: {:?}", s.corrections[1]));
    match s.corrections[1] {
        Correction::KeptRaw(e) => assert!(e.holds(e.t_ref, 0), "{name}"),
        Correction::Estimated(e) => {
            assert!(!e.holds(e.t_ref, 0) || !e.holds(e.t_last, 0), "{name}");
            assert_eq!(claimed, e.half_width_ns, "{name}");
        }
        c => panic!("{name}: {c:?}"),
    }
    let corrected = &rows;
    let by_key: HashMap<(String, i64), &SampleRow> = corrected
        .iter()
        .map(|r| ((r.key.writer.to_string(), r.key.sn), r))
        .collect();
    let mut worst = 0i64;
    let mut checked = 0;
    for o in &oracle {
        let Some(t_recv) = ns_of(&o["t_recv_complete"]) else {
            continue;
        };
        let t_send = ns_of(&o["t_send_first"]).unwrap() as i64;
        let truth = t_recv as i64 - t_send;
        let key = (o["writer_guid"].clone(), o["seq"].parse::<i64>().unwrap());
        let r = by_key
            .get(&key)
            .unwrap_or_else(|| panic!("{name}: {key:?} missing with --offset auto"));
        assert_eq!(
            direction(r.sender, r.receiver),
            o["direction"],
            "{name} {key:?}"
        );
        assert_eq!(r.status, Status::Ok, "{name} {key:?}");
        let err = (r.latency_ns.unwrap() - truth).abs();
        worst = worst.max(err);
        checked += 1;
    }
    assert!(checked > 30, "{name}: only {checked} oracle samples");
    assert!(
        worst <= claimed,
        "{name}: --offset auto latency off by {worst} ns > its claimed bound {claimed} ({:?})",
        s.corrections[1]
    );
    // Every corrected latency carries that bound; raw ones none.
    let corrected_by_estimate = matches!(s.corrections[1], Correction::Estimated(_));
    for r in rows.iter().filter(|r| r.latency_ns.is_some()) {
        assert_eq!(
            r.latency_uncertainty_ns,
            corrected_by_estimate.then_some(claimed),
            "{name}"
        );
    }
    let _ = std::fs::remove_file(&b);
    Outcome {
        offset_ns: est.offset_at(t0) - clock.theta(t0),
        half_width_ns: est.half_width_ns,
        bound_ns: bound,
        worst_auto_error_ns: worst,
        drift_ppb: est.drift_ppb,
    }
}

/// From one clock to clocks an hour apart (37 s: TAI against UTC), all found without a flag.
const OFFSETS: &[i64] = &[
    -3600 * S,
    -S,
    -12_345_678,
    -900_000,
    0,
    12_345_678,
    S,
    37 * S,
    3600 * S,
];

fn check_fixture(fixture: &str) {
    for &offset in OFFSETS {
        let o = check_pair(fixture, offset, 0);
        eprintln!(
            "{fixture} θ {offset:>+14} ns: estimate − truth {:>+9} ns, half-width {:>8} ns, NTP bound {:>8} ns, worst --offset auto error {:>7} ns",
            o.offset_ns, o.half_width_ns, o.bound_ns, o.worst_auto_error_ns
        );
    }
}

#[test]
fn cyclone_pair_under_clock_offsets() {
    check_fixture("a_small_reliable");
}

#[test]
fn fastdds_pair_under_clock_offsets() {
    check_fixture("k_fastdds");
}

#[test]
fn rustdds_pair_under_clock_offsets() {
    check_fixture("d_rustdds_interop");
}

/// Each host has two addresses (a participant on VLAN 10 and one on VLAN 20, one NIC) whose
/// samples never mix with the other host's in a way that splits them: the Ethernet source
/// both captures saw ties each host's two participants, so no host comes from the clocks.
#[test]
fn vlan_pair_with_two_addresses_per_host_under_clock_offsets() {
    check_fixture("h_vlan_pcp");
    let dir = fixtures().join("h_vlan_pcp");
    let args = latency_args(&dir.join("a.pcap"), &[dir.join("b.pcap")], Level::Sample);
    let (_, s) = run(&args).unwrap();
    let warnings = ddshark::latency::clock_warnings(&args, &s);
    assert!(
        !warnings.iter().any(|w| w.contains("taken from the clocks")),
        "{warnings:?}"
    );
}

#[test]
fn fastdds_pair_with_50_ppm_drift() {
    for offset in [-250 * MS, 12_345_678] {
        let o = check_pair("k_fastdds", offset, 50_000);
        eprintln!(
            "k_fastdds θ {offset:+} ns + 50 ppm: drift estimated {} ppb, estimate − truth at start {:+} ns, half-width {} ns, NTP bound {} ns, worst --offset auto error {} ns",
            o.drift_ppb, o.offset_ns, o.half_width_ns, o.bound_ns, o.worst_auto_error_ns
        );
        assert!(
            (o.drift_ppb - 50_000).abs() < 5_000,
            "drift {} ppb",
            o.drift_ppb
        );
    }
}

fn error_of(a: &LatencyArgs) -> String {
    match run(a) {
        Ok(_) => panic!("expected an error for {:?} {:?}", a.sender, a.receivers),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn the_same_capture_twice_is_refused() {
    let a = fixtures().join("k_fastdds/a.pcap");
    let msg = error_of(&latency_args(&a, std::slice::from_ref(&a), Level::Sample));
    assert!(
        msg.contains("same capture") && msg.contains("k_fastdds/a.pcap"),
        "{msg}"
    );
    // A byte-identical copy is the same capture too.
    let copy = tmp("copy.pcap");
    std::fs::copy(&a, &copy).unwrap();
    let msg = error_of(&latency_args(
        &a,
        std::slice::from_ref(&copy),
        Level::Sample,
    ));
    assert!(
        msg.contains("same capture") && msg.contains("copy.pcap"),
        "{msg}"
    );
    let _ = std::fs::remove_file(&copy);
}

#[test]
fn captures_that_share_no_sample_are_refused() {
    let a = fixtures().join("k_fastdds/a.pcap");
    let other = fixtures().join("a_small_reliable/b.pcap");
    // Days apart: no overlap in time.
    let msg = error_of(&latency_args(
        &a,
        std::slice::from_ref(&other),
        Level::Sample,
    ));
    assert!(
        msg.contains("do not overlap in time") && msg.contains("a_small_reliable/b.pcap"),
        "{msg}"
    );
    // Moved into A's time range: overlapping, still no sample in common.
    let a_start = shifted_copy(&a, &tmp("probe.pcap"), |t| t);
    let moved = tmp("moved.pcap");
    let o_start = shifted_copy(&other, &moved, |t| t);
    shifted_copy(&other, &moved, |t| t - o_start + a_start + S);
    let msg = error_of(&latency_args(
        &a,
        std::slice::from_ref(&moved),
        Level::Sample,
    ));
    assert!(
        msg.contains("share no DDS sample") && msg.contains("moved.pcap"),
        "{msg}"
    );
    let _ = std::fs::remove_file(&moved);
    let _ = std::fs::remove_file(tmp("probe.pcap"));
}

/// Clocks 10 min apart and captures of 10 s: no sample is paired on the raw clocks (the
/// error says to give the offset), and `--offset-ns` pairs them all: the latencies of the
/// unshifted pair, the estimate of the unshifted pair plus 10 min.
#[test]
fn clocks_further_apart_than_the_captures_are_paired_with_offset_ns() {
    let dir = fixtures().join("k_fastdds");
    let a = dir.join("a.pcap");
    let far = tmp("far.pcap");
    shifted_copy(&dir.join("b.pcap"), &far, |t| t + 600 * S);
    let msg = error_of(&latency_args(&a, std::slice::from_ref(&far), Level::Sample));
    assert!(
        msg.contains("--offset-ns") && msg.contains("far.pcap"),
        "{msg}"
    );

    let (near_rows, near) = run(&latency_args(&a, &[dir.join("b.pcap")], Level::Sample)).unwrap();
    let mut hinted = latency_args(&a, std::slice::from_ref(&far), Level::Sample);
    hinted.offset_ns = 600 * S;
    let (far_rows, far_run) = run(&hinted).unwrap();
    let outcomes = |rows: &[SampleRow]| -> Vec<_> {
        rows.iter()
            .map(|r| (r.key, r.status, r.latency_ns))
            .collect()
    };
    assert!(near_rows.len() > 100);
    assert_eq!(outcomes(&far_rows), outcomes(&near_rows));
    let estimate = |run: &RunSummary| run.offsets[0].estimate.unwrap();
    assert_eq!(
        estimate(&far_run).offset_ns,
        estimate(&near).offset_ns + 600 * S
    );
    assert_eq!(
        estimate(&far_run).half_width_ns,
        estimate(&near).half_width_ns
    );
    let _ = std::fs::remove_file(&far);
}

/// `src` rewritten as pcapng whose section header records `host` (as `ddshark -w` does).
fn pcapng_of_host(src: &std::path::Path, dst: &std::path::Path, host: &str) {
    use ddshark::capture::PacketSource;
    use ddshark::recording::pcapng;
    let mut input = ddshark::capture::file::FileSource::open(src).unwrap();
    let mut out = Vec::new();
    pcapng::section_header(
        &mut out,
        &pcapng::Section {
            comment: format!("host.name={host}"),
            ..Default::default()
        },
    )
    .unwrap();
    let mut described = false;
    while let Some(f) = input.next_frame().unwrap() {
        if !described {
            pcapng::interface_description(
                &mut out,
                &pcapng::Interface {
                    link_type: u16::try_from(f.link.to_dlt()).unwrap(),
                    snaplen: 262_144,
                    ..Default::default()
                },
            )
            .unwrap();
            described = true;
        }
        pcapng::enhanced_packet(&mut out, 0, f.ts_ns, f.data, f.orig_len).unwrap();
    }
    std::fs::write(dst, out).unwrap();
}

/// Captures written by `ddshark -w` name their host: the output says robot1/robot2, not A/B.
#[test]
fn hosts_are_named_as_the_pcapng_section_headers_record() {
    let dir = fixtures().join("a_small_reliable");
    let (a, b) = (tmp("robot1.pcapng"), tmp("robot2.pcapng"));
    pcapng_of_host(&dir.join("a.pcap"), &a, "robot1");
    pcapng_of_host(&dir.join("b.pcap"), &b, "robot2");
    let (rows, s) = run(&latency_args(&a, std::slice::from_ref(&b), Level::Sample)).unwrap();
    assert_eq!(s.labels, ["robot1", "robot2"]);
    let dirs: std::collections::BTreeSet<String> = rows
        .iter()
        .map(|r| s.direction(r.sender, r.receiver))
        .collect();
    assert_eq!(
        dirs.into_iter().collect::<Vec<_>>(),
        ["robot1->robot2", "robot2->robot1"]
    );
    let mut text = String::new();
    ddshark::output::latency::offsets_text(&s, &mut text);
    assert!(text.starts_with("clock offset robot2-robot1: "), "{text}");
    // A pcap (no section header) keeps the letters.
    let (_, plain) = run(&latency_args(&a, &[dir.join("b.pcap")], Level::Sample)).unwrap();
    assert_eq!(plain.labels, ["A", "B"]);
    let _ = (std::fs::remove_file(&a), std::fs::remove_file(&b));
}

fn ddshark(args: &[&std::ffi::OsStr]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ddshark"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout_of(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// Pairs captured on one clock: each estimate's bound holds 0, so `--offset auto` keeps the
/// raw latencies and says why. Before, a_small_reliable's estimate (970 µs ± 1.045 ms) moved
/// every latency by 970 µs (rt/chatter A->B p50 2.241 ms -> 1.271 ms, B->A 85 µs -> 1.055 ms).
#[test]
fn offset_auto_on_one_clock_equals_the_raw_output() {
    for fixture in [
        "a_small_reliable",
        "k_fastdds",
        "d_rustdds_interop",
        "h_vlan_pcp",
    ] {
        let dir = fixtures().join(fixture);
        let raw_args = latency_args(&dir.join("a.pcap"), &[dir.join("b.pcap")], Level::Sample);
        let mut auto_args = raw_args.clone();
        auto_args.offset = Some(OffsetMode::Auto);
        let outcome = |rows: &[SampleRow]| -> Vec<_> {
            rows.iter()
                .map(|r| {
                    let u = r.latency_uncertainty_ns;
                    (r.key, r.sender, r.receiver, r.status, r.latency_ns, u)
                })
                .collect()
        };
        let (raw, _) = run(&raw_args).unwrap();
        let (auto, s) = run(&auto_args).unwrap();
        assert_eq!(outcome(&auto), outcome(&raw), "{fixture}");
        assert!(
            matches!(s.corrections[1], Correction::KeptRaw(_)),
            "{fixture}: {:?}",
            s.corrections[1]
        );
        // The HTML report says why, and has no ± column.
        let html = ddshark::output::latency_html::report(&s);
        assert!(html.contains("not corrected (--offset auto)"), "{fixture}");
        assert!(!html.contains("± (clock offset)"), "{fixture}");
    }

    // The binary: every line but the clock offset's is the raw output's, which says why.
    let dir = fixtures().join("a_small_reliable");
    let (a, b) = (dir.join("a.pcap"), dir.join("b.pcap"));
    for format in ["jsonl", "text"] {
        let base: Vec<&std::ffi::OsStr> = vec![
            "latency".as_ref(),
            a.as_os_str(),
            b.as_os_str(),
            "-q".as_ref(),
            "--format".as_ref(),
            format.as_ref(),
        ];
        let raw = stdout_of(&ddshark(&base));
        let mut with_auto = base.clone();
        with_auto.extend([
            std::ffi::OsStr::new("--offset"),
            std::ffi::OsStr::new("auto"),
        ]);
        let auto = stdout_of(&ddshark(&with_auto));
        let differ = |a: &str, b: &str| -> Vec<String> {
            let raw_lines: std::collections::HashSet<&str> = b.lines().collect();
            a.lines()
                .filter(|l| !raw_lines.contains(l))
                .map(str::to_owned)
                .collect()
        };
        let extra = differ(&auto, &raw);
        assert_eq!(differ(&raw, &auto).len(), 1, "{format}: {extra:?}");
        match format {
            "jsonl" => {
                assert_eq!(extra.len(), 1, "{extra:?}");
                let v: serde_json::Value = serde_json::from_str(&extra[0]).unwrap();
                assert_eq!(v["kind"], "clock_offset");
                assert_eq!(v["offset_ns"], 970_000);
                assert_eq!(v["applied"], false);
                assert_eq!(v["applied_offset_ns"], serde_json::Value::Null);
                let why = v["not_applied"].as_str().unwrap();
                assert!(why.contains("holds 0"), "{why}");
            }
            _ => {
                // The header line and the offset line of the summary.
                assert_eq!(extra.len(), 2, "{extra:?}");
                assert!(
                    extra[0].starts_with("clock B-A: not corrected (--offset auto): the estimate 970.0 µs ± 1.045 ms holds 0"),
                    "{extra:?}"
                );
                assert!(auto.starts_with(&extra[0]), "the header comes first");
                assert!(extra[1].contains("not corrected (--offset auto)"));
            }
        }
    }
}

/// A 37 s offset (a PTP hardware clock on TAI against a system clock on UTC) and an hour:
/// found, corrected and printed with `--offset auto` alone (before: exit 1, "do not overlap
/// in time"); without `--offset`, an error naming `--offset auto`.
#[test]
fn a_37_s_offset_is_found_printed_and_named_without_other_flags() {
    let dir = fixtures().join("k_fastdds");
    let a = dir.join("a.pcap");
    for shift in [37 * S, -3600 * S] {
        let b = tmp(&format!("tai{shift}.pcap"));
        shifted_copy(&dir.join("b.pcap"), &b, |t| t + shift);
        let text = stdout_of(&ddshark(&[
            "latency".as_ref(),
            a.as_os_str(),
            b.as_os_str(),
            "-q".as_ref(),
            "--offset".as_ref(),
            "auto".as_ref(),
        ]));
        let first = text.lines().next().unwrap();
        assert!(
            first.starts_with("clock B-A: corrected by the estimate ")
                && first.ends_with("every latency between A and B is ± 593.5 µs"),
            "{first}"
        );
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("A->B  ")).collect();
        assert!(rows.len() > 100);
        let bare = rows.iter().find(|l| !l.contains("±593.5 µs"));
        assert_eq!(bare, None, "every corrected latency carries its ±");
        let jsonl = stdout_of(&ddshark(&[
            "latency".as_ref(),
            a.as_os_str(),
            b.as_os_str(),
            "-q".as_ref(),
            "--offset".as_ref(),
            "auto".as_ref(),
            "--format".as_ref(),
            "jsonl".as_ref(),
        ]));
        let offset: serde_json::Value = jsonl
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|v| v["kind"] == "clock_offset")
            .unwrap();
        let applied = offset["applied_offset_ns"].as_i64().unwrap();
        // The Fast DDS pair's NTP bound from its true delays: 593.5 µs.
        assert!((applied - shift).abs() <= 593_500, "{offset}");
        assert_eq!(offset["applied_by"], "auto");

        // The HTML report: the correction and a ± column.
        let mut args = latency_args(&a, std::slice::from_ref(&b), Level::Sample);
        args.offset = Some(OffsetMode::Auto);
        let html = ddshark::output::latency_html::report(&run(&args).unwrap().1);
        assert!(html.contains("corrected (--offset auto): latencies ± 593.5 µs"));
        assert!(html.contains("<th>± (clock offset)</th>") && html.contains("<td>±593.5 µs</td>"));

        let out = ddshark(&["latency".as_ref(), a.as_os_str(), b.as_os_str()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("give --offset auto"), "{err}");
        let _ = std::fs::remove_file(&b);
    }
}
