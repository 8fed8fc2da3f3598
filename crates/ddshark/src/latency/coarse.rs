//! A coarse clock alignment that does not need the clocks to be close: the same (writer
//! GUID, SN) is the same sample in every capture, whatever the clocks read, so the median of
//! its capture-time differences between two captures is their clock offset give or take the
//! delays (milliseconds). The join pairs samples only within `--window` of each other; with
//! this first guess, clocks seconds or hours apart are paired, and the fine estimate
//! (latency_core's NTP bound) follows as for clocks close together.
//!
//! Memory is bounded: each capture keeps a sample of its keys chosen by a hash of the key
//! (the same choice in every capture, so the samples of two captures meet), thinned by
//! halves when full. Two captures' samples share the keys both saw that the thinner sample
//! still holds.

use std::collections::HashMap;

use rtps_dissect::{Guid, SequenceNumber};

/// Most keys one capture's sample holds (~40 B each: a few MB per capture).
const MAX_KEYS: usize = 1 << 16;

/// A bounded, hash-chosen sample of one capture's keys with their first capture time.
#[derive(Debug, Default)]
pub(super) struct KeySketch {
    /// Keys whose hash has at least `level` trailing zero bits (1 in 2^level of all keys).
    level: u32,
    first_seen: HashMap<(Guid, SequenceNumber), i64>,
    /// Keys left out or dropped by the thinning (the bound at work).
    pub(super) thinned: u64,
}

/// A key's hash: the same in every capture and every run (no random seed).
fn key_hash(writer: &Guid, sn: SequenceNumber) -> u64 {
    let mut h = 0x9e37_79b9_7f4a_7c15u64;
    let words = writer
        .prefix
        .0
        .chunks(4)
        .chain(std::iter::once(&writer.entity.0[..]))
        .map(|c| c.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
        .chain(std::iter::once(sn as u64));
    for w in words {
        h = splitmix(h ^ w);
    }
    h
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl KeySketch {
    fn keeps(level: u32, h: u64) -> bool {
        h.trailing_zeros() >= level
    }

    /// This capture saw sample (`writer`, `sn`) at `ts` (ns, on its own clock as read).
    pub(super) fn saw(&mut self, writer: &Guid, sn: SequenceNumber, ts: i64) {
        if !Self::keeps(self.level, key_hash(writer, sn)) {
            self.thinned = self.thinned.saturating_add(1);
            return;
        }
        let t = self.first_seen.entry((*writer, sn)).or_insert(ts);
        *t = (*t).min(ts);
        while self.first_seen.len() > MAX_KEYS && self.level < 64 {
            self.level += 1;
            let level = self.level;
            let before = self.first_seen.len();
            self.first_seen
                .retain(|(w, s), _| Self::keeps(level, key_hash(w, *s)));
            self.thinned = self
                .thinned
                .saturating_add((before - self.first_seen.len()) as u64);
        }
    }

    /// The coarse offset of `other`'s clock against this one's (other minus this): the median
    /// difference of first capture times over the samples both sketches hold, with how many
    /// there were; None when they share none.
    pub(super) fn offset_of(&self, other: &KeySketch) -> Option<CoarseOffset> {
        let level = self.level.max(other.level);
        let (small, large, sign) = if self.first_seen.len() <= other.first_seen.len() {
            (self, other, 1i64)
        } else {
            (other, self, -1i64)
        };
        let mut diffs: Vec<i64> = small
            .first_seen
            .iter()
            .filter(|((w, s), _)| Self::keeps(level, key_hash(w, *s)))
            .filter_map(|(k, t)| {
                large
                    .first_seen
                    .get(k)
                    .map(|u| u.saturating_sub(*t).saturating_mul(sign))
            })
            .collect();
        if diffs.is_empty() {
            return None;
        }
        diffs.sort_unstable();
        let median = diffs.get(diffs.len() / 2).copied()?;
        Some(CoarseOffset {
            offset_ns: median,
            samples: diffs.len() as u64,
            sampled_one_in: 1u64.checked_shl(level).unwrap_or(u64::MAX),
        })
    }
}

/// A capture's clock against the first one's, from samples both saw (the delays included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoarseOffset {
    /// Median of (this capture's time − the first capture's) over the samples compared, ns.
    pub offset_ns: i64,
    /// Samples compared.
    pub samples: u64,
    /// The sketches held 1 in this many of the samples.
    pub sampled_one_in: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtps_dissect::{EntityId, GuidPrefix};

    fn writer(n: u8) -> Guid {
        Guid {
            prefix: GuidPrefix([n; 12]),
            entity: EntityId([0, 0, 1, 2]),
        }
    }

    #[test]
    fn the_median_difference_is_the_offset_whatever_the_distance() {
        let (mut a, mut b) = (KeySketch::default(), KeySketch::default());
        let hour = 3_600_000_000_000i64;
        for sn in 1..1000i64 {
            a.saw(&writer(1), sn, sn * 1_000_000);
            // B's clock an hour behind, 100 µs of delay one way.
            b.saw(&writer(1), sn, sn * 1_000_000 + 100_000 - hour);
        }
        let c = a.offset_of(&b);
        assert_eq!(c.map(|c| c.offset_ns), Some(100_000 - hour));
        assert_eq!(c.map(|c| c.samples), Some(999));
        assert_eq!(b.offset_of(&a).map(|c| c.offset_ns), Some(hour - 100_000));
    }

    #[test]
    fn a_long_capture_is_thinned_and_still_meets_a_short_one() {
        let (mut long, mut short) = (KeySketch::default(), KeySketch::default());
        let n = (MAX_KEYS as i64) * 8;
        for sn in 0..n {
            long.saw(&writer(2), sn, sn * 1_000);
        }
        for sn in n / 2..n / 2 + 20_000 {
            short.saw(&writer(2), sn, sn * 1_000 + 37_000_000_000);
        }
        assert!(long.first_seen.len() <= MAX_KEYS);
        assert!(long.thinned > 0);
        let c = long.offset_of(&short).expect("shared keys");
        assert_eq!(c.offset_ns, 37_000_000_000);
        assert!(c.samples > 100, "{c:?}");
        assert_eq!(c.sampled_one_in, 1 << long.level);
    }

    #[test]
    fn no_shared_key_is_no_offset() {
        let (mut a, mut b) = (KeySketch::default(), KeySketch::default());
        a.saw(&writer(1), 1, 0);
        b.saw(&writer(3), 1, 0);
        assert_eq!(a.offset_of(&b), None);
    }
}
