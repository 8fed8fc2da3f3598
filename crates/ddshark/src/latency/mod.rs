//! `ddshark latency SENDER RECEIVER`: one-way latency of every DDS sample (or DATA_FRAG
//! submessage) between captures taken on different hosts.
//!
//! The captures are read side by side in capture-time order; every DATA/DATA_FRAG
//! becomes an observation keyed by (writer GUID, SN[, fragment starting number]) and
//! meets the other captures' observations in a bounded [`join::Join`]. The captures are
//! read twice: the first pass gathers the evidence for each writer's host and for the
//! clock offset between each pair of hosts (`latency_core`: the host from the order of
//! events, not from the clocks; the offset from minimum one-way delays), the second joins
//! with those hosts (and, with `--offset auto`, the receivers' clocks moved onto the
//! sender's by the estimate). Both directions of a capture pair come out of one run, and
//! a multicast sample yields one row per receiving capture.

pub mod extract;
pub mod join;
pub(crate) mod stats;

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use latency_core::{
    EstimateError, HostRule, HostRuleConfig, Hosts, LostRule, OffsetConfig, OffsetEstimate,
};
use rtps_dissect::Dissector;

use crate::capture::file::FileSource;
use crate::capture::PacketSource;
use crate::output::{latency as latency_out, latency_html};
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
    /// One JSON document: {"samples": [...], "offsets": [...], "topics": [...], "stats": {...}}.
    Json,
    /// JSON lines: one object per sample, then per clock offset and topic, then the run's
    /// statistics (each with its "kind").
    Jsonl,
}

const EXAMPLES: &str = "\
Examples:
  ddshark latency hostA.pcap hostB.pcap                      both directions, per sample
  ddshark latency a.pcap b.pcap --level submessage --format tsv   per DATA_FRAG, tab-separated
  ddshark latency a.pcap b.pcap --format json | jq '.topics[]'    per-topic statistics
  ddshark latency a.pcap b.pcap c.pcap --html report.html    one sender, two receivers
  ddshark latency a.pcap b.pcap --offset auto               correct by the offset estimated from the traffic
  ddshark latency a.pcap b.pcap --offset-ns -25000           B's clock runs 25 µs behind A's
";

/// The sample window's default (span_schema::SAMPLE_WINDOW_NS) as the command line
/// writes it.
const DEFAULT_WINDOW: &str = "10s";

/// A duration (`10s`) in ns.
fn span_ns(s: &str) -> Result<i64, String> {
    let span: crate::units::TimeSpan = s.parse()?;
    i64::try_from(span.ns()).map_err(|_| format!("{s:?} is too long"))
}

/// A duration more than zero, in ns.
fn positive_span_ns(s: &str) -> Result<i64, String> {
    crate::units::TimeSpan::positive(s)?;
    span_ns(s)
}

/// How the receivers' clocks are moved onto the sender's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OffsetMode {
    /// By the offset (and drift) estimated from the traffic between the two hosts.
    Auto,
}

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
    /// Output: text, tsv (rows), json (one document) or jsonl (JSON lines)
    #[arg(long, value_enum, default_value = "text")]
    pub format: LatencyFormat,
    /// Receiver clock minus sender clock, in ns (subtracted from the receivers' timestamps)
    #[arg(
        long,
        default_value_t = 0,
        allow_hyphen_values = true,
        conflicts_with = "offset"
    )]
    pub offset_ns: i64,
    /// `auto`: subtract the clock offset estimated from the traffic itself (NTP's estimate
    /// from the minimum one-way delay each way, drift followed); the estimate and its bound
    /// are printed either way
    #[arg(long, value_enum, value_name = "MODE")]
    pub offset: Option<OffsetMode>,
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
    /// Finalise a sample after this much capture time without news of it (e.g. 10s)
    #[arg(long = "window", value_name = "DURATION", value_parser = positive_span_ns,
          default_value = DEFAULT_WINDOW)]
    pub window_ns: i64,
    /// Most samples held in the join at once (oldest finalised early, counted)
    #[arg(long, default_value_t = 1_000_000)]
    pub max_pending: usize,
    /// Most bytes the join holds (oldest finalised early, counted)
    #[arg(long, default_value_t = 1 << 30)]
    pub max_bytes: usize,
    /// A sample sent this close to the end of a receiving capture is not called lost
    #[arg(long = "lost-grace", value_name = "DURATION", value_parser = span_ns, default_value = "1s")]
    pub lost_grace_ns: i64,
    /// A capture is a receiver of a writer (and a sample it missed is lost) if it saw one of
    /// the writer's samples this close to the send time (docs/latency.md)
    #[arg(long = "receiver-window", value_name = "DURATION", value_parser = positive_span_ns,
          default_value = "12s")]
    pub receiver_window_ns: i64,
    /// No statistics on stderr
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// Everything a run produced, for sinks and tests.
#[derive(Debug, Default)]
pub struct RunSummary {
    pub captures: Vec<String>,
    /// Per capture, its name in the output: see [`capture_labels`].
    pub labels: Vec<String>,
    /// Per pair of captures (X < Y) that saw samples in common: the offset of Y's clock
    /// against X's, or why there is none.
    pub offsets: Vec<PairOffset>,
    /// Writers' hosts decided from the clocks (one-way traffic), by participant.
    pub hosts_from_clock: Vec<String>,
    /// The receivers' clocks were corrected by the estimate.
    pub(crate) offset_auto: bool,
    /// Rows with a negative latency (after any correction).
    pub negative_latencies: u64,
    pub summary: Summary,
    pub join: JoinStats,
    pub(crate) extract: Vec<ExtractStats>,
    pub(crate) truncated: Vec<String>,
    pub(crate) level: Option<Level>,
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

/// The captures' names in the output: the host names their pcapng section headers record
/// (`ddshark -w` writes `host.name=NAME`) when every capture has one and they differ; else
/// A, B, C, ...
pub(crate) fn capture_labels(paths: &[&Path]) -> Vec<String> {
    let names: Option<Vec<String>> = paths
        .iter()
        .map(|p| {
            FileSource::open(p)
                .ok()
                .and_then(|s| s.host_name().map(str::to_owned))
        })
        .collect();
    match names {
        Some(n) if n.iter().collect::<std::collections::BTreeSet<_>>().len() == n.len() => n,
        _ => (0..paths.len()).map(label).collect(),
    }
}

pub(crate) fn direction_in(labels: &[String], sender: usize, receiver: usize) -> String {
    match (labels.get(sender), labels.get(receiver)) {
        (Some(s), Some(r)) => format!("{s}->{r}"),
        _ => direction(sender, receiver),
    }
}

impl RunSummary {
    /// Capture `i`'s name in the output.
    pub(crate) fn label(&self, i: usize) -> String {
        self.labels.get(i).cloned().unwrap_or_else(|| label(i))
    }

    pub fn direction(&self, sender: usize, receiver: usize) -> String {
        direction_in(&self.labels, sender, receiver)
    }
}

/// The estimate for one pair of captures.
#[derive(Debug, Clone)]
pub struct PairOffset {
    pub x: usize,
    pub y: usize,
    pub estimate: Result<OffsetEstimate, EstimateError>,
}

/// Moves a capture's timestamps onto the first capture's clock.
#[derive(Debug, Clone, Copy)]
enum Shift {
    Constant(i64),
    Estimated(OffsetEstimate),
}

impl Shift {
    fn at(&self, ts_ns: u64) -> i64 {
        match self {
            Shift::Constant(s) => *s,
            Shift::Estimated(e) => e.offset_at_y(i64::try_from(ts_ns).unwrap_or(i64::MAX)),
        }
    }
}

struct Input {
    source: FileSource,
    dissector: Dissector,
    shift: Shift,
    stats: ExtractStats,
    next: Option<(i64, Vec<Obs>)>,
    /// SPDP announcements in the frame of `next`: participant, its unicast addresses.
    announced: Vec<([u8; 12], Vec<std::net::IpAddr>)>,
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
            announced,
            truncated,
        } = self;
        *next = None;
        announced.clear();
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
        let shift = shift.at(frame.ts_ns);
        let ts = clock(frame.ts_ns, shift);
        let mut obs = Vec::new();
        dissector.process_with(&frame, |outcome| {
            for d in outcome.datagrams() {
                observations(d, level, shift, stats, &mut obs);
                for rec in &d.discovery {
                    if let rtps_dissect::DiscoveryRecord::Participant(p) = rec {
                        let addrs = p
                            .metatraffic_unicast
                            .iter()
                            .chain(&p.default_unicast)
                            .filter_map(|l| l.ip())
                            .collect();
                        announced.push((p.guid_prefix.0, addrs));
                    }
                }
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

/// One pass over the captures through the join; `sink` gets every finalised row.
struct Pass {
    join: JoinStats,
    extract: Vec<ExtractStats>,
    truncated: Vec<String>,
    /// Per capture: its first and last frame time (on the first capture's clock).
    ranges: Vec<Option<(i64, i64)>>,
    rule: Option<HostRule>,
}

fn pass(
    args: &LatencyArgs,
    paths: &[&Path],
    shifts: &[Shift],
    hosts: Option<Hosts>,
    mut sink: impl FnMut(Vec<SampleRow>) -> Result<()>,
) -> Result<Pass> {
    let mut inputs = Vec::with_capacity(paths.len());
    for (p, shift) in paths.iter().zip(shifts) {
        inputs.push(Input {
            source: FileSource::open(p)?,
            dissector: Dissector::default(),
            shift: *shift,
            stats: ExtractStats::default(),
            next: None,
            announced: Vec::new(),
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
        lost: LostRule {
            receiver_window_ns: args.receiver_window_ns,
            grace_ns: args.lost_grace_ns,
        },
    });
    match hosts {
        Some(h) => join.set_hosts(h),
        None => join.collect_evidence(HostRule::new(HostRuleConfig::new(inputs.len()))),
    }
    let mut ranges: Vec<Option<(i64, i64)>> = vec![None; inputs.len()];
    let mut rows = Vec::new();
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
        if let Some(r) = ranges.get_mut(i) {
            *r = Some(r.map_or((ts, ts), |(a, b)| (a.min(ts), b.max(ts))));
        }
        let batch = input.next.take().map(|n| n.1).unwrap_or_default();
        join.saw_frame(i, ts);
        for (participant, addrs) in input.announced.drain(..) {
            join.announce(participant, &addrs);
        }
        for o in batch {
            join.push(i, o, &mut rows);
        }
        join.advance(ts, &mut rows);
        sink(std::mem::take(&mut rows))?;
        input.refill(args.level)?;
    }
    join.finish(&mut rows);
    sink(rows)?;
    Ok(Pass {
        join: join.stats(),
        extract: inputs.iter().map(|i| i.stats).collect(),
        truncated: inputs.iter().filter_map(|i| i.truncated.clone()).collect(),
        ranges,
        rule: join.take_rule(),
    })
}

/// Refuse inputs that cannot give latencies: the same file twice.
fn check_distinct(paths: &[&Path]) -> Result<()> {
    let mut seen: Vec<(PathBuf, u64, &Path)> = Vec::new();
    for p in paths {
        let canon = std::fs::canonicalize(p).with_context(|| format!("reading {}", p.display()))?;
        let len = std::fs::metadata(p)
            .with_context(|| format!("reading {}", p.display()))?
            .len();
        for (c, l, q) in &seen {
            if *c == canon || (*l == len && same_bytes(p, q)?) {
                bail!(
                    "{} and {} are the same capture: latency needs one capture per host",
                    q.display(),
                    p.display()
                );
            }
        }
        seen.push((canon, len, p));
    }
    Ok(())
}

fn same_bytes(a: &Path, b: &Path) -> Result<bool> {
    use std::io::Read;
    let open = |p: &Path| {
        std::fs::File::open(p)
            .map(io::BufReader::new)
            .with_context(|| format!("reading {}", p.display()))
    };
    let (mut fa, mut fb) = (open(a)?, open(b)?);
    let (mut ba, mut bb) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let na = fa
            .read(&mut ba)
            .with_context(|| format!("reading {}", a.display()))?;
        let mut filled = 0;
        while filled < na {
            let n = fb
                .read(bb.get_mut(filled..na).unwrap_or_default())
                .with_context(|| format!("reading {}", b.display()))?;
            if n == 0 {
                return Ok(false);
            }
            filled += n;
        }
        if na == 0 {
            return Ok(true);
        }
        if ba.get(..na) != bb.get(..na) {
            return Ok(false);
        }
    }
}

fn span_text(r: Option<(i64, i64)>) -> String {
    match r {
        Some((a, b)) => format!(
            "{} .. {}",
            crate::units::timestamp(a),
            crate::units::timestamp(b)
        ),
        None => "no frames".into(),
    }
}

/// Join the captures; `sink` gets every finalised row (in finalisation order).
pub fn join_captures(
    args: &LatencyArgs,
    mut sink: impl FnMut(&SampleRow) -> Result<()>,
) -> Result<RunSummary> {
    if args.window_ns <= 0 {
        bail!("--window must be more than 0");
    }
    let paths: Vec<&Path> = std::iter::once(args.sender.as_path())
        .chain(args.receivers.iter().map(|p| p.as_path()))
        .collect();
    check_distinct(&paths)?;
    let labels = capture_labels(&paths);
    // First pass: each capture on its own clock; the evidence for hosts and offsets.
    let raw = vec![Shift::Constant(0); paths.len()];
    let first = pass(args, &paths, &raw, None, |_| Ok(()))?;
    let rule = first
        .rule
        .unwrap_or_else(|| HostRule::new(HostRuleConfig::new(paths.len())));
    let hosts = rule.decide();
    let estimators = rule.offsets(&hosts, OffsetConfig::default());
    let offsets: Vec<PairOffset> = estimators
        .iter()
        .map(|(&(x, y), e)| PairOffset {
            x,
            y,
            estimate: e.estimate(),
        })
        .collect();
    let mut hosts_from_clock: Vec<String> = hosts
        .participants
        .iter()
        .filter(|(_, h)| h.basis == latency_core::Basis::Clock)
        .map(|(p, h)| {
            format!(
                "{} on {}",
                hex::encode(p),
                labels[h.capture.min(labels.len().saturating_sub(1))]
            )
        })
        .collect();
    hosts_from_clock.sort();
    let mut shifts = Vec::with_capacity(paths.len());
    shifts.push(Shift::Constant(0));
    for (k, p) in paths.iter().enumerate().skip(1) {
        let pair = offsets.iter().find(|o| o.x == 0 && o.y == k);
        let shared = pair.is_some_and(|o| o.estimate != Err(EstimateError::NoSharedSample));
        if !shared {
            let (ra, rb) = (
                first.ranges.first().copied().flatten(),
                first.ranges.get(k).copied().flatten(),
            );
            let overlap =
                matches!((ra, rb), (Some((a0, a1)), Some((b0, b1))) if a0 <= b1 && b0 <= a1);
            if !overlap {
                bail!(
                    "{} ({}) and {} ({}) do not overlap in time and share no sample: no latency to measure",
                    paths.first().map_or(String::new(), |p| p.display().to_string()),
                    span_text(ra),
                    p.display(),
                    span_text(rb),
                );
            }
            bail!(
                "{} and {} share no DDS sample (no writer GUID and SN seen in both): not the same DDS traffic, or filtered apart",
                paths.first().map_or(String::new(), |p| p.display().to_string()),
                p.display()
            );
        }
        shifts.push(match (args.offset, pair.map(|o| &o.estimate)) {
            (Some(OffsetMode::Auto), Some(Ok(e))) => Shift::Estimated(*e),
            (Some(OffsetMode::Auto), Some(Err(why))) => bail!(
                "--offset auto: no clock offset between {} and {}: {why}",
                paths
                    .first()
                    .map_or(String::new(), |p| p.display().to_string()),
                p.display()
            ),
            _ => Shift::Constant(args.offset_ns),
        });
    }
    // Second pass: rows, with the decided hosts and the clocks moved as asked.
    let mut summary = Summary::default();
    let mut negative = 0u64;
    let second = pass(args, &paths, &shifts, Some(hosts), |rows| {
        for r in rows {
            if args.user_only && r.key.writer.entity.is_builtin() {
                continue;
            }
            if r.latency_ns.is_some_and(|l| l < 0) {
                negative += 1;
            }
            summary.add(&r);
            sink(&r)?;
        }
        Ok(())
    })?;
    Ok(RunSummary {
        captures: paths.iter().map(|p| p.display().to_string()).collect(),
        labels,
        offsets,
        hosts_from_clock,
        offset_auto: args.offset == Some(OffsetMode::Auto),
        negative_latencies: negative,
        summary,
        join: second.join,
        extract: second.extract,
        truncated: second.truncated,
        level: Some(args.level),
    })
}

/// Warnings about the clocks, for stderr.
pub fn clock_warnings(args: &LatencyArgs, run: &RunSummary) -> Vec<String> {
    let mut w = Vec::new();
    let name = |i: usize| {
        format!(
            "{} ({})",
            run.label(i),
            run.captures.get(i).map_or("", |s| s.as_str())
        )
    };
    for o in &run.offsets {
        match &o.estimate {
            Ok(e) if o.x == 0 && !run.offset_auto => {
                let given = if args.offset_ns != 0 {
                    args.offset_ns
                } else {
                    0
                };
                if e.offset_ns.abs_diff(given) > e.half_width_ns.unsigned_abs() {
                    w.push(format!(
                        "the clock of {} reads {} against {}'s (± {}), outside the bound of the offset in use ({}): latencies are off by about that much; --offset auto corrects them",
                        name(o.y),
                        stats::human_ns(e.offset_ns),
                        run.label(o.x),
                        stats::human_ns(e.half_width_ns),
                        stats::human_ns(given)
                    ));
                }
            }
            Err(EstimateError::OneDirection { .. }) if o.x == 0 => w.push(format!(
                "no clock offset between {} and {}: {}; latencies assume the clocks agree",
                name(o.x),
                name(o.y),
                o.estimate
                    .as_ref()
                    .err()
                    .map_or(String::new(), |e| e.to_string())
            )),
            Err(e @ EstimateError::Inconsistent { .. }) => w.push(format!(
                "no clock offset between {} and {}: {e}",
                name(o.x),
                name(o.y)
            )),
            _ => {}
        }
    }
    if run.negative_latencies > 0 {
        w.push(format!(
            "{} latencies are negative: the clocks of the captures differ{}",
            run.negative_latencies,
            if run.offset_auto {
                " by more than the estimate's bound (see the clock offset lines)"
            } else {
                "; --offset auto corrects by the offset estimated from the traffic"
            }
        ));
    }
    if !run.hosts_from_clock.is_empty() {
        w.push(format!(
            "the order of events could not place these participants (one-way traffic, or groups of participants whose samples never mix), so their hosts were taken from the clocks (the capture that saw them first): {}",
            run.hosts_from_clock.join(", ")
        ));
    }
    w
}

pub fn run(args: &LatencyArgs) -> Result<()> {
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut open = true;
    let mut line = String::with_capacity(512);
    let rows_wanted = !(args.summary && args.format == LatencyFormat::Text);
    // The header goes out with the first row (or after the run): inputs that cannot give
    // latencies are refused before anything is written.
    let mut header_due = rows_wanted;
    let header = |out: &mut BufWriter<_>, due: &mut bool| -> Result<bool> {
        if !std::mem::take(due) {
            return Ok(true);
        }
        let mut h = String::new();
        latency_out::header(args.format, args.level, &mut h);
        Ok(crate::output::write_or_stop(out, h.as_bytes())?)
    };
    let mut rows = 0u64;
    let paths: Vec<&Path> = std::iter::once(args.sender.as_path())
        .chain(args.receivers.iter().map(|p| p.as_path()))
        .collect();
    let labels = capture_labels(&paths);
    let run = join_captures(args, |r| {
        if !open || !rows_wanted {
            return Ok(());
        }
        open = header(&mut out, &mut header_due)?;
        line.clear();
        if args.format == LatencyFormat::Json && rows > 0 {
            line.push(',');
        }
        rows = rows.saturating_add(1);
        latency_out::row(args.format, args.level, r, &labels, &mut line);
        open = open && crate::output::write_or_stop(&mut out, line.as_bytes())?;
        Ok(())
    })?;
    if open {
        open = header(&mut out, &mut header_due)?;
    }
    if open {
        let mut tail = String::new();
        latency_out::trailer(args.format, &run, &mut tail);
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
    for w in clock_warnings(args, &run) {
        eprintln!("ddshark: warning: {w}");
    }
    if let Some(path) = &args.html {
        let page = latency_html::report(&run);
        crate::atomic_file::write(path, page)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if !args.quiet {
        let mut s = String::new();
        if args.format != LatencyFormat::Text {
            latency_out::summary_text(&run, &mut s, false);
        }
        latency_out::stats_text(&run, &mut s);
        eprint!("{s}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_window_default_is_the_span_schemas() {
        assert_eq!(
            super::positive_span_ns(super::DEFAULT_WINDOW),
            Ok(span_schema::SAMPLE_WINDOW_NS)
        );
    }
}
