//! Exporter configuration: explicit settings layered over the standard
//! `OTEL_EXPORTER_OTLP_*`, `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`
//! environment variables.

use std::path::PathBuf;
use std::time::Duration;

use regex::Regex;

use crate::encode::AttrValue;
use crate::error::ConfigError;
use crate::schema::attr;

/// OTLP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Grpc,
    HttpProtobuf,
}

impl Protocol {
    /// Parses `grpc`, `http/protobuf` (or `http`).
    pub fn parse(s: &str) -> Result<Self, ConfigError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "grpc" => Ok(Protocol::Grpc),
            "http/protobuf" | "http" | "http-protobuf" => Ok(Protocol::HttpProtobuf),
            other => Err(ConfigError::Protocol(other.to_string())),
        }
    }

    fn default_endpoint(self) -> &'static str {
        match self {
            Protocol::Grpc => "http://localhost:4317",
            Protocol::HttpProtobuf => "http://localhost:4318",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
}

impl Compression {
    pub fn parse(s: &str) -> Result<Self, ConfigError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "gzip" => Ok(Compression::Gzip),
            "none" | "" => Ok(Compression::None),
            other => Err(ConfigError::Compression(other.to_string())),
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

/// Everything the exporter needs. Build with [`ExporterConfig::builder`] or
/// [`ExporterConfig::from_env`] and override fields.
#[derive(Debug, Clone)]
pub struct ExporterConfig {
    pub protocol: Protocol,
    /// Full URL of the traces endpoint (HTTP: including `/v1/traces`; gRPC: base URL).
    pub traces_endpoint: String,
    /// Full URL of the metrics endpoint.
    pub metrics_endpoint: String,
    pub headers: Vec<(String, String)>,
    pub compression: Compression,
    /// Timeout of one export request.
    pub timeout: Duration,
    /// PEM file with CA certificate(s) to trust, in addition to the system roots.
    pub certificate: Option<PathBuf>,
    /// PEM client certificate and key for mutual TLS.
    pub client_certificate: Option<PathBuf>,
    pub client_key: Option<PathBuf>,
    pub service_name: String,
    /// Resource attributes besides `service.name` (host.name, ...), in order.
    pub resource: Vec<(String, AttrValue)>,
    pub topic_filter: TopicFilter,
    /// Spans the queue holds before new ones are dropped.
    pub queue_capacity: usize,
    /// Spans per export request.
    pub max_batch: usize,
    /// Longest a span waits for its batch to fill.
    pub batch_timeout: Duration,
    /// Export requests in flight at once.
    pub max_concurrent: usize,
    /// First retry delay; doubles up to `max_backoff`.
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// A batch still failing after this long is dropped (counted as failed).
    pub max_retry_time: Duration,
    /// Threads of the exporter's own runtime.
    pub worker_threads: usize,
}

impl ExporterConfig {
    /// Defaults for `protocol` with nothing read from the environment.
    pub fn new(protocol: Protocol) -> Self {
        let base = protocol.default_endpoint();
        Self {
            protocol,
            traces_endpoint: signal_url(protocol, base, "traces"),
            metrics_endpoint: signal_url(protocol, base, "metrics"),
            headers: Vec::new(),
            compression: Compression::None,
            timeout: Duration::from_secs(10),
            certificate: None,
            client_certificate: None,
            client_key: None,
            service_name: "ddshark".to_string(),
            resource: Vec::new(),
            topic_filter: TopicFilter::default(),
            queue_capacity: 65_536,
            max_batch: 2048,
            batch_timeout: Duration::from_millis(500),
            max_concurrent: 2,
            initial_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(5),
            max_retry_time: Duration::from_secs(30),
            worker_threads: 2,
        }
    }

    /// Settings from the process environment, with explicit `overrides` on top.
    pub fn from_env(overrides: &Overrides) -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok(), overrides)
    }

    /// Settings from `lookup` (an environment), with explicit `overrides` on top.
    /// Precedence: override, signal-specific variable, generic variable, default.
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
        o: &Overrides,
    ) -> Result<Self, ConfigError> {
        let get = |k: &str| lookup(k).filter(|v| !v.trim().is_empty());
        let protocol = match (
            &o.protocol,
            get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
            get("OTEL_EXPORTER_OTLP_PROTOCOL"),
        ) {
            (Some(p), _, _) => *p,
            (None, Some(p), _) | (None, None, Some(p)) => Protocol::parse(&p)?,
            (None, None, None) => Protocol::Grpc,
        };
        let mut c = Self::new(protocol);

        // Endpoints: an explicit endpoint is a base URL (the signal path is appended
        // for HTTP) unless it is a signal-specific variable, which is used as is.
        if let Some(e) = &o.endpoint {
            c.traces_endpoint = signal_url(protocol, e, "traces");
            c.metrics_endpoint = signal_url(protocol, e, "metrics");
        } else {
            if let Some(e) = get("OTEL_EXPORTER_OTLP_ENDPOINT") {
                c.traces_endpoint = signal_url(protocol, &e, "traces");
                c.metrics_endpoint = signal_url(protocol, &e, "metrics");
            }
            if let Some(e) = get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
                c.traces_endpoint = e.trim().to_string();
            }
            if let Some(e) = get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") {
                c.metrics_endpoint = e.trim().to_string();
            }
        }
        for url in [&c.traces_endpoint, &c.metrics_endpoint] {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ConfigError::Endpoint(url.clone()));
            }
        }

        if let Some(h) = get("OTEL_EXPORTER_OTLP_HEADERS") {
            c.headers
                .extend(parse_key_values(&h, "OTEL_EXPORTER_OTLP_HEADERS")?);
        }
        if let Some(h) = get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") {
            merge(
                &mut c.headers,
                parse_key_values(&h, "OTEL_EXPORTER_OTLP_TRACES_HEADERS")?,
            );
        }
        for h in &o.headers {
            let (k, v) = h.split_once('=').ok_or_else(|| ConfigError::KeyValue {
                source_name: "--otlp-header".into(),
                item: h.clone(),
            })?;
            merge(
                &mut c.headers,
                vec![(k.trim().to_string(), v.trim().to_string())],
            );
        }
        for (k, _) in &c.headers {
            if k.is_empty() || !k.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
                return Err(ConfigError::HeaderName(k.clone()));
            }
        }

        c.compression = match (
            &o.compression,
            get("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"),
            get("OTEL_EXPORTER_OTLP_COMPRESSION"),
        ) {
            (Some(x), _, _) => *x,
            (None, Some(x), _) | (None, None, Some(x)) => Compression::parse(&x)?,
            (None, None, None) => Compression::None,
        };
        c.timeout = match (
            o.timeout,
            get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"),
            get("OTEL_EXPORTER_OTLP_TIMEOUT"),
        ) {
            (Some(t), _, _) => t,
            (None, Some(t), _) | (None, None, Some(t)) => {
                let ms: u64 = t
                    .trim()
                    .parse()
                    .map_err(|_| ConfigError::Timeout(t.clone()))?;
                Duration::from_millis(ms)
            }
            (None, None, None) => c.timeout,
        };
        c.certificate = o.certificate.clone().or_else(|| {
            get("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE")
                .or_else(|| get("OTEL_EXPORTER_OTLP_CERTIFICATE"))
                .map(PathBuf::from)
        });
        c.client_certificate = get("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE").map(PathBuf::from);
        c.client_key = get("OTEL_EXPORTER_OTLP_CLIENT_KEY").map(PathBuf::from);

        // Resource: OTEL_RESOURCE_ATTRIBUTES, then explicit attributes, then the
        // service name (override > OTEL_SERVICE_NAME > resource attribute > default).
        let mut resource: Vec<(String, String)> = Vec::new();
        if let Some(r) = get("OTEL_RESOURCE_ATTRIBUTES") {
            merge(
                &mut resource,
                parse_key_values(&r, "OTEL_RESOURCE_ATTRIBUTES")?,
            );
        }
        merge(&mut resource, o.resource.clone());
        let from_resource = resource
            .iter()
            .find(|(k, _)| k == attr::SERVICE_NAME)
            .map(|(_, v)| v.clone());
        resource.retain(|(k, _)| k != attr::SERVICE_NAME);
        if let Some((k, _)) = resource
            .iter()
            .find(|(k, _)| crate::schema::SPAN_ATTRIBUTE_KEYS.contains(&k.as_str()))
        {
            return Err(ConfigError::ReservedResource(k.clone()));
        }
        c.service_name = o
            .service_name
            .clone()
            .or_else(|| get("OTEL_SERVICE_NAME"))
            .or(from_resource)
            .unwrap_or_else(|| "ddshark".to_string());
        c.resource = resource
            .into_iter()
            .map(|(k, v)| (k, AttrValue::Str(v)))
            .collect();

        c.topic_filter = TopicFilter::new(&o.topics)?;
        Ok(c)
    }

    /// The full resource: `service.name`, then the other attributes.
    pub fn resource_attributes(&self) -> Vec<(String, AttrValue)> {
        let mut out = Vec::with_capacity(self.resource.len() + 1);
        out.push((
            attr::SERVICE_NAME.to_string(),
            AttrValue::Str(self.service_name.clone()),
        ));
        out.extend(self.resource.iter().cloned());
        out
    }

    /// Sets (or replaces) a string resource attribute.
    pub fn set_resource(&mut self, key: &str, value: &str) {
        if let Some(slot) = self.resource.iter_mut().find(|(k, _)| k == key) {
            slot.1 = AttrValue::Str(value.to_string());
        } else {
            self.resource
                .push((key.to_string(), AttrValue::Str(value.to_string())));
        }
    }
}

/// Explicit settings (command-line flags) that win over the environment.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub protocol: Option<Protocol>,
    /// Base endpoint (gRPC URL, or HTTP base to which `/v1/traces` is appended).
    pub endpoint: Option<String>,
    /// `KEY=VALUE` headers.
    pub headers: Vec<String>,
    pub compression: Option<Compression>,
    pub timeout: Option<Duration>,
    pub certificate: Option<PathBuf>,
    pub service_name: Option<String>,
    pub resource: Vec<(String, String)>,
    pub topics: Vec<String>,
}

/// The URL of a signal: gRPC uses the base endpoint; HTTP appends `/v1/<signal>`.
fn signal_url(protocol: Protocol, base: &str, signal: &str) -> String {
    let base = base.trim();
    match protocol {
        Protocol::Grpc => base.to_string(),
        Protocol::HttpProtobuf => {
            format!("{}/v1/{signal}", base.trim_end_matches('/'))
        }
    }
}

fn merge(into: &mut Vec<(String, String)>, new: Vec<(String, String)>) {
    for (k, v) in new {
        if let Some(slot) = into.iter_mut().find(|(ek, _)| ek.eq_ignore_ascii_case(&k)) {
            slot.1 = v;
        } else {
            into.push((k, v));
        }
    }
}

/// `k1=v1,k2=v2` with percent-encoded values (W3C baggage octets), as the OTel spec
/// defines for `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_RESOURCE_ATTRIBUTES`.
pub fn parse_key_values(s: &str, source_name: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out = Vec::new();
    for item in s.split(',') {
        if item.trim().is_empty() {
            continue;
        }
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
        out.push((percent_decode(k.trim()), percent_decode(v.trim())));
    }
    Ok(out)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c == b'%' {
            let hex = b
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            if let Some(v) = hex {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
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
    fn defaults() {
        let c = ExporterConfig::from_lookup(env(&[]), &Overrides::default()).unwrap();
        assert_eq!(c.protocol, Protocol::Grpc);
        assert_eq!(c.traces_endpoint, "http://localhost:4317");
        assert_eq!(c.service_name, "ddshark");
        assert_eq!(c.compression, Compression::None);
    }

    #[test]
    fn env_variables() {
        let c = ExporterConfig::from_lookup(
            env(&[
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4318/"),
                ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b,x=1"),
                ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
                ("OTEL_EXPORTER_OTLP_CERTIFICATE", "/ca.pem"),
                ("OTEL_SERVICE_NAME", "sniffer"),
                (
                    "OTEL_RESOURCE_ATTRIBUTES",
                    "host.name=h1,deployment.environment=lab",
                ),
            ]),
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(c.protocol, Protocol::HttpProtobuf);
        assert_eq!(c.traces_endpoint, "https://collector:4318/v1/traces");
        assert_eq!(c.metrics_endpoint, "https://collector:4318/v1/metrics");
        assert_eq!(
            c.headers,
            vec![("api-key".into(), "a b".into()), ("x".into(), "1".into())]
        );
        assert_eq!(c.compression, Compression::Gzip);
        assert_eq!(c.timeout, Duration::from_millis(2500));
        assert_eq!(c.certificate, Some(PathBuf::from("/ca.pem")));
        assert_eq!(c.service_name, "sniffer");
        assert_eq!(
            c.resource_attributes()[1],
            ("host.name".into(), AttrValue::Str("h1".into()))
        );
    }

    #[test]
    fn signal_endpoint_used_as_is_and_overrides_win() {
        let e = env(&[
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://x:1/custom"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "a=1"),
        ]);
        let c = ExporterConfig::from_lookup(&e, &Overrides::default()).unwrap();
        assert_eq!(c.traces_endpoint, "http://x:1/custom");
        let o = Overrides {
            protocol: Some(Protocol::Grpc),
            endpoint: Some("http://127.0.0.1:14317".into()),
            headers: vec!["a=2".into()],
            service_name: Some("svc".into()),
            ..Overrides::default()
        };
        let c = ExporterConfig::from_lookup(&e, &o).unwrap();
        assert_eq!(c.traces_endpoint, "http://127.0.0.1:14317");
        assert_eq!(c.headers, vec![("a".into(), "2".into())]);
        assert_eq!(c.service_name, "svc");
    }

    #[test]
    fn bad_values_are_errors() {
        let bad = |k: &str, v: &str| {
            ExporterConfig::from_lookup(env(&[(k, v)]), &Overrides::default()).is_err()
        };
        assert!(bad("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"));
        assert!(bad("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"));
        assert!(bad("OTEL_EXPORTER_OTLP_TIMEOUT", "soon"));
        assert!(bad("OTEL_EXPORTER_OTLP_HEADERS", "novalue"));
        assert!(bad("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4317"));
        assert!(bad("OTEL_RESOURCE_ATTRIBUTES", "capture.interface=eth0"));
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
