//! Span records from captured traffic through otel-export's public API: datagrams →
//! span records (`SpanMapper`, dissection included), in spans/s. What the records cost
//! to encode for the wire is the `export` benchmark.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ddshark_benches::{frames, spans, CAPTURES};

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("span_mapping");
    for name in CAPTURES {
        let frames = frames(name);
        let records = spans(&frames).len();
        group.throughput(Throughput::Elements(records as u64));
        group.bench_function(format!("{name} dissect + SpanMapper"), |b| {
            b.iter(|| spans(&frames).len())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
