//! Log records as otel2influx's logs.go wrote them (measurement `logs`).

use std::collections::BTreeMap;

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::logs::v1::LogRecord;

use super::{any, as_string, hex_id, json, pairs, Field, Point, TelemetryLines};

/// The attributes stored as tags (Telegraf's `log_record_dimensions`); every other one goes
/// into the JSON field `attributes`.
pub const LOG_RECORD_DIMENSIONS: [&str; 2] = ["service.name", "host.name"];

const MEASUREMENT: &str = "logs";

/// Every log record of the request, converted; `arrival_ns` stamps a record without a time
/// (as Telegraf stamped it with its clock).
pub fn convert_logs(request: &ExportLogsServiceRequest, arrival_ns: i64) -> TelemetryLines {
    let mut out = TelemetryLines::default();
    for rl in &request.resource_logs {
        let resource = rl.resource.as_ref().map_or(&[][..], |r| &r.attributes[..]);
        for sl in &rl.scope_logs {
            let scope = sl.scope.as_ref().map_or(&[][..], |s| &s.attributes[..]);
            for record in &sl.log_records {
                let point = record_point(resource, scope, record, arrival_ns);
                out.write(&point, "log record");
            }
        }
    }
    out
}

fn record_point(
    resource: &[opentelemetry_proto::tonic::common::v1::KeyValue],
    scope: &[opentelemetry_proto::tonic::common::v1::KeyValue],
    record: &LogRecord,
    arrival_ns: i64,
) -> Point {
    let time = match i64::try_from(record.time_unix_nano) {
        Ok(0) | Err(_) => arrival_ns,
        Ok(t) => t,
    };
    let mut point = Point {
        measurement: MEASUREMENT.into(),
        time,
        ..Point::default()
    };
    let fields = &mut point.fields;
    if let Ok(observed @ 1..) = i64::try_from(record.observed_time_unix_nano) {
        fields.insert("observed_time_unix_nano".into(), Field::Int(observed));
    }
    if let (Some(trace_id), Some(span_id)) = (hex_id(&record.trace_id), hex_id(&record.span_id)) {
        point.tags.insert("trace_id".into(), trace_id);
        point.tags.insert("span_id".into(), span_id);
    }
    if record.severity_number != 0 {
        fields.insert(
            "severity_number".into(),
            Field::Int(i64::from(record.severity_number)),
        );
    }
    if !record.severity_text.is_empty() {
        fields.insert(
            "severity_text".into(),
            Field::Str(record.severity_text.clone()),
        );
    }
    fields.insert(
        "body".into(),
        Field::Str(as_string(any(record.body.as_ref()))),
    );
    let mut dropped = u64::from(record.dropped_attributes_count);
    let mut others: BTreeMap<&str, Option<&Value>> = BTreeMap::new();
    for attrs in [resource, scope, &record.attributes[..]] {
        for (k, v) in pairs(attrs) {
            if LOG_RECORD_DIMENSIONS.contains(&k) {
                point.tags.insert(k.to_owned(), as_string(v));
                others.remove(k);
            } else {
                others.insert(k, v);
            }
        }
    }
    if !others.is_empty() {
        let mut text = String::new();
        if json::write_object(&mut text, others.into_iter(), true) {
            fields.insert("attributes".into(), Field::Str(text));
        } else {
            // (as Go's Marshal failing on a NaN: the record's attributes counted dropped)
            dropped = dropped.saturating_add(record.attributes.len() as u64);
        }
    }
    for key in point.tags.keys() {
        if fields.remove(key).is_some() {
            dropped = dropped.saturating_add(1);
        }
    }
    if dropped > 0 {
        fields.insert("dropped_attributes_count".into(), Field::Uint(dropped));
    }
    point
}
