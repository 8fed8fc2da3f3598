//! Sample timing like `ros2 topic hz`, but passive and for every writer at once: the
//! inter-arrival period of a writer's new samples at the capture point (capture time of
//! the first IP fragment of the datagram that brought each sample), the time it was
//! active, and how often the period exceeded the DEADLINE its SEDP
//! announced. Bounded memory: running sums (Welford), nothing per sample.

/// Running count, mean, variance (Welford), min and max of periods in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Moments {
    n: u64,
    mean: f64,
    /// Sum of squared differences from the mean.
    m2: f64,
    min: u64,
    max: u64,
}

impl Moments {
    pub fn push(&mut self, x: u64) {
        self.n = self.n.saturating_add(1);
        let xf = x as f64;
        let delta = xf - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (xf - self.mean);
        self.min = if self.n == 1 { x } else { self.min.min(x) };
        self.max = self.max.max(x);
    }

    /// Combine two sets of moments (Chan et al.'s parallel form).
    pub(crate) fn merge(&mut self, o: &Moments) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *o;
            return;
        }
        let n = self.n.saturating_add(o.n);
        let (na, nb, nf) = (self.n as f64, o.n as f64, n as f64);
        let delta = o.mean - self.mean;
        self.mean += delta * nb / nf;
        self.m2 += o.m2 + delta * delta * na * nb / nf;
        self.n = n;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }

    pub(crate) fn count(&self) -> u64 {
        self.n
    }

    /// Population standard deviation (what `ros2 topic hz` prints as "std dev").
    pub(crate) fn stddev(&self) -> Option<f64> {
        (self.n > 0).then(|| (self.m2 / self.n as f64).max(0.0).sqrt())
    }
}

/// Timing of one writer's samples.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Timing {
    /// Capture time of the first and the latest timed sample.
    first_ns: Option<u64>,
    last_ns: u64,
    /// Highest SN timed so far: a sample below it (a repair, a late fill) arrives out of
    /// its writer's rhythm and is not timed.
    last_sn: i64,
    samples: u64,
    periods: Moments,
    deadline_misses: u64,
}

impl Timing {
    /// A new sample `sn` seen at capture time `ts_ns`; `deadline_ns` is the writer's
    /// announced DEADLINE period when finite.
    pub(crate) fn sample(&mut self, ts_ns: u64, sn: i64, deadline_ns: Option<u64>) {
        if sn <= self.last_sn {
            return;
        }
        self.last_sn = sn;
        if self.first_ns.is_some() {
            // Capture time never goes back here; a reordered timestamp adds no period.
            if let Some(period) = ts_ns.checked_sub(self.last_ns) {
                self.periods.push(period);
                if deadline_ns.is_some_and(|d| period > d) {
                    self.deadline_misses = self.deadline_misses.saturating_add(1);
                }
            }
        } else {
            self.first_ns = Some(ts_ns);
        }
        self.last_ns = self.last_ns.max(ts_ns);
        self.samples = self.samples.saturating_add(1);
    }

    pub(crate) fn periods(&self) -> &Moments {
        &self.periods
    }

    pub(crate) fn deadline_misses(&self) -> u64 {
        self.deadline_misses
    }

    /// Capture time from the first to the latest timed sample.
    pub(crate) fn active_ns(&self) -> u64 {
        self.first_ns
            .map_or(0, |first| self.last_ns.saturating_sub(first))
    }

    pub(crate) fn first_ns(&self) -> Option<u64> {
        self.first_ns
    }
}

/// What `stats`, the TUI and the exporters show of a writer's (or a topic's) timing. Its
/// rate is not here but in [`super::rate::RateView`], the one every output shows.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TimingView {
    /// Samples timed (new samples in SN order).
    pub(crate) samples: u64,
    /// Seconds from the first to the latest timed sample.
    pub(crate) active_s: f64,
    pub period_min_ns: Option<u64>,
    pub period_mean_ns: Option<f64>,
    pub period_max_ns: Option<u64>,
    /// Standard deviation of the period: the jitter.
    pub period_stddev_ns: Option<f64>,
    /// DEADLINE period announced in SEDP (a topic: the shortest of its writers').
    pub deadline_ns: Option<u64>,
    /// Periods longer than the deadline: each is a sample that came later than promised.
    pub deadline_misses: u64,
}

impl TimingView {
    pub(crate) fn of(t: &Timing, deadline_ns: Option<u64>) -> Self {
        let mut v = Self::from_moments(t.periods(), deadline_ns, t.deadline_misses());
        v.samples = t.samples;
        v.active_s = t.active_ns() as f64 / 1e9;
        v
    }

    fn from_moments(m: &Moments, deadline_ns: Option<u64>, deadline_misses: u64) -> Self {
        let some = m.count() > 0;
        Self {
            samples: 0,
            active_s: 0.0,
            period_min_ns: some.then_some(m.min),
            period_mean_ns: some.then_some(m.mean),
            period_max_ns: some.then_some(m.max),
            period_stddev_ns: m.stddev(),
            deadline_ns,
            deadline_misses,
        }
    }
}

/// Sums writers' timing into a topic's.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TimingAgg {
    samples: u64,
    first_ns: Option<u64>,
    last_ns: u64,
    periods: Moments,
    deadline_ns: Option<u64>,
    deadline_misses: u64,
}

impl TimingAgg {
    pub(crate) fn add(&mut self, t: &Timing, deadline_ns: Option<u64>) {
        self.samples = self.samples.saturating_add(t.samples);
        if let Some(f) = t.first_ns {
            self.first_ns = Some(self.first_ns.map_or(f, |a| a.min(f)));
            self.last_ns = self.last_ns.max(t.last_ns);
        }
        self.periods.merge(t.periods());
        if let Some(d) = deadline_ns {
            self.deadline_ns = Some(self.deadline_ns.map_or(d, |a| a.min(d)));
        }
        self.deadline_misses = self.deadline_misses.saturating_add(t.deadline_misses());
    }

    pub(crate) fn view(&self) -> TimingView {
        let mut v = TimingView::from_moments(&self.periods, self.deadline_ns, self.deadline_misses);
        v.samples = self.samples;
        v.active_s = self
            .first_ns
            .map_or(0.0, |f| self.last_ns.saturating_sub(f) as f64 / 1e9);
        v
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn periods_jitter_and_deadline_misses() {
        let mut t = Timing::default();
        // 10 ms apart, one 40 ms gap, deadline 30 ms.
        let times = [0u64, 10, 20, 30, 70, 80];
        for (i, ms) in times.iter().enumerate() {
            t.sample(ms * 1_000_000, i as i64 + 1, Some(30_000_000));
        }
        // A repair of SN 3 arriving late is not timed.
        t.sample(90_000_000, 3, Some(30_000_000));
        let v = TimingView::of(&t, Some(30_000_000));
        assert_eq!(v.samples, 6);
        assert_eq!(v.period_min_ns, Some(10_000_000));
        assert_eq!(v.period_max_ns, Some(40_000_000));
        assert_eq!(v.period_mean_ns, Some(16_000_000.0));
        assert_eq!(v.deadline_misses, 1);
        // population std dev of 10,10,10,40,10 ms = 12 ms
        assert!((v.period_stddev_ns.unwrap() - 12_000_000.0).abs() < 1.0);
    }

    #[test]
    fn merged_moments_equal_one_pass() {
        let xs = [3u64, 9, 4, 12, 7, 7, 1];
        let mut all = Moments::default();
        xs.iter().for_each(|x| all.push(*x));
        let (mut a, mut b) = (Moments::default(), Moments::default());
        xs[..3].iter().for_each(|x| a.push(*x));
        xs[3..].iter().for_each(|x| b.push(*x));
        a.merge(&b);
        assert_eq!((a.n, a.min, a.max), (all.n, all.min, all.max));
        assert!((a.mean - all.mean).abs() < 1e-9);
        assert!((a.stddev().unwrap() - all.stddev().unwrap()).abs() < 1e-9);
    }
}
