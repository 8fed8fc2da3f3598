//! Export path, old against new, per batch of 2048 spans (criterion):
//!
//! * `hand_encoded`: the hand-written protobuf encoder ddshark used before it moved
//!   onto opentelemetry-otlp (kept here only, for this comparison);
//! * `sdk_spandata`: what the exporter does now — `SpanRecord` → SDK `SpanData`
//!   (`schema::SpanDataBuilder`) → opentelemetry-proto's conversion (what the crate's
//!   exporters run) → prost encoding of the `ExportTraceServiceRequest`.
//!
//! Both produce the request bytes that go on the wire (before compression); the
//! end-to-end rate to the real collector is `scripts/bench-otlp.sh`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
use opentelemetry_sdk::Resource;
use otel_export::schema::{
    span_id, trace_id, SampleKind, SpanDataBuilder, SpanRecord, TrafficType,
};
use prost::Message;
use rtps_dissect::{Guid, VendorId};

const BATCH: usize = 2048;

fn record(i: u64) -> SpanRecord {
    let writer = Guid::from_bytes([1, 16, 0xab, 0xcd, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0x12, 0x03]);
    let frag = i.is_multiple_of(4);
    SpanRecord {
        trace_id: trace_id(&writer, i as i64),
        span_id: span_id("h", "eth0", i, i, 1),
        kind: if frag {
            SampleKind::DataFrag
        } else {
            SampleKind::Data
        },
        start_ns: 1_700_000_000_123_456_789 + i * 1000,
        end_ns: 1_700_000_000_123_999_999 + i * 1000,
        traffic: TrafficType::User,
        topic: Some(Arc::from("rt/chatter")),
        type_name: Some(Arc::from("std_msgs::msg::dds_::String_")),
        writer,
        sn: i as i64,
        fragment_starting_num: if frag { 3 } else { 0 },
        frags_in_submessage: if frag { 2 } else { 1 },
        fragment_size: frag.then_some(1344),
        sample_size: 100_000,
        payload_size: 2688,
        pcp: frag.then_some(5),
        vlan_id: frag.then_some(100),
        vendor: VendorId::CYCLONE_DDS,
        src: "10.0.0.1:7410".parse().unwrap(),
        dst: "239.255.0.1:7401".parse().unwrap(),
        domain_id: Some(0),
        source_timestamp_ns: Some(1_700_000_000_000_000_000),
        interface: Some(Arc::from("eth0")),
        frame: i,
        frame_first: i,
        ip_fragments: 1,
        submessage_index: 1,
        slot: 0,
        sample: None,
        announced_ips: None,
        export_seq: i,
    }
}

fn bench(c: &mut Criterion) {
    let records: Vec<SpanRecord> = (0..BATCH as u64).map(record).collect();
    let resource_kv = [
        (
            "service.name".to_string(),
            old::AttrValue::Str("ddshark".into()),
        ),
        ("host.name".to_string(), old::AttrValue::Str("h".into())),
    ];
    let resource = Resource::builder_empty()
        .with_attributes([
            KeyValue::new("service.name", "ddshark"),
            KeyValue::new("host.name", "h"),
        ])
        .build();
    let resource = ResourceAttributesWithSchema::from(&resource);
    let scope = InstrumentationScope::builder("ddshark")
        .with_version("0.1.0")
        .build();
    let mut g = c.benchmark_group("otlp_export_2048_spans");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function("hand_encoded", |b| {
        let mut enc = old::TraceRequestEncoder::new(&resource_kv, "ddshark", "0.1.0");
        b.iter(|| {
            for r in &records {
                enc.push(r);
            }
            black_box(enc.finish())
        })
    });
    g.bench_function("sdk_spandata", |b| {
        b.iter(|| {
            let mut builder = SpanDataBuilder::new(scope.clone());
            let spans = records.iter().map(|r| builder.span_data(r)).collect();
            let req = ExportTraceServiceRequest {
                resource_spans: group_spans_by_resource_and_scope(spans, &resource),
            };
            black_box(req.encode_to_vec())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

/// The hand-written encoder of ddshark before opentelemetry-otlp (git history:
/// crates/otel-export/src/encode.rs), unchanged but for its imports.
#[allow(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    dead_code
)]
mod old {
    use otel_export::schema::{attr, SpanRecord};
    use std::fmt::Write as _;

    /// An attribute value as OTLP's `AnyValue`.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum AttrValue {
        Str(String),
        Int(i64),
        Bool(bool),
    }

    #[derive(Debug, Clone, Copy)]
    enum Val<'a> {
        Str(&'a str),
        Int(i64),
        Bool(bool),
    }

    const WT_VARINT: u32 = 0;
    const WT_I64: u32 = 1;
    const WT_LEN: u32 = 2;

    fn varint_len(mut v: u64) -> usize {
        let mut n = 1;
        while v >= 0x80 {
            v >>= 7;
            n += 1;
        }
        n
    }

    fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        buf.push(v as u8);
    }

    fn put_tag(buf: &mut Vec<u8>, field: u32, wt: u32) {
        put_varint(buf, u64::from((field << 3) | wt));
    }

    fn tag_len(field: u32) -> usize {
        varint_len(u64::from(field << 3))
    }

    /// Size of a length-delimited field holding `n` bytes.
    fn ld_len(field: u32, n: usize) -> usize {
        tag_len(field) + varint_len(n as u64) + n
    }

    fn put_ld(buf: &mut Vec<u8>, field: u32, bytes: &[u8]) {
        put_tag(buf, field, WT_LEN);
        put_varint(buf, bytes.len() as u64);
        buf.extend_from_slice(bytes);
    }

    fn any_len(v: Val<'_>) -> usize {
        match v {
            Val::Str(s) => ld_len(1, s.len()),
            Val::Bool(_) => 2,
            Val::Int(i) => 1 + varint_len(i as u64),
        }
    }

    /// Encoded size of a `KeyValue` message body.
    fn kv_body_len(key: &str, v: Val<'_>) -> usize {
        ld_len(1, key.len()) + ld_len(2, any_len(v))
    }

    fn put_kv(buf: &mut Vec<u8>, field: u32, key: &str, v: Val<'_>) {
        put_tag(buf, field, WT_LEN);
        put_varint(buf, kv_body_len(key, v) as u64);
        put_ld(buf, 1, key.as_bytes());
        put_tag(buf, 2, WT_LEN);
        put_varint(buf, any_len(v) as u64);
        match v {
            Val::Str(s) => put_ld(buf, 1, s.as_bytes()),
            Val::Bool(b) => {
                put_tag(buf, 2, WT_VARINT);
                buf.push(u8::from(b));
            }
            Val::Int(i) => {
                put_tag(buf, 3, WT_VARINT);
                put_varint(buf, i as u64);
            }
        }
    }

    fn val(v: &AttrValue) -> Val<'_> {
        match v {
            AttrValue::Str(s) => Val::Str(s),
            AttrValue::Int(i) => Val::Int(*i),
            AttrValue::Bool(b) => Val::Bool(*b),
        }
    }

    /// `SPAN_KIND_INTERNAL`: a passive observation, neither client nor server.
    const SPAN_KIND_INTERNAL: u64 = 1;

    /// Builds one `ExportTraceServiceRequest` (one resource, one scope) from span records.
    #[derive(Debug)]
    pub struct TraceRequestEncoder {
        /// Encoded `Resource` message body.
        resource: Vec<u8>,
        /// Encoded `InstrumentationScope` message body.
        scope: Vec<u8>,
        /// Encoded `ScopeSpans.spans` fields.
        spans: Vec<u8>,
        count: usize,
        scratch: String,
    }

    impl TraceRequestEncoder {
        pub fn new(
            resource: &[(String, AttrValue)],
            scope_name: &str,
            scope_version: &str,
        ) -> Self {
            let mut res = Vec::new();
            for (k, v) in resource {
                put_kv(&mut res, 1, k, val(v));
            }
            let mut scope = Vec::new();
            put_ld(&mut scope, 1, scope_name.as_bytes());
            put_ld(&mut scope, 2, scope_version.as_bytes());
            Self {
                resource: res,
                scope,
                spans: Vec::new(),
                count: 0,
                scratch: String::with_capacity(128),
            }
        }

        pub fn len(&self) -> usize {
            self.count
        }

        pub fn is_empty(&self) -> bool {
            self.count == 0
        }

        /// Bytes of encoded spans so far (the request is slightly larger).
        pub fn encoded_len(&self) -> usize {
            self.spans.len()
        }

        /// Appends one span.
        pub fn push(&mut self, r: &SpanRecord) {
            // Formatted strings live in `scratch`; attributes refer to ranges of it.
            self.scratch.clear();
            let s = &mut self.scratch;
            let w0 = s.len();
            for b in r.writer.to_bytes() {
                let _ = write!(s, "{b:02x}");
            }
            let w1 = s.len();
            let _ = write!(s, "{}", r.src);
            let s1 = s.len();
            let _ = write!(s, "{}", r.dst);
            let d1 = s.len();
            let _ = write!(s, "{}", r.vendor);
            let v1 = s.len();
            let s: &str = &self.scratch;
            let sub = |a: usize, b: usize| s.get(a..b).unwrap_or("");

            let attrs: [(&str, Option<Val<'_>>); 23] = [
                (attr::TRAFFIC_TYPE, Some(Val::Str(r.traffic.name()))),
                (attr::TOPIC_NAME, r.topic.as_deref().map(Val::Str)),
                (attr::TYPE_NAME, r.type_name.as_deref().map(Val::Str)),
                (attr::WRITER_ID, Some(Val::Str(sub(w0, w1)))),
                (attr::SN, Some(Val::Int(r.sn))),
                (
                    attr::FRAGMENT_STARTING_NUM,
                    Some(Val::Int(i64::from(r.fragment_starting_num))),
                ),
                (
                    attr::FRAGS_IN_SUBMESSAGE,
                    Some(Val::Int(i64::from(r.frags_in_submessage))),
                ),
                (
                    attr::FRAGMENT_SIZE,
                    r.fragment_size.map(|v| Val::Int(i64::from(v))),
                ),
                (attr::SAMPLE_SIZE, Some(Val::Int(r.sample_size as i64))),
                (attr::PAYLOAD_SIZE, Some(Val::Int(r.payload_size as i64))),
                (attr::PCP, r.pcp.map(|v| Val::Int(i64::from(v)))),
                (attr::VLAN_ID, r.vlan_id.map(|v| Val::Int(i64::from(v)))),
                (attr::VENDOR_ID, Some(Val::Str(sub(d1, v1)))),
                (attr::VENDOR_NAME, Some(Val::Str(r.vendor.name()))),
                (attr::SRC, Some(Val::Str(sub(w1, s1)))),
                (attr::DST, Some(Val::Str(sub(s1, d1)))),
                (attr::DOMAIN_ID, r.domain_id.map(|v| Val::Int(i64::from(v)))),
                (
                    attr::SOURCE_TIMESTAMP_NS,
                    r.source_timestamp_ns.map(Val::Int),
                ),
                (
                    attr::CAPTURE_INTERFACE,
                    r.interface.as_deref().map(Val::Str),
                ),
                (attr::FRAME, Some(Val::Int(r.frame as i64))),
                (attr::FRAME_FIRST, Some(Val::Int(r.frame_first as i64))),
                (
                    attr::IP_FRAGMENTS,
                    Some(Val::Int(i64::from(r.ip_fragments))),
                ),
                (
                    attr::SUBMESSAGE_INDEX,
                    Some(Val::Int(i64::from(r.submessage_index))),
                ),
            ];

            let name = r.kind.name();
            let mut body = ld_len(1, 16) + ld_len(2, 8) + ld_len(5, name.len());
            body += 1 + varint_len(SPAN_KIND_INTERNAL); // kind
            body += 2 * (1 + 8); // start, end (fixed64)
            for (k, v) in &attrs {
                if let Some(v) = v {
                    body += ld_len(9, kv_body_len(k, *v));
                }
            }
            let buf = &mut self.spans;
            buf.reserve(ld_len(2, body));
            put_tag(buf, 2, WT_LEN);
            put_varint(buf, body as u64);
            put_ld(buf, 1, &r.trace_id);
            put_ld(buf, 2, &r.span_id);
            put_ld(buf, 5, name.as_bytes());
            put_tag(buf, 6, WT_VARINT);
            put_varint(buf, SPAN_KIND_INTERNAL);
            put_tag(buf, 7, WT_I64);
            buf.extend_from_slice(&r.start_ns.to_le_bytes());
            put_tag(buf, 8, WT_I64);
            buf.extend_from_slice(&r.end_ns.to_le_bytes());
            for (k, v) in &attrs {
                if let Some(v) = v {
                    put_kv(buf, 9, k, *v);
                }
            }
            self.count += 1;
        }

        /// The encoded request of everything pushed since the last call; resets.
        pub fn finish(&mut self) -> Vec<u8> {
            let scope_spans = ld_len(1, self.scope.len()) + self.spans.len();
            let resource_spans = ld_len(1, self.resource.len()) + ld_len(2, scope_spans);
            let mut out = Vec::with_capacity(ld_len(1, resource_spans));
            put_tag(&mut out, 1, WT_LEN);
            put_varint(&mut out, resource_spans as u64);
            put_ld(&mut out, 1, &self.resource);
            put_tag(&mut out, 2, WT_LEN);
            put_varint(&mut out, scope_spans as u64);
            put_ld(&mut out, 1, &self.scope);
            out.extend_from_slice(&self.spans);
            self.spans.clear();
            self.count = 0;
            out
        }
    }
}
