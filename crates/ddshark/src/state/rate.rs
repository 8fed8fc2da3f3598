//! The one rate and bandwidth of a writer (and, summed, of a topic) that every output
//! shows: the TUI, `stats` text and JSON, the `--no-tui` summaries and the OTLP metrics.
//!
//! A writer's rate is `(n − 1) / (latest − first)` over its `n` samples of the last window
//! (`--window`), as `ros2 topic hz --window` computes it: a writer active less than a
//! window is rated over its own first → latest sample (marked `over_active_span`), never
//! over time before it began (which would read a 30 Hz writer active 0.6 s of a 1 s window
//! as 18 Hz). One that stops keeps its rate until its samples leave the window, then reads
//! 0. Bandwidth is that rate times the mean size of the same samples.

use super::timing::Timing;
use super::window::Counts;

/// The shortest active span a rate is computed over: a burst of discovery samples
/// microseconds apart is not 100 000/s (the window, if shorter).
pub(crate) const MIN_RATE_SPAN_NS: u64 = 100_000_000;

/// A writer's (or a topic's) rate and bandwidth, as every output shows them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RateView {
    /// Samples per second over `span_s`; `null`: no sample yet, or fewer than two over
    /// less than [`MIN_RATE_SPAN_NS`].
    pub hz: Option<f64>,
    /// Bits per second of sample data over `span_s`: `hz` × the mean sample size.
    pub bandwidth_bps: Option<f64>,
    /// Seconds of capture time the rate is over (a topic: the longest of its writers').
    pub span_s: f64,
    /// The rate is over the writer's own first → latest sample, as it was active less
    /// than a window (a topic: any of its writers).
    pub over_active_span: bool,
}

impl RateView {
    /// `window`: the writer's counts in the window; `timing`: its whole life, which says
    /// whether it began inside the window.
    pub(crate) fn of_writer(
        window: &Counts,
        timing: &Timing,
        window_start_ns: u64,
        window_ns: u64,
    ) -> Self {
        let Some(began) = timing.first_ns() else {
            return Self::default();
        };
        let times = window.sample_times;
        let span_ns = times.span_ns();
        let span_s = span_ns as f64 / 1e9;
        let periods = window.samples.saturating_sub(1);
        let hz = if window.samples == 0 {
            // Samples before, none in the window: it stopped.
            Some(0.0)
        } else {
            (periods > 0 && span_ns >= MIN_RATE_SPAN_NS.min(window_ns))
                .then(|| periods as f64 / span_s)
        };
        let mean_size_bits = if window.samples > 0 {
            window.bytes as f64 * 8.0 / window.samples as f64
        } else {
            0.0
        };
        Self {
            hz,
            bandwidth_bps: hz.map(|hz| hz * mean_size_bits),
            span_s,
            over_active_span: began >= window_start_ns,
        }
    }

    /// A topic's: the sum over its writers.
    pub(crate) fn add(&mut self, w: &RateView) {
        let sum = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.hz = sum(self.hz, w.hz);
        self.bandwidth_bps = sum(self.bandwidth_bps, w.bandwidth_bps);
        self.span_s = self.span_s.max(w.span_s);
        self.over_active_span |= w.over_active_span;
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::float_cmp,
    clippy::arithmetic_side_effects
)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const WINDOW: u64 = 1_000 * MS;

    /// A writer of 48-byte samples every `period_ms` from `from_ms` to `to_ms`, and what
    /// a window starting at `window_start_ms` holds of it.
    fn writer(from_ms: u64, to_ms: u64, period_ms: u64, window_start_ms: u64) -> RateView {
        let mut t = Timing::default();
        let mut window = Counts::default();
        for (sn, ms) in (from_ms..=to_ms).step_by(period_ms as usize).enumerate() {
            t.sample(ms * MS, sn as i64 + 1, None);
            if ms >= window_start_ms {
                window.samples += 1;
                window.bytes += 48;
                window.sample_times.note(ms * MS);
            }
        }
        RateView::of_writer(&window, &t, window_start_ms * MS, WINDOW)
    }

    #[test]
    fn a_writer_active_less_than_a_window_is_rated_over_its_own_span() {
        // 30 Hz for 0.6 s of a 1 s window: 30 Hz, not the 18 samples the window holds.
        let r = writer(400, 1000, 33, 0);
        assert!(r.over_active_span);
        assert!((r.hz.unwrap() - 1000.0 / 33.0).abs() < 1e-9, "{r:?}");
        assert!((r.bandwidth_bps.unwrap() - r.hz.unwrap() * 48.0 * 8.0).abs() < 1e-6);
    }

    #[test]
    fn a_writer_active_longer_than_the_window_is_rated_over_the_window() {
        // 20 Hz since long before the window: 20 samples from 9.0 s to 9.95 s.
        let r = writer(0, 9_999, 50, 9_000);
        assert!(!r.over_active_span);
        assert!((r.hz.unwrap() - 20.0).abs() < 1e-9, "{r:?}");
        assert!((r.span_s - 0.95).abs() < 1e-9);
        // Stopped long ago: the window holds none of its samples, the rate is 0.
        let r = writer(0, 9_999, 50, 11_000);
        assert_eq!(r.hz, Some(0.0));
    }

    #[test]
    fn a_burst_shorter_than_the_minimum_span_has_no_rate() {
        // Four discovery samples 7 µs apart would read 428 571/s.
        let mut t = Timing::default();
        let mut c = Counts::default();
        for i in 0..4u64 {
            t.sample(500 * MS + i * 7_000, i as i64 + 1, None);
            c.samples += 1;
            c.sample_times.note(500 * MS + i * 7_000);
        }
        let r = RateView::of_writer(&c, &t, 0, WINDOW);
        assert_eq!((r.hz, r.bandwidth_bps), (None, None));
        // No sample at all: nothing known.
        let r = RateView::of_writer(&Counts::default(), &Timing::default(), 0, WINDOW);
        assert_eq!(r, RateView::default());
    }

    #[test]
    fn a_topic_sums_its_writers() {
        let mut topic = RateView::default();
        topic.add(&writer(400, 1000, 50, 0));
        topic.add(&writer(0, 1000, 100, 0));
        topic.add(&RateView::default());
        assert!((topic.hz.unwrap() - 30.0).abs() < 1e-9, "{topic:?}");
        assert_eq!(topic.span_s, 1.0);
        assert!(topic.over_active_span);
    }
}
