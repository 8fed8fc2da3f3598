//! `--otlp`: export one span per DATA/DATA_FRAG submessage, and per-topic counters
//! as metrics, to an OpenTelemetry collector (OTLP/gRPC or OTLP/HTTP).
//!
//! The sink runs on the state thread. Live captures never wait for the exporter:
//! spans go into its bounded queue or are dropped and counted. File replays wait
//! for queue space while the collector accepts exports (nothing is lost by
//! waiting), and stop waiting as soon as exports fail.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use otel_export::config::{parse_key_value, SignalConfig};
use otel_export::schema::attr;
use otel_export::{
    Compression, ExportHandle, ExportStats, Exporter, ExporterConfig, MetricsSnapshot, Overrides,
    Protocol, SpanMapper, TopicCounters, TrafficType,
};
use rtps_dissect::Datagram;

use crate::pipeline::{Sink, SourceCtx};
use crate::state::Snapshot;
use crate::units::Seconds;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OtlpProtocol {
    Grpc,
    /// HTTP/protobuf
    Http,
    /// HTTP/JSON
    HttpJson,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OtlpCompression {
    None,
    Gzip,
}

/// OpenTelemetry export options. Every option also has its standard
/// `OTEL_EXPORTER_OTLP_*` (and `_TRACES_`/`_METRICS_`) / `OTEL_SERVICE_NAME` /
/// `OTEL_RESOURCE_ATTRIBUTES` variable, read as any OpenTelemetry program does;
/// options win.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "OpenTelemetry export")]
pub struct OtlpArgs {
    /// Export spans and metrics over OTLP to ENDPOINT (gRPC: http://host:4317,
    /// HTTP: http://host:4318); without a value, from OTEL_EXPORTER_OTLP_ENDPOINT
    #[arg(long, value_name = "ENDPOINT", num_args = 0..=1, default_missing_value = "")]
    pub otlp: Option<String>,
    /// OTLP transport [env: OTEL_EXPORTER_OTLP_PROTOCOL; default grpc]
    #[arg(long, value_enum, value_name = "PROTO")]
    pub otlp_protocol: Option<OtlpProtocol>,
    /// Header sent with every export, e.g. authorization=Bearer… (repeatable)
    #[arg(long = "otlp-header", value_name = "KEY=VALUE")]
    pub otlp_headers: Vec<String>,
    /// Compression of export requests [env: OTEL_EXPORTER_OTLP_COMPRESSION]
    #[arg(long, value_enum, value_name = "ALG")]
    pub otlp_compression: Option<OtlpCompression>,
    /// Timeout of one export request, milliseconds [env: OTEL_EXPORTER_OTLP_TIMEOUT]
    #[arg(long, value_name = "MS")]
    pub otlp_timeout: Option<u64>,
    /// PEM CA certificate to trust for https endpoints [env: OTEL_EXPORTER_OTLP_CERTIFICATE]
    #[arg(long, value_name = "PEM")]
    pub otlp_certificate: Option<PathBuf>,
    /// PEM client certificate for mutual TLS [env: OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE]
    #[arg(long, value_name = "PEM", requires = "otlp_client_key")]
    pub otlp_client_certificate: Option<PathBuf>,
    /// PEM key of the client certificate [env: OTEL_EXPORTER_OTLP_CLIENT_KEY]
    #[arg(long, value_name = "PEM", requires = "otlp_client_certificate")]
    pub otlp_client_key: Option<PathBuf>,
    /// Export only topics matching PATTERN (glob, or re:REGEX; repeatable)
    #[arg(long = "otlp-topic", value_name = "PATTERN")]
    pub otlp_topics: Vec<String>,
    /// Extra resource attribute (repeatable) [env: OTEL_RESOURCE_ATTRIBUTES]
    #[arg(long = "otlp-resource", value_name = "KEY=VALUE")]
    pub otlp_resource: Vec<String>,
    /// host.name of the exported spans [default: this machine's host name]
    #[arg(long, value_name = "NAME")]
    pub host_name: Option<String>,
    /// capture.interface of the exported spans [default: the interface, or the
    /// replayed file's name]
    #[arg(long, value_name = "NAME")]
    pub capture_interface: Option<String>,
    /// service.name of the exported spans [env: OTEL_SERVICE_NAME; default ddshark]
    #[arg(long, value_name = "NAME")]
    pub service_name: Option<String>,
    /// Spans queued for export before new ones are dropped
    #[arg(long, value_name = "SPANS", default_value = "65536")]
    pub otlp_queue: usize,
    /// Spans per export request
    #[arg(long, value_name = "SPANS", default_value = "1024")]
    pub otlp_batch: usize,
    /// Do not export per-topic metrics (spans only)
    #[arg(long)]
    pub otlp_no_metrics: bool,
    /// Seconds to wait at exit for queued spans to be sent
    #[arg(long, value_name = "SECONDS", default_value = "10")]
    pub otlp_flush_timeout: Seconds,
}

impl OtlpArgs {
    pub fn enabled(&self) -> bool {
        self.otlp.is_some()
    }

    /// The exporter configuration these options and the environment give.
    pub fn config(&self) -> Result<ExporterConfig> {
        self.config_from(|k| std::env::var(k).ok())
    }

    pub fn config_from(&self, env: impl Fn(&str) -> Option<String>) -> Result<ExporterConfig> {
        let mut resource = Vec::new();
        for kv in &self.otlp_resource {
            resource.push(parse_key_value(kv, "--otlp-resource")?);
        }
        let mut headers = Vec::new();
        for kv in &self.otlp_headers {
            headers.push(parse_key_value(kv, "--otlp-header")?);
        }
        let overrides = Overrides {
            protocol: self.otlp_protocol.map(|p| match p {
                OtlpProtocol::Grpc => Protocol::Grpc,
                OtlpProtocol::Http => Protocol::HttpProtobuf,
                OtlpProtocol::HttpJson => Protocol::HttpJson,
            }),
            endpoint: self.otlp.clone().filter(|e| !e.trim().is_empty()),
            headers,
            compression: self.otlp_compression.map(|c| match c {
                OtlpCompression::None => Compression::None,
                OtlpCompression::Gzip => Compression::Gzip,
            }),
            timeout: self.otlp_timeout.map(Duration::from_millis),
            certificate: self.otlp_certificate.clone(),
            client_certificate: self.otlp_client_certificate.clone(),
            client_key: self.otlp_client_key.clone(),
            service_name: self.service_name.clone(),
            resource,
            topics: self.otlp_topics.clone(),
        };
        let mut c = ExporterConfig::from_lookup(&env, &overrides)?;
        // host.name: the flag, else OTEL_RESOURCE_ATTRIBUTES (the SDK reads it),
        // else this machine's name.
        let host = match &self.host_name {
            Some(h) => Some(h.clone()),
            None if !c.resource.iter().any(|(k, _)| k == attr::HOST_NAME)
                && otel_export::env_resource_value(attr::HOST_NAME).is_none() =>
            {
                Some(system_host_name(&env))
            }
            None => None,
        };
        if let Some(h) = host {
            c.set_resource(attr::HOST_NAME, &h);
        }
        c.queue_capacity = self.otlp_queue.max(1);
        c.max_batch = self.otlp_batch.max(1);
        Ok(c)
    }
}

/// Where a signal goes, for messages: the flag's endpoint, else the variable the
/// exporter will read, else the protocol's default.
fn endpoint_label(c: &SignalConfig, env: impl Fn(&str) -> Option<String>) -> String {
    if let Some(e) = &c.endpoint {
        return e.clone();
    }
    let signal = c.signal.name().to_ascii_uppercase();
    let specific = format!("OTEL_EXPORTER_OTLP_{signal}_ENDPOINT");
    let nonempty = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    if let Some(e) = nonempty(&specific) {
        return e;
    }
    let http = c.protocol != Protocol::Grpc;
    let base = nonempty("OTEL_EXPORTER_OTLP_ENDPOINT").unwrap_or_else(|| {
        if http {
            "http://localhost:4318".into()
        } else {
            "http://localhost:4317".into()
        }
    });
    if http {
        format!("{}{}", base.trim_end_matches('/'), c.signal.http_path())
    } else {
        base
    }
}

/// This machine's host name (no libc call: the kernel's, then $HOSTNAME).
pub fn system_host_name(env: impl Fn(&str) -> Option<String>) -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_string())
        .find(|s| !s.is_empty())
        .or_else(|| env("HOSTNAME").filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "unknown".to_string())
}

/// The capture.interface of a source: the interface name, or a file's base name.
fn interface_of(source_name: &str) -> String {
    let p = Path::new(source_name);
    if p.components().count() > 1 || p.extension().is_some() {
        p.file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| source_name.to_string())
    } else {
        source_name.to_string()
    }
}

/// The pipeline sink that maps datagrams to spans and snapshots to metrics.
pub struct OtlpSink {
    exporter: Option<Exporter>,
    handle: ExportHandle,
    host: String,
    interface: Option<String>,
    /// One mapper per packet source (their interfaces differ).
    mappers: Vec<Option<SpanMapper>>,
    /// Wait for queue space (file replays) instead of dropping.
    wait: Option<Duration>,
    metrics: bool,
    flush_timeout: Duration,
    reported: ExportStats,
    endpoint: String,
}

impl OtlpSink {
    /// Starts the exporter. `live`: the capture must never wait for it.
    pub fn start(args: &OtlpArgs, live: bool) -> Result<Self> {
        let cfg = args.config()?;
        let endpoint = endpoint_label(&cfg.traces, |k| std::env::var(k).ok());
        let timeout = cfg.traces.timeout;
        let metrics = !args.otlp_no_metrics;
        let exporter = Exporter::start(cfg, metrics).context("starting the OTLP exporter")?;
        let host = exporter.resource_value(attr::HOST_NAME).unwrap_or_default();
        Ok(Self {
            handle: exporter.handle(),
            exporter: Some(exporter),
            host,
            interface: args.capture_interface.clone(),
            mappers: Vec::new(),
            wait: (!live).then_some(timeout),
            metrics,
            flush_timeout: args
                .otlp_flush_timeout
                .duration()
                .min(Duration::from_secs(3600)),
            reported: ExportStats::default(),
            endpoint,
        })
    }

    /// The producer handle (counters for health views).
    pub fn handle(&self) -> ExportHandle {
        self.handle.clone()
    }

    fn mapper(&mut self, ctx: &SourceCtx<'_>) -> Option<&mut SpanMapper> {
        if self.mappers.len() <= ctx.source_index {
            self.mappers
                .resize_with(ctx.source_index.saturating_add(1), || None);
        }
        let slot = self.mappers.get_mut(ctx.source_index)?;
        if slot.is_none() {
            let iface = self
                .interface
                .clone()
                .unwrap_or_else(|| interface_of(ctx.source_name));
            *slot = Some(SpanMapper::new(&self.host, Some(&iface)));
        }
        slot.as_mut()
    }

    /// Reports new drops or failures on stderr (once per snapshot at most).
    fn report_problems(&mut self) {
        let s = self.handle.stats();
        let r = &self.reported;
        if s.dropped > r.dropped || s.failed > r.failed {
            eprintln!(
                "ddshark: otlp {}: {} spans dropped (queue full), {} failed so far; last error: {}",
                self.endpoint,
                s.dropped,
                s.failed,
                s.last_error.as_deref().unwrap_or("none")
            );
        }
        self.reported = s;
    }

    fn metrics_of(snap: &Snapshot) -> MetricsSnapshot {
        MetricsSnapshot {
            start_ns: snap
                .summary
                .first_ts_ns
                .unwrap_or(snap.summary.capture_time_ns),
            time_ns: snap.summary.capture_time_ns,
            topics: snap
                .topics
                .iter()
                .map(|t| TopicCounters {
                    topic: t.name.clone(),
                    type_name: (!t.type_name.is_empty()).then(|| t.type_name.clone()),
                    traffic: if t.builtin {
                        TrafficType::Discovery
                    } else {
                        TrafficType::User
                    },
                    samples: t.totals.samples,
                    bytes: t.totals.bytes,
                    lost: t.totals.lost,
                    retransmitted: t.totals.retransmitted,
                    deadline_misses: t.timing.deadline_misses,
                    rate_hz: t.timing.rate_hz,
                    period_jitter_ns: t.timing.period_stddev_ns,
                    shared_memory_only: t.shared_memory_only,
                })
                .collect(),
        }
    }
}

/// One line about what the exporter did, for stderr at exit.
pub fn summary_line(endpoint: &str, s: &ExportStats) -> String {
    format!(
        "ddshark: otlp {endpoint}: {} spans: {} sent, {} filtered, {} dropped (queue full), {} failed, {} abandoned at exit; {} requests ({} failed after the exporter's retries); metrics {} sent, {} failed",
        s.offered,
        s.sent,
        s.filtered,
        s.dropped,
        s.failed,
        s.abandoned,
        s.requests_ok + s.requests_failed,
        s.requests_failed,
        s.metrics_sent,
        s.metrics_failed,
    )
}

impl Sink for OtlpSink {
    fn on_datagram(&mut self, d: &Datagram<'_>, ctx: &SourceCtx<'_>) {
        let handle = self.handle.clone();
        let wait = self.wait;
        if let Some(m) = self.mapper(ctx) {
            m.map(d, |rec| {
                match wait {
                    Some(w) => handle.export_or_wait(rec, w),
                    None => handle.try_export(rec),
                };
            });
        }
    }

    fn on_snapshot(&mut self, snapshot: &Arc<Snapshot>) {
        if self.metrics {
            self.handle.export_metrics(Self::metrics_of(snapshot));
        }
        self.report_problems();
    }

    fn finish(&mut self, snapshot: &Arc<Snapshot>) {
        if self.metrics {
            self.handle.export_metrics(Self::metrics_of(snapshot));
        }
        if let Some(e) = self.exporter.take() {
            let stats = e.shutdown(self.flush_timeout);
            eprintln!("{}", summary_line(&self.endpoint, &stats));
        }
    }
}

impl Drop for OtlpSink {
    fn drop(&mut self) {
        if let Some(e) = self.exporter.take() {
            let stats = e.shutdown(self.flush_timeout);
            eprintln!("{}", summary_line(&self.endpoint, &stats));
        }
    }
}

/// The sink for the daemon, when `--otlp` was given.
pub fn sink(args: &OtlpArgs, live: bool) -> Result<Option<Box<dyn Sink>>> {
    Ok(sink_with_handle(args, live)?.map(|(s, _)| s))
}

/// [`sink`] plus the exporter's handle, whose counters the TUI's Health view shows.
pub fn sink_with_handle(
    args: &OtlpArgs,
    live: bool,
) -> Result<Option<(Box<dyn Sink>, ExportHandle)>> {
    if !args.enabled() {
        return Ok(None);
    }
    let s = OtlpSink::start(args, live)?;
    eprintln!("ddshark: exporting spans over OTLP to {}", s.endpoint);
    let h = s.handle();
    Ok(Some((Box::new(s), h)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        o: OtlpArgs,
    }

    #[test]
    fn flags_win_over_env() {
        let t = T::parse_from([
            "t",
            "--otlp",
            "http://127.0.0.1:9",
            "--otlp-protocol",
            "http",
            "--otlp-header",
            "k=v",
            "--host-name",
            "a",
            "--service-name",
            "svc",
            "--otlp-topic",
            "rt/*",
        ]);
        let c =
            t.o.config_from(|k| (k == "OTEL_EXPORTER_OTLP_PROTOCOL").then(|| "grpc".to_string()))
                .unwrap();
        assert_eq!(
            c.traces.endpoint.as_deref(),
            Some("http://127.0.0.1:9/v1/traces")
        );
        assert_eq!(
            c.metrics.endpoint.as_deref(),
            Some("http://127.0.0.1:9/v1/metrics")
        );
        assert_eq!(c.traces.headers, vec![("k".to_string(), "v".to_string())]);
        assert_eq!(c.service_name.as_deref(), Some("svc"));
        assert!(c
            .resource
            .contains(&("host.name".to_string(), "a".to_string())));
        assert!(c.topic_filter.matches(Some("rt/x")));
        assert!(!c.topic_filter.matches(Some("x")));
    }

    #[test]
    fn bare_otlp_leaves_the_endpoint_to_the_environment() {
        let t = T::parse_from(["t", "--otlp"]);
        assert!(t.o.enabled());
        let env =
            |k: &str| (k == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| "http://c:4317".to_string());
        let c = t.o.config_from(env).unwrap();
        assert_eq!(c.traces.endpoint, None);
        assert_eq!(endpoint_label(&c.traces, env), "http://c:4317");
        assert!(!T::parse_from(["t"]).o.enabled());
    }

    #[test]
    fn interface_names() {
        assert_eq!(interface_of("eth0"), "eth0");
        assert_eq!(interface_of("/x/y/a.pcap"), "a.pcap");
        assert_eq!(interface_of("a.pcap"), "a.pcap");
    }
}
