//! The passes over the captures: the first gathers the evidence for the writers' hosts and
//! the clock offsets ([`super::plan`] decides from it), the second joins with the hosts
//! decided and the clocks moved as planned.

use std::path::{Path, PathBuf};

use anyhow::Result;
use latency_core::{HostRule, HostRuleConfig, Hosts, LostRule};
use rtps_dissect::Dissector;

use super::args::LatencyArgs;
use super::clocks::latency_uncertainty;
use super::coarse::KeySketch;
use super::extract::ExtractStats;
use super::input::{seed_topics, Input, Shift};
use super::join::{Join, JoinConfig, JoinStats, SampleRow};
use super::plan::{plan, Plan};
use super::run_summary::RunSummary;
use super::stats::Summary;
use crate::capture::file::FileSource;

/// One pass over the captures through the join; `sink` gets every finalised row.
pub(super) struct Pass {
    pub(super) join: JoinStats,
    pub(super) extract: Vec<ExtractStats>,
    pub(super) truncated: Vec<String>,
    /// Per capture: its first and last frame time (on the first capture's clock).
    pub(super) ranges: Vec<Option<(i64, i64)>>,
    pub(super) rule: Option<HostRule>,
    /// Per capture: a bounded sample of its keys (the first pass only).
    pub(super) sketches: Vec<KeySketch>,
}

pub(super) fn pass(
    args: &LatencyArgs,
    discovery: &[PathBuf],
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
    seed_topics(discovery, &mut inputs)?;
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
    let evidence_pass = hosts.is_none();
    match hosts {
        Some(h) => join.set_hosts(h),
        None => join.collect_evidence(HostRule::new(HostRuleConfig::new(inputs.len()))),
    }
    let mut sketches: Vec<KeySketch> = Vec::new();
    if evidence_pass {
        sketches.resize_with(inputs.len(), KeySketch::default);
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
            if let Some(sk) = sketches.get_mut(i) {
                sk.saw(&o.key.writer, o.key.sn, o.ts_first);
            }
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
        sketches,
    })
}

/// Join the captures; `sink` gets every finalised row (in finalisation order).
pub fn join_captures(
    args: &LatencyArgs,
    sink: impl FnMut(&SampleRow) -> Result<()>,
) -> Result<RunSummary> {
    plan(args)?.join(args, sink)
}

impl Plan {
    /// The joining pass: rows with the decided hosts and the clocks moved as planned.
    pub fn join(
        self,
        args: &LatencyArgs,
        mut sink: impl FnMut(&SampleRow) -> Result<()>,
    ) -> Result<RunSummary> {
        let paths: Vec<&Path> = self.paths.iter().map(|p| p.as_path()).collect();
        let shifts: Vec<Shift> = self.corrections.iter().map(|c| c.shift()).collect();
        let mut summary = Summary::default();
        let mut negative = 0u64;
        let corrections = &self.corrections;
        let second = pass(
            args,
            &self.discovery,
            &paths,
            &shifts,
            Some(self.hosts),
            |rows| {
                for mut r in rows {
                    if args.user_only && r.key.writer.entity.is_builtin() {
                        continue;
                    }
                    if r.latency_ns.is_some_and(|l| l < 0) {
                        negative += 1;
                    }
                    if r.latency_ns.is_some() {
                        r.latency_uncertainty_ns =
                            latency_uncertainty(corrections, r.sender, r.receiver);
                    }
                    summary.add(&r);
                    sink(&r)?;
                }
                Ok(())
            },
        )?;
        Ok(RunSummary {
            captures: self.names,
            labels: self.labels,
            offsets: self.offsets,
            hosts_from_clock: self.hosts_from_clock,
            corrections: self.corrections,
            coarse: self.coarse,
            negative_latencies: negative,
            summary,
            join: second.join,
            extract: second.extract,
            truncated: second.truncated,
            level: Some(args.level),
        })
    }
}
