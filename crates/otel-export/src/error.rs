//! Errors of configuration and start-up. Export failures at run time are never
//! errors to the caller: they are counted in [`crate::ExportStats`].

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("unsupported OTLP protocol {0:?} (use grpc, http/protobuf or http/json)")]
    Protocol(String),
    #[error("OTLP endpoint {0:?} must be an http:// or https:// URL")]
    Endpoint(String),
    #[error("{source_name}: {item:?} is not KEY=VALUE")]
    KeyValue { source_name: String, item: String },
    #[error("invalid header name {0:?}")]
    HeaderName(String),
    #[error("OTLP timeout {0:?} is not a number of milliseconds")]
    Timeout(String),
    #[error("OTLP client TLS needs both a client certificate and a client key (OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE, OTEL_EXPORTER_OTLP_CLIENT_KEY)")]
    ClientIdentity,
    #[error("resource attribute {0:?} is a span attribute of ddshark's schema; set it per span (e.g. --capture-interface), not as a resource attribute")]
    ReservedResource(String),
    #[error("topic pattern {pattern:?}: {message}")]
    TopicPattern { pattern: String, message: String },
}

#[derive(Debug, Error)]
pub enum ExportError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{path}: cannot read TLS file: {message}")]
    TlsFile { path: String, message: String },
    #[error("OTLP {signal} exporter: {message}")]
    Build {
        signal: &'static str,
        message: String,
    },
    #[error("cannot start the exporter runtime: {0}")]
    Runtime(String),
}
