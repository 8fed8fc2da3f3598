//! The state's cost: the same frames through the dissector alone and through the
//! engine (dissector + state, as `ddshark stats` runs it), side by side, so the
//! difference of the two is what the state adds.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ddshark::capture::memory::OwnedFrame;
use ddshark::pipeline::Engine;
use ddshark::stats_cmd::{stats_engine_config, StatsOptions};
use ddshark_benches::{dissect_all, frames, CAPTURES};

fn dissect_and_state(frames: &[OwnedFrame]) -> u64 {
    let mut engine = Engine::new(stats_engine_config(&StatsOptions::default()));
    let source = engine.add_source("bench");
    for (number, f) in (1..).zip(frames) {
        engine.process(source, &f.as_frame(number));
    }
    engine.finish().topics.len() as u64
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("state");
    for name in CAPTURES {
        let frames = frames(name);
        group.throughput(Throughput::Elements(frames.len() as u64));
        group.bench_function(format!("{name} dissect only"), |b| {
            b.iter(|| dissect_all(&frames))
        });
        group.bench_function(format!("{name} dissect + state"), |b| {
            b.iter(|| dissect_and_state(&frames))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
