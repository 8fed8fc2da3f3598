//! The raw points of an export: every span the join takes (DATA, DATA_FRAG, SAMPLE) as the
//! `spans` point Telegraf's `inputs.opentelemetry` + `processors.converter` wrote from it
//! (deploy/telegraf/telegraf.conf before the join wrote InfluxDB itself), so every query
//! and panel keeps its answer (docs/span-schema.md, "In InfluxDB: a bounded schema"):
//!
//! - measurement `spans`, time = the span's start (ns);
//! - tags: the resource's `service.name`, `host.name`, `service.instance.id`, the span
//!   attributes `span_schema` stores as tags (ints in decimal), `span.name`; empty values
//!   left out;
//! - fields: the attributes it stores as fields (typed as the schema says),
//!   `end_time_unix_nano`, `trace_id` and `span_id` (lower-case hex), `parent_span_id`
//!   when the span has one; any other attribute (an `--otlp-resource` of ddshark's) in one
//!   JSON string field `attributes`, as Telegraf put it; `telemetry.sdk.*` left out.
//!
//! A known attribute of the wrong type is refused ([`SpanError::WrongType`]): written as it
//! came, it would change its field's type, and InfluxDB refuses the whole batch then.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use opentelemetry_proto::tonic::common::v1::{any_value::Value, KeyValue};
use opentelemetry_proto::tonic::trace::v1::Span;
use span_schema::{
    influx, Stored, ValueType, RESOURCE_ATTRIBUTES, SDK_RESOURCE_ATTRIBUTES, SPAN_ATTRIBUTES,
};

use super::{times, type_name, SpanError};
use crate::LineWriter;

/// The JSON field of attributes the schema does not name (Telegraf's name for it).
pub const ATTRIBUTES_FIELD: &str = "attributes";

/// What a resource gives every point of its spans.
#[derive(Debug, Default)]
pub struct ResourcePart {
    tags: BTreeMap<String, String>,
    fields: BTreeMap<String, Field>,
    extra: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq)]
enum Field {
    Int(i64),
    Str(String),
}

/// Where an attribute goes.
fn place(
    key: &str,
    value: &Value,
    span: &'static str,
    tags: &mut BTreeMap<String, String>,
    fields: &mut BTreeMap<String, Field>,
    extra: &mut serde_json::Map<String, serde_json::Value>,
) -> Result<(), SpanError> {
    if SDK_RESOURCE_ATTRIBUTES.contains(&key) {
        return Ok(());
    }
    let (key_static, stored, ty) = if let Some(a) = SPAN_ATTRIBUTES.iter().find(|a| a.key == key) {
        (a.key, a.stored, a.ty)
    } else if let Some(k) = RESOURCE_ATTRIBUTES.iter().find(|k| **k == key) {
        (*k, Stored::Tag, ValueType::Str)
    } else {
        if let Some(v) = json(value) {
            extra.insert(key.to_owned(), v);
        }
        return Ok(());
    };
    let wrong = |expected: &'static str| SpanError::WrongType {
        span,
        key: key_static,
        expected,
        found: type_name(value),
    };
    match (ty, value) {
        (ValueType::Str, Value::StringValue(s)) => {
            if s.contains(['\n', '\r']) {
                return Err(SpanError::BadText {
                    span,
                    key: key_static,
                });
            }
            match stored {
                Stored::Tag => {
                    tags.insert(key.to_owned(), s.clone());
                }
                Stored::Field => {
                    fields.insert(key.to_owned(), Field::Str(s.clone()));
                }
            }
        }
        (ValueType::Int, Value::IntValue(v)) => match stored {
            Stored::Tag => {
                tags.insert(key.to_owned(), v.to_string());
            }
            Stored::Field => {
                fields.insert(key.to_owned(), Field::Int(*v));
            }
        },
        (ValueType::Str, _) => return Err(wrong("a string")),
        (ValueType::Int, _) => return Err(wrong("an int")),
    }
    Ok(())
}

/// A scalar attribute as JSON (numbers as Telegraf's JSON field had them); others: None.
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

impl ResourcePart {
    /// The resource's attributes; an error refuses every span of it.
    pub fn new(attrs: &[KeyValue]) -> Result<ResourcePart, SpanError> {
        let mut part = ResourcePart::default();
        for (key, value) in pairs(attrs) {
            place(
                key,
                value,
                "resource",
                &mut part.tags,
                &mut part.fields,
                &mut part.extra,
            )?;
        }
        Ok(part)
    }

    /// Appends the span's point to `out`, or nothing and why not.
    pub fn point(
        &self,
        name: &'static str,
        span: &Span,
        out: &mut LineWriter,
    ) -> Result<(), SpanError> {
        let (start, end) = times(name, span)?;
        let mut tags = self.tags.clone();
        let mut fields = self.fields.clone();
        let mut extra = self.extra.clone();
        for (key, value) in pairs(&span.attributes) {
            place(key, value, name, &mut tags, &mut fields, &mut extra)?;
        }
        tags.insert(influx::SPAN_NAME.to_owned(), name.to_owned());
        fields.insert(influx::END_TIME.to_owned(), Field::Int(end));
        fields.insert(influx::TRACE_ID.to_owned(), Field::Str(hex(&span.trace_id)));
        fields.insert(influx::SPAN_ID.to_owned(), Field::Str(hex(&span.span_id)));
        if !span.parent_span_id.is_empty() {
            fields.insert(
                "parent_span_id".to_owned(),
                Field::Str(hex(&span.parent_span_id)),
            );
        }
        if !extra.is_empty() {
            let text = serde_json::Value::Object(extra).to_string();
            fields.insert(ATTRIBUTES_FIELD.to_owned(), Field::Str(text));
        }
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
        Ok(())
    }
}

/// Bytes as lower-case hex (OTLP ids as Telegraf wrote them).
fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len().saturating_mul(2));
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::AnyValue;
    use span_schema::attr;

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

    #[test]
    fn a_data_span_becomes_telegrafs_point() {
        let res = ResourcePart::new(&[
            kv(attr::SERVICE_NAME, s("ddshark")),
            kv(attr::HOST_NAME, s("a")),
            kv(attr::SERVICE_INSTANCE_ID, s("1-2")),
            kv(attr::CAPTURE_INTERFACE, s("a.pcap")),
            kv("telemetry.sdk.name", s("opentelemetry")),
            kv("deployment", s("lab")),
        ])
        .unwrap();
        let span = Span {
            trace_id: vec![0xab; 16],
            span_id: vec![0x01, 0x02, 0, 0, 0, 0, 0, 0xff],
            name: "DATA".into(),
            start_time_unix_nano: 1_000,
            end_time_unix_nano: 1_500,
            attributes: vec![
                kv(attr::WRITER_ID, s("0110aa")),
                kv(attr::SLOT, Value::IntValue(0)),
                kv(attr::DOMAIN_ID, Value::IntValue(7)),
                kv(attr::SN, Value::IntValue(42)),
                kv(attr::SRC, s("10.0.0.1:7410")),
                kv(attr::TOPIC_NAME, s("rt/a b,c")),
            ],
            ..Span::default()
        };
        let mut out = LineWriter::default();
        res.point("DATA", &span, &mut out).unwrap();
        assert_eq!(
            out.buf,
            "spans,capture.interface=a.pcap,domain_id=7,host.name=a,service.instance.id=1-2,\
             service.name=ddshark,slot=0,span.name=DATA,topic_name=rt/a\\ b\\,c,writer_id=0110aa \
             attributes=\"{\\\"deployment\\\":\\\"lab\\\"}\",end_time_unix_nano=1500i,sn=42i,\
             span_id=\"01020000000000ff\",src=\"10.0.0.1:7410\",\
             trace_id=\"abababababababababababababababab\" 1000\n"
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
        let e = res.point("DATA", &span, &mut out).unwrap_err();
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
            res.point("DATA", &span, &mut out),
            Err(SpanError::AbsurdTime { .. })
        ));
    }
}
