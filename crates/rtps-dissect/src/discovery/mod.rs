//! SPDP participant and SEDP endpoint records decoded from ParameterLists, the
//! bounded reassembly of discovery data sent as DATA_FRAG, and the bounded
//! writer/reader GUID → topic map.
//!
//! Here the records; `qos` the QoS policies an endpoint announces, `decode` the
//! ParameterList → record decoding, `topics` the GUID → topic map, `reassembly` the
//! DATA_FRAG reassembly.

use std::sync::Arc;

use crate::types::{BuiltinWriter, Guid, GuidPrefix, Locator, VendorId};

mod decode;
mod qos;
mod reassembly;
mod topics;

pub use decode::decode_discovery;
pub use qos::*;
pub use reassembly::{DiscoveryFragLimits, DiscoveryFragStats};
pub(crate) use reassembly::{DiscoveryReassembly, FragmentPiece};
pub use topics::{TopicInfo, TopicMap};

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
