//! Datagrams to span records for one host and interface ([`SpanMapper`]).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use rtps_dissect::{Datagram, DiscoveryRecord, Guid, GuidPrefix, KeyHasher};

use super::{
    sample_span_id, span_id, trace_id, SampleKind, SampleSummary, SpanRecord, TrafficType,
};

/// Domain id implied by a UDP port under the RTPS default port mapping
/// (PB 7400, DG 250, at most 233 domains), if the port is in that range.
pub(super) fn domain_from_port(port: u16) -> Option<u32> {
    let p = u32::from(port).checked_sub(7400)?;
    let d = p / 250;
    (d < 233).then_some(d)
}

/// Most participants whose SPDP domain id and addresses are remembered.
const MAX_PARTICIPANT_DOMAINS: usize = 4096;
/// Most unicast addresses of one participant's announcement put on its SPDP SAMPLE spans.
const MAX_ANNOUNCED_IPS: usize = 8;

/// What a participant's SPDP announcement said that spans carry.
#[derive(Debug, Default)]
struct Announced {
    domain_id: Option<u32>,
    /// Its unicast addresses, as the `announced_ips` attribute says them (None: none).
    ips: Option<Arc<str>>,
}

/// The unicast addresses of an announcement (metatraffic first, each once, without the
/// unspecified, loopback and multicast ones, which tie no host), comma-separated.
fn announced_ips(p: &rtps_dissect::discovery::ParticipantInfo) -> Option<String> {
    let mut ips: Vec<IpAddr> = Vec::new();
    for ip in p
        .metatraffic_unicast
        .iter()
        .chain(&p.default_unicast)
        .filter_map(|l| l.ip())
    {
        if ip.is_unspecified() || ip.is_loopback() || ip.is_multicast() || ips.contains(&ip) {
            continue;
        }
        if ips.len() < MAX_ANNOUNCED_IPS {
            ips.push(ip);
        }
    }
    let text: Vec<String> = ips.iter().map(IpAddr::to_string).collect();
    (!text.is_empty()).then(|| text.join(","))
}
/// Most writers whose last start time is remembered for `slot`.
const MAX_WRITER_SLOTS: usize = 65_536;

/// Turns datagrams into span records for one host and interface. Keeps a bounded
/// map of participant → domain id from SPDP (the only state), and shares the
/// topic/type strings of the dissector's topic map.
#[derive(Debug)]
pub struct SpanMapper {
    host: Arc<str>,
    interface: Option<Arc<str>>,
    participants: HashMap<GuidPrefix, Announced, KeyHasher>,
    /// Times `participants` was full and cleared (counted, not hidden).
    participant_resets: u64,
    builtin_names: HashMap<&'static str, Arc<str>>,
    /// Last topic/type seen, to share the `Arc` instead of reallocating.
    last_topic: Option<(Arc<str>, Arc<str>)>,
    /// Per writer: start time of its last span and that span's slot.
    slots: HashMap<Guid, (u64, u16), KeyHasher>,
    /// Times `slots` was full and cleared (a slot may then repeat: counted, not hidden).
    slot_resets: u64,
}

impl SpanMapper {
    pub fn new(host: &str, interface: Option<&str>) -> Self {
        Self {
            host: Arc::from(host),
            interface: interface.map(Arc::from),
            participants: HashMap::default(),
            participant_resets: 0,
            builtin_names: HashMap::new(),
            last_topic: None,
            slots: HashMap::default(),
            slot_resets: 0,
        }
    }

    /// Times the writer → slot memory was full and started over.
    pub fn slot_resets(&self) -> u64 {
        self.slot_resets
    }

    /// Times the memory of participants' announcements (domain id, addresses) was full
    /// and started over.
    pub fn participant_resets(&self) -> u64 {
        self.participant_resets
    }

    /// Several DATA/DATA_FRAG of one writer in one datagram (or in datagrams with the
    /// same capture time) share a start time; InfluxDB keeps one point per series and
    /// time, and the writer is a tag, so each gets its own slot (a tag too).
    pub(super) fn slot(&mut self, writer: Guid, start_ns: u64) -> u16 {
        if self.slots.len() >= MAX_WRITER_SLOTS && !self.slots.contains_key(&writer) {
            self.slots.clear();
            self.slot_resets = self.slot_resets.saturating_add(1);
        }
        let e = self.slots.entry(writer).or_insert((start_ns, u16::MAX));
        e.1 = if e.0 == start_ns {
            e.1.wrapping_add(1)
        } else {
            0
        };
        e.0 = start_ns;
        e.1
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn interface(&self) -> Option<&str> {
        self.interface.as_deref()
    }

    fn builtin_name(&mut self, name: &'static str) -> Arc<str> {
        self.builtin_names
            .entry(name)
            .or_insert_with(|| Arc::from(name))
            .clone()
    }

    fn learn(&mut self, d: &Datagram<'_>) {
        for rec in &d.discovery {
            if let DiscoveryRecord::Participant(p) = rec {
                if self.participants.len() >= MAX_PARTICIPANT_DOMAINS
                    && !self.participants.contains_key(&p.guid_prefix)
                {
                    self.participants.clear();
                    self.participant_resets = self.participant_resets.saturating_add(1);
                }
                let known = self.participants.entry(p.guid_prefix).or_default();
                if p.domain_id.is_some() {
                    known.domain_id = p.domain_id;
                }
                let ips = announced_ips(p);
                if known.ips.as_deref() != ips.as_deref() {
                    known.ips = ips.map(Arc::from);
                }
            }
        }
    }

    fn domain_of(&self, participant: &GuidPrefix) -> Option<u32> {
        self.participants.get(participant).and_then(|p| p.domain_id)
    }

    /// Calls `out` with one span record per DATA/DATA_FRAG submessage of `d`, in order.
    pub fn map(&mut self, d: &Datagram<'_>, mut out: impl FnMut(SpanRecord)) {
        self.learn(d);
        let iface = self.interface.clone();
        let iface = iface.as_deref().unwrap_or("");
        for sm in d.submessages.iter().flatten() {
            for piece in sm.sample_pieces() {
                let (kind, frag_start, frags, frag_size) = match piece.fragments {
                    None => (SampleKind::Data, 0, 1, None),
                    Some(r) => (
                        SampleKind::DataFrag,
                        r.start,
                        r.count,
                        Some(r.fragment_size),
                    ),
                };
                let (writer, sn, sample_size, payload) = (
                    piece.writer,
                    piece.sn,
                    piece.sample_size,
                    piece.payload_size,
                );
                let writer_entity = writer.entity;
                let traffic = if writer_entity.is_builtin() {
                    TrafficType::Discovery
                } else {
                    TrafficType::User
                };
                let (topic, type_name) = if let Some(info) = d.topic_of(&writer) {
                    match &self.last_topic {
                        Some((t, ty)) if **t == *info.topic && **ty == *info.type_name => {
                            (Some(t.clone()), Some(ty.clone()))
                        }
                        _ => {
                            let pair = (info.topic.clone(), info.type_name.clone());
                            self.last_topic = Some(pair.clone());
                            (Some(pair.0), Some(pair.1))
                        }
                    }
                } else if let Some(builtin) = writer_entity.builtin_topic() {
                    (
                        Some(self.builtin_name(builtin.name)),
                        Some(self.builtin_name(builtin.type_name)),
                    )
                } else {
                    (None, None)
                };
                let domain_id = self
                    .domain_of(&sm.ctx.src_prefix)
                    .or_else(|| domain_from_port(d.dst.port()));
                let index = u32::try_from(sm.index).unwrap_or(u32::MAX);
                let slot = self.slot(writer, d.ts_first_ns);
                out(SpanRecord {
                    trace_id: trace_id(&writer, sn),
                    span_id: span_id(&self.host, iface, d.ts_last_ns, d.frame_last, index),
                    kind,
                    start_ns: d.ts_first_ns,
                    end_ns: d.ts_last_ns,
                    traffic,
                    topic,
                    type_name,
                    writer,
                    sn,
                    fragment_starting_num: frag_start,
                    frags_in_submessage: frags,
                    fragment_size: frag_size,
                    sample_size,
                    payload_size: payload,
                    pcp: d.pcp,
                    vlan_id: d.vlan_id,
                    vendor: sm.ctx.src_vendor,
                    src: d.src,
                    dst: d.dst,
                    domain_id,
                    source_timestamp_ns: sm.ctx.timestamp.and_then(|t| t.to_ns()),
                    interface: self.interface.clone(),
                    frame: d.frame_last,
                    frame_first: d.frame_first,
                    ip_fragments: d.ip_fragments,
                    submessage_index: index,
                    slot,
                    sample: None,
                    announced_ips: None,
                    export_seq: 0,
                });
            }
        }
    }

    /// The `SAMPLE` span of a sample this host saw: start = its first IP fragment, end =
    /// when it was complete here (`fragments_missing` = 0; else the latest datagram),
    /// trace id that of its submessages. On the writer's host start is `t_send`, on a
    /// receiving host end is `t_recv` (`ddshark latency`'s definitions), so a database
    /// joins hosts on one row per sample and host instead of one per submessage.
    pub fn sample(&mut self, s: &SampleSummary) -> SpanRecord {
        let iface = self.interface.clone();
        let iface = iface.as_deref().unwrap_or("");
        let traffic = if s.writer.entity.is_builtin() {
            TrafficType::Discovery
        } else {
            TrafficType::User
        };
        let builtin = s.writer.entity.builtin_topic();
        let topic = s
            .topic
            .clone()
            .or_else(|| builtin.map(|b| self.builtin_name(b.name)));
        let type_name = s
            .type_name
            .clone()
            .or_else(|| builtin.map(|b| self.builtin_name(b.type_name)));
        let domain_id = self
            .domain_of(&s.writer.prefix)
            .or_else(|| domain_from_port(s.dst.port()));
        // (a participant's addresses on its SPDP samples only: they say them, and they are
        // few, one per participant and SPDP period)
        let announced_ips = if s.writer.entity.builtin_topic_name() == Some("DCPSParticipant") {
            self.participants
                .get(&s.writer.prefix)
                .and_then(|p| p.ips.clone())
        } else {
            None
        };
        SpanRecord {
            trace_id: trace_id(&s.writer, s.sn),
            span_id: sample_span_id(&self.host, iface, &s.writer, s.sn, s.first_ns),
            kind: SampleKind::Sample,
            start_ns: s.first_ns,
            end_ns: s.end_ns.max(s.first_ns),
            traffic,
            topic,
            type_name,
            writer: s.writer,
            sn: s.sn,
            fragment_starting_num: 0,
            frags_in_submessage: 0,
            fragment_size: None,
            sample_size: s.sample_size,
            payload_size: 0,
            pcp: s.pcp,
            vlan_id: s.vlan_id,
            vendor: s.vendor,
            src: s.src,
            dst: s.dst,
            domain_id,
            source_timestamp_ns: None,
            interface: self.interface.clone(),
            frame: s.frame,
            frame_first: s.frame_first,
            ip_fragments: 0,
            submessage_index: 0,
            slot: s.slot,
            sample: Some(s.totals),
            announced_ips,
            export_seq: 0,
        }
    }
}
