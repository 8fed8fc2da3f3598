//! `ddshark stats FILE`: the final state and statistics of a capture, as JSON for
//! scripts or as a readable report. Also the text report the daemon prints.

use std::fmt::Write as _;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::capture::file::FileSource;
use crate::pipeline::{run_threaded, CaptureInput, Engine, EngineConfig, RunOptions};
use crate::state::cache::DiscoveryCache;
use crate::state::ros::{display_topic, display_type};
use crate::state::snapshot::{Snapshot, TopicView};
use crate::state::timing::{TimingView, MIN_RATE_SPAN_NS};
use crate::state::StateConfig;
use crate::units::{self, TimeSpan};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StatsFormat {
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
    pub file: PathBuf,
    /// JSON (participants, writers, readers, topics, secured, health) or a readable report
    #[arg(long, value_enum, default_value = "json")]
    pub format: StatsFormat,
    /// Show ROS 2 names demangled in the text report (rt/chatter → /chatter)
    #[arg(long)]
    pub ros: bool,
    /// Load discovery from FILE first and save what this capture discovered into it
    #[arg(long, value_name = "FILE")]
    pub discovery_cache: Option<PathBuf>,
    /// Sliding window for rates, ending at the last frame (e.g. 10s)
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = TimeSpan::positive)]
    pub window: TimeSpan,
    /// A hole in a writer's sequence numbers older than this (capture time) is lost
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = TimeSpan::positive)]
    pub loss_timeout: TimeSpan,
    /// Include built-in discovery writers (DCPSParticipant, ...) in the text report
    #[arg(long)]
    pub builtin: bool,
    /// No progress bar
    #[arg(long, short = 'q')]
    pub quiet: bool,
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
        StatsFormat::Json => serde_json::to_writer_pretty(&mut out, &*snap)
            .map_err(io::Error::other)
            .and_then(|()| out.write_all(b"\n")),
        StatsFormat::Text => out.write_all(
            text_report(
                &snap,
                &ReportOptions {
                    ros: args.ros,
                    builtin: args.builtin,
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

#[derive(Debug, Clone, Copy, Default)]
pub struct ReportOptions {
    pub ros: bool,
    pub builtin: bool,
    /// List writers that need attention (loss, no discovery, shared memory).
    pub writers: bool,
}

fn trunc(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Bytes per second over the time the topic's writers were active (the last window's
/// when they were active less than a second: a burst is not extrapolated).
fn active_bandwidth(t: &TopicView) -> f64 {
    if t.timing.active_s >= MIN_RATE_SPAN_NS as f64 / 1e9 {
        t.totals.bytes as f64 / t.timing.active_s
    } else {
        t.window.bandwidth_bps / 8.0
    }
}

fn ms(ns: Option<f64>) -> String {
    ns.map_or("-".into(), |v| format!("{:.2}", v / 1e6))
}

/// Per topic (and, with `--writers`, per writer): rate over the active time, period
/// min/mean/max, jitter, DEADLINE and the samples later than it.
fn timing_table(r: &mut String, s: &Snapshot, o: &ReportOptions) {
    let _ = writeln!(
        r,
        "\ntiming (capture time of each new sample, as `ros2 topic hz` would see it at this point)\n{:<40} {:>8} {:>8} {:>26} {:>10} {:>10} {:>7}",
        "TOPIC / writer", "RATE/s", "ACTIVE s", "PERIOD ms min/mean/max", "JITTER ms", "DEADLINE", "MISSED"
    );
    let row = |r: &mut String, name: String, t: &TimingView| {
        let period = format!(
            "{}/{}/{}",
            ms(t.period_min_ns.map(|v| v as f64)),
            ms(t.period_mean_ns),
            ms(t.period_max_ns.map(|v| v as f64))
        );
        let _ = writeln!(
            r,
            "{:<40} {:>8} {:>8.3} {:>26} {:>10} {:>10} {:>7}",
            trunc(&name, 40),
            t.rate_hz.map_or("-".into(), |v| format!("{v:.2}")),
            t.active_s,
            period,
            ms(t.period_stddev_ns),
            t.deadline_ns
                .map_or("-".into(), |d| format!("{} ms", ms(Some(d as f64)))),
            t.deadline_misses
        );
    };
    for t in s.topics.iter().filter(|t| o.builtin || !t.builtin) {
        row(r, display_topic(&t.name, o.ros), &t.timing);
        if o.writers {
            for w in s
                .writers
                .iter()
                .filter(|w| w.topic.as_deref() == Some(t.name.as_str()))
            {
                row(r, format!("  {}", w.guid), &w.timing);
            }
        }
    }
}

/// DDS Security traffic: totals, what is hidden, and one line per participant pair.
fn secured_table(r: &mut String, s: &Snapshot) {
    let sec = &s.secured;
    if sec.totals.messages == 0 {
        return;
    }
    let t = &sec.totals;
    let _ = writeln!(
        r,
        "\nsecured (DDS Security): {} messages ({} SRTPS-protected), {} protected submessages ({} encrypted, {} signed), {}; last {:.1} s: {:.1} msg/s, {}/s",
        t.messages,
        t.srtps_messages,
        t.sec_submessages,
        t.encrypted_submessages,
        t.signed_submessages,
        units::bytes(t.bytes as f64),
        sec.window.seconds,
        sec.window.messages_per_s,
        units::bytes(sec.window.bandwidth_bps / 8.0)
    );
    if sec.protected_endpoints > 0 {
        let _ = writeln!(
            r,
            "protected: {} endpoint(s) of {} participant(s) send protected submessages (their topics, writers and readers are hidden when discovery is protected)",
            sec.protected_endpoints,
            sec.participants.iter().filter(|p| p.protected_endpoints > 0).count()
        );
    }
    let _ = writeln!(
        r,
        "{:<43} {:<43} {:>8} {:>8} {:>10} {:>8} {:>10}",
        "FROM", "TO", "MESSAGES", "SUBMSGS", "BYTES", "MSG/s", "BW"
    );
    let named = |prefix: &str, name: &Option<String>| match name {
        Some(n) => format!("{prefix} ({})", trunc(n, 16)),
        None => prefix.to_string(),
    };
    for p in &sec.pairs {
        let _ = writeln!(
            r,
            "{:<43} {:<43} {:>8} {:>8} {:>10} {:>8.1} {:>10}",
            named(&p.src, &p.src_name),
            named(&p.dst, &p.dst_name),
            p.totals.messages,
            p.totals.sec_submessages,
            units::bytes(p.totals.bytes as f64),
            p.window.messages_per_s,
            format!("{}/s", units::bytes(p.window.bandwidth_bps / 8.0))
        );
    }
    if sec.pairs_evicted > 0 {
        let _ = writeln!(
            r,
            "({} participant pairs evicted; their traffic is in the totals above)",
            sec.pairs_evicted
        );
    }
}

/// The readable report: totals, one line per topic, what needs attention, health.
pub fn text_report(s: &Snapshot, o: &ReportOptions) -> String {
    let mut r = String::new();
    let h = &s.health;
    let d = &h.dissector;
    let _ = writeln!(
        r,
        "capture {:.3} s: {} frames, {} RTPS datagrams ({} IP fragments reassembled), {} submessages; {} participants, {} writers, {} readers, {} topics",
        s.summary.duration_s,
        d.frames,
        d.rtps_datagrams,
        d.ip.reassembled,
        d.submessages,
        h.participants,
        h.writers,
        h.readers,
        s.topics.iter().filter(|t| !t.builtin).count()
    );
    let _ = writeln!(
        r,
        "user data: {} samples, {}; all writers: {} samples, lost {}, retransmitted {} (repaired {}), incomplete {}",
        s.summary.user_samples,
        units::bytes(s.summary.user_bytes as f64),
        s.summary.totals.samples,
        s.summary.totals.lost,
        s.summary.totals.retransmitted,
        s.summary.totals.repaired,
        s.summary.totals.incomplete
    );
    let _ = writeln!(
        r,
        "\n{:<40} {:<34} {:>3} {:>3} {:>8} {:>10} {:>8} {:>10} {:>6} {:>6} {:>6} {:>24}",
        "TOPIC",
        "TYPE",
        "W",
        "R",
        "SAMPLES",
        "BYTES",
        "RATE/s",
        "BW",
        "LOST",
        "RETX",
        "INCMP",
        "SIZE min/mean/max"
    );
    for t in s.topics.iter().filter(|t| o.builtin || !t.builtin) {
        let size = match (t.size.min, t.size.mean, t.size.max) {
            (Some(a), Some(m), Some(b)) => format!("{a}/{m:.0}/{b}"),
            _ => "-".into(),
        };
        let _ = writeln!(
            r,
            "{:<40} {:<34} {:>3} {:>3} {:>8} {:>10} {:>8} {:>10} {:>6} {:>6} {:>6} {:>24}",
            trunc(&display_topic(&t.name, o.ros), 40),
            trunc(&display_type(&t.type_name, o.ros), 34),
            t.writers,
            t.readers,
            t.totals.samples,
            units::bytes(t.totals.bytes as f64),
            t.timing.rate_hz.map_or("-".into(), |v| format!("{v:.1}")),
            format!("{}/s", units::bytes(active_bandwidth(t))),
            t.totals.lost,
            t.totals.retransmitted,
            t.totals.incomplete,
            size
        );
    }
    timing_table(&mut r, s, o);
    secured_table(&mut r, s);
    let mut notes = Vec::new();
    for t in &s.topics {
        if t.shared_memory_only {
            let writers = s
                .writers
                .iter()
                .filter(|w| w.topic.as_deref() == Some(t.name.as_str()) && w.shared_memory_only);
            for w in writers {
                notes.push(format!(
                    "{}: shared memory only: traffic invisible here (writer {} and matched reader(s) {} share a host; no sample on the wire)",
                    display_topic(&t.name, o.ros),
                    w.guid,
                    w.shared_memory_peers.join(", ")
                ));
            }
        }
        for m in &t.qos_mismatches {
            notes.push(format!(
                "QoS mismatch on {}: {} offered {} but reader {} requests {} (writer {})",
                display_topic(&t.name, o.ros),
                m.mismatch.policy,
                m.mismatch.offered,
                m.reader,
                m.mismatch.requested,
                m.writer
            ));
        }
        if t.shared_memory_only_endpoints > 0 {
            notes.push(format!(
                "{}: {} endpoint(s) talk by shared memory only (shared-memory locators only, or a matched same-host peer); their traffic never reaches the wire",
                display_topic(&t.name, o.ros),
                t.shared_memory_only_endpoints
            ));
        }
    }
    if o.writers {
        for w in &s.writers {
            if w.topic.is_none() && w.totals.samples > 0 {
                notes.push(format!(
                    "writer {} sent {} samples ({}) but its discovery (SEDP) was not captured; start earlier or use --discovery-cache",
                    w.guid,
                    w.totals.samples,
                    units::bytes(w.totals.bytes as f64)
                ));
            } else if w.samples_before_discovery > 0 && w.discovered {
                notes.push(format!(
                    "writer {} ({}): {} samples seen before its discovery, attributed afterwards",
                    w.guid,
                    w.topic.as_deref().unwrap_or("?"),
                    w.samples_before_discovery
                ));
            }
            if w.totals.lost > 0 || w.totals.incomplete > 0 {
                notes.push(format!(
                    "writer {} ({}): lost {}, incomplete {}, retransmitted {}, NACKed SNs {}",
                    w.guid,
                    w.topic.as_deref().unwrap_or("?"),
                    w.totals.lost,
                    w.totals.incomplete,
                    w.totals.retransmitted,
                    w.totals.acknack_requested_sns
                ));
            }
        }
    }
    for p in &s.participants {
        if let Some(g) = p.gone {
            notes.push(format!(
                "participant {} ({}) gone: {:?}",
                p.guid_prefix,
                p.entity_name.as_deref().unwrap_or("-"),
                g.reason
            ));
        }
    }
    if !notes.is_empty() {
        let _ = writeln!(r);
        for n in notes.iter().take(200) {
            let _ = writeln!(r, "! {n}");
        }
        if notes.len() > 200 {
            let _ = writeln!(r, "! ... {} more", notes.len() - 200);
        }
    }
    let _ = writeln!(r);
    let mut health = format!(
        "health: skipped {} not IP, {} not UDP, {} not RTPS, {} ICMP-quoted RTPS, {} RTI pings; {} malformed; {} IP datagrams incomplete",
        d.skipped_not_ip,
        d.skipped_not_udp,
        d.skipped_not_rtps,
        d.skipped_icmp_quoted_rtps,
        d.rti_pings,
        d.malformed,
        d.ip.evicted_idle.saturating_add(d.ip.evicted_capacity).saturating_add(d.ip.inconsistent)
    );
    if !d.tcp.is_zero() {
        let t = &d.tcp;
        let _ = write!(
            health,
            "; RTPS over TCP: {} messages ({} RTCP-framed, {} RTI TCP, {} length-prefixed, {} bare), {} control, {} streams ({} closed, {} evicted), {} segments ({} out of order, {} retransmitted, {} gaps of {} bytes, {} resyncs)",
            t.rtps_messages(),
            t.rtps_rtcp,
            t.rtps_rti_tcp,
            t.rtps_length_prefixed,
            t.rtps_bare,
            t.control_messages(),
            t.streams_opened,
            t.streams_closed,
            t.streams_evicted_idle.saturating_add(t.streams_evicted_capacity),
            t.segments,
            t.out_of_order,
            t.retransmitted,
            t.gaps,
            t.gap_bytes,
            t.resyncs,
        );
    }
    for src in &h.pipeline.sources {
        let _ = write!(health, "; {}: {} frames", src.name, src.frames);
        if src.queue_dropped > 0 {
            let _ = write!(health, ", {} DROPPED (queue full)", src.queue_dropped);
        }
        if let Some(k) = src.kernel {
            let _ = write!(
                health,
                ", kernel received {} dropped {} if-dropped {}",
                k.received, k.dropped, k.if_dropped
            );
        }
    }
    if let Some(rec) = &h.pipeline.recording {
        let _ = write!(
            health,
            "; recording {}: {} frames written in {} file(s)",
            rec.current_file.as_deref().unwrap_or(&rec.path),
            rec.frames_written,
            rec.files_closed
                .saturating_add(u64::from(rec.current_file.is_some()))
        );
        if rec.not_written() > 0 {
            let _ = write!(
                health,
                ", {} NOT WRITTEN ({} on a full queue)",
                rec.not_written(),
                rec.queue_dropped
            );
        }
        if let Some(e) = &rec.error {
            let _ = write!(health, ", ERROR: {e}");
        }
    }
    let ev = &h.state;
    let evicted = ev
        .writers_evicted_idle
        .saturating_add(ev.writers_evicted_capacity)
        .saturating_add(ev.readers_evicted_idle)
        .saturating_add(ev.readers_evicted_capacity)
        .saturating_add(ev.participants_evicted_idle)
        .saturating_add(ev.participants_evicted_capacity);
    if evicted > 0 {
        let _ = write!(health, "; {evicted} entities evicted");
    }
    let _ = writeln!(
        r,
        "{health}; counters {}",
        if h.reconciles {
            "reconcile"
        } else {
            "DO NOT RECONCILE"
        }
    );
    if !h.reconciles {
        for c in h.checks.iter().filter(|c| !c.ok) {
            let _ = writeln!(r, "  {}: {}", c.name, c.detail);
        }
    }
    r
}
