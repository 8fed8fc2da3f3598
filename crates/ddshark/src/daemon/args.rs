//! The daemon's command line (the top level of ddshark's).

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::capture::filter::read_filter_file;
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
    #[arg(short = 'r', long, value_name = "FILE", conflicts_with = "interfaces")]
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
    #[arg(short = 'w', long, value_name = "FILE", conflicts_with = "read")]
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
    #[arg(short = 'F', long, value_name = "FILE", conflicts_with = "filter")]
    pub filter_file: Option<PathBuf>,
    /// Capture filter (BPF, as tcpdump takes it), after the options or between them;
    /// applies to -r files too. Default on interfaces: UDP, TCP and IP fragments
    /// (also inside one 802.1Q tag)
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
