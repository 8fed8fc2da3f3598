//! Per-topic counters as OTLP metrics through the OpenTelemetry SDK: observable
//! cumulative counters, collected by a manual reader whenever the state hands over
//! a snapshot, and sent by opentelemetry-otlp's `MetricExporter` on the exporter's
//! runtime. Data points carry the SDK's (wall-clock) timestamps; the counters
//! themselves are capture-time cumulative.
//!
//! | metric | unit | meaning |
//! |---|---|---|
//! | `ddshark.topic.samples` | `{sample}` | samples (DATA, or DATA_FRAG sets) seen |
//! | `ddshark.topic.bytes` | `By` | serialized payload bytes seen |
//! | `ddshark.topic.lost` | `{sample}` | samples never seen (SN gaps not repaired) |
//! | `ddshark.topic.retransmitted` | `{sample}` | samples seen more than once (repairs) |
//! | `ddshark.topic.deadline_misses` | `{sample}` | samples later than the writers' DEADLINE |
//! | `ddshark.topic.rate` | `Hz` | gauge: mean sample rate over the time the writers were active |
//! | `ddshark.topic.period.jitter` | `s` | gauge: standard deviation of the inter-arrival period |
//! | `ddshark.secured.messages` | `{message}` | DDS Security: RTPS messages with SRTPS_PREFIX or SEC_PREFIX |
//! | `ddshark.secured.submessages` | `{submessage}` | DDS Security: protected submessages (SEC_PREFIX) |
//! | `ddshark.secured.bytes` | `By` | DDS Security: UDP payload of the secured messages |
//! | `ddshark.otlp.spans.{enqueued,dropped,sent,failed}` | `{span}` | the exporter's own counters |
//! | `ddshark.tcp.streams` | `{stream}` | RTPS over TCP: streams opened |
//! | `ddshark.tcp.bytes` | `By` | RTPS over TCP: new in-order payload bytes |
//! | `ddshark.tcp.segments` | `{segment}` | RTPS over TCP: payload segments |
//! | `ddshark.tcp.messages` | `{message}` | RTPS over TCP: RTPS messages, by `framing` |
//! | `ddshark.tcp.out_of_order` | `{segment}` | RTPS over TCP: segments held ahead of a hole |
//! | `ddshark.tcp.retransmitted` | `{segment}` | RTPS over TCP: segments whose bytes were all seen |
//! | `ddshark.tcp.gaps`, `ddshark.tcp.gap_bytes` | `{gap}`, `By` | RTPS over TCP: holes given up, their bytes |
//! | `ddshark.tcp.resyncs` | `{resync}` | RTPS over TCP: framing lost and searched for again |
//! | `ddshark.tcp.evictions` | `{stream}` | RTPS over TCP: streams ddshark dropped, by `reason` (`idle`, `capacity`) |
//!
//! The `ddshark.tcp.*` counters are sent once a TCP stream carried RTPS.
//!
//! Attributes of the topic metrics: `topic_name`, `type_name` (when known), `traffic_type`,
//! and `shared_memory_only` = true on a topic whose matched endpoints talk by shared memory
//! only (nothing of it on the wire). Of the secured metrics (one series per participant
//! pair): `src_participant` (GUID prefix), `dst_participant` (GUID prefix, `multicast` or
//! `host:ADDRESS`), and `src_participant_name`/`dst_participant_name` when discovery named them.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use opentelemetry::metrics::{
    AsyncInstrument, Meter, MeterProvider as _, ObservableCounter, ObservableGauge,
};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::MetricExporter as OtlpMetricExporter;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{
    InstrumentKind, ManualReader, Pipeline, SdkMeterProvider, Temporality,
};
use opentelemetry_sdk::Resource;

use crate::config::SignalConfig;
use crate::error::ExportError;
use crate::exporter::{metric_exporter, Counters};
use crate::schema::{attr, TrafficType};
use rtps_dissect::tcp::TcpStats;

/// Cumulative counters of one topic since `MetricsSnapshot::start_ns`, and its timing.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicCounters {
    pub topic: String,
    pub type_name: Option<String>,
    pub traffic: TrafficType,
    pub samples: u64,
    pub bytes: u64,
    pub lost: u64,
    pub retransmitted: u64,
    /// Samples that came later than the DEADLINE their writer announced.
    pub deadline_misses: u64,
    /// Samples per second: ddshark's one rate (the sum over the topic's writers, each
    /// over the last window, or over its own first → latest sample when active less).
    pub rate_hz: Option<f64>,
    /// Standard deviation of the inter-arrival period, nanoseconds.
    pub period_jitter_ns: Option<f64>,
    /// Matched writer and reader share a host and nothing is on the wire.
    pub shared_memory_only: bool,
}

/// Cumulative DDS Security traffic from one participant to one destination.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SecuredPairCounters {
    pub src: String,
    pub src_name: Option<String>,
    pub dst: String,
    pub dst_name: Option<String>,
    pub messages: u64,
    pub submessages: u64,
    pub bytes: u64,
}

/// One periodic report, fed by the state with capture timestamps.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MetricsSnapshot {
    /// RTPS-over-TCP reassembly counters (all zero: none sent).
    pub tcp: TcpStats,
    /// Capture time the counters started from (ns since the epoch).
    pub start_ns: u64,
    /// Capture time of the report.
    pub time_ns: u64,
    pub topics: Vec<TopicCounters>,
    pub secured: Vec<SecuredPairCounters>,
}

pub const METRIC_SAMPLES: &str = "ddshark.topic.samples";
pub const METRIC_BYTES: &str = "ddshark.topic.bytes";
pub const METRIC_LOST: &str = "ddshark.topic.lost";
pub const METRIC_RETRANSMITTED: &str = "ddshark.topic.retransmitted";
pub const METRIC_DEADLINE_MISSES: &str = "ddshark.topic.deadline_misses";
pub const METRIC_RATE: &str = "ddshark.topic.rate";
pub const METRIC_PERIOD_JITTER: &str = "ddshark.topic.period.jitter";
/// Topic metric attribute, present (true) only on shared-memory-only topics.
pub const ATTR_SHARED_MEMORY_ONLY: &str = "shared_memory_only";
pub const METRIC_SECURED_MESSAGES: &str = "ddshark.secured.messages";
pub const METRIC_SECURED_SUBMESSAGES: &str = "ddshark.secured.submessages";
pub const METRIC_SECURED_BYTES: &str = "ddshark.secured.bytes";
/// Secured metric attributes: the pair's participants.
pub const ATTR_SRC_PARTICIPANT: &str = "src_participant";
pub const ATTR_DST_PARTICIPANT: &str = "dst_participant";
pub const ATTR_SRC_PARTICIPANT_NAME: &str = "src_participant_name";
pub const ATTR_DST_PARTICIPANT_NAME: &str = "dst_participant_name";
pub const METRIC_TCP_STREAMS: &str = "ddshark.tcp.streams";
pub const METRIC_TCP_BYTES: &str = "ddshark.tcp.bytes";
pub const METRIC_TCP_SEGMENTS: &str = "ddshark.tcp.segments";
pub const METRIC_TCP_MESSAGES: &str = "ddshark.tcp.messages";
pub const METRIC_TCP_OUT_OF_ORDER: &str = "ddshark.tcp.out_of_order";
pub const METRIC_TCP_RETRANSMITTED: &str = "ddshark.tcp.retransmitted";
pub const METRIC_TCP_GAPS: &str = "ddshark.tcp.gaps";
pub const METRIC_TCP_GAP_BYTES: &str = "ddshark.tcp.gap_bytes";
pub const METRIC_TCP_RESYNCS: &str = "ddshark.tcp.resyncs";
pub const METRIC_TCP_EVICTIONS: &str = "ddshark.tcp.evictions";
/// Attribute of `ddshark.tcp.messages`: `rtcp`, `rti_tcp`, `length_prefixed`, `bare`.
pub const ATTR_TCP_FRAMING: &str = "framing";
/// Attribute of `ddshark.tcp.evictions`: `idle` or `capacity`.
pub const ATTR_TCP_EVICTION_REASON: &str = "reason";

/// The exporter's own counters, reported with each snapshot.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SelfCounters {
    pub enqueued: u64,
    pub dropped: u64,
    pub sent: u64,
    pub failed: u64,
}

/// The manual reader, shared between the meter provider (which registers its
/// pipeline) and us (who collect on demand).
#[derive(Debug, Clone)]
struct SharedReader(Arc<ManualReader>);

impl MetricReader for SharedReader {
    fn register_pipeline(&self, pipeline: Weak<Pipeline>) {
        self.0.register_pipeline(pipeline);
    }
    fn collect(&self, rm: &mut ResourceMetrics) -> OTelSdkResult {
        self.0.collect(rm)
    }
    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }
    fn temporality(&self, kind: InstrumentKind) -> Temporality {
        self.0.temporality(kind)
    }
}

fn topic_attributes(t: &TopicCounters) -> Vec<KeyValue> {
    let mut a = vec![KeyValue::new(attr::TOPIC_NAME, t.topic.clone())];
    if let Some(ty) = &t.type_name {
        a.push(KeyValue::new(attr::TYPE_NAME, ty.clone()));
    }
    a.push(KeyValue::new(attr::TRAFFIC_TYPE, t.traffic.name()));
    if t.shared_memory_only {
        a.push(KeyValue::new(ATTR_SHARED_MEMORY_ONLY, true));
    }
    a
}

fn pair_attributes(p: &SecuredPairCounters) -> Vec<KeyValue> {
    let mut a = vec![
        KeyValue::new(ATTR_SRC_PARTICIPANT, p.src.clone()),
        KeyValue::new(ATTR_DST_PARTICIPANT, p.dst.clone()),
    ];
    if let Some(n) = &p.src_name {
        a.push(KeyValue::new(ATTR_SRC_PARTICIPANT_NAME, n.clone()));
    }
    if let Some(n) = &p.dst_name {
        a.push(KeyValue::new(ATTR_DST_PARTICIPANT_NAME, n.clone()));
    }
    a
}

/// An observable counter `(name, unit, description)` whose callback hands `observe`
/// the latest snapshot (nothing is observed while its lock is poisoned).
fn snapshot_counter<F>(
    meter: &Meter,
    latest: &Arc<Mutex<MetricsSnapshot>>,
    (name, unit, description): (&'static str, &'static str, &'static str),
    observe: F,
) -> ObservableCounter<u64>
where
    F: Fn(&MetricsSnapshot, &dyn AsyncInstrument<u64>) + Send + Sync + 'static,
{
    let latest = latest.clone();
    meter
        .u64_observable_counter(name)
        .with_unit(unit)
        .with_description(description)
        .with_callback(move |o| {
            if let Ok(s) = latest.lock() {
                observe(&s, o);
            }
        })
        .build()
}

/// Meter provider, reader and the crate's metric exporter of one exporter.
pub(crate) struct MetricsPipeline {
    _provider: SdkMeterProvider,
    reader: SharedReader,
    exporter: OtlpMetricExporter,
    latest: Arc<Mutex<MetricsSnapshot>>,
    _instruments: Vec<ObservableCounter<u64>>,
    _gauges: Vec<ObservableGauge<f64>>,
}

impl MetricsPipeline {
    /// Must run inside the exporter's runtime (gRPC channels connect lazily).
    pub(crate) fn new(
        c: &SignalConfig,
        resource: &Resource,
        counters: Arc<Counters>,
    ) -> Result<Self, ExportError> {
        let exporter = metric_exporter(c)?;
        let reader = SharedReader(Arc::new(ManualReader::builder().build()));
        let provider = SdkMeterProvider::builder()
            .with_resource(resource.clone())
            .with_reader(reader.clone())
            .build();
        let meter = provider.meter_with_scope(
            InstrumentationScope::builder("ddshark")
                .with_version(env!("CARGO_PKG_VERSION"))
                .build(),
        );
        let latest = Arc::new(Mutex::new(MetricsSnapshot::default()));
        type Field = fn(&TopicCounters) -> u64;
        let topic_metrics: [(&'static str, &'static str, &'static str, Field); 5] = [
            (METRIC_SAMPLES, "{sample}", "Samples seen per topic", |t| {
                t.samples
            }),
            (
                METRIC_BYTES,
                "By",
                "Serialized payload bytes seen per topic",
                |t| t.bytes,
            ),
            (
                METRIC_LOST,
                "{sample}",
                "Samples lost per topic (sequence gaps never repaired)",
                |t| t.lost,
            ),
            (
                METRIC_RETRANSMITTED,
                "{sample}",
                "Samples seen again per topic (repairs, retransmissions)",
                |t| t.retransmitted,
            ),
            (
                METRIC_DEADLINE_MISSES,
                "{sample}",
                "Samples later than the DEADLINE their writer announced, per topic",
                |t| t.deadline_misses,
            ),
        ];
        let mut instruments = Vec::new();
        for (name, unit, description, field) in topic_metrics {
            instruments.push(snapshot_counter(
                &meter,
                &latest,
                (name, unit, description),
                move |s, o| {
                    for t in &s.topics {
                        o.observe(field(t), &topic_attributes(t));
                    }
                },
            ));
        }
        type PairField = fn(&SecuredPairCounters) -> u64;
        let secured_metrics: [(&'static str, &'static str, &'static str, PairField); 3] = [
            (
                METRIC_SECURED_MESSAGES,
                "{message}",
                "DDS Security: RTPS messages with SRTPS_PREFIX or SEC_PREFIX, per participant pair",
                |p| p.messages,
            ),
            (
                METRIC_SECURED_SUBMESSAGES,
                "{submessage}",
                "DDS Security: protected submessages (SEC_PREFIX), per participant pair",
                |p| p.submessages,
            ),
            (
                METRIC_SECURED_BYTES,
                "By",
                "DDS Security: UDP payload bytes of the secured messages, per participant pair",
                |p| p.bytes,
            ),
        ];
        for (name, unit, description, field) in secured_metrics {
            instruments.push(snapshot_counter(
                &meter,
                &latest,
                (name, unit, description),
                move |s, o| {
                    for p in &s.secured {
                        o.observe(field(p), &pair_attributes(p));
                    }
                },
            ));
        }
        type Gauge = fn(&TopicCounters) -> Option<f64>;
        let topic_gauges: [(&'static str, &'static str, &'static str, Gauge); 2] = [
            (
                METRIC_RATE,
                "Hz",
                "Sample rate: the sum over the topic's writers, each over the last window (or its own first to latest sample when active less than a window)",
                |t| t.rate_hz,
            ),
            (
                METRIC_PERIOD_JITTER,
                "s",
                "Standard deviation of the sample inter-arrival period (jitter)",
                |t| t.period_jitter_ns.map(|ns| ns / 1e9),
            ),
        ];
        let mut gauges = Vec::new();
        for (name, unit, description, field) in topic_gauges {
            let latest = latest.clone();
            gauges.push(
                meter
                    .f64_observable_gauge(name)
                    .with_unit(unit)
                    .with_description(description)
                    .with_callback(move |o| {
                        if let Ok(s) = latest.lock() {
                            for t in &s.topics {
                                if let Some(v) = field(t) {
                                    o.observe(v, &topic_attributes(t));
                                }
                            }
                        }
                    })
                    .build(),
            );
        }
        type Own = fn(&SelfCounters) -> u64;
        let own_metrics: [(&'static str, &'static str, Own); 4] = [
            (
                "ddshark.otlp.spans.enqueued",
                "Spans queued for export",
                |o| o.enqueued,
            ),
            (
                "ddshark.otlp.spans.dropped",
                "Spans dropped because the export queue was full",
                |o| o.dropped,
            ),
            (
                "ddshark.otlp.spans.sent",
                "Spans the collector accepted",
                |o| o.sent,
            ),
            (
                "ddshark.otlp.spans.failed",
                "Spans given up after the exporter's retries",
                |o| o.failed,
            ),
        ];
        for (name, description, field) in own_metrics {
            let counters = counters.clone();
            instruments.push(
                meter
                    .u64_observable_counter(name)
                    .with_unit("{span}")
                    .with_description(description)
                    .with_callback(move |o| o.observe(field(&counters.own()), &[]))
                    .build(),
            );
        }
        // (value, attribute value) series of one TCP counter; attribute key "" = none.
        type TcpSeries = fn(&TcpStats) -> Vec<(u64, &'static str)>;
        let tcp_metrics: [(
            &'static str,
            &'static str,
            &'static str,
            &'static str,
            TcpSeries,
        ); 10] = [
            (
                METRIC_TCP_STREAMS,
                "{stream}",
                "RTPS over TCP: streams opened",
                "",
                |t| vec![(t.streams_opened, "")],
            ),
            (
                METRIC_TCP_BYTES,
                "By",
                "RTPS over TCP: new in-order payload bytes",
                "",
                |t| vec![(t.bytes, "")],
            ),
            (
                METRIC_TCP_SEGMENTS,
                "{segment}",
                "RTPS over TCP: payload segments",
                "",
                |t| vec![(t.segments, "")],
            ),
            (
                METRIC_TCP_MESSAGES,
                "{message}",
                "RTPS over TCP: RTPS messages by framing",
                ATTR_TCP_FRAMING,
                |t| {
                    vec![
                        (t.rtps_rtcp, "rtcp"),
                        (t.rtps_rti_tcp, "rti_tcp"),
                        (t.rtps_length_prefixed, "length_prefixed"),
                        (t.rtps_bare, "bare"),
                    ]
                },
            ),
            (
                METRIC_TCP_OUT_OF_ORDER,
                "{segment}",
                "RTPS over TCP: segments held ahead of a hole",
                "",
                |t| vec![(t.out_of_order, "")],
            ),
            (
                METRIC_TCP_RETRANSMITTED,
                "{segment}",
                "RTPS over TCP: segments whose bytes had all been seen (retransmissions)",
                "",
                |t| vec![(t.retransmitted, "")],
            ),
            (
                METRIC_TCP_GAPS,
                "{gap}",
                "RTPS over TCP: holes given up (bytes never captured)",
                "",
                |t| vec![(t.gaps, "")],
            ),
            (
                METRIC_TCP_GAP_BYTES,
                "By",
                "RTPS over TCP: bytes of the holes given up",
                "",
                |t| vec![(t.gap_bytes, "")],
            ),
            (
                METRIC_TCP_RESYNCS,
                "{resync}",
                "RTPS over TCP: times a stream's framing was lost and searched for again",
                "",
                |t| vec![(t.resyncs, "")],
            ),
            (
                METRIC_TCP_EVICTIONS,
                "{stream}",
                "RTPS over TCP: streams dropped by ddshark, by reason",
                ATTR_TCP_EVICTION_REASON,
                |t| {
                    vec![
                        (t.streams_evicted_idle, "idle"),
                        (t.streams_evicted_capacity, "capacity"),
                    ]
                },
            ),
        ];
        for (name, unit, description, key, series) in tcp_metrics {
            instruments.push(snapshot_counter(
                &meter,
                &latest,
                (name, unit, description),
                move |s, o| {
                    if s.tcp.is_zero() {
                        return;
                    }
                    for (v, a) in series(&s.tcp) {
                        if key.is_empty() {
                            o.observe(v, &[]);
                        } else {
                            o.observe(v, &[KeyValue::new(key, a)]);
                        }
                    }
                },
            ));
        }
        Ok(Self {
            _provider: provider,
            reader,
            exporter,
            latest,
            _instruments: instruments,
            _gauges: gauges,
        })
    }

    /// Collects with `snap` as the current counters and sends the result.
    pub(crate) async fn export(&self, snap: MetricsSnapshot) -> Result<(), String> {
        if let Ok(mut l) = self.latest.lock() {
            *l = snap;
        }
        let mut rm = ResourceMetrics::default();
        self.reader
            .collect(&mut rm)
            .map_err(|e| format!("collecting metrics: {e}"))?;
        self.exporter
            .export(&rm)
            .await
            .map_err(|e| format!("metrics export: {e}"))
    }
}
