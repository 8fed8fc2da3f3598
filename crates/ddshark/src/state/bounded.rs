//! A hash map with a size cap: when full, the least recently seen entries go.
//!
//! Keys come off the wire (GUIDs, prefixes): the hasher is the dissector's
//! [`KeyHasher`], keyed per process and cheap on the 12- and 16-byte keys this map
//! hashes for every submessage.

use std::collections::HashMap;
use std::hash::Hash;

use rtps_dissect::KeyHasher as Hasher;

/// Entries that know when they were last seen (capture time).
pub trait Aged {
    fn last_seen(&self) -> u64;
}

#[derive(Debug, Clone)]
pub struct Bounded<K, V> {
    map: HashMap<K, V, Hasher>,
    cap: usize,
}

impl<K: Hash + Eq + Copy, V: Aged> Bounded<K, V> {
    pub fn new(cap: usize) -> Self {
        Self {
            map: HashMap::with_hasher(Hasher::default()),
            cap: cap.max(1),
        }
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    /// The entry of `key`, made by `make` if absent (after making room as
    /// [`Bounded::insert`] does). One hash lookup when the key is present and the
    /// map is not full. `evicted` is called with each entry that had to go (a
    /// callback, so that the common case builds nothing).
    pub fn get_or_insert_with(
        &mut self,
        key: K,
        make: impl FnOnce() -> V,
        evicted: impl FnMut(V),
    ) -> &mut V {
        if self.map.len() >= self.cap && !self.map.contains_key(&key) {
            self.make_room().into_iter().for_each(evicted);
        }
        self.map.entry(key).or_insert_with(make)
    }

    /// Insert; when at the cap, first evict the oldest sixteenth (at least one)
    /// and return what was evicted.
    pub fn insert(&mut self, key: K, value: V) -> Vec<V> {
        let mut evicted = Vec::new();
        if !self.map.contains_key(&key) && self.map.len() >= self.cap {
            evicted = self.make_room();
        }
        self.map.insert(key, value);
        evicted
    }

    /// Evict the oldest sixteenth (at least one).
    fn make_room(&mut self) -> Vec<V> {
        let n = (self.cap / 16).max(1);
        let mut ages: Vec<(u64, K)> = self.map.iter().map(|(k, v)| (v.last_seen(), *k)).collect();
        if n < ages.len() {
            ages.select_nth_unstable_by_key(n, |(t, _)| *t);
        }
        ages.into_iter()
            .take(n)
            .filter_map(|(_, k)| self.map.remove(&k))
            .collect()
    }

    /// Remove and return every entry last seen before `cutoff`.
    pub fn evict_older_than(&mut self, cutoff: u64) -> Vec<V> {
        let old: Vec<K> = self
            .map
            .iter()
            .filter(|(_, v)| v.last_seen() < cutoff)
            .map(|(k, _)| *k)
            .collect();
        old.into_iter()
            .filter_map(|k| self.map.remove(&k))
            .collect()
    }

    pub fn contains(&self, k: &K) -> bool {
        self.map.contains_key(k)
    }
    pub fn get(&self, k: &K) -> Option<&V> {
        self.map.get(k)
    }
    pub fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        self.map.get_mut(k)
    }
    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.map.values()
    }
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.map.values_mut()
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
}
