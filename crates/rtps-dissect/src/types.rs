//! RTPS value types: GUIDs, entity ids, sequence numbers, time, vendor ids, locators.

use std::fmt;
use std::hash::{Hash, Hasher};

/// The hasher of every map keyed by values off the wire (GUIDs, addresses, IP
/// fragment keys): keyed per process against crafted collisions, but foldhash's fast
/// one, not SipHash, which these maps hash on every frame (SipHash on the IP fragment
/// keys alone was a fifth of the engine's instructions on the Autoware mix).
pub type KeyHasher = foldhash::fast::RandomState;

/// 12-byte GUID prefix that names a participant.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct GuidPrefix(pub [u8; 12]);

// GUIDs and prefixes key the state's maps and are hashed for every submessage: as
// whole words, not as length-prefixed byte slices (what `derive` does for arrays).
impl Hash for GuidPrefix {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let [a0, a1, a2, a3, a4, a5, a6, a7, b0, b1, b2, b3] = self.0;
        state.write_u64(u64::from_ne_bytes([a0, a1, a2, a3, a4, a5, a6, a7]));
        state.write_u32(u32::from_ne_bytes([b0, b1, b2, b3]));
    }
}

/// 4-byte entity id (3-byte key + kind).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct EntityId(pub [u8; 4]);

/// A full 16-byte GUID: participant prefix + entity id.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Guid {
    pub prefix: GuidPrefix,
    pub entity: EntityId,
}

impl Hash for Guid {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let [a0, a1, a2, a3, a4, a5, a6, a7, b0, b1, b2, b3] = self.prefix.0;
        let [e0, e1, e2, e3] = self.entity.0;
        state.write_u64(u64::from_ne_bytes([a0, a1, a2, a3, a4, a5, a6, a7]));
        state.write_u64(u64::from_ne_bytes([b0, b1, b2, b3, e0, e1, e2, e3]));
    }
}

/// The two-byte vendor id of the RTPS header.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VendorId(pub [u8; 2]);

/// RTPS sequence numbers are a signed 64-bit value sent as (high: i32, low: u32).
pub type SequenceNumber = i64;

pub(crate) const ENTITYID_SEDP_TOPIC_WRITER: EntityId = EntityId([0, 0, 2, 0xc2]);
pub(crate) const ENTITYID_SEDP_PUBLICATIONS_WRITER: EntityId = EntityId([0, 0, 3, 0xc2]);
pub(crate) const ENTITYID_SEDP_SUBSCRIPTIONS_WRITER: EntityId = EntityId([0, 0, 4, 0xc2]);
pub(crate) const ENTITYID_SPDP_WRITER: EntityId = EntityId([0, 1, 0, 0xc2]);
pub(crate) const ENTITYID_SEDP_PUBLICATIONS_SECURE_WRITER: EntityId = EntityId([0xff, 0, 3, 0xc2]);
pub(crate) const ENTITYID_SEDP_SUBSCRIPTIONS_SECURE_WRITER: EntityId = EntityId([0xff, 0, 4, 0xc2]);
pub(crate) const ENTITYID_SPDP_SECURE_WRITER: EntityId = EntityId([0xff, 1, 1, 0xc2]);
pub(crate) const ENTITYID_P2P_PARTICIPANT_MESSAGE_WRITER: EntityId = EntityId([0, 2, 0, 0xc2]);
pub(crate) const ENTITYID_P2P_PARTICIPANT_MESSAGE_SECURE_WRITER: EntityId =
    EntityId([0xff, 2, 0, 0xc2]);
pub(crate) const ENTITYID_P2P_PARTICIPANT_STATELESS_MESSAGE_WRITER: EntityId =
    EntityId([0, 2, 1, 0xc3]);
pub(crate) const ENTITYID_P2P_PARTICIPANT_VOLATILE_MESSAGE_SECURE_WRITER: EntityId =
    EntityId([0xff, 2, 2, 0xc3]);
pub(crate) const ENTITYID_TL_SVC_REQUEST_WRITER: EntityId = EntityId([0, 3, 0, 0xc3]);
pub(crate) const ENTITYID_TL_SVC_REPLY_WRITER: EntityId = EntityId([0, 3, 1, 0xc3]);

/// The topic a built-in writer publishes: its name and its type's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinTopic {
    pub name: &'static str,
    pub type_name: &'static str,
}

const fn builtin(name: &'static str, type_name: &'static str) -> Option<BuiltinTopic> {
    Some(BuiltinTopic { name, type_name })
}

impl EntityId {
    pub fn kind(&self) -> u8 {
        self.0[3]
    }

    /// Built-in entities (discovery, liveliness, ...) have kind bits 0b11xx_xxxx.
    pub fn is_builtin(&self) -> bool {
        self.kind() & 0xc0 == 0xc0
    }

    /// Which discovery stream a built-in writer belongs to, if any.
    pub(crate) fn builtin_writer_role(&self) -> Option<BuiltinWriter> {
        match *self {
            ENTITYID_SPDP_WRITER | ENTITYID_SPDP_SECURE_WRITER => Some(BuiltinWriter::Participant),
            ENTITYID_SEDP_PUBLICATIONS_WRITER | ENTITYID_SEDP_PUBLICATIONS_SECURE_WRITER => {
                Some(BuiltinWriter::Publication)
            }
            ENTITYID_SEDP_SUBSCRIPTIONS_WRITER | ENTITYID_SEDP_SUBSCRIPTIONS_SECURE_WRITER => {
                Some(BuiltinWriter::Subscription)
            }
            ENTITYID_SEDP_TOPIC_WRITER => Some(BuiltinWriter::Topic),
            _ => None,
        }
    }

    /// The topic of a built-in writer, by its standard entity id: discovery (RTPS 9.3.1),
    /// liveliness and the secure variants (DDS-Security 7.4), type lookup (XTypes 7.6.3).
    /// `None` for user entities, built-in readers and vendor built-ins.
    pub fn builtin_topic(&self) -> Option<BuiltinTopic> {
        if let Some(role) = self.builtin_writer_role() {
            return match role {
                BuiltinWriter::Participant => {
                    builtin("DCPSParticipant", "ParticipantBuiltinTopicData")
                }
                BuiltinWriter::Publication => {
                    builtin("DCPSPublication", "PublicationBuiltinTopicData")
                }
                BuiltinWriter::Subscription => {
                    builtin("DCPSSubscription", "SubscriptionBuiltinTopicData")
                }
                BuiltinWriter::Topic => builtin("DCPSTopic", "TopicBuiltinTopicData"),
            };
        }
        match *self {
            ENTITYID_P2P_PARTICIPANT_MESSAGE_WRITER
            | ENTITYID_P2P_PARTICIPANT_MESSAGE_SECURE_WRITER => {
                builtin("DCPSParticipantMessage", "ParticipantMessageData")
            }
            ENTITYID_P2P_PARTICIPANT_STATELESS_MESSAGE_WRITER => builtin(
                "DCPSParticipantStatelessMessage",
                "ParticipantStatelessMessage",
            ),
            ENTITYID_P2P_PARTICIPANT_VOLATILE_MESSAGE_SECURE_WRITER => builtin(
                "DCPSParticipantVolatileMessageSecure",
                "ParticipantVolatileMessageSecure",
            ),
            ENTITYID_TL_SVC_REQUEST_WRITER => {
                builtin("DCPSTypeLookupRequest", "TypeLookup_Request")
            }
            ENTITYID_TL_SVC_REPLY_WRITER => builtin("DCPSTypeLookupReply", "TypeLookup_Reply"),
            _ => None,
        }
    }

    /// Name of the topic of a built-in writer, see [`EntityId::builtin_topic`].
    pub fn builtin_topic_name(&self) -> Option<&'static str> {
        self.builtin_topic().map(|t| t.name)
    }
}

/// The discovery stream a built-in writer publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BuiltinWriter {
    Participant,
    Publication,
    Subscription,
    Topic,
}

impl Guid {
    pub fn new(prefix: GuidPrefix, entity: EntityId) -> Self {
        Self { prefix, entity }
    }

    pub fn from_bytes(b: [u8; 16]) -> Self {
        let mut prefix = [0u8; 12];
        let mut entity = [0u8; 4];
        let (p, e) = b.split_at(12);
        prefix.copy_from_slice(p);
        entity.copy_from_slice(e);
        Self {
            prefix: GuidPrefix(prefix),
            entity: EntityId(entity),
        }
    }

    pub fn to_bytes(self) -> [u8; 16] {
        let mut out = [0u8; 16];
        let (p, e) = out.split_at_mut(12);
        p.copy_from_slice(&self.prefix.0);
        e.copy_from_slice(&self.entity.0);
        out
    }
}

fn write_hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    for b in bytes {
        write!(f, "{b:02x}")?;
    }
    Ok(())
}

impl fmt::Display for GuidPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}
impl fmt::Debug for GuidPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
impl fmt::Display for EntityId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}
impl fmt::Debug for EntityId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.prefix, self.entity)
    }
}
impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
impl fmt::Display for VendorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:02x}{:02x}", self.0[0], self.0[1])
    }
}
impl fmt::Debug for VendorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl VendorId {
    pub const RTI_CONNEXT: VendorId = VendorId([0x01, 0x01]);
    pub const FAST_DDS: VendorId = VendorId([0x01, 0x0f]);
    pub const CYCLONE_DDS: VendorId = VendorId([0x01, 0x10]);

    /// A human name for the vendors seen in practice (OMG DDSI-RTPS vendor id list).
    pub fn name(self) -> &'static str {
        match self.0 {
            [0x01, 0x01] => "RTI Connext DDS",
            [0x01, 0x02] => "OpenSplice DDS",
            [0x01, 0x03] => "OpenDDS",
            [0x01, 0x06] => "CoreDX DDS",
            [0x01, 0x0a] => "RTI Connext Micro",
            [0x01, 0x12] => "RustDDS",
            [0x01, 0x14] => "Dust DDS",
            [0x01, 0x0f] => "Fast DDS",
            [0x01, 0x10] => "Cyclone DDS",
            [0x01, 0x11] => "GurumDDS",
            _ => "unknown",
        }
    }
}

/// RTPS Time_t: seconds and 2^-32 fractions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Time {
    pub seconds: i32,
    pub fraction: u32,
}

impl Time {
    pub const INVALID: Time = Time {
        seconds: -1,
        fraction: 0xffff_ffff,
    };

    /// Nanoseconds since the epoch (fractions rounded down), `None` for negative times.
    pub fn to_ns(self) -> Option<i64> {
        let secs = i64::from(self.seconds);
        let frac_ns = (u64::from(self.fraction).checked_mul(1_000_000_000)?) >> 32;
        secs.checked_mul(1_000_000_000)?
            .checked_add(i64::try_from(frac_ns).ok()?)
    }
}

/// A transport locator as sent in SPDP/SEDP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Locator {
    pub kind: i32,
    pub port: u32,
    pub address: [u8; 16],
}

impl Locator {
    pub(crate) const KIND_UDPV4: i32 = 1;
    pub(crate) const KIND_UDPV6: i32 = 2;
    pub(crate) const KIND_TCPV4: i32 = 4;
    pub(crate) const KIND_TCPV6: i32 = 8;
    /// Shared memory: Fast DDS `LOCATOR_KIND_SHM` (address 'U' + the host id) and
    /// Cyclone DDS `DDSI_LOCATOR_KIND_SHEM` (iceoryx) both use 16.
    pub const KIND_SHM: i32 = 16;
    /// RTI Connext shared memory (`NDDS_TRANSPORT_CLASSID_SHMEM` as a locator kind).
    pub(crate) const KIND_RTI_SHMEM: i32 = 0x0100_0000;

    /// True for locator kinds whose traffic never reaches the network.
    pub fn is_shared_memory(&self) -> bool {
        matches!(self.kind, Self::KIND_SHM | Self::KIND_RTI_SHMEM)
    }

    /// The IP address of a UDP or TCP locator.
    pub fn ip(&self) -> Option<std::net::IpAddr> {
        let a = self.address;
        match self.kind {
            Self::KIND_UDPV4 | Self::KIND_TCPV4 => {
                Some(std::net::IpAddr::from([a[12], a[13], a[14], a[15]]))
            }
            Self::KIND_UDPV6 | Self::KIND_TCPV6 => Some(std::net::IpAddr::from(a)),
            _ => None,
        }
    }

    /// Fast DDS' TCP locators carry two ports in `port`: the logical port (the RTCP
    /// header's, which names the receiving participant's endpoint on a shared connection)
    /// in the high 16 bits and the physical (TCP) port in the low 16.
    pub fn tcp_ports(&self) -> Option<(u16, u16)> {
        matches!(self.kind, Self::KIND_TCPV4 | Self::KIND_TCPV6).then(|| {
            let [l1, l0, p1, p0] = self.port.to_be_bytes();
            (u16::from_be_bytes([p1, p0]), u16::from_be_bytes([l1, l0]))
        })
    }

    /// True when a TCP message to `ip`:`physical` with RTCP `logical` port goes to this
    /// locator.
    pub fn is_tcp_destination(&self, ip: std::net::IpAddr, physical: u16, logical: u16) -> bool {
        self.ip() == Some(ip) && self.tcp_ports() == Some((physical, logical))
    }

    pub(crate) fn kind_name(&self) -> &'static str {
        match self.kind {
            Self::KIND_UDPV4 => "udpv4",
            Self::KIND_UDPV6 => "udpv6",
            Self::KIND_TCPV4 => "tcpv4",
            Self::KIND_TCPV6 => "tcpv6",
            Self::KIND_SHM | Self::KIND_RTI_SHMEM => "shm",
            _ => "other",
        }
    }
}

impl fmt::Display for Locator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            Self::KIND_UDPV4 => {
                let a = &self.address;
                write!(
                    f,
                    "udpv4:{}.{}.{}.{}:{}",
                    a[12], a[13], a[14], a[15], self.port
                )
            }
            Self::KIND_UDPV6 => {
                let ip = std::net::Ipv6Addr::from(self.address);
                write!(f, "udpv6:[{ip}]:{}", self.port)
            }
            Self::KIND_TCPV4 | Self::KIND_TCPV6 => {
                let (physical, logical) = self.tcp_ports().unwrap_or_default();
                match self.ip() {
                    Some(std::net::IpAddr::V6(ip)) => write!(f, "tcpv6:[{ip}]:{physical}")?,
                    Some(ip) => write!(f, "tcpv4:{ip}:{physical}")?,
                    None => write!(f, "tcp:{physical}")?,
                }
                write!(f, " logical {logical}")
            }
            _ => {
                write!(f, "{}({}):", self.kind_name(), self.kind)?;
                write_hex(f, &self.address)?;
                write!(f, ":{}", self.port)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_dds_tcp_locator_ports() {
        // As Fast DDS 2.9 announced it in tests/pcaps/l2_fastdds_udp_tcp.
        let mut address = [0u8; 16];
        address[8..12].copy_from_slice(&[10, 200, 0, 1]);
        address[12..].copy_from_slice(&[10, 200, 0, 1]);
        let l = Locator {
            kind: Locator::KIND_TCPV4,
            port: 485_692_396,
            address,
        };
        assert_eq!(l.tcp_ports(), Some((5100, 7411)));
        assert_eq!(l.to_string(), "tcpv4:10.200.0.1:5100 logical 7411");
        let ip = std::net::IpAddr::from([10, 200, 0, 1]);
        assert!(l.is_tcp_destination(ip, 5100, 7411));
        assert!(!l.is_tcp_destination(ip, 5100, 7412));
        let udp = Locator {
            kind: Locator::KIND_UDPV4,
            ..l
        };
        assert_eq!(udp.tcp_ports(), None);
    }

    #[test]
    fn builtin_topics_by_entity_id() {
        let name = |e: [u8; 4]| EntityId(e).builtin_topic_name();
        assert_eq!(name([0, 1, 0, 0xc2]), Some("DCPSParticipant"));
        assert_eq!(name([0xff, 0, 3, 0xc2]), Some("DCPSPublication"));
        assert_eq!(name([0, 2, 0, 0xc2]), Some("DCPSParticipantMessage"));
        assert_eq!(name([0xff, 2, 0, 0xc2]), Some("DCPSParticipantMessage"));
        assert_eq!(name([0, 3, 0, 0xc3]), Some("DCPSTypeLookupRequest"));
        assert_eq!(name([0, 3, 1, 0xc3]), Some("DCPSTypeLookupReply"));
        // Readers, user entities and vendor built-ins publish no built-in topic.
        assert_eq!(name([0, 2, 0, 0xc7]), None);
        assert_eq!(name([0, 0, 1, 0x03]), None);
        assert_eq!(name([0, 0, 1, 0xc2]), None);
        assert_eq!(
            EntityId([0, 0, 4, 0xc2])
                .builtin_topic()
                .map(|t| t.type_name),
            Some("SubscriptionBuiltinTopicData")
        );
    }
}
