//! ddshark's OTLP metrics and logs as InfluxDB line protocol, in exactly the layout Telegraf
//! 1.39.3 wrote them before the join took them (its `inputs.opentelemetry` with
//! `metrics_schema = "prometheus-v1"` and `log_record_dimensions = ["service.name",
//! "host.name"]`, i.e. influxdb-observability's otel2influx v0.5.12, and its two
//! `outputs.influxdb_v2` with `tagexclude = ["telemetry.sdk.*"]`), so every dashboard panel
//! and Flux query over them keeps its answer:
//!
//! - a metric data point: measurement = the metric's name; tags = the resource's
//!   attributes, the scope's name and version (`otel.library.name`, `otel.library.version`)
//!   and attributes, the point's attributes (each as pdata's `AsString` writes it); fields
//!   `gauge` (a gauge, or a sum that is not monotonic and cumulative), `counter` (a
//!   monotonic cumulative sum), `count`/`sum`/`min`/`max` and one cumulative count per
//!   bucket bound (`+Inf` last) of a histogram, `count`/`sum` and one per quantile of a
//!   summary, `start_time_unix_nano` when the point has a start; time = the point's time.
//!   An exemplar with a trace is a `NAME_exemplar` point (its attributes, `trace_id`,
//!   `span_id` as tags, `gauge`).
//! - a log record: measurement `logs`; tags `service.name` and `host.name` (wherever they
//!   are: resource, scope or record attributes), `trace_id`/`span_id` when it has both;
//!   fields `body`, `severity_number`, `severity_text`, `observed_time_unix_nano`, every
//!   other attribute in the JSON string `attributes` (as Go's encoding/json writes it),
//!   `dropped_attributes_count`; time = the record's time (the arrival time without one,
//!   as Telegraf stamped it).
//! - `telemetry.sdk.*` tags left out; the metrics named `ddshark.*` or `dds_*` go to the long
//!   bucket, everything else (the logs) to the raw bucket.
//!
//! The lines are the bytes Telegraf's influx serializer sent for the same input (tags
//! sorted and escaped as it escaped them, a trailing backslash and empty tags dropped, NaN
//! and infinite fields left out, unsigned fields as integers), so InfluxDB stores the same
//! series, fields and values. Where Telegraf refused a whole request for one bad point
//! (no timestamp, an exponential histogram, buckets that do not match their bounds), only
//! that point is refused here, counted and named.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use opentelemetry_proto::tonic::common::v1::{any_value::Value, AnyValue, KeyValue};

mod json;
mod logs;
mod metrics;

pub use logs::{convert_logs, LOG_RECORD_DIMENSIONS};
pub use metrics::convert_metrics;

/// The tags Telegraf's outputs left out (`tagexclude = ["telemetry.sdk.*"]`).
const EXCLUDED_TAG_PREFIX: &str = "telemetry.sdk.";

/// The measurement-name prefixes Telegraf's `long` output took (`namepass`); the rest went
/// to its `raw` output.
pub const LONG_BUCKET_PREFIXES: [&str; 2] = ["ddshark.", "dds_"];

/// Why a data point or log record was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TelemetryError {
    #[error("metric {metric:?}: a data point without a timestamp")]
    NoTimestamp { metric: String },
    #[error("metric {metric:?}: a timestamp beyond 2262 ({ns} ns)")]
    AbsurdTime { metric: String, ns: u64 },
    #[error("metric {metric:?}: exponential histograms are not stored (as Telegraf's prometheus-v1 schema did not)")]
    ExponentialHistogram { metric: String },
    #[error("metric {metric:?}: {counts} histogram bucket counts for {bounds} explicit bounds")]
    BucketMismatch {
        metric: String,
        counts: usize,
        bounds: usize,
    },
    #[error("{what} {name:?}: no field InfluxDB can store (NaN, infinite or none)")]
    NoField { what: &'static str, name: String },
    #[error("an empty metric name")]
    NoName,
}

/// What an export request makes: line protocol per bucket, and what was refused.
#[derive(Debug, Default)]
pub struct TelemetryLines {
    pub raw: String,
    pub raw_points: u64,
    pub long: String,
    pub long_points: u64,
    /// Data points or log records refused; the first error says why.
    pub rejected: u64,
    pub first_error: Option<TelemetryError>,
}

impl TelemetryLines {
    pub fn points(&self) -> u64 {
        self.raw_points.saturating_add(self.long_points)
    }

    fn reject(&mut self, error: TelemetryError) {
        self.rejected = self.rejected.saturating_add(1);
        if self.first_error.is_none() {
            self.first_error = Some(error);
        }
    }

    /// Writes `point` as Telegraf's influx serializer did, to the bucket its name routes it
    /// to; a point with no field it could write is refused.
    fn write(&mut self, point: &Point, what: &'static str) {
        let long = LONG_BUCKET_PREFIXES
            .iter()
            .any(|p| point.measurement.starts_with(p));
        let (buf, points) = if long {
            (&mut self.long, &mut self.long_points)
        } else {
            (&mut self.raw, &mut self.raw_points)
        };
        let start = buf.len();
        if point.serialize(buf) {
            *points = points.saturating_add(1);
        } else {
            buf.truncate(start);
            self.reject(TelemetryError::NoField {
                what,
                name: point.measurement.clone(),
            });
        }
    }
}

/// A field value, as Telegraf held it.
#[derive(Debug, Clone, PartialEq)]
enum Field {
    Float(f64),
    Int(i64),
    Uint(u64),
    Str(String),
}

/// One point before it is written (maps: the last value of a key wins, as in Go's maps).
#[derive(Debug, Clone, Default)]
struct Point {
    measurement: String,
    tags: BTreeMap<String, String>,
    fields: BTreeMap<String, Field>,
    time: i64,
}

impl Point {
    /// The line; false (and a partial line the caller drops) when no field could be
    /// written or the name is empty.
    fn serialize(&self, out: &mut String) -> bool {
        let name = escape(&self.measurement, NAME_ESCAPES);
        if name.is_empty() {
            return false;
        }
        out.push_str(&name);
        for (key, value) in &self.tags {
            if key.starts_with(EXCLUDED_TAG_PREFIX) {
                continue;
            }
            let key = escape(key, ESCAPES);
            let value = escape(value, ESCAPES);
            // (line protocol cannot end a key or value with a backslash, nor have them empty)
            let (key, value) = (key.trim_end_matches('\\'), value.trim_end_matches('\\'));
            if key.is_empty() || value.is_empty() {
                continue;
            }
            let _ = write!(out, ",{key}={value}");
        }
        let mut first = true;
        for (key, value) in &self.fields {
            let key = escape(key, ESCAPES);
            if key.is_empty() {
                continue;
            }
            let value = match value {
                Field::Float(v) if !v.is_finite() => continue,
                Field::Float(v) => format!("{v}"),
                Field::Int(v) => format!("{v}i"),
                Field::Uint(v) => format!("{}i", crate::as_i64(*v)),
                Field::Str(s) => format!("\"{}\"", string_field_escape(s)),
            };
            out.push(if first { ' ' } else { ',' });
            first = false;
            let _ = write!(out, "{key}={value}");
        }
        if first {
            return false;
        }
        let _ = writeln!(out, " {}", self.time);
        true
    }
}

/// What Telegraf escaped in tag keys, tag values and field keys (`\t` → `\\t` …, and
/// `,`, ` `, `=` with a backslash); a backslash itself is not escaped.
const ESCAPES: &[char] = &['\t', '\n', '\x0c', '\r', ',', ' ', '='];
/// What it escaped in measurement names (no `=`).
const NAME_ESCAPES: &[char] = &['\t', '\n', '\x0c', '\r', ',', ' '];

fn escape(text: &str, which: &[char]) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            c if !which.contains(&c) => out.push(c),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\x0c' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c => {
                out.push('\\');
                out.push(c);
            }
        }
    }
    out
}

fn string_field_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A timestamp as InfluxDB takes it; beyond `i64` (2262) it is refused.
fn time_ns(ns: u64, metric: &str) -> Result<i64, TelemetryError> {
    i64::try_from(ns).map_err(|_| TelemetryError::AbsurdTime {
        metric: metric.to_owned(),
        ns,
    })
}

/// Attributes as (key, value) pairs; those with an empty key are skipped (as otel2influx
/// skips them), a key without a value is pdata's empty value.
fn pairs(attrs: &[KeyValue]) -> impl Iterator<Item = (&str, Option<&Value>)> {
    attrs
        .iter()
        .filter(|kv| !kv.key.is_empty())
        .map(|kv| (kv.key.as_str(), any(kv.value.as_ref())))
}

fn any(value: Option<&AnyValue>) -> Option<&Value> {
    value.and_then(|v| v.value.as_ref())
}

/// pdata's `Value.AsString`.
fn as_string(value: Option<&Value>) -> String {
    match value {
        None => String::new(),
        Some(Value::StringValue(s)) => s.clone(),
        Some(Value::BoolValue(b)) => b.to_string(),
        Some(Value::IntValue(i)) => i.to_string(),
        Some(Value::DoubleValue(d)) => json::float_as_string(*d),
        Some(Value::BytesValue(b)) => json::base64(b),
        Some(v @ (Value::ArrayValue(_) | Value::KvlistValue(_))) => {
            let mut out = String::new();
            json::write_value(&mut out, Some(v), false);
            out
        }
        // (an index into a profile's string table: not a value outside profiles)
        Some(Value::StringValueStrindex(i)) => i.to_string(),
    }
}

/// Ids as pdata prints them: lower-case hex, or None when empty or all zero.
fn hex_id(bytes: &[u8]) -> Option<String> {
    if bytes.iter().all(|b| *b == 0) {
        return None;
    }
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    Some(out)
}

#[cfg(test)]
mod tests;
