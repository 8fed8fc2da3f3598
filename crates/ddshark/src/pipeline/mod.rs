//! The pipeline: packet sources on capture threads → bounded queue → the engine
//! (dissector, state, sinks) on the caller's thread.
//!
//! ```text
//!  capture thread (per source, optional RT priority / CPU pin)
//!     frames → batches ──bounded channel──▶ Engine::process
//!                  ▲   (live: full → batch dropped, counted)      │  Dissector → Datagram
//!                  └──── empty batches recycled ◀─────────────────┤  State::datagram
//!                                                                 │  extra sinks (OTLP, ...)
//!                                                                 ▼
//!                                                   Arc<Snapshot> → SnapshotHub (TUI), reports
//! ```
//!
//! The capture thread never waits on the state for a live source: when the queue
//! is full the batch is dropped and counted. File replays block instead (nothing
//! is lost by waiting). Time is the capture's: reports follow frame
//! timestamps; only a live source that sees no packet advances the clock from the
//! system clock, at this edge, so quiet periods still produce reports.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rtps_dissect::{Datagram, Dissector, DissectorConfig, Frame};

use crate::capture::{CaptureError, PacketSource};
use crate::state::cache::DiscoveryCache;
use crate::state::snapshot::{PipelineCounters, SourceHealth};
use crate::state::{Snapshot, State, StateConfig};

mod threaded;

pub use threaded::{run_threaded, CaptureInput, PaceControl, PipelineError, RunOptions};

/// Where a datagram came from.
#[derive(Debug, Clone, Copy)]
pub struct SourceCtx<'a> {
    /// Index of the packet source (interface or file) in the run.
    pub(crate) source_index: usize,
    pub(crate) source_name: &'a str,
}

/// Something that consumes the event stream next to the state (OTLP exporter,
/// JSON lines, reports, ...). Every method runs on the state thread and must not
/// block for long: a sink that talks to the network keeps its own bounded queue.
pub trait Sink: Send {
    /// One whole RTPS datagram (its submessages and discovery records).
    fn on_datagram(&mut self, d: &Datagram<'_>, ctx: &SourceCtx<'_>);
    /// A fresh snapshot of the state (every [`EngineConfig::report_ns`]).
    fn on_snapshot(&mut self, _snapshot: &Arc<Snapshot>) {}
    /// End of input, with the final snapshot.
    fn finish(&mut self, _snapshot: &Arc<Snapshot>) {}
}

/// The state is the first sink.
impl Sink for State {
    fn on_datagram(&mut self, d: &Datagram<'_>, _ctx: &SourceCtx<'_>) {
        self.datagram(d);
    }
    fn finish(&mut self, _snapshot: &Arc<Snapshot>) {}
}

/// The latest snapshot, for readers on other threads (the TUI). The lock is held
/// only to clone an `Arc`; the capture thread never takes it.
#[derive(Clone, Default)]
pub struct SnapshotHub {
    latest: Arc<Mutex<Option<Arc<Snapshot>>>>,
    version: Arc<AtomicU64>,
}

impl SnapshotHub {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn publish(&self, s: Arc<Snapshot>) {
        if let Ok(mut g) = self.latest.lock() {
            *g = Some(s);
        }
        self.version.fetch_add(1, Ordering::Release);
    }

    pub fn latest(&self) -> Option<Arc<Snapshot>> {
        self.latest.lock().ok().and_then(|g| g.clone())
    }

    /// Increases with every publish: cheap "anything new?" check.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct EngineConfig {
    pub state: StateConfig,
    pub dissector: DissectorConfig,
    /// Capture-time period of snapshots (hub + `Sink::on_snapshot`); `None`: only at the end.
    pub report_ns: Option<u64>,
}

/// Dissector + state + extra sinks, driven frame by frame.
pub struct Engine {
    dissector: Dissector,
    pub(crate) state: State,
    sinks: Vec<Box<dyn Sink>>,
    hub: Option<SnapshotHub>,
    pipeline: PipelineCounters,
    config: EngineConfig,
    next_report_ns: Option<u64>,
    frame_no: u64,
}

impl Engine {
    pub fn new(config: EngineConfig) -> Self {
        Self {
            dissector: Dissector::new(config.dissector),
            state: State::new(config.state),
            sinks: Vec::new(),
            hub: None,
            pipeline: PipelineCounters::default(),
            config,
            next_report_ns: None,
            frame_no: 0,
        }
    }

    /// Register another sink; it sees every datagram after the state.
    pub fn add_sink(&mut self, sink: Box<dyn Sink>) {
        self.sinks.push(sink);
    }

    /// Publish snapshots to `hub` (every report period and at the end).
    pub fn set_hub(&mut self, hub: SnapshotHub) {
        self.hub = Some(hub);
    }

    /// Declare a packet source; returns its index.
    pub fn add_source(&mut self, name: &str) -> usize {
        self.pipeline.sources.push(SourceHealth {
            name: name.to_string(),
            ..SourceHealth::default()
        });
        self.pipeline.sources.len().saturating_sub(1)
    }

    /// Load a discovery cache into the state and the dissector's topic map.
    pub(crate) fn import_cache(&mut self, cache: &DiscoveryCache) -> usize {
        self.state.import_cache(cache, self.dissector.topics_mut())
    }

    /// One captured frame. Frames are renumbered across sources (1-based).
    pub fn process(&mut self, source: usize, frame: &Frame<'_>) {
        self.frame_no = self.frame_no.saturating_add(1);
        self.pipeline.frames_processed = self.pipeline.frames_processed.saturating_add(1);
        let frame = Frame {
            number: self.frame_no,
            ..*frame
        };
        let Engine {
            dissector,
            state,
            sinks,
            pipeline,
            ..
        } = self;
        dissector.process_with(&frame, |outcome| {
            let datagrams = outcome.datagrams();
            if datagrams.is_empty() {
                state.advance(frame.ts_ns);
                return;
            }
            let ctx = SourceCtx {
                source_index: source,
                source_name: pipeline.sources.get(source).map_or("", |s| s.name.as_str()),
            };
            for d in datagrams {
                state.on_datagram(d, &ctx);
                for s in sinks.iter_mut() {
                    s.on_datagram(d, &ctx);
                }
            }
        });
        self.clock();
    }

    /// A live source saw nothing until `now_ns`: let the capture clock move on.
    /// Before the first frame, the capture starts here: a quiet interface still gets
    /// its periodic (empty) summaries.
    pub(crate) fn idle(&mut self, now_ns: u64) {
        if now_ns > self.state.now_ns {
            self.state.advance(now_ns);
            self.clock();
        }
    }

    fn clock(&mut self) {
        let now = self.state.now_ns;
        if let Some(every) = self.config.report_ns {
            let next = *self
                .next_report_ns
                .get_or_insert(now.saturating_add(every.max(1)));
            if now >= next {
                self.next_report_ns = Some(now.saturating_add(every.max(1)));
                let snap = Arc::new(self.snapshot());
                for s in self.sinks.iter_mut() {
                    s.on_snapshot(&snap);
                }
                if let Some(h) = &self.hub {
                    h.publish(snap);
                }
            }
        }
    }

    pub(crate) fn snapshot(&self) -> Snapshot {
        self.state.snapshot(&self.dissector.stats(), &self.pipeline)
    }

    pub(crate) fn pipeline_mut(&mut self) -> &mut PipelineCounters {
        &mut self.pipeline
    }

    /// End of input: flush the dissector, finalize losses, give every sink the
    /// final snapshot.
    pub fn finish(&mut self) -> Arc<Snapshot> {
        let _incomplete = self.dissector.finish();
        self.state.finish();
        let snap = Arc::new(self.snapshot());
        for s in self.sinks.iter_mut() {
            s.finish(&snap);
        }
        if let Some(h) = &self.hub {
            h.publish(snap.clone());
        }
        snap
    }
}

/// Run a source to its end on this thread (no capture thread): tests and tools.
pub fn run_inline(
    source: &mut dyn PacketSource,
    engine: &mut Engine,
) -> Result<Option<String>, CaptureError> {
    let idx = engine.add_source(source.name());
    let mut truncated = None;
    let mut frames = 0u64;
    loop {
        match source.next_frame() {
            Ok(Some(f)) => {
                frames = frames.saturating_add(1);
                engine.process(idx, &f);
            }
            Ok(None) => break,
            Err(e) if e.is_truncation() => {
                truncated = Some(e.to_string());
                break;
            }
            Err(e) if e.is_timeout() => continue,
            Err(e) => return Err(e),
        }
    }
    if let Some(s) = engine.pipeline.sources.get_mut(idx) {
        s.frames = frames;
        s.finished = true;
        s.error.clone_from(&truncated);
    }
    Ok(truncated)
}
