//! The traffic state: participants, writers, readers and topics seen on the wire,
//! with per-writer statistics (totals and a capture-time sliding window),
//! loss/retransmission/repair accounting and discovery attribution.
//!
//! Time is capture time only: every method takes the capture timestamp it works
//! with, so a replay gives the same state as the live run that recorded it.
//! Every map is bounded by a cap and (optionally) an idle timeout; what they drop
//! is counted in [`StateCounters`].
#![deny(
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

pub(crate) mod bounded;
pub(crate) mod cache;
mod counters;
mod discovery;
mod entities;
pub(crate) mod frag_budget;
pub(crate) mod qos;
pub(crate) mod rate;
pub(crate) mod ros;
pub(crate) mod secured;
pub(crate) mod seq;
pub mod snapshot;
mod submessages;
pub(crate) mod timing;
pub(crate) mod window;

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use rtps_dissect::{Datagram, EndpointInfo, Guid, GuidPrefix, KeyHasher};

use bounded::Bounded;
pub use counters::StateCounters;
use entities::MAX_ADDRESSES;
pub(crate) use entities::{Gone, GoneReason, Participant, Reader, Writer};
use frag_budget::FragBudget;
use secured::{HostEntry, MessageSecurity, Peer, SecuredOf, SecuredPair, SecuredTraffic};
use seq::{Finalized, SeqConfig};
pub use snapshot::Snapshot;
use window::{Counts, Windowed};

/// Bounds and windows of the state.
#[derive(Debug, Clone, Copy)]
pub struct StateConfig {
    /// Sliding window for rates and recent counts.
    pub window_ns: u64,
    pub seq: SeqConfig,
    pub max_participants: usize,
    pub max_writers: usize,
    pub max_readers: usize,
    /// Participant pairs whose secured traffic is counted apart.
    pub max_secured_pairs: usize,
    /// Memory all writers' fragmented samples in progress may hold together (their
    /// fragment flags); past it the oldest are dropped from tracking.
    pub max_frag_bytes: usize,
    /// Entities not seen for this long are dropped (`None`: only the caps apply).
    pub idle_timeout_ns: Option<u64>,
    /// How often (capture time) idle entities, leases and loss timeouts are checked.
    pub sweep_every_ns: u64,
}

impl Default for StateConfig {
    fn default() -> Self {
        Self {
            window_ns: 10_000_000_000,
            seq: SeqConfig::default(),
            max_participants: 4096,
            max_writers: 16_384,
            max_readers: 16_384,
            max_secured_pairs: 4096,
            max_frag_bytes: 64 << 20,
            idle_timeout_ns: Some(600_000_000_000),
            sweep_every_ns: 1_000_000_000,
        }
    }
}

/// Buckets of the sample size histogram (TUI detail pane).
pub(crate) const SIZE_BUCKETS: usize = 18;

/// Sample size histogram bucket: 0 = below 64 B, `i` = [2^(i+5), 2^(i+6)) B, the
/// last = 4 MiB and more.
pub(crate) fn size_bucket(size: u64) -> usize {
    let log2 = 63u32.saturating_sub(size.leading_zeros());
    usize::try_from(log2.saturating_sub(5))
        .unwrap_or(usize::MAX)
        .min(SIZE_BUCKETS.saturating_sub(1))
}

/// Name of a built-in writer's stream, used as its "topic"; built-in writers without a
/// standard topic count under "DCPSBuiltin".
pub(crate) fn builtin_topic(guid: &Guid) -> Option<&'static str> {
    if !guid.entity.is_builtin() {
        return None;
    }
    Some(guid.entity.builtin_topic_name().unwrap_or("DCPSBuiltin"))
}

/// A finite DEADLINE period from an endpoint's SEDP QoS.
pub(crate) fn deadline_ns(info: &EndpointInfo) -> Option<u64> {
    info.qos
        .deadline_ns
        .flatten()
        .and_then(|d| u64::try_from(d).ok())
        .filter(|d| *d > 0)
}

fn addr_hash(a: &SocketAddr) -> u32 {
    // A fixed seed: the same capture gives the same hashes on every run. The address
    // goes in as one or two words (the derived `Hash` feeds its parts one by one, at
    // several times the cost per datagram).
    let hasher = foldhash::fast::FixedState::with_seed(0);
    let v = match a {
        SocketAddr::V4(a) => {
            hasher.hash_one((u64::from(a.ip().to_bits()) << 16) | u64::from(a.port()))
        }
        SocketAddr::V6(a) => hasher.hash_one((a.ip().to_bits(), a.port())),
    };
    // Fold the 64-bit hash; collisions only blur fan-out vs retransmission.
    (v ^ (v >> 32)) as u32
}

/// The whole observed DDS system.
pub(crate) struct State {
    pub(crate) config: StateConfig,
    pub(crate) participants: Bounded<GuidPrefix, Participant>,
    pub(crate) writers: Bounded<Guid, Writer>,
    pub(crate) readers: Bounded<Guid, Reader>,
    pub(crate) counters: StateCounters,
    /// Latest capture time seen (never goes back).
    pub(crate) now_ns: u64,
    pub(crate) first_ts_ns: Option<u64>,
    next_sweep_ns: u64,
    /// Writers already credited with this datagram's IP fragments.
    credited: Vec<Guid>,
    /// Endpoints known from the discovery cache, applied when traffic shows them.
    cached: HashMap<Guid, Arc<EndpointInfo>, KeyHasher>,
    /// DDS Security traffic per participant pair.
    pub(crate) secured: SecuredTraffic,
    /// Fragmented samples dropped from tracking by writers evicted since (their part of
    /// `counters.frag_samples_evicted`, which otherwise sums the writers still held).
    frag_evicted_of_evicted_writers: u64,
    /// The memory of all writers' fragmented samples in progress.
    frag_budget: FragBudget,
}

impl Default for State {
    fn default() -> Self {
        Self::new(StateConfig::default())
    }
}

impl State {
    pub fn new(config: StateConfig) -> Self {
        Self {
            participants: Bounded::new(config.max_participants),
            writers: Bounded::new(config.max_writers),
            readers: Bounded::new(config.max_readers),
            config,
            counters: StateCounters::default(),
            now_ns: 0,
            first_ts_ns: None,
            next_sweep_ns: 0,
            credited: Vec::new(),
            cached: HashMap::default(),
            secured: SecuredTraffic::new(
                config.max_secured_pairs,
                config.max_participants,
                config.window_ns,
            ),
            frag_evicted_of_evicted_writers: 0,
            frag_budget: FragBudget::default(),
        }
    }

    /// Advance the capture clock; timestamps going backwards are counted, not obeyed.
    pub fn advance(&mut self, ts_ns: u64) {
        if self.first_ts_ns.is_none() {
            self.first_ts_ns = Some(ts_ns);
            self.next_sweep_ns = ts_ns.saturating_add(self.config.sweep_every_ns);
        }
        if ts_ns < self.now_ns {
            self.counters.ts_backwards = self.counters.ts_backwards.saturating_add(1);
        } else {
            self.now_ns = ts_ns;
        }
        if self.now_ns >= self.next_sweep_ns {
            self.sweep();
            self.next_sweep_ns = self.now_ns.saturating_add(self.config.sweep_every_ns);
        }
    }

    fn writer_mut(&mut self, guid: Guid) -> Option<&mut Writer> {
        let ts = self.now_ns;
        let State {
            writers,
            config,
            cached,
            counters,
            frag_evicted_of_evicted_writers,
            frag_budget,
            ..
        } = self;
        let w = writers.get_or_insert_with(
            guid,
            || Writer::new(config, guid, ts, cached.get(&guid)),
            |old| {
                counters.writers_evicted_capacity =
                    counters.writers_evicted_capacity.saturating_add(1);
                counters.samples_of_evicted_writers = counters
                    .samples_of_evicted_writers
                    .saturating_add(old.stats.total.samples);
                *frag_evicted_of_evicted_writers =
                    frag_evicted_of_evicted_writers.saturating_add(old.seq.frag_evicted);
                frag_budget.release(old.seq.frag_usage());
            },
        )?;
        w.endpoint.last_seen_ns = ts;
        Some(w)
    }

    fn reader_mut(&mut self, guid: Guid) -> Option<&mut Reader> {
        let ts = self.now_ns;
        let State {
            readers,
            cached,
            counters,
            ..
        } = self;
        let r = readers.get_or_insert_with(
            guid,
            || Reader::new(guid, ts, cached.get(&guid)),
            |_| {
                counters.readers_evicted_capacity =
                    counters.readers_evicted_capacity.saturating_add(1);
            },
        )?;
        r.endpoint.last_seen_ns = ts;
        Some(r)
    }

    fn participant_mut(&mut self, prefix: GuidPrefix) -> Option<&mut Participant> {
        let ts = self.now_ns;
        let State {
            participants,
            counters,
            ..
        } = self;
        participants.get_or_insert_with(
            prefix,
            || Participant {
                prefix,
                info: None,
                from_cache: false,
                vendor: None,
                version: None,
                first_seen_ns: ts,
                last_seen_ns: ts,
                last_spdp_ns: None,
                addresses: Vec::new(),
                datagrams: 0,
                bytes: 0,
                gone: None,
                secured: None,
            },
            |_| {
                counters.participants_evicted_capacity =
                    counters.participants_evicted_capacity.saturating_add(1);
            },
        )
    }

    /// Account for one RTPS datagram.
    pub(crate) fn datagram(&mut self, d: &Datagram<'_>) {
        self.advance(d.ts_last_ns);
        let c = &mut self.counters;
        c.datagrams = c.datagrams.saturating_add(1);
        let now = self.now_ns;
        let ip = d.src.ip();
        let mut new_address = false;
        if let Some(p) = self.participant_mut(d.header.guid_prefix) {
            p.last_seen_ns = now;
            p.vendor = Some(d.header.vendor);
            p.version = Some(d.header.version);
            p.datagrams = p.datagrams.saturating_add(1);
            p.bytes = p.bytes.saturating_add(d.udp_len as u64);
            if !p.addresses.contains(&ip) && p.addresses.len() < MAX_ADDRESSES {
                p.addresses.push(ip);
                new_address = true;
            }
            if p.gone.is_some_and(|g| g.reason == GoneReason::LeaseExpired) {
                p.gone = None;
            }
        }
        // SPDP renews the address's entry, so a living participant's is never idle.
        if new_address || !d.discovery.is_empty() {
            self.note_host(ip, d.header.guid_prefix);
        }
        for rec in &d.discovery {
            self.discovery(rec);
        }
        self.credited.clear();
        let dst = addr_hash(&d.dst);
        let mut security = MessageSecurity::default();
        for sm in d.submessages.iter().flatten() {
            security.note(sm);
            self.submessage(d, sm, dst);
        }
        if security.is_secured() {
            self.secured_message(d, &mut security);
        }
    }

    /// `prefix` sends from `ip`: unicast destinations at `ip` are that participant,
    /// unless several send from there.
    fn note_host(&mut self, ip: IpAddr, prefix: GuidPrefix) {
        let now = self.now_ns;
        let State {
            secured, counters, ..
        } = self;
        if let Some(h) = secured.hosts.get_or_insert_with(
            ip,
            || HostEntry {
                only: Some(prefix),
                last_seen_ns: now,
            },
            |_| counters.hosts_evicted = counters.hosts_evicted.saturating_add(1),
        ) {
            if h.only != Some(prefix) {
                h.only = None;
            }
            h.last_seen_ns = now;
        }
    }

    /// Account one secured message to its sender and to its (sender, destination) pair.
    fn secured_message(&mut self, d: &Datagram<'_>, security: &mut MessageSecurity) {
        let now = self.now_ns;
        security.finish(d);
        let counts = security.counts;
        let add = |c: &mut secured::SecuredCounts| {
            use window::Tally;
            c.add(&counts);
        };
        let src = d.header.guid_prefix;
        let window_ns = self.config.window_ns;
        if let Some(p) = self.participant_mut(src) {
            let of = p
                .secured
                .get_or_insert_with(|| Box::new(SecuredOf::new(window_ns)));
            of.stats.record(now, add);
            for key in security.keys() {
                of.note_key(*key);
            }
        }
        let dst = match security.dst {
            Some(prefix) => Peer::Participant(prefix),
            None => self.secured.peer_at(d.dst.ip()),
        };
        let State {
            secured, counters, ..
        } = self;
        secured.total.record(now, add);
        if let Some(pair) = secured.pairs.get_or_insert_with(
            (src, dst),
            || SecuredPair {
                src,
                dst,
                first_seen_ns: now,
                last_seen_ns: now,
                stats: Windowed::new(window_ns),
            },
            |_| {
                counters.secured_pairs_evicted_capacity =
                    counters.secured_pairs_evicted_capacity.saturating_add(1);
            },
        ) {
            pair.last_seen_ns = now;
            pair.stats.record(now, add);
        }
    }

    /// Periodic work on the capture clock: loss timeouts, leases, idle entities.
    pub(crate) fn sweep(&mut self) {
        let now = self.now_ns;
        let cfg = self.config.seq;
        let mut finals = Vec::new();
        for w in self.writers.values_mut() {
            let frags_before = w.seq.frag_usage();
            let fin = w.seq.expire(now, &cfg);
            self.frag_budget.settle(frags_before, w.seq.frag_usage());
            if fin != Finalized::default() {
                finals.push((w.endpoint.guid, fin));
            }
        }
        for (g, fin) in finals {
            self.apply_final(&g, fin);
        }
        // Leases: any traffic from a participant renews it (as Cyclone does).
        let mut expired = Vec::new();
        for p in self.participants.values_mut() {
            let lease = p
                .info
                .as_ref()
                .and_then(|i| i.lease_ns)
                .flatten()
                .and_then(|l| u64::try_from(l).ok());
            if let (Some(lease), None) = (lease, p.gone) {
                if p.last_seen_ns.saturating_add(lease) < now {
                    p.gone = Some(Gone {
                        at_ns: now,
                        reason: GoneReason::LeaseExpired,
                    });
                    expired.push(p.prefix);
                }
            }
        }
        for prefix in expired {
            self.counters.leases_expired = self.counters.leases_expired.saturating_add(1);
            let gone = self.participants.get(&prefix).and_then(|p| p.gone);
            self.participant_gone(prefix, gone);
        }
        if let Some(idle) = self.config.idle_timeout_ns {
            let cutoff = now.saturating_sub(idle);
            let evicted = self.writers.evict_older_than(cutoff);
            self.counters.writers_evicted_idle = self
                .counters
                .writers_evicted_idle
                .saturating_add(evicted.len() as u64);
            for w in evicted {
                self.counters.samples_of_evicted_writers = self
                    .counters
                    .samples_of_evicted_writers
                    .saturating_add(w.stats.total.samples);
                self.frag_evicted_of_evicted_writers = self
                    .frag_evicted_of_evicted_writers
                    .saturating_add(w.seq.frag_evicted);
                self.frag_budget.release(w.seq.frag_usage());
            }
            let n = self.readers.evict_older_than(cutoff).len() as u64;
            self.counters.readers_evicted_idle =
                self.counters.readers_evicted_idle.saturating_add(n);
            let n = self.participants.evict_older_than(cutoff).len() as u64;
            self.counters.participants_evicted_idle =
                self.counters.participants_evicted_idle.saturating_add(n);
            let n = self.secured.pairs.evict_older_than(cutoff).len() as u64;
            self.counters.secured_pairs_evicted_idle =
                self.counters.secured_pairs_evicted_idle.saturating_add(n);
            let n = self.secured.hosts.evict_older_than(cutoff).len() as u64;
            self.counters.hosts_evicted = self.counters.hosts_evicted.saturating_add(n);
        }
        self.counters.frag_samples_evicted = self
            .writers
            .values()
            .map(|w| w.seq.frag_evicted)
            .fold(self.frag_evicted_of_evicted_writers, u64::saturating_add);
    }

    /// End of input: every open hole and incomplete sample is final.
    pub fn finish(&mut self) {
        self.sweep();
        let cfg = self.config.seq;
        let mut finals = Vec::new();
        for w in self.writers.values_mut() {
            let frags_before = w.seq.frag_usage();
            finals.push((w.endpoint.guid, w.seq.finish(&cfg)));
            self.frag_budget.settle(frags_before, w.seq.frag_usage());
        }
        for (g, fin) in finals {
            self.apply_final(&g, fin);
        }
    }

    /// Sum of every writer's samples plus those of evicted writers.
    pub(crate) fn total_samples(&self) -> u64 {
        self.writers.values().map(|w| w.stats.total.samples).fold(
            self.counters.samples_of_evicted_writers,
            u64::saturating_add,
        )
    }

    /// Totals over all writers (for summaries).
    pub(crate) fn totals(&self) -> Counts {
        let mut c = Counts::default();
        for w in self.writers.values() {
            c.add(&w.stats.total);
        }
        c
    }
}
