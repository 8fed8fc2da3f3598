//! A participant's host (the capture taken on it) from the order of events, not from the
//! clocks' values (see the crate docs for the rule).

mod decide;
mod evidence;
mod observe;
mod offsets;
mod union_find;

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

pub use evidence::HostRuleEvidence;
use union_find::UnionFind;

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
    /// Participant and address nodes, in sets of one host group each.
    parent: UnionFind,
    cells: BTreeMap<CellKey, Cell>,
    /// Per participant node: per capture, samples it saw first (the clock fallback) and saw at all.
    first: HashMap<u32, Vec<u64>>,
    seen_by: HashMap<u32, Vec<u64>>,
    stats: HostRuleStats,
}

impl HostRule {
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
            parent: UnionFind::default(),
            cells: BTreeMap::new(),
            first: HashMap::new(),
            seen_by: HashMap::new(),
            stats: HostRuleStats::default(),
        }
    }

    pub fn stats(&self) -> HostRuleStats {
        self.stats
    }
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
mod tests;
