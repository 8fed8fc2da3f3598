//! The lines otel2influx + Telegraf's serializer made of the same input (worked out from
//! their sources, v0.5.12 and 1.39.3); the system test `telemetry_influx` compares what
//! InfluxDB stores from both on a real ddshark run.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    any_value::Value, AnyValue, InstrumentationScope, KeyValue, KeyValueList,
};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::metrics::v1::{
    metric::Data, number_data_point, summary_data_point::ValueAtQuantile, Exemplar, Gauge,
    Histogram, HistogramDataPoint, Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum,
    Summary, SummaryDataPoint,
};
use opentelemetry_proto::tonic::resource::v1::Resource;

use super::*;

const T: u64 = 1_700_000_000_123_456_789;

fn kv(key: &str, value: Value) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        ..KeyValue::default()
    }
}

fn s(v: &str) -> Value {
    Value::StringValue(v.into())
}

fn resource() -> Option<Resource> {
    Some(Resource {
        attributes: vec![
            kv("service.name", s("ddshark")),
            kv("host.name", s("ecu 1")),
            kv("telemetry.sdk.name", s("opentelemetry")),
            kv("capture.interface", s("eth0")),
        ],
        ..Resource::default()
    })
}

fn metrics(metrics: Vec<Metric>) -> ExportMetricsServiceRequest {
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: resource(),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope {
                    name: "ddshark".into(),
                    version: "0.9.0".into(),
                    ..InstrumentationScope::default()
                }),
                metrics,
                ..ScopeMetrics::default()
            }],
            ..ResourceMetrics::default()
        }],
    }
}

fn number(value: number_data_point::Value, attrs: Vec<KeyValue>) -> NumberDataPoint {
    NumberDataPoint {
        attributes: attrs,
        start_time_unix_nano: T - 5,
        time_unix_nano: T,
        value: Some(value),
        ..NumberDataPoint::default()
    }
}

fn metric(name: &str, data: Data) -> Metric {
    Metric {
        name: name.into(),
        data: Some(data),
        ..Metric::default()
    }
}

const TAGS: &str = "capture.interface=eth0,host.name=ecu\\ 1,otel.library.name=ddshark,otel.library.version=0.9.0,service.name=ddshark";

#[test]
fn a_cumulative_monotonic_sum_is_a_counter_and_goes_to_the_long_bucket() {
    let sum = Sum {
        data_points: vec![number(
            number_data_point::Value::AsInt(42),
            vec![
                kv("topic_name", s("rt/a,b=c")),
                kv("shared_memory_only", Value::BoolValue(false)),
            ],
        )],
        aggregation_temporality: 2,
        is_monotonic: true,
    };
    let out = convert_metrics(&metrics(vec![metric(
        "ddshark.topic.samples",
        Data::Sum(sum),
    )]));
    assert_eq!(
        out.long,
        format!("ddshark.topic.samples,{TAGS},shared_memory_only=false,topic_name=rt/a\\,b\\=c counter=42i,start_time_unix_nano={}i {T}\n", T - 5)
    );
    assert_eq!((out.long_points, out.raw_points, out.rejected), (1, 0, 0));
}

#[test]
fn gauges_non_monotonic_sums_and_other_names() {
    let gauge = Gauge {
        data_points: vec![number(number_data_point::Value::AsDouble(2.5), vec![])],
    };
    let sum = Sum {
        data_points: vec![number(number_data_point::Value::AsDouble(f64::NAN), vec![])],
        aggregation_temporality: 1,
        is_monotonic: true,
    };
    let out = convert_metrics(&metrics(vec![
        metric("ddshark.topic.rate", Data::Gauge(gauge.clone())),
        metric("process.cpu", Data::Gauge(gauge)),
        // (a delta sum is a gauge; NaN is no field, so only the start time is left)
        metric("dds_x", Data::Sum(sum)),
    ]));
    let start = T - 5;
    assert_eq!(
        out.long,
        format!("ddshark.topic.rate,{TAGS} gauge=2.5,start_time_unix_nano={start}i {T}\ndds_x,{TAGS} start_time_unix_nano={start}i {T}\n")
    );
    assert_eq!(
        out.raw,
        format!("process.cpu,{TAGS} gauge=2.5,start_time_unix_nano={start}i {T}\n")
    );
}

#[test]
fn histograms_summaries_and_exemplars() {
    let hist = Histogram {
        data_points: vec![HistogramDataPoint {
            time_unix_nano: T,
            count: 6,
            sum: Some(7.5),
            bucket_counts: vec![1, 2, 3],
            explicit_bounds: vec![0.5, 10.0],
            exemplars: vec![Exemplar {
                time_unix_nano: T - 1,
                trace_id: vec![1; 16],
                span_id: vec![2; 8],
                value: Some(
                    opentelemetry_proto::tonic::metrics::v1::exemplar::Value::AsDouble(0.25),
                ),
                ..Exemplar::default()
            }],
            ..HistogramDataPoint::default()
        }],
        aggregation_temporality: 2,
    };
    let summary = Summary {
        data_points: vec![SummaryDataPoint {
            time_unix_nano: T,
            count: 3,
            sum: 1.0,
            quantile_values: vec![ValueAtQuantile {
                quantile: 0.99,
                value: 4.0,
            }],
            ..SummaryDataPoint::default()
        }],
    };
    let out = convert_metrics(&metrics(vec![
        metric("ddshark.h", Data::Histogram(hist)),
        metric("ddshark.s", Data::Summary(summary)),
    ]));
    assert_eq!(
        out.long,
        format!(
            "ddshark.h,{TAGS} +Inf=6,0.5=1,10=3,count=6,sum=7.5 {T}\n\
             ddshark.h_exemplar,span_id=0202020202020202,trace_id=01010101010101010101010101010101 gauge=0.25 {}\n\
             ddshark.s,{TAGS} 0.99=4,count=3,sum=1 {T}\n",
            T - 1
        )
    );
}

#[test]
fn bad_points_are_refused_one_by_one_and_named() {
    let mut no_time = number(number_data_point::Value::AsInt(1), vec![]);
    no_time.time_unix_nano = 0;
    let mismatched = HistogramDataPoint {
        time_unix_nano: T,
        bucket_counts: vec![1, 2, 3, 4],
        explicit_bounds: vec![1.0],
        ..HistogramDataPoint::default()
    };
    let out = convert_metrics(&metrics(vec![
        metric(
            "ddshark.a",
            Data::Gauge(Gauge {
                data_points: vec![no_time, number(number_data_point::Value::AsInt(1), vec![])],
            }),
        ),
        metric(
            "ddshark.b",
            Data::Histogram(Histogram {
                data_points: vec![mismatched],
                aggregation_temporality: 2,
            }),
        ),
    ]));
    assert_eq!((out.long_points, out.rejected), (1, 2));
    assert_eq!(
        out.first_error.map(|e| e.to_string()).as_deref(),
        Some("metric \"ddshark.a\": a data point without a timestamp")
    );
}

#[test]
fn log_records_as_otel2influx_wrote_them() {
    let record = LogRecord {
        time_unix_nano: T,
        observed_time_unix_nano: T + 1,
        severity_number: 9,
        severity_text: "INFO".into(),
        body: Some(AnyValue {
            value: Some(s("capture started \"eth0\"")),
        }),
        attributes: vec![
            kv("b", Value::IntValue(3)),
            kv("a", s("<x> & y\n")),
            kv(
                "m",
                Value::KvlistValue(KeyValueList {
                    values: vec![
                        kv("z", Value::DoubleValue(1e21)),
                        kv("y", Value::DoubleValue(1e-7)),
                    ],
                }),
            ),
        ],
        trace_id: vec![0xab; 16],
        span_id: vec![0xcd; 8],
        ..LogRecord::default()
    };
    let mut untimed = record.clone();
    untimed.time_unix_nano = 0;
    untimed.attributes = vec![kv("nan", Value::DoubleValue(f64::NAN))];
    let request = ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: resource(),
            scope_logs: vec![ScopeLogs {
                log_records: vec![record, untimed],
                ..ScopeLogs::default()
            }],
            ..ResourceLogs::default()
        }],
    };
    let out = convert_logs(&request, 7);
    let ids = format!("span_id={},trace_id={}", "cd".repeat(8), "ab".repeat(16));
    assert_eq!(
        out.raw,
        format!(
            "logs,host.name=ecu\\ 1,service.name=ddshark,{ids} attributes=\"{{\\\"a\\\":\\\"\\\\u003cx\\\\u003e \\\\u0026 y\\\\n\\\",\\\"b\\\":3,\\\"capture.interface\\\":\\\"eth0\\\",\\\"m\\\":{{\\\"y\\\":1e-7,\\\"z\\\":1e+21}},\\\"telemetry.sdk.name\\\":\\\"opentelemetry\\\"}}\",body=\"capture started \\\"eth0\\\"\",observed_time_unix_nano={}i,severity_number=9i,severity_text=\"INFO\" {T}\n\
             logs,host.name=ecu\\ 1,service.name=ddshark,{ids} body=\"capture started \\\"eth0\\\"\",dropped_attributes_count=1i,observed_time_unix_nano={}i,severity_number=9i,severity_text=\"INFO\" 7\n",
            T + 1,
            T + 1
        )
    );
    assert_eq!((out.raw_points, out.long_points, out.rejected), (2, 0, 0));
}

#[test]
fn values_print_as_pdata_prints_them() {
    assert_eq!(json::float_as_string(0.1), "0.1");
    assert_eq!(json::float_as_string(1e21), "1e+21");
    assert_eq!(json::float_as_string(1.5e-7), "1.5e-7");
    assert_eq!(json::float_as_string(100.0), "100");
    assert_eq!(json::base64(b"ddshark"), "ZGRzaGFyaw==");
    assert_eq!(json::base64(b"dd"), "ZGQ=");
    assert_eq!(as_string(Some(&Value::BoolValue(true))), "true");
}

#[test]
fn tags_escape_and_trim_as_telegrafs_serializer() {
    let mut p = Point {
        measurement: "a b,c=d".into(),
        time: 1,
        ..Point::default()
    };
    p.tags.insert("k".into(), "v\\".into());
    p.tags.insert("t".into(), "x\ty".into());
    p.tags.insert("telemetry.sdk.version".into(), "1".into());
    p.fields.insert("f".into(), Field::Uint(u64::MAX));
    let mut out = String::new();
    assert!(p.serialize(&mut out));
    assert_eq!(out, "a\\ b\\,c=d,k=v,t=x\\ty f=9223372036854775807i 1\n");
}
