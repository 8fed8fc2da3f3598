//! The live join (`span_join`) and `ddshark latency` share latency_core: fed the per-host
//! SAMPLE spans of a two-host fixture whose B side is moved by a known clock offset, the
//! live join reports the same `dds_clock_offset` (estimate and bound) as `ddshark latency`
//! does on the two captures, and names the same sender for every sample.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use common::{
    add_sample_span, fixtures, host_sample_spans, host_samples, latency_args, live_join,
    live_join_arriving, live_join_with, replay_into, shifted_copy,
};
use ddshark::latency::{join_captures, label, Level};

const S: i64 = 1_000_000_000;

/// `field=123i` of a line-protocol line.
fn int_field(line: &str, key: &str) -> Option<i64> {
    let fields = line.split(' ').nth(1)?;
    fields.split(',').find_map(|f| {
        let v = f.strip_prefix(key)?.strip_prefix('=')?;
        v.strip_suffix('i')?.parse().ok()
    })
}

fn tag(line: &str, key: &str) -> Option<String> {
    let tags = line.split(' ').next()?;
    tags.split(',')
        .find_map(|t| t.strip_prefix(key)?.strip_prefix('=').map(str::to_string))
}

/// `far`: a further shift of B that only the live join sees (`ddshark latency` pairs the
/// captures' samples only where their times overlap): its offset must be the offline one
/// plus `far`.
fn check(fixture: &str, offset: i64, ppb: i64, far: i64) {
    let dir = fixtures().join(fixture);
    let a = dir.join("a.pcap");
    let b = std::env::temp_dir().join(format!(
        "ddshark-join-clock-{}-{fixture}-{offset}-{ppb}.pcap",
        std::process::id()
    ));
    let t0 = shifted_copy(&dir.join("b.pcap"), &b, |t| t);
    shifted_copy(&dir.join("b.pcap"), &b, |t| {
        t + offset + ((i128::from(t - t0) * i128::from(ppb)) / 1_000_000_000) as i64
    });
    let name = format!("{fixture} shifted by {offset} ns + {far} ns, {ppb} ppb");

    // Offline.
    let mut offline_sender: HashMap<String, String> = HashMap::new();
    let run = join_captures(
        &latency_args(&a, std::slice::from_ref(&b), Level::Sample),
        |r| {
            offline_sender.insert(r.key.writer.to_string(), format!("host{}", label(r.sender)));
            Ok(())
        },
    )
    .unwrap();
    let est = run.offsets[0].estimate.unwrap();

    // Live: each host's SAMPLE spans in capture-time order, a push every 2 s of it.
    if far != 0 {
        shifted_copy(&dir.join("b.pcap"), &b, |t| {
            t + far + offset + ((i128::from(t - t0) * i128::from(ppb)) / 1_000_000_000) as i64
        });
    }
    // (B's spans arrive as they are made: at its capture time less the far shift)
    let text = live_join_arriving(&[("hostA", &a), ("hostB", &b)], |host, t| {
        if host == 1 {
            t - far
        } else {
            t
        }
    });
    let _ = std::fs::remove_file(&b);
    let last = text
        .lines()
        .rev()
        .find(|l| l.starts_with("dds_clock_offset,"))
        .unwrap_or_else(|| panic!("{name}: no dds_clock_offset point"));
    let mut live = int_field(last, "offset_ns").unwrap();
    if tag(last, "host_a").as_deref() == Some("hostB") {
        live = -live;
    }
    let half = int_field(last, "half_width_ns").unwrap();
    let t_live = last.rsplit(' ').next().unwrap().parse::<i64>().unwrap();
    let offline = est.offset_at(t_live.saturating_sub(far)) + far;
    eprintln!(
        "{name}: live {live} ± {half} ns (samples {}+{}), ddshark latency {offline} ± {} ns",
        int_field(last, "samples_a_to_b").unwrap(),
        int_field(last, "samples_b_to_a").unwrap(),
        est.half_width_ns
    );
    assert!(
        (live - offline).abs() <= 1 && (half - est.half_width_ns).abs() <= 1,
        "{name}: live {live} ± {half} vs offline {offline} ± {}",
        est.half_width_ns
    );
    // The same sender for every sample's writer.
    let mut checked = 0;
    for l in text.lines().filter(|l| l.starts_with("dds_latency,")) {
        let writer = tag(l, "writer_id").unwrap();
        if let Some(s) = offline_sender.get(&writer) {
            assert_eq!(tag(l, "sender").as_ref(), Some(s), "{name}: {l}");
            checked += 1;
        }
    }
    assert!(checked > 30, "{name}: only {checked} latency points");
}

#[test]
fn live_join_reports_the_offline_clock_offset() {
    for (fixture, offset) in [
        ("k_fastdds", 12_345_678),
        ("k_fastdds", -S),
        ("a_small_reliable", S),
        ("d_rustdds_interop", -900_000),
    ] {
        check(fixture, offset, 0, 0);
    }
    check("k_fastdds", 12_345_678, 50_000, 0);
    // clocks further apart than the evidence the live join keeps (5 min)
    check("k_fastdds", 12_345_678, 0, 600 * S);
    check("a_small_reliable", S, 0, -3_600 * S);
}

/// Per writer, the senders the live join's `dds_latency` points of `text` name.
fn live_senders(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut senders: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for l in text.lines().filter(|l| l.starts_with("dds_latency,")) {
        senders
            .entry(tag(l, "writer_id").unwrap())
            .or_default()
            .insert(tag(l, "sender").unwrap());
    }
    senders
}

/// `h_vlan_pcp`: each host runs a participant on VLAN 10 and one on VLAN 20 (one NIC, an
/// address on each VLAN). What ties a host's two participants is on the wire only: their
/// Ethernet source (and each one's announced addresses); by the order of events alone, the
/// two B participants (14 µs apart in delay) leave the split undecided and a writer's host
/// falls back on the capture that saw its samples first, which with B's clock 12.3 ms
/// ahead is A for B's own writers. `ddshark latency` ties them and so, now that the SAMPLE
/// spans carry `src_ip`, `src_mac` and `announced_ips`, does the live join: the same
/// sender for every writer, and the same clock offset. (Without those attributes, as
/// before, the join names A for B's writers.)
#[test]
fn the_live_join_ties_a_hosts_participants_by_their_addresses_as_ddshark_latency_does() {
    let dir = fixtures().join("h_vlan_pcp");
    let a = dir.join("a.pcap");
    let b = std::env::temp_dir().join(format!(
        "ddshark-join-clock-{}-vlan.pcap",
        std::process::id()
    ));
    shifted_copy(&dir.join("b.pcap"), &b, |t| t + 12_345_678);
    let mut offline: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let run = join_captures(
        &latency_args(&a, std::slice::from_ref(&b), Level::Sample),
        |r| {
            offline
                .entry(r.key.writer.to_string())
                .or_default()
                .insert(format!("host{}", label(r.sender)));
            Ok(())
        },
    )
    .unwrap();
    assert!(
        run.hosts_from_clock.is_empty(),
        "ddshark latency took hosts from the clocks: {:?}",
        run.hosts_from_clock
    );
    let est = run.offsets[0].estimate.unwrap();
    let hosts = [("hostA", a.as_path()), ("hostB", b.as_path())];
    let live = live_join_with(&hosts, |_, t| t, true);
    let before = live_join_with(&hosts, |_, t| t, false);
    let _ = std::fs::remove_file(&b);

    let senders = live_senders(&live);
    let on_b = offline.values().filter(|s| s.contains("hostB")).count();
    eprintln!(
        "{} writers, {on_b} of them sending from B (ddshark latency)",
        offline.len()
    );
    assert!(
        on_b > 0 && senders.len() == offline.len(),
        "{senders:?}\n{offline:?}"
    );
    assert_eq!(senders, offline, "the live join's senders per writer");
    let wrong = live_senders(&before)
        .iter()
        .filter(|(w, s)| offline.get(*w) != Some(*s))
        .count();
    eprintln!("without the addresses: {wrong} writers under another sender");
    assert!(wrong > 0, "the order of events alone decided this pair too");

    let last = live
        .lines()
        .rev()
        .find(|l| l.starts_with("dds_clock_offset,"))
        .expect("a dds_clock_offset point");
    let mut offset = int_field(last, "offset_ns").unwrap();
    if tag(last, "host_a").as_deref() == Some("hostB") {
        offset = -offset;
    }
    let t = last.rsplit(' ').next().unwrap().parse::<i64>().unwrap();
    assert!(
        (offset - est.offset_at(t)).abs() <= 1
            && (int_field(last, "half_width_ns").unwrap() - est.half_width_ns).abs() <= 1,
        "live {last} vs ddshark latency {} ± {}",
        est.offset_at(t),
        est.half_width_ns
    );
}

/// Per direction ("sender->receiver"), the dds_latency points; and the last dds_clock_offset
/// point of the drift-a/drift-b pair (tags and fields, without its time) of `text`.
fn directions_and_offset(text: &str) -> (BTreeMap<String, usize>, Option<String>) {
    let mut directions = BTreeMap::new();
    for l in text.lines().filter(|l| l.starts_with("dds_latency,")) {
        let key = format!(
            "{}->{}",
            tag(l, "sender").unwrap(),
            tag(l, "receiver").unwrap()
        );
        *directions.entry(key).or_default() += 1;
    }
    let offset = text
        .lines()
        .rev()
        .find(|l| l.starts_with("dds_clock_offset,host_a=drift-"))
        .map(|l| l.rsplit_once(' ').unwrap().0.to_string());
    (directions, offset)
}

/// The same captures exported again under new host names (B's clock now 12.3 ms ahead and
/// 50 ppm fast), into the join that joined them under other names before: the new pair gets
/// what a fresh join gives it, latencies both ways and its own clock offset.
#[test]
fn a_replay_under_new_host_names_gets_its_own_clock_offset() {
    let dir = fixtures().join("k_fastdds");
    let (a, b) = (dir.join("a.pcap"), dir.join("b.pcap"));
    let drifted = std::env::temp_dir().join(format!(
        "ddshark-join-clock-{}-renamed.pcap",
        std::process::id()
    ));
    let t0 = shifted_copy(&b, &drifted, |t| t);
    shifted_copy(&b, &drifted, |t| t + 12_345_678 + (t - t0) / 20_000);
    let fresh = live_join(&[("drift-a", &a), ("drift-b", &drifted)]);

    let mut join = span_join::SpanJoin::new(span_join::JoinSettings::default());
    let mut out = span_join::LineWriter::default();
    replay_into(
        &mut join,
        &mut out,
        &[("old-a", &a), ("old-b", &b)],
        |_, t| t,
    );
    for _ in 0..5 {
        join.push(&mut out);
    }
    let before = out.buf.len();
    replay_into(
        &mut join,
        &mut out,
        &[("drift-a", &a), ("drift-b", &drifted)],
        |_, t| t,
    );
    join.flush(&mut out);
    let _ = std::fs::remove_file(&drifted);
    let again = out.buf.get(before..).unwrap();

    let (want, want_offset) = directions_and_offset(&fresh);
    assert!(
        want.len() == 2 && want_offset.is_some(),
        "a fresh join: {want:?} {want_offset:?}"
    );
    let (got, got_offset) = directions_and_offset(again);
    eprintln!("fresh {want:?} {want_offset:?}\nrenamed {got:?} {got_offset:?}");
    assert_eq!(got, want, "latency points per direction");
    assert_eq!(got_offset, want_offset, "the new pair's clock offset");
}

/// The live join of `hosts` as [`live_join`] runs it, carried across a restart (its state
/// through JSON, as `--state` writes it) before span `restart_at` (None: none).
fn live_join_restarted(hosts: &[(&str, &std::path::Path)], restart_at: Option<usize>) -> String {
    const PUSH_NS: i64 = 2_000_000_000;
    let settings = span_join::JoinSettings::default();
    let mut spans = Vec::new();
    for (host, path) in hosts {
        spans.extend(host_sample_spans(path).into_iter().map(|s| (*host, s)));
    }
    spans.sort_by_key(|(_, s)| s.0.t_first);
    let mut join = span_join::SpanJoin::new(settings);
    let mut out = span_join::LineWriter::default();
    let mut next_push = spans.first().map_or(0, |(_, s)| s.0.t_first) + PUSH_NS;
    for (at, (host, s)) in spans.iter().enumerate() {
        while s.0.t_first >= next_push {
            join.push(&mut out);
            next_push += PUSH_NS;
        }
        if restart_at == Some(at) {
            let text = serde_json::to_string(&join.into_state()).unwrap();
            join = span_join::SpanJoin::from_state(settings, serde_json::from_str(&text).unwrap())
                .unwrap();
        }
        add_sample_span(&mut join, host, s);
    }
    join.flush(&mut out);
    out.buf
}

/// A restart keeps the clock evidence: the join goes on with the same writers' hosts and
/// the same offset (B 12.3 ms ahead and drifting), not without one until it gathers again.
#[test]
fn a_restart_keeps_the_clock_offset_evidence() {
    let dir = fixtures().join("k_fastdds");
    let a = dir.join("a.pcap");
    let b = std::env::temp_dir().join(format!(
        "ddshark-join-clock-{}-restart.pcap",
        std::process::id()
    ));
    let t0 = shifted_copy(&dir.join("b.pcap"), &b, |t| t);
    shifted_copy(&dir.join("b.pcap"), &b, |t| {
        t + 12_345_678 + (t - t0) / 20_000
    });
    let hosts = [("hostA", a.as_path()), ("hostB", b.as_path())];
    let unbroken = live_join_restarted(&hosts, None);
    let spans = host_samples(&a).len() + host_samples(&b).len();
    let offsets = |text: &str| {
        text.lines()
            .filter(|l| l.starts_with("dds_clock_offset,"))
            .count()
    };
    assert!(offsets(&unbroken) > 3, "{unbroken}");
    for at in (1..10).map(|k| spans * k / 10) {
        let restarted = live_join_restarted(&hosts, Some(at));
        assert_eq!(
            offsets(&restarted),
            offsets(&unbroken),
            "dds_clock_offset points, restarted before span {at} of {spans}"
        );
        assert!(
            restarted == unbroken,
            "restarted before span {at}: other points"
        );
    }
    let _ = std::fs::remove_file(&b);
}
