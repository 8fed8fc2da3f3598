//! The OTLP intake (`--otlp-grpc`, `--otlp-http`): trace exports served on a small tokio
//! runtime, each request decoded there and handed to the run loop, which converts it
//! ([`crate::otlp`]), journals what the join takes (with `--state`), feeds the join and
//! only then answers: an acknowledged export is in the join's state or journal, so a
//! kill -9 of the join makes the collector send it again (the join takes a span it already
//! has once: `duplicates`).
//!
//! Refused, counted (`otlp_refused`, and `rejected` per span) and never fatal: requests
//! that cannot be decoded, are larger than `--otlp-max-message`, lack the bearer token, or
//! hold no span the join can use (gRPC `INVALID_ARGUMENT` / HTTP 400 naming the first
//! problem); a request with some bad spans is taken in part (OTLP's partial success,
//! naming the first problem). While the run loop is busy the request is refused as
//! retryable (`UNAVAILABLE` / 503).
//!
//! ddshark's metrics and logs come in at the same door and go straight to InfluxDB
//! ([`telemetry`]).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::LogsServiceServer;
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::MetricsServiceServer;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use tokio::sync::oneshot;

use super::args::OtlpArgs;
use super::checkpoint::Checkpoint;
use super::Input;
use crate::influxdb::{Bucket, Outcome, Writer};
pub(super) use crate::otlp::raw::RawLayout;
use crate::otlp::{convert_with_raw, journal_line};
use crate::{LineWriter, SpanJoin};

mod http;
mod telemetry;

pub(super) use telemetry::TelemetryCounters;

/// A decoded export on its way to the run loop, with where its answer goes.
pub(super) struct Export {
    pub(super) request: ExportTraceServiceRequest,
    pub(super) reply: oneshot::Sender<Reply>,
}

/// The run loop's answer.
#[derive(Debug)]
pub(super) enum Reply {
    /// Taken (in the join, and journalled with `--state`); `rejected` spans were not,
    /// `message` says why.
    Taken { rejected: u64, message: String },
    /// No span of it was taken: why.
    Refused(String),
    /// Not (all) durable yet: to be sent again (gRPC `UNAVAILABLE`, HTTP 503).
    Retry(String),
}

/// What both servers share.
#[derive(Clone)]
pub(super) struct Door {
    inputs: mpsc::SyncSender<Input>,
    /// `authorization` header value required, if any (`Bearer TOKEN`).
    bearer: Option<Arc<str>>,
    pub(super) refused: Arc<AtomicU64>,
    pub(super) max_message: usize,
    /// Where metrics and logs are written (`--influx-url`).
    influx: Option<Arc<Writer>>,
    telemetry: Arc<TelemetryCounters>,
}

/// Why a request was not taken, before the run loop saw it.
#[derive(Debug, thiserror::Error)]
pub(super) enum DoorError {
    #[error("missing or wrong bearer token (authorization: Bearer …)")]
    Unauthenticated,
    #[error("the join is busy or stopping; send again")]
    Busy,
    #[error("{0}")]
    Refused(String),
}

impl Door {
    pub(super) fn count_refused(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
    }

    /// Checks the `authorization` header (as the collector's bearertokenauth does).
    pub(super) fn authorised(&self, header: Option<&[u8]>) -> bool {
        match &self.bearer {
            None => true,
            Some(want) => header.is_some_and(|got| {
                // (compared in full whatever the first difference)
                let want = want.as_bytes();
                got.len() == want.len()
                    && got.iter().zip(want).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
            }),
        }
    }

    /// Hands the request to the run loop and waits for its answer.
    pub(super) async fn export(
        &self,
        request: ExportTraceServiceRequest,
    ) -> Result<Reply, DoorError> {
        let (reply, answer) = oneshot::channel();
        if self
            .inputs
            .try_send(Input::Export(Export { request, reply }))
            .is_err()
        {
            return Err(DoorError::Busy);
        }
        answer.await.map_err(|_| DoorError::Busy)
    }
}

/// The run loop's side: the request converted, journalled, fed; the answer sent (with
/// `--influx-url`: once its raw points are written).
pub(super) fn take(
    join: &mut SpanJoin,
    checkpoint: &mut Option<Checkpoint>,
    influx: Option<&Writer>,
    layout: &mut RawLayout,
    export: Export,
) {
    let mut raw = LineWriter::default();
    let converted = convert_with_raw(&export.request, influx.map(|_| (&mut *layout, &mut raw)));
    let message = converted
        .first_error
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    if converted.spans.is_empty() && converted.raw_points == 0 && converted.refused > 0 {
        for _ in 0..converted.refused {
            join.reject();
        }
        // (counted refused by the server that answers)
        let _ = export.reply.send(Reply::Refused(format!(
            "{} spans refused, none taken: {message}",
            converted.refused
        )));
        return;
    }
    if let Some(w) = influx {
        if !w.has_room(converted.raw_points) {
            // (nothing taken: the collector sends it again)
            join.counters.influx_queue_full = join.counters.influx_queue_full.saturating_add(1);
            let _ = export.reply.send(Reply::Retry(format!(
                "{} raw points wait for InfluxDB (--influx-max-queued); send again",
                w.counters.queued.load(std::sync::atomic::Ordering::Relaxed)
            )));
            return;
        }
    }
    for _ in 0..converted.refused {
        join.reject();
    }
    if let Some(cp) = checkpoint.as_mut() {
        let mut lines = LineWriter::default();
        for span in &converted.spans {
            journal_line(span, &mut lines);
        }
        cp.record(lines.buf.as_bytes());
    }
    for span in &converted.spans {
        span.feed(join);
    }
    let rejected = converted.refused;
    let Some(w) = influx else {
        let _ = export.reply.send(Reply::Taken { rejected, message });
        return;
    };
    let reply = export.reply;
    // (the writers' facts this batch holds are written again if InfluxDB does not take it)
    let forget = layout.forget_handle();
    w.try_submit(Bucket::Raw, raw.buf, converted.raw_points, move |outcome| {
        if !matches!(outcome, Outcome::Written) {
            forget.store(true, Ordering::Relaxed);
        }
        let _ = reply.send(match outcome {
            Outcome::Written => Reply::Taken { rejected, message },
            Outcome::Rejected { message, .. } => Reply::Taken {
                rejected,
                message: format!("InfluxDB refused raw points: {message}"),
            },
            Outcome::Abandoned => {
                Reply::Retry("InfluxDB did not take the raw points yet; send again".into())
            }
        });
    });
}

/// The OTLP answer to a reply (partial success when some spans were refused).
pub(super) fn response(rejected: u64, message: String) -> ExportTraceServiceResponse {
    ExportTraceServiceResponse {
        partial_success: (rejected > 0).then(|| ExportTracePartialSuccess {
            rejected_spans: crate::as_i64(rejected),
            error_message: message,
        }),
    }
}

struct Grpc(Door);

impl Grpc {
    /// The request, if it carries the bearer token (when one is required).
    fn authorised_request<T>(&self, request: tonic::Request<T>) -> Result<T, DoorError> {
        let auth = request
            .metadata()
            .get("authorization")
            .map(|v| v.as_bytes());
        if self.0.authorised(auth) {
            Ok(request.into_inner())
        } else {
            Err(DoorError::Unauthenticated)
        }
    }
}

#[tonic::async_trait]
impl TraceService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let request = self
            .authorised_request(request)
            .map_err(|e| tonic::Status::unauthenticated(e.to_string()))?;
        match self.0.export(request).await {
            Ok(Reply::Taken { rejected, message }) => {
                Ok(tonic::Response::new(response(rejected, message)))
            }
            Ok(Reply::Refused(message)) => Err(tonic::Status::invalid_argument(message)),
            Ok(Reply::Retry(message)) => Err(tonic::Status::unavailable(message)),
            Err(e) => Err(tonic::Status::unavailable(e.to_string())),
        }
    }
}

/// The three gRPC services on one server, by the service name in the path (tonic's own
/// router would bring axum into the tree for this).
#[derive(Clone)]
struct Services {
    traces: TraceServiceServer<Grpc>,
    metrics: MetricsServiceServer<Grpc>,
    logs: LogsServiceServer<Grpc>,
}

impl tower::Service<::http::Request<tonic::body::Body>> for Services {
    type Response = ::http::Response<tonic::body::Body>;
    type Error = std::convert::Infallible;
    type Future = tonic::codegen::BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        // (the generated servers are always ready)
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: ::http::Request<tonic::body::Body>) -> Self::Future {
        use tonic::server::NamedService;
        let service = request
            .uri()
            .path()
            .trim_start_matches('/')
            .split('/')
            .next()
            .unwrap_or("");
        if service == TraceServiceServer::<Grpc>::NAME {
            Box::pin(tower::Service::call(&mut self.traces, request))
        } else if service == MetricsServiceServer::<Grpc>::NAME {
            Box::pin(tower::Service::call(&mut self.metrics, request))
        } else if service == LogsServiceServer::<Grpc>::NAME {
            Box::pin(tower::Service::call(&mut self.logs, request))
        } else {
            let status = tonic::Status::unimplemented(format!(
                "{service}: only the OTLP trace, metrics and logs services are served"
            ));
            Box::pin(std::future::ready(Ok(status.into_http())))
        }
    }
}

/// Whether `addr` is a loopback address (anything else needs the token and TLS).
fn loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// The servers, running until the runtime is dropped.
pub(super) struct Servers {
    runtime: tokio::runtime::Runtime,
    pub(super) refused: Arc<AtomicU64>,
    pub(super) telemetry: Arc<TelemetryCounters>,
    /// Where they listen (the port chosen when given 0).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) grpc: Option<SocketAddr>,
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) http: Option<SocketAddr>,
}

impl Servers {
    pub(super) fn shutdown(self) {
        self.runtime
            .shutdown_timeout(std::time::Duration::from_secs(1));
    }
}

/// Checks the flags (beyond loopback: the token and TLS, as the collector's receivers),
/// binds the listeners and starts serving; trace exports go to `inputs`, metrics and logs
/// to `influx`.
pub(super) fn start(
    args: &OtlpArgs,
    inputs: mpsc::SyncSender<Input>,
    influx: Option<Arc<Writer>>,
) -> Result<Servers> {
    for (flag, addr) in [("--otlp-grpc", args.grpc), ("--otlp-http", args.http)] {
        let Some(addr) = addr else { continue };
        if !loopback(&addr) {
            if args.token_file.is_none() {
                bail!("{flag} {addr} listens beyond loopback: give the bearer token the exporters send with --otlp-token-file FILE (and TLS with --otlp-tls-cert/--otlp-tls-key), as the collector's receivers require");
            }
            if args.tls_cert.is_none() {
                bail!("{flag} {addr} listens beyond loopback: give TLS with --otlp-tls-cert FILE and --otlp-tls-key FILE, as the collector's receivers require");
            }
        }
    }
    if args.tls_cert.is_some() != args.tls_key.is_some() {
        bail!("--otlp-tls-cert and --otlp-tls-key go together");
    }
    let bearer = match &args.token_file {
        Some(path) => Some(read_token(path)?),
        None => None,
    };
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some((
            std::fs::read(cert).with_context(|| format!("--otlp-tls-cert {}", cert.display()))?,
            std::fs::read(key).with_context(|| format!("--otlp-tls-key {}", key.display()))?,
        )),
        _ => None,
    };
    let refused = Arc::new(AtomicU64::new(0));
    let telemetry = Arc::new(TelemetryCounters::default());
    let (mut grpc_at, mut http_at) = (None, None);
    let door = Door {
        inputs,
        bearer,
        refused: refused.clone(),
        max_message: args.max_message,
        influx,
        telemetry: telemetry.clone(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("join-otlp")
        .enable_all()
        .build()
        .context("starting the OTLP runtime")?;
    if let Some(addr) = args.grpc {
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(addr))
            .with_context(|| format!("--otlp-grpc {addr}"))?;
        grpc_at = listener.local_addr().ok();
        let mut builder = tonic::transport::Server::builder();
        if let Some((cert, key)) = &tls {
            let identity = tonic::transport::Identity::from_pem(cert, key);
            builder = builder
                .tls_config(tonic::transport::ServerTlsConfig::new().identity(identity))
                .context("--otlp-tls-cert/--otlp-tls-key for --otlp-grpc")?;
        }
        let gzip = tonic::codec::CompressionEncoding::Gzip;
        let traces = TraceServiceServer::new(Grpc(door.clone()))
            .max_decoding_message_size(args.max_message)
            .accept_compressed(gzip);
        let metrics = MetricsServiceServer::new(Grpc(door.clone()))
            .max_decoding_message_size(args.max_message)
            .accept_compressed(gzip);
        let logs = LogsServiceServer::new(Grpc(door.clone()))
            .max_decoding_message_size(args.max_message)
            .accept_compressed(gzip);
        let counted = door.clone();
        let layer =
            tower::util::MapResponseLayer::new(move |res: ::http::Response<tonic::body::Body>| {
                // (every refusal, tonic's own included: undecodable, too large)
                if res.headers().get("grpc-status").is_some_and(|s| s != "0") {
                    counted.count_refused();
                }
                res
            });
        let incoming = tonic::transport::server::TcpIncoming::from(listener);
        let server = builder.layer(layer);
        let services = Services {
            traces,
            metrics,
            logs,
        };
        runtime.spawn(async move {
            if let Err(e) = server.serve_with_incoming(services, incoming).await {
                eprintln!("ddshark-join: the OTLP/gRPC server stopped: {e}");
            }
        });
        eprintln!("ddshark-join: OTLP/gRPC on {}", grpc_at.unwrap_or(addr));
    }
    if let Some(addr) = args.http {
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(addr))
            .with_context(|| format!("--otlp-http {addr}"))?;
        http_at = listener.local_addr().ok();
        let acceptor = match &tls {
            Some((cert, key)) => Some(http::tls_acceptor(cert, key)?),
            None => None,
        };
        runtime.spawn(http::serve(listener, acceptor, door.clone()));
        eprintln!(
            "ddshark-join: OTLP/HTTP on {} (POST {}, {}, {}; application/x-protobuf)",
            http_at.unwrap_or(addr),
            http::TRACES_PATH,
            http::METRICS_PATH,
            http::LOGS_PATH
        );
    }
    Ok(Servers {
        runtime,
        refused,
        telemetry,
        grpc: grpc_at,
        http: http_at,
    })
}

/// The token file's first line, as the `authorization` header carries it.
fn read_token(path: &Path) -> Result<Arc<str>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--otlp-token-file {}", path.display()))?;
    let token = text.lines().next().unwrap_or("").trim();
    if token.is_empty() {
        bail!("--otlp-token-file {}: empty", path.display());
    }
    Ok(Arc::from(format!("Bearer {token}")))
}

#[cfg(test)]
mod tests;
