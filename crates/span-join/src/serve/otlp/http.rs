//! OTLP/HTTP: `POST /v1/traces`, `/v1/metrics` or `/v1/logs` with an
//! `application/x-protobuf` body, gzip or not; plain or TLS (rustls, ring). Every answer but
//! 200 is counted refused.

use std::io::Read;
use std::sync::Arc;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use prost::Message;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

use super::telemetry::{logs_response, metrics_response};
use super::{response, Door, DoorError, Reply};

/// The path of trace exports.
pub(crate) const TRACES_PATH: &str = "/v1/traces";
/// The path of metric exports.
pub(crate) const METRICS_PATH: &str = "/v1/metrics";
/// The path of log exports.
pub(crate) const LOGS_PATH: &str = "/v1/logs";

/// What a request exports.
#[derive(Clone, Copy)]
enum Signal {
    Traces,
    Metrics,
    Logs,
}

/// A TLS acceptor from PEM certificate chain and key.
pub(super) fn tls_acceptor(cert: &[u8], key: &[u8]) -> Result<TlsAcceptor> {
    let certs = CertificateDer::pem_slice_iter(cert)
        .collect::<Result<Vec<_>, _>>()
        .context("--otlp-tls-cert: not a PEM certificate chain")?;
    let key =
        PrivateKeyDer::from_pem_slice(key).context("--otlp-tls-key: not a PEM private key")?;
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("--otlp-tls-cert/--otlp-tls-key")?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Accepts connections until the runtime stops.
pub(super) async fn serve(listener: tokio::net::TcpListener, tls: Option<TlsAcceptor>, door: Door) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let (door, tls) = (door.clone(), tls.clone());
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let door = door.clone();
                async move { Ok::<_, std::convert::Infallible>(handle(&door, req).await) }
            });
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            match tls {
                Some(acceptor) => {
                    if let Ok(stream) = acceptor.accept(stream).await {
                        let _ = builder
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    }
                }
                None => {
                    let _ = builder
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                }
            }
        });
    }
}

fn answer(status: StatusCode, body: Bytes, content_type: &'static str) -> Response<Full<Bytes>> {
    let mut res = Response::new(Full::new(body));
    *res.status_mut() = status;
    res.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    res
}

async fn handle(door: &Door, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let (status, body) = match export(door, req).await {
        Ok((signal, Reply::Taken { rejected, message })) => {
            let body = match signal {
                Signal::Traces => response(rejected, message).encode_to_vec(),
                Signal::Metrics => metrics_response(rejected, message).encode_to_vec(),
                Signal::Logs => logs_response(rejected, message).encode_to_vec(),
            };
            return answer(StatusCode::OK, Bytes::from(body), "application/x-protobuf");
        }
        Ok((_, Reply::Refused(message))) => (StatusCode::BAD_REQUEST, message),
        Ok((_, Reply::Retry(message))) => (StatusCode::SERVICE_UNAVAILABLE, message),
        Err((status, e)) => (status, e.to_string()),
    };
    door.count_refused();
    answer(status, Bytes::from(body), "text/plain; charset=utf-8")
}

/// The request checked, read (at most `max_message` bytes, before and after gzip),
/// decoded and handed to the run loop.
async fn export(
    door: &Door,
    req: Request<Incoming>,
) -> Result<(Signal, Reply), (StatusCode, DoorError)> {
    let refuse = |status, text: String| (status, DoorError::Refused(text));
    let signal = match req.uri().path() {
        TRACES_PATH => Signal::Traces,
        METRICS_PATH => Signal::Metrics,
        LOGS_PATH => Signal::Logs,
        other => {
            return Err(refuse(
                StatusCode::NOT_FOUND,
                format!("{other}: only {TRACES_PATH}, {METRICS_PATH} and {LOGS_PATH} are served"),
            ))
        }
    };
    if req.method() != hyper::Method::POST {
        return Err(refuse(StatusCode::METHOD_NOT_ALLOWED, "only POST".into()));
    }
    let auth = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .map(|v| v.as_bytes());
    if !door.authorised(auth) {
        return Err((StatusCode::UNAUTHORIZED, DoorError::Unauthenticated));
    }
    let header = |name| req.headers().get(name).and_then(|v| v.to_str().ok());
    let content_type = header(hyper::header::CONTENT_TYPE).unwrap_or("");
    if !content_type.starts_with("application/x-protobuf") {
        return Err(refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("content type {content_type:?}: only application/x-protobuf"),
        ));
    }
    let gzip = match header(hyper::header::CONTENT_ENCODING).unwrap_or("identity") {
        "gzip" => true,
        "identity" | "" => false,
        other => {
            return Err(refuse(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("content encoding {other:?}: only gzip or none"),
            ))
        }
    };
    let max = door.max_message;
    let too_large = || {
        refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request is larger than --otlp-max-message ({max} bytes)"),
        )
    };
    let body = match Limited::new(req.into_body(), max).collect().await {
        Ok(body) => body.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => return Err(too_large()),
        Err(e) => {
            return Err(refuse(
                StatusCode::BAD_REQUEST,
                format!("reading the request: {e}"),
            ))
        }
    };
    let body = if gzip {
        let mut plain = Vec::new();
        let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
        if let Err(e) = flate2::read::GzDecoder::new(&body[..])
            .take(limit)
            .read_to_end(&mut plain)
        {
            return Err(refuse(StatusCode::BAD_REQUEST, format!("gzip: {e}")));
        }
        if plain.len() > max {
            return Err(too_large());
        }
        Bytes::from(plain)
    } else {
        body
    };
    let undecodable = |what: &str, e: prost::DecodeError| {
        refuse(StatusCode::BAD_REQUEST, format!("not an OTLP {what}: {e}"))
    };
    let reply = match signal {
        Signal::Traces => {
            let request = crate::otlp::decode(&body)
                .map_err(|e| undecodable("ExportTraceServiceRequest", e))?;
            door.export(request).await
        }
        Signal::Metrics => {
            let request = prost::Message::decode(body)
                .map_err(|e| undecodable("ExportMetricsServiceRequest", e))?;
            door.metrics(&request).await
        }
        Signal::Logs => {
            let request = prost::Message::decode(body)
                .map_err(|e| undecodable("ExportLogsServiceRequest", e))?;
            door.logs(&request).await
        }
    };
    match reply {
        Ok(reply) => Ok((signal, reply)),
        Err(e @ DoorError::Refused(_)) => Err((StatusCode::BAD_REQUEST, e)),
        Err(e) => Err((StatusCode::SERVICE_UNAVAILABLE, e)),
    }
}
