//! Between the two passes: the evidence pass (again with the receivers moved by the coarse
//! alignment when their clocks are too far apart to pair samples), the writers' hosts, the
//! clock offsets, and what is done to each receiver's clock; or a message saying why the
//! captures give no latency.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use latency_core::{EstimateError, HostRule, HostRuleConfig, Hosts, OffsetConfig};

use super::args::LatencyArgs;
use super::clocks::Correction;
use super::coarse::CoarseOffset;
use super::input::{check_distinct, Shift};
use super::passes::{pass, Pass};
use super::run_summary::{capture_labels, PairOffset};
use super::stats::human_ns;
use super::stdin::{is_stdin, spool_stdin, Spool};
use crate::capture::file::FileSource;

/// What the joining pass needs, decided from the evidence pass.
#[derive(Debug)]
pub struct Plan {
    /// The captures to read (standard input's spool in place of `-`).
    pub(super) paths: Vec<PathBuf>,
    /// The captures as given, for the output.
    pub(super) names: Vec<String>,
    pub(super) discovery: Vec<PathBuf>,
    /// Standard input's copy, removed with the plan.
    pub(super) _spool: Option<Spool>,
    /// Per capture, its name in the output.
    pub labels: Vec<String>,
    pub offsets: Vec<PairOffset>,
    pub(super) hosts: Hosts,
    pub(super) hosts_from_clock: Vec<String>,
    /// Per capture, what is done to its clock (the first capture's: nothing).
    pub corrections: Vec<Correction>,
    /// Per capture, the coarse alignment its evidence was gathered with, when its clock was
    /// too far from the first capture's to pair samples within `--window`.
    pub coarse: Vec<Option<CoarseOffset>>,
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

fn shifts_of(hints: &[i64]) -> Vec<Shift> {
    hints.iter().map(|h| Shift::Constant(*h)).collect()
}

/// The evidence pass and the decisions it allows.
pub fn plan(args: &LatencyArgs) -> Result<Plan> {
    if args.window_ns <= 0 {
        bail!("--window must be more than 0");
    }
    let given: Vec<PathBuf> = std::iter::once(args.sender.clone())
        .chain(args.receivers.iter().cloned())
        .collect();
    let names: Vec<String> = given
        .iter()
        .map(|p| {
            if is_stdin(p) {
                "- (standard input)".to_string()
            } else {
                p.display().to_string()
            }
        })
        .collect();
    // Standard input (one capture, or a discovery capture) is read more than once: spooled.
    let mut all: Vec<PathBuf> = given.iter().chain(&args.discovery).cloned().collect();
    let spool = spool_stdin(&mut all)?;
    let discovery = all.split_off(given.len());
    let paths = all;
    let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    // Each capture readable (a message naming it and what is wrong: missing, a directory,
    // empty, not a capture), then no capture twice.
    for p in &refs {
        FileSource::open(p)?;
    }
    check_distinct(&refs)?;
    let labels = capture_labels(&refs);
    let n = paths.len();
    // What the evidence pass subtracts from each capture's timestamps: --offset-ns (0 unless
    // given) for the receivers. Samples are paired only within the join's window.
    let mut hints: Vec<i64> = (0..n)
        .map(|k| if k == 0 { 0 } else { args.offset_ns })
        .collect();
    let evidence_pass =
        |hints: &[i64]| pass(args, &discovery, &refs, &shifts_of(hints), None, |_| Ok(()));
    let mut first = evidence_pass(&hints)?;
    refuse_empty(&refs, &first)?;
    // Without a given offset, a receiver whose clock reads further from the first capture's
    // than half the window is paired again, moved by the coarse alignment (the same samples
    // found at any distance).
    let mut coarse: Vec<Option<CoarseOffset>> = vec![None; n];
    if args.offset_ns == 0 {
        let half_window = args.window_ns.unsigned_abs() / 2;
        for (k, (slot, hint)) in coarse.iter_mut().zip(hints.iter_mut()).enumerate().skip(1) {
            let c = match (first.sketches.first(), first.sketches.get(k)) {
                (Some(a), Some(b)) => a.offset_of(b),
                _ => None,
            };
            if let Some(c) = c.filter(|c| c.offset_ns.unsigned_abs() > half_window) {
                *hint = c.offset_ns;
                *slot = Some(c);
            }
        }
        if coarse.iter().any(Option::is_some) {
            first = evidence_pass(&hints)?;
        }
    }
    let hint = |k: usize| hints.get(k).copied().unwrap_or(0);
    let rule = first
        .rule
        .take()
        .unwrap_or_else(|| HostRule::new(HostRuleConfig::new(n)));
    let hosts = rule.decide();
    let estimators = rule.offsets(&hosts, OffsetConfig::default());
    let offsets: Vec<PairOffset> = estimators
        .iter()
        .map(|(&(x, y), e)| PairOffset {
            x,
            y,
            estimate: e
                .estimate()
                .map(|e| e.moved_by(hint(y).saturating_sub(hint(x)))),
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
    let first_path = refs
        .first()
        .map_or(String::new(), |p| p.display().to_string());
    let mut corrections = Vec::with_capacity(n);
    corrections.push(Correction::None);
    for (k, p) in refs.iter().enumerate().skip(1) {
        let pair = offsets.iter().find(|o| o.x == 0 && o.y == k);
        let shared = pair.is_some_and(|o| o.estimate != Err(EstimateError::NoSharedSample));
        if !shared {
            refuse_unshared(args, &refs, &first, k)?;
        }
        let estimate = pair.and_then(|o| o.estimate.ok());
        let correction = match Correction::asked(args, estimate) {
            Some(c) => c,
            None => bail!(
                "--offset auto: no clock offset between {first_path} and {}: {}",
                p.display(),
                pair.and_then(|o| o.estimate.err())
                    .map_or(String::new(), |e| e.to_string())
            ),
        };
        // Raw latencies are paired on the raw clocks: beyond the window, nothing pairs.
        let too_far = coarse
            .get(k)
            .copied()
            .flatten()
            .filter(|c| c.offset_ns.unsigned_abs() >= args.window_ns.unsigned_abs());
        if let (Correction::None, Some(c)) = (correction, too_far) {
            let estimate = match estimate {
                Some(e) => format!(
                    "the estimate from the traffic is {} ± {}",
                    human_ns(e.offset_ns),
                    human_ns(e.half_width_ns)
                ),
                None => format!(
                    "{} samples both saw differ by {} (median)",
                    c.samples,
                    human_ns(c.offset_ns)
                ),
            };
            bail!(
                "the clocks of {first_path} and {} are about {} apart ({estimate}): samples are paired only within --window ({}), \
                 so raw latencies cannot be measured; give --offset auto to correct by the estimate (or --offset-ns with the receiver's clock minus the sender's, if known)",
                p.display(),
                human_ns(c.offset_ns),
                human_ns(args.window_ns),
            );
        }
        corrections.push(correction);
    }
    Ok(Plan {
        paths,
        names,
        discovery,
        _spool: spool,
        labels,
        offsets,
        hosts,
        hosts_from_clock,
        corrections,
        coarse,
    })
}

/// A capture without a single frame gives no latency: say which, and why if it is known.
fn refuse_empty(paths: &[&Path], first: &Pass) -> Result<()> {
    for (p, r) in paths.iter().zip(&first.ranges) {
        if r.is_none() {
            let name = p.display().to_string();
            let cut = first
                .truncated
                .iter()
                .find(|t| t.starts_with(&name))
                .map_or(String::new(), |t| format!(" ({t})"));
            bail!("{name} holds no frame{cut}: no latency to measure");
        }
    }
    Ok(())
}

/// Captures `0` and `k` paired no sample: the message says what was looked at.
fn refuse_unshared(args: &LatencyArgs, paths: &[&Path], first: &Pass, k: usize) -> Result<()> {
    let a = paths
        .first()
        .map_or(String::new(), |p| p.display().to_string());
    let b = paths
        .get(k)
        .map_or(String::new(), |p| p.display().to_string());
    let (ra, rb) = (
        first.ranges.first().copied().flatten(),
        first.ranges.get(k).copied().flatten(),
    );
    let overlap = matches!((ra, rb), (Some((a0, a1)), Some((b0, b1))) if a0 <= b1 && b0 <= a1);
    let found = match (first.sketches.first(), first.sketches.get(k)) {
        (Some(x), Some(y)) => x.offset_of(y).is_some(),
        _ => false,
    };
    if !found && args.offset_ns == 0 {
        bail!(
            "{a} ({}) and {b} ({}) share no DDS sample at any clock offset (no writer GUID and SN seen in both{}): \
             not captures of the same DDS traffic, or filtered apart; no latency to measure",
            span_text(ra),
            span_text(rb),
            if overlap {
                ""
            } else {
                "; they do not overlap in time either"
            }
        );
    }
    bail!(
        "{a} and {b} share no DDS sample within --window ({}) of each other{}: not the same DDS traffic, filtered apart, \
         or clocks further apart than that (without --offset-ns, ddshark finds clocks any distance apart)",
        human_ns(args.window_ns),
        if args.offset_ns != 0 {
            format!(" with --offset-ns {}", args.offset_ns)
        } else {
            String::new()
        }
    )
}
