//! The producer side of the exporter: queues spans and metrics reports, never blocks.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::counters::{add, get, Counters};
use super::ExportStats;
use crate::config::TopicFilter;
use crate::metrics::MetricsSnapshot;
use crate::schema::SpanRecord;

/// The producer side: cheap to clone, never blocks.
#[derive(Clone, Debug)]
pub struct ExportHandle {
    pub(super) spans: mpsc::Sender<SpanRecord>,
    /// Metrics reports with their sequence numbers; `None` when metrics are not exported.
    pub(super) metrics: Option<mpsc::Sender<(u64, MetricsSnapshot)>>,
    pub(super) counters: Arc<Counters>,
    pub(super) filter: Arc<TopicFilter>,
    pub(super) capacity: usize,
    pub(super) runtime: tokio::runtime::Handle,
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
