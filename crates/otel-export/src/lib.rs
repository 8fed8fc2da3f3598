//! OpenTelemetry export of dissected RTPS traffic, on opentelemetry-otlp.
//!
//! * [`schema`]: one span per DATA/DATA_FRAG submessage per host ([`SpanMapper`]),
//!   trace id from (writer GUID, SN), span id from (host, frame, submessage), and the
//!   span → attribute mapping ([`schema::SpanDataBuilder`]);
//! * `metrics`: per-topic counters as cumulative OTLP sums through the SDK;
//! * `exporter`: ddshark's bounded, never-blocking queue and its counters
//!   ([`ExportStats`]) in front of opentelemetry-otlp's span and metric exporters;
//! * [`config`]: the flags, and the few `OTEL_EXPORTER_OTLP_*` variables the crate
//!   does not read itself (transport choice, TLS files).
//!
//! The span schema is documented for users in `docs/span-schema.md`.

pub mod config;
mod error;
mod exporter;
mod metrics;
pub mod schema;

pub use config::{Compression, ExporterConfig, Overrides, Protocol, Signal, TopicFilter};
pub use error::{ConfigError, ExportError};
pub use exporter::{ExportHandle, ExportStats, Exporter, FlushWait};
pub use metrics::{MetricsSnapshot, SecuredPairCounters, TopicCounters};
pub use schema::{
    SampleKind, SampleSummary, SampleTotals, SpanDetail, SpanMapper, SpanRecord, TrafficType,
};

/// A string attribute of the resource the SDK builds from the environment
/// (`OTEL_RESOURCE_ATTRIBUTES`, `OTEL_SERVICE_NAME`), e.g. `host.name`.
pub fn env_resource_value(key: &'static str) -> Option<String> {
    opentelemetry_sdk::Resource::builder()
        .build()
        .get(&opentelemetry::Key::from_static_str(key))
        .map(|v| v.as_str().into_owned())
}
