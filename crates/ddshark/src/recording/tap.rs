//! The capture threads' side of a recording and the writer thread: frames are copied
//! into pooled batches and handed over a bounded queue, so no capture thread waits on
//! the disk.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::{RecordError, Recorder, RecordingHealth, Written, MAX_QUEUED_BATCHES, POOLED_BATCHES};

/// Frames copied off a capture thread for the writer.
#[derive(Debug, Default)]
pub(crate) struct FrameBatch {
    metas: Vec<(u64, u32, u32)>,
    data: Vec<u8>,
}

impl FrameBatch {
    pub fn push(&mut self, ts_ns: u64, original_len: u32, data: &[u8]) {
        let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
        self.metas.push((ts_ns, original_len, len));
        self.data.extend_from_slice(data);
    }
    pub(crate) fn len(&self) -> usize {
        self.metas.len()
    }
    /// Bytes of packet data held.
    pub(crate) fn bytes(&self) -> usize {
        self.data.len()
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.metas.is_empty()
    }
    fn clear(&mut self) {
        self.metas.clear();
        self.data.clear();
    }
}

enum WriterMsg {
    Batch(usize, FrameBatch),
    End,
}

#[derive(Default)]
struct TapShared {
    frames_written: AtomicU64,
    bytes_written: AtomicU64,
    files_closed: AtomicU64,
    queue_dropped: AtomicU64,
    not_written_other: AtomicU64,
    /// Packet bytes handed to the writer and not yet written.
    queued_bytes: AtomicU64,
    current_file: Mutex<Option<String>>,
    error: Mutex<Option<String>>,
}

/// The capture threads' side of a recording: hand batches to the writer thread without
/// waiting (live) and read its counters. Cloned into every capture thread.
#[derive(Clone)]
pub struct RecordTap {
    tx: SyncSender<WriterMsg>,
    /// Most packet bytes waiting for the writer: beyond it a live source's batch is dropped.
    queue_bytes: u64,
    pool: Arc<Mutex<Receiver<FrameBatch>>>,
    shared: Arc<TapShared>,
    thread: Arc<Mutex<Option<JoinHandle<()>>>>,
    path: String,
}

impl std::fmt::Debug for RecordTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordTap")
            .field("path", &self.path)
            .finish()
    }
}

impl RecordTap {
    /// Start the writer thread on `recorder`; up to `queue_bytes` of packet data (and at
    /// most [`MAX_QUEUED_BATCHES`] batches) wait for it. On an error or after the `-W`
    /// files it sets `stop` (the capture ends).
    pub(crate) fn start(
        recorder: Recorder,
        path: &Path,
        queue_bytes: u64,
        stop: Arc<AtomicBool>,
    ) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::sync_channel::<WriterMsg>(MAX_QUEUED_BATCHES);
        let (pool_tx, pool_rx) = mpsc::sync_channel::<FrameBatch>(POOLED_BATCHES);
        let shared = Arc::new(TapShared::default());
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("recorder".into())
                .spawn(move || writer_loop(recorder, &rx, &pool_tx, &shared, &stop))?
        };
        Ok(Self {
            tx,
            queue_bytes: queue_bytes.max(1),
            pool: Arc::new(Mutex::new(pool_rx)),
            shared,
            thread: Arc::new(Mutex::new(Some(thread))),
            path: path.display().to_string(),
        })
    }

    /// An empty batch: one the writer handed back, or a new one.
    pub(crate) fn empty_batch(&self) -> FrameBatch {
        let recycled = self.pool.try_lock().ok().and_then(|p| p.try_recv().ok());
        recycled.unwrap_or_default()
    }

    /// Hand a batch over. `wait`: block for room (file replays, the last batch); else a
    /// full queue drops the batch, counted, and returns it for reuse.
    pub(crate) fn send(&self, source: usize, batch: FrameBatch, wait: bool) -> Option<FrameBatch> {
        if batch.is_empty() {
            return Some(batch);
        }
        let frames = batch.len() as u64;
        let bytes = batch.bytes() as u64;
        let queued = &self.shared.queued_bytes;
        let full = !wait && queued.load(Ordering::Relaxed).saturating_add(bytes) > self.queue_bytes;
        let back = if full {
            Some(batch)
        } else {
            queued.fetch_add(bytes, Ordering::Relaxed);
            let msg = WriterMsg::Batch(source, batch);
            let back = if wait {
                self.tx.send(msg).err().map(|e| e.0)
            } else {
                match self.tx.try_send(msg) {
                    Ok(()) => None,
                    Err(TrySendError::Full(m) | TrySendError::Disconnected(m)) => Some(m),
                }
            };
            match back {
                Some(WriterMsg::Batch(_, b)) => {
                    queued.fetch_sub(bytes, Ordering::Relaxed);
                    Some(b)
                }
                _ => None,
            }
        };
        back.map(|mut b| {
            self.shared
                .queue_dropped
                .fetch_add(frames, Ordering::Relaxed);
            b.clear();
            b
        })
    }

    /// Everything queued is written and the last file closed. Returns the first error
    /// of the recording.
    pub fn finish(&self) -> Result<(), String> {
        let _ = self.tx.send(WriterMsg::End);
        let handle = self.thread.lock().ok().and_then(|mut t| t.take());
        if let Some(h) = handle {
            if h.join().is_err() {
                return Err(format!("{}: the recording thread failed", self.path));
            }
        }
        match self.shared.error.lock().ok().and_then(|e| e.clone()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    pub(crate) fn health(&self) -> RecordingHealth {
        let s = &self.shared;
        RecordingHealth {
            path: self.path.clone(),
            current_file: s.current_file.lock().ok().and_then(|c| c.clone()),
            files_closed: s.files_closed.load(Ordering::Relaxed),
            frames_written: s.frames_written.load(Ordering::Relaxed),
            bytes_written: s.bytes_written.load(Ordering::Relaxed),
            queue_dropped: s.queue_dropped.load(Ordering::Relaxed),
            not_written_other: s.not_written_other.load(Ordering::Relaxed),
            error: s.error.lock().ok().and_then(|e| e.clone()),
        }
    }
}

fn writer_loop(
    mut recorder: Recorder,
    rx: &Receiver<WriterMsg>,
    pool: &SyncSender<FrameBatch>,
    shared: &TapShared,
    stop: &AtomicBool,
) {
    let publish = |r: &Recorder| {
        shared
            .frames_written
            .store(r.frames_written, Ordering::Relaxed);
        shared
            .bytes_written
            .store(r.bytes_written, Ordering::Relaxed);
        shared.files_closed.store(r.files_closed, Ordering::Relaxed);
        if let Ok(mut c) = shared.current_file.lock() {
            *c = r.current_file().map(|p| p.display().to_string());
        }
    };
    let fail = |e: RecordError| {
        if let Ok(mut slot) = shared.error.lock() {
            slot.get_or_insert(e.to_string());
        }
        stop.store(true, Ordering::Relaxed);
    };
    publish(&recorder);
    // Once an error or the file limit ends the recording, frames are only counted.
    let mut writing = true;
    while let Ok(msg) = rx.recv() {
        match msg {
            WriterMsg::Batch(source, mut batch) => {
                let interface = u32::try_from(source).unwrap_or(u32::MAX);
                let mut off = 0usize;
                let mut unwritten = 0u64;
                for &(ts_ns, orig_len, len) in &batch.metas {
                    let end = off.saturating_add(len as usize);
                    let data = batch.data.get(off..end).unwrap_or_default();
                    off = end;
                    if !writing {
                        unwritten = unwritten.saturating_add(1);
                        continue;
                    }
                    match recorder.write(interface, ts_ns, data, orig_len) {
                        Ok(Written::Yes) => {}
                        Ok(Written::FileLimit) => {
                            writing = false;
                            unwritten = unwritten.saturating_add(1);
                            stop.store(true, Ordering::Relaxed);
                        }
                        Err(e) => {
                            writing = false;
                            unwritten = unwritten
                                .saturating_add(1)
                                .saturating_add(recorder.abandon());
                            fail(e);
                        }
                    }
                }
                shared
                    .not_written_other
                    .fetch_add(unwritten, Ordering::Relaxed);
                shared
                    .queued_bytes
                    .fetch_sub(batch.bytes() as u64, Ordering::Relaxed);
                publish(&recorder);
                batch.clear();
                let _ = pool.try_send(batch);
            }
            WriterMsg::End => break,
        }
    }
    if let Err(e) = recorder.finish() {
        let lost = recorder.abandon();
        shared.not_written_other.fetch_add(lost, Ordering::Relaxed);
        fail(e);
    }
    publish(&recorder);
}
