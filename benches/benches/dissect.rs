//! Dissector throughput over the real fixtures, in frames/s and bytes/s.
//! The frames are read into memory first, so only dissection is measured.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ddshark::capture::memory::OwnedFrame;
use ddshark_benches::{captured_bytes, frames, CAPTURES};
use rtps_dissect::{Dissector, FrameOutcome};

fn dissect_all(frames: &[OwnedFrame]) -> u64 {
    let mut d = Dissector::default();
    let mut submessages = 0u64;
    for (number, f) in (1..).zip(frames) {
        if let FrameOutcome::Rtps(dg) = d.process(&f.as_frame(number)) {
            submessages += dg.submessages.len() as u64;
        }
    }
    submessages
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("dissect");
    for name in CAPTURES {
        let frames = frames(name);
        group.throughput(Throughput::Elements(frames.len() as u64));
        group.bench_function(format!("{name} frames"), |b| {
            b.iter(|| dissect_all(&frames))
        });
        group.throughput(Throughput::Bytes(captured_bytes(&frames)));
        group.bench_function(format!("{name} bytes"), |b| b.iter(|| dissect_all(&frames)));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
