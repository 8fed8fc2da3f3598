//! What the host rule's evidence on SAMPLE spans (`src_ip`, `src_mac`, `announced_ips`)
//! costs on the wire: every SAMPLE span of the benchmark fixtures, made as the exporter
//! makes it, encoded as OTLP protobuf (opentelemetry-proto's conversion and prost, what
//! the exporter sends) with and without those attributes. docs/span-schema.md quotes it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ddshark::latency::extract::{observations, ExtractStats};
use ddshark::latency::join::{Join, JoinConfig};
use ddshark::latency::Level;
use ddshark_benches::{frames, CAPTURES};
use opentelemetry::InstrumentationScope;
use opentelemetry_proto::tonic::trace::v1::ResourceSpans;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use otel_export::schema::SpanDataBuilder;
use otel_export::{SpanMapper, SpanRecord};
use prost::Message;
use rtps_dissect::Dissector;

/// Every SAMPLE span of one capture, as ddshark's exporter makes them.
fn sample_spans(rel: &str) -> Vec<SpanRecord> {
    let mut dissector = Dissector::default();
    let mut mapper = SpanMapper::new("bench-host", Some("eth0"));
    let mut join = Join::new(JoinConfig {
        captures: 1,
        window_ns: span_schema::SAMPLE_WINDOW_NS,
        max_pending: 1_000_000,
        max_bytes: 1 << 30,
        lost: latency_core::LostRule::default(),
    });
    let (mut obs, mut rows, mut stats) = (Vec::new(), Vec::new(), ExtractStats::default());
    let (mut done, mut out) = (Vec::new(), Vec::new());
    for (number, f) in (1..).zip(frames(rel)) {
        for d in dissector.process(&f.as_frame(number)).datagrams() {
            mapper.map(d, |_| {});
            observations(d, Level::Sample, 0, &mut stats, &mut obs);
        }
        for o in obs.drain(..) {
            join.push(0, o, &mut rows);
        }
        join.advance(i64::try_from(f.ts_ns).unwrap(), &mut rows);
        join.take_local(&mut done);
        out.extend(
            done.drain(..)
                .map(|s| mapper.sample(&ddshark::sample_summary(&s))),
        );
    }
    join.finish(&mut rows);
    join.take_local(&mut done);
    out.extend(
        done.drain(..)
            .map(|s| mapper.sample(&ddshark::sample_summary(&s))),
    );
    out
}

/// The span's protobuf bytes as the exporter sends it (the `Span` message alone: the
/// resource and scope are per request).
fn encoded(builder: &mut SpanDataBuilder, r: &SpanRecord) -> usize {
    let resource = ResourceAttributesWithSchema::default();
    let rs = ResourceSpans::new(builder.span_data(r), &resource);
    rs.scope_spans[0].spans[0].encoded_len()
}

/// The record without the host rule's evidence (SAMPLE spans before it was added).
fn without_evidence(r: &SpanRecord) -> SpanRecord {
    let mut r = r.clone();
    r.src = std::net::SocketAddr::from(([0, 0, 0, 0], 0));
    if let Some(t) = r.sample.as_mut() {
        t.src_mac = None;
    }
    r.announced_ips = None;
    r
}

#[test]
fn the_host_rule_evidence_adds_few_bytes_per_sample_span() {
    let mut builder = SpanDataBuilder::new(InstrumentationScope::builder("ddshark").build());
    let (mut spans, mut before, mut after, mut announcing) = (0usize, 0usize, 0usize, 0usize);
    for rel in CAPTURES {
        let records = sample_spans(rel);
        let (mut b, mut a) = (0usize, 0usize);
        for r in &records {
            b += encoded(&mut builder, &without_evidence(r));
            a += encoded(&mut builder, r);
            announcing += usize::from(r.announced_ips.is_some());
        }
        let n = records.len().max(1);
        eprintln!(
            "{rel}: {} SAMPLE spans, {:.1} -> {:.1} B per span",
            records.len(),
            b as f64 / n as f64,
            a as f64 / n as f64
        );
        spans += records.len();
        before += b;
        after += a;
    }
    assert!(
        spans > 100 && announcing > 0,
        "{spans} spans, {announcing} with announced_ips"
    );
    let (b, a) = (before as f64 / spans as f64, after as f64 / spans as f64);
    eprintln!(
        "all: {spans} SAMPLE spans ({announcing} with announced_ips): {b:.1} -> {a:.1} B per span (+{:.1} B, +{:.1} %)",
        a - b,
        100.0 * (a - b) / b
    );
    // src_ip (an IPv4 address) and src_mac on every span, announced_ips on a few
    assert!(a - b <= 50.0, "{b:.1} -> {a:.1} B per SAMPLE span");
}
