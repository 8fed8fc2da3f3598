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
use crate::recording::RecordTap;
use crate::state::Snapshot;

mod capture_thread;

use capture_thread::{capture_loop, Disconnected};

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
                    // Before its frames reach the state: a snapshot taken among them
                    // counts them read (frames read ≥ frames dissected, always).
                    sync_counters(engine, &shared, opts);
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
