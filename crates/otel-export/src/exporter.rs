//! The exporter: a bounded queue that never blocks its producer, a batching task
//! and export tasks on the exporter's own tokio runtime, retries with backoff, and
//! counters for everything that happened to every span.
//!
//! Accounting (after [`Exporter::shutdown`]):
//! `offered = filtered + dropped + enqueued` and
//! `enqueued = sent + rejected + failed + abandoned`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::runtime::Runtime;
use tokio::sync::{mpsc, Semaphore};

use crate::config::{ExporterConfig, TopicFilter};
use crate::encode::{AttrValue, TraceRequestEncoder};
use crate::error::ExportError;
use crate::metrics::{encode_metrics, MetricsSnapshot, SelfCounters};
use crate::schema::SpanRecord;
use crate::transport::{Signal, Transport};

/// Largest encoded trace request (the collector's gRPC default limit is 4 MiB).
const MAX_REQUEST_BYTES: usize = 3 << 20;
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
    /// Spans the collector accepted.
    pub sent: u64,
    /// Spans the collector rejected (OTLP partial success).
    pub rejected: u64,
    /// Spans given up: retries exhausted or a permanent error.
    pub failed: u64,
    /// Spans still queued or in flight when shutdown gave up waiting.
    pub abandoned: u64,
    /// Spans waiting in the queue now.
    pub queue_len: u64,
    /// Spans in batches being sent or retried now.
    pub in_flight: u64,
    pub requests_ok: u64,
    pub requests_failed: u64,
    pub retries: u64,
    pub metrics_sent: u64,
    pub metrics_dropped: u64,
    pub metrics_failed: u64,
    pub last_error: Option<String>,
}

#[derive(Debug)]
struct Counters {
    offered: AtomicU64,
    filtered: AtomicU64,
    dropped: AtomicU64,
    enqueued: AtomicU64,
    sent: AtomicU64,
    rejected: AtomicU64,
    failed: AtomicU64,
    abandoned: AtomicU64,
    in_flight: AtomicU64,
    requests_ok: AtomicU64,
    requests_failed: AtomicU64,
    retries: AtomicU64,
    metrics_sent: AtomicU64,
    metrics_dropped: AtomicU64,
    metrics_failed: AtomicU64,
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
            rejected: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            abandoned: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            requests_ok: AtomicU64::new(0),
            requests_failed: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            metrics_sent: AtomicU64::new(0),
            metrics_dropped: AtomicU64::new(0),
            metrics_failed: AtomicU64::new(0),
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
#[derive(Clone)]
pub struct ExportHandle {
    spans: mpsc::Sender<SpanRecord>,
    metrics: mpsc::Sender<MetricsSnapshot>,
    counters: Arc<Counters>,
    filter: Arc<TopicFilter>,
    capacity: usize,
    runtime: tokio::runtime::Handle,
}

impl std::fmt::Debug for ExportHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportHandle")
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl ExportHandle {
    /// Queues one span unless the topic filter excludes it. Never blocks: when the
    /// queue is full the span is dropped and counted. Returns whether it was queued.
    pub fn try_export(&self, rec: SpanRecord) -> bool {
        add(&self.counters.offered, 1);
        if !self.filter.matches(rec.topic.as_deref()) {
            add(&self.counters.filtered, 1);
            return false;
        }
        match self.spans.try_send(rec) {
            Ok(()) => {
                add(&self.counters.enqueued, 1);
                true
            }
            Err(_) => {
                add(&self.counters.dropped, 1);
                false
            }
        }
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
        add(&self.counters.offered, 1);
        if !self.filter.matches(rec.topic.as_deref()) {
            add(&self.counters.filtered, 1);
            return false;
        }
        let rec = match self.spans.try_send(rec) {
            Ok(()) => {
                add(&self.counters.enqueued, 1);
                return true;
            }
            Err(mpsc::error::TrySendError::Full(rec)) => rec,
            Err(mpsc::error::TrySendError::Closed(_)) => {
                add(&self.counters.dropped, 1);
                return false;
            }
        };
        match self
            .runtime
            .block_on(self.spans.send_timeout(rec, max_wait))
        {
            Ok(()) => {
                add(&self.counters.enqueued, 1);
                true
            }
            Err(_) => {
                add(&self.counters.dropped, 1);
                false
            }
        }
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
    pub fn export_metrics(&self, snap: MetricsSnapshot) -> bool {
        match self.metrics.try_send(snap) {
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
            rejected: get(&c.rejected),
            failed: get(&c.failed),
            abandoned: get(&c.abandoned),
            queue_len: self.capacity.saturating_sub(self.spans.capacity()) as u64,
            in_flight: get(&c.in_flight),
            requests_ok: get(&c.requests_ok),
            requests_failed: get(&c.requests_failed),
            retries: get(&c.retries),
            metrics_sent: get(&c.metrics_sent),
            metrics_dropped: get(&c.metrics_dropped),
            metrics_failed: get(&c.metrics_failed),
            last_error: c.last_error.lock().ok().and_then(|g| g.clone()),
        }
    }
}

/// The running exporter. Drop or [`Exporter::shutdown`] stops it.
pub struct Exporter {
    handle: ExportHandle,
    control: mpsc::UnboundedSender<Control>,
    runtime: Option<Runtime>,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exporter")
            .field("handle", &self.handle)
            .finish_non_exhaustive()
    }
}

struct Worker {
    cfg: ExporterConfig,
    resource: Vec<(String, AttrValue)>,
    transport: Transport,
    counters: Arc<Counters>,
    permits: Arc<Semaphore>,
}

impl Exporter {
    /// Starts the exporter's runtime and tasks. Nothing is sent until spans arrive;
    /// an unreachable collector is not an error here (it is retried and counted).
    pub fn start(cfg: ExporterConfig) -> Result<Self, ExportError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(cfg.worker_threads.max(1))
            .thread_name("ddshark-otlp")
            .enable_all()
            .build()
            .map_err(|e| ExportError::Runtime(e.to_string()))?;
        let transport = {
            let _guard = runtime.enter();
            Transport::new(&cfg)?
        };
        let capacity = cfg.queue_capacity.max(1);
        let (span_tx, span_rx) = mpsc::channel(capacity);
        let (metrics_tx, metrics_rx) = mpsc::channel(16);
        let (control_tx, control_rx) = mpsc::unbounded_channel();
        let counters = Arc::new(Counters::default());
        let handle = ExportHandle {
            spans: span_tx,
            metrics: metrics_tx,
            counters: counters.clone(),
            filter: Arc::new(cfg.topic_filter.clone()),
            capacity,
            runtime: runtime.handle().clone(),
        };
        let worker = Arc::new(Worker {
            resource: cfg.resource_attributes(),
            permits: Arc::new(Semaphore::new(cfg.max_concurrent.max(1))),
            cfg,
            transport,
            counters,
        });
        runtime.spawn(batch_loop(worker, span_rx, metrics_rx, control_rx));
        Ok(Self {
            handle,
            control: control_tx,
            runtime: Some(runtime),
        })
    }

    /// The producer side, for other threads.
    pub fn handle(&self) -> ExportHandle {
        self.handle.clone()
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
        wait_reply(rx, timeout)
    }

    /// Flushes (waiting at most `timeout`, retries included) and stops. Spans still
    /// queued or in flight then are counted as abandoned.
    pub fn shutdown(mut self, timeout: Duration) -> ExportStats {
        self.stop(timeout);
        self.handle.stats()
    }

    fn stop(&mut self, timeout: Duration) {
        let Some(rt) = self.runtime.take() else {
            return;
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let done = self.control.send(Control::Shutdown(tx)).is_ok() && wait_reply(rx, timeout);
        rt.shutdown_timeout(Duration::from_millis(100));
        if !done {
            let c = &self.handle.counters;
            let settled = get(&c.sent) + get(&c.rejected) + get(&c.failed);
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

fn wait_reply(rx: std::sync::mpsc::Receiver<()>, timeout: Duration) -> bool {
    rx.recv_timeout(timeout).is_ok()
}

async fn batch_loop(
    w: Arc<Worker>,
    mut spans: mpsc::Receiver<SpanRecord>,
    mut metrics: mpsc::Receiver<MetricsSnapshot>,
    mut control: mpsc::UnboundedReceiver<Control>,
) {
    let max_batch = w.cfg.max_batch.max(1);
    let mut batch: Vec<SpanRecord> = Vec::with_capacity(max_batch);
    let mut deadline: Option<tokio::time::Instant> = None;
    let mut spans_open = true;
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
                    if batch.len() >= max_batch {
                        dispatch(&w, &mut batch).await;
                    }
                }
                dispatch(&w, &mut batch).await;
                deadline = None;
                while let Ok(m) = metrics.try_recv() {
                    send_metrics(&w, m).await;
                }
                let all = u32::try_from(w.cfg.max_concurrent.max(1)).unwrap_or(u32::MAX);
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
                            deadline = Some(tokio::time::Instant::now() + w.cfg.batch_timeout.min(Duration::from_secs(3600)));
                        }
                        batch.push(rec);
                        if batch.len() >= max_batch {
                            dispatch(&w, &mut batch).await;
                            deadline = None;
                        }
                    }
                    None => spans_open = false,
                }
            }
            m = metrics.recv() => {
                if let Some(m) = m {
                    // Metrics ride along with the exporter's own counters.
                    send_metrics(&w, m).await;
                }
            }
            _ = tokio::time::sleep_until(sleep_until), if deadline.is_some() => {
                dispatch(&w, &mut batch).await;
                deadline = None;
            }
        }
    }
}

/// Hands the batch to an export task once a concurrency permit is free. While all
/// permits are taken the batch loop waits here, the queue fills, and producers drop.
async fn dispatch(w: &Arc<Worker>, batch: &mut Vec<SpanRecord>) {
    if batch.is_empty() {
        return;
    }
    let Ok(permit) = w.permits.clone().acquire_owned().await else {
        return;
    };
    let spans = std::mem::replace(batch, Vec::with_capacity(w.cfg.max_batch.max(1)));
    add(&w.counters.in_flight, spans.len() as u64);
    let w2 = w.clone();
    tokio::spawn(async move {
        export_spans(&w2, spans).await;
        drop(permit);
    });
}

async fn export_spans(w: &Worker, spans: Vec<SpanRecord>) {
    let mut enc = TraceRequestEncoder::new(&w.resource, SCOPE_NAME, SCOPE_VERSION);
    let mut pending = 0u64;
    let total = spans.len();
    for (i, s) in spans.iter().enumerate() {
        enc.push(s);
        pending += 1;
        if enc.encoded_len() >= MAX_REQUEST_BYTES || i + 1 == total {
            let body = Bytes::from(enc.finish());
            send_with_retry(w, Signal::Traces, body, pending).await;
            w.counters.in_flight.fetch_sub(pending, Ordering::Relaxed);
            pending = 0;
        }
    }
}

async fn send_metrics(w: &Worker, snap: MetricsSnapshot) {
    let c = &w.counters;
    let own = SelfCounters {
        enqueued: get(&c.enqueued),
        dropped: get(&c.dropped),
        sent: get(&c.sent),
        failed: get(&c.failed) + get(&c.rejected),
    };
    let body = Bytes::from(encode_metrics(
        &w.resource,
        SCOPE_NAME,
        SCOPE_VERSION,
        &snap,
        Some(own),
    ));
    // Metrics are small and cumulative: one try, the next report supersedes it.
    match tokio::time::timeout(w.cfg.timeout, w.transport.send(Signal::Metrics, body)).await {
        Ok(Ok(_)) => add(&c.metrics_sent, 1),
        Ok(Err(e)) => {
            add(&c.metrics_failed, 1);
            c.set_error(e.message);
        }
        Err(_) => {
            add(&c.metrics_failed, 1);
            c.set_error("metrics export timed out".into());
        }
    }
}

async fn send_with_retry(w: &Worker, signal: Signal, body: Bytes, n: u64) {
    let c = &w.counters;
    let started = Instant::now();
    let mut backoff = w.cfg.initial_backoff;
    loop {
        let res = match tokio::time::timeout(
            w.cfg.timeout.saturating_add(Duration::from_secs(1)),
            w.transport.send(signal, body.clone()),
        )
        .await
        {
            Ok(r) => r,
            Err(_) => Err(crate::transport::SendError {
                retryable: true,
                message: "export timed out".into(),
            }),
        };
        match res {
            Ok(acc) => {
                c.healthy.store(true, Ordering::Relaxed);
                add(&c.requests_ok, 1);
                let rejected = acc.rejected.min(n);
                add(&c.rejected, rejected);
                add(&c.sent, n - rejected);
                return;
            }
            Err(e) => {
                c.healthy.store(false, Ordering::Relaxed);
                add(&c.requests_failed, 1);
                c.set_error(e.message);
                if !e.retryable || started.elapsed().saturating_add(backoff) > w.cfg.max_retry_time
                {
                    add(&c.failed, n);
                    return;
                }
                add(&c.retries, 1);
                tokio::time::sleep(backoff).await;
                backoff = backoff.saturating_mul(2).min(w.cfg.max_backoff);
            }
        }
    }
}
