//! ParameterList → discovery record: SPDP participants, SEDP endpoints and topics,
//! disposes, and the meaning of vendor PIDs.

use std::sync::Arc;

use crate::plist::*;
use crate::types::{BuiltinWriter, Guid, VendorId};

use super::*;

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
