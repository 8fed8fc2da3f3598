//! IP fragment tracking and reassembly, bounded in entries, bytes and time.
//!
//! Every fragmented datagram is tracked by (src, dst, protocol, IP id) with the
//! capture time and frame number of its first and of its last fragment. Time is
//! the capture's: an entry idles out when the capture clock moves past it.
//!
//! Eviction is O(1) amortised: every fragment appends (touch number, key) to a
//! queue in capture order, and an entry's live queue item is the one carrying its
//! latest touch number; the least recently touched entry is the first live item at
//! the front. Stale items are dropped as they reach the front, and the queue is
//! compacted when they outnumber the live entries. A completed datagram's buffer
//! is handed out as is (fragment bytes are copied once, into it).

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

use crate::net::{FragmentInfo, IpPacket};
use crate::types::KeyHasher;

/// Largest datagram we reassemble (IPv4 maximum; IPv6 jumbograms are not reassembled).
pub const MAX_DATAGRAM: usize = 65_535;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FragmentKey {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub protocol: u8,
    pub id: u32,
}

/// Bounds of the tracker.
#[derive(Debug, Clone, Copy)]
pub struct FragmentLimits {
    pub max_datagrams: usize,
    pub max_bytes: usize,
    /// Capture-time nanoseconds after the last fragment before an entry is given up.
    pub idle_timeout_ns: u64,
}

impl Default for FragmentLimits {
    fn default() -> Self {
        Self {
            max_datagrams: 4096,
            max_bytes: 64 << 20,
            idle_timeout_ns: 30_000_000_000,
        }
    }
}

/// Timing and size of a datagram made of IP fragments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FragmentSpan {
    pub ts_first_ns: u64,
    pub frame_first: u64,
    pub ts_last_ns: u64,
    pub frame_last: u64,
    pub fragments: u32,
    /// Fragments that repeated bytes already held.
    pub duplicates: u32,
    pub bytes: usize,
    /// PCP/VLAN id and Ethernet source of the earliest fragment's frame.
    pub pcp: Option<u8>,
    pub vlan_id: Option<u16>,
    pub src_mac: Option<[u8; 6]>,
}

/// A datagram given up before it was whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IncompleteDatagram {
    pub key: FragmentKey,
    pub span: FragmentSpan,
    /// Total length, if the last fragment (MF=0) was seen.
    pub total_len: Option<usize>,
    pub reason: EvictReason,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvictReason {
    IdleTimeout,
    Capacity,
    /// The fragments do not fit together (overlapping end, beyond 64 KiB).
    Inconsistent,
}

/// Counters that make the tracker's drops visible.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct FragmentStats {
    pub fragments: u64,
    pub duplicate_fragments: u64,
    pub reassembled: u64,
    pub evicted_idle: u64,
    pub evicted_capacity: u64,
    pub inconsistent: u64,
    pub in_progress: u64,
    pub bytes_held: u64,
}

struct Entry {
    /// Touch number of this entry's live item in the eviction queue.
    touched: u64,
    span: FragmentSpan,
    /// Reassembly buffer, as long as the furthest byte seen.
    buf: Vec<u8>,
    /// Covered byte ranges, sorted and merged.
    covered: Vec<(usize, usize)>,
    total_len: Option<usize>,
}

impl Entry {
    /// Record `[start, end)` as held; true when it was held already (a duplicate).
    /// The ranges stay sorted and merged in place (no allocation once grown).
    fn add_range(&mut self, start: usize, end: usize) -> bool {
        let duplicate = self.covered.iter().any(|&(s, e)| s <= start && end <= e);
        self.covered.push((start, end));
        self.covered.sort_unstable();
        let mut kept = 0usize;
        for i in 0..self.covered.len() {
            let Some(&(s, e)) = self.covered.get(i) else {
                break;
            };
            match kept.checked_sub(1).and_then(|k| self.covered.get_mut(k)) {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => {
                    if let Some(slot) = self.covered.get_mut(kept) {
                        *slot = (s, e);
                    }
                    kept = kept.saturating_add(1);
                }
            }
        }
        self.covered.truncate(kept);
        duplicate
    }

    fn complete(&self) -> bool {
        match (self.total_len, self.covered.as_slice()) {
            (Some(total), [(0, end)]) => *end >= total,
            _ => false,
        }
    }
}

/// What happened to one fragment.
pub enum FragmentResult {
    /// Held; the datagram is not whole yet.
    Pending,
    /// This fragment completed the datagram; the bytes are in [`FragmentTracker::completed`].
    Complete(FragmentSpan),
    /// This fragment made the datagram impossible; it was dropped.
    Dropped(IncompleteDatagram),
}

/// Frame-level facts the tracker records with a fragment.
#[derive(Debug, Clone, Copy)]
pub struct FragmentFrame {
    pub ts_ns: u64,
    pub frame: u64,
    pub pcp: Option<u8>,
    pub vlan_id: Option<u16>,
    pub src_mac: Option<[u8; 6]>,
}

#[derive(Default)]
pub struct FragmentTracker {
    limits: FragmentLimits,
    entries: HashMap<FragmentKey, Entry, KeyHasher>,
    /// (touch number, key) in capture order; see the module comment.
    queue: VecDeque<(u64, FragmentKey)>,
    touches: u64,
    bytes_held: usize,
    stats: FragmentStats,
    completed: Vec<u8>,
    /// The previous completed buffer, reused by the next new entry.
    spare: Vec<u8>,
    evicted: Vec<IncompleteDatagram>,
}

impl FragmentTracker {
    pub fn new(limits: FragmentLimits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    pub fn stats(&self) -> FragmentStats {
        FragmentStats {
            in_progress: self.entries.len() as u64,
            bytes_held: self.bytes_held as u64,
            ..self.stats
        }
    }

    /// The bytes of the datagram that the last `Complete` result announced.
    pub fn completed(&self) -> &[u8] {
        &self.completed
    }

    /// Datagrams given up since the last call (idle or capacity), for reporting.
    pub fn take_evicted(&mut self) -> Vec<IncompleteDatagram> {
        std::mem::take(&mut self.evicted)
    }

    /// Give up every datagram still incomplete (end of a capture).
    pub fn flush(&mut self) -> Vec<IncompleteDatagram> {
        while let Some((_, key)) = self.queue.pop_front() {
            self.evict(key, EvictReason::IdleTimeout);
        }
        self.take_evicted()
    }

    fn evict(&mut self, key: FragmentKey, reason: EvictReason) -> Option<IncompleteDatagram> {
        let entry = self.entries.remove(&key)?;
        self.bytes_held = self.bytes_held.saturating_sub(entry.buf.capacity());
        match reason {
            EvictReason::IdleTimeout => {
                self.stats.evicted_idle = self.stats.evicted_idle.saturating_add(1)
            }
            EvictReason::Capacity => {
                self.stats.evicted_capacity = self.stats.evicted_capacity.saturating_add(1)
            }
            EvictReason::Inconsistent => {
                self.stats.inconsistent = self.stats.inconsistent.saturating_add(1)
            }
        }
        let gone = IncompleteDatagram {
            key,
            span: entry.span,
            total_len: entry.total_len,
            reason,
        };
        if reason != EvictReason::Inconsistent && self.evicted.len() < self.limits.max_datagrams {
            self.evicted.push(gone);
        }
        Some(gone)
    }

    /// The least recently touched entry, dropping stale queue items on the way.
    fn oldest(&mut self) -> Option<(FragmentKey, u64)> {
        while let Some(&(touch, key)) = self.queue.front() {
            match self.entries.get(&key) {
                Some(e) if e.touched == touch => return Some((key, e.span.ts_last_ns)),
                _ => {
                    self.queue.pop_front();
                }
            }
        }
        None
    }

    /// Give up entries idle for longer than the timeout, least recently touched
    /// first. Capture time may step back a little, so an entry behind a younger
    /// one waits until that one goes (or until capacity or the end of the capture).
    fn sweep(&mut self, now_ns: u64) {
        while let Some((key, ts_last)) = self.oldest() {
            if now_ns.saturating_sub(ts_last) <= self.limits.idle_timeout_ns {
                break;
            }
            self.evict(key, EvictReason::IdleTimeout);
        }
    }

    /// Make room for `extra` more bytes and one more entry, least recently touched first.
    fn make_room(&mut self, extra: usize) {
        while !self.entries.is_empty()
            && (self.entries.len() >= self.limits.max_datagrams
                || self.bytes_held.saturating_add(extra) > self.limits.max_bytes)
        {
            match self.oldest() {
                Some((key, _)) => {
                    self.evict(key, EvictReason::Capacity);
                }
                None => break,
            }
        }
    }

    /// Note that `key` was touched now; keeps the queue at most a few times the
    /// number of live entries.
    fn touch(&mut self, key: FragmentKey) -> u64 {
        self.touches = self.touches.wrapping_add(1);
        let touch = self.touches;
        self.queue.push_back((touch, key));
        let live = self.entries.len().saturating_add(1);
        if self.queue.len() > live.saturating_mul(4).max(64) {
            let entries = &self.entries;
            self.queue.retain(|(t, k)| {
                // `key` itself is live with `touch` even if not yet stored.
                (*t == touch && *k == key) || entries.get(k).is_some_and(|e| e.touched == *t)
            });
        }
        touch
    }

    /// Add one fragment of `packet` captured in `frame`.
    pub fn push(
        &mut self,
        packet: &IpPacket<'_>,
        frag: FragmentInfo,
        frame: FragmentFrame,
    ) -> FragmentResult {
        self.stats.fragments = self.stats.fragments.saturating_add(1);
        self.sweep(frame.ts_ns);
        let key = FragmentKey {
            src: packet.src,
            dst: packet.dst,
            protocol: packet.protocol,
            id: frag.id,
        };
        let start = frag.offset;
        let end = start.saturating_add(packet.payload.len());
        if end > MAX_DATAGRAM {
            let span = FragmentSpan {
                ts_first_ns: frame.ts_ns,
                frame_first: frame.frame,
                ts_last_ns: frame.ts_ns,
                frame_last: frame.frame,
                fragments: 1,
                ..FragmentSpan::default()
            };
            let dropped =
                self.evict(key, EvictReason::Inconsistent)
                    .unwrap_or(IncompleteDatagram {
                        key,
                        span,
                        total_len: None,
                        reason: EvictReason::Inconsistent,
                    });
            return FragmentResult::Dropped(dropped);
        }
        if !self.entries.contains_key(&key) {
            self.make_room(end);
            let mut buf = std::mem::take(&mut self.spare);
            buf.clear();
            self.bytes_held = self.bytes_held.saturating_add(buf.capacity());
            self.entries.insert(
                key,
                Entry {
                    touched: 0,
                    span: FragmentSpan {
                        ts_first_ns: frame.ts_ns,
                        frame_first: frame.frame,
                        ts_last_ns: frame.ts_ns,
                        frame_last: frame.frame,
                        pcp: frame.pcp,
                        vlan_id: frame.vlan_id,
                        src_mac: frame.src_mac,
                        ..FragmentSpan::default()
                    },
                    buf,
                    covered: Vec::new(),
                    total_len: None,
                },
            );
        }
        let touch = self.touch(key);
        let Some(entry) = self.entries.get_mut(&key) else {
            return FragmentResult::Pending;
        };
        entry.touched = touch;
        let span = &mut entry.span;
        if frame.ts_ns < span.ts_first_ns {
            span.ts_first_ns = frame.ts_ns;
            span.frame_first = frame.frame;
            span.pcp = frame.pcp;
            span.vlan_id = frame.vlan_id;
            span.src_mac = frame.src_mac;
        }
        if frame.ts_ns >= span.ts_last_ns {
            span.ts_last_ns = frame.ts_ns;
            span.frame_last = frame.frame;
        }
        span.fragments = span.fragments.saturating_add(1);
        span.bytes = span.bytes.saturating_add(packet.payload.len());
        let mut inconsistent = false;
        if !frag.more_fragments {
            match entry.total_len {
                Some(t) if t != end => inconsistent = true,
                _ => entry.total_len = Some(end),
            }
        }
        if entry.total_len.is_some_and(|t| end > t) {
            inconsistent = true;
        }
        if inconsistent {
            let dropped = self.evict(key, EvictReason::Inconsistent);
            return match dropped {
                Some(d) => FragmentResult::Dropped(d),
                None => FragmentResult::Pending,
            };
        }
        let before = entry.buf.capacity();
        if entry.buf.len() < end {
            entry.buf.resize(end, 0);
        }
        if let Some(dst) = entry.buf.get_mut(start..end) {
            dst.copy_from_slice(packet.payload);
        }
        if entry.add_range(start, end) {
            entry.span.duplicates = entry.span.duplicates.saturating_add(1);
            self.stats.duplicate_fragments = self.stats.duplicate_fragments.saturating_add(1);
        }
        let grown = entry.buf.capacity().saturating_sub(before);
        let complete = entry.complete();
        self.bytes_held = self.bytes_held.saturating_add(grown);
        if !complete {
            return FragmentResult::Pending;
        }
        let Some(entry) = self.entries.remove(&key) else {
            return FragmentResult::Pending;
        };
        self.bytes_held = self.bytes_held.saturating_sub(entry.buf.capacity());
        self.stats.reassembled = self.stats.reassembled.saturating_add(1);
        let total = entry.total_len.unwrap_or(entry.buf.len());
        // The entry's buffer becomes the completed datagram; the previous one is
        // kept for the next entry, so steady reassembly allocates nothing.
        self.spare = std::mem::replace(&mut self.completed, entry.buf);
        self.completed.truncate(total);
        FragmentResult::Complete(entry.span)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn pkt(payload: &[u8]) -> IpPacket<'_> {
        IpPacket {
            src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            protocol: 17,
            fragment: None,
            payload,
            truncated: false,
        }
    }

    fn fr(ts: u64, n: u64) -> FragmentFrame {
        FragmentFrame {
            ts_ns: ts,
            frame: n,
            pcp: None,
            vlan_id: None,
            src_mac: None,
        }
    }

    fn fi(offset: usize, mf: bool) -> FragmentInfo {
        FragmentInfo {
            id: 9,
            offset,
            more_fragments: mf,
        }
    }

    #[test]
    fn out_of_order_with_duplicate() {
        let mut t = FragmentTracker::new(FragmentLimits::default());
        let a = [1u8; 16];
        let b = [2u8; 16];
        let c = [3u8; 4];
        assert!(matches!(
            t.push(&pkt(&c), fi(32, false), fr(30, 3)),
            FragmentResult::Pending
        ));
        assert!(matches!(
            t.push(&pkt(&a), fi(0, true), fr(10, 1)),
            FragmentResult::Pending
        ));
        assert!(matches!(
            t.push(&pkt(&a), fi(0, true), fr(15, 2)),
            FragmentResult::Pending
        ));
        match t.push(&pkt(&b), fi(16, true), fr(40, 4)) {
            FragmentResult::Complete(span) => {
                assert_eq!(span.ts_first_ns, 10);
                assert_eq!(span.frame_first, 1);
                assert_eq!(span.ts_last_ns, 40);
                assert_eq!(span.frame_last, 4);
                assert_eq!(span.fragments, 4);
                assert_eq!(span.duplicates, 1);
            }
            _ => panic!("expected complete"),
        }
        assert_eq!(t.completed().len(), 36);
        assert_eq!(&t.completed()[16..32], &b);
        assert_eq!(t.stats().in_progress, 0);
        assert_eq!(t.stats().bytes_held, 0);
    }

    #[test]
    fn idle_timeout_evicts_and_counts() {
        let limits = FragmentLimits {
            idle_timeout_ns: 100,
            ..FragmentLimits::default()
        };
        let mut t = FragmentTracker::new(limits);
        let a = [0u8; 8];
        t.push(&pkt(&a), fi(0, true), fr(0, 1));
        let mut other = fi(0, true);
        other.id = 10;
        t.push(&pkt(&a), other, fr(1000, 2));
        assert_eq!(t.stats().evicted_idle, 1);
        assert_eq!(t.take_evicted().len(), 1);
        assert_eq!(t.stats().in_progress, 1);
    }

    #[test]
    fn capacity_evicts_oldest() {
        let limits = FragmentLimits {
            max_datagrams: 2,
            ..FragmentLimits::default()
        };
        let mut t = FragmentTracker::new(limits);
        let a = [0u8; 8];
        for id in 0..5u32 {
            t.push(
                &pkt(&a),
                FragmentInfo {
                    id,
                    offset: 0,
                    more_fragments: true,
                },
                fr(u64::from(id), 1),
            );
        }
        assert_eq!(t.stats().in_progress, 2);
        assert_eq!(t.stats().evicted_capacity, 3);
    }

    #[test]
    fn capacity_evicts_least_recently_touched_and_queue_stays_bounded() {
        let limits = FragmentLimits {
            max_datagrams: 3,
            ..FragmentLimits::default()
        };
        let mut t = FragmentTracker::new(limits);
        let a = [0u8; 8];
        let frag = |id| FragmentInfo {
            id,
            offset: 0,
            more_fragments: true,
        };
        t.push(&pkt(&a), frag(1), fr(1, 1));
        t.push(&pkt(&a), frag(2), fr(2, 2));
        t.push(&pkt(&a), frag(3), fr(3, 3));
        // id 1 touched again: id 2 is now the least recently touched.
        t.push(&pkt(&a), frag(1), fr(4, 4));
        t.push(&pkt(&a), frag(4), fr(5, 5));
        let gone = t.take_evicted();
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].key.id, 2);
        assert_eq!(gone[0].reason, EvictReason::Capacity);
        // Many touches of live entries: the queue is compacted, not grown.
        for n in 0..10_000u64 {
            t.push(&pkt(&a), frag(1), fr(10 + n, 10 + n));
        }
        assert!(t.queue.len() <= 64, "queue {}", t.queue.len());
        assert_eq!(t.stats().in_progress, 3);
        assert_eq!(t.stats().evicted_capacity, 1);
    }

    #[test]
    fn completed_buffer_is_reused() {
        let mut t = FragmentTracker::new(FragmentLimits::default());
        let a = [7u8; 16];
        for round in 0..3u32 {
            let f0 = FragmentInfo {
                id: round,
                offset: 0,
                more_fragments: true,
            };
            let f1 = FragmentInfo {
                id: round,
                offset: 16,
                more_fragments: false,
            };
            t.push(&pkt(&a), f0, fr(u64::from(round) * 2, 1));
            assert!(matches!(
                t.push(&pkt(&a[..4]), f1, fr(u64::from(round) * 2 + 1, 2)),
                FragmentResult::Complete(_)
            ));
            assert_eq!(t.completed().len(), 20);
            assert_eq!(t.stats().bytes_held, 0);
        }
        assert!(t.spare.capacity() >= 20);
    }

    #[test]
    fn oversized_fragment_dropped() {
        let mut t = FragmentTracker::new(FragmentLimits::default());
        let a = [0u8; 8];
        assert!(matches!(
            t.push(&pkt(&a), fi(65_530, false), fr(0, 1)),
            FragmentResult::Dropped(_)
        ));
    }
}
