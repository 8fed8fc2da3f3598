//! `ddshark stats FILE`: the final state and statistics of a capture, as JSON for
//! scripts or as a readable report (both written by `output::stats`).

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::capture::file::FileSource;
use crate::output::stats::{text_report, write_json, ReportOptions};
use crate::pipeline::{run_threaded, CaptureInput, Engine, EngineConfig, RunOptions};
use crate::state::cache::DiscoveryCache;
use crate::state::snapshot::Snapshot;
use crate::state::StateConfig;
use crate::units::TimeSpan;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum StatsFormat {
    Json,
    Text,
}

const EXAMPLES: &str = "\
Examples:
  ddshark stats capture.pcap > state.json          one JSON document: participants, writers, readers, topics, secured, health
  ddshark stats capture.pcap --format text --ros   a readable report, ROS 2 names
  ddshark stats capture.pcap | jq '.topics[] | {name, samples, lost, retransmitted}'
  ddshark stats capture.pcap --window 1s --loss-timeout 2s
  ddshark stats sros2.pcap | jq '.secured.pairs[] | {src, dst, bytes: .totals.bytes}'   DDS Security traffic per participant pair
  ddshark stats later.pcap --discovery-cache disc.json   topics learnt from an earlier capture
";

#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct StatsArgs {
    /// pcap or pcapng file
    pub(crate) file: PathBuf,
    /// JSON (participants, writers, readers, topics, secured, health) or a readable report
    #[arg(long, value_enum, default_value = "json")]
    pub(crate) format: StatsFormat,
    /// Show ROS 2 names demangled in the text report (rt/chatter → /chatter)
    #[arg(long)]
    pub(crate) ros: bool,
    /// Load discovery from FILE first and save what this capture discovered into it
    #[arg(long, value_name = "FILE")]
    pub(crate) discovery_cache: Option<PathBuf>,
    /// Sliding window for rates, ending at the last frame (e.g. 10s)
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = TimeSpan::positive)]
    pub(crate) window: TimeSpan,
    /// A hole in a writer's sequence numbers older than this (capture time) is lost
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = TimeSpan::positive)]
    pub(crate) loss_timeout: TimeSpan,
    /// Built-in topics (DCPSParticipant, ...) are always listed, in text as in JSON; the
    /// flag that listed them in text is accepted so that older command lines still run
    #[arg(long, hide = true)]
    pub(crate) builtin: bool,
    /// No progress bar
    #[arg(long, short = 'q')]
    pub(crate) quiet: bool,
}

/// Options of a whole-file statistics run.
#[derive(Debug, Clone, Default)]
pub struct StatsOptions {
    pub window: Option<TimeSpan>,
    pub loss_timeout: Option<TimeSpan>,
    pub discovery_cache: Option<PathBuf>,
    pub progress: bool,
}

/// The engine configuration of `stats`: caps, but no idle timeout (a file is
/// summarised whole).
pub fn stats_engine_config(opts: &StatsOptions) -> EngineConfig {
    let mut state = StateConfig {
        idle_timeout_ns: None,
        ..StateConfig::default()
    };
    if let Some(w) = opts.window {
        state.window_ns = w.ns().max(1);
    }
    if let Some(t) = opts.loss_timeout {
        state.seq.final_after_ns = t.ns().max(1);
    }
    EngineConfig {
        state,
        ..EngineConfig::default()
    }
}

/// Run a whole capture file through the pipeline and return the final snapshot.
pub fn stats_file(path: &Path, opts: &StatsOptions) -> Result<Arc<Snapshot>> {
    let source = FileSource::open(path)?;
    let size = source.file_size;
    let mut engine = Engine::new(stats_engine_config(opts));
    let cache = match &opts.discovery_cache {
        Some(p) if p.exists() => Some(DiscoveryCache::load(p)?),
        _ => None,
    };
    if let Some(c) = &cache {
        engine.import_cache(c);
    }
    let run = RunOptions {
        progress: opts.progress,
        // A replay blocks on a full queue: a short one keeps memory small and flat.
        queue_batches: 4,
        // Each hand-over wakes the other thread; on small frames the wake-ups of
        // 256-frame batches cost more than a tenth of the replay (docs/benchmarks.md).
        batch_frames: 4096,
        batch_bytes: 1 << 20,
        ..RunOptions::default()
    };
    let snap = run_threaded(
        vec![CaptureInput {
            source: Box::new(source),
            live: false,
            size_hint: Some(size),
            filter: None,
        }],
        &mut engine,
        &run,
    )?;
    if let Some(p) = &opts.discovery_cache {
        let mut merged = cache.unwrap_or_default();
        merged.merge(engine.state.export_cache());
        merged.save(p)?;
    }
    Ok(snap)
}

pub fn run(args: &StatsArgs) -> Result<()> {
    let opts = StatsOptions {
        window: Some(args.window),
        loss_timeout: Some(args.loss_timeout),
        discovery_cache: args.discovery_cache.clone(),
        progress: !args.quiet && io::stderr().is_terminal(),
    };
    let snap = stats_file(&args.file, &opts)?;
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let res = match args.format {
        StatsFormat::Json => write_json(&mut out, &snap),
        StatsFormat::Text => out.write_all(
            text_report(
                &snap,
                &ReportOptions {
                    ros: args.ros,
                    builtin: true,
                    writers: true,
                },
            )
            .as_bytes(),
        ),
    };
    match res.and_then(|()| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            Err(e).context("writing to standard output")
        }
        _ => {
            for s in &snap.health.pipeline.sources {
                if let Some(e) = &s.error {
                    eprintln!("ddshark: warning: {e}; the statistics cover what came before it");
                }
            }
            Ok(())
        }
    }
}
