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

mod encode;
mod ids;
mod mapper;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use rtps_dissect::{Guid, VendorId};

pub use encode::{mac_number, SpanDataBuilder, SpanDetail};
pub(crate) use ids::{guid_hex, sample_span_id};
pub use ids::{span_id, trace_id};
pub use mapper::SpanMapper;

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
    /// The first datagram's 802.1Q priority and VLAN, and its sender's vendor.
    pub pcp: Option<u8>,
    pub vlan_id: Option<u16>,
    pub vendor: VendorId,
    /// The writer's type from SEDP, if seen.
    pub type_name: Option<Arc<str>>,
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

#[cfg(test)]
mod tests;
