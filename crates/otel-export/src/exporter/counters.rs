//! The exporter's counters: every span counted once as filtered, dropped, sent, failed or
//! abandoned.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::metrics::SelfCounters;

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
    pub(super) offered: AtomicU64,
    pub(super) filtered: AtomicU64,
    pub(super) dropped: AtomicU64,
    pub(super) enqueued: AtomicU64,
    pub(super) sent: AtomicU64,
    pub(super) failed: AtomicU64,
    pub(super) abandoned: AtomicU64,
    pub(super) in_flight: AtomicU64,
    pub(super) requests_ok: AtomicU64,
    pub(super) requests_failed: AtomicU64,
    pub(super) metrics_sent: AtomicU64,
    pub(super) metrics_dropped: AtomicU64,
    pub(super) metrics_failed: AtomicU64,
    /// Metrics reports offered (each one's sequence number, from 1).
    pub(super) metrics_offered: AtomicU64,
    /// The sequence number of the newest metrics report exported.
    pub(super) metrics_delivered_upto: AtomicU64,
    /// The last export request succeeded (or none was made yet).
    pub(super) healthy: AtomicBool,
    pub(super) last_error: Mutex<Option<String>>,
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
    pub(super) fn set_error(&self, e: String) {
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

pub(super) fn add(a: &AtomicU64, n: u64) {
    a.fetch_add(n, Ordering::Relaxed);
}

pub(super) fn get(a: &AtomicU64) -> u64 {
    a.load(Ordering::Relaxed)
}
