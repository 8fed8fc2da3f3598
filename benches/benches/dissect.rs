//! Dissector throughput over the real fixtures, in frames/s and bytes/s.
//! The frames are read into memory first, so only dissection is measured.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ddshark_benches::{captured_bytes, dissect_all, frames, CAPTURES};

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
