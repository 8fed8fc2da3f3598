//! The spans of what the join joined lately, so that one delivered again is taken once.
//!
//! OTLP delivery is at least once: an export whose answer was lost is sent again (a kill -9
//! of the join between its journal and its answer), and the routing tier sends a batch again
//! whole after a crash of its own (docs/fleet.md). A span of a sample that still waits is
//! dropped against its rows (`intake`); one of a sample already joined would start a new
//! sample and count again in its second's totals (`dds_latency_1s`, `dds_repairs`) and the
//! counters. So the join remembers the identity of every span of the samples and DATA_FRAGs
//! it joined in the last `max_wait_pushes` pushes (the backstop: a redelivery later than
//! that would come after an outage the join cannot bridge anyway, docs/fleet.md), at most
//! `max_joined` of them (beyond, the oldest are forgotten, counted `joined_evicted`; those
//! forgotten by age are counted `joined_expired`).
//!
//! A span's identity is 64 bits of a fixed-seed foldhash of what `same_span` compares (kind,
//! writer, SN, fragment, host, capture times, slot): 8 bytes each instead of the strings, and
//! a false match among a million remembered spans has odds of 1 in 10^13 per span. It is in
//! the state (`--state`): an acknowledged export may still come again after a restart of the
//! join (the routing tier resends a batch whole when it crashed before every shard took its
//! part), and the state at each push is what a restart goes on from; with it a probe hash, so
//! a build whose foldhash hashes otherwise starts with none remembered (counted
//! `joined_evicted`) instead of comparing unlike hashes.

use std::hash::BuildHasher;

use super::*;

/// The value hashed to tell whether a state's identities are this build's.
const PROBE: &str = "ddshark-join joined spans";

fn hasher() -> foldhash::quality::FixedState {
    foldhash::quality::FixedState::with_seed(0)
}

/// The identity of a SAMPLE span (`SampleRow::same_span`'s fields, with its writer and SN).
pub(super) fn sample_identity(writer: &str, sn: i64, row: &SampleRow) -> u64 {
    hasher().hash_one((0u8, writer, sn, &*row.host, row.start, row.end, &*row.slot))
}

/// The identity of a DATA_FRAG span (all of a [`FragRow`], with its writer, SN, fragment).
pub(super) fn frag_identity(writer: &str, sn: i64, fsn: i64, row: &FragRow) -> u64 {
    hasher().hash_one((
        1u8, writer, sn, fsn, &*row.host, row.start, row.end, &*row.slot,
    ))
}

/// The identities remembered, oldest first, with the push that joined them.
#[derive(Debug, Default)]
pub(super) struct Joined {
    known: HashSet<u64>,
    order: VecDeque<u64>,
    /// (tick, how many of `order` that push joined), oldest first.
    ticks: VecDeque<(u64, u64)>,
}

/// What [`Joined`] forgot since it was last asked.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct JoinedForgotten {
    pub(super) expired: u64,
    pub(super) evicted: u64,
}

/// [`Joined`] in the state: the identities oldest first, (tick, count) for each push.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct JoinedState {
    probe: u64,
    ticks: Vec<(u64, u64)>,
    order: Vec<u64>,
}

/// [`JoinedState`] borrowed (the same serde form).
#[derive(Serialize)]
pub(super) struct JoinedView<'a> {
    probe: u64,
    ticks: &'a VecDeque<(u64, u64)>,
    order: &'a VecDeque<u64>,
}

impl JoinedState {
    /// Identities in it.
    pub(super) fn len(&self) -> u64 {
        self.order.len() as u64
    }
}

impl Joined {
    pub(super) fn len(&self) -> usize {
        self.order.len()
    }

    pub(super) fn contains(&self, identity: u64) -> bool {
        self.known.contains(&identity)
    }

    /// Remembers `identity`, joined at `tick`; the oldest forgotten beyond `cap`.
    pub(super) fn insert(&mut self, identity: u64, tick: u64, cap: usize) -> JoinedForgotten {
        let mut forgotten = JoinedForgotten::default();
        if cap == 0 || !self.known.insert(identity) {
            return forgotten;
        }
        self.order.push_back(identity);
        match self.ticks.back_mut() {
            Some((t, n)) if *t == tick => *n = n.saturating_add(1),
            _ => self.ticks.push_back((tick, 1)),
        }
        while self.order.len() > cap {
            self.pop_oldest();
            forgotten.evicted = forgotten.evicted.saturating_add(1);
        }
        forgotten
    }

    /// Forgets what was joined before `oldest_kept` (a tick).
    pub(super) fn expire(&mut self, oldest_kept: u64) -> JoinedForgotten {
        let mut forgotten = JoinedForgotten::default();
        while self.ticks.front().is_some_and(|&(t, _)| t < oldest_kept) {
            if !self.pop_oldest() {
                break;
            }
            forgotten.expired = forgotten.expired.saturating_add(1);
        }
        forgotten
    }

    /// Forgets the oldest identity; false if there is none.
    fn pop_oldest(&mut self) -> bool {
        let Some(identity) = self.order.pop_front() else {
            self.ticks.clear();
            return false;
        };
        self.known.remove(&identity);
        if let Some((_, n)) = self.ticks.front_mut() {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.ticks.pop_front();
            }
        }
        true
    }

    pub(super) fn view(&self) -> JoinedView<'_> {
        JoinedView {
            probe: hasher().hash_one(PROBE),
            ticks: &self.ticks,
            order: &self.order,
        }
    }

    pub(super) fn state(&self) -> JoinedState {
        JoinedState {
            probe: hasher().hash_one(PROBE),
            ticks: self.ticks.iter().copied().collect(),
            order: self.order.iter().copied().collect(),
        }
    }

    /// What `state` remembered, if this build hashes as the one that wrote it and its
    /// counts agree (else none: a state is a file, and the file may be another's).
    pub(super) fn from_state(state: JoinedState) -> Option<Joined> {
        let counted = state
            .ticks
            .iter()
            .try_fold(0u64, |sum, &(_, n)| sum.checked_add(n));
        if state.probe != hasher().hash_one(PROBE) || counted != Some(state.order.len() as u64) {
            return None;
        }
        Some(Joined {
            known: state.order.iter().copied().collect(),
            order: state.order.into(),
            ticks: state.ticks.into(),
        })
    }
}

impl SpanJoin {
    /// Remembers the spans of a sample or DATA_FRAG joined now (see the module docs).
    pub(super) fn remember_joined(&mut self, identities: impl IntoIterator<Item = u64>) {
        let (tick, cap) = (self.tick, self.settings.max_joined);
        for identity in identities {
            let forgotten = self.joined.insert(identity, tick, cap);
            self.count_joined_forgotten(forgotten);
        }
    }

    /// At each push: forgets what was joined more than `max_wait_pushes` pushes ago.
    pub(super) fn expire_joined(&mut self) {
        let oldest_kept = self.tick.saturating_sub(self.settings.max_wait_pushes);
        let forgotten = self.joined.expire(oldest_kept);
        self.count_joined_forgotten(forgotten);
    }

    fn count_joined_forgotten(&mut self, forgotten: JoinedForgotten) {
        let c = &mut self.counters;
        c.joined_expired = c.joined_expired.saturating_add(forgotten.expired);
        c.joined_evicted = c.joined_evicted.saturating_add(forgotten.evicted);
    }

    /// A span of a sample or DATA_FRAG joined lately, delivered again: counted, true.
    pub(super) fn joined_again(&mut self, identity: u64) -> bool {
        let again = self.joined.contains(identity);
        if again {
            self.counters.duplicates = self.counters.duplicates.saturating_add(1);
        }
        again
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_go_first_beyond_the_cap_and_by_age() {
        let mut joined = Joined::default();
        assert_eq!(joined.insert(1, 1, 3), JoinedForgotten::default());
        joined.insert(2, 1, 3);
        joined.insert(3, 2, 3);
        // (the same again is no new entry)
        joined.insert(3, 2, 3);
        assert_eq!(joined.len(), 3);
        let full = joined.insert(4, 3, 3);
        assert_eq!(
            full,
            JoinedForgotten {
                expired: 0,
                evicted: 1
            }
        );
        assert!(!joined.contains(1) && joined.contains(2) && joined.contains(4));
        // tick 1's last (2) and tick 2's (3) are older than tick 3
        let aged = joined.expire(3);
        assert_eq!(
            aged,
            JoinedForgotten {
                expired: 2,
                evicted: 0
            }
        );
        assert_eq!(joined.len(), 1);
        assert!(joined.contains(4));
        assert_eq!(joined.ticks, VecDeque::from([(3, 1)]));
    }

    #[test]
    fn a_state_of_another_hash_or_inconsistent_counts_remembers_nothing() {
        let mut joined = Joined::default();
        joined.insert(7, 1, 10);
        joined.insert(8, 2, 10);
        let back = Joined::from_state(joined.state()).unwrap();
        assert_eq!(
            (back.order.clone(), back.ticks.clone()),
            (joined.order.clone(), joined.ticks.clone())
        );
        assert!(back.contains(7) && back.contains(8));
        let mut other = joined.state();
        other.probe ^= 1;
        assert!(Joined::from_state(other).is_none());
        let mut inconsistent = joined.state();
        inconsistent.ticks.push((3, 5));
        assert!(Joined::from_state(inconsistent).is_none());
    }
}
