//! The clock offset between two hosts from samples seen by both (see the crate docs).
//!
//! Times: the pair is (X, Y); θ(t) = Y's clock − X's clock at X-time t. A sample sent by X
//! gives an upper bound θ(t_send) ≤ t_recv − t_send; one sent by Y a lower bound
//! θ(t_recv) ≥ −(t_recv − t_send). Per window of X-time, only the tightest bound of each
//! direction is kept (bounded memory); the estimate is the middle of the tightest corridor.

use std::collections::BTreeMap;

use thiserror::Error;

/// Which way a sample went within the pair (X, Y).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Sent by X, received by Y.
    XtoY,
    /// Sent by Y, received by X.
    YtoX,
}

/// One sample seen by both captures of the pair, each time on its own capture's clock.
#[derive(Debug, Clone, Copy)]
pub struct Crossing {
    pub direction: Direction,
    /// On the sender's clock.
    pub t_send: i64,
    /// On the receiver's clock.
    pub t_recv: i64,
    /// Samples this reading stands for (the tightest of them gave the times), ≥ 1.
    pub samples: u32,
    /// Of those, discovery (SPDP/SEDP) samples.
    pub builtin: u32,
}

#[derive(Debug, Clone, Copy)]
pub struct OffsetConfig {
    /// Width of the windows whose minima feed the drift fit (X-time).
    pub window_ns: i64,
    /// Most windows kept; beyond it the oldest are dropped (counted).
    pub max_windows: usize,
    /// Most extreme readings dropped as outliers when they make the bound empty.
    pub max_outliers: u32,
}

impl Default for OffsetConfig {
    fn default() -> Self {
        Self {
            window_ns: 1_000_000_000,
            max_windows: 1 << 20,
            max_outliers: 3,
        }
    }
}

/// The tightest reading of one direction in one window.
#[derive(Debug, Clone, Copy)]
struct Extreme {
    /// X-time of the reading.
    t: i64,
    /// X→Y: the raw delay (upper bound on θ); Y→X: minus the raw delay (lower bound on θ).
    bound: i64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Window {
    upper: Option<Extreme>,
    lower: Option<Extreme>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub x_to_y: u64,
    pub y_to_x: u64,
    pub builtin: u64,
    pub user: u64,
}

/// Estimates θ for one pair of hosts from the crossings fed to it.
#[derive(Debug, Clone)]
pub struct OffsetEstimator {
    cfg: OffsetConfig,
    windows: BTreeMap<i64, Window>,
    counts: Counts,
    windows_dropped: u64,
}

/// Why a pair has no estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum EstimateError {
    #[error("no sample seen by both captures")]
    NoSharedSample,
    #[error(
        "samples went only one way ({x_to_y} X→Y, {y_to_x} Y→X): the offset needs both directions"
    )]
    OneDirection { x_to_y: u64, y_to_x: u64 },
    #[error("the readings contradict any offset even after dropping {dropped} outliers (bound {width_ns} ns wide)")]
    Inconsistent { dropped: u32, width_ns: i64 },
}

/// θ̂(t) = `offset_ns` + `drift_ppb`·(t − `t_ref`)/10⁹, the true θ(t) within ±`half_width_ns`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OffsetEstimate {
    /// θ̂ at `t_ref` (Y's clock minus X's), ns.
    pub offset_ns: i64,
    /// Half the width of the interval that holds the true offset (NTP's bound), ns.
    pub half_width_ns: i64,
    /// X-time the estimate refers to (the first reading).
    pub t_ref: i64,
    /// X-time of the last reading.
    pub t_last: i64,
    /// Rate of Y's clock against X's, in parts per billion; 0 when a constant offset fits.
    pub drift_ppb: i64,
    /// The drift model was chosen (a constant offset did not fit as well).
    pub drifting: bool,
    /// Smallest raw delays each way after removing the drift (raw: receiver clock − sender clock).
    pub min_x_to_y_ns: i64,
    pub min_y_to_x_ns: i64,
    pub counts: Counts,
    /// Windows with readings in both directions, and in any.
    pub windows_both: usize,
    pub windows: usize,
    /// Readings dropped because they made the bound empty.
    pub outliers: u32,
    pub windows_dropped: u64,
}

impl OffsetEstimate {
    /// θ̂ at X-time `t`.
    pub fn offset_at(&self, t: i64) -> i64 {
        let dt = i128::from(t.saturating_sub(self.t_ref));
        let drift = dt.saturating_mul(i128::from(self.drift_ppb)) / 1_000_000_000;
        let v = i128::from(self.offset_ns).saturating_add(drift);
        i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
    }

    /// The estimate made from Y's timestamps moved by `-shift` (Y's clock minus X's by
    /// `shift` less), as of Y's own clock.
    pub fn moved_by(mut self, shift: i64) -> Self {
        self.offset_ns = self.offset_ns.saturating_add(shift);
        self.min_x_to_y_ns = self.min_x_to_y_ns.saturating_add(shift);
        self.min_y_to_x_ns = self.min_y_to_x_ns.saturating_sub(shift);
        self
    }

    /// θ̂ at the Y-time `t_y` (for moving Y's timestamps onto X's clock).
    pub fn offset_at_y(&self, t_y: i64) -> i64 {
        let first = self.offset_at(t_y);
        self.offset_at(t_y.saturating_sub(first))
    }

    /// Does the interval at X-time `t` hold `theta`?
    pub fn holds(&self, t: i64, theta: i64) -> bool {
        self.offset_at(t).abs_diff(theta) <= self.half_width_ns.unsigned_abs()
    }
}

impl OffsetEstimator {
    pub fn new(cfg: OffsetConfig) -> Self {
        Self {
            cfg: OffsetConfig {
                window_ns: cfg.window_ns.max(1),
                max_windows: cfg.max_windows.max(1),
                ..cfg
            },
            windows: BTreeMap::new(),
            counts: Counts::default(),
            windows_dropped: 0,
        }
    }

    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// Drop windows that end before X-time `t` (for a rolling estimate).
    pub fn forget_before(&mut self, t: i64) {
        let keep_from = t.div_euclid(self.cfg.window_ns);
        self.windows = self.windows.split_off(&keep_from);
    }

    pub fn add(&mut self, c: Crossing) {
        let raw = c.t_recv.saturating_sub(c.t_send);
        let (t, bound) = match c.direction {
            Direction::XtoY => (c.t_send, raw),
            Direction::YtoX => (c.t_recv, raw.saturating_neg()),
        };
        let key = t.div_euclid(self.cfg.window_ns);
        if !self.windows.contains_key(&key) && self.windows.len() >= self.cfg.max_windows {
            if let Some(first) = self.windows.keys().next().copied() {
                if first > key {
                    self.windows_dropped = self.windows_dropped.saturating_add(1);
                    return;
                }
                self.windows.remove(&first);
                self.windows_dropped = self.windows_dropped.saturating_add(1);
            }
        }
        let w = self.windows.entry(key).or_default();
        let e = Extreme { t, bound };
        let n = u64::from(c.samples.max(1));
        let builtin = u64::from(c.builtin).min(n);
        match c.direction {
            Direction::XtoY => {
                self.counts.x_to_y = self.counts.x_to_y.saturating_add(n);
                if w.upper.is_none_or(|u| bound < u.bound) {
                    w.upper = Some(e);
                }
            }
            Direction::YtoX => {
                self.counts.y_to_x = self.counts.y_to_x.saturating_add(n);
                if w.lower.is_none_or(|l| bound > l.bound) {
                    w.lower = Some(e);
                }
            }
        }
        self.counts.builtin = self.counts.builtin.saturating_add(builtin);
        self.counts.user = self.counts.user.saturating_add(n - builtin);
    }

    pub fn estimate(&self) -> Result<OffsetEstimate, EstimateError> {
        let mut upper: Vec<Extreme> = self.windows.values().filter_map(|w| w.upper).collect();
        let mut lower: Vec<Extreme> = self.windows.values().filter_map(|w| w.lower).collect();
        if upper.is_empty() && lower.is_empty() {
            return Err(EstimateError::NoSharedSample);
        }
        if upper.is_empty() || lower.is_empty() {
            return Err(EstimateError::OneDirection {
                x_to_y: self.counts.x_to_y,
                y_to_x: self.counts.y_to_x,
            });
        }
        let t_ref = upper.iter().chain(&lower).map(|e| e.t).min().unwrap_or(0);
        let t_last = upper.iter().chain(&lower).map(|e| e.t).max().unwrap_or(0);
        let slope = theil_sen(&upper, &lower);
        let mut outliers = 0u32;
        let (rate, corridor) = loop {
            let flat = corridor(&upper, &lower, 0.0, t_ref);
            let sloped = corridor(&upper, &lower, slope, t_ref);
            let gain = sloped.width() - flat.width();
            // The drift model must explain clearly more than a constant offset does: a
            // noisy slope on drift-free traffic must not cost the exact NTP bound.
            let use_drift = slope != 0.0 && gain > flat.width().abs() / 16.0 + 1_000.0;
            let (rate, c) = if use_drift {
                (slope, sloped)
            } else {
                (0.0, flat)
            };
            if c.width() >= 0.0 {
                break (rate, c);
            }
            if outliers >= self.cfg.max_outliers {
                return Err(EstimateError::Inconsistent {
                    dropped: outliers,
                    width_ns: c.width() as i64,
                });
            }
            // Drop the tighter-than-its-neighbours end of the empty corridor.
            let up_gap = gap(&upper, rate, t_ref, true);
            let lo_gap = gap(&lower, rate, t_ref, false);
            let removed = if up_gap >= lo_gap && upper.len() > 1 {
                remove_at(&mut upper, c.upper_at)
            } else if lower.len() > 1 {
                remove_at(&mut lower, c.lower_at)
            } else if upper.len() > 1 {
                remove_at(&mut upper, c.upper_at)
            } else {
                false
            };
            if !removed {
                return Err(EstimateError::Inconsistent {
                    dropped: outliers,
                    width_ns: c.width() as i64,
                });
            }
            outliers = outliers.saturating_add(1);
        };
        let mid = (corridor.hi + corridor.lo) / 2.0;
        let half = (corridor.hi - corridor.lo) / 2.0;
        Ok(OffsetEstimate {
            offset_ns: mid.round() as i64,
            half_width_ns: half.ceil() as i64,
            t_ref,
            t_last,
            drift_ppb: (rate * 1e9).round() as i64,
            drifting: rate != 0.0,
            min_x_to_y_ns: corridor.hi.round() as i64,
            min_y_to_x_ns: (-corridor.lo).round() as i64,
            counts: self.counts,
            windows_both: self
                .windows
                .values()
                .filter(|w| w.upper.is_some() && w.lower.is_some())
                .count(),
            windows: self.windows.len(),
            outliers,
            windows_dropped: self.windows_dropped,
        })
    }
}

#[derive(Debug, Clone, Copy)]
struct Corridor {
    /// Tightest upper bound on θ(t_ref) (drift removed), and which reading gave it.
    hi: f64,
    upper_at: usize,
    lo: f64,
    lower_at: usize,
}

impl Corridor {
    fn width(&self) -> f64 {
        self.hi - self.lo
    }
}

fn detrend(e: &Extreme, rate: f64, t_ref: i64) -> f64 {
    e.bound as f64 - rate * (e.t.saturating_sub(t_ref)) as f64
}

fn corridor(upper: &[Extreme], lower: &[Extreme], rate: f64, t_ref: i64) -> Corridor {
    let mut c = Corridor {
        hi: f64::INFINITY,
        upper_at: 0,
        lo: f64::NEG_INFINITY,
        lower_at: 0,
    };
    for (i, e) in upper.iter().enumerate() {
        let v = detrend(e, rate, t_ref);
        if v < c.hi {
            c.hi = v;
            c.upper_at = i;
        }
    }
    for (i, e) in lower.iter().enumerate() {
        let v = detrend(e, rate, t_ref);
        if v > c.lo {
            c.lo = v;
            c.lower_at = i;
        }
    }
    c
}

/// How far the tightest reading stands out from the next one (how outlying it is).
fn gap(v: &[Extreme], rate: f64, t_ref: i64, upper: bool) -> f64 {
    let mut d: Vec<f64> = v.iter().map(|e| detrend(e, rate, t_ref)).collect();
    d.sort_by(f64::total_cmp);
    if !upper {
        d.reverse();
    }
    match (d.first(), d.get(1)) {
        (Some(a), Some(b)) => (b - a).abs(),
        _ => 0.0,
    }
}

fn remove_at(v: &mut Vec<Extreme>, i: usize) -> bool {
    if i < v.len() {
        v.remove(i);
        true
    } else {
        false
    }
}

/// Most window minima per direction the slope fit looks at (pairwise slopes are quadratic).
const FIT_POINTS: usize = 512;

/// The median of the slopes between window minima of the same direction (each direction's
/// minima follow θ(t) plus the minimum delay, so both share the drift).
fn theil_sen(upper: &[Extreme], lower: &[Extreme]) -> f64 {
    let mut slopes = Vec::new();
    for set in [upper, lower] {
        let step = set.len().div_ceil(FIT_POINTS).max(1);
        let pts: Vec<&Extreme> = set.iter().step_by(step).collect();
        for (i, a) in pts.iter().enumerate() {
            for b in pts.iter().skip(i.saturating_add(1)) {
                let dt = b.t.saturating_sub(a.t);
                if dt != 0 {
                    slopes.push(b.bound.saturating_sub(a.bound) as f64 / dt as f64);
                }
            }
        }
    }
    if slopes.is_empty() {
        return 0.0;
    }
    slopes.sort_by(f64::total_cmp);
    let n = slopes.len();
    let mid = n / 2;
    let m = if n % 2 == 1 {
        slopes.get(mid).copied().unwrap_or(0.0)
    } else {
        let a = slopes.get(mid.saturating_sub(1)).copied().unwrap_or(0.0);
        let b = slopes.get(mid).copied().unwrap_or(0.0);
        (a + b) / 2.0
    };
    // Clocks further apart in rate than 0.1 % are not clocks: no drift model then.
    if m.is_finite() && m.abs() < 1e-3 {
        m
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;
    const S: i64 = 1_000_000_000;

    /// Traffic with true offset `theta` + `ppb`·t, delays d_xy / d_yx plus a jitter pattern.
    fn feed(theta: i64, ppb: i64, d_xy: i64, d_yx: i64) -> OffsetEstimator {
        let mut e = OffsetEstimator::new(OffsetConfig::default());
        let th = |t: i64| theta + (i128::from(t) * i128::from(ppb) / 1_000_000_000) as i64;
        for i in 0..200i64 {
            let t = i * 50 * MS;
            let jitter = (i * 7919) % 300_000;
            let recv_x = t + d_xy + jitter;
            e.add(Crossing {
                direction: Direction::XtoY,
                t_send: t,
                t_recv: recv_x + th(recv_x),
                samples: 1,
                builtin: 0,
            });
            if i % 7 == 0 {
                let send_y = t + 10 * MS;
                let jitter = (i * 104_729) % 200_000;
                e.add(Crossing {
                    direction: Direction::YtoX,
                    t_send: send_y + th(send_y),
                    t_recv: send_y + d_yx + jitter,
                    samples: 1,
                    builtin: 1,
                });
            }
        }
        e
    }

    #[test]
    fn constant_offset_is_inside_the_ntp_bound() {
        for theta in [-S, -12_345_678, 0, 40_000, S] {
            let est = feed(theta, 0, MS, 150_000)
                .estimate()
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(!est.drifting, "{est:?}");
            // NTP bound from the true minimum delays: (1 ms + 150 µs) / 2.
            assert_eq!(est.half_width_ns, 575_000, "{est:?}");
            assert!(est.holds(0, theta), "{theta}: {est:?}");
            // Asymmetric path: the estimate is off by half the asymmetry.
            assert_eq!(est.offset_ns - theta, (MS - 150_000) / 2);
        }
    }

    #[test]
    fn drift_of_50_ppm_is_tracked() {
        let est = feed(3 * MS, 50_000, 100_000, 100_000)
            .estimate()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(est.drifting, "{est:?}");
        assert!((est.drift_ppb - 50_000).abs() < 2_000, "{est:?}");
        for t in (0..10).map(|i| i * S) {
            let truth = 3 * MS + t * 50_000 / 1_000_000_000;
            assert!(est.holds(t, truth), "at {t}: {est:?}");
        }
    }

    #[test]
    fn a_few_impossible_readings_are_dropped_and_counted() {
        let mut e = feed(0, 0, MS, 150_000);
        for k in 0..2 {
            // A reading that says X→Y took −5 ms (a glitch, or a sample from a third host).
            e.add(Crossing {
                direction: Direction::XtoY,
                t_send: 3 * S + k,
                t_recv: 3 * S + k - 5 * MS,
                samples: 1,
                builtin: 0,
            });
        }
        let est = e.estimate().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(est.outliers, 1, "one window held both: {est:?}");
        assert!(est.holds(0, 0), "{est:?}");
        assert_eq!(est.half_width_ns, 575_000);
    }

    #[test]
    fn one_direction_or_nothing_has_no_estimate() {
        let e = OffsetEstimator::new(OffsetConfig::default());
        assert_eq!(e.estimate(), Err(EstimateError::NoSharedSample));
        let mut e = OffsetEstimator::new(OffsetConfig::default());
        e.add(Crossing {
            direction: Direction::XtoY,
            t_send: 0,
            t_recv: 5,
            samples: 1,
            builtin: 1,
        });
        assert!(matches!(
            e.estimate(),
            Err(EstimateError::OneDirection { x_to_y: 1, .. })
        ));
    }

    #[test]
    fn extreme_inputs_neither_panic_nor_move_the_estimate() {
        // θ = 5 ms, one-way delay 100 µs each way: the corridor is 5 ms ± 100 µs.
        const THETA: i64 = 5_000_000;
        const DELAY: i64 = 100_000;
        let sane = |e: &mut OffsetEstimator| {
            for i in 0..10 {
                let s = i * 1_000_000_000;
                e.add(Crossing {
                    direction: Direction::XtoY,
                    t_send: s,
                    t_recv: s + DELAY + THETA,
                    samples: 1,
                    builtin: 0,
                });
                e.add(Crossing {
                    direction: Direction::YtoX,
                    t_send: s + THETA,
                    t_recv: s + DELAY,
                    samples: 1,
                    builtin: 0,
                });
            }
        };
        let mut clean = OffsetEstimator::new(OffsetConfig::default());
        sane(&mut clean);
        let clean = clean.estimate().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((clean.offset_ns, clean.half_width_ns), (THETA, DELAY));

        let mut e = OffsetEstimator::new(OffsetConfig::default());
        sane(&mut e);
        for (a, b) in [(i64::MIN, i64::MAX), (i64::MAX, i64::MIN)] {
            for direction in [Direction::XtoY, Direction::YtoX] {
                e.add(Crossing {
                    direction,
                    t_send: a,
                    t_recv: b,
                    samples: 1,
                    builtin: 0,
                });
            }
        }
        let est = e.estimate().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(est.outliers, 2, "the two contradicting extremes: {est:?}");
        assert_eq!(
            (est.offset_ns, est.half_width_ns, est.drift_ppb),
            (THETA, DELAY, 0),
            "{est:?}"
        );
    }

    #[test]
    fn saturating_readings_under_a_full_window_cap_leave_the_sane_ones() {
        let mut e = OffsetEstimator::new(OffsetConfig {
            window_ns: 1,
            max_windows: 2,
            max_outliers: 1,
        });
        for (a, b) in [(i64::MIN, i64::MAX), (i64::MAX, i64::MIN), (0, 0), (-1, 1)] {
            e.add(Crossing {
                direction: Direction::XtoY,
                t_send: a,
                t_recv: b,
                samples: 1,
                builtin: 0,
            });
            e.add(Crossing {
                direction: Direction::YtoX,
                t_send: b,
                t_recv: a,
                samples: 1,
                builtin: 0,
            });
        }
        // Windows of 1 ns, two kept: the window at i64::MIN is evicted and the readings at -1 refused (3 counted),
        // the pair at 0 (θ = 0 exactly) and the contradicting extreme at i64::MAX remain, and
        // the extreme is dropped as the one outlier allowed.
        let est = e.estimate().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(est.windows_dropped, 3, "{est:?}");
        assert_eq!(est.outliers, 1, "{est:?}");
        assert_eq!((est.offset_ns, est.half_width_ns), (0, 0), "{est:?}");
    }
}
