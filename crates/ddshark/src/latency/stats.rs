//! Per (direction, topic) statistics: latency_core's totals (exact count, min, max, mean;
//! lost, incomplete, repaired), percentiles over a bounded reservoir (exact while it is not
//! full), a log histogram and a time series for the report.

use std::collections::BTreeMap;

use latency_core::OutcomeTotals;

use super::join::{SampleRow, Status};

/// Latency values kept per group for percentiles and pictures; beyond it, reservoir sampling.
pub(crate) const RESERVOIR: usize = 1_000_000;
/// Most groups (direction × topic); further topics fall into "(other topics)".
pub(crate) const MAX_GROUPS: usize = 4_096;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct GroupKey {
    pub(crate) sender: usize,
    pub(crate) receiver: usize,
    pub(crate) topic: String,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Group {
    pub(crate) totals: OutcomeTotals,
    /// (t_send, latency) samples, exact while `totals.latency.samples <= RESERVOIR`.
    pub(crate) points: Vec<(i64, i64)>,
    /// t_send of lost/incomplete samples (bounded like `points`).
    pub(crate) lost_at: Vec<i64>,
    rng: u64,
}

impl Group {
    fn next_rand(&mut self) -> u64 {
        // xorshift64*, fixed seed: the same input gives the same report.
        if self.rng == 0 {
            self.rng = 0x9E37_79B9_7F4A_7C15;
        }
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn add_point(&mut self, t: i64, lat: i64) {
        if self.points.len() < RESERVOIR {
            self.points.push((t, lat));
            return;
        }
        let r = self.next_rand() % self.totals.latency.samples.max(1);
        if let Some(slot) = self.points.get_mut(r as usize) {
            *slot = (t, lat);
        }
    }

    pub(crate) fn exact(&self) -> bool {
        self.totals.latency.samples as usize <= RESERVOIR
    }

    /// Sorted latencies of the kept points.
    pub(crate) fn sorted(&self) -> Vec<i64> {
        let mut v: Vec<i64> = self.points.iter().map(|p| p.1).collect();
        v.sort_unstable();
        v
    }
}

/// The oracle's percentile: element `round(p/100·(n−1))` of the sorted values,
/// with Python's round-half-to-even.
pub(crate) fn pct(sorted: &[i64], p: f64) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let x = p / 100.0 * (sorted.len() - 1) as f64;
    let f = x.floor();
    let frac = x - f;
    let mut i = if (frac - 0.5).abs() < 1e-9 {
        if (f as i64) % 2 == 0 {
            f
        } else {
            f + 1.0
        }
    } else {
        x.round()
    } as usize;
    i = i.min(sorted.len() - 1);
    sorted.get(i).copied()
}

#[derive(Debug, Default)]
pub struct Summary {
    pub(crate) groups: BTreeMap<GroupKey, Group>,
    pub(crate) groups_overflow: u64,
}

/// Topic label of a row for grouping.
pub(crate) fn topic_label(r: &SampleRow) -> String {
    if let Some(t) = &r.topic {
        return t.to_string();
    }
    let e = r.key.writer.entity;
    if let Some(name) = e.builtin_topic_name() {
        return name.into();
    }
    if e.is_builtin() {
        return format!("(builtin {e})");
    }
    "(unknown topic)".into()
}

impl Summary {
    pub(crate) fn add(&mut self, r: &SampleRow) {
        let mut key = GroupKey {
            sender: r.sender,
            receiver: r.receiver,
            topic: topic_label(r),
        };
        if !self.groups.contains_key(&key) && self.groups.len() >= MAX_GROUPS {
            self.groups_overflow = self.groups_overflow.saturating_add(1);
            key.topic = "(other topics)".into();
        }
        let g = self.groups.entry(key).or_default();
        g.totals.add(r.status, r.latency_ns, r.repaired);
        match (r.status, r.latency_ns) {
            (Status::Ok, Some(l)) => g.add_point(r.t_send, l),
            (Status::Ok, None) => {}
            (Status::Lost | Status::Incomplete, _) => {
                if g.lost_at.len() < RESERVOIR {
                    g.lost_at.push(r.t_send);
                }
            }
        }
    }
}

/// The negative values (latencies a clock offset turned below zero) as one bin from the
/// smallest to 0, and the rest: log bins would need a mirror image of every decade between
/// them, nearly all empty. Both the text and the HTML histogram start with it.
pub(crate) fn negative_bin(sorted: &[i64]) -> (Option<(i64, i64, u64)>, &[i64]) {
    let k = sorted.partition_point(|&v| v < 0);
    let (neg, rest) = sorted.split_at(k);
    (neg.first().map(|&lo| (lo, 0, neg.len() as u64)), rest)
}

/// Log histogram with 1-2-5 bin edges (ns): the bins between the smallest and largest
/// value, after one bin of every negative value ([`negative_bin`]).
pub(crate) fn histogram(sorted: &[i64]) -> Vec<(i64, i64, u64)> {
    let (negative, sorted) = negative_bin(sorted);
    let mut out: Vec<(i64, i64, u64)> = negative.into_iter().collect();
    let (Some(&lo), Some(&hi)) = (sorted.first(), sorted.last()) else {
        return out;
    };
    let mut edges: Vec<i64> = Vec::new();
    let mut decade: i64 = 1;
    'outer: while decade < i64::MAX / 10 {
        for m in [1i64, 2, 5] {
            let e = decade.saturating_mul(m);
            edges.push(e);
            if e > hi {
                break 'outer;
            }
        }
        decade = decade.saturating_mul(10);
    }
    let mut bins = Vec::new();
    let mut prev = 0;
    for &e in &edges {
        let from = prev;
        prev = e;
        if e <= lo {
            continue;
        }
        let a = sorted.partition_point(|&v| v < from);
        let b = sorted.partition_point(|&v| v < e);
        bins.push((from, e, (b - a) as u64));
    }
    // Trim empty bins at both ends.
    while bins.first().is_some_and(|b| b.2 == 0) {
        bins.remove(0);
    }
    while bins.last().is_some_and(|b| b.2 == 0) {
        bins.pop();
    }
    // A run of empty bins (between 0 and the first latency of a millisecond, say) is one
    // empty line, not one per decade step.
    for b in bins {
        match out.last_mut() {
            Some(last) if last.2 == 0 && b.2 == 0 && last.1 == b.0 => last.1 = b.1,
            _ => out.push(b),
        }
    }
    out
}

/// "1.234 ms" style for people.
pub(crate) fn human_ns(ns: i64) -> String {
    let a = ns.unsigned_abs();
    let sign = if ns < 0 { "-" } else { "" };
    if a < 1_000 {
        format!("{sign}{a} ns")
    } else if a < 1_000_000 {
        format!("{sign}{:.1} µs", a as f64 / 1e3)
    } else if a < 1_000_000_000 {
        format!("{sign}{:.3} ms", a as f64 / 1e6)
    } else {
        format!("{sign}{:.3} s", a as f64 / 1e9)
    }
}

#[derive(Debug)]
pub(crate) struct TopicStats {
    pub(crate) direction: String,
    pub(crate) topic: String,
    pub(crate) count: u64,
    pub(crate) lost: u64,
    pub(crate) incomplete: u64,
    pub(crate) repaired: u64,
    pub(crate) min_ns: Option<i64>,
    pub(crate) p50_ns: Option<i64>,
    pub(crate) p90_ns: Option<i64>,
    pub(crate) p99_ns: Option<i64>,
    pub(crate) max_ns: Option<i64>,
    pub(crate) mean_ns: Option<i64>,
    /// When a clock offset estimate corrected these latencies: each lies within ± this of
    /// the truth (see `SampleRow::latency_uncertainty_ns`).
    pub(crate) latency_uncertainty_ns: Option<i64>,
    /// Percentiles are exact (false: over a reservoir sample).
    pub(crate) exact: bool,
}

impl TopicStats {
    pub(crate) fn of(direction: String, k: &GroupKey, g: &Group) -> Self {
        let s = g.sorted();
        Self {
            direction,
            topic: k.topic.clone(),
            count: g.totals.latency.samples,
            lost: g.totals.lost,
            incomplete: g.totals.incomplete,
            repaired: g.totals.repaired,
            min_ns: g.totals.latency.min(),
            p50_ns: pct(&s, 50.0),
            p90_ns: pct(&s, 90.0),
            p99_ns: pct(&s, 99.0),
            max_ns: g.totals.latency.max(),
            mean_ns: g.totals.latency.mean(),
            latency_uncertainty_ns: None,
            exact: g.exact(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_rounds_half_to_even_like_python() {
        let v: Vec<i64> = (0..4).collect();
        // 0.5 * 3 = 1.5 -> 2 (even)
        assert_eq!(pct(&v, 50.0), Some(2));
        let v: Vec<i64> = (0..6).collect();
        // 0.5 * 5 = 2.5 -> 2 (even)
        assert_eq!(pct(&v, 50.0), Some(2));
        assert_eq!(pct(&v, 100.0), Some(5));
        assert_eq!(pct(&[], 50.0), None);
    }

    #[test]
    fn negative_latencies_have_one_bin_then_log_bins_from_the_first_positive_value() {
        // As a clock offset makes them: -10.285 ms, then 1.5 ms .. 3 ms. Before, a
        // "-10.285 ms .. 1 ns" bin came first, then empty 1 ns .. 1 ms bins.
        let v = vec![-10_285_000, -20_000, 1_500_000, 1_600_000, 3_000_000];
        let h = histogram(&v);
        assert_eq!(
            h,
            vec![
                (-10_285_000, 0, 2),
                (1_000_000, 2_000_000, 2),
                (2_000_000, 5_000_000, 1)
            ]
        );
        // Zero is not negative: it opens the first log bin; the empty bins from 1 ns to
        // 1 ms are one.
        assert_eq!(histogram(&[0, 0, 1]), vec![(0, 1, 2), (1, 2, 1)]);
        assert_eq!(
            histogram(&[-3, 0, 1_500_000]),
            vec![
                (-3, 0, 1),
                (0, 1, 1),
                (1, 1_000_000, 0),
                (1_000_000, 2_000_000, 1)
            ]
        );
        assert_eq!(histogram(&[-5, -1]), vec![(-5, 0, 2)]);
    }

    #[test]
    fn histogram_counts_every_value() {
        let v = vec![900, 1_500, 1_600, 12_000, 90_000_000];
        let h = histogram(&v);
        assert_eq!(h.iter().map(|b| b.2).sum::<u64>(), 5);
    }
}
