//! `ddshark latency SENDER RECEIVER`: one-way latency of every DDS sample (or DATA_FRAG
//! submessage) between captures taken on different hosts of one (synchronised) clock.
//!
//! The captures are read side by side in capture-time order; every DATA/DATA_FRAG
//! becomes an observation keyed by (writer GUID, SN[, fragment starting number]) and
//! meets the other captures' observations in a bounded [`join::Join`]. Each writer's
//! own capture (the one that sees its samples first) is the sending side, so both
//! directions of a capture pair come out of one run, and a multicast sample yields one
//! row per receiving capture.

pub mod extract;
pub mod html;
pub mod join;
pub mod output;
pub mod stats;

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use rtps_dissect::Dissector;

use crate::capture::file::FileSource;
use crate::capture::PacketSource;
use extract::{clock, observations, ExtractStats, Obs};
use join::{Join, JoinConfig, JoinStats, SampleRow};
use stats::Summary;

/// What one row stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// DDS layer: per sample (writer GUID, SN).
    Sample,
    /// DDS submessage: per DATA_FRAG (writer GUID, SN, fragment starting number); DATA as is.
    Submessage,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LatencyFormat {
    /// Rows, then per-topic statistics and histograms.
    Text,
    /// One tab-separated row per sample, with a header.
    Tsv,
    /// JSON lines: one object per sample, then per topic, then the run's statistics.
    Json,
}

const EXAMPLES: &str = "\
Examples:
  ddshark latency hostA.pcap hostB.pcap                      both directions, per sample
  ddshark latency a.pcap b.pcap --level submessage -F tsv    per DATA_FRAG, tab-separated
  ddshark latency a.pcap b.pcap c.pcap --html report.html    one sender, two receivers
  ddshark latency a.pcap b.pcap --offset-ns -25000           B's clock runs 25 µs behind A's
";

/// Arguments of `ddshark latency`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct LatencyArgs {
    /// Capture taken on the sending host (pcap/pcapng); its clock is the reference
    pub sender: PathBuf,
    /// Capture(s) taken on the receiving host(s)
    #[arg(required = true)]
    pub receivers: Vec<PathBuf>,
    /// Sample: DDS layer (first IP fragment of the first datagram → last IP fragment of the
    /// last needed datagram). Submessage: the same per DATA_FRAG.
    #[arg(long, value_enum, default_value = "sample")]
    pub level: Level,
    #[arg(long, short = 'F', value_enum, default_value = "text")]
    pub format: LatencyFormat,
    /// Receiver clock minus sender clock, in ns (subtracted from the receivers' timestamps)
    #[arg(long, default_value_t = 0, allow_hyphen_values = true)]
    pub offset_ns: i64,
    /// Also write a self-contained HTML report (box plot per topic, latency over time, histogram)
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Capture(s) read first only to learn writer → topic from their discovery traffic
    /// (e.g. one started before the participants when SENDER/RECEIVER started late)
    #[arg(long, value_name = "PCAP")]
    pub discovery: Vec<PathBuf>,
    /// Only the per-topic statistics (text format), no per-sample rows
    #[arg(long)]
    pub summary: bool,
    /// Leave out built-in (discovery) writers
    #[arg(long)]
    pub user_only: bool,
    /// Finalise a sample after this much capture time without news of it
    #[arg(long, default_value_t = 10_000_000_000, value_name = "NS")]
    pub window_ns: i64,
    /// Most samples held in the join at once (oldest finalised early, counted)
    #[arg(long, default_value_t = 1_000_000)]
    pub max_pending: usize,
    /// Most bytes the join holds (oldest finalised early, counted)
    #[arg(long, default_value_t = 1 << 30)]
    pub max_bytes: usize,
    /// A sample sent this close to the end of a receiving capture is not called lost
    #[arg(long, default_value_t = 1_000_000_000, value_name = "NS")]
    pub lost_grace_ns: i64,
    /// No statistics on stderr
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// Everything a run produced, for sinks and tests.
#[derive(Debug, Default)]
pub struct RunSummary {
    pub captures: Vec<String>,
    pub summary: Summary,
    pub join: JoinStats,
    pub extract: Vec<ExtractStats>,
    pub truncated: Vec<String>,
    pub level: Option<Level>,
}

/// Capture label: A, B, C, ...
pub fn label(i: usize) -> String {
    let mut s = String::new();
    let mut n = i;
    loop {
        s.insert(0, char::from(b'A' + (n % 26) as u8));
        if n < 26 {
            break;
        }
        n = n / 26 - 1;
    }
    s
}

pub fn direction(sender: usize, receiver: usize) -> String {
    format!("{}->{}", label(sender), label(receiver))
}

struct Input {
    source: FileSource,
    dissector: Dissector,
    shift: i64,
    stats: ExtractStats,
    next: Option<(i64, Vec<Obs>)>,
    truncated: Option<String>,
}

impl Input {
    fn refill(&mut self, level: Level) -> Result<()> {
        let Input {
            source,
            dissector,
            shift,
            stats,
            next,
            truncated,
        } = self;
        *next = None;
        if truncated.is_some() {
            return Ok(());
        }
        let frame = match source.next_frame() {
            Ok(Some(f)) => f,
            Ok(None) => return Ok(()),
            Err(e) if e.is_truncation() => {
                *truncated = Some(e.to_string());
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let ts = clock(frame.ts_ns, *shift);
        let mut obs = Vec::new();
        dissector.process_with(&frame, |outcome| {
            for d in outcome.datagrams() {
                observations(d, level, *shift, stats, &mut obs);
            }
        });
        *next = Some((ts, obs));
        Ok(())
    }
}

/// Learn writer → topic from discovery captures, for every dissector.
fn seed_topics(paths: &[PathBuf], inputs: &mut [Input]) -> Result<()> {
    for p in paths {
        let mut src = FileSource::open(p)?;
        let mut d = Dissector::default();
        loop {
            match src.next_frame() {
                Ok(Some(f)) => {
                    let _ = d.process(&f);
                }
                Ok(None) => break,
                Err(e) if e.is_truncation() => break,
                Err(e) => return Err(e.into()),
            }
        }
        for input in inputs.iter_mut() {
            let map = input.dissector.topics_mut();
            for (guid, info) in d.topics().iter() {
                if map.get(guid).is_none() {
                    map.insert(*guid, &info.topic, &info.type_name, info.kind);
                }
            }
        }
    }
    Ok(())
}

/// Join the captures; `sink` gets every finalised row (in finalisation order).
pub fn join_captures(
    args: &LatencyArgs,
    mut sink: impl FnMut(&SampleRow) -> Result<()>,
) -> Result<RunSummary> {
    if args.window_ns <= 0 {
        bail!("--window-ns must be positive");
    }
    let paths: Vec<&Path> = std::iter::once(args.sender.as_path())
        .chain(args.receivers.iter().map(|p| p.as_path()))
        .collect();
    let mut inputs = Vec::with_capacity(paths.len());
    for (i, p) in paths.iter().enumerate() {
        inputs.push(Input {
            source: FileSource::open(p)?,
            dissector: Dissector::default(),
            shift: if i == 0 { 0 } else { args.offset_ns },
            stats: ExtractStats::default(),
            next: None,
            truncated: None,
        });
    }
    seed_topics(&args.discovery, &mut inputs)?;
    for input in inputs.iter_mut() {
        input.refill(args.level)?;
    }
    let mut join = Join::new(JoinConfig {
        captures: inputs.len(),
        window_ns: args.window_ns,
        max_pending: args.max_pending.max(1),
        max_bytes: args.max_bytes,
        lost_grace_ns: args.lost_grace_ns,
    });
    let mut summary = Summary::default();
    let mut rows = Vec::new();
    let mut emit = |rows: &mut Vec<SampleRow>, summary: &mut Summary| -> Result<()> {
        for r in rows.drain(..) {
            if args.user_only && r.key.writer.entity.is_builtin() {
                continue;
            }
            summary.add(&r);
            sink(&r)?;
        }
        Ok(())
    };
    loop {
        let best = inputs
            .iter()
            .enumerate()
            .filter_map(|(i, inp)| inp.next.as_ref().map(|n| (n.0, i)))
            .min();
        let Some((ts, i)) = best else { break };
        let Some(input) = inputs.get_mut(i) else {
            break;
        };
        let batch = input.next.take().map(|n| n.1).unwrap_or_default();
        join.saw_frame(i, ts);
        for o in batch {
            join.push(i, o, &mut rows);
        }
        join.advance(ts, &mut rows);
        emit(&mut rows, &mut summary)?;
        input.refill(args.level)?;
    }
    join.finish(&mut rows);
    emit(&mut rows, &mut summary)?;
    Ok(RunSummary {
        captures: paths.iter().map(|p| p.display().to_string()).collect(),
        summary,
        join: join.stats(),
        extract: inputs.iter().map(|i| i.stats).collect(),
        truncated: inputs.iter().filter_map(|i| i.truncated.clone()).collect(),
        level: Some(args.level),
    })
}

pub fn run(args: &LatencyArgs) -> Result<()> {
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut open = true;
    let mut line = String::with_capacity(512);
    if open && !(args.summary && args.format == LatencyFormat::Text) {
        line.clear();
        output::header(args.format, args.level, &mut line);
        open = crate::output::write_or_stop(&mut out, line.as_bytes())?;
    }
    let run = join_captures(args, |r| {
        if !open || (args.summary && args.format == LatencyFormat::Text) {
            return Ok(());
        }
        line.clear();
        output::row(args.format, args.level, r, &mut line);
        open = crate::output::write_or_stop(&mut out, line.as_bytes())?;
        Ok(())
    })?;
    if open {
        let mut tail = String::new();
        output::trailer(args.format, &run, &mut tail);
        crate::output::write_or_stop(&mut out, tail.as_bytes())?;
    }
    match out.flush() {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            return Err(e).context("writing to standard output")
        }
        _ => {}
    }
    for t in &run.truncated {
        eprintln!("ddshark: warning: {t}; used what came before it");
    }
    if let Some(path) = &args.html {
        let page = html::report(&run);
        std::fs::write(path, page).with_context(|| format!("writing {}", path.display()))?;
    }
    if !args.quiet {
        let mut s = String::new();
        if args.format != LatencyFormat::Text {
            output::summary_text(&run, &mut s, false);
        }
        output::stats_text(&run, &mut s);
        eprint!("{s}");
    }
    Ok(())
}
