//! What a run produced (the rows aside): the captures and their names in the output, the
//! clock offsets, the statistics, and the warnings about the clocks they call for.

use std::path::Path;

use latency_core::{EstimateError, OffsetEstimate};

use super::args::LatencyArgs;
use super::extract::ExtractStats;
use super::join::JoinStats;
use super::stats::{self, Summary};
use super::Level;
use crate::capture::file::FileSource;

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
    /// Per capture, what was done to its clock (the first capture's: nothing).
    pub corrections: Vec<super::Correction>,
    /// Per capture, the coarse alignment it was paired with (clocks too far apart for the
    /// window).
    pub coarse: Vec<Option<super::CoarseOffset>>,
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

    /// Capture `k`'s clock was corrected by an estimate (`--offset auto`).
    pub(crate) fn corrected(&self, k: usize) -> bool {
        matches!(
            self.corrections.get(k),
            Some(super::Correction::Estimated(_))
        )
    }

    /// A group's statistics, with the uncertainty its latencies carry.
    pub(crate) fn topic_stats(&self, k: &stats::GroupKey, g: &stats::Group) -> stats::TopicStats {
        stats::TopicStats {
            latency_uncertainty_ns: super::clocks::latency_uncertainty(
                &self.corrections,
                k.sender,
                k.receiver,
            ),
            ..stats::TopicStats::of(self.direction(k.sender, k.receiver), k, g)
        }
    }
}

/// The estimate for one pair of captures.
#[derive(Debug, Clone)]
pub struct PairOffset {
    pub x: usize,
    pub y: usize,
    pub estimate: Result<OffsetEstimate, EstimateError>,
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
            Ok(e) if o.x == 0 && !run.corrected(o.y) => {
                let given = args.offset_ns;
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
            if run
                .corrections
                .iter()
                .any(|c| matches!(c, super::Correction::Estimated(_)))
            {
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
