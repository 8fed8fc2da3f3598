//! The exporter: ddshark's bounded queue in front of opentelemetry-otlp's
//! `SpanExporter` and `MetricExporter`, on the exporter's own tokio runtime.
//!
//! Why a queue of our own rather than the SDK's `BatchSpanProcessor`: the capture
//! must never block and every span must be counted. The SDK's processor drops
//! silently (a log line at shutdown) and keeps no sent/failed counts; ours counts
//! each span once as dropped, sent or failed, and the Health view shows them.
//! Encoding, compression, TLS, headers, timeouts and retries are the crate's.
//!
//! Accounting (after [`Exporter::shutdown`]):
//! `offered = filtered + dropped + enqueued` and
//! `enqueued = sent + failed + abandoned`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry::{InstrumentationScope, Key};
use opentelemetry_otlp::{
    MetricExporter as OtlpMetricExporter, SpanExporter as OtlpSpanExporter, WithExportConfig,
    WithHttpConfig, WithTonicConfig,
};
use opentelemetry_sdk::trace::SpanExporter as _;
use opentelemetry_sdk::Resource;
use tokio::runtime::Runtime;
use tokio::sync::{mpsc, Semaphore};

use crate::config::{Compression, ExporterConfig, Protocol, SignalConfig, TlsFiles, TopicFilter};
use crate::error::ExportError;
use crate::metrics::{MetricsPipeline, MetricsSnapshot, SelfCounters};
use crate::schema::{SpanDataBuilder, SpanDetail, SpanRecord};

const SCOPE_NAME: &str = "ddshark";
const SCOPE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// A point-in-time copy of the exporter's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// Spans handed to `try_export`.
    pub offered: u64,
    /// Spans skipped by the topic filter.
    pub filtered: u64,
    /// Spans dropped because the queue was full (collector slow or down).
    pub dropped: u64,
    /// Spans accepted into the queue.
    pub enqueued: u64,
    /// Spans in requests the collector accepted.
    pub sent: u64,
    /// Spans given up: the crate's retries exhausted, or a permanent error.
    pub failed: u64,
    /// Spans still queued or in flight when shutdown gave up waiting.
    pub abandoned: u64,
    /// Spans waiting in the queue now.
    pub queue_len: u64,
    /// Spans in batches being sent now.
    pub in_flight: u64,
    pub requests_ok: u64,
    pub requests_failed: u64,
    /// Metrics reports exported.
    pub metrics_sent: u64,
    /// Metrics reports dropped because their queue was full.
    pub metrics_dropped: u64,
    /// Metrics reports the collector refused or that could not be sent.
    pub metrics_failed: u64,
    /// Metrics reports offered after the last one exported (failed, dropped, or not
    /// sent by exit). Metrics are cumulative: an exported report carries the totals of
    /// every one before it, so a failure a later export superseded lost nothing and only
    /// these are lost.
    pub metrics_undelivered: u64,
    pub last_error: Option<String>,
}

#[derive(Debug)]
pub(crate) struct Counters {
    offered: AtomicU64,
    filtered: AtomicU64,
    dropped: AtomicU64,
    enqueued: AtomicU64,
    sent: AtomicU64,
    failed: AtomicU64,
    abandoned: AtomicU64,
    in_flight: AtomicU64,
    requests_ok: AtomicU64,
    requests_failed: AtomicU64,
    metrics_sent: AtomicU64,
    metrics_dropped: AtomicU64,
    metrics_failed: AtomicU64,
    /// Metrics reports offered (each one's sequence number, from 1).
    metrics_offered: AtomicU64,
    /// The sequence number of the newest metrics report exported.
    metrics_delivered_upto: AtomicU64,
    /// The last export request succeeded (or none was made yet).
    healthy: AtomicBool,
    last_error: Mutex<Option<String>>,
}

impl Default for Counters {
    fn default() -> Self {
        Self {
            offered: AtomicU64::new(0),
            filtered: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            enqueued: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            abandoned: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            requests_ok: AtomicU64::new(0),
            requests_failed: AtomicU64::new(0),
            metrics_sent: AtomicU64::new(0),
            metrics_dropped: AtomicU64::new(0),
            metrics_failed: AtomicU64::new(0),
            metrics_offered: AtomicU64::new(0),
            metrics_delivered_upto: AtomicU64::new(0),
            healthy: AtomicBool::new(true),
            last_error: Mutex::new(None),
        }
    }
}

impl Counters {
    fn set_error(&self, e: String) {
        if let Ok(mut g) = self.last_error.lock() {
            *g = Some(e);
        }
    }

    /// The exporter's own counters, reported as metrics.
    pub(crate) fn own(&self) -> SelfCounters {
        SelfCounters {
            enqueued: get(&self.enqueued),
            dropped: get(&self.dropped),
            sent: get(&self.sent),
            failed: get(&self.failed),
        }
    }
}

fn add(a: &AtomicU64, n: u64) {
    a.fetch_add(n, Ordering::Relaxed);
}

fn get(a: &AtomicU64) -> u64 {
    a.load(Ordering::Relaxed)
}

enum Control {
    /// Send everything queued so far, then answer.
    Flush(std::sync::mpsc::SyncSender<()>),
    /// Flush, then stop.
    Shutdown(std::sync::mpsc::SyncSender<()>),
}

/// The producer side: cheap to clone, never blocks.
#[derive(Clone, Debug)]
pub struct ExportHandle {
    spans: mpsc::Sender<SpanRecord>,
    /// Metrics reports with their sequence numbers; `None` when metrics are not exported.
    metrics: Option<mpsc::Sender<(u64, MetricsSnapshot)>>,
    counters: Arc<Counters>,
    filter: Arc<TopicFilter>,
    capacity: usize,
    runtime: tokio::runtime::Handle,
}

impl ExportHandle {
    /// Queues one span unless the topic filter excludes it. Never blocks: when the
    /// queue is full the span is dropped and counted. Returns whether it was queued.
    pub fn try_export(&self, rec: SpanRecord) -> bool {
        self.admit(&rec) && self.count_sent(self.spans.try_send(rec))
    }

    /// Counts a span offered; `false` (counted as filtered) when the topic filter
    /// excludes it.
    fn admit(&self, rec: &SpanRecord) -> bool {
        add(&self.counters.offered, 1);
        let admitted = self.filter.matches(rec.topic.as_deref());
        if !admitted {
            add(&self.counters.filtered, 1);
        }
        admitted
    }

    /// Counts a send's outcome, enqueued or dropped; whether it was enqueued.
    fn count_sent<E>(&self, sent: Result<(), E>) -> bool {
        let enqueued = sent.is_ok();
        let counter = if enqueued {
            &self.counters.enqueued
        } else {
            &self.counters.dropped
        };
        add(counter, 1);
        enqueued
    }

    /// Like [`ExportHandle::try_export`], but while the collector accepts exports
    /// waits up to `max_wait` for queue space (for file replays, where waiting loses
    /// nothing). While exports fail it does not wait. Never call it from async code.
    pub fn export_or_wait(&self, rec: SpanRecord, max_wait: Duration) -> bool {
        // Waiting needs a blocking context: inside a runtime, fall back to try_export.
        if !self.counters.healthy.load(Ordering::Relaxed)
            || tokio::runtime::Handle::try_current().is_ok()
        {
            return self.try_export(rec);
        }
        if !self.admit(&rec) {
            return false;
        }
        let rec = match self.spans.try_send(rec) {
            Ok(()) => return self.count_sent(Ok::<(), ()>(())),
            Err(mpsc::error::TrySendError::Full(rec)) => rec,
            Err(closed) => return self.count_sent(Err(closed)),
        };
        self.count_sent(
            self.runtime
                .block_on(self.spans.send_timeout(rec, max_wait)),
        )
    }

    /// The last export request succeeded (or none was made yet).
    pub fn healthy(&self) -> bool {
        self.counters.healthy.load(Ordering::Relaxed)
    }

    /// Whether spans of `topic` pass the filter (to skip building records at all).
    pub fn wants(&self, topic: Option<&str>) -> bool {
        self.filter.matches(topic)
    }

    /// Queues a metrics report (a small queue of its own; dropped and counted when full).
    /// Without metrics export, does nothing.
    pub fn export_metrics(&self, snap: MetricsSnapshot) -> bool {
        let Some(metrics) = &self.metrics else {
            return false;
        };
        let seq = self
            .counters
            .metrics_offered
            .fetch_add(1, Ordering::Relaxed)
            + 1;
        match metrics.try_send((seq, snap)) {
            Ok(()) => true,
            Err(_) => {
                add(&self.counters.metrics_dropped, 1);
                false
            }
        }
    }

    pub fn stats(&self) -> ExportStats {
        let c = &self.counters;
        ExportStats {
            offered: get(&c.offered),
            filtered: get(&c.filtered),
            dropped: get(&c.dropped),
            enqueued: get(&c.enqueued),
            sent: get(&c.sent),
            failed: get(&c.failed),
            abandoned: get(&c.abandoned),
            queue_len: self.capacity.saturating_sub(self.spans.capacity()) as u64,
            in_flight: get(&c.in_flight),
            requests_ok: get(&c.requests_ok),
            requests_failed: get(&c.requests_failed),
            metrics_sent: get(&c.metrics_sent),
            metrics_dropped: get(&c.metrics_dropped),
            metrics_failed: get(&c.metrics_failed),
            metrics_undelivered: get(&c.metrics_offered)
                .saturating_sub(get(&c.metrics_delivered_upto)),
            last_error: c.last_error.lock().ok().and_then(|g| g.clone()),
        }
    }
}

/// The running exporter. Drop or [`Exporter::shutdown`] stops it.
#[derive(Debug)]
pub struct Exporter {
    handle: ExportHandle,
    control: mpsc::UnboundedSender<Control>,
    runtime: Option<Runtime>,
    resource: Resource,
}

struct Worker {
    max_batch: usize,
    batch_timeout: Duration,
    retry_for: Duration,
    max_concurrent: usize,
    scope: InstrumentationScope,
    span_detail: SpanDetail,
    spans: OtlpSpanExporter,
    metrics: Option<MetricsPipeline>,
    counters: Arc<Counters>,
    permits: Arc<Semaphore>,
}

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

fn span_exporter(c: &SignalConfig, resource: &Resource) -> Result<OtlpSpanExporter, ExportError> {
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

impl Exporter {
    /// Starts the exporter's runtime and tasks. Nothing is sent until spans arrive;
    /// an unreachable collector is not an error here (it is retried and counted).
    /// `metrics`: also export per-topic metrics.
    pub fn start(cfg: ExporterConfig, metrics: bool) -> Result<Self, ExportError> {
        // The crate's rustls needs one process-wide crypto provider; ring is the one
        // tonic's `tls-ring` brings. Another one installed first is fine too.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(cfg.worker_threads.max(1))
            .thread_name("ddshark-otlp")
            .enable_all()
            .build()
            .map_err(|e| ExportError::Runtime(e.to_string()))?;
        let resource = cfg.resource()?;
        let counters = Arc::new(Counters::default());
        let (spans, metrics) = {
            // gRPC channels connect lazily on this runtime.
            let _guard = runtime.enter();
            let spans = span_exporter(&cfg.traces, &resource)?;
            let metrics = if metrics {
                Some(MetricsPipeline::new(
                    &cfg.metrics,
                    &resource,
                    counters.clone(),
                )?)
            } else {
                None
            };
            (spans, metrics)
        };
        let capacity = cfg.queue_capacity.max(1);
        let (span_tx, span_rx) = mpsc::channel(capacity);
        let (metrics_tx, metrics_rx) = mpsc::channel(16);
        let metrics_tx = metrics.is_some().then_some(metrics_tx);
        let (control_tx, control_rx) = mpsc::unbounded_channel();
        let handle = ExportHandle {
            spans: span_tx,
            metrics: metrics_tx,
            counters: counters.clone(),
            filter: Arc::new(cfg.topic_filter.clone()),
            capacity,
            runtime: runtime.handle().clone(),
        };
        let worker = Arc::new(Worker {
            max_batch: cfg.max_batch.max(1),
            batch_timeout: cfg.batch_timeout.min(Duration::from_secs(3600)),
            retry_for: cfg.retry_for.min(Duration::from_secs(24 * 3600)),
            max_concurrent: cfg.max_concurrent.max(1),
            scope: InstrumentationScope::builder(SCOPE_NAME)
                .with_version(SCOPE_VERSION)
                .build(),
            span_detail: cfg.span_detail,
            permits: Arc::new(Semaphore::new(cfg.max_concurrent.max(1))),
            spans,
            metrics,
            counters,
        });
        runtime.spawn(batch_loop(worker, span_rx, metrics_rx, control_rx));
        Ok(Self {
            handle,
            control: control_tx,
            runtime: Some(runtime),
            resource,
        })
    }

    /// The producer side, for other threads.
    pub fn handle(&self) -> ExportHandle {
        self.handle.clone()
    }

    /// A string attribute of the resource the exporter sends (`host.name`, ...).
    pub fn resource_value(&self, key: &'static str) -> Option<String> {
        self.resource
            .get(&Key::from_static_str(key))
            .map(|v| v.as_str().into_owned())
    }

    pub fn try_export(&self, rec: SpanRecord) -> bool {
        self.handle.try_export(rec)
    }

    pub fn export_metrics(&self, snap: MetricsSnapshot) -> bool {
        self.handle.export_metrics(snap)
    }

    pub fn stats(&self) -> ExportStats {
        self.handle.stats()
    }

    /// Waits (at most `timeout`) until everything queued before the call was sent or
    /// given up. Returns whether it finished in time.
    pub fn flush(&self, timeout: Duration) -> bool {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        if self.control.send(Control::Flush(tx)).is_err() {
            return false;
        }
        rx.recv_timeout(timeout).is_ok()
    }

    /// Flushes (waiting at most `timeout`, the crate's retries included) and stops.
    /// Spans still queued or in flight then are counted as abandoned.
    pub fn shutdown(mut self, timeout: Duration) -> ExportStats {
        self.stop(timeout);
        self.handle.stats()
    }

    fn stop(&mut self, timeout: Duration) {
        let Some(rt) = self.runtime.take() else {
            return;
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let done =
            self.control.send(Control::Shutdown(tx)).is_ok() && rx.recv_timeout(timeout).is_ok();
        rt.shutdown_timeout(Duration::from_millis(100));
        if !done {
            let c = &self.handle.counters;
            let settled = get(&c.sent) + get(&c.failed);
            let left = get(&c.enqueued).saturating_sub(settled);
            c.abandoned.store(left, Ordering::Relaxed);
            c.in_flight.store(0, Ordering::Relaxed);
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(2));
    }
}

async fn batch_loop(
    w: Arc<Worker>,
    mut spans: mpsc::Receiver<SpanRecord>,
    mut metrics: mpsc::Receiver<(u64, MetricsSnapshot)>,
    mut control: mpsc::UnboundedReceiver<Control>,
) {
    let mut batch: Vec<SpanRecord> = Vec::with_capacity(w.max_batch);
    let mut seq = ExportSeq::default();
    let mut deadline: Option<tokio::time::Instant> = None;
    let mut spans_open = true;
    // (closed from the start when metrics are not exported)
    let mut metrics_open = true;
    loop {
        let sleep_until =
            deadline.unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(3600));
        tokio::select! {
            biased;
            c = control.recv() => {
                let (reply, stop) = match c {
                    Some(Control::Flush(r)) => (Some(r), false),
                    Some(Control::Shutdown(r)) => (Some(r), true),
                    None => (None, true),
                };
                // Everything queued now goes out, then wait for all export tasks.
                while let Ok(rec) = spans.try_recv() {
                    batch.push(rec);
                    if batch.len() >= w.max_batch {
                        dispatch(&w, &mut batch, &mut seq).await;
                    }
                }
                dispatch(&w, &mut batch, &mut seq).await;
                deadline = None;
                while let Ok(m) = metrics.try_recv() {
                    send_metrics(&w, m).await;
                }
                let all = u32::try_from(w.max_concurrent).unwrap_or(u32::MAX);
                if let Ok(p) = w.permits.acquire_many(all).await {
                    drop(p);
                }
                if let Some(r) = reply {
                    let _ = r.try_send(());
                }
                if stop {
                    return;
                }
            }
            rec = spans.recv(), if spans_open => {
                match rec {
                    Some(rec) => {
                        if batch.is_empty() {
                            deadline = Some(tokio::time::Instant::now() + w.batch_timeout);
                        }
                        batch.push(rec);
                        if batch.len() >= w.max_batch {
                            dispatch(&w, &mut batch, &mut seq).await;
                            deadline = None;
                        }
                    }
                    None => spans_open = false,
                }
            }
            m = metrics.recv(), if metrics_open => {
                match m {
                    Some(m) => send_metrics(&w, m).await,
                    None => metrics_open = false,
                }
            }
            _ = tokio::time::sleep_until(sleep_until), if deadline.is_some() => {
                dispatch(&w, &mut batch, &mut seq).await;
                deadline = None;
            }
        }
    }
}

/// The next `export_seq`: spans are numbered when a request takes them, so every number
/// is a span in a request that was sent (counted sent), given up (counted failed) or cut
/// by shutdown (counted abandoned): a number missing in the store beyond those was lost
/// after ddshark. (Spans dropped at the queue never get one: they are counted dropped.)
#[derive(Debug, Default)]
struct ExportSeq(u64);

impl ExportSeq {
    fn stamp(&mut self, records: &mut [SpanRecord]) {
        for r in records {
            r.export_seq = self.0;
            self.0 = self.0.wrapping_add(1);
        }
    }
}

/// Hands the batch to an export task once a concurrency permit is free. While all
/// permits are taken the batch loop waits here, the queue fills, and producers drop.
async fn dispatch(w: &Arc<Worker>, batch: &mut Vec<SpanRecord>, seq: &mut ExportSeq) {
    if batch.is_empty() {
        return;
    }
    let Ok(permit) = w.permits.clone().acquire_owned().await else {
        return;
    };
    let mut records = std::mem::replace(batch, Vec::with_capacity(w.max_batch));
    seq.stamp(&mut records);
    add(&w.counters.in_flight, records.len() as u64);
    let w2 = w.clone();
    tokio::spawn(async move {
        export_spans(&w2, records).await;
        drop(permit);
    });
}

async fn export_spans(w: &Worker, records: Vec<SpanRecord>) {
    let n = records.len() as u64;
    let c = &w.counters;
    let give_up = tokio::time::Instant::now() + w.retry_for;
    let mut backoff = Duration::from_millis(500);
    loop {
        let mut builder = SpanDataBuilder::with_detail(w.scope.clone(), w.span_detail);
        let batch = records.iter().map(|r| builder.span_data(r)).collect();
        match w.spans.export(batch).await {
            Ok(()) => {
                c.healthy.store(true, Ordering::Relaxed);
                add(&c.requests_ok, 1);
                add(&c.sent, n);
                break;
            }
            Err(e) => {
                c.healthy.store(false, Ordering::Relaxed);
                add(&c.requests_failed, 1);
                c.set_error(e.to_string());
                // (the records stay until the export succeeds: each try builds the request)
                if tokio::time::Instant::now() + backoff > give_up {
                    add(&c.failed, n);
                    break;
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
    drop(records);
    c.in_flight.fetch_sub(n, Ordering::Relaxed);
}

async fn send_metrics(w: &Worker, (seq, snap): (u64, MetricsSnapshot)) {
    let Some(m) = &w.metrics else {
        return;
    };
    let c = &w.counters;
    // Metrics are cumulative: one try, the next report supersedes it.
    match m.export(snap).await {
        Ok(()) => {
            add(&c.metrics_sent, 1);
            c.metrics_delivered_upto.fetch_max(seq, Ordering::Relaxed);
        }
        Err(e) => {
            add(&c.metrics_failed, 1);
            c.set_error(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{SampleKind, TrafficType};
    use rtps_dissect::{Guid, VendorId};

    fn record() -> SpanRecord {
        SpanRecord {
            trace_id: [1; 16],
            span_id: [2; 8],
            kind: SampleKind::Data,
            start_ns: 1,
            end_ns: 1,
            traffic: TrafficType::User,
            topic: None,
            type_name: None,
            writer: Guid::from_bytes([3; 16]),
            sn: 1,
            fragment_starting_num: 0,
            frags_in_submessage: 1,
            fragment_size: None,
            sample_size: 1,
            payload_size: 1,
            pcp: None,
            vlan_id: None,
            vendor: VendorId([1, 16]),
            src: "127.0.0.1:7410".parse().unwrap(),
            dst: "127.0.0.1:7411".parse().unwrap(),
            domain_id: None,
            source_timestamp_ns: None,
            interface: None,
            frame: 1,
            frame_first: 1,
            ip_fragments: 1,
            submessage_index: 0,
            slot: 0,
            sample: None,
            announced_ips: None,
            export_seq: 0,
        }
    }

    #[test]
    fn export_seq_numbers_requests_densely() {
        let mut seq = ExportSeq::default();
        let mut first = vec![record(); 3];
        let mut second = vec![record(); 2];
        seq.stamp(&mut first);
        seq.stamp(&mut second);
        let numbers: Vec<u64> = first.iter().chain(&second).map(|r| r.export_seq).collect();
        assert_eq!(numbers, [0, 1, 2, 3, 4]);
    }
}
