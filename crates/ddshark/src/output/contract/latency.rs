//! `ddshark latency`'s JSON document (`{"samples", "offsets", "topics", "stats"}`, streamed
//! piece by piece by `output::latency`) and its JSON lines (samples, then offsets, topics and
//! stats, each with its `kind`). Schemas: `schemas/latency.schema.json`,
//! `schemas/latency-line.schema.json`.

use serde::Serialize;

use super::{counters, kind};
use crate::latency::clocks::{self, Correction};
use crate::latency::extract::ExtractStats;
use crate::latency::join::{JoinStats, SampleRow, Status as StatusView};
use crate::latency::stats::TopicStats;
use crate::latency::{Level, PairOffset, RunSummary};
use crate::output::latency::{frag_col, topic_name};

/// The whole JSON document, as its parts are streamed (only its schema is made, so nothing
/// builds one).
#[cfg(test)]
#[allow(dead_code)]
#[derive(Serialize, schemars::JsonSchema)]
pub(super) struct Document {
    samples: Vec<Sample>,
    offsets: Vec<Offset>,
    topics: Vec<Topic>,
    stats: Stats,
}

/// Any JSON line, told apart by `kind` (only its schema is made).
#[cfg(test)]
#[allow(dead_code)]
#[derive(Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub(super) enum Line {
    Sample(Sample),
    Offset(Offset),
    Topic(Topic),
    Stats(Stats),
}

kind!(SampleKind = "sample");
kind!(OffsetKind = "clock_offset");
kind!(TopicKind = "topic");
kind!(StatsKind = "stats");

#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Complete at the receiver: has a latency.
    Ok,
    /// Some but not all of its fragments reached the receiver.
    Incomplete,
    /// Sent towards the receiver, never seen there.
    Lost,
}

/// One sample (or, at `--level submessage`, DATA_FRAG) from its writer's capture to one other.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Sample {
    pub kind: SampleKind,
    /// "A->B": from the writer's capture to the receiving one.
    pub direction: String,
    pub writer_guid: String,
    pub topic: Option<String>,
    pub builtin: bool,
    pub sn: i64,
    /// The DATA_FRAG's first fragment number (`--level submessage`, fragmented samples).
    pub frag_start: Option<u32>,
    pub status: Status,
    pub t_send_ns: i64,
    pub t_recv_ns: Option<i64>,
    pub latency_ns: Option<i64>,
    /// The true latency lies within ± this of `latency_ns` (an estimate corrected it).
    pub latency_uncertainty_ns: Option<i64>,
    pub t_recv_first_ns: Option<i64>,
    pub tx_sender: u32,
    pub repairs_sender: u32,
    pub rx_receiver: u32,
    pub repaired: bool,
    pub sample_size: u64,
    pub n_frags: u32,
    pub frame_send: u64,
    pub frame_recv: Option<u64>,
    pub src: Option<String>,
    pub dst: Option<String>,
    pub pcp: Option<u8>,
}

impl Sample {
    pub(crate) fn of(level: Level, r: &SampleRow, labels: &[String]) -> Self {
        Self {
            kind: SampleKind::Only,
            direction: crate::latency::direction_in(labels, r.sender, r.receiver),
            writer_guid: r.key.writer.to_string(),
            topic: topic_name(r).map(String::from),
            builtin: r.key.writer.entity.is_builtin(),
            sn: r.key.sn,
            frag_start: frag_col(level, r),
            status: match r.status {
                StatusView::Ok => Status::Ok,
                StatusView::Incomplete => Status::Incomplete,
                StatusView::Lost => Status::Lost,
            },
            t_send_ns: r.t_send,
            t_recv_ns: r.t_recv,
            latency_ns: r.latency_ns,
            latency_uncertainty_ns: r.latency_uncertainty_ns,
            t_recv_first_ns: r.t_recv_first,
            tx_sender: r.tx_sender,
            repairs_sender: r.repairs_sender,
            rx_receiver: r.rx_receiver,
            repaired: r.repaired,
            sample_size: r.sample_size,
            n_frags: r.units,
            frame_send: r.frame_send,
            frame_recv: r.frame_recv,
            src: r.src.map(|s| s.to_string()),
            dst: r.dst.map(|s| s.to_string()),
            pcp: r.pcp,
        }
    }
}

/// How a receiver's clock was moved onto the first capture's.
#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub enum AppliedBy {
    /// `--offset auto`: the estimate.
    #[serde(rename = "auto")]
    Auto,
    /// `--offset-ns`: the given offset.
    #[serde(rename = "offset-ns")]
    OffsetNs,
}

/// The clock offset between two captures.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Offset {
    pub kind: OffsetKind,
    /// "B-A": B's clock minus A's.
    pub pair: String,
    pub offset_ns: Option<i64>,
    pub half_width_ns: Option<i64>,
    /// Capture time (on the first capture's clock) `offset_ns` refers to.
    pub t_ref_ns: Option<i64>,
    pub drift_ppb: Option<i64>,
    pub min_forward_ns: Option<i64>,
    pub min_backward_ns: Option<i64>,
    pub samples_forward: u64,
    pub samples_backward: u64,
    pub samples_builtin: u64,
    pub outliers: u32,
    /// The receiver's timestamps were moved (by `applied_offset_ns`).
    pub applied: bool,
    /// What was subtracted from the receiver's timestamps (at `t_ref_ns` when drifting).
    pub applied_offset_ns: Option<i64>,
    pub applied_by: Option<AppliedBy>,
    /// Why `--offset auto` left the latencies raw.
    pub not_applied: Option<String>,
    /// Why there is no estimate.
    pub error: Option<String>,
}

impl Offset {
    pub(crate) fn of(run: &RunSummary, o: &PairOffset) -> Self {
        let e = o.estimate.as_ref().ok();
        let counts = e.map(|e| e.counts).unwrap_or_default();
        // Only the receivers' clocks are moved, each onto the first capture's.
        let correction = run.corrections.get(o.y).filter(|_| o.x == 0);
        let applied = correction.and_then(|c| c.applied_ns());
        Self {
            kind: OffsetKind::Only,
            pair: format!("{}-{}", run.label(o.y), run.label(o.x)),
            offset_ns: e.map(|e| e.offset_ns),
            half_width_ns: e.map(|e| e.half_width_ns),
            t_ref_ns: e.map(|e| e.t_ref),
            drift_ppb: e.map(|e| e.drift_ppb),
            min_forward_ns: e.map(|e| e.min_x_to_y_ns),
            min_backward_ns: e.map(|e| e.min_y_to_x_ns),
            samples_forward: counts.x_to_y,
            samples_backward: counts.y_to_x,
            samples_builtin: counts.builtin,
            outliers: e.map_or(0, |e| e.outliers),
            applied: applied.is_some(),
            applied_offset_ns: applied,
            applied_by: match correction {
                Some(Correction::Estimated(_)) => Some(AppliedBy::Auto),
                Some(Correction::Given(_)) => Some(AppliedBy::OffsetNs),
                _ => None,
            },
            not_applied: match correction {
                Some(Correction::KeptRaw(e)) => Some(clocks::kept_raw_reason(e)),
                _ => None,
            },
            error: o.estimate.as_ref().err().map(|w| w.to_string()),
        }
    }
}

/// Latency statistics of one direction and topic.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Topic {
    pub kind: TopicKind,
    pub direction: String,
    pub topic: String,
    /// Samples with a latency (status ok).
    pub count: u64,
    pub lost: u64,
    pub incomplete: u64,
    pub repaired: u64,
    pub min_ns: Option<i64>,
    pub p50_ns: Option<i64>,
    pub p90_ns: Option<i64>,
    pub p99_ns: Option<i64>,
    pub max_ns: Option<i64>,
    pub mean_ns: Option<i64>,
    /// Each latency lies within ± this of the truth (an estimate corrected them).
    pub latency_uncertainty_ns: Option<i64>,
    /// Percentiles are exact (false: over a reservoir sample).
    pub exact: bool,
}

impl From<TopicStats> for Topic {
    fn from(t: TopicStats) -> Self {
        Self {
            kind: TopicKind::Only,
            direction: t.direction,
            topic: t.topic,
            count: t.count,
            lost: t.lost,
            incomplete: t.incomplete,
            repaired: t.repaired,
            min_ns: t.min_ns,
            p50_ns: t.p50_ns,
            p90_ns: t.p90_ns,
            p99_ns: t.p99_ns,
            max_ns: t.max_ns,
            mean_ns: t.mean_ns,
            latency_uncertainty_ns: t.latency_uncertainty_ns,
            exact: t.exact,
        }
    }
}

counters! {
    /// The join's bounds and what it could not pair.
    Join from JoinStats {
        observations, keys, pending, pending_peak, bytes_held, bytes_peak, finalised,
        evicted_capacity, receiver_only, not_expected, writers_not_remembered,
    }
}

counters! {
    /// What one capture gave the join, and what it skipped.
    Extract from ExtractStats {
        data_submessages, data_frag_submessages, unusable_data_frag, too_many_fragments,
        truncated_datagrams,
    }
}

/// The run's counters.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Stats {
    pub kind: StatsKind,
    pub captures: Vec<String>,
    pub join: Join,
    /// Per capture, in the order of `captures`.
    pub extract: Vec<Extract>,
}

impl Stats {
    pub(crate) fn of(run: &RunSummary) -> Self {
        Self {
            kind: StatsKind::Only,
            captures: run.captures.clone(),
            join: (&run.join).into(),
            extract: run.extract.iter().map(Extract::from).collect(),
        }
    }
}
