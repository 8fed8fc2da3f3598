//! OTLP transports: gRPC (tonic, pre-encoded messages through a pass-through codec)
//! and HTTP/protobuf (reqwest with rustls). Both send already-encoded request bytes.

use std::io::Write as _;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceResponse;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
use prost::Message;
use tonic::codec::{Codec, CompressionEncoding, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::{Code, Status};

use crate::config::{Compression, ExporterConfig, Protocol};
use crate::error::ExportError;

/// Which OTLP service a request goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Traces,
    Metrics,
}

/// A failed export request.
#[derive(Debug, Clone)]
pub struct SendError {
    /// Worth retrying (collector unreachable, overloaded, timed out).
    pub retryable: bool,
    pub message: String,
}

/// What the collector said about an accepted request.
#[derive(Debug, Clone, Copy, Default)]
pub struct Accepted {
    /// Items the collector rejected (OTLP partial success).
    pub rejected: u64,
}

/// Pass-through codec: the request is already protobuf; the response is kept raw.
#[derive(Debug, Clone, Copy, Default)]
struct RawCodec;

#[derive(Debug, Clone, Copy, Default)]
struct RawEncoder;

#[derive(Debug, Clone, Copy, Default)]
struct RawDecoder;

impl Codec for RawCodec {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = RawEncoder;
    type Decoder = RawDecoder;
    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }
    fn decoder(&mut self) -> RawDecoder {
        RawDecoder
    }
}

impl Encoder for RawEncoder {
    type Item = Bytes;
    type Error = Status;
    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.reserve(item.len());
        dst.put(item);
        Ok(())
    }
}

impl Decoder for RawDecoder {
    type Item = Bytes;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

const TRACES_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";
const METRICS_PATH: &str = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export";

#[derive(Debug, Clone)]
pub enum Transport {
    Grpc {
        traces: Channel,
        metrics: Channel,
        metadata: MetadataMap,
        gzip: bool,
        timeout: Duration,
        endpoint: String,
    },
    Http {
        client: reqwest::Client,
        traces_url: String,
        metrics_url: String,
        headers: reqwest::header::HeaderMap,
        gzip: bool,
    },
}

fn read_file(path: &std::path::Path) -> Result<Vec<u8>, ExportError> {
    std::fs::read(path).map_err(|e| ExportError::TlsFile {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

impl Transport {
    /// Builds the transport. Must run inside the exporter's tokio runtime (gRPC
    /// channels connect lazily and reconnect by themselves).
    pub fn new(c: &ExporterConfig) -> Result<Self, ExportError> {
        let gzip = c.compression == Compression::Gzip;
        let ca = c.certificate.as_deref().map(read_file).transpose()?;
        let identity = match (&c.client_certificate, &c.client_key) {
            (Some(cert), Some(key)) => Some((read_file(cert)?, read_file(key)?)),
            _ => None,
        };
        match c.protocol {
            Protocol::Grpc => {
                let channel = |url: &str| -> Result<Channel, ExportError> {
                    let terr = |e: tonic::transport::Error| ExportError::Transport {
                        endpoint: url.to_string(),
                        message: e.to_string(),
                    };
                    let mut ep = Endpoint::from_shared(url.to_string())
                        .map_err(terr)?
                        .connect_timeout(c.timeout.min(Duration::from_secs(5)))
                        .timeout(c.timeout)
                        .tcp_nodelay(true);
                    if url.starts_with("https://") {
                        let mut tls = ClientTlsConfig::new().with_native_roots();
                        if let Some(pem) = &ca {
                            tls = tls.ca_certificate(Certificate::from_pem(pem));
                        }
                        if let Some((cert, key)) = &identity {
                            tls = tls.identity(Identity::from_pem(cert, key));
                        }
                        ep = ep.tls_config(tls).map_err(terr)?;
                    }
                    Ok(ep.connect_lazy())
                };
                let traces = channel(&c.traces_endpoint)?;
                let metrics = if c.metrics_endpoint == c.traces_endpoint {
                    traces.clone()
                } else {
                    channel(&c.metrics_endpoint)?
                };
                let mut metadata = MetadataMap::new();
                for (k, v) in &c.headers {
                    let key = MetadataKey::from_bytes(k.to_ascii_lowercase().as_bytes()).map_err(
                        |e| ExportError::Transport {
                            endpoint: c.traces_endpoint.clone(),
                            message: format!("header {k:?}: {e}"),
                        },
                    )?;
                    let val = MetadataValue::try_from(v.as_str()).map_err(|e| {
                        ExportError::Transport {
                            endpoint: c.traces_endpoint.clone(),
                            message: format!("header {k:?}: {e}"),
                        }
                    })?;
                    metadata.insert(key, val);
                }
                Ok(Transport::Grpc {
                    traces,
                    metrics,
                    metadata,
                    gzip,
                    timeout: c.timeout,
                    endpoint: c.traces_endpoint.clone(),
                })
            }
            Protocol::HttpProtobuf => {
                let herr = |e: &dyn std::fmt::Display| ExportError::Transport {
                    endpoint: c.traces_endpoint.clone(),
                    message: e.to_string(),
                };
                let mut b = reqwest::Client::builder()
                    .timeout(c.timeout)
                    .connect_timeout(c.timeout.min(Duration::from_secs(5)))
                    .pool_max_idle_per_host(4)
                    .tcp_nodelay(true);
                if let Some(pem) = &ca {
                    for cert in reqwest::Certificate::from_pem_bundle(pem).map_err(|e| herr(&e))? {
                        b = b.add_root_certificate(cert);
                    }
                }
                if let Some((cert, key)) = &identity {
                    let mut pem = cert.clone();
                    pem.extend_from_slice(key);
                    b = b.identity(reqwest::Identity::from_pem(&pem).map_err(|e| herr(&e))?);
                }
                let client = b.build().map_err(|e| herr(&e))?;
                let mut headers = reqwest::header::HeaderMap::new();
                for (k, v) in &c.headers {
                    let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                        .map_err(|e| herr(&e))?;
                    let val = reqwest::header::HeaderValue::from_str(v).map_err(|e| herr(&e))?;
                    headers.insert(name, val);
                }
                Ok(Transport::Http {
                    client,
                    traces_url: c.traces_endpoint.clone(),
                    metrics_url: c.metrics_endpoint.clone(),
                    headers,
                    gzip,
                })
            }
        }
    }

    /// Sends one encoded `Export*ServiceRequest`.
    pub async fn send(&self, signal: Signal, body: Bytes) -> Result<Accepted, SendError> {
        match self {
            Transport::Grpc {
                traces,
                metrics,
                metadata,
                gzip,
                timeout,
                endpoint,
            } => {
                let (channel, path) = match signal {
                    Signal::Traces => (traces.clone(), TRACES_PATH),
                    Signal::Metrics => (metrics.clone(), METRICS_PATH),
                };
                let mut grpc = tonic::client::Grpc::new(channel)
                    .max_decoding_message_size(1 << 20)
                    .max_encoding_message_size(usize::MAX);
                if *gzip {
                    grpc = grpc
                        .send_compressed(CompressionEncoding::Gzip)
                        .accept_compressed(CompressionEncoding::Gzip);
                }
                grpc.ready().await.map_err(|e| SendError {
                    retryable: true,
                    message: format!("{endpoint}: {e}"),
                })?;
                let mut req = tonic::Request::new(body);
                *req.metadata_mut() = metadata.clone();
                req.set_timeout(*timeout);
                let resp = grpc
                    .unary(req, PathAndQuery::from_static(path), RawCodec)
                    .await
                    .map_err(|s| SendError {
                        retryable: grpc_retryable(s.code()),
                        message: format!("{endpoint}: gRPC {:?}: {}", s.code(), s.message()),
                    })?;
                Ok(partial_success(signal, resp.get_ref()))
            }
            Transport::Http {
                client,
                traces_url,
                metrics_url,
                headers,
                gzip,
            } => {
                let url = match signal {
                    Signal::Traces => traces_url,
                    Signal::Metrics => metrics_url,
                };
                let mut req = client
                    .post(url.as_str())
                    .headers(headers.clone())
                    .header(reqwest::header::CONTENT_TYPE, "application/x-protobuf");
                let body = if *gzip {
                    req = req.header(reqwest::header::CONTENT_ENCODING, "gzip");
                    gzip_bytes(&body).map_err(|e| SendError {
                        retryable: false,
                        message: format!("gzip: {e}"),
                    })?
                } else {
                    body
                };
                let resp = req.body(body).send().await.map_err(|e| SendError {
                    retryable: true,
                    message: format!("{url}: {e}"),
                })?;
                let status = resp.status();
                let bytes = resp.bytes().await.unwrap_or_default();
                if status.is_success() {
                    Ok(partial_success(signal, &bytes))
                } else {
                    let code = status.as_u16();
                    Err(SendError {
                        retryable: matches!(code, 408 | 429 | 502 | 503 | 504),
                        message: format!(
                            "{url}: HTTP {status}: {}",
                            String::from_utf8_lossy(bytes.get(..200).unwrap_or(&bytes))
                        ),
                    })
                }
            }
        }
    }
}

/// Retryable gRPC codes per the OTLP specification.
fn grpc_retryable(code: Code) -> bool {
    matches!(
        code,
        Code::Cancelled
            | Code::DeadlineExceeded
            | Code::Aborted
            | Code::OutOfRange
            | Code::Unavailable
            | Code::DataLoss
            | Code::ResourceExhausted
            | Code::Unknown
    )
}

fn partial_success(signal: Signal, body: &[u8]) -> Accepted {
    let rejected = match signal {
        Signal::Traces => ExportTraceServiceResponse::decode(body)
            .ok()
            .and_then(|r| r.partial_success)
            .map_or(0, |p| u64::try_from(p.rejected_spans).unwrap_or(0)),
        Signal::Metrics => ExportMetricsServiceResponse::decode(body)
            .ok()
            .and_then(|r| r.partial_success)
            .map_or(0, |p| u64::try_from(p.rejected_data_points).unwrap_or(0)),
    };
    Accepted { rejected }
}

fn gzip_bytes(b: &[u8]) -> std::io::Result<Bytes> {
    let mut enc =
        flate2::write::GzEncoder::new(Vec::with_capacity(b.len() / 4), flate2::Compression::fast());
    enc.write_all(b)?;
    Ok(Bytes::from(enc.finish()?))
}
