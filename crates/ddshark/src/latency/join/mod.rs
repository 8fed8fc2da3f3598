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
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use latency_core::hosts::Sighting;
use latency_core::{HostRule, Hosts, LostRule, Seen};
use rtps_dissect::Guid;
use serde::Serialize;

use super::extract::{Key, Obs};

mod pending;

use pending::{
    bit, completed_by_repair, is_multicast, local_sample, pending_bytes, set_bit, CapObs, Done,
    DstBits, Pending, NOT_DONE, NO_DST,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Complete at the receiver: has a latency.
    Ok,
    /// Some but not all of its fragments reached the receiver.
    Incomplete,
    /// Sent towards the receiver, never seen there.
    Lost,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Incomplete => "incomplete",
            Status::Lost => "lost",
        }
    }
}

/// One sample (or submessage) from its writer's capture to one other capture.
#[derive(Debug, Clone)]
pub struct SampleRow {
    pub sender: usize,
    pub receiver: usize,
    pub key: Key,
    pub fragmented: bool,
    pub topic: Option<Arc<str>>,
    pub status: Status,
    pub t_send: i64,
    pub frame_send: u64,
    pub t_recv: Option<i64>,
    pub frame_recv: Option<u64>,
    /// Earliest complete datagram carrying any part of it at the receiver.
    pub(crate) t_recv_first: Option<i64>,
    pub latency_ns: Option<i64>,
    /// DATA/DATA_FRAG submessages carrying it in the sender's capture.
    pub tx_sender: u32,
    /// Of those, retransmissions (a fragment sent again to the same or after a multicast destination).
    pub repairs_sender: u32,
    pub rx_receiver: u32,
    /// The receiver completed it with data from a retransmission.
    pub repaired: bool,
    pub sample_size: u64,
    pub(crate) units: u32,
    pub(crate) src: Option<SocketAddr>,
    pub(crate) dst: Option<SocketAddr>,
    pub(crate) pcp: Option<u8>,
}

/// What one capture saw of one sample: the per-host half of a [`SampleRow`]. A join
/// of a single capture ([`JoinConfig::captures`] = 1) finalises samples into these
/// (the live exporter's `SAMPLE` spans, which the database then joins across hosts).
#[derive(Debug, Clone)]
pub struct LocalSample {
    pub key: Key,
    pub topic: Option<Arc<str>>,
    pub sample_size: u64,
    /// DDS fragments that make the sample (DATA: 1).
    pub units: u32,
    /// Of those, how many arrived in a complete datagram.
    pub units_seen: u32,
    /// First IP fragment of the earliest datagram carrying any part of it (`t_send` on
    /// the writer's host).
    pub t_first: i64,
    pub(crate) frame_first: u64,
    /// Slot of the span that carried it first.
    pub slot: u16,
    /// When every fragment had arrived in a complete datagram: per fragment the
    /// earliest, then the latest of those (`t_recv` on a receiving host); None while
    /// incomplete.
    pub t_complete: Option<i64>,
    pub(crate) frame_complete: Option<u64>,
    /// Latest end (last IP fragment) of any datagram carrying part of it.
    pub t_last: i64,
    /// DATA/DATA_FRAG submessages that carried it.
    pub submessages: u32,
    /// Of those, retransmissions (as `repairs_sender`).
    pub repairs: u32,
    pub(crate) src: Option<SocketAddr>,
    pub(crate) dst: Option<SocketAddr>,
    pub(crate) pcp: Option<u8>,
}

#[derive(Debug, Default, Clone, Copy, Serialize)]
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
            rule.announce(participant, addrs);
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

    /// Add one observation of `capture`.
    pub fn push(&mut self, capture: usize, o: Obs, out: &mut Vec<SampleRow>) {
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
        if !self.pending.contains_key(&o.key) {
            let bytes = pending_bytes(n, o.units_total);
            self.make_room(bytes, out);
            self.stats.keys = self.stats.keys.saturating_add(1);
            self.stats.bytes_held = self.stats.bytes_held.saturating_add(bytes as u64);
            self.pending.insert(
                o.key,
                Pending {
                    last_activity: o.ts_last,
                    topic: None,
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
            return;
        };
        p.last_activity = p.last_activity.max(o.ts_last);
        if p.topic.is_none() {
            p.topic = o.topic.clone();
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
            return;
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

    /// The writer's capture: the host rule's decision (latency_core::hosts), else the
    /// only capture that saw the sample, else the one that saw it first.
    fn home_of(&self, key: &Key, p: &Pending) -> Option<usize> {
        let src = p.caps.iter().find_map(|c| c.src).map(|s| s.ip());
        if let Some(h) = self
            .hosts
            .as_ref()
            .and_then(|h| h.home(&key.writer.prefix.0, src))
        {
            return Some(h.capture);
        }
        p.caps
            .iter()
            .enumerate()
            .filter(|(_, c)| c.seen)
            .min_by_key(|(i, c)| (c.t_first, *i))
            .map(|(i, _)| i)
    }

    fn observe(&mut self, key: &Key, p: &Pending) {
        let Some(rule) = self.rule.as_mut() else {
            return;
        };
        let sightings: Vec<Sighting> = p
            .caps
            .iter()
            .enumerate()
            .filter(|(_, c)| c.seen)
            .map(|(i, c)| Sighting {
                capture: i,
                t_first: c.t_first,
                src: c.src.map(|s| s.ip()),
                src_mac: c.src_mac,
            })
            .collect();
        rule.observe(&Seen {
            participant: key.writer.prefix.0,
            builtin: key.writer.entity.is_builtin(),
            sightings: &sightings,
        });
    }

    fn finalise(&mut self, key: Key, out: &mut Vec<SampleRow>) -> bool {
        let Some(p) = self.pending.remove(&key) else {
            return false;
        };
        self.stats.bytes_held = self.stats.bytes_held.saturating_sub(p.bytes as u64);
        self.stats.finalised = self.stats.finalised.saturating_add(1);
        if self.cfg.captures == 1 {
            if let Some(c) = p.caps.first().filter(|c| c.seen) {
                self.local.push(local_sample(key, &p, c));
            }
            return true;
        }
        self.observe(&key, &p);
        let Some(home) = self.home_of(&key, &p) else {
            return true;
        };
        let Some(s) = p.caps.get(home) else {
            return true;
        };
        if !s.seen {
            self.stats.receiver_only = self.stats.receiver_only.saturating_add(1);
            return true;
        }
        for (r, c) in p.caps.iter().enumerate() {
            if r == home {
                continue;
            }
            let complete = c.seen && c.filled >= p.units && p.units > 0;
            let status = if complete {
                Status::Ok
            } else if c.seen {
                Status::Incomplete
            } else if self.expected_at(r, key.writer, s) {
                Status::Lost
            } else {
                self.stats.not_expected = self.stats.not_expected.saturating_add(1);
                continue;
            };
            let (t_recv, frame_recv) = if complete {
                match c.done.iter().max_by_key(|d| (d.t_last, d.frame)) {
                    Some(d) => (Some(d.t_last), Some(d.frame)),
                    None => (None, None),
                }
            } else {
                (None, None)
            };
            let t_recv_first = c
                .done
                .iter()
                .map(|d| d.t_last)
                .filter(|&t| t != i64::MAX)
                .min();
            let repaired = complete && completed_by_repair(s, c);
            out.push(SampleRow {
                sender: home,
                receiver: r,
                key,
                fragmented: p.fragmented,
                topic: p.topic.clone(),
                status,
                t_send: s.t_first,
                frame_send: s.frame_first,
                t_recv,
                frame_recv,
                t_recv_first,
                latency_ns: t_recv.map(|t| t.saturating_sub(s.t_first)),
                tx_sender: s.subs,
                repairs_sender: s.repairs,
                rx_receiver: c.subs,
                repaired,
                sample_size: p.sample_size,
                units: p.units,
                src: s.src,
                dst: if c.seen { c.dst } else { s.dst },
                pcp: s.pcp,
            });
        }
        true
    }

    /// Moves the samples a single-capture join finalised so far into `out`.
    pub fn take_local(&mut self, out: &mut Vec<LocalSample>) {
        out.append(&mut self.local);
    }

    /// Should capture `r` have seen a sample its writer's capture saw as `s`?
    fn expected_at(&self, r: usize, writer: Guid, s: &CapObs) -> bool {
        self.cfg.lost.expected(
            s.t_first,
            self.range.get(r).copied().flatten(),
            self.writer_seen.get(&(r, writer)).copied(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtps_dissect::{EntityId, Guid, GuidPrefix};

    const S: i64 = 1_000_000_000;

    fn obs(writer: u8, ts: i64) -> Obs {
        let addr: SocketAddr = "10.0.0.1:7400"
            .parse()
            .unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0)));
        Obs {
            key: Key {
                writer: Guid {
                    prefix: GuidPrefix([writer; 12]),
                    entity: EntityId([0, 0, 1, 2]),
                },
                sn: 1,
                frag_start: 0,
            },
            unit_start: 1,
            unit_count: 1,
            units_total: 1,
            sample_size: 100,
            fragmented: false,
            ts_first: ts,
            ts_last: ts,
            frame_first: 0,
            frame_last: 0,
            src: addr,
            dst: addr,
            src_mac: None,
            pcp: None,
            topic: None,
            index: 0,
            slot: 0,
        }
    }

    /// latency_core's lost rule: a sample the other capture missed is lost there only if that
    /// capture saw the same writer within the receiver window (not merely its destination).
    #[test]
    fn a_sample_is_lost_only_at_a_receiver_of_its_writer() {
        let mut join = Join::new(JoinConfig {
            captures: 2,
            window_ns: S,
            max_pending: 1000,
            max_bytes: 1 << 20,
            lost: LostRule::default(),
        });
        let mut rows = Vec::new();
        join.saw_frame(1, 0);
        join.saw_frame(1, 100 * S);
        let with_sn = |mut o: Obs, sn| {
            o.key.sn = sn;
            o
        };
        join.push(0, obs(1, S), &mut rows);
        join.push(1, obs(1, S + 1_000_000), &mut rows);
        join.push(0, with_sn(obs(1, 5 * S), 2), &mut rows);
        // writer 2, to the same destination, never seen by capture 1
        join.push(0, obs(2, 5 * S), &mut rows);
        join.finish(&mut rows);
        let mut got: Vec<(u8, i64, &str)> = rows
            .iter()
            .map(|r| (r.key.writer.prefix.0[0], r.key.sn, r.status.name()))
            .collect();
        got.sort_unstable();
        assert_eq!(got, vec![(1, 1, "ok"), (1, 2, "lost")]);
        assert_eq!(join.stats().not_expected, 1);
    }

    /// A copy after more than the window of quiet starts a new sample even while the old
    /// one's queue entry still waits behind a younger one (it was a "repair" of the old one).
    #[test]
    fn a_copy_after_a_quiet_window_is_a_new_sample() {
        let mut join = Join::new(JoinConfig {
            captures: 1,
            window_ns: 10 * S,
            max_pending: 1000,
            max_bytes: 1 << 20,
            lost: LostRule::default(),
        });
        let mut rows = Vec::new();
        join.push(0, obs(1, 0), &mut rows);
        join.push(0, obs(1, 5 * S), &mut rows);
        join.push(0, obs(2, 9 * S), &mut rows);
        // writer 1's entry is re-queued behind writer 2's (stamp 5 s behind 9 s)
        join.advance(10 * S + 1, &mut rows);
        join.push(0, obs(2, 14 * S), &mut rows);
        // 12 s after writer 1's last copy
        join.push(0, obs(1, 17 * S), &mut rows);
        join.finish(&mut rows);
        let mut local = Vec::new();
        join.take_local(&mut local);
        let mut firsts: Vec<(u8, i64, u32)> = local
            .iter()
            .map(|l| (l.key.writer.prefix.0[0], l.t_first, l.submessages))
            .collect();
        firsts.sort_unstable();
        assert_eq!(firsts, vec![(1, 0, 2), (1, 17 * S, 1), (2, 9 * S, 2)]);
    }
}
