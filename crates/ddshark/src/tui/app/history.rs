//! What the UI keeps from snapshot to snapshot: each topic's sparkline history and the
//! Health view's counter rates.

use std::collections::{HashSet, VecDeque};

use super::UiState;
use crate::state::Snapshot;

/// Points kept per topic for the sparklines (one per snapshot).
const HISTORY: usize = 240;
/// Capture time the Health rates are measured over (at least).
pub(super) const RATE_SPAN_NS: u64 = 2_000_000_000;
/// Topics whose history is kept.
const MAX_HISTORY_TOPICS: usize = 4096;

/// Per-snapshot history of one topic.
#[derive(Debug, Clone, Default)]
pub(crate) struct TopicHistory {
    /// Sliding-window rate, milli-Hz.
    pub(crate) rate_mhz: VecDeque<u64>,
    /// Sliding-window bandwidth, bits/s.
    pub(crate) bps: VecDeque<u64>,
}

/// Counter rates between the last two snapshots (capture time).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct HealthRates {
    pub(crate) frames_s: f64,
    pub(crate) datagrams_s: f64,
    pub(crate) submessages_s: f64,
    pub(crate) samples_s: f64,
    /// Capture-time span the rates cover.
    pub(crate) over_s: f64,
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Mark {
    ts_ns: u64,
    frames: u64,
    datagrams: u64,
    submessages: u64,
    samples: u64,
}

impl UiState {
    /// Take in a new snapshot: sparkline history and counter rates.
    pub fn ingest(&mut self, s: &Snapshot) {
        for t in &s.topics {
            if !self.history.contains_key(&t.name) && self.history.len() >= MAX_HISTORY_TOPICS {
                continue;
            }
            let h = self.history.entry(t.name.clone()).or_default();
            push_capped(
                &mut h.rate_mhz,
                (t.rate.hz.unwrap_or(0.0) * 1000.0).max(0.0) as u64,
            );
            push_capped(
                &mut h.bps,
                t.rate.bandwidth_bps.unwrap_or(0.0).max(0.0) as u64,
            );
        }
        if self.history.len() > s.topics.len() {
            let names: HashSet<&str> = s.topics.iter().map(|t| t.name.as_str()).collect();
            self.history.retain(|k, _| names.contains(k.as_str()));
        }
        let d = &s.health.dissector;
        let mark = Mark {
            ts_ns: s.summary.capture_time_ns,
            frames: d.frames,
            datagrams: d.rtps_datagrams,
            submessages: d.submessages,
            samples: s.summary.totals.samples,
        };
        if self
            .marks
            .back()
            .is_some_and(|m| m.ts_ns >= mark.ts_ns && m.frames == mark.frames)
        {
            return; // Same capture time and counters (e.g. the final snapshot).
        }
        self.marks.push_back(mark);
        // Keep the newest mark at least RATE_SPAN_NS older than this one.
        while self.marks.len() > 2
            && self
                .marks
                .get(1)
                .is_some_and(|m| mark.ts_ns.saturating_sub(m.ts_ns) >= RATE_SPAN_NS)
        {
            self.marks.pop_front();
        }
        if let Some(prev) = self.marks.front().copied() {
            let dt = mark.ts_ns.saturating_sub(prev.ts_ns) as f64 / 1e9;
            if dt > 0.0 {
                let r = |a: u64, b: u64| a.saturating_sub(b) as f64 / dt;
                self.rates = HealthRates {
                    frames_s: r(mark.frames, prev.frames),
                    datagrams_s: r(mark.datagrams, prev.datagrams),
                    submessages_s: r(mark.submessages, prev.submessages),
                    samples_s: r(mark.samples, prev.samples),
                    over_s: dt,
                };
            }
        }
    }
}

fn push_capped(q: &mut VecDeque<u64>, v: u64) {
    if q.len() >= HISTORY {
        q.pop_front();
    }
    q.push_back(v);
}
