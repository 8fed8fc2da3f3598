//! Where the latency join's raw points put each attribute ([`Raw`](crate::Raw)): the span
//! points' tags and fields per kind, and the writer series' facts.

use crate::{attr, influx, Raw, SpanKind, ValueType, SPAN_ATTRIBUTES};

/// Where the join stores the resource attributes ddshark sets.
pub const RESOURCE_RAW: [(&str, Raw); 3] = [
    (attr::SERVICE_NAME, Raw::WriterTag),
    (attr::HOST_NAME, Raw::Tag),
    (attr::SERVICE_INSTANCE_ID, Raw::Tag),
];

/// Where an attribute (a span's or the resource's) goes in the raw bucket; None for one the
/// schema does not name (an `--otlp-resource` of the user's: the writer series' JSON field
/// [`influx::ATTRIBUTES`]).
pub fn raw_place(key: &str) -> Option<(&'static str, Raw, ValueType)> {
    if let Some(a) = SPAN_ATTRIBUTES.iter().find(|a| a.key == key) {
        return Some((a.key, a.raw, a.ty));
    }
    RESOURCE_RAW
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(k, raw)| (*k, *raw, ValueType::Str))
}

/// At most this many fields on any point the join writes to the raw bucket: InfluxDB's
/// cost per point grows with its fields (measured: 22.4 µs with 22, 10.2 with 8).
pub const MAX_RAW_FIELDS: usize = 8;

/// Every attribute key with its raw placement, the resource's first.
fn raw_placements() -> impl Iterator<Item = (&'static str, Raw, ValueType)> {
    RESOURCE_RAW
        .iter()
        .map(|(k, r)| (*k, *r, ValueType::Str))
        .chain(SPAN_ATTRIBUTES.iter().map(|a| (a.key, a.raw, a.ty)))
}

/// The tags of the span points: the resource's and the attributes' `Tag`s, `SpanTag`s and
/// the span name.
pub fn raw_span_tags() -> Vec<&'static str> {
    let mut v: Vec<&str> = raw_placements()
        .filter(|(_, r, _)| matches!(r, Raw::Tag | Raw::SpanTag))
        .map(|(k, _, _)| k)
        .collect();
    v.push(influx::SPAN_NAME);
    v
}

/// The fields of a kind's span points: its attributes' and the span's end.
pub fn raw_span_fields(kind: SpanKind) -> Vec<(&'static str, ValueType)> {
    let mut v: Vec<(&str, ValueType)> = raw_placements()
        .filter(|(_, r, _)| matches!(r, Raw::Field(k) if k.has(kind)))
        .map(|(k, _, ty)| (k, ty))
        .collect();
    v.push((influx::END_TIME, ValueType::Int));
    v
}

/// The tags of the writer series: who it is (the `Tag`s) and what it is (`WriterTag`s).
pub fn raw_writer_tags() -> Vec<&'static str> {
    raw_placements()
        .filter(|(_, r, _)| matches!(r, Raw::Tag | Raw::WriterTag))
        .map(|(k, _, _)| k)
        .collect()
}

/// The fields of the writer series: `WriterField`s, the JSON of the user's resource
/// attributes, and the `sn` of the span that wrote the point (every point has it: a line
/// without fields is no point, and InfluxDB refuses the whole batch it is in).
pub fn raw_writer_fields() -> Vec<(&'static str, ValueType)> {
    let mut v: Vec<(&str, ValueType)> = raw_placements()
        .filter(|(_, r, _)| *r == Raw::WriterField)
        .map(|(k, _, ty)| (k, ty))
        .collect();
    v.push((influx::ATTRIBUTES, ValueType::Str));
    v.push((attr::SN, ValueType::Int));
    v
}

/// The tags of measurement `spans` in the raw bucket ([`raw_span_tags`]).
pub fn influx_span_tags() -> Vec<&'static str> {
    raw_span_tags()
}

/// The fields of measurement `spans`, of every kind of point ([`raw_span_fields`]).
pub fn influx_span_fields() -> Vec<(&'static str, ValueType)> {
    let mut v: Vec<(&str, ValueType)> = Vec::new();
    for kind in SpanKind::ALL {
        for f in raw_span_fields(kind) {
            if !v.contains(&f) {
                v.push(f);
            }
        }
    }
    v
}
