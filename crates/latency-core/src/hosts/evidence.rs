//! The evidence a [`HostRule`] gathered, as plain data: carried across a restart of the
//! live join.

use std::collections::HashMap;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::union_find::UnionFind;
use super::{Cell, CellKey, HostRule, HostRuleConfig, Participant, Realm};

/// A cell's (lo, t_lo, hi, t_hi, samples, builtin).
type CellData = (i64, i64, i64, i64, u32, u32);

/// Everything a [`HostRule`] has gathered, as plain data: to carry the evidence across a
/// restart of the live join ([`HostRule::evidence`], [`HostRule::with_evidence`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostRuleEvidence {
    participants: Vec<(Participant, u32)>,
    ips: Vec<((Realm, IpAddr), u32)>,
    macs: Vec<((Realm, [u8; 6]), u32)>,
    announced: Vec<((Realm, IpAddr), Vec<u32>)>,
    parent: Vec<u32>,
    cells: Vec<(CellKey, CellData)>,
    first: Vec<(u32, Vec<u64>)>,
    seen_by: Vec<(u32, Vec<u64>)>,
}

impl HostRuleEvidence {
    /// Cells (pair, window, participant) held: what bounds its size.
    pub fn cells(&self) -> usize {
        self.cells.len()
    }
}

impl HostRule {
    /// The evidence gathered so far (in a stable order: the same rule gives the same data).
    pub fn evidence(&self) -> HostRuleEvidence {
        fn sorted<K: Ord + Copy, V: Clone>(map: &HashMap<K, V>) -> Vec<(K, V)> {
            let mut v: Vec<(K, V)> = map.iter().map(|(k, v)| (*k, v.clone())).collect();
            v.sort_by_key(|(k, _)| *k);
            v
        }
        HostRuleEvidence {
            participants: sorted(&self.participants),
            ips: sorted(&self.ips),
            macs: sorted(&self.macs),
            announced: sorted(&self.announced),
            parent: self.parent.parents().to_vec(),
            cells: self
                .cells
                .iter()
                .map(|(k, c)| (*k, (c.lo, c.t_lo, c.hi, c.t_hi, c.samples, c.builtin)))
                .collect(),
            first: sorted(&self.first),
            seen_by: sorted(&self.seen_by),
        }
    }

    /// A rule that goes on from `evidence` (as [`HostRule::evidence`] gave it) with `cfg`:
    /// what `cfg` does not hold (nodes, cells) is left out and counted. References to nodes
    /// that do not exist are harmless (they name no group).
    pub fn with_evidence(cfg: HostRuleConfig, evidence: HostRuleEvidence) -> Self {
        let mut rule = HostRule::new(cfg);
        let nodes = evidence.parent.len().min(rule.cfg.max_nodes);
        let dropped = evidence.parent.len().saturating_sub(nodes);
        rule.stats.nodes_not_remembered = dropped as u64;
        rule.parent = UnionFind::from_parents(evidence.parent);
        rule.parent.truncate(nodes);
        let known = |n: &u32| (*n as usize) < nodes;
        rule.participants = evidence
            .participants
            .into_iter()
            .filter(|(_, n)| known(n))
            .collect();
        rule.ips = evidence.ips.into_iter().filter(|(_, n)| known(n)).collect();
        rule.macs = evidence
            .macs
            .into_iter()
            .filter(|(_, n)| known(n))
            .collect();
        rule.announced = evidence
            .announced
            .into_iter()
            .map(|(ip, v)| (ip, v.into_iter().filter(known).collect()))
            .collect();
        let max_cells = rule.cfg.max_cells;
        for (k, (lo, t_lo, hi, t_hi, samples, builtin)) in evidence.cells {
            if rule.cells.len() >= max_cells {
                rule.stats.cells_not_remembered = rule.stats.cells_not_remembered.saturating_add(1);
                continue;
            }
            rule.cells.insert(
                k,
                Cell {
                    lo,
                    t_lo,
                    hi,
                    t_hi,
                    samples,
                    builtin,
                },
            );
        }
        rule.first = evidence
            .first
            .into_iter()
            .filter(|(n, _)| known(n))
            .collect();
        rule.seen_by = evidence
            .seen_by
            .into_iter()
            .filter(|(n, _)| known(n))
            .collect();
        rule
    }
}
