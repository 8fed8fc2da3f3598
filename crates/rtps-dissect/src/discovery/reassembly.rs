//! Bounded reassembly of discovery samples (SPDP/SEDP) sent as DATA_FRAG.

use std::collections::HashMap;

use crate::types::{Guid, KeyHasher, SequenceNumber};

/// Bounds of the discovery DATA_FRAG reassembly.
#[derive(Debug, Clone, Copy)]
pub struct DiscoveryFragLimits {
    pub max_samples: usize,
    pub max_sample_size: usize,
    /// Bytes held over all samples in progress (their buffers and fragment flags).
    pub max_bytes: usize,
    pub idle_timeout_ns: u64,
}

impl Default for DiscoveryFragLimits {
    fn default() -> Self {
        Self {
            max_samples: 256,
            max_sample_size: 1 << 20,
            // Discovery samples are kilobytes (a large type description: a few hundred):
            // without this, 256 never-completed 1 MiB samples would hold 512 MiB.
            max_bytes: 16 << 20,
            idle_timeout_ns: 30_000_000_000,
        }
    }
}

struct PartialSample {
    buf: Vec<u8>,
    /// One flag per fragment.
    have: Vec<bool>,
    missing: usize,
    fragment_size: usize,
    last_ts_ns: u64,
}

impl PartialSample {
    /// What it holds: the sample's buffer and one flag per fragment.
    fn bytes(&self) -> usize {
        self.buf.len().saturating_add(self.have.len())
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DiscoveryFragStats {
    pub reassembled: u64,
    pub evicted: u64,
    pub rejected: u64,
    pub in_progress: u64,
}

/// Reassembles discovery samples (SPDP/SEDP) sent as DATA_FRAG.
#[derive(Default)]
pub(crate) struct DiscoveryReassembly {
    limits: DiscoveryFragLimits,
    samples: HashMap<(Guid, SequenceNumber), PartialSample, KeyHasher>,
    stats: DiscoveryFragStats,
    /// Bytes the samples in progress hold (see [`PartialSample::bytes`]).
    bytes_held: usize,
}

/// One DATA_FRAG's facts needed for reassembly.
pub(crate) struct FragmentPiece<'a> {
    pub writer: Guid,
    pub sn: SequenceNumber,
    pub fragment_starting_num: u32,
    pub fragment_size: u16,
    pub sample_size: u32,
    pub data: &'a [u8],
    pub ts_ns: u64,
}

impl DiscoveryReassembly {
    pub fn new(limits: DiscoveryFragLimits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    pub fn stats(&self) -> DiscoveryFragStats {
        DiscoveryFragStats {
            in_progress: self.samples.len() as u64,
            ..self.stats
        }
    }

    fn expire(&mut self, now_ns: u64) {
        let timeout = self.limits.idle_timeout_ns;
        let before = self.samples.len();
        let mut freed = 0usize;
        self.samples.retain(|_, s| {
            let keep = now_ns.saturating_sub(s.last_ts_ns) <= timeout;
            if !keep {
                freed = freed.saturating_add(s.bytes());
            }
            keep
        });
        self.bytes_held = self.bytes_held.saturating_sub(freed);
        let gone = before.saturating_sub(self.samples.len());
        self.stats.evicted = self.stats.evicted.saturating_add(gone as u64);
    }

    /// Drop the sample of `key`, keeping the byte count.
    fn take(&mut self, key: &(Guid, SequenceNumber)) -> Option<PartialSample> {
        let s = self.samples.remove(key)?;
        self.bytes_held = self.bytes_held.saturating_sub(s.bytes());
        Some(s)
    }

    /// Add a fragment; returns the whole serialized sample once every fragment is in.
    pub fn push(&mut self, piece: FragmentPiece<'_>) -> Option<Vec<u8>> {
        let size = usize::try_from(piece.sample_size).ok()?;
        let frag_size = usize::from(piece.fragment_size);
        if size == 0 || frag_size == 0 || size > self.limits.max_sample_size {
            self.stats.rejected = self.stats.rejected.saturating_add(1);
            return None;
        }
        let key = (piece.writer, piece.sn);
        if !self.samples.contains_key(&key) {
            self.expire(piece.ts_ns);
            let nfrags = size.div_ceil(frag_size);
            let bytes = size.saturating_add(nfrags);
            if bytes > self.limits.max_bytes {
                self.stats.rejected = self.stats.rejected.saturating_add(1);
                return None;
            }
            while self.samples.len() >= self.limits.max_samples
                || self.bytes_held.saturating_add(bytes) > self.limits.max_bytes
            {
                let oldest = self
                    .samples
                    .iter()
                    .min_by_key(|(_, s)| s.last_ts_ns)
                    .map(|(k, _)| *k);
                let Some(k) = oldest else { break };
                self.take(&k);
                self.stats.evicted = self.stats.evicted.saturating_add(1);
            }
            self.bytes_held = self.bytes_held.saturating_add(bytes);
            self.samples.insert(
                key,
                PartialSample {
                    buf: vec![0; size],
                    have: vec![false; nfrags],
                    missing: nfrags,
                    fragment_size: frag_size,
                    last_ts_ns: piece.ts_ns,
                },
            );
        }
        let s = self.samples.get_mut(&key)?;
        if s.fragment_size != frag_size || s.buf.len() != size {
            self.stats.rejected = self.stats.rejected.saturating_add(1);
            return None;
        }
        s.last_ts_ns = piece.ts_ns;
        let mut data = piece.data;
        let mut num = usize::try_from(piece.fragment_starting_num).ok()?;
        while !data.is_empty() && num >= 1 {
            let idx = num.checked_sub(1)?;
            let start = idx.checked_mul(frag_size)?;
            if start >= size {
                break;
            }
            let len = frag_size.min(size.saturating_sub(start)).min(data.len());
            let (chunk, rest) = data.split_at(len);
            if let Some(dst) = s.buf.get_mut(start..start.saturating_add(len)) {
                dst.copy_from_slice(chunk);
            }
            if let Some(flag) = s.have.get_mut(idx) {
                if !*flag && (len == frag_size || start.saturating_add(len) == size) {
                    *flag = true;
                    s.missing = s.missing.saturating_sub(1);
                }
            }
            data = rest;
            num = num.checked_add(1)?;
        }
        if s.missing == 0 {
            self.stats.reassembled = self.stats.reassembled.saturating_add(1);
            return self.take(&key).map(|s| s.buf);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_fragment(sn: SequenceNumber, sample_size: u32, ts_ns: u64) -> FragmentPiece<'static> {
        FragmentPiece {
            writer: Guid::default(),
            sn,
            fragment_starting_num: 1,
            fragment_size: 1024,
            sample_size,
            data: &[0; 1024],
            ts_ns,
        }
    }

    #[test]
    fn samples_that_never_complete_hold_at_most_max_bytes() {
        let limits = DiscoveryFragLimits::default();
        let mut r = DiscoveryReassembly::new(limits);
        for sn in 1..=100 {
            assert!(r.push(first_fragment(sn, 1 << 20, sn as u64)).is_none());
            assert!(r.bytes_held <= limits.max_bytes);
        }
        let s = r.stats();
        // 1 MiB + 1,024 flags each: 15 fit in 16 MiB.
        assert_eq!(s.in_progress, 15);
        assert_eq!(s.evicted, 100 - 15);
        // A small sample still fits beside them and completes.
        let mut second = first_fragment(101, 2048, 101);
        second.fragment_starting_num = 2;
        assert!(r.push(first_fragment(101, 2048, 101)).is_none());
        assert_eq!(r.push(second).map(|b| b.len()), Some(2048));
        assert_eq!(r.stats().evicted, 100 - 15);
        assert_eq!(r.stats().in_progress, 15);
    }
}
