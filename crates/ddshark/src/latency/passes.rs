//! The two passes over the captures: the first gathers the evidence for the writers' hosts
//! and the clock offsets, the second joins with the hosts decided and the clocks moved as
//! asked.

use std::path::Path;

use anyhow::{bail, Result};
use latency_core::{EstimateError, HostRule, HostRuleConfig, Hosts, LostRule, OffsetConfig};
use rtps_dissect::Dissector;

use super::args::{LatencyArgs, OffsetMode};
use super::extract::ExtractStats;
use super::input::{check_distinct, seed_topics, Input, Shift};
use super::join::{Join, JoinConfig, JoinStats, SampleRow};
use super::run_summary::{capture_labels, PairOffset, RunSummary};
use super::stats::Summary;
use crate::capture::file::FileSource;

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
    // First pass: the receivers moved by --offset-ns only (0 unless given: each capture on
    // its own clock); the evidence for hosts and offsets. Samples are paired within the
    // join's window, so clocks further apart than it need that hint to be paired at all.
    let hint = |capture: usize| if capture == 0 { 0 } else { args.offset_ns };
    let raw: Vec<Shift> = (0..paths.len()).map(|k| Shift::Constant(hint(k))).collect();
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
                    "{} ({}) and {} ({}) do not overlap in time and share no sample: no latency to measure \
                     (if their clocks are that far apart, give the receiver's clock minus the sender's with --offset-ns)",
                    paths.first().map_or(String::new(), |p| p.display().to_string()),
                    span_text(ra),
                    p.display(),
                    span_text(rb),
                );
            }
            bail!(
                "{} and {} share no DDS sample (no writer GUID and SN seen in both within --window): not the same DDS traffic, \
                 filtered apart, or clocks further apart than --window (give the receiver's clock minus the sender's with --offset-ns)",
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
