//! opentelemetry-otlp's exporters built from the flags: gRPC or HTTP, endpoint, timeout,
//! compression, headers and TLS files.

use std::collections::HashMap;

use opentelemetry_otlp::{
    MetricExporter as OtlpMetricExporter, SpanExporter as OtlpSpanExporter, WithExportConfig,
    WithHttpConfig, WithTonicConfig,
};
use opentelemetry_sdk::trace::SpanExporter as _;
use opentelemetry_sdk::Resource;

use crate::config::{Compression, Protocol, SignalConfig, TlsFiles};
use crate::error::ExportError;

fn build_error(signal: &SignalConfig, e: impl std::fmt::Display) -> ExportError {
    ExportError::Build {
        signal: signal.signal.name(),
        message: e.to_string(),
    }
}

fn read_pem(path: &std::path::Path) -> Result<Vec<u8>, ExportError> {
    std::fs::read(path).map_err(|e| ExportError::TlsFile {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// The PEM contents of [`TlsFiles`].
struct Pems {
    ca: Option<Vec<u8>>,
    /// Client certificate and key.
    identity: Option<(Vec<u8>, Vec<u8>)>,
}

fn pems(tls: &TlsFiles) -> Result<Pems, ExportError> {
    let ca = tls.certificate.as_deref().map(read_pem).transpose()?;
    let identity = match (&tls.client_certificate, &tls.client_key) {
        (Some(c), Some(k)) => Some((read_pem(c)?, read_pem(k)?)),
        _ => None,
    };
    Ok(Pems { ca, identity })
}

/// The settings every transport takes alike: an endpoint and a timeout set by flags
/// (otherwise the crate reads them from the environment).
fn export_config<B: WithExportConfig>(mut b: B, c: &SignalConfig) -> B {
    if let Some(e) = &c.endpoint {
        b = b.with_endpoint(e.clone());
    }
    if c.timeout_from_flag {
        b = b.with_timeout(c.timeout);
    }
    b
}

/// Feeds our layer's settings to an OTLP/gRPC builder (spans or metrics).
fn tonic_builder<B: WithExportConfig + WithTonicConfig>(
    b: B,
    c: &SignalConfig,
) -> Result<B, ExportError> {
    let mut b = export_config(b, c);
    if c.compression == Some(Compression::Gzip) {
        b = b.with_compression(opentelemetry_otlp::Compression::Gzip);
    }
    if !c.headers.is_empty() {
        let mut map = tonic::metadata::MetadataMap::new();
        for (k, v) in &c.headers {
            let key = tonic::metadata::MetadataKey::from_bytes(k.to_ascii_lowercase().as_bytes())
                .map_err(|e| build_error(c, format!("header {k:?}: {e}")))?;
            let val = tonic::metadata::MetadataValue::try_from(v.as_str())
                .map_err(|e| build_error(c, format!("header {k:?}: {e}")))?;
            map.insert(key, val);
        }
        b = b.with_metadata(map);
    }
    if !c.tls.is_empty() {
        let Pems { ca, identity } = pems(&c.tls)?;
        let mut tls = tonic::transport::ClientTlsConfig::new().with_native_roots();
        if let Some(pem) = ca {
            tls = tls.ca_certificate(tonic::transport::Certificate::from_pem(pem));
        }
        if let Some((cert, key)) = identity {
            tls = tls.identity(tonic::transport::Identity::from_pem(cert, key));
        }
        b = b.with_tls_config(tls);
    }
    Ok(b)
}

/// Feeds our layer's settings to an OTLP/HTTP builder (spans or metrics). With TLS
/// files, the HTTP client is ours (the crate's own client has no CA or identity).
fn http_builder<B: WithExportConfig + WithHttpConfig>(
    mut b: B,
    c: &SignalConfig,
) -> Result<B, ExportError> {
    b = b.with_protocol(match c.protocol {
        Protocol::HttpJson => opentelemetry_otlp::Protocol::HttpJson,
        _ => opentelemetry_otlp::Protocol::HttpBinary,
    });
    b = export_config(b, c);
    if c.compression == Some(Compression::Gzip) {
        b = b.with_compression(opentelemetry_otlp::Compression::Gzip);
    }
    if !c.headers.is_empty() {
        b = b.with_headers(c.headers.iter().cloned().collect::<HashMap<_, _>>());
    }
    if !c.tls.is_empty() {
        let Pems { ca, identity } = pems(&c.tls)?;
        let mut client = reqwest::Client::builder().timeout(c.timeout);
        if let Some(pem) = ca {
            for cert in
                reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| build_error(c, e))?
            {
                client = client.tls_certs_merge([cert]);
            }
        }
        if let Some((mut cert, key)) = identity {
            cert.extend_from_slice(&key);
            client =
                client.identity(reqwest::Identity::from_pem(&cert).map_err(|e| build_error(c, e))?);
        }
        b = b.with_http_client(client.build().map_err(|e| build_error(c, e))?);
    }
    Ok(b)
}

pub(super) fn span_exporter(
    c: &SignalConfig,
    resource: &Resource,
) -> Result<OtlpSpanExporter, ExportError> {
    let built = match c.protocol {
        Protocol::Grpc => tonic_builder(OtlpSpanExporter::builder().with_tonic(), c)?.build(),
        Protocol::HttpProtobuf | Protocol::HttpJson => {
            http_builder(OtlpSpanExporter::builder().with_http(), c)?.build()
        }
    };
    let mut e = built.map_err(|e| build_error(c, e))?;
    e.set_resource(resource);
    Ok(e)
}

pub(crate) fn metric_exporter(c: &SignalConfig) -> Result<OtlpMetricExporter, ExportError> {
    let built = match c.protocol {
        Protocol::Grpc => tonic_builder(OtlpMetricExporter::builder().with_tonic(), c)?.build(),
        Protocol::HttpProtobuf | Protocol::HttpJson => {
            http_builder(OtlpMetricExporter::builder().with_http(), c)?.build()
        }
    };
    built.map_err(|e| build_error(c, e))
}
