//! The participants' view.

use super::super::{Gone, State};

#[derive(Debug, Clone)]
pub struct ParticipantView {
    pub guid_prefix: String,
    pub(crate) vendor: Option<String>,
    pub(crate) vendor_name: Option<&'static str>,
    pub(crate) version: Option<String>,
    pub entity_name: Option<String>,
    pub domain_id: Option<u32>,
    /// `pid_domain_id`, or `port_mapping` when SPDP leaves it out (Fast DDS) and it was
    /// derived from the well-known ports of its metatraffic locators.
    pub domain_id_source: Option<&'static str>,
    pub(crate) lease_ns: Option<Option<i64>>,
    pub(crate) addresses: Vec<String>,
    pub(crate) locators: Vec<String>,
    pub(crate) shared_memory_only: bool,
    pub discovered: bool,
    pub(crate) from_cache: bool,
    pub(crate) first_seen_ns: u64,
    pub(crate) last_seen_ns: u64,
    pub(crate) datagrams: u64,
    pub(crate) bytes: u64,
    pub(crate) gone: Option<Gone>,
}

impl State {
    /// Every participant, in GUID prefix order.
    pub(super) fn participant_views(&self) -> Vec<ParticipantView> {
        let mut participants: Vec<ParticipantView> = self
            .participants
            .values()
            .map(|p| {
                let info = p.info.as_deref();
                let vendor = info.and_then(|i| i.vendor).or(p.vendor);
                ParticipantView {
                    guid_prefix: p.prefix.to_string(),
                    vendor: vendor.map(|v| v.to_string()),
                    vendor_name: vendor.map(|v| v.name()),
                    version: p.version.map(|(a, b)| format!("{a}.{b}")),
                    entity_name: info.and_then(|i| i.entity_name.clone()),
                    domain_id: info.and_then(|i| i.domain_id),
                    domain_id_source: info.and_then(|i| i.domain_id_source).map(|d| d.name()),
                    lease_ns: info.and_then(|i| i.lease_ns),
                    addresses: p.addresses.iter().map(|a| a.to_string()).collect(),
                    locators: info
                        .map(|i| {
                            i.default_unicast
                                .iter()
                                .chain(&i.default_multicast)
                                .map(|l| l.to_string())
                                .collect()
                        })
                        .unwrap_or_default(),
                    shared_memory_only: info.is_some_and(|i| i.shared_memory_only()),
                    discovered: p.last_spdp_ns.is_some(),
                    from_cache: p.from_cache,
                    first_seen_ns: p.first_seen_ns,
                    last_seen_ns: p.last_seen_ns,
                    datagrams: p.datagrams,
                    bytes: p.bytes,
                    gone: p.gone,
                }
            })
            .collect();
        participants.sort_by(|a, b| a.guid_prefix.cmp(&b.guid_prefix));

        participants
    }
}
