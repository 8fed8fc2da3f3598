//! A writer's fragmented samples in progress: which fragments of each came, the memory
//! they hold, and dropping them (completed, evicted for room, or finalized).

use rtps_dissect::{FragmentRange, SequenceNumber};

use super::{SeqConfig, SeqTracker};

/// Fragments received of one DATA_FRAG sample.
#[derive(Debug, Clone)]
pub(super) struct FragSample {
    pub(super) sn: SequenceNumber,
    /// Its place among the writer's fragmented samples (the n-th tracked): with the SN it
    /// names this sample and not a later one of the same SN.
    pub(super) birth: u64,
    total: u32,
    received: u32,
    bits: Vec<u64>,
}

impl FragSample {
    fn new(sn: SequenceNumber, birth: u64, total: u32, cap: u32) -> Self {
        let tracked = total.min(cap);
        let words = usize::try_from(tracked.div_ceil(64)).unwrap_or(0);
        Self {
            sn,
            birth,
            total: tracked,
            received: 0,
            bits: vec![0; words],
        }
    }

    /// Memory it holds (the fragment flags and itself).
    fn bytes(&self) -> usize {
        self.bits
            .capacity()
            .saturating_mul(std::mem::size_of::<u64>())
            .saturating_add(std::mem::size_of::<Self>())
    }

    /// Mark fragments `[start, start + count)` (1-based). Returns (new, repeated).
    fn mark(&mut self, start: u32, count: u32) -> (u32, u32) {
        let mut new = 0u32;
        let mut old = 0u32;
        let end = start
            .saturating_add(count)
            .min(self.total.saturating_add(1));
        for n in start.max(1)..end {
            let i = n.saturating_sub(1);
            let w = usize::try_from(i / 64).unwrap_or(usize::MAX);
            let bit = 1u64 << (i % 64);
            if let Some(word) = self.bits.get_mut(w) {
                if *word & bit == 0 {
                    *word |= bit;
                    new = new.saturating_add(1);
                } else {
                    old = old.saturating_add(1);
                }
            }
        }
        self.received = self.received.saturating_add(new);
        (new, old)
    }

    fn complete(&self) -> bool {
        self.received >= self.total
    }
}

/// Memory held by fragmented samples in progress (`SeqTracker::frag_usage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FragUsage {
    pub(crate) samples: usize,
    pub(crate) bytes: usize,
}

impl SeqTracker {
    /// Returns (sample now complete, new fragments, repeated fragments).
    pub(super) fn mark_frags(
        &mut self,
        sn: SequenceNumber,
        fi: FragmentRange,
        cfg: &SeqConfig,
    ) -> (bool, u32, u32) {
        let pos = match self.frags.iter().position(|s| s.sn == sn) {
            Some(p) => p,
            None => {
                let total = if fi.fragment_size == 0 {
                    1
                } else {
                    fi.sample_size.div_ceil(u32::from(fi.fragment_size)).max(1)
                };
                if self.frags.len() >= cfg.max_frag_samples.max(1) {
                    let oldest = self.frags.first().map(|s| s.birth);
                    self.remove_frags(|s| Some(s.birth) == oldest);
                    self.frag_evicted = self.frag_evicted.saturating_add(1);
                }
                let sample = FragSample::new(sn, self.frags_born, total, cfg.max_fragments);
                self.frags_born = self.frags_born.saturating_add(1);
                self.frag_usage.samples = self.frag_usage.samples.saturating_add(1);
                self.frag_usage.bytes = self.frag_usage.bytes.saturating_add(sample.bytes());
                self.frags.push(sample);
                self.frags.len().saturating_sub(1)
            }
        };
        let Some(s) = self.frags.get_mut(pos) else {
            return (false, 0, 0);
        };
        let (new, old) = s.mark(fi.start, u32::from(fi.count));
        let complete = s.complete();
        if complete {
            let birth = s.birth;
            self.remove_frags(|s| s.birth == birth);
        }
        (complete, new, old)
    }

    /// Drops the fragmented samples `matches` names from tracking (accounted in
    /// `frag_usage`, not counted as evicted).
    pub(super) fn remove_frags(&mut self, matches: impl Fn(&FragSample) -> bool) {
        let usage = &mut self.frag_usage;
        self.frags.retain(|s| {
            let keep = !matches(s);
            if !keep {
                usage.samples = usage.samples.saturating_sub(1);
                usage.bytes = usage.bytes.saturating_sub(s.bytes());
            }
            keep
        });
    }

    /// Memory held by this writer's fragmented samples in progress.
    pub(crate) fn frag_usage(&self) -> FragUsage {
        self.frag_usage
    }

    /// Fragmented samples tracked so far: changes when one starts.
    pub(crate) fn frags_born(&self) -> u64 {
        self.frags_born
    }

    /// The fragmented sample tracked last, if still in progress: (SN, birth).
    pub(crate) fn newest_frag(&self) -> Option<(SequenceNumber, u64)> {
        self.frags
            .last()
            .filter(|s| s.birth.saturating_add(1) == self.frags_born)
            .map(|s| (s.sn, s.birth))
    }

    /// Whether the fragmented sample (`sn`, `birth`) is still in progress.
    pub(crate) fn has_frag(&self, sn: SequenceNumber, birth: u64) -> bool {
        self.frags.iter().any(|s| s.sn == sn && s.birth == birth)
    }

    /// Drops the fragmented sample (`sn`, `birth`) from tracking, counted as evicted (the
    /// budget shared by all writers needs its room); false if it is no longer tracked.
    pub(crate) fn drop_frag(&mut self, sn: SequenceNumber, birth: u64) -> bool {
        if !self.has_frag(sn, birth) {
            return false;
        }
        self.remove_frags(|s| s.sn == sn && s.birth == birth);
        self.frag_evicted = self.frag_evicted.saturating_add(1);
        true
    }
}
