//! A participant's host (the capture taken on it) from the order of events, not from the
//! clocks' values (see the crate docs for the rule).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::offset::{Crossing, Direction, OffsetConfig, OffsetEstimator};

/// A participant's GUID prefix.
pub type Participant = [u8; 12];

/// Where addresses tie participants: only within one realm. `ddshark latency` has one (0);
/// the live join one per set of hosts that saw the sample, as it has one participant per
/// such set, so that captures exported again under new host names are evidence apart from
/// the old names' (their addresses are the same).
pub type Realm = u64;

/// One capture's sighting of a sample: when it first saw any part of it (its own clock), and
/// the source IP and Ethernet addresses of that datagram, when known (without them, a
/// participant is a host group of its own unless its announced locators tie it to others).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sighting {
    pub capture: usize,
    pub t_first: i64,
    pub src: Option<IpAddr>,
    pub src_mac: Option<[u8; 6]>,
}

/// What the captures saw of one sample of `participant`.
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    pub participant: Participant,
    /// The realm its addresses belong to.
    pub realm: Realm,
    /// A discovery (SPDP/SEDP) sample.
    pub builtin: bool,
    pub sightings: &'a [Sighting],
}

/// How a host was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Basis {
    /// Order of events against the other direction's traffic (clock-independent).
    Order,
    /// Only one capture ever saw the participant's host group.
    OnlyCapture,
    /// Traffic went one way only: the capture that saw it first (depends on the clocks).
    Clock,
}

impl Basis {
    pub fn name(self) -> &'static str {
        match self {
            Basis::Order => "order",
            Basis::OnlyCapture => "only-capture",
            Basis::Clock => "clock",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Home {
    pub capture: usize,
    pub basis: Basis,
}

#[derive(Debug, Clone, Copy)]
pub struct HostRuleConfig {
    pub captures: usize,
    /// Samples are compared only within windows this long (X-time): drift within it must
    /// stay below the sum of the two directions' smallest delays.
    pub window_ns: i64,
    /// Most participants and source addresses remembered (further ones are counted).
    pub max_nodes: usize,
    /// Most (capture pair, window, participant) cells held.
    pub max_cells: usize,
}

impl HostRuleConfig {
    pub fn new(captures: usize) -> Self {
        Self {
            captures,
            window_ns: 100_000_000,
            max_nodes: 65_536,
            max_cells: 4_000_000,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostRuleStats {
    pub samples: u64,
    pub shared_samples: u64,
    pub nodes_not_remembered: u64,
    pub cells_not_remembered: u64,
}

/// Most participants waiting for one announced address.
const MAX_ANNOUNCERS: usize = 256;

/// Per (pair, window, participant node): the smallest and largest Δ.
type CellKey = (u16, u16, i64, u32);

/// Per host group (root node): the Δ range in one window of one pair.
type GroupRanges = BTreeMap<u32, (i64, i64)>;

/// A participant's samples in one window of one capture pair.
#[derive(Debug, Clone, Copy)]
struct Cell {
    /// Smallest Δ and the X-time of its sample.
    lo: i64,
    t_lo: i64,
    hi: i64,
    t_hi: i64,
    samples: u32,
    builtin: u32,
}

/// Collects the evidence; [`HostRule::decide`] turns it into [`Hosts`].
#[derive(Debug, Clone)]
pub struct HostRule {
    cfg: HostRuleConfig,
    participants: HashMap<Participant, u32>,
    ips: HashMap<(Realm, IpAddr), u32>,
    macs: HashMap<(Realm, [u8; 6]), u32>,
    /// Unicast addresses participants announced (SPDP) that no datagram came from yet.
    announced: HashMap<(Realm, IpAddr), Vec<u32>>,
    /// Union-find over participant and address nodes.
    parent: Vec<u32>,
    cells: BTreeMap<CellKey, Cell>,
    /// Per participant node: per capture, samples it saw first (the clock fallback) and saw at all.
    first: HashMap<u32, Vec<u64>>,
    seen_by: HashMap<u32, Vec<u64>>,
    stats: HostRuleStats,
}

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
            parent: self.parent.clone(),
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
        rule.parent = evidence.parent;
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

    pub fn new(cfg: HostRuleConfig) -> Self {
        Self {
            cfg: HostRuleConfig {
                window_ns: cfg.window_ns.max(1),
                ..cfg
            },
            participants: HashMap::new(),
            ips: HashMap::new(),
            macs: HashMap::new(),
            announced: HashMap::new(),
            parent: Vec::new(),
            cells: BTreeMap::new(),
            first: HashMap::new(),
            seen_by: HashMap::new(),
            stats: HostRuleStats::default(),
        }
    }

    pub fn stats(&self) -> HostRuleStats {
        self.stats
    }

    fn new_node(&mut self) -> Option<u32> {
        if self.parent.len() >= self.cfg.max_nodes {
            self.stats.nodes_not_remembered = self.stats.nodes_not_remembered.saturating_add(1);
            return None;
        }
        let id = u32::try_from(self.parent.len()).ok()?;
        self.parent.push(id);
        Some(id)
    }

    fn participant_node(&mut self, p: Participant) -> Option<u32> {
        if let Some(&n) = self.participants.get(&p) {
            return Some(n);
        }
        let n = self.new_node()?;
        self.participants.insert(p, n);
        Some(n)
    }

    fn ip_node(&mut self, ip: (Realm, IpAddr)) -> Option<u32> {
        if let Some(&n) = self.ips.get(&ip) {
            return Some(n);
        }
        let n = self.new_node()?;
        self.ips.insert(ip, n);
        for p in self.announced.remove(&ip).unwrap_or_default() {
            self.union(n, p);
        }
        Some(n)
    }

    fn mac_node(&mut self, mac: (Realm, [u8; 6])) -> Option<u32> {
        if let Some(&n) = self.macs.get(&mac) {
            return Some(n);
        }
        let n = self.new_node()?;
        self.macs.insert(mac, n);
        Some(n)
    }

    /// A participant's SPDP announcement: the unicast addresses of its locators (metatraffic
    /// and default) are its host's. An address ties the participant to the others that use
    /// it only once a datagram came from it, so an address every host has but none sends
    /// from (a container bridge's, say) ties nothing. Addresses count within `realm`.
    pub fn announce(&mut self, participant: Participant, realm: Realm, addrs: &[IpAddr]) {
        let Some(node) = self.participant_node(participant) else {
            return;
        };
        for &addr in addrs {
            if addr.is_unspecified() || addr.is_loopback() || addr.is_multicast() {
                continue;
            }
            let ip = (realm, addr);
            if let Some(&n) = self.ips.get(&ip) {
                self.union(node, n);
                continue;
            }
            if !self.announced.contains_key(&ip) && self.announced.len() >= self.cfg.max_nodes {
                self.stats.nodes_not_remembered = self.stats.nodes_not_remembered.saturating_add(1);
                continue;
            }
            let waiting = self.announced.entry(ip).or_default();
            if !waiting.contains(&node) && waiting.len() < MAX_ANNOUNCERS {
                waiting.push(node);
            }
        }
    }

    fn root(&self, mut n: u32) -> u32 {
        // Paths stay short: `union` always hangs the higher root under the lower one.
        for _ in 0..self.parent.len() {
            match self.parent.get(n as usize) {
                Some(&p) if p != n => n = p,
                _ => break,
            }
        }
        n
    }

    fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.root(a), self.root(b));
        let (lo, hi) = (ra.min(rb), ra.max(rb));
        if let Some(p) = self.parent.get_mut(hi as usize) {
            *p = lo;
        }
    }

    /// Forget the evidence of windows before `before(X)`, on capture X's own clock (a
    /// rolling view for the live join: one horizon for all captures would drop every cell
    /// of a capture whose clock is behind the others' by more than the horizon).
    pub fn forget_before(&mut self, before: impl Fn(usize) -> i64) {
        let window = self.cfg.window_ns;
        self.cells
            .retain(|k, _| k.2 >= before(usize::from(k.0)).div_euclid(window));
    }

    /// Forget what capture `c` contributed (its cells and its counts of samples seen and
    /// seen first), so that its index can stand for another capture: decisions and offsets
    /// then come from the other captures' evidence alone.
    pub fn forget_capture(&mut self, c: usize) {
        if let Ok(c16) = u16::try_from(c) {
            self.cells.retain(|k, _| k.0 != c16 && k.1 != c16);
        }
        for counts in [&mut self.first, &mut self.seen_by] {
            for v in counts.values_mut() {
                if let Some(x) = v.get_mut(c) {
                    *x = 0;
                }
            }
            counts.retain(|_, v| v.iter().any(|&x| x > 0));
        }
    }

    /// Add what the captures saw of one sample.
    pub fn observe(&mut self, s: &Seen<'_>) {
        self.stats.samples = self.stats.samples.saturating_add(1);
        let Some(node) = self.participant_node(s.participant) else {
            return;
        };
        let n = self.cfg.captures;
        // The address the participant sent from, as its own capture saw it: every capture
        // sees the same source address, so any sighting will do.
        if let Some(src) = s.sightings.iter().find_map(|x| x.src) {
            if let Some(ipn) = self.ip_node((s.realm, src)) {
                self.union(node, ipn);
            }
        }
        // The Ethernet source is the sending interface's only when every capture saw the
        // same one (one segment; behind a router each side sees another): interfaces of one
        // NIC, such as its VLANs, share it.
        if let [first, rest @ ..] = s.sightings {
            if !rest.is_empty() && rest.iter().all(|x| x.src_mac == first.src_mac) {
                if let Some(macn) = first.src_mac.and_then(|m| self.mac_node((s.realm, m))) {
                    self.union(node, macn);
                }
            }
        }
        let seen = self.seen_by.entry(node).or_insert_with(|| vec![0; n]);
        for x in s.sightings {
            if let Some(c) = seen.get_mut(x.capture) {
                *c = c.saturating_add(1);
            }
        }
        if s.sightings.len() < 2 {
            return;
        }
        self.stats.shared_samples = self.stats.shared_samples.saturating_add(1);
        if let Some(earliest) = s.sightings.iter().min_by_key(|x| (x.t_first, x.capture)) {
            let f = self.first.entry(node).or_insert_with(|| vec![0; n]);
            if let Some(c) = f.get_mut(earliest.capture) {
                *c = c.saturating_add(1);
            }
        }
        for (i, a) in s.sightings.iter().enumerate() {
            for b in s.sightings.iter().skip(i.saturating_add(1)) {
                let (x, y) = if a.capture <= b.capture {
                    (a, b)
                } else {
                    (b, a)
                };
                if x.capture == y.capture {
                    continue;
                }
                let (Ok(xc), Ok(yc)) = (u16::try_from(x.capture), u16::try_from(y.capture)) else {
                    continue;
                };
                let delta = y.t_first.saturating_sub(x.t_first);
                let t = x.t_first;
                let key = (xc, yc, t.div_euclid(self.cfg.window_ns), node);
                let full = self.cells.len() >= self.cfg.max_cells;
                let builtin = u32::from(s.builtin);
                match self.cells.get_mut(&key) {
                    Some(c) => {
                        if delta < c.lo {
                            (c.lo, c.t_lo) = (delta, t);
                        }
                        if delta > c.hi {
                            (c.hi, c.t_hi) = (delta, t);
                        }
                        c.samples = c.samples.saturating_add(1);
                        c.builtin = c.builtin.saturating_add(builtin);
                    }
                    None if !full => {
                        self.cells.insert(
                            key,
                            Cell {
                                lo: delta,
                                t_lo: t,
                                hi: delta,
                                t_hi: t,
                                samples: 1,
                                builtin,
                            },
                        );
                    }
                    None => {
                        self.stats.cells_not_remembered =
                            self.stats.cells_not_remembered.saturating_add(1);
                    }
                }
            }
        }
    }

    /// Each host group's capture, from the evidence so far.
    pub fn decide(&self) -> Hosts {
        let n = self.cfg.captures;
        // Per (pair, window): per group the Δ range.
        let mut windows: BTreeMap<(u16, u16, i64), GroupRanges> = BTreeMap::new();
        for (&(x, y, w, node), c) in &self.cells {
            let g = self.root(node);
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
                let g = out.entry(self.root(node)).or_insert_with(|| vec![0; n]);
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
            if let Some(h) = group_home.get(&self.root(node)) {
                hosts.participants.insert(p, *h);
            }
        }
        for (&ip, &node) in &self.ips {
            if let Some(h) = group_home.get(&self.root(node)) {
                hosts.ips.insert(ip, *h);
            }
        }
        hosts
    }
}

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
    let index = |g: u32| ids.binary_search(&g).ok();
    let mut parent: Vec<usize> = (0..ids.len()).collect();
    fn find(parent: &[usize], mut i: usize) -> usize {
        for _ in 0..parent.len() {
            match parent.get(i) {
                Some(&p) if p != i => i = p,
                _ => break,
            }
        }
        i
    }
    fn join(parent: &mut [usize], a: usize, b: usize) -> bool {
        let (ra, rb) = (find(parent, a), find(parent, b));
        if ra == rb {
            return false;
        }
        if let Some(p) = parent.get_mut(ra.max(rb)) {
            *p = ra.min(rb);
        }
        true
    }
    let mut above: BTreeMap<(usize, usize), u64> = BTreeMap::new();
    for _round in 0..=ids.len() {
        let mut changed = false;
        above.clear();
        for w in wins {
            // Cluster ranges in this window.
            let mut ranges: BTreeMap<usize, (i64, i64)> = BTreeMap::new();
            for (&g, &(lo, hi)) in w.iter() {
                let Some(i) = index(g) else { continue };
                let e = ranges.entry(find(&parent, i)).or_insert((lo, hi));
                *e = (e.0.min(lo), e.1.max(hi));
            }
            let list: Vec<(usize, (i64, i64))> = ranges.into_iter().collect();
            for (i, &(a, (alo, ahi))) in list.iter().enumerate() {
                for &(b, (blo, bhi)) in list.iter().skip(i.saturating_add(1)) {
                    if alo > bhi {
                        let v = above.entry((a, b)).or_insert(0);
                        *v = v.saturating_add(1);
                    } else if blo > ahi {
                        let v = above.entry((b, a)).or_insert(0);
                        *v = v.saturating_add(1);
                    } else {
                        changed |= join(&mut parent, a, b);
                    }
                }
            }
        }
        let both_ways: Vec<(usize, usize)> = above
            .keys()
            .filter(|(a, b)| above.contains_key(&(*b, *a)))
            .copied()
            .collect();
        for (a, b) in both_ways {
            changed |= join(&mut parent, a, b);
        }
        if !changed {
            break;
        }
    }
    let related: Vec<(usize, usize)> = above
        .keys()
        .map(|&(a, b)| (find(&parent, a), find(&parent, b)))
        .filter(|(a, b)| a != b)
        .collect();
    let uppers: BTreeSet<usize> = related.iter().map(|&(a, _)| a).collect();
    let lowers: BTreeSet<usize> = related.iter().map(|&(_, b)| b).collect();
    // A cluster found both above and below others has a cluster of its own side on one of
    // them: where the split lies cannot be told.
    if uppers.is_empty() || !uppers.is_disjoint(&lowers) {
        return Vec::new();
    }
    // All related clusters must hang together: an unrelated pair "one above the other" may
    // be two groups of one host whose delays differ.
    let mut linked: Vec<usize> = (0..parent.len()).collect();
    for &(a, b) in &related {
        join(&mut linked, a, b);
    }
    let mut components: BTreeSet<usize> = BTreeSet::new();
    for c in uppers.iter().chain(&lowers) {
        components.insert(find(&linked, *c));
    }
    if components.len() != 1 {
        return Vec::new();
    }
    ids.iter()
        .enumerate()
        .filter_map(|(i, &g)| {
            let c = find(&parent, i);
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

/// The decided homes: by participant, and by source address (in its realm) for
/// participants the rule never saw.
#[derive(Debug, Clone, Default)]
pub struct Hosts {
    pub participants: HashMap<Participant, Home>,
    pub ips: HashMap<(Realm, IpAddr), Home>,
}

impl Hosts {
    pub fn home(&self, participant: &Participant, src: Option<(Realm, IpAddr)>) -> Option<Home> {
        self.participants
            .get(participant)
            .or_else(|| src.and_then(|ip| self.ips.get(&ip)))
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    /// Two hosts: participant 1 on capture 0 (address .1), participant 2 on capture 1 (.2);
    /// capture 1's clock reads `theta` ahead of capture 0's.
    fn rule(theta: i64, ppb: i64, second_host_talks: bool) -> Hosts {
        observed(theta, ppb, second_host_talks).decide()
    }

    fn observed(theta: i64, ppb: i64, second_host_talks: bool) -> HostRule {
        let mut r = HostRule::new(HostRuleConfig::new(2));
        let y = |t: i64| t + theta + (i128::from(t) * i128::from(ppb) / 1_000_000_000) as i64;
        for i in 0..100i64 {
            let t = i * 20 * MS;
            r.observe(&Seen {
                participant: [1; 12],
                realm: 0,
                builtin: false,
                sightings: &[
                    Sighting {
                        capture: 0,
                        t_first: t,
                        src: Some(ip(1)),
                        src_mac: None,
                    },
                    Sighting {
                        capture: 1,
                        t_first: y(t + 80_000 + (i % 5) * 1_000_000),
                        src: Some(ip(1)),
                        src_mac: None,
                    },
                ],
            });
            if second_host_talks && i % 3 == 0 {
                let t = t + 5 * MS;
                r.observe(&Seen {
                    participant: [2; 12],
                    realm: 0,
                    builtin: true,
                    sightings: &[
                        Sighting {
                            capture: 1,
                            t_first: y(t),
                            src: Some(ip(2)),
                            src_mac: None,
                        },
                        Sighting {
                            capture: 0,
                            t_first: t + 60_000,
                            src: Some(ip(2)),
                            src_mac: None,
                        },
                    ],
                });
            }
        }
        // A participant only capture 0 saw, from host 2's address.
        r.observe(&Seen {
            participant: [3; 12],
            realm: 0,
            builtin: false,
            sightings: &[Sighting {
                capture: 0,
                t_first: 0,
                src: Some(ip(2)),
                src_mac: None,
            }],
        });
        r
    }

    #[test]
    fn a_rule_from_its_evidence_decides_and_estimates_as_the_rule() {
        let r = observed(12 * MS, 50_000, true);
        let evidence = r.evidence();
        assert!(evidence.cells() > 0);
        let again = HostRule::with_evidence(HostRuleConfig::new(2), evidence.clone());
        assert_eq!(again.evidence(), evidence);
        let (hosts, hosts_again) = (r.decide(), again.decide());
        assert_eq!(hosts.participants, hosts_again.participants);
        assert_eq!(hosts.ips, hosts_again.ips);
        let estimate = |rule: &HostRule, hosts: &Hosts| {
            rule.offsets(hosts, OffsetConfig::default())
                .into_iter()
                .map(|(pair, e)| (pair, e.estimate().ok()))
                .collect::<Vec<_>>()
        };
        let want = estimate(&r, &hosts);
        assert!(want.iter().all(|(_, e)| e.is_some()), "{want:?}");
        assert_eq!(estimate(&again, &hosts_again), want);
        // a smaller table keeps what fits, counted
        let small = HostRule::with_evidence(
            HostRuleConfig {
                max_cells: 3,
                ..HostRuleConfig::new(2)
            },
            evidence,
        );
        assert_eq!(small.evidence().cells(), 3);
        assert!(small.stats().cells_not_remembered > 0);
    }

    #[test]
    fn a_forgotten_capture_leaves_no_evidence() {
        let mut r = observed(12 * MS, 0, true);
        assert!(r.evidence().cells() > 0);
        r.forget_capture(1);
        let hosts = r.decide();
        assert!(r.offsets(&hosts, OffsetConfig::default()).is_empty());
        assert_eq!(r.evidence().cells(), 0);
        // only capture 0's sightings are left: every participant is capture 0's
        for p in [1u8, 2, 3] {
            let home = hosts.home(&[p; 12], None);
            assert_eq!(
                home.map(|h| h.capture),
                Some(0),
                "participant {p}: {home:?}"
            );
        }
        // the index serves another capture from scratch
        let mut fresh = observed(12 * MS, 0, true);
        fresh.forget_capture(0);
        fresh.forget_capture(1);
        assert_eq!(fresh.decide().home(&[1; 12], None), None);
    }

    #[test]
    fn homes_do_not_depend_on_the_clock_offset() {
        for theta in [-1_000 * MS, -12 * MS, 0, 12_345_678, 1_000 * MS] {
            for ppb in [0, 50_000, -50_000] {
                let h = rule(theta, ppb, true);
                let home = |p: u8| h.home(&[p; 12], None);
                let order = |c| {
                    Some(Home {
                        capture: c,
                        basis: Basis::Order,
                    })
                };
                assert_eq!(home(1), order(0), "θ {theta} drift {ppb}");
                assert_eq!(home(2), order(1), "θ {theta} drift {ppb}");
                // Same source address as participant 2: same host.
                assert_eq!(home(3), order(1), "θ {theta} drift {ppb}");
            }
        }
    }

    /// Host X runs participant 1 (address .1) and 2 (address .3, a slower path); host Y
    /// runs 3 (.2). Every window shows 2 above 1 above 3: where the split lies is only known
    /// once something on the wire ties 1 and 2 (`tie`: an announcement, or a shared MAC).
    fn two_addresses(tie: impl Fn(&mut HostRule), macs: [Option<[u8; 6]>; 2]) -> Hosts {
        let mut r = HostRule::new(HostRuleConfig::new(2));
        tie(&mut r);
        let theta = 12 * MS;
        let send = |r: &mut HostRule, p: u8, from: usize, t: i64, delay: i64, src: u8| {
            let at = |c: usize, t: i64| if c == 1 { t + theta } else { t };
            let to = 1 - from;
            let mac = match p {
                1 | 2 => macs.get(usize::from(p - 1)).copied().flatten(),
                _ => Some([9; 6]),
            };
            r.observe(&Seen {
                participant: [p; 12],
                realm: 0,
                builtin: false,
                sightings: &[
                    Sighting {
                        capture: from,
                        t_first: at(from, t),
                        src: Some(ip(src)),
                        src_mac: mac,
                    },
                    Sighting {
                        capture: to,
                        t_first: at(to, t + delay),
                        src: Some(ip(src)),
                        src_mac: mac,
                    },
                ],
            });
        };
        for i in 0..50i64 {
            let t = i * 20 * MS;
            send(&mut r, 1, 0, t, MS, 1);
            send(&mut r, 2, 0, t + MS, 5 * MS, 3);
            send(&mut r, 3, 1, t + 2 * MS, 100_000, 2);
        }
        r.decide()
    }

    #[test]
    fn announced_addresses_and_a_shared_mac_tie_a_hosts_participants() {
        let basis = |h: &Hosts, p: u8| h.home(&[p; 12], None).map(|h| (h.capture, h.basis));
        let untied = two_addresses(|_| {}, [None, None]);
        assert_eq!(basis(&untied, 1), Some((0, Basis::Clock)));
        let announced = two_addresses(
            |r| r.announce([1; 12], 0, &[ip(1), ip(3), IpAddr::from([172, 17, 0, 1])]),
            [None, None],
        );
        let shared_mac = two_addresses(|_| {}, [Some([2; 6]), Some([2; 6])]);
        for h in [announced, shared_mac] {
            assert_eq!(basis(&h, 1), Some((0, Basis::Order)));
            assert_eq!(basis(&h, 2), Some((0, Basis::Order)));
            assert_eq!(basis(&h, 3), Some((1, Basis::Order)));
        }
        // Different MACs (two NICs, or a router between) tie nothing.
        let two_macs = two_addresses(|_| {}, [Some([2; 6]), Some([3; 6])]);
        assert_eq!(basis(&two_macs, 1), Some((0, Basis::Clock)));
        // An address ties only within its realm (the live join's other set of hosts).
        let other_realm = two_addresses(|r| r.announce([1; 12], 1, &[ip(1), ip(3)]), [None, None]);
        assert_eq!(basis(&other_realm, 1), Some((0, Basis::Clock)));
    }

    #[test]
    fn one_way_traffic_says_it_fell_back_on_the_clock() {
        let h = rule(0, 0, false);
        assert_eq!(
            h.home(&[1; 12], None),
            Some(Home {
                capture: 0,
                basis: Basis::Clock
            })
        );
        // Participant 3 (address .2) was seen by capture 0 only.
        assert_eq!(
            h.home(&[3; 12], None),
            Some(Home {
                capture: 0,
                basis: Basis::OnlyCapture
            })
        );
    }
}
