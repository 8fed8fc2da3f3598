//! The clock offset estimators of the capture pairs, fed with the samples whose host is
//! decided.

use std::collections::{BTreeMap, HashMap};

use super::{Home, HostRule, Hosts};
use crate::offset::{Crossing, Direction, OffsetConfig, OffsetEstimator};

impl HostRule {
    /// Per capture pair (X < Y) seen in common: the offset estimator fed with every
    /// participant's tightest samples per window, the direction taken from `hosts`.
    /// Samples whose host is neither X nor Y (a third host) are left out.
    pub fn offsets(
        &self,
        hosts: &Hosts,
        cfg: OffsetConfig,
    ) -> BTreeMap<(usize, usize), OffsetEstimator> {
        let mut node_home: HashMap<u32, Home> = HashMap::new();
        for (p, &node) in &self.participants {
            if let Some(h) = hosts.participants.get(p) {
                node_home.insert(node, *h);
            }
        }
        let mut out: BTreeMap<(usize, usize), OffsetEstimator> = BTreeMap::new();
        for (&(x, y, _, node), c) in &self.cells {
            let (x, y) = (usize::from(x), usize::from(y));
            let est = out
                .entry((x, y))
                .or_insert_with(|| OffsetEstimator::new(cfg));
            let Some(home) = node_home.get(&node) else {
                continue;
            };
            // Δ = t_Y − t_X: sent by X, Δ is the raw X→Y delay; sent by Y, −Δ the raw Y→X one.
            let crossing = if home.capture == x {
                Crossing {
                    direction: Direction::XtoY,
                    t_send: c.t_lo,
                    t_recv: c.t_lo.saturating_add(c.lo),
                    samples: c.samples,
                    builtin: c.builtin,
                }
            } else if home.capture == y {
                Crossing {
                    direction: Direction::YtoX,
                    t_send: c.t_hi.saturating_add(c.hi),
                    t_recv: c.t_hi,
                    samples: c.samples,
                    builtin: c.builtin,
                }
            } else {
                continue;
            };
            est.add(crossing);
        }
        out
    }
}
