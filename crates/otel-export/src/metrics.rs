//! Per-topic counters as OTLP metrics: cumulative monotonic sums, one data point
//! per topic, stamped with capture time.
//!
//! | metric | unit | meaning |
//! |---|---|---|
//! | `ddshark.topic.samples` | `{sample}` | samples (DATA, or DATA_FRAG sets) seen |
//! | `ddshark.topic.bytes` | `By` | serialized payload bytes seen |
//! | `ddshark.topic.lost` | `{sample}` | samples never seen (SN gaps not repaired) |
//! | `ddshark.topic.retransmitted` | `{sample}` | samples seen more than once (repairs) |
//!
//! Attributes: `topic_name`, `type_name` (when known), `traffic_type`.
//! The exporter adds its own counters (`ddshark.otlp.spans.*`) to every snapshot.

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{
    metric, number_data_point, AggregationTemporality, Metric, NumberDataPoint, ResourceMetrics,
    ScopeMetrics, Sum,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

use crate::encode::AttrValue;
use crate::schema::{attr, TrafficType};

/// Cumulative counters of one topic since `MetricsSnapshot::start_ns`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicCounters {
    pub topic: String,
    pub type_name: Option<String>,
    pub traffic: TrafficType,
    pub samples: u64,
    pub bytes: u64,
    pub lost: u64,
    pub retransmitted: u64,
}

/// One periodic report, fed by the state with capture timestamps.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetricsSnapshot {
    /// Capture time the counters started from (ns since the epoch).
    pub start_ns: u64,
    /// Capture time of the report.
    pub time_ns: u64,
    pub topics: Vec<TopicCounters>,
}

pub const METRIC_SAMPLES: &str = "ddshark.topic.samples";
pub const METRIC_BYTES: &str = "ddshark.topic.bytes";
pub const METRIC_LOST: &str = "ddshark.topic.lost";
pub const METRIC_RETRANSMITTED: &str = "ddshark.topic.retransmitted";

fn kv(key: &str, v: &AttrValue) -> KeyValue {
    let value = match v {
        AttrValue::Str(s) => any_value::Value::StringValue(s.clone()),
        AttrValue::Int(i) => any_value::Value::IntValue(*i),
        AttrValue::Bool(b) => any_value::Value::BoolValue(*b),
    };
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue { value: Some(value) }),
    }
}

fn str_kv(key: &str, v: &str) -> KeyValue {
    kv(key, &AttrValue::Str(v.to_string()))
}

fn sum(name: &str, unit: &str, description: &str, points: Vec<NumberDataPoint>) -> Metric {
    Metric {
        name: name.to_string(),
        description: description.to_string(),
        unit: unit.to_string(),
        metadata: Vec::new(),
        data: Some(metric::Data::Sum(Sum {
            data_points: points,
            aggregation_temporality: AggregationTemporality::Cumulative as i32,
            is_monotonic: true,
        })),
    }
}

fn point(start_ns: u64, time_ns: u64, value: u64, attributes: Vec<KeyValue>) -> NumberDataPoint {
    NumberDataPoint {
        attributes,
        start_time_unix_nano: start_ns,
        time_unix_nano: time_ns,
        exemplars: Vec::new(),
        flags: 0,
        value: Some(number_data_point::Value::AsInt(
            i64::try_from(value).unwrap_or(i64::MAX),
        )),
    }
}

/// The exporter's own counters, reported with each snapshot.
#[derive(Debug, Clone, Copy, Default)]
pub struct SelfCounters {
    pub enqueued: u64,
    pub dropped: u64,
    pub sent: u64,
    pub failed: u64,
}

/// Encodes a snapshot as an `ExportMetricsServiceRequest`.
pub fn encode_metrics(
    resource: &[(String, AttrValue)],
    scope_name: &str,
    scope_version: &str,
    snap: &MetricsSnapshot,
    own: Option<SelfCounters>,
) -> Vec<u8> {
    let mut samples = Vec::with_capacity(snap.topics.len());
    let mut bytes = Vec::with_capacity(snap.topics.len());
    let mut lost = Vec::with_capacity(snap.topics.len());
    let mut retx = Vec::with_capacity(snap.topics.len());
    for t in &snap.topics {
        let mut a = vec![str_kv(attr::TOPIC_NAME, &t.topic)];
        if let Some(ty) = &t.type_name {
            a.push(str_kv(attr::TYPE_NAME, ty));
        }
        a.push(str_kv(attr::TRAFFIC_TYPE, t.traffic.name()));
        samples.push(point(snap.start_ns, snap.time_ns, t.samples, a.clone()));
        bytes.push(point(snap.start_ns, snap.time_ns, t.bytes, a.clone()));
        lost.push(point(snap.start_ns, snap.time_ns, t.lost, a.clone()));
        retx.push(point(snap.start_ns, snap.time_ns, t.retransmitted, a));
    }
    let mut metrics = vec![
        sum(
            METRIC_SAMPLES,
            "{sample}",
            "Samples seen per topic",
            samples,
        ),
        sum(
            METRIC_BYTES,
            "By",
            "Serialized payload bytes seen per topic",
            bytes,
        ),
        sum(
            METRIC_LOST,
            "{sample}",
            "Samples lost per topic (sequence gaps never repaired)",
            lost,
        ),
        sum(
            METRIC_RETRANSMITTED,
            "{sample}",
            "Samples seen again per topic (repairs, retransmissions)",
            retx,
        ),
    ];
    if let Some(o) = own {
        let p = |v: u64| vec![point(snap.start_ns, snap.time_ns, v, Vec::new())];
        metrics.push(sum(
            "ddshark.otlp.spans.enqueued",
            "{span}",
            "Spans queued for export",
            p(o.enqueued),
        ));
        metrics.push(sum(
            "ddshark.otlp.spans.dropped",
            "{span}",
            "Spans dropped because the export queue was full",
            p(o.dropped),
        ));
        metrics.push(sum(
            "ddshark.otlp.spans.sent",
            "{span}",
            "Spans the collector accepted",
            p(o.sent),
        ));
        metrics.push(sum(
            "ddshark.otlp.spans.failed",
            "{span}",
            "Spans given up after retries or rejected",
            p(o.failed),
        ));
    }
    let req = ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: resource.iter().map(|(k, v)| kv(k, v)).collect(),
                dropped_attributes_count: 0,
                entity_refs: Vec::new(),
            }),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope {
                    name: scope_name.to_string(),
                    version: scope_version.to_string(),
                    attributes: Vec::new(),
                    dropped_attributes_count: 0,
                }),
                metrics,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    };
    req.encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let snap = MetricsSnapshot {
            start_ns: 1,
            time_ns: 2,
            topics: vec![TopicCounters {
                topic: "rt/chatter".into(),
                type_name: Some("T".into()),
                traffic: TrafficType::User,
                samples: 10,
                bytes: 1000,
                lost: 1,
                retransmitted: 2,
            }],
        };
        let b = encode_metrics(&[], "ddshark", "0", &snap, Some(SelfCounters::default()));
        let req = ExportMetricsServiceRequest::decode(b.as_slice()).unwrap();
        let m = &req.resource_metrics[0].scope_metrics[0].metrics;
        assert_eq!(m.len(), 8);
        assert_eq!(m[0].name, METRIC_SAMPLES);
        let Some(metric::Data::Sum(s)) = &m[1].data else {
            panic!("not a sum")
        };
        assert!(s.is_monotonic);
        assert_eq!(
            s.data_points[0].value,
            Some(number_data_point::Value::AsInt(1000))
        );
        assert_eq!(s.data_points[0].time_unix_nano, 2);
    }
}
