//! Text, TSV and JSON-lines forms of latency rows and statistics; the JSON ones are
//! `contract::latency`'s types.

use std::fmt::Write as _;

use serde::Serialize;

use crate::latency::clocks::{self, Correction};
use crate::latency::join::SampleRow;
use crate::latency::stats::{histogram, human_ns, topic_label};
use crate::latency::{LatencyFormat, Level, RunSummary};
use crate::output::contract::latency as contract;
use crate::units::timestamp;

pub(crate) const TSV_COLUMNS: &[&str] = &[
    "direction",
    "writer_guid",
    "topic",
    "sn",
    "frag_start",
    "status",
    "t_send_ns",
    "t_recv_ns",
    "latency_ns",
    "t_recv_first_ns",
    "tx_sender",
    "repairs_sender",
    "rx_receiver",
    "repaired",
    "sample_size",
    "n_frags",
    "frame_send",
    "frame_recv",
    "src",
    "dst",
    "pcp",
    "latency_uncertainty_ns",
];

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

pub(crate) fn frag_col(level: Level, r: &SampleRow) -> Option<u32> {
    (level == Level::Submessage && r.fragmented).then_some(r.key.frag_start)
}

/// Width of the text rows' latency column: wider when latencies carry their ± (an estimate
/// corrected them).
fn latency_width(corrected: bool) -> usize {
    if corrected {
        22
    } else {
        12
    }
}

/// What the output says first: for text, what was done to each capture's clock (any offset
/// applied, or why `--offset auto` left the latencies raw), then the column header.
pub(crate) fn header(
    format: LatencyFormat,
    level: Level,
    labels: &[String],
    corrections: &[Correction],
    out: &mut String,
) {
    match format {
        LatencyFormat::Tsv => {
            out.push_str(&TSV_COLUMNS.join("\t"));
            out.push('\n');
        }
        LatencyFormat::Text => {
            let frag = if level == Level::Submessage {
                " frag "
            } else {
                ""
            };
            let label = |k: usize| {
                labels
                    .get(k)
                    .cloned()
                    .unwrap_or_else(|| crate::latency::label(k))
            };
            for (k, c) in corrections.iter().enumerate().skip(1) {
                if let Some(line) = clocks::describe(&label(0), &label(k), c) {
                    let _ = writeln!(out, "{line}");
                }
            }
            let corrected = corrections
                .iter()
                .any(|c| matches!(c, Correction::Estimated(_)));
            let _ = writeln!(
                out,
                "{:<5} {:<32} {:>7}{frag} {:<10} {:<20} {:>w$} {:>6} topic",
                "dir",
                "writer",
                "sn",
                "status",
                "t_send",
                "latency",
                "tx/rep",
                w = latency_width(corrected)
            );
        }
        LatencyFormat::Json => out.push_str("{\"samples\":[\n"),
        LatencyFormat::Jsonl => {}
    }
}

pub(crate) fn row(
    format: LatencyFormat,
    level: Level,
    r: &SampleRow,
    labels: &[String],
    out: &mut String,
) {
    match format {
        LatencyFormat::Tsv => {
            let cols = [
                crate::latency::direction_in(labels, r.sender, r.receiver),
                r.key.writer.to_string(),
                opt(topic_name(r)).replace(['\t', '\n'], " "),
                r.key.sn.to_string(),
                opt(frag_col(level, r)),
                r.status.name().to_string(),
                r.t_send.to_string(),
                opt(r.t_recv),
                opt(r.latency_ns),
                opt(r.t_recv_first),
                r.tx_sender.to_string(),
                r.repairs_sender.to_string(),
                r.rx_receiver.to_string(),
                u8::from(r.repaired).to_string(),
                r.sample_size.to_string(),
                r.units.to_string(),
                r.frame_send.to_string(),
                opt(r.frame_recv),
                opt(r.src),
                opt(r.dst),
                opt(r.pcp),
                opt(r.latency_uncertainty_ns),
            ];
            out.push_str(&cols.join("\t"));
            out.push('\n');
        }
        LatencyFormat::Json | LatencyFormat::Jsonl => {
            let j = contract::Sample::of(level, r, labels);
            if let Ok(s) = serde_json::to_string(&j) {
                out.push_str(&s);
                out.push('\n');
            }
        }
        LatencyFormat::Text => {
            let frag = match frag_col(level, r) {
                Some(f) => format!(" {f:>5}"),
                None if level == Level::Submessage => "      ".to_string(),
                None => String::new(),
            };
            let lat = match (r.latency_ns, r.latency_uncertainty_ns) {
                (Some(l), Some(u)) => format!("{} ±{}", human_ns(l), human_ns(u)),
                (Some(l), None) => human_ns(l),
                (None, _) => "-".into(),
            };
            let rep = if r.repaired { " repaired" } else { "" };
            let _ = writeln!(
                out,
                "{:<5} {:<32} {:>7}{frag} {:<10} {:<20} {:>w$} {:>3}/{:<2} {}{rep}",
                crate::latency::direction_in(labels, r.sender, r.receiver),
                r.key.writer.to_string(),
                r.key.sn,
                r.status.name(),
                timestamp(r.t_send),
                lat,
                r.tx_sender,
                r.repairs_sender,
                topic_label(r),
                w = latency_width(r.latency_uncertainty_ns.is_some()),
            );
        }
    }
}

/// The clock offset of every pair, for people.
pub fn offsets_text(run: &RunSummary, out: &mut String) {
    for o in &run.offsets {
        let (x, y) = (run.label(o.x), run.label(o.y));
        match &o.estimate {
            Ok(e) => {
                let drift = if e.drifting {
                    format!(
                        " at {}, drifting {:+.1} ppm",
                        timestamp(e.t_ref),
                        e.drift_ppb as f64 / 1000.0
                    )
                } else {
                    String::new()
                };
                let applied = match run.corrections.get(o.y) {
                    Some(Correction::Estimated(_)) if o.x == 0 => {
                        format!(
                            "; corrected (--offset auto): latencies ± {}",
                            human_ns(e.half_width_ns)
                        )
                    }
                    Some(Correction::KeptRaw(e)) if o.x == 0 => {
                        format!(
                            "; not corrected (--offset auto): {}",
                            clocks::kept_raw_reason(e)
                        )
                    }
                    Some(Correction::Given(ns)) if o.x == 0 => {
                        format!(
                            "; {y}'s timestamps moved by {} (--offset-ns {ns})",
                            human_ns(ns.saturating_neg())
                        )
                    }
                    _ => String::new(),
                };
                let _ = writeln!(
                    out,
                    "clock offset {y}-{x}: {} ± {}{drift} (min {x}->{y} {}, min {y}->{x} {}; {} {x}->{y} and {} {y}->{x} samples, {} builtin){applied}",
                    human_ns(e.offset_ns),
                    human_ns(e.half_width_ns),
                    human_ns(e.min_x_to_y_ns),
                    human_ns(e.min_y_to_x_ns),
                    e.counts.x_to_y,
                    e.counts.y_to_x,
                    e.counts.builtin,
                );
            }
            Err(why) => {
                let given = match run.corrections.get(o.y) {
                    Some(Correction::Given(ns)) if o.x == 0 => {
                        format!(
                            "; {y}'s timestamps moved by {} (--offset-ns {ns})",
                            human_ns(ns.saturating_neg())
                        )
                    }
                    _ => String::new(),
                };
                let _ = writeln!(out, "clock offset {y}-{x}: none: {why}{given}");
            }
        }
    }
    for (k, c) in run.coarse.iter().enumerate() {
        if let Some(c) = c {
            let _ = writeln!(
                out,
                "  ({} and {} were paired after moving {}'s timestamps by {}: the median difference over {} samples both saw{})",
                run.label(0),
                run.label(k),
                run.label(k),
                human_ns(c.offset_ns.saturating_neg()),
                c.samples,
                if c.sampled_one_in > 1 {
                    format!(", 1 in {} looked at", c.sampled_one_in)
                } else {
                    String::new()
                }
            );
        }
    }
    if run.offsets.iter().any(|o| o.estimate.is_ok()) {
        let _ = writeln!(
            out,
            "  (the true offset lies within ± of the estimate; where within it depends on the path's asymmetry, which traffic cannot show)"
        );
    }
}

/// A row's topic as TSV and JSON give it: discovered, or the built-in topic its writer's
/// entity id names (DCPSParticipant, …, as the text table names it); `None` unknown.
pub(crate) fn topic_name(r: &SampleRow) -> Option<&str> {
    r.topic
        .as_deref()
        .or_else(|| r.key.writer.entity.builtin_topic_name())
}

/// Per-topic statistics table (and histograms) for people.
pub(crate) fn summary_text(run: &RunSummary, out: &mut String, histograms: bool) {
    let _ = writeln!(out);
    for (i, c) in run.captures.iter().enumerate() {
        let _ = writeln!(out, "capture {} = {c}", run.label(i));
    }
    offsets_text(run, out);
    let level = match run.level {
        Some(Level::Submessage) => "submessage (per DATA_FRAG)",
        _ => "sample (DDS layer)",
    };
    let _ = writeln!(
        out,
        "latency per {level}: first IP fragment at the sender -> last IP fragment at the receiver"
    );
    let _ = writeln!(
        out,
        "{:<6} {:<48} {:>7} {:>5} {:>5} {:>5} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "dir", "topic", "count", "lost", "incpl", "rep", "min", "p50", "p90", "p99", "max"
    );
    for (k, g) in &run.summary.groups {
        let t = run.topic_stats(k, g);
        let f = |v: Option<i64>| v.map(human_ns).unwrap_or_else(|| "-".into());
        let pm = t
            .latency_uncertainty_ns
            .map_or(String::new(), |u| format!(" ±{}", human_ns(u)));
        let _ = writeln!(
            out,
            "{:<6} {:<48} {:>7} {:>5} {:>5} {:>5} {:>10} {:>10} {:>10} {:>10} {:>10}{pm}{}",
            t.direction,
            t.topic,
            t.count,
            t.lost,
            t.incomplete,
            t.repaired,
            f(t.min_ns),
            f(t.p50_ns),
            f(t.p90_ns),
            f(t.p99_ns),
            f(t.max_ns),
            if t.exact { "" } else { " (sampled)" }
        );
    }
    if !histograms {
        return;
    }
    for (k, g) in &run.summary.groups {
        let sorted = g.sorted();
        let bins = histogram(&sorted);
        if bins.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "\nhistogram {} {} ({} samples)",
            run.direction(k.sender, k.receiver),
            k.topic,
            sorted.len()
        );
        let peak = bins.iter().map(|b| b.2).max().unwrap_or(1).max(1);
        for (lo, hi, n) in bins {
            let w = ((n as f64 / peak as f64) * 50.0).ceil() as usize;
            let _ = writeln!(
                out,
                "  {:>10} .. {:<10} {:>7} {}",
                human_ns(lo),
                human_ns(hi),
                n,
                "#".repeat(if n > 0 { w.max(1) } else { 0 })
            );
        }
    }
}

/// Counters of the run (join bounds, evictions, what was skipped).
pub(crate) fn stats_text(run: &RunSummary, out: &mut String) {
    let j = &run.join;
    let _ = writeln!(
        out,
        "ddshark latency: {} observations, {} keys; join peak {} samples / {} bytes; evicted early (capacity) {}; receiver-only {}; sender-only not expected at the receiver {}",
        j.observations, j.keys, j.pending_peak, j.bytes_peak, j.evicted_capacity, j.receiver_only, j.not_expected
    );
    if j.writers_not_remembered > 0 {
        let _ = writeln!(
            out,
            "  {} observations of writers beyond the receivers table (their samples are never called lost)",
            j.writers_not_remembered
        );
    }
    for (i, e) in run.extract.iter().enumerate() {
        let _ = writeln!(
            out,
            "  {}: {} DATA, {} DATA_FRAG; skipped {} unusable DATA_FRAG, {} samples with too many fragments, {} truncated datagrams",
            run.label(i),
            e.data_submessages,
            e.data_frag_submessages,
            e.unusable_data_frag,
            e.too_many_fragments,
            e.truncated_datagrams
        );
    }
    if run.summary.groups_overflow > 0 {
        let _ = writeln!(
            out,
            "  {} rows grouped as \"(other topics)\" (too many topics)",
            run.summary.groups_overflow
        );
    }
}

/// `items` as JSON, `sep` between them.
fn json_items<T: Serialize>(items: impl Iterator<Item = T>, sep: &str, out: &mut String) {
    let mut first = true;
    for item in items {
        if let Ok(s) = serde_json::to_string(&item) {
            if !first {
                out.push_str(sep);
            }
            first = false;
            out.push_str(&s);
        }
    }
}

pub(crate) fn trailer(format: LatencyFormat, run: &RunSummary, out: &mut String) {
    let offsets = || run.offsets.iter().map(|o| contract::Offset::of(run, o));
    let topics = || {
        run.summary
            .groups
            .iter()
            .map(|(k, g)| contract::Topic::from(run.topic_stats(k, g)))
    };
    let stats = contract::Stats::of(run);
    match format {
        LatencyFormat::Text => {
            summary_text(run, out, true);
            out.push('\n');
        }
        LatencyFormat::Tsv => {}
        LatencyFormat::Json => {
            out.push_str("],\n\"offsets\":[");
            json_items(offsets(), ",\n", out);
            out.push_str("],\n\"topics\":[");
            json_items(topics(), ",\n", out);
            out.push_str("],\n\"stats\":");
            json_items(std::iter::once(&stats), "", out);
            out.push_str("}\n");
        }
        LatencyFormat::Jsonl => {
            json_items(offsets(), "\n", out);
            if !run.offsets.is_empty() {
                out.push('\n');
            }
            json_items(topics(), "\n", out);
            if !run.summary.groups.is_empty() {
                out.push('\n');
            }
            json_items(std::iter::once(&stats), "", out);
            out.push('\n');
        }
    }
}
