//! Each host group's capture from the votes of the capture pairs' windows.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::union_find::UnionFind;
use super::{Basis, GroupRanges, Home, HostRule, Hosts};

impl HostRule {
    /// Each host group's capture, from the evidence so far.
    pub fn decide(&self) -> Hosts {
        let n = self.cfg.captures;
        // Per (pair, window): per group the Δ range.
        let mut windows: BTreeMap<(u16, u16, i64), GroupRanges> = BTreeMap::new();
        for (&(x, y, w, node), c) in &self.cells {
            let g = self.parent.root(node);
            let e = windows
                .entry((x, y, w))
                .or_default()
                .entry(g)
                .or_insert((c.lo, c.hi));
            *e = (e.0.min(c.lo), e.1.max(c.hi));
        }
        let mut by_pair: BTreeMap<(u16, u16), Vec<&GroupRanges>> = BTreeMap::new();
        for (&(x, y, _), groups) in &windows {
            by_pair.entry((x, y)).or_default().push(groups);
        }
        let mut tally: HashMap<u32, Vec<u64>> = HashMap::new();
        for (&(x, y), wins) in &by_pair {
            for (g, side) in split_pair(wins) {
                let capture = usize::from(if side { x } else { y });
                let t = tally.entry(g).or_insert_with(|| vec![0; n]);
                if let Some(c) = t.get_mut(capture) {
                    *c = c.saturating_add(1);
                }
            }
        }
        let mut group_home: HashMap<u32, Home> = HashMap::new();
        let mut group_first: HashMap<u32, Vec<u64>> = HashMap::new();
        let mut group_seen: HashMap<u32, Vec<u64>> = HashMap::new();
        for (map, out) in [
            (&self.first, &mut group_first),
            (&self.seen_by, &mut group_seen),
        ] {
            for (&node, counts) in map {
                let g = out
                    .entry(self.parent.root(node))
                    .or_insert_with(|| vec![0; n]);
                for (a, b) in g.iter_mut().zip(counts) {
                    *a = a.saturating_add(*b);
                }
            }
        }
        for &g in group_seen.keys() {
            if let Some(c) = tally.get(&g).and_then(|t| unique_max(t)) {
                group_home.insert(
                    g,
                    Home {
                        capture: c,
                        basis: Basis::Order,
                    },
                );
                continue;
            }
            let seen_in: Vec<usize> = group_seen
                .get(&g)
                .map(|v| {
                    v.iter()
                        .enumerate()
                        .filter(|(_, &c)| c > 0)
                        .map(|(i, _)| i)
                        .collect()
                })
                .unwrap_or_default();
            if let [only] = seen_in.as_slice() {
                group_home.insert(
                    g,
                    Home {
                        capture: *only,
                        basis: Basis::OnlyCapture,
                    },
                );
                continue;
            }
            if let Some(c) = group_first.get(&g).and_then(|t| unique_max(t)) {
                group_home.insert(
                    g,
                    Home {
                        capture: c,
                        basis: Basis::Clock,
                    },
                );
            }
        }
        let mut hosts = Hosts::default();
        for (&p, &node) in &self.participants {
            if let Some(h) = group_home.get(&self.parent.root(node)) {
                hosts.participants.insert(p, *h);
            }
        }
        for (&ip, &node) in &self.ips {
            if let Some(h) = group_home.get(&self.parent.root(node)) {
                hosts.ips.insert(ip, *h);
            }
        }
        hosts
    }
}

/// The two sides of one capture pair from its windows' per-group Δ ranges: (group, X side?).
///
/// Groups whose ranges overlap in a window are on one side (a sample sent from X has a larger
/// Δ than any sent from Y), and so are groups each found above the other in some windows.
/// When the clusters found above or below others then hang together and none is found both
/// above one and below another, the upper ones are X's side and the lower ones Y's (two
/// groups of one host that never mix, e.g. participants on two interfaces, each found above
/// the other host's). Anything else (one cluster: one-way traffic; a cluster above and below:
/// two of one side differ in delay; clusters in unrelated parts) decides nothing.
fn split_pair(wins: &[&GroupRanges]) -> Vec<(u32, bool)> {
    let mut ids: Vec<u32> = wins.iter().flat_map(|w| w.keys().copied()).collect();
    ids.sort_unstable();
    ids.dedup();
    let index = |g: u32| {
        ids.binary_search(&g)
            .ok()
            .and_then(|i| u32::try_from(i).ok())
    };
    let mut sets = UnionFind::with_len(ids.len());
    let mut above: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    for _round in 0..=ids.len() {
        let mut changed = false;
        above.clear();
        for w in wins {
            // Cluster ranges in this window.
            let mut ranges: BTreeMap<u32, (i64, i64)> = BTreeMap::new();
            for (&g, &(lo, hi)) in w.iter() {
                let Some(i) = index(g) else { continue };
                let e = ranges.entry(sets.root(i)).or_insert((lo, hi));
                *e = (e.0.min(lo), e.1.max(hi));
            }
            let list: Vec<(u32, (i64, i64))> = ranges.into_iter().collect();
            for (i, &(a, (alo, ahi))) in list.iter().enumerate() {
                for &(b, (blo, bhi)) in list.iter().skip(i.saturating_add(1)) {
                    if alo > bhi {
                        let v = above.entry((a, b)).or_insert(0);
                        *v = v.saturating_add(1);
                    } else if blo > ahi {
                        let v = above.entry((b, a)).or_insert(0);
                        *v = v.saturating_add(1);
                    } else {
                        changed |= sets.union(a, b);
                    }
                }
            }
        }
        let both_ways: Vec<(u32, u32)> = above
            .keys()
            .filter(|(a, b)| above.contains_key(&(*b, *a)))
            .copied()
            .collect();
        for (a, b) in both_ways {
            changed |= sets.union(a, b);
        }
        if !changed {
            break;
        }
    }
    let related: Vec<(u32, u32)> = above
        .keys()
        .map(|&(a, b)| (sets.root(a), sets.root(b)))
        .filter(|(a, b)| a != b)
        .collect();
    let uppers: BTreeSet<u32> = related.iter().map(|&(a, _)| a).collect();
    let lowers: BTreeSet<u32> = related.iter().map(|&(_, b)| b).collect();
    // A cluster found both above and below others has a cluster of its own side on one of
    // them: where the split lies cannot be told.
    if uppers.is_empty() || !uppers.is_disjoint(&lowers) {
        return Vec::new();
    }
    // All related clusters must hang together: an unrelated pair "one above the other" may
    // be two groups of one host whose delays differ.
    let mut linked = UnionFind::with_len(ids.len());
    for &(a, b) in &related {
        linked.union(a, b);
    }
    let components: BTreeSet<u32> = uppers
        .iter()
        .chain(&lowers)
        .map(|&c| linked.root(c))
        .collect();
    if components.len() != 1 {
        return Vec::new();
    }
    ids.iter()
        .enumerate()
        .filter_map(|(i, &g)| {
            let c = sets.root(u32::try_from(i).ok()?);
            if uppers.contains(&c) {
                Some((g, true))
            } else if lowers.contains(&c) {
                Some((g, false))
            } else {
                None
            }
        })
        .collect()
}

/// The index of the single largest non-zero count.
fn unique_max(v: &[u64]) -> Option<usize> {
    let max = *v.iter().max()?;
    if max == 0 || v.iter().filter(|&&c| c == max).count() != 1 {
        return None;
    }
    v.iter().position(|&c| c == max)
}
