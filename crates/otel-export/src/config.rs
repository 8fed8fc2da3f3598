//! Exporter configuration: ddshark's flags, and the thin layer over what
//! opentelemetry-otlp does not read itself.
//!
//! opentelemetry-otlp's builders read `OTEL_EXPORTER_OTLP_{,TRACES_,METRICS_}`
//! `ENDPOINT`, `HEADERS`, `TIMEOUT`, `COMPRESSION` and `INSECURE`, and the SDK's
//! resource builder reads `OTEL_RESOURCE_ATTRIBUTES` and `OTEL_SERVICE_NAME`; we
//! leave those to them and only pass flags given on the command line, which win.
//! The crate does not pick the transport from `OTEL_EXPORTER_OTLP_*PROTOCOL` (a
//! program chooses `with_tonic()` or `with_http()`), nor read `CERTIFICATE`,
//! `CLIENT_CERTIFICATE` or `CLIENT_KEY`: [`SignalConfig::resolve`] reads those,
//! signal-specific variable first, then the generic one.

use std::path::PathBuf;
use std::time::Duration;

use opentelemetry::{Key, KeyValue};
use opentelemetry_sdk::Resource;
use regex::Regex;

use crate::error::ConfigError;
use crate::schema::attr;

/// OTLP transport of one signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Grpc,
    HttpProtobuf,
    HttpJson,
}

impl Protocol {
    /// Parses the specification's values `grpc`, `http/protobuf`, `http/json`
    /// (and `http`, ddshark's short form of `http/protobuf`).
    pub fn parse(s: &str) -> Result<Self, ConfigError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "grpc" => Ok(Protocol::Grpc),
            "http/protobuf" | "http" => Ok(Protocol::HttpProtobuf),
            "http/json" => Ok(Protocol::HttpJson),
            other => Err(ConfigError::Protocol(other.to_string())),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Grpc => "grpc",
            Protocol::HttpProtobuf => "http/protobuf",
            Protocol::HttpJson => "http/json",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
}

/// One signal of OTLP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Traces,
    Metrics,
}

impl Signal {
    fn env_infix(self) -> &'static str {
        match self {
            Signal::Traces => "TRACES_",
            Signal::Metrics => "METRICS_",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Signal::Traces => "traces",
            Signal::Metrics => "metrics",
        }
    }

    /// The path OTLP/HTTP appends to a base endpoint.
    pub fn http_path(self) -> &'static str {
        match self {
            Signal::Traces => "/v1/traces",
            Signal::Metrics => "/v1/metrics",
        }
    }
}

/// Which topics are exported: any of the patterns matches the topic name.
/// A pattern is a glob (`*`, `?`, `[...]`) or, prefixed with `re:`, a regular
/// expression (matched against the whole name unless anchored otherwise).
/// Spans of writers whose topic is unknown are exported only when no filter is set.
#[derive(Debug, Clone, Default)]
pub struct TopicFilter {
    patterns: Vec<Regex>,
}

impl TopicFilter {
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Self, ConfigError> {
        let mut out = Vec::with_capacity(patterns.len());
        for p in patterns {
            let p = p.as_ref();
            let re = match p.strip_prefix("re:") {
                Some(re) => re.to_string(),
                None => glob_to_regex(p),
            };
            out.push(Regex::new(&re).map_err(|e| ConfigError::TopicPattern {
                pattern: p.to_string(),
                message: e.to_string(),
            })?);
        }
        Ok(Self { patterns: out })
    }

    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    pub fn matches(&self, topic: Option<&str>) -> bool {
        if self.patterns.is_empty() {
            return true;
        }
        match topic {
            Some(t) => self.patterns.iter().any(|re| re.is_match(t)),
            None => false,
        }
    }
}

fn glob_to_regex(glob: &str) -> String {
    let mut re = String::with_capacity(glob.len() + 8);
    re.push('^');
    let mut in_class = false;
    for c in glob.chars() {
        match c {
            '*' if !in_class => re.push_str(".*"),
            '?' if !in_class => re.push('.'),
            '[' if !in_class => {
                in_class = true;
                re.push('[');
            }
            ']' if in_class => {
                in_class = false;
                re.push(']');
            }
            '!' if in_class && re.ends_with('[') => re.push('^'),
            c if in_class => {
                if c == '\\' {
                    re.push('\\');
                }
                re.push(c);
            }
            c => {
                let mut buf = [0u8; 4];
                re.push_str(&regex::escape(c.encode_utf8(&mut buf)));
            }
        }
    }
    re.push('$');
    re
}

/// Settings given on the command line; each wins over its environment variable.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub protocol: Option<Protocol>,
    /// Base URL for both signals (OTLP/HTTP appends `/v1/traces`, `/v1/metrics`).
    pub endpoint: Option<String>,
    pub headers: Vec<(String, String)>,
    pub compression: Option<Compression>,
    pub timeout: Option<Duration>,
    pub certificate: Option<PathBuf>,
    pub client_certificate: Option<PathBuf>,
    pub client_key: Option<PathBuf>,
    pub service_name: Option<String>,
    /// Resource attributes, over `OTEL_RESOURCE_ATTRIBUTES`.
    pub resource: Vec<(String, String)>,
    pub topics: Vec<String>,
}

/// PEM files for TLS.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// CA certificate(s) to trust besides the system roots.
    pub certificate: Option<PathBuf>,
    /// Client certificate and key for mutual TLS (both or neither).
    pub client_certificate: Option<PathBuf>,
    pub client_key: Option<PathBuf>,
}

impl TlsFiles {
    pub fn is_empty(&self) -> bool {
        self.certificate.is_none() && self.client_certificate.is_none() && self.client_key.is_none()
    }
}

/// What our layer decides for one signal; the crate's builder does the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignalConfig {
    pub signal: Signal,
    pub protocol: Protocol,
    /// Full endpoint from `--otlp`; `None`: the crate reads the environment.
    pub endpoint: Option<String>,
    /// `--otlp-header` values; the crate adds `OTEL_EXPORTER_OTLP_*HEADERS`.
    pub headers: Vec<(String, String)>,
    pub compression: Option<Compression>,
    /// Flag, else `OTEL_EXPORTER_OTLP_{SIGNAL_,}TIMEOUT`, else 10 s. Passed to the
    /// builder only when it came from the flag (the builder reads the variables);
    /// also bounds how long a file replay waits for queue space.
    pub timeout: Duration,
    pub timeout_from_flag: bool,
    pub tls: TlsFiles,
}

/// The specification's default export timeout.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

impl SignalConfig {
    pub fn resolve(
        signal: Signal,
        lookup: &dyn Fn(&str) -> Option<String>,
        o: &Overrides,
    ) -> Result<Self, ConfigError> {
        let var = |name: &str| {
            let specific = format!("OTEL_EXPORTER_OTLP_{}{name}", signal.env_infix());
            let generic = format!("OTEL_EXPORTER_OTLP_{name}");
            let nonempty = |k: &str| lookup(k).filter(|v| !v.trim().is_empty());
            nonempty(&specific).or_else(|| nonempty(&generic))
        };
        let protocol = match (&o.protocol, var("PROTOCOL")) {
            (Some(p), _) => *p,
            (None, Some(p)) => Protocol::parse(&p)?,
            (None, None) => Protocol::Grpc,
        };
        let endpoint = match &o.endpoint {
            Some(e) => {
                let e = e.trim();
                if !(e.starts_with("http://") || e.starts_with("https://")) {
                    return Err(ConfigError::Endpoint(e.to_string()));
                }
                Some(match protocol {
                    Protocol::Grpc => e.to_string(),
                    Protocol::HttpProtobuf | Protocol::HttpJson => {
                        format!("{}{}", e.trim_end_matches('/'), signal.http_path())
                    }
                })
            }
            None => None,
        };
        let (timeout, timeout_from_flag) = match (o.timeout, var("TIMEOUT")) {
            (Some(t), _) => (t, true),
            (None, Some(t)) => {
                let ms: u64 = t
                    .trim()
                    .parse()
                    .map_err(|_| ConfigError::Timeout(t.clone()))?;
                (Duration::from_millis(ms), false)
            }
            (None, None) => (DEFAULT_TIMEOUT, false),
        };
        for (k, _) in &o.headers {
            if k.is_empty() || !k.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
                return Err(ConfigError::HeaderName(k.clone()));
            }
        }
        let tls = TlsFiles {
            certificate: o
                .certificate
                .clone()
                .or_else(|| var("CERTIFICATE").map(PathBuf::from)),
            client_certificate: o
                .client_certificate
                .clone()
                .or_else(|| var("CLIENT_CERTIFICATE").map(PathBuf::from)),
            client_key: o
                .client_key
                .clone()
                .or_else(|| var("CLIENT_KEY").map(PathBuf::from)),
        };
        if tls.client_certificate.is_some() != tls.client_key.is_some() {
            return Err(ConfigError::ClientIdentity);
        }
        Ok(Self {
            signal,
            protocol,
            endpoint,
            headers: o.headers.clone(),
            compression: o.compression,
            timeout,
            timeout_from_flag,
            tls,
        })
    }
}

/// Everything the exporter needs.
#[derive(Debug, Clone)]
pub struct ExporterConfig {
    pub traces: SignalConfig,
    pub metrics: SignalConfig,
    /// `service.name` from the flag; `None`: `OTEL_SERVICE_NAME`, then
    /// `OTEL_RESOURCE_ATTRIBUTES`, then `ddshark`.
    pub service_name: Option<String>,
    /// Resource attributes set by flags, over `OTEL_RESOURCE_ATTRIBUTES`.
    pub resource: Vec<(String, String)>,
    pub topic_filter: TopicFilter,
    /// Spans the queue holds before new ones are dropped.
    pub queue_capacity: usize,
    /// Spans per export request.
    pub max_batch: usize,
    /// Longest a span waits for its batch to fill.
    pub batch_timeout: Duration,
    /// Export requests in flight at once.
    pub max_concurrent: usize,
    /// How long a batch whose export failed is tried again (backoff 0.5 s doubling to 5 s)
    /// before its spans count as failed; zero: not retried. Meanwhile the queue holds
    /// what comes (`queue_capacity`), so a collector down for this long loses nothing when
    /// the queue holds that long's spans.
    pub retry_for: Duration,
    /// Threads of the exporter's own runtime.
    pub worker_threads: usize,
    /// Per-datagram detail of the DATA/DATA_FRAG spans.
    pub span_detail: crate::schema::SpanDetail,
}

impl ExporterConfig {
    /// `protocol` to the base URL `endpoint` for both signals, nothing else set
    /// (the environment is still read by the crate for what is not set here).
    pub fn new(protocol: Protocol, endpoint: &str) -> Result<Self, ConfigError> {
        let o = Overrides {
            protocol: Some(protocol),
            endpoint: Some(endpoint.to_string()),
            ..Overrides::default()
        };
        Self::from_lookup(|_| None, &o)
    }

    /// Settings from the process environment, with explicit `overrides` on top.
    pub fn from_env(overrides: &Overrides) -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok(), overrides)
    }

    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
        o: &Overrides,
    ) -> Result<Self, ConfigError> {
        for (k, _) in &o.resource {
            if crate::schema::is_span_attribute(k.as_str()) {
                return Err(ConfigError::ReservedResource(k.clone()));
            }
        }
        Ok(Self {
            traces: SignalConfig::resolve(Signal::Traces, &lookup, o)?,
            metrics: SignalConfig::resolve(Signal::Metrics, &lookup, o)?,
            service_name: o.service_name.clone(),
            resource: o.resource.clone(),
            topic_filter: TopicFilter::new(&o.topics)?,
            queue_capacity: 65_536,
            max_batch: 1024,
            batch_timeout: Duration::from_millis(500),
            max_concurrent: 2,
            retry_for: Duration::ZERO,
            worker_threads: 2,
            span_detail: crate::schema::SpanDetail::Full,
        })
    }

    /// The resource of every export: the SDK's (which reads `OTEL_RESOURCE_ATTRIBUTES`
    /// and `OTEL_SERVICE_NAME`) with the flags' attributes over it; `service.name`
    /// is `ddshark` unless a flag or one of those variables names it.
    pub fn resource(&self) -> Result<Resource, ConfigError> {
        let from_env = Resource::builder().build();
        let service_key = Key::from_static_str(attr::SERVICE_NAME);
        let service = self
            .service_name
            .clone()
            .or_else(|| {
                self.resource
                    .iter()
                    .find(|(k, _)| k == attr::SERVICE_NAME)
                    .map(|(_, v)| v.clone())
            })
            .or_else(|| {
                from_env
                    .get(&service_key)
                    .map(|v| v.as_str().into_owned())
                    .filter(|v| !v.starts_with("unknown_service"))
            })
            .unwrap_or_else(|| "ddshark".to_string());
        let instance_key = Key::from_static_str(attr::SERVICE_INSTANCE_ID);
        let instance = (from_env.get(&instance_key).is_none()
            && !self
                .resource
                .iter()
                .any(|(k, _)| k == attr::SERVICE_INSTANCE_ID))
        .then(|| KeyValue::new(instance_key, run_id()));
        let resource = Resource::builder()
            .with_attributes(instance)
            .with_attributes(
                self.resource
                    .iter()
                    .filter(|(k, _)| k != attr::SERVICE_NAME)
                    .map(|(k, v)| KeyValue::new(k.clone(), v.clone())),
            )
            .with_service_name(service)
            .build();
        if let Some((k, _)) = resource
            .iter()
            .find(|(k, _)| crate::schema::is_span_attribute(k.as_str()))
        {
            return Err(ConfigError::ReservedResource(k.to_string()));
        }
        Ok(resource)
    }

    /// Sets (or replaces) a resource attribute.
    pub fn set_resource(&mut self, key: &str, value: &str) {
        if let Some(slot) = self.resource.iter_mut().find(|(k, _)| k == key) {
            slot.1 = value.to_string();
        } else {
            self.resource.push((key.to_string(), value.to_string()));
        }
    }
}

/// This process's `service.instance.id` unless one is given: its start (Unix seconds)
/// and pid, so a restart is a new run, not a gap in `export_seq`, and one tag value per
/// run keeps the series count bounded by the restarts.
fn run_id() -> String {
    static RUN_ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    RUN_ID
        .get_or_init(|| {
            let started = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            format!("{started}-{}", std::process::id())
        })
        .clone()
}

/// Splits `k=v,k2=v2` (flags like `--otlp-header`), as the specification's
/// list format: percent-decoding is the crate's for the variables themselves.
pub fn parse_key_value(item: &str, source_name: &str) -> Result<(String, String), ConfigError> {
    let (k, v) = item.split_once('=').ok_or_else(|| ConfigError::KeyValue {
        source_name: source_name.to_string(),
        item: item.to_string(),
    })?;
    let k = k.trim();
    if k.is_empty() {
        return Err(ConfigError::KeyValue {
            source_name: source_name.to_string(),
            item: item.to_string(),
        });
    }
    Ok((k.to_string(), v.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn defaults_leave_the_rest_to_the_crate() {
        let c = ExporterConfig::from_lookup(env(&[]), &Overrides::default()).unwrap();
        assert_eq!(c.traces.protocol, Protocol::Grpc);
        assert_eq!(c.traces.endpoint, None);
        assert_eq!(c.traces.timeout, DEFAULT_TIMEOUT);
        assert!(c.traces.tls.is_empty());
    }

    #[test]
    fn signal_specific_variables_win_per_signal() {
        let c = ExporterConfig::from_lookup(
            env(&[
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
                ("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc"),
                ("OTEL_EXPORTER_OTLP_CERTIFICATE", "/ca.pem"),
                ("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "/t.pem"),
                ("OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE", "/c.pem"),
                ("OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY", "/k.pem"),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "1500"),
                ("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "700"),
            ]),
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(c.traces.protocol, Protocol::HttpProtobuf);
        assert_eq!(c.metrics.protocol, Protocol::Grpc);
        assert_eq!(c.traces.tls.certificate, Some(PathBuf::from("/t.pem")));
        assert_eq!(c.metrics.tls.certificate, Some(PathBuf::from("/ca.pem")));
        assert_eq!(c.traces.tls.client_key, None);
        assert_eq!(c.metrics.tls.client_key, Some(PathBuf::from("/k.pem")));
        assert_eq!(c.traces.timeout, Duration::from_millis(1500));
        assert_eq!(c.metrics.timeout, Duration::from_millis(700));
    }

    #[test]
    fn flags_win_and_http_gets_signal_paths() {
        let o = Overrides {
            protocol: Some(Protocol::HttpProtobuf),
            endpoint: Some("http://h:4318/".into()),
            timeout: Some(Duration::from_secs(2)),
            ..Overrides::default()
        };
        let c = ExporterConfig::from_lookup(env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]), &o)
            .unwrap();
        assert_eq!(
            c.traces.endpoint.as_deref(),
            Some("http://h:4318/v1/traces")
        );
        assert_eq!(
            c.metrics.endpoint.as_deref(),
            Some("http://h:4318/v1/metrics")
        );
        assert!(c.traces.timeout_from_flag);
    }

    #[test]
    fn bad_values_are_named() {
        let e = ExporterConfig::from_lookup(
            env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "carrier-pigeon")]),
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("carrier-pigeon"));
        let e = ExporterConfig::from_lookup(
            env(&[("OTEL_EXPORTER_OTLP_CLIENT_KEY", "/k.pem")]),
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(matches!(e, ConfigError::ClientIdentity));
        let o = Overrides {
            resource: vec![("topic_name".into(), "x".into())],
            ..Overrides::default()
        };
        assert!(ExporterConfig::from_lookup(env(&[]), &o).is_err());
    }

    #[test]
    fn topic_filter_globs_and_regexes() {
        let f = TopicFilter::new(&["rt/*", "re:^Square$", "x?[ab]"]).unwrap();
        assert!(f.matches(Some("rt/chatter")));
        assert!(f.matches(Some("Square")));
        assert!(!f.matches(Some("Squares")));
        assert!(f.matches(Some("x1a")));
        assert!(!f.matches(Some("x1c")));
        assert!(!f.matches(Some("Circle")));
        assert!(!f.matches(None));
        assert!(TopicFilter::default().matches(None));
        let f = TopicFilter::new(&["a.b"]).unwrap();
        assert!(!f.matches(Some("axb")));
        assert!(TopicFilter::new(&["re:("]).is_err());
    }
}
