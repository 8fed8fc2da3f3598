//! The raw points of an export (docs/span-schema.md, "In InfluxDB: lean points"), laid out
//! as `span_schema` places each attribute ([`span_schema::Raw`]):
//!
//! - one point per span the join takes (SAMPLE, DATA, DATA_FRAG) in measurement `spans`,
//!   time = the span's start (ns), with only what queries select by as tags
//!   ([`span_schema::raw_span_tags`]: host, run, writer, topic, slot, span name; PCP and VLAN
//!   of a tagged frame's DATA/DATA_FRAG) and what
//!   they compute with as fields ([`span_schema::raw_span_fields`]: at most
//!   [`span_schema::MAX_RAW_FIELDS`], the span's end among them);
//! - what follows the writer (its type, vendor, traffic type, domain, capture interface,
//!   addresses, …) once per writer, host and run in measurement `dds_writers`,
//!   written when first seen and whenever a span changes it ([`WriterFacts`]), with the
//!   resource attributes the schema does not name (`--otlp-resource`) as one JSON field.
//!
//! A known attribute of the wrong type is refused ([`SpanError::WrongType`]): written as it
//! came, it would change its field's type, and InfluxDB refuses the whole batch then.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use opentelemetry_proto::tonic::common::v1::{any_value::Value, KeyValue};
use opentelemetry_proto::tonic::trace::v1::Span;
use span_schema::{
    attr, influx, measurement, raw_place, Raw, SpanKind, ValueType, SDK_RESOURCE_ATTRIBUTES,
};

use super::{times, type_name, SpanError};
use crate::LineWriter;

/// Writers (per host and run) whose facts the join remembers; when a new one would exceed
/// it, it forgets them all and writes each writer's facts again when next seen (nothing is
/// lost: a few points more).
pub const MAX_WRITER_FACTS: usize = 65_536;

#[derive(Debug, Clone, PartialEq)]
enum Field {
    Int(i64),
    Str(String),
}

/// One attribute's place, value checked.
enum Placed {
    SpanTag(String),
    /// Both the span points' and the writer series' tag.
    Tag(String),
    SpanField(Field),
    WriterTag(String),
    WriterField(Field),
    /// Not stored, or a field of another kind of point.
    Nowhere,
}

/// Where an attribute goes, its value checked against the schema's type.
fn place(
    key: &str,
    value: &Value,
    span: &'static str,
    kind: Option<SpanKind>,
) -> Result<Option<(&'static str, Placed)>, SpanError> {
    if SDK_RESOURCE_ATTRIBUTES.contains(&key) {
        return Ok(None);
    }
    let Some((key, raw, ty)) = raw_place(key) else {
        return Ok(None);
    };
    let wrong = |expected: &'static str| SpanError::WrongType {
        span,
        key,
        expected,
        found: type_name(value),
    };
    let field = match (ty, value) {
        (ValueType::Str, Value::StringValue(s)) => {
            if s.contains(['\n', '\r']) {
                return Err(SpanError::BadText { span, key });
            }
            Field::Str(s.clone())
        }
        (ValueType::Int, Value::IntValue(v)) => Field::Int(*v),
        (ValueType::Str, _) => return Err(wrong("a string")),
        (ValueType::Int, _) => return Err(wrong("an int")),
    };
    let text = |f: Field| match f {
        Field::Int(i) => i.to_string(),
        Field::Str(s) => s,
    };
    let placed = match raw {
        Raw::Tag => Placed::Tag(text(field)),
        Raw::SpanTag => Placed::SpanTag(text(field)),
        Raw::Field(kinds) if kind.is_some_and(|k| kinds.has(k)) => Placed::SpanField(field),
        Raw::Field(_) | Raw::Dropped => Placed::Nowhere,
        Raw::WriterTag => Placed::WriterTag(text(field)),
        Raw::WriterField => Placed::WriterField(field),
    };
    Ok(Some((key, placed)))
}

/// A scalar attribute as JSON; others: None.
fn json(value: &Value) -> Option<serde_json::Value> {
    match value {
        Value::StringValue(s) => Some(serde_json::Value::String(s.clone())),
        Value::BoolValue(b) => Some(serde_json::Value::Bool(*b)),
        Value::IntValue(i) => Some(serde_json::Value::from(*i)),
        Value::DoubleValue(d) => serde_json::Number::from_f64(*d).map(serde_json::Value::Number),
        _ => None,
    }
}

/// Attributes as (key, value) pairs, those without a value left out.
fn pairs(attrs: &[KeyValue]) -> impl Iterator<Item = (&str, &Value)> {
    attrs.iter().filter_map(|kv| {
        kv.value
            .as_ref()
            .and_then(|v| v.value.as_ref())
            .map(|v| (kv.key.as_str(), v))
    })
}

/// What a writer's series says: its tags and fields (the latest value of each).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WriterFacts {
    tags: BTreeMap<&'static str, String>,
    fields: BTreeMap<&'static str, Field>,
}

impl WriterFacts {
    /// The writer's point, written by the span of SN `sn` (a field every point has: a line
    /// without fields is no point, and InfluxDB refuses the whole batch it is in).
    fn write(&self, time: i64, sn: i64, out: &mut LineWriter) {
        out.point(measurement::WRITERS);
        for (k, v) in &self.tags {
            out.tag(k, v);
        }
        for (k, v) in &self.fields {
            match v {
                Field::Int(i) => out.int(k, *i),
                Field::Str(s) => out.string(k, s),
            };
        }
        out.int(attr::SN, sn);
        out.end(Some(time));
    }
}

/// The facts the join last wrote per writer, host and run, so that each is written once
/// (and again when it changes).
#[derive(Debug, Default)]
pub struct RawLayout {
    written: HashMap<String, WriterFacts>,
    /// Set when InfluxDB did not take a batch: the facts it held are written again.
    forget: Arc<AtomicBool>,
    key: String,
}

impl RawLayout {
    /// What the answer to a batch sets when InfluxDB did not take it.
    pub fn forget_handle(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.forget)
    }

    /// Writers remembered.
    pub fn writers(&self) -> usize {
        self.written.len()
    }

    /// Before a request's points: forgets what a batch InfluxDB did not take held.
    pub fn start(&mut self) {
        if self.forget.swap(false, Ordering::Relaxed) {
            self.written.clear();
        }
    }
}

/// What a resource gives every point of its spans.
#[derive(Debug, Default)]
pub struct ResourcePart {
    span_tags: BTreeMap<&'static str, String>,
    writer: WriterFacts,
}

impl ResourcePart {
    /// The resource's attributes; an error refuses every span of it.
    pub fn new(attrs: &[KeyValue]) -> Result<ResourcePart, SpanError> {
        let mut part = ResourcePart::default();
        let mut extra = serde_json::Map::new();
        for (key, value) in pairs(attrs) {
            match place(key, value, "resource", None)? {
                Some((k, placed)) => part.take(k, placed),
                None if SDK_RESOURCE_ATTRIBUTES.contains(&key) => {}
                None => {
                    if let Some(v) = json(value) {
                        extra.insert(key.to_owned(), v);
                    }
                }
            }
        }
        if !extra.is_empty() {
            let text = serde_json::Value::Object(extra).to_string();
            part.writer
                .fields
                .insert(influx::ATTRIBUTES, Field::Str(text));
        }
        Ok(part)
    }

    fn take(&mut self, key: &'static str, placed: Placed) {
        match placed {
            Placed::Tag(v) => {
                self.span_tags.insert(key, v.clone());
                self.writer.tags.insert(key, v);
            }
            Placed::SpanTag(v) => {
                self.span_tags.insert(key, v);
            }
            Placed::WriterTag(v) => {
                self.writer.tags.insert(key, v);
            }
            Placed::WriterField(v) => {
                self.writer.fields.insert(key, v);
            }
            Placed::SpanField(_) | Placed::Nowhere => {}
        }
    }

    /// Appends the span's point to `out` (and its writer's, when the span changes what
    /// `layout` last wrote of it): the points written, or none and why not.
    pub fn point(
        &self,
        kind: SpanKind,
        span: &Span,
        layout: &mut RawLayout,
        out: &mut LineWriter,
    ) -> Result<u64, SpanError> {
        let name = kind.name();
        let (start, end) = times(name, span)?;
        let mut tags = self.span_tags.clone();
        let mut fields: BTreeMap<&str, Field> = BTreeMap::new();
        let mut facts = self.writer.clone();
        for (key, value) in pairs(&span.attributes) {
            match place(key, value, name, Some(kind))? {
                Some((k, Placed::Tag(v))) => {
                    tags.insert(k, v.clone());
                    facts.tags.insert(k, v);
                }
                Some((k, Placed::SpanTag(v))) => {
                    tags.insert(k, v);
                }
                Some((k, Placed::SpanField(v))) => {
                    fields.insert(k, v);
                }
                Some((k, Placed::WriterTag(v))) => {
                    facts.tags.insert(k, v);
                }
                Some((k, Placed::WriterField(v))) => {
                    facts.fields.insert(k, v);
                }
                Some((_, Placed::Nowhere)) | None => {}
            }
        }
        tags.insert(influx::SPAN_NAME, name.to_owned());
        let sn = match fields.get(attr::SN) {
            Some(Field::Int(sn)) => *sn,
            _ => 0,
        };
        fields.insert(influx::END_TIME, Field::Int(end));
        out.point(influx::SPANS);
        for (k, v) in &tags {
            out.tag(k, v);
        }
        for (k, v) in &fields {
            match v {
                Field::Int(i) => out.int(k, *i),
                Field::Str(s) => out.string(k, s),
            };
        }
        out.end(Some(start));
        Ok(1 + u64::from(layout.update(&facts, start, sn, out)))
    }
}

impl RawLayout {
    /// Merges a span's facts of its writer into what was written of it; writes the writer's
    /// point when that changed it (or it is new). True when written.
    fn update(&mut self, facts: &WriterFacts, time: i64, sn: i64, out: &mut LineWriter) -> bool {
        let ident = [attr::HOST_NAME, attr::SERVICE_INSTANCE_ID, attr::WRITER_ID];
        if !facts.tags.contains_key(attr::WRITER_ID) {
            return false;
        }
        self.key.clear();
        for k in ident {
            self.key
                .push_str(facts.tags.get(k).map_or("", String::as_str));
            self.key.push('\0');
        }
        let merged = match self.written.get(self.key.as_str()) {
            Some(old) => {
                let known = facts.tags.iter().all(|(k, v)| old.tags.get(k) == Some(v))
                    && facts
                        .fields
                        .iter()
                        .all(|(k, v)| old.fields.get(k) == Some(v));
                if known {
                    return false;
                }
                let mut merged = old.clone();
                merged
                    .tags
                    .extend(facts.tags.iter().map(|(k, v)| (*k, v.clone())));
                merged
                    .fields
                    .extend(facts.fields.iter().map(|(k, v)| (*k, v.clone())));
                merged
            }
            None => {
                if self.written.len() >= MAX_WRITER_FACTS {
                    self.written.clear();
                }
                facts.clone()
            }
        };
        merged.write(time, sn, out);
        self.written.insert(self.key.clone(), merged);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::AnyValue;

    fn kv(key: &str, v: Value) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue { value: Some(v) }),
            ..KeyValue::default()
        }
    }

    fn s(v: &str) -> Value {
        Value::StringValue(v.into())
    }

    fn resource() -> ResourcePart {
        ResourcePart::new(&[
            kv(attr::SERVICE_NAME, s("ddshark")),
            kv(attr::HOST_NAME, s("a")),
            kv(attr::SERVICE_INSTANCE_ID, s("1-2")),
            kv(attr::CAPTURE_INTERFACE, s("a.pcap")),
            kv("telemetry.sdk.name", s("opentelemetry")),
            kv("deployment", s("lab")),
        ])
        .unwrap()
    }

    fn data(start: u64, sn: i64, pcp: i64) -> Span {
        Span {
            trace_id: vec![0xab; 16],
            span_id: vec![0x01, 0x02, 0, 0, 0, 0, 0, 0xff],
            name: "DATA".into(),
            start_time_unix_nano: start,
            end_time_unix_nano: start + 500,
            attributes: vec![
                kv(attr::WRITER_ID, s("0110aa")),
                kv(attr::SLOT, Value::IntValue(0)),
                kv(attr::DOMAIN_ID, Value::IntValue(7)),
                kv(attr::SN, Value::IntValue(sn)),
                kv(attr::EXPORT_SEQ, Value::IntValue(sn)),
                kv(attr::PAYLOAD_SIZE, Value::IntValue(64)),
                kv(attr::SAMPLE_SIZE, Value::IntValue(64)),
                kv(attr::FRAGMENT_STARTING_NUM, Value::IntValue(0)),
                kv(attr::FRAGS_IN_SUBMESSAGE, Value::IntValue(1)),
                kv(attr::PCP, Value::IntValue(pcp)),
                kv(attr::VENDOR_ID, s("0x0110")),
                kv(attr::VENDOR_NAME, s("Cyclone DDS")),
                kv(attr::SRC, s("10.0.0.1:7410")),
                kv(attr::FRAME, Value::IntValue(3)),
                kv(attr::TOPIC_NAME, s("rt/a b,c")),
                kv(attr::TYPE_NAME, s("T")),
                kv(attr::TRAFFIC_TYPE, s("user")),
            ],
            ..Span::default()
        }
    }

    #[test]
    fn a_data_span_becomes_a_lean_point_and_its_writer_one_point_once() {
        let (res, mut layout) = (resource(), RawLayout::default());
        let mut out = LineWriter::default();
        assert_eq!(
            res.point(SpanKind::Data, &data(1_000, 42, 5), &mut layout, &mut out),
            Ok(2)
        );
        assert_eq!(
            out.buf,
            "spans,host.name=a,pcp=5,service.instance.id=1-2,slot=0,span.name=DATA,\
             topic_name=rt/a\\ b\\,c,writer_id=0110aa \
             end_time_unix_nano=1500i,export_seq=42i,payload_size=64i,sn=42i 1000\n\
             dds_writers,capture.interface=a.pcap,domain_id=7,host.name=a,\
             service.instance.id=1-2,service.name=ddshark,topic_name=rt/a\\ b\\,c,\
             traffic_type=user,type_name=T,vendor_id=0x0110,vendor_name=Cyclone\\ DDS,\
             writer_id=0110aa attributes=\"{\\\"deployment\\\":\\\"lab\\\"}\",sn=42i 1000\n"
        );
        // the same facts again, on another priority (a frame's, not a writer's): the span's
        // point only, with its own PCP
        let mut out = LineWriter::default();
        assert_eq!(
            res.point(SpanKind::Data, &data(2_000, 43, 6), &mut layout, &mut out),
            Ok(1)
        );
        assert!(out.buf.starts_with("spans,host.name=a,pcp=6,") && out.buf.lines().count() == 1);
        // a fact changed: the writer's point again, with it
        let mut span = data(3_000, 44, 6);
        for a in &mut span.attributes {
            if a.key == attr::TYPE_NAME {
                *a = kv(attr::TYPE_NAME, s("T2"));
            }
        }
        let mut out = LineWriter::default();
        assert_eq!(
            res.point(SpanKind::Data, &span, &mut layout, &mut out),
            Ok(2)
        );
        assert!(out.buf.contains(",type_name=T2,"), "{}", out.buf);
        assert!(out.buf.ends_with(",sn=44i 3000\n"), "{}", out.buf);
        // InfluxDB did not take a batch: the facts are written again
        layout.forget_handle().store(true, Ordering::Relaxed);
        layout.start();
        let mut out = LineWriter::default();
        assert_eq!(
            res.point(SpanKind::Data, &data(4_000, 45, 6), &mut layout, &mut out),
            Ok(2)
        );
        assert_eq!(layout.writers(), 1);
    }

    #[test]
    fn a_writer_point_without_facts_in_fields_still_has_a_field() {
        let res = ResourcePart::new(&[kv(attr::HOST_NAME, s("a"))]).unwrap();
        let span = data(1_000, 7, 0);
        let mut out = LineWriter::default();
        let n = res.point(SpanKind::Data, &span, &mut RawLayout::default(), &mut out);
        assert_eq!(n, Ok(2));
        let writer = out.buf.lines().nth(1).unwrap();
        assert!(
            writer.starts_with("dds_writers,") && writer.ends_with(" sn=7i 1000"),
            "{writer}"
        );
    }

    #[test]
    fn a_known_attribute_of_another_type_is_refused() {
        let res = ResourcePart::new(&[kv(attr::HOST_NAME, s("a"))]).unwrap();
        let span = Span {
            name: "DATA".into(),
            start_time_unix_nano: 1,
            end_time_unix_nano: 1,
            attributes: vec![kv(attr::SN, s("42"))],
            ..Span::default()
        };
        let mut out = LineWriter::default();
        let e = res
            .point(SpanKind::Data, &span, &mut RawLayout::default(), &mut out)
            .unwrap_err();
        assert!(matches!(e, SpanError::WrongType { key: "sn", .. }), "{e}");
        assert!(out.buf.is_empty());
        assert!(ResourcePart::new(&[kv(attr::HOST_NAME, Value::IntValue(1))]).is_err());
    }

    #[test]
    fn absurd_times_are_refused() {
        let res = ResourcePart::new(&[]).unwrap();
        let span = Span {
            name: "DATA".into(),
            start_time_unix_nano: u64::MAX,
            end_time_unix_nano: 1,
            ..Span::default()
        };
        let mut out = LineWriter::default();
        assert!(matches!(
            res.point(SpanKind::Data, &span, &mut RawLayout::default(), &mut out),
            Err(SpanError::AbsurdTime { .. })
        ));
    }
}
