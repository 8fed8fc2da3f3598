//! What the state holds per participant, writer and reader, and how one sample piece
//! adds to a writer's counters.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use super::bounded::Aged;
use super::secured::SecuredOf;
use super::seq::{Finalized, Observed, SeqTracker};
use super::timing::Timing;
use super::window::{Counts, Windowed};
use super::{size_bucket, StateConfig, SIZE_BUCKETS};
use rtps_dissect::{Datagram, EndpointInfo, Guid, GuidPrefix, ParticipantInfo, VendorId};

/// Why an entity is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GoneReason {
    Disposed,
    Unregistered,
    LeaseExpired,
    ParticipantGone,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gone {
    pub(crate) at_ns: u64,
    pub(crate) reason: GoneReason,
}

pub(super) fn gone_reason(status_info: u32) -> GoneReason {
    if status_info & rtps_dissect::discovery::STATUS_DISPOSED != 0 {
        GoneReason::Disposed
    } else {
        GoneReason::Unregistered
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Participant {
    pub(crate) prefix: GuidPrefix,
    pub(crate) info: Option<Arc<ParticipantInfo>>,
    pub(crate) from_cache: bool,
    /// Vendor and version of the RTPS header of its messages.
    pub(crate) vendor: Option<VendorId>,
    pub(crate) version: Option<(u8, u8)>,
    pub(crate) first_seen_ns: u64,
    pub(crate) last_seen_ns: u64,
    pub(crate) last_spdp_ns: Option<u64>,
    pub(crate) addresses: Vec<IpAddr>,
    pub(crate) datagrams: u64,
    pub(crate) bytes: u64,
    pub(crate) gone: Option<Gone>,
    /// What it sent secured (DDS Security); `None` until it sends any.
    pub(crate) secured: Option<Box<SecuredOf>>,
}

pub(super) const MAX_ADDRESSES: usize = 8;

impl Aged for Participant {
    fn last_seen(&self) -> u64 {
        self.last_seen_ns
    }
}

/// What a writer and a reader have alike: who it is, what discovery (or the discovery cache)
/// says of it, when it was seen and whether it is gone.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub(crate) guid: Guid,
    pub(crate) info: Option<Arc<EndpointInfo>>,
    pub(crate) from_cache: bool,
    pub(crate) first_seen_ns: u64,
    pub(crate) last_seen_ns: u64,
    /// Capture time SEDP named it.
    pub(crate) discovered_ns: Option<u64>,
    pub(crate) gone: Option<Gone>,
}

impl Endpoint {
    /// An endpoint first seen at `ts`, with what the discovery cache knows of it.
    fn new(guid: Guid, ts: u64, cached: Option<&Arc<EndpointInfo>>) -> Self {
        Endpoint {
            guid,
            info: cached.cloned(),
            from_cache: cached.is_some(),
            first_seen_ns: ts,
            last_seen_ns: ts,
            discovered_ns: None,
            gone: None,
        }
    }

    /// An SEDP record of it at `now` (from the wire, or from the discovery cache, which
    /// yields to anything already known); true if the wire named it for the first time.
    pub(super) fn discover(&mut self, info: Arc<EndpointInfo>, from_cache: bool, now: u64) -> bool {
        if from_cache && self.info.is_some() {
            return false;
        }
        let first = self.discovered_ns.is_none() && !from_cache;
        if first {
            self.discovered_ns = Some(now);
        }
        self.info = Some(info);
        self.from_cache = from_cache;
        self.gone = None;
        first
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Writer {
    pub(crate) endpoint: Endpoint,
    /// Samples seen before discovery named it.
    pub(crate) samples_before_discovery: u64,
    pub(crate) stats: Windowed,
    pub(crate) size_min: Option<u64>,
    pub(crate) size_max: u64,
    /// New samples by size, see [`size_bucket`].
    pub(crate) size_hist: [u64; SIZE_BUCKETS],
    pub(crate) seq: SeqTracker,
    /// Datagrams carrying its DATA/DATA_FRAG by outer 802.1Q PCP; index 8 = untagged.
    pub(crate) pcp: [u64; 9],
    pub(crate) vlan_id: Option<u16>,
    pub(crate) last_src: Option<SocketAddr>,
    pub(crate) sn_jumps: u64,
    pub(crate) invalid_sn: u64,
    pub(crate) timing: Timing,
}

impl Aged for Writer {
    fn last_seen(&self) -> u64 {
        self.endpoint.last_seen_ns
    }
}

/// What a DATA/DATA_FRAG's datagram adds to its writer: the datagram's IP fragments and
/// UDP bytes, once per writer the datagram carries (zero for the writer's later pieces).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct DatagramShare {
    pub(super) ip_fragments: u64,
    pub(super) wire_bytes: u64,
}

/// Add one DATA/DATA_FRAG to a writer's traffic counters.
pub(super) fn count_sample_piece(
    c: &mut Counts,
    observed: Observed,
    is_frag: bool,
    sample_size: u64,
    share: DatagramShare,
) {
    if is_frag {
        c.data_frag_submessages = c.data_frag_submessages.saturating_add(1);
    } else {
        c.data_submessages = c.data_submessages.saturating_add(1);
    }
    c.ip_fragments = c.ip_fragments.saturating_add(share.ip_fragments);
    c.wire_bytes = c.wire_bytes.saturating_add(share.wire_bytes);
    match observed {
        Observed::NewSample { late_fill } => {
            c.samples = c.samples.saturating_add(1);
            c.bytes = c.bytes.saturating_add(sample_size);
            if late_fill {
                c.lost = c.lost.saturating_sub(1);
            }
        }
        Observed::Repeat {
            retransmitted,
            repaired,
            fanout,
            was_fanout,
        } => {
            c.repeat_submessages = c.repeat_submessages.saturating_add(1);
            if retransmitted {
                c.retransmitted = c.retransmitted.saturating_add(1);
            }
            if repaired {
                c.repaired = c.repaired.saturating_add(1);
            }
            if fanout {
                c.fanout = c.fanout.saturating_add(1);
            }
            if was_fanout {
                c.fanout = c.fanout.saturating_sub(1);
            }
        }
        Observed::MoreFragments | Observed::Invalid => {}
    }
}

impl Writer {
    /// A writer first seen at `ts`, with what the discovery cache knows of it.
    pub(super) fn new(
        config: &StateConfig,
        guid: Guid,
        ts: u64,
        cached: Option<&Arc<EndpointInfo>>,
    ) -> Self {
        Writer {
            endpoint: Endpoint::new(guid, ts, cached),
            samples_before_discovery: 0,
            stats: Windowed::new(config.window_ns),
            size_min: None,
            size_max: 0,
            size_hist: [0; SIZE_BUCKETS],
            seq: SeqTracker::default(),
            pcp: [0; 9],
            vlan_id: None,
            last_src: None,
            sn_jumps: 0,
            timing: Timing::default(),
            invalid_sn: 0,
        }
    }

    /// What a sequence step finalized (lost, incomplete, jumps). Called on the writer
    /// already in hand: most steps finalize nothing, and none needs a second lookup.
    #[inline]
    pub(super) fn apply_final(&mut self, now: u64, fin: Finalized) {
        if fin == Finalized::default() {
            return;
        }
        self.sn_jumps = self.sn_jumps.saturating_add(fin.jumps);
        self.stats.record(now, |c| {
            c.lost = c.lost.saturating_add(fin.lost);
            c.incomplete = c.incomplete.saturating_add(fin.incomplete);
        });
    }

    /// The first DATA/DATA_FRAG of this writer in a datagram: its 802.1Q priority and VLAN.
    pub(super) fn credit_datagram(&mut self, d: &Datagram<'_>) {
        let slot = d.pcp.map_or(8, usize::from).min(8);
        if let Some(n) = self.pcp.get_mut(slot) {
            *n = n.saturating_add(1);
        }
        if d.vlan_id.is_some() {
            self.vlan_id = d.vlan_id;
        }
    }

    pub(super) fn record_sample_size(&mut self, size: u64) {
        self.size_min = Some(self.size_min.map_or(size, |m| m.min(size)));
        self.size_max = self.size_max.max(size);
        if let Some(b) = self.size_hist.get_mut(size_bucket(size)) {
            *b = b.saturating_add(1);
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Reader {
    pub(crate) endpoint: Endpoint,
    pub(crate) acknacks: u64,
    pub(crate) acknack_requested_sns: u64,
    pub(crate) nackfrags: u64,
}

impl Reader {
    /// A reader first seen at `ts`, with what the discovery cache knows of it.
    pub(super) fn new(guid: Guid, ts: u64, cached: Option<&Arc<EndpointInfo>>) -> Self {
        Reader {
            endpoint: Endpoint::new(guid, ts, cached),
            acknacks: 0,
            acknack_requested_sns: 0,
            nackfrags: 0,
        }
    }
}

impl Aged for Reader {
    fn last_seen(&self) -> u64 {
        self.endpoint.last_seen_ns
    }
}
