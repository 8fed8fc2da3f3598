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

mod batch;
mod counters;
mod handle;
mod transport;

use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use opentelemetry::{InstrumentationScope, Key};
use opentelemetry_otlp::SpanExporter as OtlpSpanExporter;
use opentelemetry_sdk::Resource;
use tokio::runtime::Runtime;
use tokio::sync::{mpsc, Semaphore};

use crate::config::ExporterConfig;
use crate::error::ExportError;
use crate::metrics::{MetricsPipeline, MetricsSnapshot};
use crate::schema::{SpanDetail, SpanRecord};
use batch::batch_loop;
use counters::get;
pub(crate) use counters::Counters;
pub use counters::ExportStats;
pub use handle::ExportHandle;
pub(crate) use transport::metric_exporter;
use transport::span_exporter;

const SCOPE_NAME: &str = "ddshark";
const SCOPE_VERSION: &str = env!("CARGO_PKG_VERSION");

enum Control {
    /// Send everything queued so far, then answer.
    Flush(std::sync::mpsc::SyncSender<()>),
    /// Flush, then stop.
    Shutdown(std::sync::mpsc::SyncSender<()>),
}

/// How long [`Exporter::shutdown`] waits for the spans still queued or in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushWait {
    /// At most this long.
    AtMost(Duration),
    /// As long as spans keep being delivered: gives up once none was for this long (a
    /// collector that went away or hangs), however long a slow one takes to drain the rest.
    WhileDelivering(Duration),
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
    pub(super) max_batch: usize,
    pub(super) batch_timeout: Duration,
    pub(super) retry_for: Duration,
    pub(super) max_concurrent: usize,
    pub(super) scope: InstrumentationScope,
    pub(super) span_detail: SpanDetail,
    pub(super) spans: OtlpSpanExporter,
    pub(super) metrics: Option<MetricsPipeline>,
    pub(super) counters: Arc<Counters>,
    pub(super) permits: Arc<Semaphore>,
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

    /// Flushes (waiting as `wait` says, the crate's retries included) and stops. `on_wait` is
    /// called about once a second while it waits, with the spans not yet sent or failed.
    /// Spans still queued or in flight when it gives up are counted as abandoned.
    pub fn shutdown(mut self, wait: FlushWait, on_wait: &mut dyn FnMut(u64)) -> ExportStats {
        self.stop(wait, on_wait);
        self.handle.stats()
    }

    fn stop(&mut self, wait: FlushWait, on_wait: &mut dyn FnMut(u64)) {
        let Some(rt) = self.runtime.take() else {
            return;
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let done = self.control.send(Control::Shutdown(tx)).is_ok()
            && wait_for_shutdown(&rx, wait, &self.handle.counters, on_wait);
        rt.shutdown_timeout(Duration::from_millis(100));
        if !done {
            let c = &self.handle.counters;
            let left = get(&c.enqueued).saturating_sub(settled(c));
            c.abandoned.store(left, Ordering::Relaxed);
            c.in_flight.store(0, Ordering::Relaxed);
        }
    }
}

/// Spans sent or failed so far.
fn settled(c: &Counters) -> u64 {
    get(&c.sent).saturating_add(get(&c.failed))
}

/// Waits for the batch loop's answer to `Control::Shutdown`; whether it came in time.
fn wait_for_shutdown(
    answer: &Receiver<()>,
    wait: FlushWait,
    counters: &Counters,
    on_wait: &mut dyn FnMut(u64),
) -> bool {
    const TICK: Duration = Duration::from_secs(1);
    let started = Instant::now();
    let mut last_delivery = started;
    let mut sent = get(&counters.sent);
    loop {
        let left = match wait {
            FlushWait::AtMost(limit) => limit.saturating_sub(started.elapsed()),
            FlushWait::WhileDelivering(stall) => stall.saturating_sub(last_delivery.elapsed()),
        };
        if left.is_zero() {
            return false;
        }
        match answer.recv_timeout(left.min(TICK)) {
            Ok(()) => return true,
            Err(RecvTimeoutError::Disconnected) => return false,
            Err(RecvTimeoutError::Timeout) => {}
        }
        let now_sent = get(&counters.sent);
        if now_sent != sent {
            sent = now_sent;
            last_delivery = Instant::now();
        }
        on_wait(get(&counters.enqueued).saturating_sub(settled(counters)));
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.stop(FlushWait::AtMost(Duration::from_secs(2)), &mut |_| {});
    }
}

#[cfg(test)]
mod tests;
