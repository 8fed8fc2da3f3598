//! A sample in the join's window: what each capture saw of it (first and last datagram,
//! per DDS fragment the earliest complete datagram, destinations for repairs), and its
//! per-host half once finalised.

use std::net::SocketAddr;
use std::sync::Arc;

use super::LocalSample;
use crate::latency::extract::Key;
use rtps_dissect::VendorId;

#[derive(Debug)]
pub(super) struct DstBits {
    pub(super) addr: SocketAddr,
    pub(super) multicast: bool,
    /// Units sent to this destination.
    pub(super) bits: Vec<u64>,
    /// Per unit: earliest time it was sent to this destination again (empty until then).
    pub(super) again: Vec<i64>,
}

/// The earliest complete datagram carrying a unit.
#[derive(Debug, Clone, Copy)]
pub(super) struct Done {
    pub(super) t_last: i64,
    pub(super) frame: u64,
    pub(super) t_first: i64,
    /// Index into the capture's destinations (`NO_DST` if not tracked).
    pub(super) dst: u16,
}

pub(super) const NO_DST: u16 = u16::MAX;
pub(super) const NOT_DONE: Done = Done {
    t_last: i64::MAX,
    frame: 0,
    t_first: i64::MAX,
    dst: NO_DST,
};

#[derive(Debug)]
pub(super) struct CapObs {
    pub(super) seen: bool,
    pub(super) t_first: i64,
    pub(super) frame_first: u64,
    pub(super) src: Option<SocketAddr>,
    pub(super) src_mac: Option<[u8; 6]>,
    pub(super) dst: Option<SocketAddr>,
    pub(super) pcp: Option<u8>,
    pub(super) vlan_id: Option<u16>,
    pub(super) vendor: VendorId,
    pub(super) slot: u16,
    pub(super) t_last: i64,
    pub(super) subs: u32,
    /// Per unit: the earliest complete datagram carrying it.
    pub(super) done: Vec<Done>,
    pub(super) filled: u32,
    pub(super) dsts: Vec<DstBits>,
    pub(super) repairs: u32,
    /// Per unit: destination index of its first transmission.
    pub(super) first_dst: Vec<u16>,
    /// Frame that completed the last datagram seen (a unit twice in one datagram is no repair).
    pub(super) last_frame: u64,
}

impl CapObs {
    pub(super) fn new() -> Self {
        Self {
            seen: false,
            t_first: i64::MAX,
            frame_first: 0,
            src: None,
            src_mac: None,
            dst: None,
            pcp: None,
            vlan_id: None,
            vendor: VendorId([0, 0]),
            slot: 0,
            t_last: i64::MIN,
            subs: 0,
            done: Vec::new(),
            filled: 0,
            dsts: Vec::new(),
            repairs: 0,
            first_dst: Vec::new(),
            last_frame: 0,
        }
    }
}

#[derive(Debug)]
pub(super) struct Pending {
    pub(super) last_activity: i64,
    pub(super) topic: Option<Arc<str>>,
    pub(super) type_name: Option<Arc<str>>,
    pub(super) sample_size: u64,
    pub(super) fragmented: bool,
    pub(super) units: u32,
    pub(super) bytes: usize,
    pub(super) caps: Vec<CapObs>,
}

pub(super) fn bit(bits: &[u64], u: usize) -> bool {
    bits.get(u / 64)
        .is_some_and(|w| w & (1u64 << (u % 64)) != 0)
}

pub(super) fn set_bit(bits: &mut Vec<u64>, u: usize) {
    let w = u / 64;
    if bits.len() <= w {
        bits.resize(w + 1, 0);
    }
    if let Some(x) = bits.get_mut(w) {
        *x |= 1u64 << (u % 64);
    }
}

pub(super) fn is_multicast(a: &SocketAddr) -> bool {
    a.ip().is_multicast()
}

/// Heap bytes a pending sample takes, from the sizes of what it holds: its map entry and
/// queue slot (twice: hash-table slack and deque growth), per capture its record, one
/// destination with its bitmap and the allocator's overhead of the five vectors, and per
/// fragment and capture the earliest datagram, the first destination, a repair time and a
/// bit; doubled, because that is what the process's RSS grew by per byte of these sizes
/// (`ddshark -r --otlp` of 300 s of the Autoware mix, sample windows of 1, 5 and 10 s:
/// +14, +61 and +104 MiB of RSS for 6, 27 and 50 MiB of them).
pub(super) fn pending_bytes(captures: usize, units: u32) -> usize {
    use std::mem::size_of;
    const ALLOC_OVERHEAD: usize = 16;
    let fixed = 2 * (size_of::<Key>() + size_of::<Pending>() + size_of::<(Key, i64)>());
    let per_capture = size_of::<CapObs>() + size_of::<DstBits>() + 5 * ALLOC_OVERHEAD;
    let per_unit = size_of::<Done>() + size_of::<u16>() + size_of::<i64>() + 1;
    let per_sample = captures
        .saturating_mul(per_capture.saturating_add((units as usize).saturating_mul(per_unit)));
    fixed.saturating_add(per_sample).saturating_mul(2)
}

/// Did the receiver (`r`) complete a sample with data from a retransmission of the
/// sender (`s`)? For each unit, the receiver's earliest complete datagram went to some
/// destination D: it is a repair when the sender had already re-sent the unit to D
/// before that datagram reached the receiver, or when the unit's first transmission
/// went to a multicast group and the receiver only got it later through D.
pub(super) fn completed_by_repair(s: &CapObs, r: &CapObs) -> bool {
    r.done.iter().enumerate().any(|(u, d)| {
        let Some(addr) = r.dsts.get(usize::from(d.dst)).map(|x| x.addr) else {
            return false;
        };
        let Some(i) = s.dsts.iter().position(|x| x.addr == addr) else {
            return false;
        };
        let resent = s
            .dsts
            .get(i)
            .and_then(|x| x.again.get(u))
            .is_some_and(|&t| t <= d.t_first);
        let first = s.first_dst.get(u).copied().unwrap_or(NO_DST);
        let other_path = first != NO_DST
            && usize::from(first) != i
            && s.dsts.get(usize::from(first)).is_some_and(|x| x.multicast);
        resent || other_path
    })
}

pub(super) fn local_sample(key: Key, p: &Pending, c: &CapObs) -> LocalSample {
    let complete = c.filled >= p.units && p.units > 0;
    let last_needed = c.done.iter().max_by_key(|d| (d.t_last, d.frame));
    let (t_complete, frame_complete) = match last_needed {
        Some(d) if complete => (Some(d.t_last), Some(d.frame)),
        _ => (None, None),
    };
    LocalSample {
        key,
        topic: p.topic.clone(),
        type_name: p.type_name.clone(),
        sample_size: p.sample_size,
        units: p.units,
        units_seen: c.filled.min(p.units),
        t_first: c.t_first,
        frame_first: c.frame_first,
        slot: c.slot,
        t_complete,
        frame_complete,
        t_last: c.t_last,
        submessages: c.subs,
        repairs: c.repairs,
        src: c.src,
        src_mac: c.src_mac,
        dst: c.dst,
        pcp: c.pcp,
        vlan_id: c.vlan_id,
        vendor: c.vendor,
    }
}
