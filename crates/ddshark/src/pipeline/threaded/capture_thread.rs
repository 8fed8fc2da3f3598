//! One capture thread: reads its source, paces a replay, batches the frames and hands
//! each full batch over the queue (a live source never waits for room).

use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rtps_dissect::Frame;

use super::{
    apply_thread_settings, send_soon, wall_ns, Batch, BatchSize, CaptureInput, Meta, Msg,
    PaceControl, Progress, RunOptions, Shared, LIVE_DRAIN_LIMIT,
};
use crate::recording::{FrameBatch, RecordTap};

/// The receiving side is gone: the run is over, stop reading.
pub(super) struct Disconnected;

/// One capture thread: reads its source, paces a replay, batches the frames and hands
/// each full batch to the state thread.
pub(super) struct CaptureThread {
    src: usize,
    live: bool,
    tx: SyncSender<Msg>,
    pool: Receiver<Batch>,
    shared: Arc<Shared>,
    opts: RunOptions,
    batch_size: BatchSize,
    batch: Batch,
    /// The same frames, for the recording (`-w`).
    record_batch: Option<FrameBatch>,
    frames: u64,
    /// Replay pacing anchor: (capture time, wall clock) of the first frame since the
    /// last pacing change.
    pace_anchor: Option<(u64, Instant)>,
    pace_generation: u64,
}

pub(super) fn capture_loop(
    src: usize,
    input: CaptureInput,
    tx: SyncSender<Msg>,
    pool: Receiver<Batch>,
    shared: Arc<Shared>,
    opts: RunOptions,
) {
    if let Err(message) = apply_thread_settings(&opts) {
        let _ = tx.send(Msg::End {
            src,
            error: Some(message),
            fatal: true,
            kernel: None,
        });
        return;
    }
    let batch_size = BatchSize {
        frames: opts.batch_frames.max(1),
        bytes: opts.batch_bytes.max(1),
    };
    let mut thread = CaptureThread {
        src,
        live: input.live,
        batch: recycled_batch(&pool, batch_size),
        record_batch: opts.record.as_ref().map(RecordTap::empty_batch),
        tx,
        pool,
        shared,
        pace_generation: opts.pace.as_ref().map_or(0, |c| c.generation()),
        opts,
        batch_size,
        frames: 0,
        pace_anchor: None,
    };
    thread.run(input);
}

/// An empty batch: one the state thread handed back, or a new one.
pub(super) fn recycled_batch(pool: &Receiver<Batch>, size: BatchSize) -> Batch {
    pool.try_recv().map_or_else(
        |_| Batch::with_capacity(size),
        |mut b| {
            b.clear();
            b
        },
    )
}

impl CaptureThread {
    fn run(&mut self, mut input: CaptureInput) {
        let name = input.source.name().to_string();
        let mut progress = Progress {
            enabled: self.opts.progress && !self.live,
            total: input.size_hint.unwrap_or(0),
            done: 24,
            last: Instant::now(),
        };
        let mut last_kernel = Instant::now();
        let mut last_idle = Instant::now();
        let mut error = None;
        let mut fatal = false;
        // A stopped live capture first reads what the kernel already holds (bounded), so
        // that every frame it received is counted as captured or dropped.
        let mut draining: Option<Instant> = None;
        loop {
            if self.opts.stop.load(Ordering::Relaxed) {
                if !self.live {
                    break;
                }
                let since = *draining.get_or_insert_with(Instant::now);
                if since.elapsed() >= LIVE_DRAIN_LIMIT {
                    break;
                }
            }
            let flush;
            match input.source.next_frame() {
                Ok(Some(f)) => {
                    if input.filter.as_mut().is_some_and(|flt| !flt.matches(&f)) {
                        continue;
                    }
                    if let Some(budget) = &self.opts.frame_budget {
                        let took = budget
                            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                                n.checked_sub(1)
                            })
                            .is_ok();
                        if !took {
                            self.opts.stop.store(true, Ordering::Relaxed);
                            break;
                        }
                    }
                    self.frames = self.frames.saturating_add(1);
                    self.shared.frames.store(self.frames, Ordering::Relaxed);
                    if !self.live && self.pace_replay(f.ts_ns).is_err() {
                        return;
                    }
                    progress.tick(&name, self.frames, f.data.len());
                    flush = self.push(&f);
                }
                Ok(None) => break,
                Err(e) if e.is_timeout() && draining.is_some() => break,
                Err(e) if e.is_timeout() => {
                    flush = !self.batch.metas.is_empty();
                    if self.live && last_idle.elapsed() >= Duration::from_millis(200) {
                        last_idle = Instant::now();
                        let _ = self.tx.try_send(Msg::Idle(wall_ns()));
                    }
                }
                Err(e) => {
                    fatal = !e.is_truncation();
                    error = Some(e.to_string());
                    break;
                }
            }
            if flush && self.flush().is_err() {
                return;
            }
            if self.live && last_kernel.elapsed() >= Duration::from_secs(1) {
                last_kernel = Instant::now();
                if let Some(k) = input.source.kernel_stats() {
                    let _ = self.tx.try_send(Msg::Kernel(self.src, k));
                }
            }
        }
        progress.done();
        self.finish(&mut input, error, fatal);
    }

    /// Append a frame to the batch; true when the batch is full.
    fn push(&mut self, f: &Frame<'_>) -> bool {
        let len = u32::try_from(f.data.len()).unwrap_or(u32::MAX);
        self.batch.metas.push(Meta {
            ts_ns: f.ts_ns,
            link: f.link,
            orig_len: f.orig_len,
            len,
        });
        self.batch.data.extend_from_slice(f.data);
        if let Some(r) = &mut self.record_batch {
            r.push(f.ts_ns, f.orig_len, f.data);
        }
        self.batch.metas.len() >= self.batch_size.frames
            || self.batch.data.len() >= self.batch_size.bytes
    }

    /// Hand the batch over, if it holds anything: a file waits for room, a live source
    /// drops it and counts its frames when the queue is full (and reuses it).
    fn flush(&mut self) -> Result<(), Disconnected> {
        if self.batch.metas.is_empty() {
            return Ok(());
        }
        self.flush_record(!self.live);
        let fresh = recycled_batch(&self.pool, self.batch_size);
        let full = std::mem::replace(&mut self.batch, fresh);
        let frames = full.metas.len() as u64;
        if self.live {
            match self.tx.try_send(Msg::Batch(self.src, full)) {
                Ok(()) => {}
                Err(TrySendError::Full(Msg::Batch(_, mut back))) => {
                    self.shared.dropped.fetch_add(frames, Ordering::Relaxed);
                    back.clear();
                    self.batch = back;
                }
                Err(_) => return Err(Disconnected),
            }
        } else {
            send_soon(&self.tx, Msg::Batch(self.src, full))?;
        }
        Ok(())
    }

    /// Hand the recording its copy of the batch (`wait`: block for room).
    fn flush_record(&mut self, wait: bool) {
        let (Some(tap), Some(batch)) = (&self.opts.record, self.record_batch.take()) else {
            return;
        };
        if batch.is_empty() {
            self.record_batch = Some(batch);
            return;
        }
        self.record_batch = Some(
            tap.send(self.src, batch, wait)
                .unwrap_or_else(|| tap.empty_batch()),
        );
    }

    /// A replay follows the recorded timing at the chosen speed, and stops while paused.
    /// What was read is handed over before any wait.
    fn pace_replay(&mut self, ts_ns: u64) -> Result<(), Disconnected> {
        if let Some(ctl) = self.opts.pace.clone() {
            self.wait_while_paused(&ctl)?;
        }
        let speed = self
            .opts
            .pace
            .as_ref()
            .map_or(self.opts.speed, |c| c.speed());
        let Some(speed) = speed else {
            return Ok(());
        };
        let (t0, start) = *self.pace_anchor.get_or_insert((ts_ns, Instant::now()));
        let target = ts_ns.saturating_sub(t0) as f64 / speed.max(1e-6);
        let target = Duration::from_nanos(target.min(u64::MAX as f64) as u64);
        let elapsed = start.elapsed();
        if target > elapsed.saturating_add(Duration::from_millis(1)) {
            self.flush()?;
            self.sleep(target.saturating_sub(elapsed));
        }
        Ok(())
    }

    /// Paused (TUI): hand over what was read, then wait; a pacing change re-anchors.
    fn wait_while_paused(&mut self, ctl: &PaceControl) -> Result<(), Disconnected> {
        if ctl.paused() {
            self.flush()?;
        }
        while ctl.paused() && !self.opts.stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(20));
        }
        if ctl.generation() != self.pace_generation {
            self.pace_generation = ctl.generation();
            self.pace_anchor = None;
        }
        Ok(())
    }

    /// Sleep until the next frame is due. With a pace control the sleep is cut in slices,
    /// so that a speed change, a pause or a stop takes effect at once.
    fn sleep(&self, mut wait: Duration) {
        let Some(ctl) = &self.opts.pace else {
            std::thread::sleep(wait);
            return;
        };
        while !wait.is_zero()
            && ctl.generation() == self.pace_generation
            && !self.opts.stop.load(Ordering::Relaxed)
        {
            let step = wait.min(Duration::from_millis(20));
            std::thread::sleep(step);
            wait = wait.saturating_sub(step);
        }
    }

    /// End of the source: the last batch (it may wait, even from a live capture: it is
    /// the end), then the end message with the source's error and kernel statistics.
    fn finish(&mut self, input: &mut CaptureInput, error: Option<String>, fatal: bool) {
        self.flush_record(true);
        if !self.batch.metas.is_empty() {
            let last = std::mem::take(&mut self.batch);
            let _ = self.tx.send(Msg::Batch(self.src, last));
        }
        let kernel = input.source.kernel_stats();
        let _ = self.tx.send(Msg::End {
            src: self.src,
            error,
            fatal,
            kernel,
        });
    }
}
