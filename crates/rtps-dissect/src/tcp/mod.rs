//! RTPS over TCP: the TCP header, bounded stream reassembly on capture time, and the
//! three ways RTPS is framed on a TCP stream.
//!
//! - **Fast DDS (eProsima) TCPv4/TCPv6 transport**: every message starts with a
//!   14-byte RTCP header, `'RTCP'`, length (u32, header included), CRC (u32), logical
//!   port (u16), written in the sender's byte order (little-endian on every platform
//!   Fast DDS ships for). What follows is either an RTPS message or an RTCP control
//!   message (16-byte header: kind, flags, length u16, 12-byte transaction id) such
//!   as bind connection, open/check logical port and keep alive.
//! - **RTI Connext TCP transport**: an 8-byte header, a big-endian word (two control
//!   bits and a 30-bit length for RTPS, a 16-bit length in its low half for control
//!   messages) and the magic `0xDD54DD55`, optionally followed by `CRC2` and a CRC
//!   (8 more bytes); then one RTPS message or a control message (kind u16, attribute
//!   list length u16, the cookie `0x2112A442`, a 12-byte transaction id, attributes),
//!   as Wireshark's packet-rtitcp.c reads them.
//! - **Length-prefixed RTPS**: a 4-byte length (big- or little-endian, told apart on
//!   the first message) and then the RTPS message.
//! - **Bare RTPS**: a segment that starts with `'RTPS'` is taken as one message.
//!
//! A stream (one direction of a 4-tuple) is tracked from the first segment that starts
//! with one of these framings; other TCP traffic costs a look at its first bytes and
//! no state. Bytes are put in sequence order: segments ahead of a hole
//! are held (bounded), retransmitted bytes are dropped, a hole that lasts longer than
//! `gap_timeout_ns` of capture time (or outgrows the stream's budget) is given up and
//! the framing is found again at the next magic. Streams end on FIN/RST, idle out on
//! capture time, and the least recently active goes when the stream or byte budget is
//! full. Every such event is counted in [`TcpStats`].

use crate::bytes::Bytes;
use crate::error::{DissectError, Layer, Result};

mod framing;
mod reassembly;
mod rtcp;
mod rti;
#[cfg(test)]
mod tests;

pub use framing::TcpFraming;
pub use reassembly::{StreamKey, TcpMessage, TcpPush, TcpReassembly};
pub use rtcp::{ControlHeader, ControlKind, RtcpHeader, RTCP_HEADER_LEN};
pub use rti::RtiControlKind;

/// RTPS header length: the least an RTPS message can be.
const RTPS_HEADER_LEN: usize = 20;
const TCP_MIN_HEADER_LEN: usize = 20;

/// TCP flags the reassembly looks at.
pub(crate) const TCP_FIN: u8 = 0x01;
pub(crate) const TCP_RST: u8 = 0x04;

/// One TCP segment's ports, sequence number, flags and payload.
#[derive(Debug, Clone, Copy)]
pub struct TcpSegment<'a> {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub flags: u8,
    pub payload: &'a [u8],
}

impl TcpSegment<'_> {
    pub(crate) fn fin_or_rst(&self) -> bool {
        self.flags & (TCP_FIN | TCP_RST) != 0
    }
}

/// Decode a TCP header (options skipped by the data offset).
pub fn parse_tcp(data: &[u8]) -> Result<TcpSegment<'_>> {
    let b = Bytes::big(data, Layer::Tcp);
    let src_port = b.be_u16(0)?;
    let dst_port = b.be_u16(2)?;
    let seq = b.be_u32(4)?;
    let header_len = usize::from(b.u8(12)? >> 4).saturating_mul(4);
    let flags = b.u8(13)?;
    if header_len < TCP_MIN_HEADER_LEN {
        return Err(DissectError::Invalid {
            layer: Layer::Tcp,
            offset: 12,
            what: "data offset",
            value: header_len as u64,
        });
    }
    let payload = b.rest(header_len)?;
    Ok(TcpSegment {
        src_port,
        dst_port,
        seq,
        flags,
        payload,
    })
}

/// Bounds of the reassembly.
#[derive(Debug, Clone, Copy)]
pub struct TcpLimits {
    pub max_streams: usize,
    /// Bytes held over all streams (in-order bytes not yet framed + segments ahead of holes).
    pub max_bytes: usize,
    /// Bytes one stream may hold ahead of a hole.
    pub max_ahead_bytes: usize,
    /// Longest framed message accepted; a longer length field means the framing is lost.
    pub max_message: usize,
    /// Capture-time nanoseconds a hole may stay open before its bytes are given up.
    pub gap_timeout_ns: u64,
    /// Capture-time nanoseconds without a segment before a stream is dropped.
    pub idle_timeout_ns: u64,
}

impl Default for TcpLimits {
    fn default() -> Self {
        Self {
            max_streams: 1024,
            max_bytes: 64 << 20,
            max_ahead_bytes: 8 << 20,
            max_message: 4 << 20,
            gap_timeout_ns: 1_000_000_000,
            idle_timeout_ns: 60_000_000_000,
        }
    }
}

/// Counters of the TCP reassembly and framing: every drop is here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct TcpStats {
    /// Frames whose TCP segment belonged to an RTPS stream but completed no RTPS
    /// message (held for a later message, control messages only, retransmissions).
    pub frames_held: u64,
    /// Payload-carrying segments of RTPS streams.
    pub segments: u64,
    /// New in-order payload bytes.
    pub bytes: u64,
    /// Segments that arrived ahead of a hole and were held.
    pub out_of_order: u64,
    /// Segments whose bytes had all been seen (retransmissions, duplicates).
    pub retransmitted: u64,
    /// Segments that repeated some bytes and brought new ones.
    pub overlapping: u64,
    /// Holes given up (bytes never captured) and their size.
    pub gaps: u64,
    pub gap_bytes: u64,
    /// Segments ahead of a hole dropped because the stream's ahead budget was full.
    pub ahead_dropped: u64,
    /// Times the framing was lost (bad magic or length) and searched for again, and
    /// the bytes skipped while searching.
    pub resyncs: u64,
    pub resync_skipped_bytes: u64,
    pub streams_opened: u64,
    /// Streams ended by FIN or RST.
    pub streams_closed: u64,
    pub streams_evicted_idle: u64,
    pub streams_evicted_capacity: u64,
    /// Bytes held by streams when they were evicted (or at the end of the capture).
    pub evicted_bytes: u64,
    pub streams_active: u64,
    pub bytes_held: u64,
    /// RTPS messages by framing.
    pub rtps_rtcp: u64,
    pub rtps_length_prefixed: u64,
    pub rtps_bare: u64,
    pub rtps_rti_tcp: u64,
    /// RTCP payloads that are neither RTPS nor a control message.
    pub rtcp_unknown_payload: u64,
    /// Framed messages that start with `RTPS` but whose header could not be read.
    pub messages_malformed: u64,
    /// RTCP control messages by kind (requests and responses together).
    pub control_bind: u64,
    pub control_open_logical_port: u64,
    pub control_check_logical_port: u64,
    pub control_keep_alive: u64,
    pub control_logical_port_closed: u64,
    pub control_unbind: u64,
    pub control_unknown: u64,
    /// RTI TCP control messages by kind (requests, indications, responses and errors
    /// together); `rti_control_unknown` also counts those without the control cookie.
    pub rti_control_bind: u64,
    pub rti_control_logical_port: u64,
    pub rti_control_session: u64,
    pub rti_control_liveliness: u64,
    pub rti_control_finalize: u64,
    pub rti_control_unknown: u64,
}

impl TcpStats {
    pub fn is_zero(&self) -> bool {
        *self == Self::default()
    }

    /// RTPS messages over TCP, every framing.
    pub fn rtps_messages(&self) -> u64 {
        self.rtps_rtcp
            .saturating_add(self.rtps_rti_tcp)
            .saturating_add(self.rtps_length_prefixed)
            .saturating_add(self.rtps_bare)
    }

    /// Control messages of either transport (Fast DDS RTCP, RTI TCP).
    pub fn control_messages(&self) -> u64 {
        [
            self.control_bind,
            self.control_open_logical_port,
            self.control_check_logical_port,
            self.control_keep_alive,
            self.control_logical_port_closed,
            self.control_unbind,
            self.control_unknown,
            self.rti_control_bind,
            self.rti_control_logical_port,
            self.rti_control_session,
            self.rti_control_liveliness,
            self.rti_control_finalize,
            self.rti_control_unknown,
        ]
        .iter()
        .fold(0u64, |a, b| a.saturating_add(*b))
    }

    pub(super) fn count_rti_control(&mut self, kind: RtiControlKind) {
        let c = match kind {
            RtiControlKind::IdentityBind | RtiControlKind::ConnectionBind => {
                &mut self.rti_control_bind
            }
            RtiControlKind::ServerLogicalPort | RtiControlKind::ClientLogicalPort => {
                &mut self.rti_control_logical_port
            }
            RtiControlKind::SessionId => &mut self.rti_control_session,
            RtiControlKind::Liveliness => &mut self.rti_control_liveliness,
            RtiControlKind::FinalizeSession => &mut self.rti_control_finalize,
            RtiControlKind::Unknown(_) => &mut self.rti_control_unknown,
        };
        inc(c);
    }

    pub(super) fn count_control(&mut self, kind: ControlKind) {
        let c = match kind {
            ControlKind::BindConnectionRequest | ControlKind::BindConnectionResponse => {
                &mut self.control_bind
            }
            ControlKind::OpenLogicalPortRequest | ControlKind::OpenLogicalPortResponse => {
                &mut self.control_open_logical_port
            }
            ControlKind::CheckLogicalPortRequest | ControlKind::CheckLogicalPortResponse => {
                &mut self.control_check_logical_port
            }
            ControlKind::KeepAliveRequest | ControlKind::KeepAliveResponse => {
                &mut self.control_keep_alive
            }
            ControlKind::LogicalPortIsClosedRequest => &mut self.control_logical_port_closed,
            ControlKind::UnbindConnectionRequest => &mut self.control_unbind,
            ControlKind::Unknown(_) => &mut self.control_unknown,
        };
        inc(c);
    }
}

pub(super) fn inc(c: &mut u64) {
    *c = c.saturating_add(1);
}

pub(super) fn add(c: &mut u64, n: usize) {
    *c = c.saturating_add(n as u64);
}
