use opentelemetry::{InstrumentationScope, Value};
use rtps_dissect::GuidPrefix;

use super::mapper::domain_from_port;
use super::*;

#[test]
fn trace_id_is_deterministic_and_sn_sensitive() {
    let g = Guid::from_bytes([7u8; 16]);
    assert_eq!(trace_id(&g, 1), trace_id(&g, 1));
    assert_ne!(trace_id(&g, 1), trace_id(&g, 2));
    let h = Guid::from_bytes([8u8; 16]);
    assert_ne!(trace_id(&g, 1), trace_id(&h, 1));
}

#[test]
fn span_ids_differ_per_host_and_submessage() {
    let a = span_id("a", "eth0", 10, 1, 0);
    assert_ne!(a, span_id("b", "eth0", 10, 1, 0));
    assert_ne!(a, span_id("a", "eth0", 10, 1, 1));
    assert_ne!(a, span_id("a", "eth0", 10, 2, 0));
    assert_eq!(a, span_id("a", "eth0", 10, 1, 0));
}

#[test]
fn slots_separate_spans_of_one_writer_with_one_start_time() {
    let mut m = SpanMapper::new("a", None);
    let w = Guid::from_bytes([7u8; 16]);
    let v = Guid::from_bytes([8u8; 16]);
    assert_eq!(m.slot(w, 10), 0);
    assert_eq!(m.slot(w, 10), 1);
    assert_eq!(m.slot(v, 10), 0);
    assert_eq!(m.slot(w, 10), 2);
    assert_eq!(m.slot(w, 11), 0);
    assert_eq!(m.slot(v, 11), 0);
    assert_eq!(m.slot_resets(), 0);
}

#[test]
fn domain_from_default_ports() {
    assert_eq!(domain_from_port(7400), Some(0));
    assert_eq!(domain_from_port(7411), Some(0));
    assert_eq!(domain_from_port(7650), Some(1));
    assert_eq!(domain_from_port(7399), None);
    assert_eq!(domain_from_port(65535), Some(232));
    assert_eq!(domain_from_port(53), None);
}

/// A span of every kind with every optional value present.
fn full_record(sample: Option<SampleTotals>) -> SpanRecord {
    SpanRecord {
        trace_id: [1; 16],
        span_id: [2; 8],
        kind: if sample.is_some() {
            SampleKind::Sample
        } else {
            SampleKind::DataFrag
        },
        start_ns: 5,
        end_ns: 6,
        traffic: TrafficType::User,
        topic: Some(Arc::from("rt/chatter")),
        type_name: Some(Arc::from("std_msgs::msg::dds_::String_")),
        writer: Guid {
            prefix: GuidPrefix([1; 12]),
            entity: rtps_dissect::types::EntityId([0, 0, 1, 2]),
        },
        sn: 7,
        fragment_starting_num: 1,
        frags_in_submessage: 1,
        fragment_size: Some(1024),
        sample_size: 100,
        payload_size: 104,
        pcp: Some(3),
        vlan_id: Some(10),
        vendor: VendorId([1, 16]),
        src: "10.0.0.1:7410".parse().unwrap(),
        dst: "239.255.0.1:7401".parse().unwrap(),
        domain_id: Some(0),
        source_timestamp_ns: Some(4),
        interface: Some(Arc::from("eth0")),
        frame: 9,
        frame_first: 9,
        ip_fragments: 1,
        submessage_index: 1,
        slot: 0,
        sample,
        announced_ips: Some(Arc::from("10.0.0.1,10.0.0.2")),
        export_seq: 11,
    }
}

/// (key, type) of the attributes the builder gives `record`.
fn encoded(record: &SpanRecord, detail: SpanDetail) -> Vec<(String, span_schema::ValueType)> {
    let scope = InstrumentationScope::builder("test").build();
    SpanDataBuilder::with_detail(scope, detail)
        .attributes(record)
        .into_iter()
        .map(|kv| {
            let ty = match kv.value {
                Value::I64(_) => span_schema::ValueType::Int,
                Value::String(_) => span_schema::ValueType::Str,
                other => panic!("{}: unexpected value type {other:?}", kv.key),
            };
            (kv.key.as_str().to_owned(), ty)
        })
        .collect()
}

/// (key, type) of the schema's attributes that `keep` selects, in the schema's order.
fn schema_attributes(
    keep: impl Fn(&span_schema::SpanAttribute) -> bool,
) -> Vec<(String, span_schema::ValueType)> {
    span_schema::SPAN_ATTRIBUTES
        .iter()
        .filter(|a| keep(a))
        .map(|a| (a.key.to_owned(), a.ty))
        .collect()
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

#[test]
fn spans_carry_exactly_the_schemas_attributes() {
    let totals = SampleTotals {
        fragments: 2,
        fragments_missing: 0,
        submessages: 2,
        repairs: 0,
        src_mac: Some([2, 0, 0, 0, 0, 1]),
    };
    assert_eq!(
        sorted(encoded(&full_record(None), SpanDetail::Full)),
        sorted(schema_attributes(|a| a.on_submessage_spans())),
        "DATA/DATA_FRAG spans"
    );
    assert_eq!(
        sorted(encoded(&full_record(None), SpanDetail::Lean)),
        sorted(schema_attributes(
            |a| a.on_submessage_spans() && !a.lean_drops
        )),
        "--otlp-lean leaves out exactly the schema's lean_drops"
    );
    for detail in [SpanDetail::Full, SpanDetail::Lean] {
        assert_eq!(
            sorted(encoded(&full_record(Some(totals)), detail)),
            sorted(schema_attributes(|a| a.on_sample_spans())),
            "SAMPLE spans ({detail:?})"
        );
    }
}

#[test]
fn absent_values_leave_out_only_optional_attributes() {
    let mut r = full_record(None);
    (r.topic, r.type_name, r.fragment_size, r.pcp, r.vlan_id) = (None, None, None, None, None);
    (r.domain_id, r.source_timestamp_ns, r.interface) = (None, None, None);
    assert_eq!(
        sorted(encoded(&r, SpanDetail::Full)),
        sorted(schema_attributes(|a| a.on_submessage_spans() && !a.optional)),
    );
}

mod size_bound {
    /// The queue's memory bound is `queue_capacity × size_of::<SpanRecord>()`
    /// (65536 × 312 B = 19.5 MiB by default; 296 B before SAMPLE spans carried the host
    /// rule's evidence); keep the record from growing unnoticed.
    #[test]
    fn span_record_stays_small() {
        assert!(
            std::mem::size_of::<super::SpanRecord>() <= 312,
            "{}",
            std::mem::size_of::<super::SpanRecord>()
        );
    }
}
