//! The join: observations of the same (writer GUID, SN[, fragment start]) from
//! several captures meet here, in a bounded window of capture time.
//!
//! Definitions (the tshark oracle's, `shared/traffic/oracle.py`):
//! - `t_send` = capture time of the first IP fragment of the earliest datagram that
//!   carries any part of the sample, in the writer's own capture;
//! - `t_recv` = in the receiving capture, for every DDS fragment 1..N the earliest
//!   time a datagram carrying it was complete (its last IP fragment), then the max of
//!   those; only complete samples have a latency.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

use super::extract::{Key, Obs};
use latency_core::{HostRule, Hosts, LostRule};
use rtps_dissect::Guid;

mod finalise;
mod pending;
mod rows;

pub use rows::{LocalSample, SampleRow, Status};

use pending::{
    bit, is_multicast, pending_bytes, set_bit, CapObs, Done, DstBits, Pending, NOT_DONE, NO_DST,
};

/// Most destinations tracked per sample and capture for repair detection.
const MAX_DSTS: usize = 16;
/// Most (capture, writer) pairs whose sightings are remembered for the lost rule.
const MAX_WRITERS_SEEN: usize = 1 << 18;

#[derive(Debug, Clone, Copy)]
pub struct JoinConfig {
    pub captures: usize,
    /// A sample is finalised when nothing happened to it for this long (capture time).
    pub window_ns: i64,
    pub max_pending: usize,
    pub max_bytes: usize,
    /// When a sample that never reached a capture is lost there (latency_core's rule).
    pub lost: LostRule,
}

#[derive(Debug, Default, Clone, Copy)]
pub struct JoinStats {
    pub(crate) observations: u64,
    pub(crate) keys: u64,
    pub(crate) pending: u64,
    pub pending_peak: u64,
    pub(crate) bytes_held: u64,
    pub(crate) bytes_peak: u64,
    /// Finalised after the window of inactivity (the normal way) or at end of input.
    pub(crate) finalised: u64,
    /// Finalised early because the pending table was full (counted evictions).
    pub evicted_capacity: u64,
    /// Seen only in a capture that is not its writer's (sender capture missed it).
    pub(crate) receiver_only: u64,
    /// Seen only by the writer's capture, by a capture that was not running or never saw
    /// the writer within the receiver window (not one of its receivers).
    pub(crate) not_expected: u64,
    /// (capture, writer) pairs beyond the table of sightings: their samples are never lost.
    pub(crate) writers_not_remembered: u64,
}

pub struct Join {
    cfg: JoinConfig,
    pending: HashMap<Key, Pending>,
    queue: VecDeque<(Key, i64)>,
    /// Decided writers' hosts (`ddshark latency`'s second pass); None: the earliest capture.
    hosts: Option<Hosts>,
    /// Collects the evidence for the hosts and the clock offsets (first pass).
    rule: Option<HostRule>,
    /// Per capture: capture-time range seen so far (reference clock).
    range: Vec<Option<(i64, i64)>>,
    /// Per (capture, writer): the first and last send time of its samples seen there.
    writer_seen: HashMap<(usize, Guid), (i64, i64)>,
    stats: JoinStats,
    now: i64,
    /// Single-capture join: finalised samples, until [`Join::take_local`].
    local: Vec<LocalSample>,
}

impl Join {
    pub fn new(cfg: JoinConfig) -> Self {
        Self {
            cfg,
            pending: HashMap::new(),
            queue: VecDeque::new(),
            hosts: None,
            rule: None,
            range: vec![None; cfg.captures],
            writer_seen: HashMap::new(),
            stats: JoinStats::default(),
            now: i64::MIN,
            local: Vec::new(),
        }
    }

    /// Feed every finalised sample to `rule` (see [`Join::take_rule`]).
    pub(crate) fn collect_evidence(&mut self, rule: HostRule) {
        self.rule = Some(rule);
    }

    /// A participant announced these unicast addresses (SPDP): evidence for its host.
    pub(crate) fn announce(&mut self, participant: [u8; 12], addrs: &[IpAddr]) {
        if let Some(rule) = self.rule.as_mut() {
            rule.announce(participant, 0, addrs);
        }
    }

    pub(crate) fn take_rule(&mut self) -> Option<HostRule> {
        self.rule.take()
    }

    /// Writers' hosts from here on come from `hosts`.
    pub(crate) fn set_hosts(&mut self, hosts: Hosts) {
        self.hosts = Some(hosts);
    }

    pub(crate) fn stats(&self) -> JoinStats {
        JoinStats {
            pending: self.pending.len() as u64,
            ..self.stats
        }
    }

    /// A frame of `capture` was read at `ts` (reference clock): extends its time range.
    pub(crate) fn saw_frame(&mut self, capture: usize, ts: i64) {
        if let Some(r) = self.range.get_mut(capture) {
            *r = Some(match *r {
                None => (ts, ts),
                Some((a, b)) => (a.min(ts), b.max(ts)),
            });
        }
    }

    /// Add one observation of `capture`; true if it started a sample (none of its key was
    /// pending, or the one pending had been quiet for the window).
    pub fn push(&mut self, capture: usize, o: Obs, out: &mut Vec<SampleRow>) -> bool {
        self.stats.observations = self.stats.observations.saturating_add(1);
        self.now = self.now.max(o.ts_last);
        // (a single capture's join, the live exporter's, calls nothing lost)
        let writer_key = (capture, o.key.writer);
        let room = self.writer_seen.len() < MAX_WRITERS_SEEN;
        match self.writer_seen.get_mut(&writer_key) {
            _ if self.cfg.captures < 2 => {}
            Some(seen) => *seen = (seen.0.min(o.ts_first), seen.1.max(o.ts_first)),
            None if room => {
                self.writer_seen
                    .insert(writer_key, (o.ts_first, o.ts_first));
            }
            None => {
                self.stats.writers_not_remembered =
                    self.stats.writers_not_remembered.saturating_add(1);
            }
        }
        // A sample quiet for longer than the window is done, even if `advance` has not reached
        // it yet (its queue entry may wait behind a younger one): this copy starts a new one.
        let limit = self.now.saturating_sub(self.cfg.window_ns);
        if self
            .pending
            .get(&o.key)
            .is_some_and(|p| p.last_activity < limit)
        {
            self.finalise(o.key, out);
        }
        let n = self.cfg.captures;
        let started = !self.pending.contains_key(&o.key);
        if started {
            let bytes = pending_bytes(n, o.units_total);
            self.make_room(bytes, out);
            self.stats.keys = self.stats.keys.saturating_add(1);
            self.stats.bytes_held = self.stats.bytes_held.saturating_add(bytes as u64);
            self.pending.insert(
                o.key,
                Pending {
                    last_activity: o.ts_last,
                    topic: None,
                    type_name: None,
                    sample_size: o.sample_size,
                    fragmented: o.fragmented,
                    units: o.units_total,
                    bytes,
                    caps: (0..n).map(|_| CapObs::new()).collect(),
                },
            );
            self.queue.push_back((o.key, o.ts_last));
            self.stats.pending_peak = self.stats.pending_peak.max(self.pending.len() as u64);
        }
        let Some(p) = self.pending.get_mut(&o.key) else {
            return started;
        };
        p.last_activity = p.last_activity.max(o.ts_last);
        if p.topic.is_none() {
            p.topic = o.topic.clone();
            p.type_name = o.type_name.clone();
        }
        p.fragmented |= o.fragmented;
        if o.units_total > p.units {
            let nb = pending_bytes(n, o.units_total);
            self.stats.bytes_held = self
                .stats
                .bytes_held
                .saturating_add(nb.saturating_sub(p.bytes) as u64);
            p.bytes = nb;
            p.units = o.units_total;
        }
        let units = p.units as usize;
        let Some(c) = p.caps.get_mut(capture) else {
            return started;
        };
        c.seen = true;
        c.subs = c.subs.saturating_add(1);
        c.t_last = c.t_last.max(o.ts_last);
        if o.ts_first < c.t_first {
            c.t_first = o.ts_first;
            c.frame_first = o.frame_first;
            c.src = Some(o.src);
            c.src_mac = o.src_mac;
            c.dst = Some(o.dst);
            c.pcp = o.pcp;
            c.vlan_id = o.vlan_id;
            c.vendor = o.vendor;
            c.slot = o.slot;
        }
        if c.done.len() < units {
            c.done.resize(units, NOT_DONE);
            c.first_dst.resize(units, NO_DST);
        }
        // Destination bitmap for repair detection.
        let di = match c.dsts.iter().position(|d| d.addr == o.dst) {
            Some(i) => Some(i),
            None if c.dsts.len() < MAX_DSTS => {
                c.dsts.push(DstBits {
                    addr: o.dst,
                    multicast: is_multicast(&o.dst),
                    bits: Vec::new(),
                    again: Vec::new(),
                });
                Some(c.dsts.len() - 1)
            }
            None => None,
        };
        let mut repair = false;
        let start = o.unit_start.saturating_sub(1) as usize;
        let end = start.saturating_add(o.unit_count as usize).min(units);
        let dst_idx = di.and_then(|i| u16::try_from(i).ok()).unwrap_or(NO_DST);
        let same_datagram = c.last_frame == o.frame_last && c.subs > 1;
        c.last_frame = o.frame_last;
        for u in start..end {
            if let Some(slot) = c.done.get_mut(u) {
                if slot.t_last == i64::MAX {
                    c.filled = c.filled.saturating_add(1);
                }
                if o.ts_last < slot.t_last {
                    *slot = Done {
                        t_last: o.ts_last,
                        frame: o.frame_last,
                        t_first: o.ts_first,
                        dst: dst_idx,
                    };
                }
            }
            let again = !same_datagram
                && c.dsts
                    .iter()
                    .any(|d| (d.addr == o.dst || d.multicast) && bit(&d.bits, u));
            if again {
                repair = true;
            } else if let Some(f) = c.first_dst.get_mut(u) {
                *f = dst_idx;
            }
            if let Some(d) = di.and_then(|i| c.dsts.get_mut(i)) {
                if again && bit(&d.bits, u) {
                    if d.again.len() < units {
                        d.again.resize(units, i64::MAX);
                    }
                    if let Some(a) = d.again.get_mut(u) {
                        *a = (*a).min(o.ts_first);
                    }
                }
                set_bit(&mut d.bits, u);
            }
        }
        if repair {
            c.repairs = c.repairs.saturating_add(1);
        }
        self.stats.bytes_peak = self.stats.bytes_peak.max(self.stats.bytes_held);
        started
    }

    fn make_room(&mut self, extra: usize, out: &mut Vec<SampleRow>) {
        while !self.pending.is_empty()
            && (self.pending.len() >= self.cfg.max_pending
                || (self.stats.bytes_held as usize).saturating_add(extra) > self.cfg.max_bytes)
        {
            let Some((key, _)) = self.queue.pop_front() else {
                break;
            };
            if self.finalise(key, out) {
                self.stats.evicted_capacity = self.stats.evicted_capacity.saturating_add(1);
            }
        }
    }

    /// Finalise every sample idle for longer than the window before `now`.
    pub fn advance(&mut self, now: i64, out: &mut Vec<SampleRow>) {
        self.now = self.now.max(now);
        let limit = self.now.saturating_sub(self.cfg.window_ns);
        while let Some(&(key, stamp)) = self.queue.front() {
            if stamp >= limit {
                break;
            }
            self.queue.pop_front();
            let last = match self.pending.get(&key) {
                Some(p) => p.last_activity,
                None => continue,
            };
            if last >= limit {
                self.queue.push_back((key, last));
            } else {
                self.finalise(key, out);
            }
        }
    }

    /// End of input: finalise everything, oldest first.
    pub fn finish(&mut self, out: &mut Vec<SampleRow>) {
        while let Some((key, _)) = self.queue.pop_front() {
            self.finalise(key, out);
        }
    }

    /// Moves the samples a single-capture join finalised so far into `out`.
    pub fn take_local(&mut self, out: &mut Vec<LocalSample>) {
        out.append(&mut self.local);
    }
}

#[cfg(test)]
mod tests;
