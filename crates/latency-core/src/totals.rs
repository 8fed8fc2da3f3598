//! The totals both joins keep of the decisions: the latencies of the samples that reached a
//! receiver ([`LatencyTotals`]: `ddshark latency`'s per-topic count, min, max and mean, the live
//! join's `dds_latency_1s`) and, per topic, how many were lost, incomplete or repaired
//! ([`OutcomeTotals`]).

use serde::{Deserialize, Serialize};

use crate::Status;

/// Count, sum and extremes of latencies (ns). The sum is exact (i128); the live join's state
/// and points hold it as i64, clamped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatencyTotals {
    pub samples: u64,
    #[serde(with = "clamped_i64")]
    pub sum_ns: i128,
    /// (`i64::MAX` / `i64::MIN` while empty: [`LatencyTotals::min`] and `max` say None)
    pub min_ns: i64,
    pub max_ns: i64,
}

impl Default for LatencyTotals {
    fn default() -> Self {
        Self {
            samples: 0,
            sum_ns: 0,
            min_ns: i64::MAX,
            max_ns: i64::MIN,
        }
    }
}

impl LatencyTotals {
    pub fn add(&mut self, latency_ns: i64) {
        self.samples = self.samples.saturating_add(1);
        self.sum_ns = self.sum_ns.saturating_add(i128::from(latency_ns));
        self.min_ns = self.min_ns.min(latency_ns);
        self.max_ns = self.max_ns.max(latency_ns);
    }

    pub fn min(&self) -> Option<i64> {
        (self.samples > 0).then_some(self.min_ns)
    }

    pub fn max(&self) -> Option<i64> {
        (self.samples > 0).then_some(self.max_ns)
    }

    /// The mean, rounded towards zero.
    pub fn mean(&self) -> Option<i64> {
        (self.samples > 0).then(|| clamp_i64(self.sum_ns / i128::from(self.samples)))
    }

    /// The sum as the points carry it.
    pub fn sum_clamped(&self) -> i64 {
        clamp_i64(self.sum_ns)
    }
}

fn clamp_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// The sum as a JSON integer any reader takes (i64), as the live join's state held it.
mod clamped_i64 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &i128, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(super::clamp_i64(*v))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i128, D::Error> {
        i64::deserialize(d).map(i128::from)
    }
}

/// What became of the samples from one sender at one receiver (per topic in `ddshark
/// latency`): the latencies of those that reached it, how many were lost or incomplete there,
/// and how many of those that reached it were completed by a retransmission.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutcomeTotals {
    pub latency: LatencyTotals,
    pub lost: u64,
    pub incomplete: u64,
    pub repaired: u64,
}

impl OutcomeTotals {
    /// One sample at the receiver: its status, its latency (as reported: raw, or moved by a
    /// clock offset; an ok sample without one adds none) and whether a repair completed it.
    pub fn add(&mut self, status: Status, latency_ns: Option<i64>, repaired: bool) {
        match status {
            Status::Ok => {
                if let Some(latency_ns) = latency_ns {
                    self.latency.add(latency_ns);
                }
                if repaired {
                    self.repaired = self.repaired.saturating_add(1);
                }
            }
            Status::Lost => self.lost = self.lost.saturating_add(1),
            Status::Incomplete => self.incomplete = self.incomplete.saturating_add(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_totals_are_exact_and_empty_says_none() {
        let mut t = LatencyTotals::default();
        assert_eq!((t.min(), t.max(), t.mean()), (None, None, None));
        for l in [3, -1, i64::MAX, i64::MAX] {
            t.add(l);
        }
        assert_eq!((t.samples, t.min(), t.max()), (4, Some(-1), Some(i64::MAX)));
        // (an i64 sum would have saturated and made the mean i64::MAX / 4)
        let exact = (2 * i128::from(i64::MAX) + 2) / 4;
        assert_eq!(t.mean(), i64::try_from(exact).ok());
        assert_eq!(t.sum_clamped(), i64::MAX);
        // the live join's state layout (its per-second totals before they were shared)
        let json = serde_json::to_string(&t).unwrap_or_default();
        let max = i64::MAX;
        let layout = format!(r#"{{"samples":4,"sum_ns":{max},"min_ns":-1,"max_ns":{max}}}"#);
        assert_eq!(json, layout);
        let back: Option<LatencyTotals> = serde_json::from_str(&json).ok();
        assert_eq!(back.map(|b| b.sum_ns), Some(i128::from(max)));
    }

    #[test]
    fn outcome_totals_count_each_status_and_repairs_only_of_samples_that_arrived() {
        let mut t = OutcomeTotals::default();
        t.add(Status::Ok, Some(5), true);
        t.add(Status::Ok, None, false);
        t.add(Status::Lost, None, true);
        t.add(Status::Incomplete, None, false);
        assert_eq!(
            (t.latency.samples, t.lost, t.incomplete, t.repaired),
            (1, 1, 1, 1)
        );
    }
}
