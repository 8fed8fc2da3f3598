//! The daemon: `ddshark -i IFACE …` (live) or `ddshark -r FILE …` (replay), with
//! the TUI or, with `--no-tui`, a periodic text summary / JSON lines on stdout.

mod args;
mod inputs;
mod recording;
mod report;
mod signals;

use std::io::{self, IsTerminal};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::capture::live::interface_list;
use crate::output::contract::stats::Document as StatsDocument;
use crate::pipeline::{run_threaded, Engine, EngineConfig, PaceControl, RunOptions, SnapshotHub};
use crate::state::cache::DiscoveryCache;
use crate::state::StateConfig;
pub use args::{DaemonArgs, DaemonFormat};
use recording::{report_recording, start_recording};
use report::ReportSink;

/// Start the daemon. Returns when the input ends, `--duration` passes or Ctrl-C.
pub fn run(args: &DaemonArgs) -> Result<()> {
    if args.list_interfaces {
        println!("{}", interface_list());
        return Ok(());
    }
    // The TUI (crate::tui) renders `hub.latest()` on its own thread; it starts
    // right before the capture below.
    let tui = !args.no_tui && crate::tui::available();
    if !args.no_tui && !tui {
        eprintln!("ddshark: not a terminal; printing summaries (as with --no-tui)");
    }
    // Open the inputs first, then give up privilege before anything else is opened or any
    // thread started (capabilities are per thread): see crate::privilege.
    let run_as = args
        .user
        .as_deref()
        .map(crate::privilege::RunAs::lookup)
        .transpose()?;
    let inputs::Opened {
        inputs,
        started,
        recorded,
    } = inputs::open(args)?;
    if args.read.is_none() {
        crate::privilege::drop_privileges(run_as.as_ref(), args.rt_priority.is_some())?;
    }
    let interactive = tui;
    let state = StateConfig {
        window_ns: args.window.ns(),
        ..StateConfig::default()
    };
    let mut engine = Engine::new(EngineConfig {
        state,
        report_ns: Some(if tui {
            crate::tui::SNAPSHOT_NS
        } else {
            args.interval.ns()
        }),
        ..EngineConfig::default()
    });
    let hub = SnapshotHub::new();
    engine.set_hub(hub.clone());
    if !tui {
        engine.add_sink(Box::new(ReportSink::new(args.format, args.ros)));
    }
    let mut export = None;
    if let Some((sink, handle)) = crate::otlp::sink_with_handle(&args.otlp, args.read.is_none())? {
        engine.add_sink(sink);
        export = Some(handle);
    }

    let cache = match &args.discovery_cache {
        Some(p) if p.exists() => Some(DiscoveryCache::load(p)?),
        _ => None,
    };
    if let Some(c) = &cache {
        let n = engine.import_cache(c);
        eprintln!("ddshark: {n} endpoints loaded from the discovery cache");
    }

    if !tui {
        let every = match args.format {
            DaemonFormat::Text => "a summary",
            DaemonFormat::Jsonl => "a JSON line",
        };
        let limits = match (args.count, args.duration) {
            (Some(c), _) => format!(", stopping after {c} frames"),
            (None, Some(d)) => format!(", stopping after {d}"),
            (None, None) if args.read.is_none() => "; Ctrl-C to stop".to_string(),
            (None, None) => String::new(),
        };
        eprintln!(
            "ddshark: {started}; {every} every {} of capture time{limits}",
            args.interval
        );
    }

    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        let signalled = AtomicBool::new(false);
        // A termination signal ends the run as `q` does: the capture stops, the UI closes, the
        // outputs are written. A second signal ends the program at once (exit status 1), for
        // an end that hangs (a slow disk, an export retry).
        signals::on_termination(move || {
            if signalled.swap(true, Ordering::SeqCst) {
                crate::tui::restore_terminal();
                std::process::exit(1);
            }
            stop.store(true, Ordering::Relaxed);
            crate::tui::request_close();
        })
        .context("watching SIGINT, SIGTERM and SIGHUP")?;
    }
    if let Some(d) = args.duration {
        let stop = stop.clone();
        let d = d.duration();
        std::thread::spawn(move || {
            std::thread::sleep(d);
            stop.store(true, Ordering::Relaxed);
        });
    }
    let record = match &args.write {
        Some(path) => Some(start_recording(args, path, recorded, &stop)?),
        None => None,
    };
    let speed = match args.speed {
        Some(s) if s > 0.0 => Some(s),
        Some(_) => None,
        None if interactive => Some(1.0),
        None => None,
    };
    let run = RunOptions {
        queue_batches: args.queue.max(1),
        speed,
        rt_priority: args.rt_priority,
        cpu: args.cpu,
        progress: args.read.is_some()
            && !interactive
            && io::stderr().is_terminal()
            && !io::stdout().is_terminal(),
        stop,
        pace: (tui && args.read.is_some()).then(|| Arc::new(PaceControl::new(speed))),
        frame_budget: args.count.map(|c| Arc::new(AtomicU64::new(c))),
        record,
        ..RunOptions::default()
    };
    // While the UI is up, stderr goes to its log line (else exporter reports would be
    // drawn over the screen); the messages are written to stderr when it ends.
    let log = crate::tui::log::MessageLog::default();
    let captured_stderr = if tui {
        Some(crate::tui::log::StderrCapture::start(log.clone()).context("redirecting stderr")?)
    } else {
        None
    };
    let ui = if tui {
        let source = match &args.read {
            Some(p) => p.display().to_string(),
            None => args.interfaces.join(","),
        };
        let opts = crate::tui::TuiOptions {
            source,
            replay: args.read.is_some(),
            speed,
            ros_names: args.ros,
            export: export.clone(),
            log: Some(log.clone()),
        };
        Some(crate::tui::start(
            hub.clone(),
            run.stop.clone(),
            run.pace.clone(),
            opts,
        )?)
    } else {
        None
    };
    let result = run_threaded(inputs, &mut engine, &run);
    if let Some(ui) = ui {
        // The input ended: the UI stays until the user quits (at once on an error).
        ui.finish(result.is_err())?;
    }
    // A terminal that went away (the UI ended for it) cannot take the held messages or any
    // later report; the run still writes its outputs.
    let terminal_lost = tui && crate::tui::terminal_lost();
    if let Some(c) = captured_stderr {
        let restored = c.restore();
        if terminal_lost {
            crate::tui::detach_from_lost_terminal();
        } else {
            restored.context("restoring stderr")?;
        }
    }
    if let Some(p) = &args.discovery_cache {
        let mut merged = cache.unwrap_or_default();
        merged.merge(engine.state.export_cache());
        merged.save(p)?;
    }
    if let Some(r) = &run.record {
        report_recording(&r.health());
    }
    let snap = result?;
    // A file cut short is not fatal (the frames before it stand), but it is said, whatever
    // the mode: the TUI's Health view is gone by now.
    for src in &snap.health.pipeline.sources {
        if let Some(e) = &src.error {
            eprintln!("ddshark: warning: {e}; the replay covers what came before it");
        }
    }
    if let Some(p) = &args.final_json {
        let text = serde_json::to_string_pretty(&StatsDocument::of(&snap))?;
        atomic_write::write(p, text, atomic_write::READABLE)
            .with_context(|| format!("writing {}", p.display()))?;
    }
    if let Some(h) = &export {
        crate::otlp::check_delivered(&args.otlp, &h.stats())?;
    }
    Ok(())
}
