//! Span building through otel-export's public API: datagrams → span records
//! (`SpanMapper`, dissection included) and span records → the SDK's `SpanData`
//! (`schema::span_data`) that opentelemetry-otlp encodes, in spans/s.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ddshark_benches::{frames, spans, CAPTURES};
use opentelemetry::InstrumentationScope;
use otel_export::schema::span_data;
use otel_export::SpanRecord;

fn to_span_data(scope: &InstrumentationScope, records: &[SpanRecord]) -> usize {
    records
        .iter()
        .map(|r| span_data(r, scope).attributes.len())
        .sum()
}

fn bench(c: &mut Criterion) {
    let scope = InstrumentationScope::builder("ddshark").build();
    let mut group = c.benchmark_group("span_encoding");
    for name in CAPTURES {
        let frames = frames(name);
        let records = spans(&frames);
        group.throughput(Throughput::Elements(records.len() as u64));
        group.bench_function(format!("{name} map (dissect + SpanMapper)"), |b| {
            b.iter(|| spans(&frames).len())
        });
        group.bench_function(format!("{name} SpanData (schema::span_data)"), |b| {
            b.iter(|| to_span_data(&scope, &records))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
