//! The live join (`span_join`) and `ddshark latency` share latency_core: fed the per-host
//! SAMPLE spans of a two-host fixture whose B side is moved by a known clock offset, the
//! live join reports the same `dds_clock_offset` (estimate and bound) as `ddshark latency`
//! does on the two captures, and names the same sender for every sample.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;

use common::{fixtures, latency_args, live_join, shifted_copy};
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

fn check(fixture: &str, offset: i64, ppb: i64) {
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
    let name = format!("{fixture} shifted by {offset} ns, {ppb} ppb");

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
    let text = live_join(&[("hostA", &a), ("hostB", &b)]);
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
    let offline = est.offset_at(t_live);
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
        check(fixture, offset, 0);
    }
    check("k_fastdds", 12_345_678, 50_000);
}
