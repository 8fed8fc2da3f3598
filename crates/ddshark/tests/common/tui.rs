//! The TUI's state after a replay, as the TUI thread sees it (snapshot and screenshot tests).

use std::sync::{Arc, Mutex};

use ddshark::capture::file::FileSource;
use ddshark::pipeline::{run_inline, Engine, EngineConfig, Sink, SourceCtx};
use ddshark::state::Snapshot;
use ddshark::tui::{UiState, SNAPSHOT_NS};

use super::fixture;

/// Collects every periodic snapshot, as the hub hands them to the TUI.
struct Collect(Arc<Mutex<Vec<Arc<Snapshot>>>>);

impl Sink for Collect {
    fn on_datagram(&mut self, _d: &rtps_dissect::Datagram<'_>, _ctx: &SourceCtx<'_>) {}
    fn on_snapshot(&mut self, s: &Arc<Snapshot>) {
        self.0.lock().unwrap().push(s.clone());
    }
}

/// Replay `rel` (under tests/pcaps) and return the UI state after every snapshot
/// plus the final snapshot.
pub fn replay(rel: &str) -> (UiState, Arc<Snapshot>) {
    let snaps = Arc::new(Mutex::new(Vec::new()));
    let mut engine = Engine::new(EngineConfig {
        report_ns: Some(SNAPSHOT_NS),
        ..EngineConfig::default()
    });
    engine.add_sink(Box::new(Collect(snaps.clone())));
    let mut src = FileSource::open(&fixture(rel)).unwrap();
    run_inline(&mut src, &mut engine).unwrap();
    let last = engine.finish();
    let mut ui = UiState::new(rel, true, Some(1.0), false);
    for s in snaps.lock().unwrap().iter() {
        ui.ingest(s);
    }
    ui.ingest(&last);
    (ui, last)
}
