//! Test helper of tests/tui_tmux.rs: the real terminal UI on the final snapshot of a
//! capture, drawn by a renderer that panics once a snapshot is on screen, so the test
//! can check in a real terminal that a UI panic leaves it restored and the panic
//! message readable. Usage: tui_panic FILE
#![allow(clippy::panic)]

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use ddshark::pipeline::SnapshotHub;
use ddshark::state::Snapshot;
use ddshark::stats_cmd::{stats_file, StatsOptions};
use ddshark::tui::{self, render, TuiOptions, UiState};

fn failing_renderer(f: &mut ratatui::Frame<'_>, snap: Option<&Snapshot>, ui: &UiState) {
    render(f, snap, ui);
    if snap.is_some() {
        panic!("the renderer failed on purpose (tui_panic test helper)");
    }
}

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: tui_panic FILE");
        return ExitCode::FAILURE;
    };
    let result = stats_file(Path::new(&path), &StatsOptions::default()).and_then(|snap| {
        let hub = SnapshotHub::new();
        hub.publish(snap);
        let opts = TuiOptions {
            source: path.clone(),
            replay: true,
            speed: None,
            ros_names: false,
            export: None,
            log: None,
        };
        let stop = Arc::new(AtomicBool::new(false));
        tui::start_with_renderer(hub, stop, None, opts, failing_renderer)?.finish(false)
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tui_panic: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
