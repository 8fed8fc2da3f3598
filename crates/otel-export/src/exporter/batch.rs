//! The exporter's batch loop on its runtime: batches by size or time, numbers the spans,
//! sends them with retries under a concurrency limit, and counts every outcome.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use opentelemetry_sdk::trace::SpanExporter as _;
use tokio::sync::mpsc;

use super::counters::add;
use super::{Control, Worker};
use crate::metrics::MetricsSnapshot;
use crate::schema::{SpanDataBuilder, SpanRecord};

pub(super) async fn batch_loop(
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
            // Before the spans: a replay that waits for queue space keeps the span queue full,
            // and metrics reports polled after it starved until their small queue dropped the
            // last one (the run's totals) at exit.
            m = metrics.recv(), if metrics_open => {
                match m {
                    Some(m) => send_metrics(&w, m).await,
                    None => metrics_open = false,
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
pub(super) struct ExportSeq(u64);

impl ExportSeq {
    pub(super) fn stamp(&mut self, records: &mut [SpanRecord]) {
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
