//! Metrics in otel2influx's `prometheus-v1` schema (metrics_telegraf_prometheus_v1.go).

use std::collections::BTreeMap;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{
    exemplar, metric::Data, number_data_point, AggregationTemporality, Exemplar,
    HistogramDataPoint, NumberDataPoint, SummaryDataPoint,
};

use super::{as_string, hex_id, pairs, time_ns, Field, Point, TelemetryError, TelemetryLines};

const GAUGE: &str = "gauge";
const COUNTER: &str = "counter";
const START: &str = "start_time_unix_nano";

/// Every data point of the request, converted.
pub fn convert_metrics(request: &ExportMetricsServiceRequest) -> TelemetryLines {
    let mut out = TelemetryLines::default();
    for rm in &request.resource_metrics {
        let mut resource_tags = BTreeMap::new();
        let attrs = rm.resource.as_ref().map_or(&[][..], |r| &r.attributes[..]);
        add_tags(&mut resource_tags, attrs);
        for sm in &rm.scope_metrics {
            let mut tags = resource_tags.clone();
            if let Some(scope) = &sm.scope {
                scope_tags(&mut tags, scope);
            }
            for metric in &sm.metrics {
                let name = metric.name.as_str();
                if name.is_empty() {
                    out.reject(TelemetryError::NoName);
                    continue;
                }
                let base = Point {
                    measurement: name.to_owned(),
                    tags: tags.clone(),
                    ..Point::default()
                };
                match &metric.data {
                    None => {}
                    Some(Data::Gauge(g)) => {
                        for dp in &g.data_points {
                            number(&mut out, &base, dp, GAUGE);
                        }
                    }
                    Some(Data::Sum(s)) => {
                        let counter = s.is_monotonic
                            && s.aggregation_temporality
                                == AggregationTemporality::Cumulative as i32;
                        let key = if counter { COUNTER } else { GAUGE };
                        for dp in &s.data_points {
                            number(&mut out, &base, dp, key);
                        }
                    }
                    Some(Data::Histogram(h)) => {
                        for dp in &h.data_points {
                            histogram(&mut out, &base, dp);
                        }
                    }
                    Some(Data::Summary(s)) => {
                        for dp in &s.data_points {
                            summary(&mut out, &base, dp);
                        }
                    }
                    Some(Data::ExponentialHistogram(h)) => {
                        for _ in &h.data_points {
                            out.reject(TelemetryError::ExponentialHistogram {
                                metric: name.to_owned(),
                            });
                        }
                    }
                }
            }
        }
    }
    out
}

fn add_tags(tags: &mut BTreeMap<String, String>, attrs: &[KeyValue]) {
    for (k, v) in pairs(attrs) {
        tags.insert(k.to_owned(), as_string(v));
    }
}

/// `InstrumentationScopeToTags`.
fn scope_tags(tags: &mut BTreeMap<String, String>, scope: &InstrumentationScope) {
    if !scope.name.is_empty() {
        tags.insert("otel.library.name".into(), scope.name.clone());
    }
    if !scope.version.is_empty() {
        tags.insert("otel.library.version".into(), scope.version.clone());
    }
    add_tags(tags, &scope.attributes);
}

/// `initMetricTagsAndTimestamp`: the point's tags, `start_time_unix_nano`, its time.
fn init(base: &Point, attrs: &[KeyValue], start: u64, time: u64) -> Result<Point, TelemetryError> {
    let metric = &base.measurement;
    if time == 0 {
        return Err(TelemetryError::NoTimestamp {
            metric: metric.clone(),
        });
    }
    let mut point = base.clone();
    point.time = time_ns(time, metric)?;
    if start != 0 {
        point
            .fields
            .insert(START.into(), Field::Int(time_ns(start, metric)?));
    }
    add_tags(&mut point.tags, attrs);
    Ok(point)
}

fn number(out: &mut TelemetryLines, base: &Point, dp: &NumberDataPoint, key: &str) {
    let mut point = match init(
        base,
        &dp.attributes,
        dp.start_time_unix_nano,
        dp.time_unix_nano,
    ) {
        Ok(p) => p,
        Err(e) => return out.reject(e),
    };
    let value = match dp.value {
        // (an empty value: no point, and its exemplars are skipped with it)
        None => return,
        Some(number_data_point::Value::AsDouble(d)) => Field::Float(d),
        Some(number_data_point::Value::AsInt(i)) => Field::Int(i),
    };
    point.fields.insert(key.into(), value);
    out.write(&point, "metric");
    exemplars(out, base, &dp.exemplars);
}

fn histogram(out: &mut TelemetryLines, base: &Point, dp: &HistogramDataPoint) {
    let mut point = match init(
        base,
        &dp.attributes,
        dp.start_time_unix_nano,
        dp.time_unix_nano,
    ) {
        Ok(p) => p,
        Err(e) => return out.reject(e),
    };
    let (counts, bounds) = (&dp.bucket_counts, &dp.explicit_bounds);
    // (the +Inf bucket may be missing: that schema does not need it)
    if !counts.is_empty() && counts.len() != bounds.len() && counts.len() != bounds.len() + 1 {
        return out.reject(TelemetryError::BucketMismatch {
            metric: base.measurement.clone(),
            counts: counts.len(),
            bounds: bounds.len(),
        });
    }
    // (u64 → f64 as Go's float64(): the nearest double)
    #[allow(clippy::cast_precision_loss)]
    let float = |v: u64| v as f64;
    let fields = &mut point.fields;
    fields.insert("count".into(), Field::Float(float(dp.count)));
    for (key, value) in [("sum", dp.sum), ("min", dp.min), ("max", dp.max)] {
        if let Some(v) = value {
            fields.insert(key.into(), Field::Float(v));
        }
    }
    let mut cumulative = 0u64;
    for (i, count) in counts.iter().enumerate() {
        cumulative = cumulative.saturating_add(*count);
        let key = bounds
            .get(i)
            .map_or_else(|| "+Inf".to_owned(), |b| go_float_key(*b));
        fields.insert(key, Field::Float(float(cumulative)));
    }
    out.write(&point, "metric");
    exemplars(out, base, &dp.exemplars);
}

fn summary(out: &mut TelemetryLines, base: &Point, dp: &SummaryDataPoint) {
    let mut point = match init(
        base,
        &dp.attributes,
        dp.start_time_unix_nano,
        dp.time_unix_nano,
    ) {
        Ok(p) => p,
        Err(e) => return out.reject(e),
    };
    #[allow(clippy::cast_precision_loss)]
    let count = dp.count as f64;
    point.fields.insert("count".into(), Field::Float(count));
    point.fields.insert("sum".into(), Field::Float(dp.sum));
    for q in &dp.quantile_values {
        point
            .fields
            .insert(go_float_key(q.quantile), Field::Float(q.value));
    }
    out.write(&point, "metric");
}

/// `strconv.FormatFloat(v, 'f', -1, 64)`: the shortest decimal that reads back, never an
/// exponent.
fn go_float_key(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

/// `enqueueExemplars`: each exemplar with a value and a trace as a `NAME_exemplar` point.
fn exemplars(out: &mut TelemetryLines, base: &Point, exemplars: &[Exemplar]) {
    for ex in exemplars {
        let value = match ex.value {
            None => continue,
            Some(exemplar::Value::AsDouble(d)) => Field::Float(d),
            Some(exemplar::Value::AsInt(i)) => Field::Int(i),
        };
        let (Some(trace_id), Some(span_id)) = (hex_id(&ex.trace_id), hex_id(&ex.span_id)) else {
            continue;
        };
        let time = match time_ns(ex.time_unix_nano, &base.measurement) {
            Ok(t) => t,
            Err(e) => {
                out.reject(e);
                continue;
            }
        };
        let mut point = Point {
            measurement: format!("{}_exemplar", base.measurement),
            time,
            ..Point::default()
        };
        add_tags(&mut point.tags, &ex.filtered_attributes);
        point.tags.insert("trace_id".into(), trace_id);
        point.tags.insert("span_id".into(), span_id);
        point.fields.insert(GAUGE.into(), value);
        out.write(&point, "exemplar");
    }
}
