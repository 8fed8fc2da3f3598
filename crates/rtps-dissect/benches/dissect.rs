//! Dissector throughput over the real fixtures, in frames/s and bytes/s.
//! The frames are read into memory first, so only dissection is measured.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rtps_dissect::{Dissector, Frame, FrameOutcome, LinkType};

struct Capture {
    link: LinkType,
    frames: Vec<(u64, Vec<u8>)>,
}

/// Classic pcap only (the fixtures benchmarked are pcap); enough for a bench.
fn read_pcap(path: &Path) -> Option<Capture> {
    let data = std::fs::read(path).ok()?;
    let magic = data.get(..4)?;
    let (le, nanos) = match magic {
        [0xd4, 0xc3, 0xb2, 0xa1] => (true, false),
        [0x4d, 0x3c, 0xb2, 0xa1] => (true, true),
        [0xa1, 0xb2, 0xc3, 0xd4] => (false, false),
        [0xa1, 0xb2, 0x3c, 0x4d] => (false, true),
        _ => return None,
    };
    let u32_at = |off: usize| -> Option<u32> {
        let b: [u8; 4] = data.get(off..off + 4)?.try_into().ok()?;
        Some(if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    };
    let link = LinkType::from_dlt(u32_at(20)?);
    let mut frames = Vec::new();
    let mut off = 24;
    while let (Some(sec), Some(frac), Some(caplen)) =
        (u32_at(off), u32_at(off + 4), u32_at(off + 8))
    {
        let start = off + 16;
        let Some(bytes) = data.get(start..start + caplen as usize) else {
            break;
        };
        let ns = u64::from(sec) * 1_000_000_000 + u64::from(frac) * if nanos { 1 } else { 1000 };
        frames.push((ns, bytes.to_vec()));
        off = start + caplen as usize;
    }
    Some(Capture { link, frames })
}

fn dissect_all(cap: &Capture) -> u64 {
    let mut d = Dissector::default();
    let mut submessages = 0u64;
    for (i, (ts, bytes)) in cap.frames.iter().enumerate() {
        let frame = Frame {
            number: i as u64 + 1,
            ts_ns: *ts,
            link: cap.link,
            data: bytes,
            orig_len: bytes.len() as u32,
        };
        if let FrameOutcome::Rtps(dg) = d.process(&frame) {
            submessages += dg.submessages.len() as u64;
        }
    }
    submessages
}

fn bench(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/pcaps");
    let mut group = c.benchmark_group("dissect");
    for name in [
        "a_small_reliable/a.pcap",
        "b_large_frag/b.pcap",
        "d_rustdds_interop/a.pcap",
        "h_vlan_pcp/a.pcap",
    ] {
        let Some(cap) = read_pcap(&root.join(name)) else {
            panic!("fixture tests/pcaps/{name} is missing or not a pcap file");
        };
        let bytes: u64 = cap.frames.iter().map(|(_, b)| b.len() as u64).sum();
        group.throughput(Throughput::Elements(cap.frames.len() as u64));
        group.bench_function(format!("{name} frames"), |b| b.iter(|| dissect_all(&cap)));
        group.throughput(Throughput::Bytes(bytes));
        group.bench_function(format!("{name} bytes"), |b| b.iter(|| dissect_all(&cap)));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
