//! OTLP trace exports to the join: each SAMPLE and DATA_FRAG span of an
//! `ExportTraceServiceRequest` becomes the same [`SampleSpan`] / [`FragSpan`] its line
//! protocol line does ([`crate::feed_line`]), with the attribute names of `span_schema`.
//!
//! The request comes from the network: every value is checked. A span the join cannot use
//! is refused with a [`SpanError`] naming what is wrong (wrong attribute type, a missing
//! `writer_id` or `sn`, absurd timestamps, an unknown span name); DATA spans (which ddshark
//! exports beside them and the join does not read) are skipped. Each accepted span can be
//! written as the line its line-protocol twin is ([`journal_line`]), which is how the
//! driver journals what it acknowledges.

use std::sync::OnceLock;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value::Value, KeyValue};
use opentelemetry_proto::tonic::trace::v1::Span;
use span_schema::{attr, influx, SpanKind};

use crate::{FragSpan, LineWriter, SampleSpan, SpanJoin};

/// The span names ddshark exports that the join skips (it joins only `JOIN_SPAN_NAMES`).
pub const SKIPPED_SPAN_NAMES: [&str; 1] = ["DATA"];

/// A span longer than this (end − start) is refused as absurd: a SAMPLE span stays open
/// while its writer re-sends the sample, which takes seconds, not a day.
pub const MAX_SPAN_NS: i64 = 86_400_000_000_000;

/// Slots above this are refused (a slot numbers one writer's spans that start at the same
/// capture time on a host: the DATA_FRAGs of one datagram, at most ~1,600 in 64 KiB).
pub const MAX_SLOT: i64 = 4095;

const SAMPLE: &str = span_schema::JOIN_SPAN_NAMES[0];
const DATA_FRAG: &str = span_schema::JOIN_SPAN_NAMES[1];

/// Why a span (or every span of a resource) was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpanError {
    #[error("a resource without the string attribute `{key}`: its spans name no host")]
    NoHost { key: &'static str },
    #[error("span name {name:?} is none the join takes (SAMPLE, DATA_FRAG; DATA is skipped)")]
    UnknownName { name: String },
    #[error("{span} span without the attribute `{key}`")]
    Missing {
        span: &'static str,
        key: &'static str,
    },
    #[error("{span} span: attribute `{key}` is {found}, not {expected}")]
    WrongType {
        span: &'static str,
        key: &'static str,
        expected: &'static str,
        found: &'static str,
    },
    #[error("{span} span: attribute `{key}` is empty or holds a line break")]
    BadText {
        span: &'static str,
        key: &'static str,
    },
    #[error("{span} span: attribute `{key}` = {value} is out of range")]
    OutOfRange {
        span: &'static str,
        key: &'static str,
        value: i64,
    },
    #[error("{span} span: absurd timestamps (start {start} ns, end {end} ns: zero, beyond 2262, ending before the start or lasting more than a day)")]
    AbsurdTime {
        span: &'static str,
        start: u64,
        end: u64,
    },
}

/// A span the join takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinSpan<'a> {
    Sample(SampleSpan<'a>),
    Frag(FragSpan<'a>),
}

impl JoinSpan<'_> {
    pub fn feed(&self, join: &mut SpanJoin) {
        match self {
            JoinSpan::Sample(s) => join.add_sample(s),
            JoinSpan::Frag(f) => join.add_frag(f),
        }
    }
}

/// What a request holds for the join.
#[derive(Debug, Default)]
pub struct Converted<'a> {
    pub spans: Vec<JoinSpan<'a>>,
    /// DATA spans (not read by the join).
    pub skipped: u64,
    /// Spans refused; the first error says why.
    pub refused: u64,
    pub first_error: Option<SpanError>,
    /// Raw points written (with [`convert_with_raw`]): one per span taken or skipped, and
    /// one per writer whose facts a span changed.
    pub raw_points: u64,
}

impl Converted<'_> {
    fn refuse(&mut self, error: SpanError, spans: u64) {
        // A resource without a host name but also without spans refuses nothing.
        if spans == 0 {
            return;
        }
        self.refused = self.refused.saturating_add(spans);
        if self.first_error.is_none() {
            self.first_error = Some(error);
        }
    }
}

/// An export request's protobuf body (as OTLP/HTTP carries it, and gRPC inside its frame).
pub fn decode(body: &[u8]) -> Result<ExportTraceServiceRequest, prost::DecodeError> {
    prost::Message::decode(body)
}

/// Every span of the request, checked and converted (in order).
pub fn convert(request: &ExportTraceServiceRequest) -> Converted<'_> {
    convert_with_raw(request, None)
}

/// [`convert`], and every span it does not refuse (DATA included) as its raw point
/// ([`raw`]) in `raw`'s writer, laid out by its [`raw::RawLayout`] (a span whose raw point
/// cannot be made is refused).
pub fn convert_with_raw<'a>(
    request: &'a ExportTraceServiceRequest,
    mut raw: Option<(&mut raw::RawLayout, &mut LineWriter)>,
) -> Converted<'a> {
    if let Some((layout, _)) = raw.as_mut() {
        layout.start();
    }
    let mut out = Converted::default();
    for rs in &request.resource_spans {
        let spans = rs.scope_spans.iter().flat_map(|ss| ss.spans.iter());
        let attrs = rs.resource.as_ref().map_or(&[][..], |r| &r.attributes[..]);
        let host = match text(attrs, "resource", attr::HOST_NAME) {
            Ok(Some(host)) => host,
            Ok(None) => {
                let n = spans.count() as u64;
                out.refuse(
                    SpanError::NoHost {
                        key: attr::HOST_NAME,
                    },
                    n,
                );
                continue;
            }
            Err(e) => {
                out.refuse(e, spans.count() as u64);
                continue;
            }
        };
        let part = match raw.is_some().then(|| raw::ResourcePart::new(attrs)) {
            Some(Err(e)) => {
                out.refuse(e, spans.count() as u64);
                continue;
            }
            Some(Ok(part)) => Some(part),
            None => None,
        };
        for span in spans {
            let taken = match convert_span(host, span) {
                Ok(taken) => taken,
                Err(e) => {
                    out.refuse(e, 1);
                    continue;
                }
            };
            if let (Some(part), Some((layout, lines))) = (&part, raw.as_mut()) {
                let kind = match &taken {
                    Some(JoinSpan::Sample(_)) => SpanKind::Sample,
                    Some(JoinSpan::Frag(_)) => SpanKind::DataFrag,
                    None => SpanKind::Data,
                };
                match part.point(kind, span, layout, lines) {
                    Ok(points) => out.raw_points = out.raw_points.saturating_add(points),
                    Err(e) => {
                        out.refuse(e, 1);
                        continue;
                    }
                }
            }
            match taken {
                Some(s) => out.spans.push(s),
                None => out.skipped = out.skipped.saturating_add(1),
            }
        }
    }
    out
}

/// One span of `host`'s: None for a span the join skips.
pub fn convert_span<'a>(host: &'a str, span: &'a Span) -> Result<Option<JoinSpan<'a>>, SpanError> {
    let name: &'static str = match span.name.as_str() {
        SAMPLE => SAMPLE,
        DATA_FRAG => DATA_FRAG,
        n if SKIPPED_SPAN_NAMES.contains(&n) => return Ok(None),
        n => {
            return Err(SpanError::UnknownName {
                name: n.chars().take(64).collect(),
            })
        }
    };
    let (start, end) = times(name, span)?;
    let a = &span.attributes[..];
    let need_int =
        |key: &'static str| int(a, name, key)?.ok_or(SpanError::Missing { span: name, key });
    let writer = text(a, name, attr::WRITER_ID)?.ok_or(SpanError::Missing {
        span: name,
        key: attr::WRITER_ID,
    })?;
    let sn = need_int(attr::SN)?;
    let slot = need_int(attr::SLOT)?;
    let slot = slot_text(slot).ok_or(SpanError::OutOfRange {
        span: name,
        key: attr::SLOT,
        value: slot,
    })?;
    let topic = text(a, name, attr::TOPIC_NAME)?;
    if name == SAMPLE {
        Ok(Some(JoinSpan::Sample(SampleSpan {
            host,
            writer,
            topic,
            slot,
            sn,
            span_start: start,
            span_end: end,
            start_ns: need_int(attr::START_NS)?,
            fragments_missing: need_int(attr::FRAGMENTS_MISSING)?,
            sample_size: need_int(attr::SAMPLE_SIZE)?,
            repairs: need_int(attr::REPAIRS)?,
            submessages: need_int(attr::SUBMESSAGES)?,
            src_ip: text(a, name, attr::SRC_IP)?,
            src_mac: int(a, name, attr::SRC_MAC)?,
            announced_ips: text(a, name, attr::ANNOUNCED_IPS)?,
        })))
    } else {
        Ok(Some(JoinSpan::Frag(FragSpan {
            host,
            writer,
            topic,
            slot,
            sn,
            start,
            end,
            fragment_starting_num: need_int(attr::FRAGMENT_STARTING_NUM)?,
            frags_in_submessage: need_int(attr::FRAGS_IN_SUBMESSAGE)?,
            fragment_size: need_int(attr::FRAGMENT_SIZE)?,
            sample_size: need_int(attr::SAMPLE_SIZE)?,
        })))
    }
}

/// The span's start and end in ns, if sane.
fn times(name: &'static str, span: &Span) -> Result<(i64, i64), SpanError> {
    let (s, e) = (span.start_time_unix_nano, span.end_time_unix_nano);
    let absurd = SpanError::AbsurdTime {
        span: name,
        start: s,
        end: e,
    };
    let (Ok(start), Ok(end)) = (i64::try_from(s), i64::try_from(e)) else {
        return Err(absurd);
    };
    if start <= 0 || end < start || end.saturating_sub(start) > MAX_SPAN_NS {
        return Err(absurd);
    }
    Ok((start, end))
}

fn value<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a Value> {
    attrs
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::StringValue(_) => "a string",
        Value::BoolValue(_) => "a bool",
        Value::IntValue(_) => "an int",
        Value::DoubleValue(_) => "a double",
        Value::ArrayValue(_) => "an array",
        Value::KvlistValue(_) => "a key-value list",
        Value::BytesValue(_) => "bytes",
        Value::StringValueStrindex(_) => "a string index",
    }
}

/// A string attribute (None when absent); empty or multi-line text is refused, as it
/// would not survive the journal's line protocol.
fn text<'a>(
    attrs: &'a [KeyValue],
    span: &'static str,
    key: &'static str,
) -> Result<Option<&'a str>, SpanError> {
    match value(attrs, key) {
        None => Ok(None),
        Some(Value::StringValue(s)) => {
            if s.is_empty() || s.contains(['\n', '\r']) {
                Err(SpanError::BadText { span, key })
            } else {
                Ok(Some(s))
            }
        }
        Some(other) => Err(SpanError::WrongType {
            span,
            key,
            expected: "a string",
            found: type_name(other),
        }),
    }
}

/// An int attribute (None when absent).
fn int(
    attrs: &[KeyValue],
    span: &'static str,
    key: &'static str,
) -> Result<Option<i64>, SpanError> {
    match value(attrs, key) {
        None => Ok(None),
        Some(Value::IntValue(v)) => Ok(Some(*v)),
        Some(other) => Err(SpanError::WrongType {
            span,
            key,
            expected: "an int",
            found: type_name(other),
        }),
    }
}

/// A slot as the text its line-protocol tag holds (Telegraf writes the int in decimal).
fn slot_text(slot: i64) -> Option<&'static str> {
    static SLOTS: OnceLock<Vec<String>> = OnceLock::new();
    let slots = SLOTS.get_or_init(|| (0..=MAX_SLOT).map(|s| s.to_string()).collect());
    usize::try_from(slot)
        .ok()
        .and_then(|i| slots.get(i))
        .map(String::as_str)
}

/// The line-protocol line the span arrives as through Telegraf (only what the join reads):
/// `feed_line` of it feeds the join what [`JoinSpan::feed`] does.
pub fn journal_line(span: &JoinSpan<'_>, out: &mut LineWriter) {
    match span {
        JoinSpan::Sample(s) => {
            out.point(influx::SPANS)
                .tag(influx::SPAN_NAME, SAMPLE)
                .tag(attr::HOST_NAME, s.host)
                .tag(attr::SLOT, s.slot)
                .tag(attr::TOPIC_NAME, s.topic.unwrap_or(""))
                .tag(attr::WRITER_ID, s.writer)
                .int(influx::END_TIME, s.span_end)
                .int(attr::SN, s.sn)
                .int(attr::START_NS, s.start_ns)
                .int(attr::FRAGMENTS_MISSING, s.fragments_missing)
                .int(attr::SAMPLE_SIZE, s.sample_size)
                .int(attr::REPAIRS, s.repairs)
                .int(attr::SUBMESSAGES, s.submessages);
            if let Some(ip) = s.src_ip {
                out.string(attr::SRC_IP, ip);
            }
            if let Some(mac) = s.src_mac {
                out.int(attr::SRC_MAC, mac);
            }
            if let Some(ips) = s.announced_ips {
                out.string(attr::ANNOUNCED_IPS, ips);
            }
            out.end(Some(s.span_start));
        }
        JoinSpan::Frag(f) => {
            out.point(influx::SPANS)
                .tag(influx::SPAN_NAME, DATA_FRAG)
                .tag(attr::HOST_NAME, f.host)
                .tag(attr::SLOT, f.slot)
                .tag(attr::TOPIC_NAME, f.topic.unwrap_or(""))
                .tag(attr::WRITER_ID, f.writer)
                .int(influx::END_TIME, f.end)
                .int(attr::SN, f.sn)
                .int(attr::FRAGMENT_STARTING_NUM, f.fragment_starting_num)
                .int(attr::FRAGS_IN_SUBMESSAGE, f.frags_in_submessage)
                .int(attr::FRAGMENT_SIZE, f.fragment_size)
                .int(attr::SAMPLE_SIZE, f.sample_size)
                .end(Some(f.start));
        }
    }
}

pub mod raw;

#[cfg(test)]
pub(crate) mod tests;
