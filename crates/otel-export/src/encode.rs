//! Hand-written protobuf encoding of `ExportTraceServiceRequest` for span records:
//! no per-attribute allocation, one buffer per batch. The tests decode the output
//! with the `opentelemetry-proto` types to prove it is the same message.

use std::fmt::Write as _;

use crate::schema::{attr, SpanRecord};

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
    pub fn new(resource: &[(String, AttrValue)], scope_name: &str, scope_version: &str) -> Self {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{span_id, trace_id, SampleKind, TrafficType};
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value::Value;
    use prost::Message;
    use rtps_dissect::{Guid, VendorId};
    use std::collections::HashMap;
    use std::sync::Arc;

    fn record(frag: bool) -> SpanRecord {
        let writer =
            Guid::from_bytes([1, 16, 0xab, 0xcd, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0x12, 0x03]);
        SpanRecord {
            trace_id: trace_id(&writer, 42),
            span_id: span_id("h", "eth0", 5, 3, 1),
            kind: if frag {
                SampleKind::DataFrag
            } else {
                SampleKind::Data
            },
            start_ns: 1_700_000_000_123_456_789,
            end_ns: 1_700_000_000_123_999_999,
            traffic: TrafficType::User,
            topic: Some(Arc::from("rt/chatter")),
            type_name: Some(Arc::from("std_msgs::msg::dds_::String_")),
            writer,
            sn: 42,
            fragment_starting_num: if frag { 3 } else { 0 },
            frags_in_submessage: if frag { 2 } else { 1 },
            fragment_size: frag.then_some(1344),
            sample_size: 100_000,
            payload_size: 2688,
            pcp: frag.then_some(5),
            vlan_id: frag.then_some(100),
            vendor: VendorId::CYCLONE_DDS,
            src: "10.0.0.1:40000".parse().unwrap_or_else(|_| unreachable!()),
            dst: "[ff02::1]:7401".parse().unwrap_or_else(|_| unreachable!()),
            domain_id: Some(0),
            source_timestamp_ns: Some(-5),
            interface: Some(Arc::from("eth0")),
            frame: u64::MAX,
            frame_first: 3,
            ip_fragments: 2,
            submessage_index: 1,
        }
    }

    #[test]
    fn decodes_with_reference_types() {
        let resource = vec![
            ("service.name".to_string(), AttrValue::Str("ddshark".into())),
            ("host.name".to_string(), AttrValue::Str("a".into())),
            ("x.n".to_string(), AttrValue::Int(-1)),
            ("x.b".to_string(), AttrValue::Bool(true)),
        ];
        let mut enc = TraceRequestEncoder::new(&resource, "ddshark", "0.1.0");
        enc.push(&record(false));
        enc.push(&record(true));
        assert_eq!(enc.len(), 2);
        let bytes = enc.finish();
        assert!(enc.is_empty());
        let req = ExportTraceServiceRequest::decode(bytes.as_slice()).unwrap();
        assert_eq!(req.resource_spans.len(), 1);
        let rs = &req.resource_spans[0];
        let res = rs.resource.as_ref().unwrap();
        assert_eq!(res.attributes.len(), 4);
        assert_eq!(res.attributes[2].key, "x.n");
        assert_eq!(
            res.attributes[2].value.as_ref().unwrap().value,
            Some(Value::IntValue(-1))
        );
        assert_eq!(
            res.attributes[3].value.as_ref().unwrap().value,
            Some(Value::BoolValue(true))
        );
        let ss = &rs.scope_spans[0];
        assert_eq!(ss.scope.as_ref().unwrap().name, "ddshark");
        assert_eq!(ss.scope.as_ref().unwrap().version, "0.1.0");
        assert_eq!(ss.spans.len(), 2);
        for (span, frag) in ss.spans.iter().zip([false, true]) {
            let r = record(frag);
            assert_eq!(span.trace_id, r.trace_id.to_vec());
            assert_eq!(span.span_id, r.span_id.to_vec());
            assert_eq!(span.name, if frag { "DATA_FRAG" } else { "DATA" });
            assert_eq!(span.kind, 1);
            assert_eq!(span.start_time_unix_nano, r.start_ns);
            assert_eq!(span.end_time_unix_nano, r.end_ns);
            let a: HashMap<&str, Value> = span
                .attributes
                .iter()
                .map(|kv| (kv.key.as_str(), kv.value.clone().unwrap().value.unwrap()))
                .collect();
            assert_eq!(a.len(), span.attributes.len(), "no duplicate keys");
            let s = |k: &str| match a.get(k) {
                Some(Value::StringValue(s)) => s.clone(),
                other => panic!("{k}: {other:?}"),
            };
            let i = |k: &str| match a.get(k) {
                Some(Value::IntValue(v)) => *v,
                other => panic!("{k}: {other:?}"),
            };
            assert_eq!(s("traffic_type"), "user");
            assert_eq!(s("topic_name"), "rt/chatter");
            assert_eq!(s("type_name"), "std_msgs::msg::dds_::String_");
            assert_eq!(s("writer_id"), "0110abcd000000010000000200001203");
            assert_eq!(i("sn"), 42);
            assert_eq!(i("fragment_starting_num"), if frag { 3 } else { 0 });
            assert_eq!(i("frags_in_submessage"), if frag { 2 } else { 1 });
            assert_eq!(i("sample_size"), 100_000);
            assert_eq!(i("payload_size"), 2688);
            assert_eq!(s("vendor_id"), "0x0110");
            assert_eq!(s("vendor_name"), "Cyclone DDS");
            assert_eq!(s("src"), "10.0.0.1:40000");
            assert_eq!(s("dst"), "[ff02::1]:7401");
            assert_eq!(i("domain_id"), 0);
            assert_eq!(i("source_timestamp_ns"), -5);
            assert_eq!(s("capture.interface"), "eth0");
            assert_eq!(i("frame"), -1);
            assert_eq!(i("frame_first"), 3);
            assert_eq!(i("ip_fragments"), 2);
            assert_eq!(i("submessage_index"), 1);
            if frag {
                assert_eq!(i("pcp"), 5);
                assert_eq!(i("vlan_id"), 100);
                assert_eq!(i("fragment_size"), 1344);
            } else {
                assert!(!a.contains_key("pcp"));
                assert!(!a.contains_key("vlan_id"));
                assert!(!a.contains_key("fragment_size"));
            }
        }
    }

    #[test]
    fn empty_request_decodes() {
        let mut enc = TraceRequestEncoder::new(&[], "s", "v");
        let req = ExportTraceServiceRequest::decode(enc.finish().as_slice()).unwrap();
        assert_eq!(req.resource_spans[0].scope_spans[0].spans.len(), 0);
    }
}
