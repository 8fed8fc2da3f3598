//! What the join hands out: a row per sample and receiving capture, or, joining a single
//! capture, what that capture saw of each sample.

use std::net::SocketAddr;
use std::sync::Arc;

pub use latency_core::Status;

use crate::latency::extract::Key;
use rtps_dissect::VendorId;

/// One sample (or submessage) from its writer's capture to one other capture.
#[derive(Debug, Clone)]
pub struct SampleRow {
    pub sender: usize,
    pub receiver: usize,
    pub key: Key,
    pub fragmented: bool,
    pub topic: Option<Arc<str>>,
    pub status: Status,
    pub t_send: i64,
    pub frame_send: u64,
    pub t_recv: Option<i64>,
    pub frame_recv: Option<u64>,
    /// Earliest complete datagram carrying any part of it at the receiver.
    pub(crate) t_recv_first: Option<i64>,
    pub latency_ns: Option<i64>,
    /// When a clock offset estimate corrected `latency_ns`: the true latency lies within ±
    /// this of it (the estimate's half-width; see `latency::clocks`). None: raw, or moved by
    /// a given offset.
    pub latency_uncertainty_ns: Option<i64>,
    /// DATA/DATA_FRAG submessages carrying it in the sender's capture.
    pub tx_sender: u32,
    /// Of those, retransmissions (a fragment sent again to the same or after a multicast destination).
    pub repairs_sender: u32,
    pub rx_receiver: u32,
    /// The receiver completed it with data from a retransmission.
    pub repaired: bool,
    pub sample_size: u64,
    pub(crate) units: u32,
    pub(crate) src: Option<SocketAddr>,
    pub(crate) dst: Option<SocketAddr>,
    pub(crate) pcp: Option<u8>,
}

/// What one capture saw of one sample: the per-host half of a [`SampleRow`]. A join
/// of a single capture ([`JoinConfig::captures`] = 1) finalises samples into these
/// (the live exporter's `SAMPLE` spans, which the database then joins across hosts).
#[derive(Debug, Clone)]
pub struct LocalSample {
    pub key: Key,
    pub topic: Option<Arc<str>>,
    pub sample_size: u64,
    /// DDS fragments that make the sample (DATA: 1).
    pub units: u32,
    /// Of those, how many arrived in a complete datagram.
    pub units_seen: u32,
    /// First IP fragment of the earliest datagram carrying any part of it (`t_send` on
    /// the writer's host).
    pub t_first: i64,
    pub(crate) frame_first: u64,
    /// Slot of the span that carried it first.
    pub slot: u16,
    /// When every fragment had arrived in a complete datagram: per fragment the
    /// earliest, then the latest of those (`t_recv` on a receiving host); None while
    /// incomplete.
    pub t_complete: Option<i64>,
    pub(crate) frame_complete: Option<u64>,
    /// Latest end (last IP fragment) of any datagram carrying part of it.
    pub t_last: i64,
    /// DATA/DATA_FRAG submessages that carried it.
    pub submessages: u32,
    /// Of those, retransmissions (as `repairs_sender`).
    pub repairs: u32,
    /// The first datagram carrying it: its source and Ethernet source (the host rule's
    /// evidence, which its SAMPLE span carries).
    pub src: Option<SocketAddr>,
    pub src_mac: Option<[u8; 6]>,
    pub(crate) dst: Option<SocketAddr>,
    pub(crate) pcp: Option<u8>,
    pub(crate) vlan_id: Option<u16>,
    /// The sender's RTPS vendor, from that datagram.
    pub(crate) vendor: VendorId,
    /// Its writer's type from SEDP (as `topic`).
    pub(crate) type_name: Option<Arc<str>>,
}
