//! A hash map with a size cap: when full, the least recently seen entries go.
//!
//! Keys come off the wire (GUIDs, prefixes): the hasher is the dissector's
//! [`KeyHasher`], keyed per process and cheap on the 12- and 16-byte keys this map
//! hashes for every submessage.

use std::collections::HashMap;
use std::hash::Hash;

use rtps_dissect::KeyHasher as Hasher;

/// Entries that know when they were last seen (capture time).
pub(crate) trait Aged {
    fn last_seen(&self) -> u64;
}

#[derive(Debug, Clone)]
pub(crate) struct Bounded<K, V> {
    /// Key → position of its entry in `entries`.
    index: HashMap<K, usize, Hasher>,
    /// The entries, dense (a removal moves the last one into the hole).
    entries: Vec<(K, V)>,
    /// Position of the entry looked up last: a datagram's submessages mostly name the
    /// writer of the one before (DATA then HEARTBEAT), and consecutive datagrams often
    /// come from the same participant, so comparing the key there first saves most
    /// hash lookups. Only a hint: it is used when the entry there has the key.
    last: usize,
    cap: usize,
}

impl<K: Hash + Eq + Copy, V: Aged> Bounded<K, V> {
    pub fn new(cap: usize) -> Self {
        Self {
            index: HashMap::with_hasher(Hasher::default()),
            entries: Vec::new(),
            last: 0,
            cap: cap.max(1),
        }
    }

    /// Position of `key`'s entry, the last one looked up first.
    #[inline]
    fn position(&mut self, key: &K) -> Option<usize> {
        if self.entries.get(self.last).is_some_and(|(k, _)| k == key) {
            return Some(self.last);
        }
        let pos = *self.index.get(key)?;
        self.last = pos;
        Some(pos)
    }

    /// The entry of `key`, made by `make` if absent (when at the cap, the oldest
    /// sixteenth, at least one, is evicted first). `evicted` is called with each entry that had to go (a
    /// callback, so that the common case builds nothing). `None` only if the map's
    /// own bookkeeping were broken.
    #[inline]
    pub(crate) fn get_or_insert_with(
        &mut self,
        key: K,
        make: impl FnOnce() -> V,
        evicted: impl FnMut(V),
    ) -> Option<&mut V> {
        // The hint's hit, inline in the caller: the rest (hash lookup, insertion) costs
        // a call's setup that most lookups then do not need.
        if self.entries.get(self.last).is_some_and(|(k, _)| *k == key) {
            return self.entries.get_mut(self.last).map(|(_, v)| v);
        }
        self.get_or_insert_with_slow(key, make, evicted)
    }

    #[inline(never)]
    fn get_or_insert_with_slow(
        &mut self,
        key: K,
        make: impl FnOnce() -> V,
        evicted: impl FnMut(V),
    ) -> Option<&mut V> {
        let pos = match self.position(&key) {
            Some(pos) => pos,
            None => {
                if self.index.len() >= self.cap {
                    self.make_room().into_iter().for_each(evicted);
                }
                self.push(key, make())
            }
        };
        self.entries.get_mut(pos).map(|(_, v)| v)
    }

    /// Append a new entry (the key is absent); returns its position.
    fn push(&mut self, key: K, value: V) -> usize {
        let pos = self.entries.len();
        self.entries.push((key, value));
        self.index.insert(key, pos);
        self.last = pos;
        pos
    }

    /// Insert; when at the cap, first evict the oldest sixteenth (at least one)
    /// and return what was evicted. The state only uses `get_or_insert_with`; the tests
    /// drive the eviction through this.
    #[cfg(test)]
    fn insert(&mut self, key: K, value: V) -> Vec<V> {
        if let Some(pos) = self.position(&key) {
            if let Some((_, v)) = self.entries.get_mut(pos) {
                *v = value;
            }
            return Vec::new();
        }
        let mut evicted = Vec::new();
        if self.index.len() >= self.cap {
            evicted = self.make_room();
        }
        self.push(key, value);
        evicted
    }

    fn remove(&mut self, key: &K) -> Option<V> {
        let pos = self.index.remove(key)?;
        if pos >= self.entries.len() {
            return None;
        }
        let (_, v) = self.entries.swap_remove(pos);
        if let Some((moved, _)) = self.entries.get(pos) {
            self.index.insert(*moved, pos);
        }
        Some(v)
    }

    /// Evict the oldest sixteenth (at least one).
    fn make_room(&mut self) -> Vec<V> {
        let n = (self.cap / 16).max(1);
        let mut ages: Vec<(u64, K)> = self
            .entries
            .iter()
            .map(|(k, v)| (v.last_seen(), *k))
            .collect();
        if n < ages.len() {
            ages.select_nth_unstable_by_key(n, |(t, _)| *t);
        }
        ages.into_iter()
            .take(n)
            .filter_map(|(_, k)| self.remove(&k))
            .collect()
    }

    /// Remove and return every entry last seen before `cutoff`.
    pub(crate) fn evict_older_than(&mut self, cutoff: u64) -> Vec<V> {
        let old: Vec<K> = self
            .entries
            .iter()
            .filter(|(_, v)| v.last_seen() < cutoff)
            .map(|(k, _)| *k)
            .collect();
        old.into_iter().filter_map(|k| self.remove(&k)).collect()
    }

    pub(crate) fn get(&self, k: &K) -> Option<&V> {
        let pos = *self.index.get(k)?;
        self.entries.get(pos).map(|(_, v)| v)
    }
    pub(crate) fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        let pos = self.position(k)?;
        self.entries.get_mut(pos).map(|(_, v)| v)
    }
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }
    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.entries.iter_mut().map(|(_, v)| v)
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    struct E(u64);
    impl Aged for E {
        fn last_seen(&self) -> u64 {
            self.0
        }
    }

    #[test]
    fn cap_evicts_oldest() {
        let mut b = Bounded::new(4);
        for i in 0..4u64 {
            assert!(b.insert(i, E(i)).is_empty());
        }
        let ev = b.insert(9, E(9));
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].0, 0);
        assert_eq!(b.len(), 4);
        assert_eq!(b.evict_older_than(3).len(), 2);
    }

    #[test]
    fn lookups_after_removals_find_the_right_entry() {
        // Removals move entries; the index and the last-looked-up hint must follow.
        let mut b = Bounded::new(64);
        for i in 0..40u64 {
            b.insert(i, E(i));
        }
        assert_eq!(b.get_mut(&39).map(|e| e.0), Some(39));
        assert_eq!(b.evict_older_than(20).len(), 20);
        for i in 0..40u64 {
            let want = (i >= 20).then_some(i);
            assert_eq!(b.get_mut(&i).map(|e| e.0), want, "key {i}");
            assert_eq!(b.get(&i).map(|e| e.0), want, "key {i}");
        }
        let made = b.get_or_insert_with(5, || E(500), |_| {}).map(|e| e.0);
        assert_eq!(made, Some(500));
        assert_eq!(
            b.get_or_insert_with(5, || E(9), |_| {}).map(|e| e.0),
            Some(500)
        );
        assert_eq!(b.len(), 21);
        assert_eq!(b.values().count(), 21);
    }
}
