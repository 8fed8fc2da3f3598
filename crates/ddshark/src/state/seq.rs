//! Per-writer sequence-number bookkeeping: which samples were seen, repeated,
//! requested by readers, declared irrelevant by a GAP, or never arrived.
//!
//! Definitions (capture time only):
//! - a *sample* is a (writer GUID, SN) seen in DATA or DATA_FRAG;
//! - a sample is *retransmitted* when it is seen again towards a destination that
//!   already got it, or after a reader requested it (ACKNACK / NACK_FRAG); it is
//!   *repaired* when that request came first. A copy towards a new destination that
//!   nobody asked for is *fan-out* (one writer, several unicast readers);
//! - a *lost* sample is an SN hole between SNs seen that no DATA fills and no GAP
//!   declares irrelevant, once the hole is final: it left the tracking window
//!   (`window` SNs), it is older than `final_after_ns`, the writer's HEARTBEAT no
//!   longer offers it, or the input ended;
//! - an *incomplete* sample is a DATA_FRAG sample some of whose fragments never came.

mod frag;

use std::collections::VecDeque;

use rtps_dissect::{FragmentRange, SequenceNumber};

use frag::FragSample;
pub(crate) use frag::FragUsage;

/// Bounds of one writer's tracker.
#[derive(Debug, Clone, Copy)]
pub struct SeqConfig {
    /// Most SNs tracked at once per writer (holes and seen samples).
    pub(crate) window: usize,
    /// A hole older than this (capture time) is final.
    pub(crate) final_after_ns: u64,
    /// Fragmented samples tracked at once per writer.
    pub(crate) max_frag_samples: usize,
    /// Most fragments tracked per sample (larger samples are tracked up to this).
    pub(crate) max_fragments: u32,
    /// Recently finalized SNs remembered per writer: lost ones to undo a late fill, seen
    /// ones to judge a copy that comes just after its SN left the window.
    pub(crate) recent_finalized: usize,
}

impl Default for SeqConfig {
    fn default() -> Self {
        Self {
            window: 1024,
            final_after_ns: 10_000_000_000,
            max_frag_samples: 16,
            max_fragments: 65_536,
            recent_finalized: 64,
        }
    }
}

const SEEN: u8 = 1;
const GAP: u8 = 2;
const REQUESTED: u8 = 4;
const RETRANS: u8 = 8;
const FANOUT: u8 = 16;
const FRAGMENTED: u8 = 64;
const COMPLETE: u8 = 128;

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    flags: u8,
    dst: u32,
    ts_ns: u64,
}

impl Slot {
    fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
}

/// What one DATA/DATA_FRAG submessage turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Observed {
    /// First sight of this (writer, SN).
    NewSample {
        /// It fills a hole already counted as lost.
        late_fill: bool,
    },
    /// More fragments of a sample already counted.
    MoreFragments,
    /// A copy of something already seen.
    Repeat {
        /// This repeat made the sample count as retransmitted.
        retransmitted: bool,
        /// ... and a reader had asked for it.
        repaired: bool,
        /// This copy made the sample count as fanned out.
        fanout: bool,
        /// The sample had counted as fan-out and now counts as retransmitted instead.
        was_fanout: bool,
    },
    /// SN ≤ 0: not a valid sample.
    Invalid,
}

/// Samples whose fate became final.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Finalized {
    pub(crate) lost: u64,
    pub(crate) incomplete: u64,
    /// SNs a GAP declared irrelevant that left the window.
    pub(crate) irrelevant: u64,
    /// SN jumps too large to be losses (counted apart).
    pub(crate) jumps: u64,
}

/// Longest run of missing SNs counted as lost; longer jumps are counted apart.
const MAX_COUNTED_RUN: u64 = 1 << 20;

impl Finalized {
    fn add(&mut self, o: Finalized) {
        self.lost = self.lost.saturating_add(o.lost);
        self.incomplete = self.incomplete.saturating_add(o.incomplete);
        self.irrelevant = self.irrelevant.saturating_add(o.irrelevant);
        self.jumps = self.jumps.saturating_add(o.jumps);
    }
}

#[derive(Debug, Clone, Default)]
pub(crate) struct SeqTracker {
    started: bool,
    finalized_any: bool,
    /// SN of `slots[0]`.
    low: SequenceNumber,
    slots: VecDeque<Slot>,
    frags: Vec<FragSample>,
    /// Recently finalized lost SNs, ascending (`low` only moves up), so searched by bisection.
    recent_lost: VecDeque<SequenceNumber>,
    /// Recently finalized samples that were seen, with their destination and flags: a
    /// copy that arrives just after its SN left the window (a HEARTBEAT moved past it
    /// while the fan-out to other readers was still going on) is judged like one inside.
    /// Ascending by SN, like `recent_lost`.
    recent_seen: VecDeque<(SequenceNumber, Slot)>,
    /// Last SN repeated below the window (to count an old repeat once per sample).
    last_old_repeat: Option<SequenceNumber>,
    /// Fragmented samples dropped from tracking because too many were in progress (this
    /// writer's or, through `drop_frag`, all writers' together).
    pub(crate) frag_evicted: u64,
    /// What `frags` holds.
    frag_usage: FragUsage,
    /// Fragmented samples tracked so far (the next one's `birth`).
    frags_born: u64,
    /// Highest SN seen in DATA/DATA_FRAG.
    pub(crate) highest_seen: Option<SequenceNumber>,
}

/// Another copy of a sample already seen (`slot`) towards `dst`: a retransmission when
/// that destination had it or a reader asked for it, else fan-out; each sample counts
/// once as either, a retransmission superseding fan-out.
fn repeat(slot: &mut Slot, dst: u32) -> Observed {
    let same_dst = slot.dst == dst;
    let requested = slot.has(REQUESTED);
    let mut retransmitted = false;
    let mut fanout = false;
    let mut was_fanout = false;
    if (same_dst || requested) && !slot.has(RETRANS) {
        was_fanout = slot.has(FANOUT);
        slot.flags = (slot.flags | RETRANS) & !FANOUT;
        retransmitted = true;
    } else if !same_dst && !requested && !slot.has(RETRANS | FANOUT) {
        slot.flags |= FANOUT;
        fanout = true;
    }
    Observed::Repeat {
        retransmitted,
        repaired: retransmitted && requested,
        fanout,
        was_fanout,
    }
}

/// Appends `item` to a ring of at most `cap` recent items (none when `cap` is 0).
fn remember<T>(ring: &mut VecDeque<T>, item: T, cap: usize) {
    if cap == 0 {
        return;
    }
    if ring.len() >= cap {
        ring.pop_front();
    }
    ring.push_back(item);
}

impl SeqTracker {
    fn high(&self) -> SequenceNumber {
        let len = i64::try_from(self.slots.len()).unwrap_or(i64::MAX);
        self.low.saturating_add(len).saturating_sub(1)
    }

    fn index(&self, sn: SequenceNumber) -> Option<usize> {
        if sn < self.low {
            return None;
        }
        let i = usize::try_from(sn.saturating_sub(self.low)).ok()?;
        (i < self.slots.len()).then_some(i)
    }

    /// Pop the oldest slot and account for it.
    fn pop_front(&mut self, cfg: &SeqConfig) -> Finalized {
        let mut f = Finalized::default();
        let sn = self.low;
        if let Some(slot) = self.slots.pop_front() {
            self.finalized_any = true;
            if slot.has(SEEN) {
                if slot.has(FRAGMENTED) && !slot.has(COMPLETE) {
                    f.incomplete = 1;
                }
                remember(&mut self.recent_seen, (sn, slot), cfg.recent_finalized);
            } else if slot.has(GAP) {
                f.irrelevant = 1;
            } else {
                f.lost = 1;
                remember(&mut self.recent_lost, sn, cfg.recent_finalized);
            }
            if slot.has(FRAGMENTED) {
                self.remove_frags(|s| s.sn == sn);
            }
            self.low = self.low.saturating_add(1);
        }
        f
    }

    /// Finalize every slot below `sn`.
    fn finalize_below(&mut self, sn: SequenceNumber, cfg: &SeqConfig) -> Finalized {
        let mut f = Finalized::default();
        while self.low < sn && !self.slots.is_empty() {
            f.add(self.pop_front(cfg));
        }
        f
    }

    fn finalize_all(&mut self, cfg: &SeqConfig) -> Finalized {
        let mut f = Finalized::default();
        while !self.slots.is_empty() {
            f.add(self.pop_front(cfg));
        }
        f
    }

    /// Make `sn` a tracked slot (when it is at or above `low`), adding holes.
    fn extend_to(&mut self, sn: SequenceNumber, ts_ns: u64, cfg: &SeqConfig) -> Finalized {
        let mut f = Finalized::default();
        // With no slot left, `low` is the next SN expected.
        let high = if self.slots.is_empty() {
            self.low.saturating_sub(1)
        } else {
            self.high()
        };
        if sn <= high {
            return f;
        }
        let distance = u64::try_from(sn.saturating_sub(high)).unwrap_or(u64::MAX);
        if distance > cfg.window as u64 {
            f.add(self.finalize_all(cfg));
            // A run of holes too long to track: lost when plausible, else a jump.
            let missing = distance.saturating_sub(1);
            if missing <= MAX_COUNTED_RUN {
                f.lost = f.lost.saturating_add(missing);
            } else {
                f.jumps = f.jumps.saturating_add(1);
            }
            self.low = sn;
            self.slots.push_back(Slot {
                ts_ns,
                ..Slot::default()
            });
            return f;
        }
        let mut next = high;
        while next < sn {
            next = next.saturating_add(1);
            self.slots.push_back(Slot {
                ts_ns,
                ..Slot::default()
            });
        }
        while self.slots.len() > cfg.window.max(1) {
            f.add(self.pop_front(cfg));
        }
        f
    }

    /// A DATA (`frag` = None) or DATA_FRAG of `sn` towards destination `dst`.
    pub(crate) fn observe(
        &mut self,
        sn: SequenceNumber,
        dst: u32,
        ts_ns: u64,
        frag: Option<FragmentRange>,
        cfg: &SeqConfig,
    ) -> (Observed, Finalized) {
        let mut fin = Finalized::default();
        if sn <= 0 {
            return (Observed::Invalid, fin);
        }
        if let Some(fi) = frag {
            // A fragment past the last one of its sample is not part of any sample.
            if fi.fragment_size > 0
                && fi.start > fi.sample_size.div_ceil(u32::from(fi.fragment_size))
            {
                return (Observed::Invalid, fin);
            }
        }
        self.highest_seen = Some(self.highest_seen.map_or(sn, |h| h.max(sn)));
        if !self.started {
            self.started = true;
            self.low = sn;
        }
        let next_sn = i64::try_from(self.slots.len())
            .ok()
            .and_then(|len| self.low.checked_add(len));
        if frag.is_none() && cfg.window > 0 && next_sn == Some(sn) {
            // The common case, a whole sample with the writer's next SN: what `extend_to`
            // and the slot update below do, without their search for the slot.
            self.slots.push_back(Slot {
                flags: SEEN | COMPLETE,
                dst,
                ts_ns,
            });
            while self.slots.len() > cfg.window {
                fin.add(self.pop_front(cfg));
            }
            return (Observed::NewSample { late_fill: false }, fin);
        }
        if sn < self.low {
            let high = self.high();
            let span = u64::try_from(high.saturating_sub(sn)).unwrap_or(u64::MAX);
            if !self.finalized_any && span < cfg.window as u64 {
                // Still at the start of tracking: the sample predates what we saw first.
                while self.low > sn {
                    self.low = self.low.saturating_sub(1);
                    self.slots.push_front(Slot {
                        flags: 0,
                        dst: 0,
                        ts_ns,
                    });
                }
            } else if let Ok(pos) = self.recent_lost.binary_search(&sn) {
                self.recent_lost.remove(pos);
                return (Observed::NewSample { late_fill: true }, fin);
            } else if let Some((_, slot)) = self
                .recent_seen
                .binary_search_by_key(&sn, |(s, _)| *s)
                .ok()
                .and_then(|pos| self.recent_seen.get_mut(pos))
            {
                return (repeat(slot, dst), fin);
            } else {
                let first = self.last_old_repeat != Some(sn);
                self.last_old_repeat = Some(sn);
                return (
                    Observed::Repeat {
                        retransmitted: first,
                        repaired: false,
                        fanout: false,
                        was_fanout: false,
                    },
                    fin,
                );
            }
        }
        fin.add(self.extend_to(sn, ts_ns, cfg));
        let Some(i) = self.index(sn) else {
            return (Observed::Invalid, fin);
        };
        let Some(slot) = self.slots.get(i).copied() else {
            return (Observed::Invalid, fin);
        };
        let mut new_slot = slot;
        let observed = if !slot.has(SEEN) {
            new_slot.flags = slot.flags | SEEN;
            new_slot.dst = dst;
            new_slot.ts_ns = ts_ns;
            match frag {
                None => new_slot.flags |= COMPLETE,
                Some(fi) => {
                    new_slot.flags |= FRAGMENTED;
                    if self.mark_frags(sn, fi, cfg).0 {
                        new_slot.flags |= COMPLETE;
                    }
                }
            }
            Observed::NewSample { late_fill: false }
        } else {
            let mut more = false;
            if let (Some(fi), true) = (frag, slot.has(FRAGMENTED) && !slot.has(COMPLETE)) {
                let (complete, new, _old) = self.mark_frags(sn, fi, cfg);
                if complete {
                    new_slot.flags |= COMPLETE;
                }
                more = new > 0;
            }
            if more {
                Observed::MoreFragments
            } else {
                repeat(&mut new_slot, dst)
            }
        };
        if let Some(s) = self.slots.get_mut(i) {
            *s = new_slot;
        }
        (observed, fin)
    }

    /// SNs a reader asked for (ACKNACK bitmap, NACK_FRAG).
    pub(crate) fn requested(&mut self, sn: SequenceNumber) {
        if let Some(i) = self.index(sn) {
            if let Some(s) = self.slots.get_mut(i) {
                s.flags |= REQUESTED;
            }
        }
    }

    /// GAP: `[start, end]` are irrelevant (plus the listed SNs, passed one by one).
    pub(crate) fn gap_range(
        &mut self,
        start: SequenceNumber,
        end: SequenceNumber,
        ts_ns: u64,
        cfg: &SeqConfig,
    ) -> Finalized {
        let mut fin = Finalized::default();
        if !self.started || end < start || end < self.low {
            return fin;
        }
        if end > self.high() {
            let distance = u64::try_from(end.saturating_sub(self.high())).unwrap_or(u64::MAX);
            if distance > cfg.window as u64 {
                // Everything up to `end` is irrelevant: holes in the window are not lost.
                for s in self.slots.iter_mut() {
                    if !s.has(SEEN) {
                        s.flags |= GAP;
                    }
                }
                fin.add(self.finalize_all(cfg));
                self.low = end.saturating_add(1);
                return fin;
            }
            fin.add(self.extend_to(end, ts_ns, cfg));
        }
        let from = start.max(self.low);
        let mut sn = from;
        while sn <= end {
            match self.index(sn).and_then(|i| self.slots.get_mut(i)) {
                Some(s) => s.flags |= GAP,
                None => break,
            }
            match sn.checked_add(1) {
                Some(n) => sn = n,
                None => break,
            }
        }
        fin
    }

    /// HEARTBEAT: the writer offers `[first, last]`.
    pub(crate) fn heartbeat(
        &mut self,
        first: SequenceNumber,
        last: SequenceNumber,
        ts_ns: u64,
        cfg: &SeqConfig,
    ) -> Finalized {
        let mut fin = Finalized::default();
        // The spec requires first ≥ 1 and last ≥ first − 1; anything else is ignored.
        if !self.started || first <= 0 || last < first.saturating_sub(1) {
            return fin;
        }
        // What the writer no longer offers can never be repaired.
        fin.add(self.finalize_below(first, cfg));
        if !self.slots.is_empty() && last > self.high() {
            let distance = u64::try_from(last.saturating_sub(self.high())).unwrap_or(u64::MAX);
            if distance <= cfg.window as u64 {
                fin.add(self.extend_to(last, ts_ns, cfg));
            }
        }
        fin
    }

    /// Finalize holes older than the timeout (and forget old seen samples).
    pub(crate) fn expire(&mut self, now_ns: u64, cfg: &SeqConfig) -> Finalized {
        let mut fin = Finalized::default();
        while let Some(front) = self.slots.front() {
            if front.ts_ns.saturating_add(cfg.final_after_ns) <= now_ns {
                fin.add(self.pop_front(cfg));
            } else {
                break;
            }
        }
        fin
    }

    /// End of input: every open hole is final.
    pub fn finish(&mut self, cfg: &SeqConfig) -> Finalized {
        self.finalize_all(cfg)
    }

    /// Holes currently open (not yet final).
    pub(crate) fn open_holes(&self) -> u64 {
        self.slots.iter().filter(|s| !s.has(SEEN | GAP)).count() as u64
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests;
