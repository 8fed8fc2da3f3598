//! OpenTelemetry export of dissected RTPS traffic.
//!
//! * [`schema`]: one span per DATA/DATA_FRAG submessage per host ([`SpanMapper`]),
//!   trace id from (writer GUID, SN), span id from (host, frame, submessage);
//! * [`encode`]: allocation-light protobuf encoding of OTLP trace requests;
//! * [`metrics`]: per-topic counters as OTLP cumulative sums;
//! * [`exporter`]: bounded queue, batching, OTLP/gRPC and OTLP/HTTP transports,
//!   retries with backoff, drop and delivery counters ([`ExportStats`]);
//! * [`config`]: flags layered over the standard `OTEL_EXPORTER_OTLP_*` variables.
//!
//! The span schema is documented for users in `docs/span-schema.md`.

pub mod config;
pub mod encode;
pub mod error;
pub mod exporter;
pub mod metrics;
pub mod schema;
pub mod transport;

pub use config::{Compression, ExporterConfig, Overrides, Protocol, TopicFilter};
pub use encode::AttrValue;
pub use error::{ConfigError, ExportError};
pub use exporter::{ExportHandle, ExportStats, Exporter};
pub use metrics::{MetricsSnapshot, TopicCounters};
pub use schema::{SampleKind, SpanMapper, SpanRecord, TrafficType};
