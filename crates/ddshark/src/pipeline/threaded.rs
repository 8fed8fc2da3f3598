//! The threaded run: one capture thread per input hands batches of frames over a bounded
//! queue to the engine on the caller's thread, recycles the empty batches, and keeps the
//! per-source counters the health view shows.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvError, SyncSender, TryRecvError, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rtps_dissect::{Frame, LinkType};
use thiserror::Error;

use super::Engine;
use crate::capture::{CaptureError, KernelStats, PacketSource};
use crate::recording::{FrameBatch, RecordTap};
use crate::state::Snapshot;

#[derive(Debug, Error)]
pub enum PipelineError {
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// `-w`: the recording failed (the message names the file).
    #[error("{0}")]
    Record(String),
    #[error("{source_name}: {message}")]
    Thread {
        source_name: String,
        message: String,
    },
}

/// One input of a threaded run.
pub struct CaptureInput {
    pub source: Box<dyn PacketSource + Send>,
    /// Live: never block (drop on a full queue), report kernel stats, idle ticks.
    pub live: bool,
    /// Size of the file, for the progress bar.
    pub size_hint: Option<u64>,
    /// Frames this rejects are skipped (a capture filter on a file; live interfaces
    /// filter in the kernel).
    pub filter: Option<crate::capture::filter::FrameFilter>,
}

#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Batches in flight between capture threads and the state thread.
    pub queue_batches: usize,
    /// A batch is handed over when it holds this many frames or `batch_bytes` bytes.
    pub batch_frames: usize,
    pub batch_bytes: usize,
    /// Replay pacing: `None` as fast as possible, `Some(x)` at x times recorded speed.
    pub speed: Option<f64>,
    pub rt_priority: Option<u8>,
    pub cpu: Option<usize>,
    /// Progress bar on stderr (file replays).
    pub progress: bool,
    /// Set to stop capturing (Ctrl-C, `--duration`).
    pub stop: Arc<AtomicBool>,
    /// Replay pacing changed while running (TUI speed keys); overrides `speed`.
    pub pace: Option<Arc<PaceControl>>,
    /// Frames still to take over all inputs (`-c COUNT`); at zero the run stops.
    pub frame_budget: Option<Arc<AtomicU64>>,
    /// `-w`: every frame read is also handed to this recording (copied, never waited on
    /// by a live source).
    pub record: Option<RecordTap>,
}

/// Replay speed and pause, set from another thread (the TUI) while a file replays.
#[derive(Debug, Default)]
pub struct PaceControl {
    /// f64 bits of the speed; 0 = as fast as possible.
    speed_bits: AtomicU64,
    paused: AtomicBool,
    /// Bumped on every change, so the capture thread re-anchors its pacing.
    generation: AtomicU64,
}

impl PaceControl {
    pub fn new(speed: Option<f64>) -> Self {
        let c = Self::default();
        c.speed_bits
            .store(speed.unwrap_or(0.0).to_bits(), Ordering::Relaxed);
        c
    }
    /// `None`: as fast as possible.
    pub fn speed(&self) -> Option<f64> {
        let s = f64::from_bits(self.speed_bits.load(Ordering::Relaxed));
        (s.is_finite() && s > 0.0).then_some(s)
    }
    pub(crate) fn set_speed(&self, speed: Option<f64>) {
        self.speed_bits
            .store(speed.unwrap_or(0.0).to_bits(), Ordering::Relaxed);
        self.generation.fetch_add(1, Ordering::Release);
    }
    pub fn paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed)
    }
    pub(crate) fn set_paused(&self, paused: bool) {
        self.paused.store(paused, Ordering::Relaxed);
        self.generation.fetch_add(1, Ordering::Release);
    }
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            queue_batches: 64,
            batch_frames: 256,
            batch_bytes: 4 << 20,
            speed: None,
            rt_priority: None,
            cpu: None,
            progress: false,
            stop: Arc::new(AtomicBool::new(false)),
            pace: None,
            frame_budget: None,
            record: None,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Meta {
    ts_ns: u64,
    link: LinkType,
    orig_len: u32,
    len: u32,
}

/// When a capture thread hands its batch over.
#[derive(Debug, Clone, Copy)]
struct BatchSize {
    frames: usize,
    bytes: usize,
}

#[derive(Default)]
struct Batch {
    metas: Vec<Meta>,
    data: Vec<u8>,
}

impl Batch {
    fn with_capacity(size: BatchSize) -> Self {
        Self {
            metas: Vec::with_capacity(size.frames),
            data: Vec::with_capacity(size.frames.saturating_mul(1600).min(size.bytes)),
        }
    }
    fn clear(&mut self) {
        self.metas.clear();
        self.data.clear();
    }
}

enum Msg {
    Batch(usize, Batch),
    Idle(u64),
    Kernel(usize, KernelStats),
    End {
        src: usize,
        error: Option<String>,
        fatal: bool,
        kernel: Option<KernelStats>,
    },
}

/// Counters the capture thread owns and the state thread reads.
#[derive(Default)]
struct Shared {
    frames: AtomicU64,
    dropped: AtomicU64,
}

fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn apply_thread_settings(opts: &RunOptions) -> Result<(), String> {
    if let Some(cpu) = opts.cpu {
        let ids = core_affinity::get_core_ids().unwrap_or_default();
        let Some(id) = ids.into_iter().find(|c| c.id == cpu) else {
            return Err(format!("--cpu {cpu}: no such CPU"));
        };
        if !core_affinity::set_for_current(id) {
            return Err(format!("--cpu {cpu}: cannot pin the capture thread"));
        }
    }
    if let Some(prio) = opts.rt_priority {
        use thread_priority::{
            set_thread_priority_and_policy, thread_native_id, RealtimeThreadSchedulePolicy,
            ThreadPriority, ThreadSchedulePolicy,
        };
        let p = ThreadPriority::from_posix(thread_priority::ScheduleParams {
            sched_priority: i32::from(prio),
        });
        set_thread_priority_and_policy(
            thread_native_id(),
            p,
            ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::Fifo),
        )
        .map_err(|e| {
            format!(
                "--rt-priority {prio}: cannot make the capture thread SCHED_FIFO ({e:?}); \
                 it needs CAP_SYS_NICE (run as root or `setcap cap_sys_nice+ep`)"
            )
        })?;
    }
    Ok(())
}

struct Progress {
    enabled: bool,
    total: u64,
    done: u64,
    last: Instant,
}

impl Progress {
    fn tick(&mut self, name: &str, frames: u64, caplen: usize) {
        if !self.enabled {
            return;
        }
        // Record header (pcap 16 B, pcapng ~32 B) + data: a close estimate of the position.
        self.done = self.done.saturating_add(caplen as u64).saturating_add(24);
        if frames.is_multiple_of(4096) && self.last.elapsed() >= Duration::from_millis(200) {
            self.last = Instant::now();
            let pct = if self.total > 0 {
                (self.done as f64 / self.total as f64 * 100.0).min(99.9)
            } else {
                0.0
            };
            let width = 30usize;
            let filled = ((pct / 100.0) * width as f64) as usize;
            eprint!(
                "\r{name} [{}{}] {pct:5.1}% {frames} frames",
                "#".repeat(filled.min(width)),
                " ".repeat(width.saturating_sub(filled))
            );
        }
    }
    fn done(&self) {
        if self.enabled {
            eprint!("\r\x1b[K");
        }
    }
}

/// The receiving side is gone: the run is over, stop reading.
struct Disconnected;

/// One capture thread: reads its source, paces a replay, batches the frames and hands
/// each full batch to the state thread.
struct CaptureThread {
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

fn capture_loop(
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
fn recycled_batch(pool: &Receiver<Batch>, size: BatchSize) -> Batch {
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

/// How long an unpaced replay's threads poll the queue before they sleep on it (a full
/// queue for the capture thread, an empty one for the state thread). A sleeping
/// thread takes up to milliseconds to run again once woken (on a virtual machine, its
/// idle CPU is descheduled), while a batch takes the state thread about half a
/// millisecond: sleeping on every full or empty queue left both threads idle for a
/// tenth of a small-frame replay.
const POLL_BEFORE_SLEEP: Duration = Duration::from_millis(1);

/// After a failed poll of the queue (`since`: when the first one failed): whether to
/// poll again, after yielding the CPU, rather than sleep.
fn poll_again(since: &mut Option<Instant>) -> bool {
    if since.get_or_insert_with(Instant::now).elapsed() >= POLL_BEFORE_SLEEP {
        return false;
    }
    std::thread::yield_now();
    true
}

/// Hand `msg` over, waiting for room: polling for [`POLL_BEFORE_SLEEP`], then asleep.
fn send_soon(tx: &SyncSender<Msg>, mut msg: Msg) -> Result<(), Disconnected> {
    let mut since = None;
    loop {
        match tx.try_send(msg) {
            Ok(()) => return Ok(()),
            Err(TrySendError::Disconnected(_)) => return Err(Disconnected),
            Err(TrySendError::Full(back)) => msg = back,
        }
        if !poll_again(&mut since) {
            return tx.send(msg).map_err(|_| Disconnected);
        }
    }
}

/// The next message: polling for [`POLL_BEFORE_SLEEP`], then asleep.
fn recv_soon(rx: &Receiver<Msg>) -> Result<Msg, RecvError> {
    let mut since = None;
    loop {
        match rx.try_recv() {
            Ok(msg) => return Ok(msg),
            Err(TryRecvError::Disconnected) => return Err(RecvError),
            Err(TryRecvError::Empty) => {}
        }
        if !poll_again(&mut since) {
            return rx.recv();
        }
    }
}

/// Longest a stopped live capture keeps reading what the kernel already holds.
const LIVE_DRAIN_LIMIT: Duration = Duration::from_millis(500);

/// Run every input on its own capture thread into `engine` until all end (or
/// `opts.stop` is set). Returns the final snapshot; a fatal source error is
/// returned after the others are drained.
pub fn run_threaded(
    inputs: Vec<CaptureInput>,
    engine: &mut Engine,
    opts: &RunOptions,
) -> Result<Arc<Snapshot>, PipelineError> {
    let (tx, rx) = mpsc::sync_channel::<Msg>(opts.queue_batches.max(1));
    // Live and paced inputs leave the state thread idle between batches: it sleeps at
    // once. An unpaced replay keeps it busy: it polls a while first.
    let poll = opts.speed.is_none() && opts.pace.is_none() && inputs.iter().all(|i| !i.live);
    let mut pools = Vec::new();
    let mut shared = Vec::new();
    let mut first_error = None;
    std::thread::scope(|scope| {
        for input in inputs {
            let idx = engine.add_source(input.source.name());
            let (pool_tx, pool_rx) =
                mpsc::sync_channel::<Batch>(opts.queue_batches.saturating_add(2));
            pools.push(pool_tx);
            let sh = Arc::new(Shared::default());
            shared.push(sh.clone());
            let tx = tx.clone();
            let o = opts.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("capture-{idx}"))
                .spawn_scoped(scope, move || capture_loop(idx, input, tx, pool_rx, sh, o));
            if let Err(e) = spawned {
                first_error.get_or_insert(PipelineError::Thread {
                    source_name: format!("source {idx}"),
                    message: e.to_string(),
                });
            }
        }
        drop(tx);
        while let Ok(msg) = if poll { recv_soon(&rx) } else { rx.recv() } {
            match msg {
                Msg::Batch(src, batch) => {
                    let mut off = 0usize;
                    for m in &batch.metas {
                        let end = off.saturating_add(m.len as usize);
                        if let Some(data) = batch.data.get(off..end) {
                            let f = Frame {
                                number: 0,
                                ts_ns: m.ts_ns,
                                link: m.link,
                                data,
                                orig_len: m.orig_len,
                            };
                            engine.process(src, &f);
                        }
                        off = end;
                    }
                    if let Some(p) = pools.get(src) {
                        let _ = p.try_send(batch);
                    }
                    sync_counters(engine, &shared, opts);
                }
                Msg::Idle(now) => engine.idle(now),
                Msg::Kernel(src, k) => {
                    if let Some(s) = engine.pipeline_mut().sources.get_mut(src) {
                        s.kernel = Some(k);
                    }
                }
                Msg::End {
                    src,
                    error,
                    fatal,
                    kernel,
                } => {
                    sync_counters(engine, &shared, opts);
                    let p = engine.pipeline_mut();
                    let name = p
                        .sources
                        .get(src)
                        .map(|s| s.name.clone())
                        .unwrap_or_default();
                    if let Some(s) = p.sources.get_mut(src) {
                        s.finished = true;
                        s.error.clone_from(&error);
                        if kernel.is_some() {
                            s.kernel = kernel;
                        }
                    }
                    if let (true, Some(message)) = (fatal, error) {
                        first_error.get_or_insert(PipelineError::Thread {
                            source_name: name,
                            message,
                        });
                        opts.stop.store(true, Ordering::Relaxed);
                    }
                }
            }
        }
    });
    // Every frame read is in the writer's queue: wait until it is written (or counted).
    if let Some(r) = &opts.record {
        if let Err(e) = r.finish() {
            first_error.get_or_insert(PipelineError::Record(e));
        }
    }
    sync_counters(engine, &shared, opts);
    let snap = engine.finish();
    match first_error {
        Some(e) => Err(e),
        None => Ok(snap),
    }
}

fn sync_counters(engine: &mut Engine, shared: &[Arc<Shared>], opts: &RunOptions) {
    let p = engine.pipeline_mut();
    p.recording = opts.record.as_ref().map(RecordTap::health);
    let mut dropped = 0u64;
    for (s, sh) in p.sources.iter_mut().zip(shared) {
        s.frames = sh.frames.load(Ordering::Relaxed);
        s.queue_dropped = sh.dropped.load(Ordering::Relaxed);
        dropped = dropped.saturating_add(s.queue_dropped);
    }
    p.queue_dropped = dropped;
}
