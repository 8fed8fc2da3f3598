//! Counters kept as totals and over a capture-time sliding window of buckets.

/// Traffic counters of one writer (or summed over a topic).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Distinct (writer, SN) seen in DATA/DATA_FRAG.
    pub samples: u64,
    /// Whole sample sizes, once per sample.
    pub bytes: u64,
    pub(crate) data_submessages: u64,
    pub data_frag_submessages: u64,
    /// IP fragments of the datagrams that carried this writer's DATA/DATA_FRAGs.
    pub(crate) ip_fragments: u64,
    /// Bytes on the wire of those datagrams (UDP length).
    pub(crate) wire_bytes: u64,
    pub retransmitted: u64,
    pub(crate) repaired: u64,
    pub fanout: u64,
    /// DATA/DATA_FRAG copies of samples already seen.
    pub(crate) repeat_submessages: u64,
    pub lost: u64,
    pub(crate) incomplete: u64,
    pub heartbeats: u64,
    pub(crate) acknacks: u64,
    /// SNs requested by ACKNACK bitmaps.
    pub(crate) acknack_requested_sns: u64,
    pub(crate) nackfrags: u64,
    pub(crate) gaps: u64,
    pub(crate) heartbeat_frags: u64,
    /// When the samples counted here came: what a rate is over (`state::rate`).
    pub(crate) sample_times: SampleTimes,
}

/// Capture time of the first and the latest of some samples (each sample's first IP
/// fragment).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SampleTimes {
    pub(crate) first_ns: Option<u64>,
    pub(crate) last_ns: u64,
}

impl SampleTimes {
    pub(crate) fn note(&mut self, ts_ns: u64) {
        self.first_ns = Some(self.first_ns.map_or(ts_ns, |f| f.min(ts_ns)));
        self.last_ns = self.last_ns.max(ts_ns);
    }

    fn add(&mut self, o: &SampleTimes) {
        if let Some(f) = o.first_ns {
            self.note(f);
            self.last_ns = self.last_ns.max(o.last_ns);
        }
    }

    /// From the first to the latest.
    pub(crate) fn span_ns(&self) -> u64 {
        self.first_ns.map_or(0, |f| self.last_ns.saturating_sub(f))
    }
}

/// Counters a [`Windowed`] keeps: summed bucket by bucket.
pub(crate) trait Tally: Copy + Default {
    fn add(&mut self, other: &Self);
}

impl Tally for Counts {
    fn add(&mut self, other: &Self) {
        Counts::add(self, other);
    }
}

impl Counts {
    pub(crate) fn add(&mut self, o: &Counts) {
        let f = |a: &mut u64, b: u64| *a = a.saturating_add(b);
        f(&mut self.samples, o.samples);
        f(&mut self.bytes, o.bytes);
        f(&mut self.data_submessages, o.data_submessages);
        f(&mut self.data_frag_submessages, o.data_frag_submessages);
        f(&mut self.ip_fragments, o.ip_fragments);
        f(&mut self.wire_bytes, o.wire_bytes);
        f(&mut self.retransmitted, o.retransmitted);
        f(&mut self.repaired, o.repaired);
        f(&mut self.fanout, o.fanout);
        f(&mut self.repeat_submessages, o.repeat_submessages);
        f(&mut self.lost, o.lost);
        f(&mut self.incomplete, o.incomplete);
        f(&mut self.heartbeats, o.heartbeats);
        f(&mut self.acknacks, o.acknacks);
        f(&mut self.acknack_requested_sns, o.acknack_requested_sns);
        f(&mut self.nackfrags, o.nackfrags);
        f(&mut self.gaps, o.gaps);
        f(&mut self.heartbeat_frags, o.heartbeat_frags);
        self.sample_times.add(&o.sample_times);
    }
}

/// Number of buckets in a window.
pub(crate) const BUCKETS: usize = 10;

/// Totals plus a ring of `BUCKETS` time buckets of `width_ns` each.
#[derive(Debug, Clone)]
pub(crate) struct Windowed<C = Counts> {
    pub(crate) total: C,
    width_ns: u64,
    buckets: [(u64, C); BUCKETS],
    latest: u64,
    /// Where bucket `latest` begins: a timestamp inside it needs no division (nearly
    /// every record, and a 64-bit division is the dearest instruction on this path).
    latest_start_ns: u64,
}

impl<C: Tally> Windowed<C> {
    pub fn new(window_ns: u64) -> Self {
        Self {
            total: C::default(),
            width_ns: window_ns.checked_div(BUCKETS as u64).unwrap_or(1).max(1),
            buckets: [(u64::MAX, C::default()); BUCKETS],
            latest: 0,
            latest_start_ns: 0,
        }
    }

    /// Apply `f` to the totals and to the bucket of capture time `ts_ns`.
    /// A timestamp older than the window lands in the newest bucket.
    pub(crate) fn record(&mut self, ts_ns: u64, f: impl Fn(&mut C)) {
        f(&mut self.total);
        let in_latest = ts_ns
            .checked_sub(self.latest_start_ns)
            .is_some_and(|into| into < self.width_ns);
        let mut idx = if in_latest {
            self.latest
        } else {
            ts_ns.checked_div(self.width_ns).unwrap_or(0)
        };
        if idx > self.latest {
            self.latest = idx;
            self.latest_start_ns = idx.saturating_mul(self.width_ns);
        } else if self.latest.saturating_sub(idx) >= BUCKETS as u64 {
            idx = self.latest;
        }
        let slot = usize::try_from(idx.checked_rem(BUCKETS as u64).unwrap_or(0)).unwrap_or(0);
        if let Some((bidx, counts)) = self.buckets.get_mut(slot) {
            if *bidx != idx {
                *bidx = idx;
                *counts = C::default();
            }
            f(counts);
        }
    }

    /// Sum of the buckets inside the window ending at `now_ns`.
    pub(crate) fn window(&self, now_ns: u64) -> C {
        let now_idx = now_ns.checked_div(self.width_ns).unwrap_or(0);
        let oldest = now_idx.saturating_sub(BUCKETS.saturating_sub(1) as u64);
        let mut c = C::default();
        for (idx, counts) in &self.buckets {
            if *idx != u64::MAX && *idx >= oldest && *idx <= now_idx {
                c.add(counts);
            }
        }
        c
    }
}

impl Windowed {
    /// Where the window ending at `now_ns` begins: the start of its oldest bucket.
    pub(crate) fn window_start_ns(window_ns: u64, now_ns: u64) -> u64 {
        let width = window_ns.checked_div(BUCKETS as u64).unwrap_or(1).max(1);
        let now_idx = now_ns.checked_div(width).unwrap_or(0);
        now_idx
            .saturating_sub(BUCKETS.saturating_sub(1) as u64)
            .saturating_mul(width)
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    #[test]
    fn window_slides_with_capture_time() {
        let mut w = Windowed::<Counts>::new(10_000_000_000);
        for s in 0..20u64 {
            w.record(s * 1_000_000_000, |c| c.samples += 1);
        }
        assert_eq!(w.total.samples, 20);
        assert_eq!(w.window(19_000_000_000).samples, 10);
        assert_eq!(w.window(40_000_000_000).samples, 0);
        // Backwards in time: counted, in the newest bucket.
        w.record(0, |c| c.samples += 1);
        assert_eq!(w.window(19_000_000_000).samples, 11);
    }

    #[test]
    fn bucket_without_division_is_the_bucket_with_it() {
        // Timestamps mostly rising, some inside the latest bucket, some behind it, some
        // older than the window: each record lands where ts / width says (or, older than
        // the window, in the newest bucket).
        let width = 1_000_000_000u64;
        let mut w = Windowed::<Counts>::new(width * BUCKETS as u64);
        let mut x = 12345u64;
        let mut ts = 0u64;
        let mut latest = 0u64;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ts = match x >> 61 {
                0 => ts.saturating_sub((x >> 20) % (3 * width)),
                1 => ts + (x >> 20) % (4 * width),
                _ => ts + (x >> 20) % (width / 8),
            };
            let mut want = ts / width;
            latest = latest.max(want);
            if latest - want >= BUCKETS as u64 {
                want = latest;
            }
            w.record(ts, |c| c.samples += 1);
            let (idx, _) = w.buckets[(want % BUCKETS as u64) as usize];
            assert_eq!(idx, want, "ts {ts}");
        }
    }
}
