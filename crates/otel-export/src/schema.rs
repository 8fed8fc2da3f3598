//! The span schema: how one DATA or DATA_FRAG submessage seen on one host becomes
//! one span, and one whole sample seen on one host a `SAMPLE` span. See
//! `docs/span-schema.md` for the user-facing description.
//!
//! * name: `DATA` or `DATA_FRAG` (`SAMPLE`: see [`SpanMapper::sample`]);
//! * start: capture time of the datagram's first IP fragment, end: of its last (ns);
//! * trace id: `SHA-256(writer GUID (16 bytes) ‖ SN (8 bytes, big-endian, two's
//!   complement))[0..16]`, so every host that captures the same sample (and every
//!   fragment of it) lands in the same trace;
//! * span id: `SHA-256("ddshark-span" ‖ host.name ‖ 0 ‖ capture.interface ‖ 0 ‖
//!   ts_last_ns ‖ frame_last ‖ submessage index)[0..8]` (integers big-endian), unique
//!   per host and submessage and stable across replays of the same capture.

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, Key, KeyValue, Value};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};

use rtps_dissect::{Datagram, DiscoveryRecord, Guid, GuidPrefix, KeyHasher, VendorId};
use sha2::{Digest, Sha256};

/// Attribute keys and types: defined once in the `span-schema` crate, which the
/// join and the tests of the Telegraf configuration, the docs and the Python checks read too.
pub use span_schema::{attr, is_span_attribute};

/// The span name: `DATA` or `DATA_FRAG` (one submessage), `SAMPLE` (one whole sample).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SampleKind {
    Data,
    DataFrag,
    Sample,
}

impl SampleKind {
    pub fn name(self) -> &'static str {
        match self {
            SampleKind::Data => "DATA",
            SampleKind::DataFrag => "DATA_FRAG",
            SampleKind::Sample => "SAMPLE",
        }
    }
}

/// What one host saw of one whole sample (a `SAMPLE` span's own attributes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleTotals {
    /// DDS fragments that make the sample (DATA: 1).
    pub fragments: u32,
    /// Of those, how many never arrived in a complete datagram (0: complete).
    pub fragments_missing: u32,
    /// DATA/DATA_FRAG submessages that carried it.
    pub submessages: u32,
    /// Of those, retransmissions: the same fragment again to the same destination or
    /// after a multicast send (`ddshark latency`'s `repairs_sender`).
    pub repairs: u32,
    /// Ethernet source of the first datagram carrying it, when it came over Ethernet.
    pub src_mac: Option<[u8; 6]>,
}

/// One whole sample as one host saw it, finalised after a quiet period (the input of
/// [`SpanMapper::sample`]).
#[derive(Debug, Clone)]
pub struct SampleSummary {
    pub writer: Guid,
    pub sn: i64,
    pub topic: Option<Arc<str>>,
    pub sample_size: u64,
    /// First IP fragment of the earliest datagram carrying any part of it.
    pub first_ns: u64,
    /// When it was complete (per fragment the earliest complete datagram, then the
    /// latest of those); while incomplete, the end of the latest datagram seen.
    pub end_ns: u64,
    pub frame_first: u64,
    /// Frame that completed it (incomplete: the latest).
    pub frame: u64,
    /// Slot of the span that carried it first.
    pub slot: u16,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub pcp: Option<u8>,
    pub totals: SampleTotals,
}

/// `traffic_type`: discovery (built-in writers: SPDP, SEDP, participant messages) or user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TrafficType {
    Discovery,
    User,
}

impl TrafficType {
    pub fn name(self) -> &'static str {
        match self {
            TrafficType::Discovery => "discovery",
            TrafficType::User => "user",
        }
    }
}

/// One span to export: everything the encoder needs, owned, about 200 bytes.
/// Host-wide values (`host.name`, `service.name`) live in the exporter's resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanRecord {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub kind: SampleKind,
    pub start_ns: u64,
    pub end_ns: u64,
    pub traffic: TrafficType,
    pub topic: Option<Arc<str>>,
    pub type_name: Option<Arc<str>>,
    pub writer: Guid,
    pub sn: i64,
    /// 0 for DATA.
    pub fragment_starting_num: u32,
    /// 1 for DATA.
    pub frags_in_submessage: u16,
    /// DATA_FRAG only.
    pub fragment_size: Option<u16>,
    /// DATA_FRAG: sampleSize; DATA: serialized payload bytes.
    pub sample_size: u64,
    pub payload_size: u64,
    pub pcp: Option<u8>,
    pub vlan_id: Option<u16>,
    pub vendor: VendorId,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub domain_id: Option<u32>,
    /// INFO_TS of the submessage, ns since the epoch (the writer's clock).
    pub source_timestamp_ns: Option<i64>,
    pub interface: Option<Arc<str>>,
    pub frame: u64,
    pub frame_first: u64,
    pub ip_fragments: u32,
    pub submessage_index: u32,
    /// 0 for the first span of this writer with this start time on this host and
    /// interface, 1 for the next, …: with the writer and the start time it names the
    /// span, so a store keyed by (series, time) keeps every span (see `SpanMapper`).
    pub slot: u16,
    /// `SAMPLE` spans only.
    pub sample: Option<SampleTotals>,
    /// `SAMPLE` spans of a participant's SPDP writer: the unicast addresses it announced
    /// (metatraffic and default locators), `10.0.0.1,10.0.0.2`, once its SPDP was seen.
    pub announced_ips: Option<Arc<str>>,
    /// The span's number among those this process committed to export requests (0, 1,
    /// 2, … without gaps, set by the exporter when it builds a request; 0 before), so the
    /// store can count what was lost after ddshark (`flux-queries/transit_loss.flux`).
    pub export_seq: u64,
}

impl SpanRecord {
    /// The source IP address (`src_ip` on SAMPLE spans), unless unknown.
    pub fn src_ip(&self) -> Option<IpAddr> {
        let ip = self.src.ip();
        (!ip.is_unspecified()).then_some(ip)
    }
}

/// Trace id of a sample: the first 16 bytes of SHA-256(writer GUID ‖ SN big-endian).
pub fn trace_id(writer: &Guid, sn: i64) -> [u8; 16] {
    let mut h = Sha256::new();
    h.update(writer.to_bytes());
    h.update(sn.to_be_bytes());
    nonzero_id(&h.finalize())
}

/// The first `N` bytes of a digest as an id, never all-zero (an invalid trace or span id
/// in OTLP; astronomically unlikely).
fn nonzero_id<const N: usize>(digest: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    for (o, d) in out.iter_mut().zip(digest) {
        *o = *d;
    }
    if out == [0u8; N] {
        if let Some(last) = out.last_mut() {
            *last = 1;
        }
    }
    out
}

/// Span id of one submessage on one host (see the module docs).
pub fn span_id(
    host: &str,
    interface: &str,
    ts_last_ns: u64,
    frame_last: u64,
    index: u32,
) -> [u8; 8] {
    host_span_id(
        b"ddshark-span",
        host,
        interface,
        &[
            &ts_last_ns.to_be_bytes(),
            &frame_last.to_be_bytes(),
            &index.to_be_bytes(),
        ],
    )
}

/// `SHA-256(kind ‖ host ‖ 0 ‖ interface ‖ 0 ‖ parts…)[0..8]`, never all-zero (invalid in OTLP).
fn host_span_id(kind: &[u8], host: &str, interface: &str, parts: &[&[u8]]) -> [u8; 8] {
    let mut h = Sha256::new();
    h.update(kind);
    h.update(host.as_bytes());
    h.update([0u8]);
    h.update(interface.as_bytes());
    h.update([0u8]);
    for p in parts {
        h.update(p);
    }
    nonzero_id(&h.finalize())
}

/// Span id of one sample on one host: `SHA-256("ddshark-sample" ‖ host.name ‖ 0 ‖
/// capture.interface ‖ 0 ‖ writer GUID ‖ SN ‖ first_ns)[0..8]`.
pub(crate) fn sample_span_id(
    host: &str,
    interface: &str,
    writer: &Guid,
    sn: i64,
    first_ns: u64,
) -> [u8; 8] {
    host_span_id(
        b"ddshark-sample",
        host,
        interface,
        &[
            &writer.to_bytes(),
            &sn.to_be_bytes(),
            &first_ns.to_be_bytes(),
        ],
    )
}

/// Lower-case hex of a GUID: the `writer_id` attribute (32 characters).
pub(crate) fn guid_hex(g: &Guid) -> String {
    g.to_string()
}

/// Domain id implied by a UDP port under the RTPS default port mapping
/// (PB 7400, DG 250, at most 233 domains), if the port is in that range.
pub(crate) fn domain_from_port(port: u16) -> Option<u32> {
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
    fn slot(&mut self, writer: Guid, start_ns: u64) -> u16 {
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
        // (user types are not kept per sample: the DATA spans carry them)
        let type_name = builtin.map(|b| self.builtin_name(b.type_name));
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
            vlan_id: None,
            vendor: VendorId([0, 0]),
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

/// Turns span records into SDK spans for one export batch. The string attributes
/// that repeat from span to span (writer id, addresses, vendor id) are formatted once
/// per batch and shared (`Arc<str>`): the SDK clones every span's attributes for its
/// retries, and shared strings make those clones reference counts, not copies.
/// How much per-datagram detail DATA/DATA_FRAG spans carry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SpanDetail {
    /// Every attribute of the schema.
    #[default]
    Full,
    /// Without the attributes no dashboard or query reads (`src`, `dst`,
    /// `source_timestamp_ns`, `frame`, `frame_first`, `ip_fragments`, `submessage_index`):
    /// every attribute costs the collector, Telegraf and InfluxDB per span.
    Lean,
}

#[derive(Debug)]
pub struct SpanDataBuilder {
    scope: InstrumentationScope,
    detail: SpanDetail,
    writers: HashMap<Guid, Value, KeyHasher>,
    addresses: HashMap<SocketAddr, Value, KeyHasher>,
    ips: HashMap<IpAddr, Value, KeyHasher>,
    vendors: HashMap<VendorId, Value, KeyHasher>,
}

/// An Ethernet address as `src_mac` says it: the 48-bit number, `02:42:ac:11:00:02` =
/// 0x0242ac110002.
pub fn mac_number(mac: &[u8; 6]) -> i64 {
    mac.iter().fold(0i64, |n, &b| (n << 8) | i64::from(b))
}

/// A string attribute.
fn s(key: &'static str, v: impl Into<Value>) -> KeyValue {
    KeyValue::new(Key::from_static_str(key), v.into())
}

/// An integer attribute.
fn i(key: &'static str, v: impl Into<i64>) -> KeyValue {
    KeyValue::new(Key::from_static_str(key), v.into())
}

/// A count as an OTLP integer (saturating: OTLP has no unsigned 64-bit type).
fn sat(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Most distinct strings one builder keeps per kind; a batch has far fewer.
const MAX_CACHED_STRINGS: usize = 4096;

fn shared_string<K: std::hash::Hash + Eq + Copy>(
    cache: &mut HashMap<K, Value, KeyHasher>,
    key: K,
    format: impl FnOnce(K) -> String,
) -> Value {
    if let Some(v) = cache.get(&key) {
        return v.clone();
    }
    let v = Value::String(Arc::<str>::from(format(key)).into());
    if cache.len() >= MAX_CACHED_STRINGS {
        cache.clear();
    }
    cache.insert(key, v.clone());
    v
}

impl SpanDataBuilder {
    pub fn new(scope: InstrumentationScope) -> Self {
        Self::with_detail(scope, SpanDetail::Full)
    }

    pub(crate) fn with_detail(scope: InstrumentationScope, detail: SpanDetail) -> Self {
        Self {
            scope,
            detail,
            writers: HashMap::default(),
            addresses: HashMap::default(),
            ips: HashMap::default(),
            vendors: HashMap::default(),
        }
    }

    /// The span → attribute mapping: every attribute a span carries, in order, as
    /// OpenTelemetry key-values (absent values are left out). The keys, their types and
    /// which spans carry them are `span_schema::SPAN_ATTRIBUTES` (checked by a test below).
    pub fn attributes(&mut self, r: &SpanRecord) -> Vec<KeyValue> {
        let mut a = Vec::with_capacity(span_schema::SPAN_ATTRIBUTES.len());
        self.common_attributes(r, &mut a);
        if let Some(t) = &r.sample {
            return self.sample_attributes(r, t, a);
        }
        a.push(i(attr::FRAGMENT_STARTING_NUM, r.fragment_starting_num));
        a.push(i(attr::FRAGS_IN_SUBMESSAGE, r.frags_in_submessage));
        if let Some(v) = r.fragment_size {
            a.push(i(attr::FRAGMENT_SIZE, v));
        }
        a.push(i(attr::SAMPLE_SIZE, sat(r.sample_size)));
        a.push(i(attr::PAYLOAD_SIZE, sat(r.payload_size)));
        if let Some(v) = r.pcp {
            a.push(i(attr::PCP, v));
        }
        if let Some(v) = r.vlan_id {
            a.push(i(attr::VLAN_ID, v));
        }
        let vendor = shared_string(&mut self.vendors, r.vendor, |v| v.to_string());
        a.push(s(attr::VENDOR_ID, vendor));
        a.push(s(attr::VENDOR_NAME, r.vendor.name()));
        let full = self.detail == SpanDetail::Full;
        if full {
            let src = shared_string(&mut self.addresses, r.src, |a| a.to_string());
            a.push(s(attr::SRC, src));
            let dst = shared_string(&mut self.addresses, r.dst, |a| a.to_string());
            a.push(s(attr::DST, dst));
        }
        if let Some(v) = r.domain_id {
            a.push(i(attr::DOMAIN_ID, v));
        }
        if let (Some(v), true) = (r.source_timestamp_ns, full) {
            a.push(i(attr::SOURCE_TIMESTAMP_NS, v));
        }
        if let Some(v) = &r.interface {
            a.push(s(attr::CAPTURE_INTERFACE, v.clone()));
        }
        if full {
            a.push(i(attr::FRAME, sat(r.frame)));
            a.push(i(attr::FRAME_FIRST, sat(r.frame_first)));
            a.push(i(attr::IP_FRAGMENTS, r.ip_fragments));
            a.push(i(attr::SUBMESSAGE_INDEX, r.submessage_index));
        }
        a.push(i(attr::SLOT, r.slot));
        a
    }

    /// What every span carries first: its traffic type, topic, type, writer and SN.
    fn common_attributes(&mut self, r: &SpanRecord, a: &mut Vec<KeyValue>) {
        a.push(s(attr::TRAFFIC_TYPE, r.traffic.name()));
        if let Some(t) = &r.topic {
            a.push(s(attr::TOPIC_NAME, t.clone()));
        }
        if let Some(t) = &r.type_name {
            a.push(s(attr::TYPE_NAME, t.clone()));
        }
        let writer = shared_string(&mut self.writers, r.writer, |g| guid_hex(&g));
        a.push(s(attr::WRITER_ID, writer));
        a.push(i(attr::SN, r.sn));
        a.push(i(attr::EXPORT_SEQ, sat(r.export_seq)));
    }

    /// A `SAMPLE` span's attributes, after its identity: the writer's, the sample's and its totals. Nothing
    /// its DATA/DATA_FRAG spans (same trace) already say per datagram — addresses, frames,
    /// PCP: every attribute costs the collector, Telegraf and InfluxDB per span.
    fn sample_attributes(
        &mut self,
        r: &SpanRecord,
        t: &SampleTotals,
        mut a: Vec<KeyValue>,
    ) -> Vec<KeyValue> {
        // (the start time again, as a number: a database query joining hosts needs it
        // as one, and converting a timestamp per row is what costs there)
        a.push(i(attr::START_NS, sat(r.start_ns)));
        a.push(i(attr::SAMPLE_SIZE, sat(r.sample_size)));
        a.push(i(attr::FRAGMENTS, t.fragments));
        a.push(i(attr::FRAGMENTS_MISSING, t.fragments_missing));
        a.push(i(attr::SUBMESSAGES, t.submessages));
        a.push(i(attr::REPAIRS, t.repairs));
        // (the host rule's evidence: what ties a host's participants, docs/latency.md)
        if let Some(ip) = r.src_ip() {
            let ip = shared_string(&mut self.ips, ip, |ip| ip.to_string());
            a.push(s(attr::SRC_IP, ip));
        }
        if let Some(mac) = t.src_mac {
            a.push(i(attr::SRC_MAC, mac_number(&mac)));
        }
        if let Some(v) = &r.announced_ips {
            a.push(s(attr::ANNOUNCED_IPS, v.clone()));
        }
        if let Some(v) = r.domain_id {
            a.push(i(attr::DOMAIN_ID, v));
        }
        if let Some(v) = &r.interface {
            a.push(s(attr::CAPTURE_INTERFACE, v.clone()));
        }
        a.push(i(attr::SLOT, r.slot));
        a
    }

    /// The SDK span a record becomes: explicit ids, capture-time start and end (ns),
    /// kind INTERNAL (a passive observation), no parent.
    pub fn span_data(&mut self, r: &SpanRecord) -> SpanData {
        let at = |ns: u64| UNIX_EPOCH + Duration::from_nanos(ns);
        SpanData {
            span_context: SpanContext::new(
                TraceId::from_bytes(r.trace_id),
                SpanId::from_bytes(r.span_id),
                TraceFlags::SAMPLED,
                false,
                TraceState::NONE,
            ),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name: Cow::Borrowed(r.kind.name()),
            start_time: at(r.start_ns),
            end_time: at(r.end_ns),
            attributes: self.attributes(r),
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: Status::Unset,
            instrumentation_scope: self.scope.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_id_is_deterministic_and_sn_sensitive() {
        let g = Guid::from_bytes([7u8; 16]);
        assert_eq!(trace_id(&g, 1), trace_id(&g, 1));
        assert_ne!(trace_id(&g, 1), trace_id(&g, 2));
        let h = Guid::from_bytes([8u8; 16]);
        assert_ne!(trace_id(&g, 1), trace_id(&h, 1));
    }

    #[test]
    fn span_ids_differ_per_host_and_submessage() {
        let a = span_id("a", "eth0", 10, 1, 0);
        assert_ne!(a, span_id("b", "eth0", 10, 1, 0));
        assert_ne!(a, span_id("a", "eth0", 10, 1, 1));
        assert_ne!(a, span_id("a", "eth0", 10, 2, 0));
        assert_eq!(a, span_id("a", "eth0", 10, 1, 0));
    }

    #[test]
    fn slots_separate_spans_of_one_writer_with_one_start_time() {
        let mut m = SpanMapper::new("a", None);
        let w = Guid::from_bytes([7u8; 16]);
        let v = Guid::from_bytes([8u8; 16]);
        assert_eq!(m.slot(w, 10), 0);
        assert_eq!(m.slot(w, 10), 1);
        assert_eq!(m.slot(v, 10), 0);
        assert_eq!(m.slot(w, 10), 2);
        assert_eq!(m.slot(w, 11), 0);
        assert_eq!(m.slot(v, 11), 0);
        assert_eq!(m.slot_resets(), 0);
    }

    #[test]
    fn domain_from_default_ports() {
        assert_eq!(domain_from_port(7400), Some(0));
        assert_eq!(domain_from_port(7411), Some(0));
        assert_eq!(domain_from_port(7650), Some(1));
        assert_eq!(domain_from_port(7399), None);
        assert_eq!(domain_from_port(65535), Some(232));
        assert_eq!(domain_from_port(53), None);
    }

    /// A span of every kind with every optional value present.
    fn full_record(sample: Option<SampleTotals>) -> SpanRecord {
        SpanRecord {
            trace_id: [1; 16],
            span_id: [2; 8],
            kind: if sample.is_some() {
                SampleKind::Sample
            } else {
                SampleKind::DataFrag
            },
            start_ns: 5,
            end_ns: 6,
            traffic: TrafficType::User,
            topic: Some(Arc::from("rt/chatter")),
            type_name: Some(Arc::from("std_msgs::msg::dds_::String_")),
            writer: Guid {
                prefix: GuidPrefix([1; 12]),
                entity: rtps_dissect::types::EntityId([0, 0, 1, 2]),
            },
            sn: 7,
            fragment_starting_num: 1,
            frags_in_submessage: 1,
            fragment_size: Some(1024),
            sample_size: 100,
            payload_size: 104,
            pcp: Some(3),
            vlan_id: Some(10),
            vendor: VendorId([1, 16]),
            src: "10.0.0.1:7410".parse().unwrap(),
            dst: "239.255.0.1:7401".parse().unwrap(),
            domain_id: Some(0),
            source_timestamp_ns: Some(4),
            interface: Some(Arc::from("eth0")),
            frame: 9,
            frame_first: 9,
            ip_fragments: 1,
            submessage_index: 1,
            slot: 0,
            sample,
            announced_ips: Some(Arc::from("10.0.0.1,10.0.0.2")),
            export_seq: 11,
        }
    }

    /// (key, type) of the attributes the builder gives `record`.
    fn encoded(record: &SpanRecord, detail: SpanDetail) -> Vec<(String, span_schema::ValueType)> {
        let scope = InstrumentationScope::builder("test").build();
        SpanDataBuilder::with_detail(scope, detail)
            .attributes(record)
            .into_iter()
            .map(|kv| {
                let ty = match kv.value {
                    Value::I64(_) => span_schema::ValueType::Int,
                    Value::String(_) => span_schema::ValueType::Str,
                    other => panic!("{}: unexpected value type {other:?}", kv.key),
                };
                (kv.key.as_str().to_owned(), ty)
            })
            .collect()
    }

    /// (key, type) of the schema's attributes that `keep` selects, in the schema's order.
    fn schema_attributes(
        keep: impl Fn(&span_schema::SpanAttribute) -> bool,
    ) -> Vec<(String, span_schema::ValueType)> {
        span_schema::SPAN_ATTRIBUTES
            .iter()
            .filter(|a| keep(a))
            .map(|a| (a.key.to_owned(), a.ty))
            .collect()
    }

    fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
        v.sort();
        v
    }

    #[test]
    fn spans_carry_exactly_the_schemas_attributes() {
        let totals = SampleTotals {
            fragments: 2,
            fragments_missing: 0,
            submessages: 2,
            repairs: 0,
            src_mac: Some([2, 0, 0, 0, 0, 1]),
        };
        assert_eq!(
            sorted(encoded(&full_record(None), SpanDetail::Full)),
            sorted(schema_attributes(|a| a.on_submessage_spans())),
            "DATA/DATA_FRAG spans"
        );
        assert_eq!(
            sorted(encoded(&full_record(None), SpanDetail::Lean)),
            sorted(schema_attributes(
                |a| a.on_submessage_spans() && !a.lean_drops
            )),
            "--otlp-lean leaves out exactly the schema's lean_drops"
        );
        // SAMPLE spans name a type only for built-in writers (user types: the DATA spans).
        let mut builtin = full_record(Some(totals));
        builtin.writer.entity = rtps_dissect::types::EntityId([0, 1, 0, 0xc2]);
        assert_eq!(
            sorted(encoded(&builtin, SpanDetail::Full)),
            sorted(schema_attributes(|a| a.on_sample_spans())),
            "SAMPLE spans"
        );
    }

    #[test]
    fn absent_values_leave_out_only_optional_attributes() {
        let mut r = full_record(None);
        (r.topic, r.type_name, r.fragment_size, r.pcp, r.vlan_id) = (None, None, None, None, None);
        (r.domain_id, r.source_timestamp_ns, r.interface) = (None, None, None);
        assert_eq!(
            sorted(encoded(&r, SpanDetail::Full)),
            sorted(schema_attributes(|a| a.on_submessage_spans() && !a.optional)),
        );
    }
}
#[cfg(test)]
mod size_bound {
    /// The queue's memory bound is `queue_capacity × size_of::<SpanRecord>()`
    /// (65536 × 312 B = 19.5 MiB by default; 296 B before SAMPLE spans carried the host
    /// rule's evidence); keep the record from growing unnoticed.
    #[test]
    fn span_record_stays_small() {
        assert!(
            std::mem::size_of::<super::SpanRecord>() <= 312,
            "{}",
            std::mem::size_of::<super::SpanRecord>()
        );
    }
}
