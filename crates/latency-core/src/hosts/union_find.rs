//! Disjoint sets over node indices 0..len, the one union-find of the host rule: participants
//! and addresses in host groups, and host groups on one side of a capture pair.

/// `union` always hangs the higher root under the lower one, so a set's root is its smallest
/// member and paths stay short without ranks. An index beyond `len` (a node an older state
/// named) is a set of its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct UnionFind {
    parent: Vec<u32>,
}

impl UnionFind {
    /// `len` singletons (at most u32::MAX).
    pub(super) fn with_len(len: usize) -> Self {
        Self {
            parent: (0..len).map_while(|i| u32::try_from(i).ok()).collect(),
        }
    }

    /// The sets as [`UnionFind::parents`] gave them.
    pub(super) fn from_parents(parent: Vec<u32>) -> Self {
        Self { parent }
    }

    pub(super) fn parents(&self) -> &[u32] {
        &self.parent
    }

    pub(super) fn len(&self) -> usize {
        self.parent.len()
    }

    pub(super) fn truncate(&mut self, len: usize) {
        self.parent.truncate(len);
    }

    /// A new singleton's index, or None when no u32 is left.
    pub(super) fn push(&mut self) -> Option<u32> {
        let id = u32::try_from(self.parent.len()).ok()?;
        self.parent.push(id);
        Some(id)
    }

    pub(super) fn root(&self, mut n: u32) -> u32 {
        for _ in 0..self.parent.len() {
            match self.parent.get(n as usize) {
                Some(&p) if p != n => n = p,
                _ => break,
            }
        }
        n
    }

    /// Joins the sets of `a` and `b`; false when they were one already.
    pub(super) fn union(&mut self, a: u32, b: u32) -> bool {
        let (ra, rb) = (self.root(a), self.root(b));
        if ra == rb {
            return false;
        }
        if let Some(p) = self.parent.get_mut(ra.max(rb) as usize) {
            *p = ra.min(rb);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_the_smallest_members() {
        let mut sets = UnionFind::with_len(6);
        assert!(sets.union(4, 2));
        assert!(sets.union(5, 4));
        assert!(!sets.union(2, 5), "one set already");
        assert!(sets.union(1, 3));
        let roots: Vec<u32> = (0..6).map(|n| sets.root(n)).collect();
        assert_eq!(roots, [0, 1, 2, 1, 2, 2]);
        assert!(sets.union(3, 5));
        assert_eq!(sets.root(4), 1);
    }

    #[test]
    fn indices_beyond_the_sets_stand_alone() {
        let mut sets = UnionFind::from_parents(vec![0, 0, 7]);
        assert_eq!(sets.root(2), 7, "a parent beyond len ends the path");
        assert_eq!(sets.root(9), 9);
        assert!(
            sets.union(9, 1),
            "joining an index beyond len changes nothing stored"
        );
        assert_eq!(sets.root(1), 0);
        assert_eq!(sets.parents(), [0, 0, 7]);
        assert_eq!(sets.push(), Some(3));
    }
}
