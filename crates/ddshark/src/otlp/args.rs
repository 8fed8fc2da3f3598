//! `--otlp*`: the exporter's options, each also read from its standard OTEL_EXPORTER_OTLP_*
//! variable, and the endpoint as messages name it.

use std::path::PathBuf;

use anyhow::Result;
use otel_export::config::{parse_key_value, SignalConfig};
use otel_export::schema::attr;
use otel_export::{Compression, ExporterConfig, Overrides, Protocol};

use crate::units::TimeSpan;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OtlpProtocol {
    Grpc,
    /// HTTP/protobuf
    Http,
    /// HTTP/JSON
    HttpJson,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OtlpCompression {
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
    pub(crate) otlp: Option<String>,
    /// OTLP transport [env: OTEL_EXPORTER_OTLP_PROTOCOL; default grpc]
    #[arg(long, value_enum, value_name = "PROTO")]
    pub(crate) otlp_protocol: Option<OtlpProtocol>,
    /// Header sent with every export, e.g. authorization=Bearer… (repeatable)
    #[arg(long = "otlp-header", value_name = "KEY=VALUE")]
    pub(crate) otlp_headers: Vec<String>,
    /// Compression of export requests [env: OTEL_EXPORTER_OTLP_COMPRESSION]
    #[arg(long, value_enum, value_name = "ALG")]
    pub(crate) otlp_compression: Option<OtlpCompression>,
    /// Timeout of one export request, e.g. 10s [env: OTEL_EXPORTER_OTLP_TIMEOUT, in ms]
    #[arg(long, value_name = "DURATION", value_parser = TimeSpan::positive)]
    pub otlp_timeout: Option<TimeSpan>,
    /// PEM CA certificate to trust for https endpoints [env: OTEL_EXPORTER_OTLP_CERTIFICATE]
    #[arg(long, value_name = "PEM")]
    pub(crate) otlp_certificate: Option<PathBuf>,
    /// PEM client certificate for mutual TLS [env: OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE]
    #[arg(long, value_name = "PEM", requires = "otlp_client_key")]
    pub(crate) otlp_client_certificate: Option<PathBuf>,
    /// PEM key of the client certificate [env: OTEL_EXPORTER_OTLP_CLIENT_KEY]
    #[arg(long, value_name = "PEM", requires = "otlp_client_certificate")]
    pub(crate) otlp_client_key: Option<PathBuf>,
    /// Export only topics matching PATTERN (glob, or re:REGEX; repeatable)
    #[arg(long = "otlp-topic", value_name = "PATTERN")]
    pub(crate) otlp_topics: Vec<String>,
    /// Extra resource attribute (repeatable) [env: OTEL_RESOURCE_ATTRIBUTES]
    #[arg(long = "otlp-resource", value_name = "KEY=VALUE")]
    pub(crate) otlp_resource: Vec<String>,
    /// host.name of the exported spans [default: this machine's host name]
    #[arg(long, value_name = "NAME")]
    pub(crate) host_name: Option<String>,
    /// capture.interface of the exported spans [default: the interface, or the
    /// replayed file's name]
    #[arg(long, value_name = "NAME")]
    pub(crate) capture_interface: Option<String>,
    /// service.name of the exported spans [env: OTEL_SERVICE_NAME; default ddshark]
    #[arg(long, value_name = "NAME")]
    pub(crate) service_name: Option<String>,
    /// Spans queued for export before new ones are dropped
    #[arg(long, value_name = "SPANS", default_value = "65536")]
    pub(crate) otlp_queue: usize,
    /// Spans per export request
    #[arg(long, value_name = "SPANS", default_value = "1024")]
    pub(crate) otlp_batch: usize,
    /// Try a failed export again for this long (backoff 0.5 s to 5 s) before its spans
    /// count as failed; meanwhile --otlp-queue holds what comes (0s: no retry)
    #[arg(long, value_name = "DURATION", default_value = "0s")]
    pub(crate) otlp_retry: TimeSpan,
    /// Do not export per-topic metrics (spans only)
    #[arg(long)]
    pub(crate) otlp_no_metrics: bool,
    /// How long to wait at exit for queued spans to be sent [default: a replay waits as long
    /// as they are being delivered (it gives up after 30 s without one), a live capture 10s]
    #[arg(long, value_name = "DURATION")]
    pub(crate) otlp_flush_timeout: Option<TimeSpan>,
    /// A sample's SAMPLE span leaves once nothing of it was seen for this long
    /// (capture time; `ddshark latency --window` alike)
    #[arg(long, value_name = "DURATION", default_value_t = TimeSpan::from_ns(span_schema::SAMPLE_WINDOW_NS.unsigned_abs()),
          value_parser = TimeSpan::positive)]
    pub(crate) otlp_sample_window: TimeSpan,
    /// Most memory the samples awaiting their SAMPLE span may hold (oldest sent early, counted)
    #[arg(long, value_name = "MIB", default_value = "256")]
    pub(crate) otlp_sample_memory: usize,
    /// Do not export SAMPLE spans (submessage spans only)
    #[arg(long)]
    pub(crate) otlp_no_samples: bool,
    /// Leave out of DATA/DATA_FRAG spans the detail no dashboard or query reads (src, dst,
    /// source_timestamp_ns, frame, frame_first, ip_fragments, submessage_index), and send no
    /// span for a sample's first DATA (its SAMPLE span carries it; retransmissions and
    /// repairs still get theirs): less CPU for the collector, the join and InfluxDB at high
    /// rates
    #[arg(long)]
    pub(crate) otlp_lean: bool,
}

impl OtlpArgs {
    pub(crate) fn enabled(&self) -> bool {
        self.otlp.is_some()
    }

    /// The exporter configuration these options and the environment give.
    pub(crate) fn config(&self) -> Result<ExporterConfig> {
        self.config_from(|k| std::env::var(k).ok())
    }

    pub(crate) fn config_from(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<ExporterConfig> {
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
            timeout: self.otlp_timeout.map(TimeSpan::duration),
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
        c.retry_for = self.otlp_retry.duration();
        if self.otlp_lean {
            c.span_detail = otel_export::SpanDetail::Lean;
        }
        Ok(c)
    }
}

/// Where a signal goes, for messages: the flag's endpoint, else the variable the
/// exporter will read, else the protocol's default.
pub(super) fn endpoint_label(c: &SignalConfig, env: impl Fn(&str) -> Option<String>) -> String {
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
pub(crate) fn system_host_name(env: impl Fn(&str) -> Option<String>) -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_string())
        .find(|s| !s.is_empty())
        .or_else(|| env("HOSTNAME").filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "unknown".to_string())
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
}
