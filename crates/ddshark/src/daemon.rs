//! The daemon: `ddshark -i IFACE …` (live) or `ddshark -r FILE …` (replay), with
//! the TUI or, with `--no-tui`, a periodic text summary / JSON lines on stdout.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::capture::file::FileSource;
use crate::capture::filter::{read_filter_file, FrameFilter};
use crate::capture::live::{interface_list, LiveOptions, LiveSource, DEFAULT_FILTER};
use crate::capture::PacketSource;
use crate::output::stats::{text_report, ReportOptions};
use crate::pipeline::{
    run_threaded, CaptureInput, Engine, EngineConfig, PaceControl, RunOptions, Sink, SnapshotHub,
    SourceCtx,
};
use crate::recording::{RecordInterface, RecordOptions, RecordTap, Recorder, RecordingHealth};
use crate::state::cache::DiscoveryCache;
use crate::state::snapshot::{Health, Snapshot, Summary, TopicView};
use crate::state::StateConfig;
use crate::units::TimeSpan;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum DaemonFormat {
    #[default]
    Text,
    Jsonl,
}

/// Capture and replay options (top level of the command line).
#[derive(Debug, Clone, clap::Args)]
pub struct DaemonArgs {
    /// Capture live on this interface (repeat for several; `any` = all)
    #[arg(short = 'i', long = "interface", value_name = "IFACE")]
    pub interfaces: Vec<String>,
    /// Replay a pcap/pcapng file
    #[arg(
        short = 'r',
        long = "read",
        value_name = "FILE",
        conflicts_with = "interfaces"
    )]
    pub(crate) read: Option<PathBuf>,
    /// No TUI: print a periodic summary on stdout
    #[arg(long)]
    pub no_tui: bool,
    /// Summary format with --no-tui: readable text, or JSON lines (one object per summary)
    #[arg(long, value_enum, default_value = "text")]
    pub format: DaemonFormat,
    /// Capture time between summaries (e.g. 500ms, 2s, 1m)
    #[arg(long, default_value = "2s", value_name = "DURATION", value_parser = TimeSpan::positive)]
    pub interval: TimeSpan,
    /// Replay (-r) at N times the recorded speed (default: as fast as possible with
    /// --no-tui, recorded speed with the TUI; 0 = as fast as possible)
    #[arg(long, value_name = "N", conflicts_with = "interfaces", value_parser = parse_speed)]
    pub(crate) speed: Option<f64>,
    /// Replay (-r) with timestamps moved: the file's first frame at WHEN (`now`, or Unix
    /// time in seconds with up to 9 decimals), every other frame as far from it as recorded.
    /// For old captures into a live stack, e.g. `--retime now --otlp`
    #[arg(long, value_name = "WHEN", conflicts_with = "interfaces", value_parser = RetimeAt::parse)]
    pub(crate) retime: Option<RetimeAt>,
    /// Stop after this long (wall-clock, e.g. 30s, 5m)
    #[arg(long, value_name = "DURATION", value_parser = TimeSpan::positive)]
    pub(crate) duration: Option<TimeSpan>,
    /// Stop after COUNT frames (those the filter keeps), like tcpdump -c
    #[arg(short = 'c', long = "count", value_name = "COUNT",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) count: Option<u64>,
    /// Bytes kept of each packet (live)
    #[arg(long, short = 's', default_value = "262144", conflicts_with = "read")]
    pub(crate) snaplen: i32,
    /// Kernel capture buffer, MiB (live)
    #[arg(
        long,
        short = 'B',
        default_value = "64",
        value_name = "MIB",
        conflicts_with = "read"
    )]
    pub(crate) buffer_size: i32,
    /// Deliver packets as soon as they arrive, no kernel batching (live)
    #[arg(long, conflicts_with = "read")]
    pub(crate) immediate: bool,
    /// Do not put the interface into promiscuous mode (live)
    #[arg(long, short = 'p', conflicts_with = "read")]
    pub(crate) no_promisc: bool,
    /// Timestamp source (live): host, host_lowprec, host_hiprec, adapter, adapter_unsynced
    #[arg(long, short = 'j', value_name = "TYPE", conflicts_with = "read")]
    pub(crate) tstamp_type: Option<String>,
    /// Run the capture thread with this SCHED_FIFO priority, 1-99 (live)
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(u8).range(1..=99),
          conflicts_with = "read")]
    pub(crate) rt_priority: Option<u8>,
    /// Pin the capture thread to this CPU (live)
    #[arg(long, value_name = "CPU", conflicts_with = "read")]
    pub(crate) cpu: Option<usize>,
    /// Run as USER once the interfaces are open (as tcpdump -Z); -w recordings and other
    /// files are then created as USER. Live capture always drops its capabilities then
    #[arg(
        short = 'Z',
        long = "relinquish-privileges",
        value_name = "USER",
        conflicts_with = "read"
    )]
    pub(crate) user: Option<String>,
    /// Batches of 256 frames queued between capture and state before dropping
    #[arg(long, default_value = "64", value_name = "BATCHES")]
    pub(crate) queue: usize,
    /// Load discovery from FILE at start and save it at the end
    #[arg(long, value_name = "FILE")]
    pub(crate) discovery_cache: Option<PathBuf>,
    /// Show ROS 2 names demangled
    #[arg(long)]
    pub(crate) ros: bool,
    /// Sliding window for rates (capture time, e.g. 10s)
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = TimeSpan::positive)]
    pub window: TimeSpan,
    /// Print the interfaces that can be captured and exit
    #[arg(long, short = 'D')]
    pub(crate) list_interfaces: bool,
    /// Print the final snapshot as JSON (like `ddshark stats`) at the end
    #[arg(long, value_name = "FILE")]
    pub(crate) final_json: Option<PathBuf>,
    /// Also record what is captured to FILE (pcapng, ns timestamps, host and interface
    /// names; written as FILE.part, renamed when complete)
    #[arg(
        short = 'w',
        long = "write",
        value_name = "FILE",
        conflicts_with = "read"
    )]
    pub(crate) write: Option<PathBuf>,
    /// With -w: start a new file before one exceeds MB million bytes (FILE, FILE1, …)
    #[arg(short = 'C', long = "file-size", value_name = "MB", requires = "write", group = "rotation",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) file_size: Option<u64>,
    /// With -w: start a new file every DURATION of capture time, e.g. 60s (strftime
    /// %Y%m%d%H%M%S in FILE is expanded, UTC; else FILE, FILE1, …)
    #[arg(
        short = 'G',
        long = "rotate",
        value_name = "DURATION",
        requires = "write",
        group = "rotation",
        value_parser = TimeSpan::positive
    )]
    pub(crate) rotate: Option<TimeSpan>,
    /// With -w: MiB of captured frames held for the writer (a slow disk, a busy CPU)
    /// before frames are dropped, counted
    #[arg(long, value_name = "MIB", default_value = "256", requires = "write",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) write_queue: u64,
    /// With -C: a ring of COUNT files (FILE0…); with -G: stop after COUNT files
    #[arg(short = 'W', long = "file-count", value_name = "COUNT", requires = "rotation",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub file_count: Option<u32>,
    #[command(flatten)]
    pub otlp: crate::otlp::OtlpArgs,
    /// Read the capture filter from FILE (as tcpdump -F; `#` starts a comment)
    #[arg(
        short = 'F',
        long = "filter-file",
        value_name = "FILE",
        conflicts_with = "filter"
    )]
    pub filter_file: Option<PathBuf>,
    /// Capture filter (BPF, as tcpdump takes it), after the options or between them;
    /// applies to -r files too. Default on interfaces: UDP and IP fragments
    #[arg(value_name = "FILTER")]
    pub filter: Vec<String>,
}

fn parse_speed(s: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| {
            format!("expected a speed factor ≥ 0 (e.g. 1, 2.5; 0 = as fast as possible), got {s:?}")
        })
}

/// Where `--retime` puts a replay's first frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RetimeAt {
    /// The wall clock when the replay starts.
    Now,
    /// Nanoseconds since the Unix epoch.
    UnixNs(u64),
}

impl RetimeAt {
    /// `now`, or seconds since the Unix epoch with up to 9 decimals (read exactly, no float).
    pub(crate) fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s == "now" {
            return Ok(Self::Now);
        }
        let bad = || {
            format!("expected `now` or Unix time in seconds (e.g. 1764100000.123456789), got {s:?}")
        };
        let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
        let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() || !digits(whole) || !digits(frac) || frac.len() > 9 {
            return Err(bad());
        }
        let secs: u64 = whole.parse().map_err(|_| bad())?;
        let frac_ns: u64 = if frac.is_empty() {
            0
        } else {
            let scale = 10u64.pow(9 - u32::try_from(frac.len()).map_err(|_| bad())?);
            frac.parse::<u64>().map_err(|_| bad())? * scale
        };
        secs.checked_mul(1_000_000_000)
            .and_then(|ns| ns.checked_add(frac_ns))
            .map(Self::UnixNs)
            .ok_or_else(bad)
    }

    /// The instant in ns since the Unix epoch (`now` read from the wall clock).
    pub(crate) fn resolve(self) -> Result<u64> {
        match self {
            Self::UnixNs(ns) => Ok(ns),
            Self::Now => {
                let since = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .context("--retime now: the system clock is before 1970")?;
                u64::try_from(since.as_nanos())
                    .context("--retime now: the system clock is past 2554")
            }
        }
    }
}

impl DaemonArgs {
    /// Was any daemon option given (so `ddshark` alone prints help)?
    pub fn wanted(&self) -> bool {
        !self.interfaces.is_empty() || self.read.is_some() || self.list_interfaces
    }

    /// The capture filter the user gave (words after the options, or -F FILE), if any.
    pub(crate) fn user_filter(&self) -> Result<Option<String>> {
        let text = match &self.filter_file {
            Some(p) => read_filter_file(p)?,
            None => self.filter.join(" "),
        };
        Ok((!text.trim().is_empty()).then_some(text))
    }
}

/// One line of `--format jsonl`.
#[derive(Serialize)]
struct JsonLine<'a> {
    summary: &'a Summary,
    topics: Vec<&'a TopicView>,
    health: &'a Health,
}

/// Prints every snapshot on stdout.
pub(crate) struct ReportSink {
    format: DaemonFormat,
    report: ReportOptions,
    out: io::Stdout,
    /// stdout was closed (`| head`): stop writing.
    closed: bool,
}

impl ReportSink {
    pub fn new(format: DaemonFormat, ros: bool) -> Self {
        Self {
            format,
            report: ReportOptions {
                ros,
                builtin: false,
                writers: false,
            },
            out: io::stdout(),
            closed: false,
        }
    }

    fn print(&mut self, s: &Snapshot, last: bool) {
        if self.closed {
            return;
        }
        let mut buf = Vec::new();
        match self.format {
            DaemonFormat::Jsonl => {
                let line = JsonLine {
                    summary: &s.summary,
                    topics: s.topics.iter().filter(|t| !t.builtin).collect(),
                    health: &s.health,
                };
                if serde_json::to_writer(&mut buf, &line).is_err() {
                    return;
                }
                buf.push(b'\n');
            }
            DaemonFormat::Text => {
                let opts = ReportOptions {
                    writers: last,
                    ..self.report
                };
                buf.extend_from_slice(
                    format!(
                        "=== {} ===\n{}",
                        crate::units::timestamp(s.summary.capture_time_ns),
                        text_report(s, &opts)
                    )
                    .as_bytes(),
                );
                buf.push(b'\n');
            }
        }
        let mut out = self.out.lock();
        if out.write_all(&buf).and_then(|()| out.flush()).is_err() {
            self.closed = true;
        }
    }
}

impl Sink for ReportSink {
    fn on_datagram(&mut self, _d: &rtps_dissect::Datagram<'_>, _ctx: &SourceCtx<'_>) {}
    fn on_snapshot(&mut self, s: &Arc<Snapshot>) {
        self.print(s, false);
    }
    fn finish(&mut self, s: &Arc<Snapshot>) {
        self.print(s, true);
    }
}

/// Check `-w/-C/-G/-W`, create the first file and start the writer thread.
fn start_recording(
    args: &DaemonArgs,
    path: &std::path::Path,
    interfaces: Vec<RecordInterface>,
    stop: &Arc<AtomicBool>,
) -> Result<RecordTap> {
    let rotate_ns = args.rotate.map(TimeSpan::ns);
    let host_name = args
        .otlp
        .host_name
        .clone()
        .unwrap_or_else(|| crate::otlp::system_host_name(|k| std::env::var(k).ok()));
    let opts = RecordOptions {
        path: path.to_path_buf(),
        rotate_bytes: args
            .file_size
            .map(|mb| mb.saturating_mul(crate::recording::ROTATE_SIZE_UNIT)),
        rotate_ns,
        max_files: args.file_count,
        host_name,
        interfaces,
    };
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    let recorder = Recorder::create(&opts, now_ns)?;
    let queue_bytes = args.write_queue.saturating_mul(1 << 20);
    RecordTap::start(recorder, path, queue_bytes, stop.clone())
        .with_context(|| format!("{}: cannot start the recording thread", path.display()))
}

/// One line on stderr at the end of a recording: what was written, what was not.
fn report_recording(h: &RecordingHealth) {
    let mut line = format!(
        "ddshark: recorded {} frames ({}) in {} file{} ({})",
        h.frames_written,
        crate::units::bytes(h.bytes_written as f64),
        h.files_closed,
        if h.files_closed == 1 { "" } else { "s" },
        h.path
    );
    if h.not_written() > 0 {
        line.push_str(&format!(
            "; {} frames NOT written ({} on a full queue)",
            h.not_written(),
            h.queue_dropped
        ));
    }
    eprintln!("{line}");
}

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
    let mut inputs = Vec::new();
    let user_filter = args.user_filter()?;
    let started;
    let mut recorded = Vec::new();
    if let Some(path) = &args.read {
        let mut src = FileSource::open(path)?;
        if let Some(at) = args.retime {
            src.retime_to(at.resolve()?);
        }
        let size = src.file_size;
        let filter = match &user_filter {
            Some(f) => Some(FrameFilter::compile(f, src.link_type(), src.name())?),
            None => None,
        };
        started = format!("reading {}", describe_source(&src, user_filter.as_deref()));
        inputs.push(CaptureInput {
            source: Box::new(src),
            live: false,
            size_hint: Some(size),
            filter,
        });
    } else if !args.interfaces.is_empty() {
        let opts = LiveOptions {
            snaplen: args.snaplen,
            buffer_size: args.buffer_size.saturating_mul(1 << 20),
            immediate: args.immediate,
            promisc: !args.no_promisc,
            tstamp_type: args.tstamp_type.clone(),
            filter: user_filter
                .clone()
                .unwrap_or_else(|| DEFAULT_FILTER.to_string()),
            timeout_ms: 100,
        };
        let mut names = Vec::new();
        for iface in &args.interfaces {
            let src = LiveSource::open(iface, &opts)?;
            names.push(describe_source(&src, None));
            recorded.push(RecordInterface {
                name: iface.clone(),
                link_type: src.link_type().to_dlt(),
                snaplen: u32::try_from(args.snaplen).unwrap_or(0),
                filter: src.filter().to_string(),
            });
            inputs.push(CaptureInput {
                source: Box::new(src),
                live: true,
                size_hint: None,
                filter: None,
            });
        }
        started = format!(
            "capturing on {}, filter: {}",
            names.join(", "),
            user_filter
                .as_deref()
                .unwrap_or("UDP and IP fragments (the default)")
        );
    } else {
        bail!("nothing to capture: give -i IFACE or -r FILE (see --help)");
    }
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
        // A second Ctrl-C is the default behaviour (exit at once) only if this fails.
        let _ = ctrlc::set_handler(move || stop.store(true, Ordering::Relaxed));
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
    if let Some(c) = captured_stderr {
        c.restore().context("restoring stderr")?;
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
    if let Some(p) = &args.final_json {
        let text = serde_json::to_string_pretty(&*snap)?;
        crate::atomic_file::write(p, text).with_context(|| format!("writing {}", p.display()))?;
    }
    if let Some(h) = &export {
        crate::otlp::check_delivered(&args.otlp, &h.stats())?;
    }
    Ok(())
}

/// `lo (link type EN10MB)` or `a.pcap (link type LINUX_SLL), filter: udp port 7400`.
fn describe_source(src: &dyn PacketSource, filter: Option<&str>) -> String {
    let link = src
        .link_type()
        .map(|l| {
            let dlt = pcap::Linktype(i32::try_from(l.to_dlt()).unwrap_or(i32::MAX));
            dlt.get_name().unwrap_or_else(|_| l.to_dlt().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    match filter {
        Some(f) => format!("{} (link type {link}), filter: {f}", src.name()),
        None => format!("{} (link type {link})", src.name()),
    }
}
