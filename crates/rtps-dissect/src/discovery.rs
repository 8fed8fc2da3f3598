//! SPDP participant and SEDP endpoint records decoded from ParameterLists, the
//! bounded reassembly of discovery data sent as DATA_FRAG, and the bounded
//! writer/reader GUID → topic map.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use crate::plist::*;
use crate::types::{BuiltinWriter, Guid, GuidPrefix, KeyHasher, Locator, SequenceNumber, VendorId};

/// Reliability kind on the wire (RTPS values: 1 best effort, 2 reliable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reliability {
    BestEffort,
    Reliable,
    Other(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Durability {
    Volatile,
    TransientLocal,
    Transient,
    Persistent,
    Other(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum History {
    KeepLast(i32),
    KeepAll,
    Other(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Liveliness {
    Automatic,
    ManualByParticipant,
    ManualByTopic,
    Other(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ownership {
    Shared,
    Exclusive,
    Other(u32),
}

impl Reliability {
    pub fn name(&self) -> &'static str {
        match self {
            Self::BestEffort => "best_effort",
            Self::Reliable => "reliable",
            Self::Other(_) => "other",
        }
    }
}
impl Durability {
    pub fn name(&self) -> &'static str {
        match self {
            Self::Volatile => "volatile",
            Self::TransientLocal => "transient_local",
            Self::Transient => "transient",
            Self::Persistent => "persistent",
            Self::Other(_) => "other",
        }
    }
    /// Rank for request/offered compatibility (higher offers more).
    pub fn rank(&self) -> u32 {
        match self {
            Self::Volatile => 0,
            Self::TransientLocal => 1,
            Self::Transient => 2,
            Self::Persistent => 3,
            Self::Other(v) => *v,
        }
    }
}
impl Liveliness {
    pub fn name(&self) -> &'static str {
        match self {
            Self::Automatic => "automatic",
            Self::ManualByParticipant => "manual_by_participant",
            Self::ManualByTopic => "manual_by_topic",
            Self::Other(_) => "other",
        }
    }
    pub fn rank(&self) -> u32 {
        match self {
            Self::Automatic => 0,
            Self::ManualByParticipant => 1,
            Self::ManualByTopic => 2,
            Self::Other(v) => *v,
        }
    }
}
impl Ownership {
    pub fn name(&self) -> &'static str {
        match self {
            Self::Shared => "shared",
            Self::Exclusive => "exclusive",
            Self::Other(_) => "other",
        }
    }
}
impl History {
    pub fn name(&self) -> String {
        match self {
            Self::KeepLast(d) => format!("keep_last({d})"),
            Self::KeepAll => "keep_all".to_string(),
            Self::Other(v) => format!("other({v})"),
        }
    }
}

/// QoS announced with an endpoint. `None` = not sent (the spec default applies).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointQos {
    pub reliability: Option<Reliability>,
    pub durability: Option<Durability>,
    pub history: Option<History>,
    /// Deadline period in ns; `Some(None)` = infinite.
    pub deadline_ns: Option<Option<i64>>,
    pub liveliness: Option<Liveliness>,
    pub liveliness_lease_ns: Option<Option<i64>>,
    pub ownership: Option<Ownership>,
    pub ownership_strength: Option<i32>,
    pub partitions: Vec<String>,
    pub data_representation: Vec<i16>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EndpointKind {
    Writer,
    Reader,
}

/// An SEDP publication or subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointInfo {
    pub kind: EndpointKind,
    pub guid: Guid,
    pub participant_guid: Option<Guid>,
    pub topic: String,
    pub type_name: String,
    pub qos: EndpointQos,
    pub unicast_locators: Vec<Locator>,
    pub multicast_locators: Vec<Locator>,
}

impl EndpointInfo {
    /// Every locator it announced is shared memory: its traffic never reaches the wire.
    pub fn shared_memory_only(&self) -> bool {
        let mut all = self
            .unicast_locators
            .iter()
            .chain(&self.multicast_locators)
            .peekable();
        all.peek().is_some() && all.all(Locator::is_shared_memory)
    }
}

/// An SPDP participant announcement.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParticipantInfo {
    pub guid_prefix: GuidPrefix,
    pub vendor: Option<VendorId>,
    pub protocol_version: Option<(u8, u8)>,
    pub domain_id: Option<u32>,
    /// How `domain_id` is known: PID_DOMAIN_ID, or (vendors that leave it out, such as
    /// Fast DDS) the well-known port mapping of its metatraffic locators.
    pub domain_id_source: Option<DomainIdSource>,
    pub domain_tag: Option<String>,
    pub entity_name: Option<String>,
    pub lease_ns: Option<Option<i64>>,
    pub default_unicast: Vec<Locator>,
    pub default_multicast: Vec<Locator>,
    pub metatraffic_unicast: Vec<Locator>,
    pub metatraffic_multicast: Vec<Locator>,
    pub builtin_endpoints: Option<u32>,
    /// Vendor-specific PIDs seen, with their meaning for this vendor where known.
    pub vendor_pids: Vec<(u16, &'static str)>,
}

/// Where a participant's domain id comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DomainIdSource {
    Pid,
    PortMapping,
}

impl DomainIdSource {
    pub fn name(self) -> &'static str {
        match self {
            Self::Pid => "pid_domain_id",
            Self::PortMapping => "port_mapping",
        }
    }
}

/// RTPS 9.6.1.1 well-known ports: PB + DG·domain + offset, PB 7400, DG 250.
pub mod port_mapping {
    pub(crate) const PORT_BASE: u32 = 7400;
    pub(crate) const DOMAIN_GAIN: u32 = 250;
    pub(crate) const PARTICIPANT_GAIN: u32 = 2;
    /// d0: metatraffic multicast.
    pub(crate) const D0: u32 = 0;
    /// d1: metatraffic unicast (+ PG · participant id).
    pub(crate) const D1: u32 = 10;
    /// Domains whose ports still fit in 16 bits.
    pub(crate) const MAX_DOMAIN: u32 = 232;

    /// The domain a metatraffic port belongs to: d0 for multicast, d1 + PG·p for unicast.
    pub(crate) fn metatraffic_domain(port: u32, multicast: bool) -> Option<u32> {
        let offset = port.checked_sub(PORT_BASE)?;
        let domain = offset.checked_div(DOMAIN_GAIN)?;
        let rest = offset.checked_rem(DOMAIN_GAIN)?;
        let fits = if multicast {
            rest == D0
        } else {
            rest.checked_sub(D1)
                .and_then(|p| p.checked_rem(PARTICIPANT_GAIN))
                == Some(0)
        };
        (fits && domain <= MAX_DOMAIN).then_some(domain)
    }
}

impl ParticipantInfo {
    /// Domain id from the metatraffic locators' ports (as Wireshark does when SPDP has no
    /// PID_DOMAIN_ID); multicast first, as unicast ports may be chosen freely.
    fn domain_from_ports(&self) -> Option<u32> {
        let multicast = self
            .metatraffic_multicast
            .iter()
            .find_map(|l| port_mapping::metatraffic_domain(l.port, true));
        multicast.or_else(|| {
            self.metatraffic_unicast
                .iter()
                .find_map(|l| port_mapping::metatraffic_domain(l.port, false))
        })
    }

    pub fn shared_memory_only(&self) -> bool {
        let mut all = self
            .default_unicast
            .iter()
            .chain(&self.default_multicast)
            .peekable();
        all.peek().is_some() && all.all(Locator::is_shared_memory)
    }
}

/// PID_STATUS_INFO flags.
pub const STATUS_DISPOSED: u32 = 0x1;
pub(crate) const STATUS_UNREGISTERED: u32 = 0x2;

/// What one discovery DATA announced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiscoveryRecord {
    /// Shared: the dissector keeps recent records for repeats of the same bytes
    /// (periodic SPDP, SEDP repairs), and the state keeps the latest of each entity,
    /// so handing one on is a reference count, not a copy of its strings and lists.
    Participant(Arc<ParticipantInfo>),
    Endpoint(Arc<EndpointInfo>),
    /// Topic announcement (SEDP topic writer, sent by some vendors).
    Topic {
        topic: String,
        type_name: String,
    },
    /// Dispose/unregister of a participant or endpoint, by key.
    Gone {
        role: BuiltinWriter,
        /// The disposed entity (from key hash or the payload's GUID).
        guid: Option<Guid>,
        status_info: u32,
    },
}

/// Meaning of a vendor-specific PID for the vendor that sent it.
pub(crate) fn vendor_pid_name(vendor: VendorId, pid: u16) -> Option<&'static str> {
    match (vendor.0, pid) {
        ([0x01, 0x10], 0x8007) | ([0x01, 0x02], 0x8007) => Some("ADLINK_PARTICIPANT_VERSION_INFO"),
        ([0x01, 0x10], 0x8019) => Some("CYCLONE_RECEIVE_BUFFER_SIZE"),
        ([0x01, 0x10], 0x801a) => Some("CYCLONE_REQUESTS_KEYHASH"),
        ([0x01, 0x10], 0x801b) => Some("CYCLONE_REDUNDANT_NETWORKING"),
        ([0x01, 0x01], 0x8000) => Some("RTI_PRODUCT_VERSION"),
        ([0x01, 0x01], 0x8014) => Some("RTI_ENTITY_NAME"),
        ([0x01, 0x01], 0x8016) => Some("RTI_ROLE_NAME"),
        ([0x01, 0x01], 0x8017) => Some("RTI_DOMAIN_ID"),
        ([0x01, 0x01], 0x8021) => Some("RTI_TRANSPORT_INFO"),
        ([0x01, 0x0f], 0x8000) => Some("FASTDDS_PERSISTENCE_GUID"),
        ([0x01, 0x0f], 0x8007) => Some("FASTDDS_PRODUCT_VERSION"),
        _ => None,
    }
}

fn reliability(p: &Parameter<'_>) -> Option<Reliability> {
    p.u32().ok().map(|k| match k {
        1 => Reliability::BestEffort,
        2 | 3 => Reliability::Reliable,
        o => Reliability::Other(o),
    })
}

fn durability(p: &Parameter<'_>) -> Option<Durability> {
    p.u32().ok().map(|k| match k {
        0 => Durability::Volatile,
        1 => Durability::TransientLocal,
        2 => Durability::Transient,
        3 => Durability::Persistent,
        o => Durability::Other(o),
    })
}

fn history(p: &Parameter<'_>) -> Option<History> {
    let kind = p.u32().ok()?;
    let b = crate::bytes::Bytes::new(p.value, crate::error::Layer::ParameterList, p.little_endian);
    Some(match kind {
        0 => History::KeepLast(b.i32(4).unwrap_or(1)),
        1 => History::KeepAll,
        o => History::Other(o),
    })
}

fn liveliness(p: &Parameter<'_>) -> Option<Liveliness> {
    p.u32().ok().map(|k| match k {
        0 => Liveliness::Automatic,
        1 => Liveliness::ManualByParticipant,
        2 => Liveliness::ManualByTopic,
        o => Liveliness::Other(o),
    })
}

fn ownership(p: &Parameter<'_>) -> Option<Ownership> {
    p.u32().ok().map(|k| match k {
        0 => Ownership::Shared,
        1 => Ownership::Exclusive,
        o => Ownership::Other(o),
    })
}

fn data_representation(p: &Parameter<'_>) -> Vec<i16> {
    let b = crate::bytes::Bytes::new(p.value, crate::error::Layer::ParameterList, p.little_endian);
    let Ok(count) = b.u32(0) else {
        return Vec::new();
    };
    let count = usize::try_from(count).unwrap_or(0).min(p.value.len() / 2);
    (0..count)
        .map_while(|i| {
            let off = i.checked_mul(2)?.checked_add(4)?;
            b.u16(off).ok().map(|v| v as i16)
        })
        .collect()
}

/// Decode the ParameterList of a DATA from a built-in discovery writer.
///
/// `status_info` is the PID_STATUS_INFO found in the inline QoS (or 0), `key` the
/// entity named by PID_KEY_HASH there, if any.
pub fn decode_discovery(
    role: BuiltinWriter,
    vendor: VendorId,
    plist: Option<ParameterList<'_>>,
    status_info: u32,
    key: Option<Guid>,
) -> Option<DiscoveryRecord> {
    let mut status = status_info;
    if let Some(pl) = plist {
        if let Some(p) = pl.find(PID_STATUS_INFO) {
            status |= p.status_info().unwrap_or(0);
        }
    }
    let disposed = status & (STATUS_DISPOSED | STATUS_UNREGISTERED) != 0;
    let gone_guid = |pl: Option<ParameterList<'_>>, pid: u16| {
        pl.and_then(|l| l.find(pid))
            .and_then(|p| p.guid().ok())
            .or(key)
    };
    match role {
        BuiltinWriter::Participant => {
            if disposed {
                return Some(DiscoveryRecord::Gone {
                    role,
                    guid: gone_guid(plist, PID_PARTICIPANT_GUID),
                    status_info: status,
                });
            }
            let pl = plist?;
            let mut info = ParticipantInfo::default();
            let mut have_guid = false;
            for p in pl.iter().map_while(Result::ok) {
                match p.id() {
                    PID_PARTICIPANT_GUID => {
                        if let Ok(g) = p.guid() {
                            info.guid_prefix = g.prefix;
                            have_guid = true;
                        }
                    }
                    _ if p.is_vendor_specific() => {
                        if let Some(name) = vendor_pid_name(vendor, p.raw_id) {
                            info.vendor_pids.push((p.raw_id, name));
                        }
                    }
                    PID_VENDOR_ID => {
                        info.vendor = p
                            .value
                            .get(..2)
                            .and_then(|v| <[u8; 2]>::try_from(v).ok())
                            .map(VendorId);
                    }
                    PID_PROTOCOL_VERSION => {
                        if let [a, b, ..] = p.value {
                            info.protocol_version = Some((*a, *b));
                        }
                    }
                    PID_DOMAIN_ID => info.domain_id = p.u32().ok(),
                    PID_DOMAIN_TAG => info.domain_tag = p.string().ok(),
                    PID_ENTITY_NAME => info.entity_name = p.string().ok(),
                    PID_PARTICIPANT_LEASE_DURATION => info.lease_ns = p.duration_ns(0).ok(),
                    PID_DEFAULT_UNICAST_LOCATOR => info.default_unicast.extend(p.locator().ok()),
                    PID_DEFAULT_MULTICAST_LOCATOR => {
                        info.default_multicast.extend(p.locator().ok())
                    }
                    PID_METATRAFFIC_UNICAST_LOCATOR => {
                        info.metatraffic_unicast.extend(p.locator().ok())
                    }
                    PID_METATRAFFIC_MULTICAST_LOCATOR => {
                        info.metatraffic_multicast.extend(p.locator().ok())
                    }
                    PID_BUILTIN_ENDPOINT_SET => info.builtin_endpoints = p.u32().ok(),
                    _ => {}
                }
            }
            if info.domain_id.is_some() {
                info.domain_id_source = Some(DomainIdSource::Pid);
            } else if let Some(d) = info.domain_from_ports() {
                info.domain_id = Some(d);
                info.domain_id_source = Some(DomainIdSource::PortMapping);
            }
            have_guid.then(|| DiscoveryRecord::Participant(Arc::new(info)))
        }
        BuiltinWriter::Publication | BuiltinWriter::Subscription => {
            if disposed {
                return Some(DiscoveryRecord::Gone {
                    role,
                    guid: gone_guid(plist, PID_ENDPOINT_GUID),
                    status_info: status,
                });
            }
            let pl = plist?;
            let mut guid = None;
            let mut info = EndpointInfo {
                kind: if role == BuiltinWriter::Publication {
                    EndpointKind::Writer
                } else {
                    EndpointKind::Reader
                },
                guid: Guid::default(),
                participant_guid: None,
                topic: String::new(),
                type_name: String::new(),
                qos: EndpointQos::default(),
                unicast_locators: Vec::new(),
                multicast_locators: Vec::new(),
            };
            for p in pl.iter().map_while(Result::ok) {
                if p.is_vendor_specific() {
                    continue;
                }
                match p.id() {
                    PID_ENDPOINT_GUID => guid = p.guid().ok(),
                    PID_PARTICIPANT_GUID => info.participant_guid = p.guid().ok(),
                    PID_TOPIC_NAME => info.topic = p.string().unwrap_or_default(),
                    PID_TYPE_NAME => info.type_name = p.string().unwrap_or_default(),
                    PID_RELIABILITY => info.qos.reliability = reliability(&p),
                    PID_DURABILITY => info.qos.durability = durability(&p),
                    PID_HISTORY => info.qos.history = history(&p),
                    PID_DEADLINE => info.qos.deadline_ns = p.duration_ns(0).ok(),
                    PID_LIVELINESS => {
                        info.qos.liveliness = liveliness(&p);
                        info.qos.liveliness_lease_ns = p.duration_ns(4).ok();
                    }
                    PID_OWNERSHIP => info.qos.ownership = ownership(&p),
                    PID_OWNERSHIP_STRENGTH => info.qos.ownership_strength = p.i32().ok(),
                    PID_PARTITION => info.qos.partitions = p.string_seq().unwrap_or_default(),
                    PID_DATA_REPRESENTATION => {
                        info.qos.data_representation = data_representation(&p)
                    }
                    PID_UNICAST_LOCATOR => info.unicast_locators.extend(p.locator().ok()),
                    PID_MULTICAST_LOCATOR => info.multicast_locators.extend(p.locator().ok()),
                    _ => {}
                }
            }
            // Some vendors omit PID_ENDPOINT_GUID and rely on the key hash.
            info.guid = guid.or(key)?;
            Some(DiscoveryRecord::Endpoint(Arc::new(info)))
        }
        BuiltinWriter::Topic => {
            if disposed {
                return None;
            }
            let pl = plist?;
            let topic = pl.find(PID_TOPIC_NAME)?.string().ok()?;
            let type_name = pl
                .find(PID_TYPE_NAME)
                .and_then(|p| p.string().ok())
                .unwrap_or_default();
            Some(DiscoveryRecord::Topic { topic, type_name })
        }
    }
}

/// Topic and type of an endpoint, shared cheaply between records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    pub topic: Arc<str>,
    pub type_name: Arc<str>,
    pub kind: EndpointKind,
}

/// Bounded GUID → topic map built from SEDP. Oldest entries are evicted first.
#[derive(Debug, Default)]
pub struct TopicMap {
    map: HashMap<Guid, TopicInfo, KeyHasher>,
    order: VecDeque<Guid>,
    cap: usize,
    evicted: u64,
    /// Interned names: one allocation per distinct topic/type.
    names: HashMap<String, Arc<str>>,
}

impl TopicMap {
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            ..Self::default()
        }
    }

    fn intern(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.names.get(s) {
            return a.clone();
        }
        if self.names.len() >= self.cap.saturating_mul(2).max(16) {
            self.names.clear();
        }
        let a: Arc<str> = Arc::from(s);
        self.names.insert(s.to_string(), a.clone());
        a
    }

    pub fn insert(&mut self, guid: Guid, topic: &str, type_name: &str, kind: EndpointKind) {
        // Endpoints announce themselves again and again: most inserts change nothing.
        if self.map.get(&guid).is_some_and(|known| {
            known.kind == kind && &*known.topic == topic && &*known.type_name == type_name
        }) {
            return;
        }
        let info = TopicInfo {
            topic: self.intern(topic),
            type_name: self.intern(type_name),
            kind,
        };
        if self.map.insert(guid, info).is_none() {
            self.order.push_back(guid);
            while self.map.len() > self.cap {
                match self.order.pop_front() {
                    Some(old) => {
                        if self.map.remove(&old).is_some() {
                            self.evicted = self.evicted.saturating_add(1);
                        }
                    }
                    None => break,
                }
            }
        }
    }

    pub fn get(&self, guid: &Guid) -> Option<&TopicInfo> {
        self.map.get(guid)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Guid, &TopicInfo)> {
        self.map.iter()
    }
}

/// Bounds of the discovery DATA_FRAG reassembly.
#[derive(Debug, Clone, Copy)]
pub struct DiscoveryFragLimits {
    pub max_samples: usize,
    pub max_sample_size: usize,
    /// Bytes held over all samples in progress (their buffers and fragment flags).
    pub max_bytes: usize,
    pub idle_timeout_ns: u64,
}

impl Default for DiscoveryFragLimits {
    fn default() -> Self {
        Self {
            max_samples: 256,
            max_sample_size: 1 << 20,
            // Discovery samples are kilobytes (a large type description: a few hundred):
            // without this, 256 never-completed 1 MiB samples would hold 512 MiB.
            max_bytes: 16 << 20,
            idle_timeout_ns: 30_000_000_000,
        }
    }
}

struct PartialSample {
    buf: Vec<u8>,
    /// One flag per fragment.
    have: Vec<bool>,
    missing: usize,
    fragment_size: usize,
    last_ts_ns: u64,
}

impl PartialSample {
    /// What it holds: the sample's buffer and one flag per fragment.
    fn bytes(&self) -> usize {
        self.buf.len().saturating_add(self.have.len())
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DiscoveryFragStats {
    pub reassembled: u64,
    pub evicted: u64,
    pub rejected: u64,
    pub in_progress: u64,
}

/// Reassembles discovery samples (SPDP/SEDP) sent as DATA_FRAG.
#[derive(Default)]
pub(crate) struct DiscoveryReassembly {
    limits: DiscoveryFragLimits,
    samples: HashMap<(Guid, SequenceNumber), PartialSample, KeyHasher>,
    stats: DiscoveryFragStats,
    /// Bytes the samples in progress hold (see [`PartialSample::bytes`]).
    bytes_held: usize,
}

/// One DATA_FRAG's facts needed for reassembly.
pub(crate) struct FragmentPiece<'a> {
    pub writer: Guid,
    pub sn: SequenceNumber,
    pub fragment_starting_num: u32,
    pub fragment_size: u16,
    pub sample_size: u32,
    pub data: &'a [u8],
    pub ts_ns: u64,
}

impl DiscoveryReassembly {
    pub fn new(limits: DiscoveryFragLimits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    pub fn stats(&self) -> DiscoveryFragStats {
        DiscoveryFragStats {
            in_progress: self.samples.len() as u64,
            ..self.stats
        }
    }

    fn expire(&mut self, now_ns: u64) {
        let timeout = self.limits.idle_timeout_ns;
        let before = self.samples.len();
        let mut freed = 0usize;
        self.samples.retain(|_, s| {
            let keep = now_ns.saturating_sub(s.last_ts_ns) <= timeout;
            if !keep {
                freed = freed.saturating_add(s.bytes());
            }
            keep
        });
        self.bytes_held = self.bytes_held.saturating_sub(freed);
        let gone = before.saturating_sub(self.samples.len());
        self.stats.evicted = self.stats.evicted.saturating_add(gone as u64);
    }

    /// Drop the sample of `key`, keeping the byte count.
    fn take(&mut self, key: &(Guid, SequenceNumber)) -> Option<PartialSample> {
        let s = self.samples.remove(key)?;
        self.bytes_held = self.bytes_held.saturating_sub(s.bytes());
        Some(s)
    }

    /// Add a fragment; returns the whole serialized sample once every fragment is in.
    pub fn push(&mut self, piece: FragmentPiece<'_>) -> Option<Vec<u8>> {
        let size = usize::try_from(piece.sample_size).ok()?;
        let frag_size = usize::from(piece.fragment_size);
        if size == 0 || frag_size == 0 || size > self.limits.max_sample_size {
            self.stats.rejected = self.stats.rejected.saturating_add(1);
            return None;
        }
        let key = (piece.writer, piece.sn);
        if !self.samples.contains_key(&key) {
            self.expire(piece.ts_ns);
            let nfrags = size.div_ceil(frag_size);
            let bytes = size.saturating_add(nfrags);
            if bytes > self.limits.max_bytes {
                self.stats.rejected = self.stats.rejected.saturating_add(1);
                return None;
            }
            while self.samples.len() >= self.limits.max_samples
                || self.bytes_held.saturating_add(bytes) > self.limits.max_bytes
            {
                let oldest = self
                    .samples
                    .iter()
                    .min_by_key(|(_, s)| s.last_ts_ns)
                    .map(|(k, _)| *k);
                let Some(k) = oldest else { break };
                self.take(&k);
                self.stats.evicted = self.stats.evicted.saturating_add(1);
            }
            self.bytes_held = self.bytes_held.saturating_add(bytes);
            self.samples.insert(
                key,
                PartialSample {
                    buf: vec![0; size],
                    have: vec![false; nfrags],
                    missing: nfrags,
                    fragment_size: frag_size,
                    last_ts_ns: piece.ts_ns,
                },
            );
        }
        let s = self.samples.get_mut(&key)?;
        if s.fragment_size != frag_size || s.buf.len() != size {
            self.stats.rejected = self.stats.rejected.saturating_add(1);
            return None;
        }
        s.last_ts_ns = piece.ts_ns;
        let mut data = piece.data;
        let mut num = usize::try_from(piece.fragment_starting_num).ok()?;
        while !data.is_empty() && num >= 1 {
            let idx = num.checked_sub(1)?;
            let start = idx.checked_mul(frag_size)?;
            if start >= size {
                break;
            }
            let len = frag_size.min(size.saturating_sub(start)).min(data.len());
            let (chunk, rest) = data.split_at(len);
            if let Some(dst) = s.buf.get_mut(start..start.saturating_add(len)) {
                dst.copy_from_slice(chunk);
            }
            if let Some(flag) = s.have.get_mut(idx) {
                if !*flag && (len == frag_size || start.saturating_add(len) == size) {
                    *flag = true;
                    s.missing = s.missing.saturating_sub(1);
                }
            }
            data = rest;
            num = num.checked_add(1)?;
        }
        if s.missing == 0 {
            self.stats.reassembled = self.stats.reassembled.saturating_add(1);
            return self.take(&key).map(|s| s.buf);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_fragment(sn: SequenceNumber, sample_size: u32, ts_ns: u64) -> FragmentPiece<'static> {
        FragmentPiece {
            writer: Guid::default(),
            sn,
            fragment_starting_num: 1,
            fragment_size: 1024,
            sample_size,
            data: &[0; 1024],
            ts_ns,
        }
    }

    #[test]
    fn samples_that_never_complete_hold_at_most_max_bytes() {
        let limits = DiscoveryFragLimits::default();
        let mut r = DiscoveryReassembly::new(limits);
        for sn in 1..=100 {
            assert!(r.push(first_fragment(sn, 1 << 20, sn as u64)).is_none());
            assert!(r.bytes_held <= limits.max_bytes);
        }
        let s = r.stats();
        // 1 MiB + 1,024 flags each: 15 fit in 16 MiB.
        assert_eq!(s.in_progress, 15);
        assert_eq!(s.evicted, 100 - 15);
        // A small sample still fits beside them and completes.
        let mut second = first_fragment(101, 2048, 101);
        second.fragment_starting_num = 2;
        assert!(r.push(first_fragment(101, 2048, 101)).is_none());
        assert_eq!(r.push(second).map(|b| b.len()), Some(2048));
        assert_eq!(r.stats().evicted, 100 - 15);
        assert_eq!(r.stats().in_progress, 15);
    }
}
