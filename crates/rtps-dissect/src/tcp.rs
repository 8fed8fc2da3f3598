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

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;

use crate::bytes::Bytes;
use crate::error::{DissectError, Layer, Result};
use crate::rtps::is_rtps_magic;
use crate::types::KeyHasher;

pub const RTCP_MAGIC: &[u8; 4] = b"RTCP";
pub const RTCP_HEADER_LEN: usize = 14;
pub const CONTROL_HEADER_LEN: usize = 16;
/// RTI TCP transport: the magic in bytes 4..8 of every message header.
pub const RTI_TCP_MAGIC: &[u8; 4] = &[0xDD, 0x54, 0xDD, 0x55];
pub const RTI_TCP_HEADER_LEN: usize = 8;
/// An RTI TCP header with a CRC: `CRC2` and the CRC after the first 8 bytes.
const RTI_TCP_CRC_MAGIC: &[u8; 4] = b"CRC2";
const RTI_TCP_CRC_LEN: usize = 8;
/// RTI TCP control messages carry this cookie after their kind and attribute length.
const RTI_CONTROL_COOKIE: u32 = 0x2112_A442;
/// Kind, attribute list length, cookie, transaction id.
pub const RTI_CONTROL_HEADER_LEN: usize = 20;
/// RTPS header length: the least an RTPS message can be.
const RTPS_HEADER_LEN: usize = 20;
const TCP_MIN_HEADER_LEN: usize = 20;

/// TCP flags the reassembly looks at.
pub const TCP_FIN: u8 = 0x01;
pub const TCP_SYN: u8 = 0x02;
pub const TCP_RST: u8 = 0x04;

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
    pub fn fin_or_rst(&self) -> bool {
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

/// Fast DDS' RTCP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtcpHeader {
    /// Whole message length, this header included.
    pub length: u32,
    pub crc: u32,
    pub logical_port: u16,
}

impl RtcpHeader {
    /// Read the header at the start of `data` (the magic is checked).
    pub fn parse(data: &[u8]) -> Result<Self> {
        let b = Bytes::new(data, Layer::TcpFraming, true);
        if b.array::<4>(0)? != *RTCP_MAGIC {
            return Err(DissectError::Invalid {
                layer: Layer::TcpFraming,
                offset: 0,
                what: "RTCP magic",
                value: u64::from(b.be_u32(0)?),
            });
        }
        Ok(Self {
            length: b.u32(4)?,
            crc: b.u32(8)?,
            logical_port: b.u16(12)?,
        })
    }
}

/// Kind of an RTCP control message (Fast DDS' `TCPCPMKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlKind {
    BindConnectionRequest,
    BindConnectionResponse,
    OpenLogicalPortRequest,
    OpenLogicalPortResponse,
    CheckLogicalPortRequest,
    CheckLogicalPortResponse,
    KeepAliveRequest,
    KeepAliveResponse,
    LogicalPortIsClosedRequest,
    UnbindConnectionRequest,
    Unknown(u8),
}

impl ControlKind {
    pub fn from_u8(v: u8) -> Self {
        match v {
            0xD1 => Self::BindConnectionRequest,
            0xE1 => Self::BindConnectionResponse,
            0xD2 => Self::OpenLogicalPortRequest,
            0xE2 => Self::OpenLogicalPortResponse,
            0xD3 => Self::CheckLogicalPortRequest,
            0xE3 => Self::CheckLogicalPortResponse,
            0xD4 => Self::KeepAliveRequest,
            0xE4 => Self::KeepAliveResponse,
            0xD5 => Self::LogicalPortIsClosedRequest,
            0xD6 => Self::UnbindConnectionRequest,
            other => Self::Unknown(other),
        }
    }
}

/// The header of an RTCP control message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlHeader {
    pub kind: ControlKind,
    pub flags: u8,
    /// Control message length, this header included.
    pub length: u16,
    pub transaction_id: [u8; 12],
}

impl ControlHeader {
    pub fn parse(data: &[u8]) -> Result<Self> {
        let b = Bytes::new(data, Layer::TcpFraming, true);
        let length = b.u16(2)?;
        if usize::from(length) < CONTROL_HEADER_LEN {
            return Err(DissectError::Invalid {
                layer: Layer::TcpFraming,
                offset: 2,
                what: "control message length",
                value: u64::from(length),
            });
        }
        Ok(Self {
            kind: ControlKind::from_u8(b.u8(0)?),
            flags: b.u8(1)?,
            length,
            transaction_id: b.array::<12>(4)?,
        })
    }
}

/// Kind of an RTI TCP control message: requests (0x0Cxx), indications (0x0C1x),
/// responses (0x0Dxx) and errors (0x0D1x) of one exchange count as one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtiControlKind {
    IdentityBind,
    ServerLogicalPort,
    ClientLogicalPort,
    ConnectionBind,
    SessionId,
    Liveliness,
    FinalizeSession,
    Unknown(u16),
}

impl RtiControlKind {
    pub fn from_u16(v: u16) -> Self {
        let [class, low] = v.to_be_bytes();
        if !matches!(class, 0x0C | 0x0D) || low & 0xE0 != 0 {
            return Self::Unknown(v);
        }
        match low & 0x0F {
            0x01 => Self::IdentityBind,
            0x02 => Self::ServerLogicalPort,
            0x03 => Self::ClientLogicalPort,
            0x04 => Self::ConnectionBind,
            0x05 => Self::SessionId,
            0x06 => Self::Liveliness,
            0x0F => Self::FinalizeSession,
            _ => Self::Unknown(v),
        }
    }

    /// The kind of the RTI TCP control message `body` (what follows the RTI TCP header);
    /// `Unknown` when it is too short or lacks the control cookie.
    pub fn of_message(body: &[u8]) -> Self {
        let b = Bytes::big(body, Layer::TcpFraming);
        match (b.be_u16(0), b.be_u32(4)) {
            (Ok(kind), Ok(RTI_CONTROL_COOKIE)) => Self::from_u16(kind),
            (Ok(kind), _) => Self::Unknown(kind),
            _ => Self::Unknown(0),
        }
    }
}

/// Where the RTI TCP message at the start of `rest` ends.
#[derive(Debug, PartialEq, Eq)]
enum RtiTcpFrame {
    /// Not enough bytes yet to tell.
    Wait,
    /// No RTI TCP header here: the framing is lost.
    Lost,
    Framed {
        header_len: usize,
        framed_len: usize,
    },
}

fn rti_tcp_frame(rest: &[u8], max_message: usize) -> RtiTcpFrame {
    let (Some(word), Some(magic)) = (rest.get(..4), rest.get(4..8)) else {
        return RtiTcpFrame::Wait;
    };
    if magic != RTI_TCP_MAGIC {
        return RtiTcpFrame::Lost;
    }
    let Some(after) = rest.get(RTI_TCP_HEADER_LEN..RTI_TCP_HEADER_LEN + 4) else {
        return RtiTcpFrame::Wait;
    };
    let header_len = if after == RTI_TCP_CRC_MAGIC {
        RTI_TCP_HEADER_LEN + RTI_TCP_CRC_LEN
    } else {
        RTI_TCP_HEADER_LEN
    };
    let Some(body_start) = rest.get(header_len..header_len.saturating_add(4)) else {
        return RtiTcpFrame::Wait;
    };
    let mut w = [0u8; 4];
    w.copy_from_slice(word);
    let word = u32::from_be_bytes(w);
    // RTPS: the low 30 bits (the top two are control bits); control: the low 16.
    let len = if is_rtps_magic(body_start) {
        word & 0x3FFF_FFFF
    } else {
        word & 0xFFFF
    } as usize;
    if len > max_message {
        return RtiTcpFrame::Lost;
    }
    RtiTcpFrame::Framed {
        header_len,
        framed_len: header_len.saturating_add(len),
    }
}

/// How RTPS is framed on a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TcpFraming {
    /// Fast DDS' 14-byte RTCP header.
    Rtcp,
    /// RTI Connext's TCP transport: 8-byte header (16 with a CRC).
    RtiTcp,
    /// 4-byte length, then the RTPS message.
    LengthPrefixed { little_endian: bool },
    /// A segment that starts with `RTPS` is one message.
    Bare,
}

impl TcpFraming {
    pub fn name(self) -> &'static str {
        match self {
            TcpFraming::Rtcp => "rtcp",
            TcpFraming::RtiTcp => "rti_tcp",
            TcpFraming::LengthPrefixed { .. } => "length_prefixed",
            TcpFraming::Bare => "bare",
        }
    }
}

/// The framing of a stream not tracked yet, from a segment that starts a message. Only
/// the segment's first bytes are looked at, so other TCP traffic costs no scan; a stream
/// picked up mid-message is tracked from its next segment that starts one.
fn detect(payload: &[u8], max_message: usize) -> Option<(usize, TcpFraming)> {
    if payload.get(4..8) == Some(RTI_TCP_MAGIC.as_slice()) {
        return Some((0, TcpFraming::RtiTcp));
    }
    if payload.get(4..8).is_some_and(is_rtps_magic) {
        let prefix = payload.get(..4)?;
        let mut four = [0u8; 4];
        four.copy_from_slice(prefix);
        let plausible = |n: u32| (RTPS_HEADER_LEN..=max_message).contains(&(n as usize));
        if plausible(u32::from_be_bytes(four)) {
            return Some((
                0,
                TcpFraming::LengthPrefixed {
                    little_endian: false,
                },
            ));
        }
        if plausible(u32::from_le_bytes(four)) {
            return Some((
                0,
                TcpFraming::LengthPrefixed {
                    little_endian: true,
                },
            ));
        }
    }
    if payload.get(..4) == Some(RTCP_MAGIC.as_slice()) {
        return Some((0, TcpFraming::Rtcp));
    }
    if payload.get(..4).is_some_and(is_rtps_magic) {
        return Some((0, TcpFraming::Bare));
    }
    None
}

/// First position of `needle` in `hay`.
fn find(hay: &[u8], needle: &[u8; 4]) -> Option<usize> {
    hay.windows(4).position(|w| w == needle)
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

    fn count_rti_control(&mut self, kind: RtiControlKind) {
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

    fn count_control(&mut self, kind: ControlKind) {
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

fn inc(c: &mut u64) {
    *c = c.saturating_add(1);
}

fn add(c: &mut u64, n: usize) {
    *c = c.saturating_add(n as u64);
}

/// One direction of a TCP connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamKey {
    pub src: SocketAddr,
    pub dst: SocketAddr,
}

/// A framed RTPS message found in a stream: where its bytes are in
/// [`TcpReassembly::stream_bytes`] and when its first and last bytes were captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpMessage {
    pub framing: TcpFraming,
    /// Logical port of the RTCP header (Fast DDS), if any.
    pub logical_port: Option<u16>,
    /// The RTPS message (framing header excluded) within the stream bytes.
    pub start: usize,
    pub len: usize,
    /// Framed length on the wire (framing header included).
    pub framed_len: usize,
    pub ts_first_ns: u64,
    pub frame_first: u64,
    pub ts_last_ns: u64,
    pub frame_last: u64,
    /// Segments the framed message was carried in.
    pub segments: u32,
}

/// What one segment did.
#[derive(Debug, PartialEq, Eq)]
pub enum TcpPush {
    /// Not (yet) an RTPS stream: no state kept.
    NotRtps,
    /// Part of an RTPS stream; these messages are complete now (maybe none).
    Stream {
        key: StreamKey,
        messages: Vec<TcpMessage>,
    },
    /// A bare RTPS segment: the whole payload is one message.
    Bare,
}

struct Arrival {
    /// Stream offset of the first new byte this segment brought.
    offset: u64,
    ts_ns: u64,
    frame: u64,
}

struct Ahead {
    data: Vec<u8>,
    ts_ns: u64,
    frame: u64,
}

struct Stream {
    framing: TcpFraming,
    /// Sequence number of the next in-order byte.
    next_seq: u32,
    /// In-order bytes from stream offset `start` on; the first `consumed` are framed.
    buf: Vec<u8>,
    start: u64,
    consumed: usize,
    /// At a message boundary (false after a gap or a framing error).
    synced: bool,
    arrivals: VecDeque<Arrival>,
    /// Segments ahead of a hole, by stream offset.
    ahead: BTreeMap<u64, Ahead>,
    ahead_bytes: usize,
    /// Capture time the current hole opened.
    hole_since_ns: Option<u64>,
    last_ts_ns: u64,
}

impl Stream {
    fn end_offset(&self) -> u64 {
        self.start.saturating_add(self.buf.len() as u64)
    }

    fn held(&self) -> usize {
        self.buf.len().saturating_add(self.ahead_bytes)
    }

    /// Drop the bytes already framed (they were lent out until this call).
    fn drain_consumed(&mut self) {
        if self.consumed == 0 {
            return;
        }
        let n = self.consumed.min(self.buf.len());
        self.buf.drain(..n);
        self.start = self.start.saturating_add(n as u64);
        self.consumed = 0;
        // Keep the arrival that covers the new start.
        while self.arrivals.len() > 1
            && self.arrivals.get(1).is_some_and(|a| a.offset <= self.start)
        {
            self.arrivals.pop_front();
        }
    }

    fn append(&mut self, data: &[u8], ts_ns: u64, frame: u64) {
        if data.is_empty() {
            return;
        }
        self.arrivals.push_back(Arrival {
            offset: self.end_offset(),
            ts_ns,
            frame,
        });
        self.buf.extend_from_slice(data);
        self.next_seq = self.next_seq.wrapping_add(data.len() as u32);
    }

    /// Index of the arrival that brought stream offset `at`.
    fn arrival_index(&self, at: u64) -> usize {
        self.arrivals
            .partition_point(|a| a.offset <= at)
            .saturating_sub(1)
    }
}

/// TCP stream reassembly and framing for every tracked stream.
pub struct TcpReassembly {
    limits: TcpLimits,
    streams: HashMap<StreamKey, Stream, KeyHasher>,
    bytes_held: usize,
    stats: TcpStats,
    /// A stream that ended (FIN/RST) with its last messages lent out: removed on the
    /// next push.
    closing: Option<StreamKey>,
    last_sweep_ns: u64,
}

impl Default for TcpReassembly {
    fn default() -> Self {
        Self::new(TcpLimits::default())
    }
}

impl TcpReassembly {
    pub fn new(limits: TcpLimits) -> Self {
        Self {
            limits,
            streams: HashMap::default(),
            bytes_held: 0,
            stats: TcpStats::default(),
            closing: None,
            last_sweep_ns: 0,
        }
    }

    pub fn stats(&self) -> TcpStats {
        TcpStats {
            streams_active: self.streams.len() as u64,
            bytes_held: self.bytes_held as u64,
            ..self.stats
        }
    }

    /// Count a frame that belonged to an RTPS stream and yielded no RTPS message.
    pub fn count_frame_held(&mut self) {
        inc(&mut self.stats.frames_held);
    }

    /// The bytes of a stream, as the messages of its last push index them.
    pub fn stream_bytes(&self, key: &StreamKey) -> &[u8] {
        self.streams.get(key).map_or(&[], |s| s.buf.as_slice())
    }

    /// End of the capture: every stream is given up.
    pub fn flush(&mut self) {
        self.closing = None;
        for (_, s) in self.streams.drain() {
            let left = s.held().saturating_sub(s.consumed);
            add(&mut self.stats.evicted_bytes, left);
        }
        self.bytes_held = 0;
    }

    fn remove(&mut self, key: &StreamKey) -> Option<Stream> {
        let s = self.streams.remove(key)?;
        self.bytes_held = self.bytes_held.saturating_sub(s.held());
        Some(s)
    }

    fn evict(&mut self, key: &StreamKey, idle: bool) {
        if let Some(s) = self.remove(key) {
            inc(if idle {
                &mut self.stats.streams_evicted_idle
            } else {
                &mut self.stats.streams_evicted_capacity
            });
            add(
                &mut self.stats.evicted_bytes,
                s.held().saturating_sub(s.consumed),
            );
        }
    }

    /// Drop streams idle for longer than the timeout (at most once a second of capture time).
    fn sweep(&mut self, now_ns: u64) {
        if now_ns.saturating_sub(self.last_sweep_ns) < 1_000_000_000 {
            return;
        }
        self.last_sweep_ns = now_ns;
        let idle: Vec<StreamKey> = self
            .streams
            .iter()
            .filter(|(_, s)| now_ns.saturating_sub(s.last_ts_ns) > self.limits.idle_timeout_ns)
            .map(|(k, _)| *k)
            .collect();
        for k in idle {
            self.evict(&k, true);
        }
    }

    /// The least recently active stream other than `keep`.
    fn oldest_except(&self, keep: &StreamKey) -> Option<StreamKey> {
        self.streams
            .iter()
            .filter(|(k, _)| *k != keep)
            .min_by_key(|(k, s)| (s.last_ts_ns, **k == *keep))
            .map(|(k, _)| *k)
    }

    /// One TCP segment of the connection `src` → `dst`, captured at `ts_ns` in `frame`.
    pub fn push(
        &mut self,
        src: SocketAddr,
        dst: SocketAddr,
        seg: &TcpSegment<'_>,
        ts_ns: u64,
        frame: u64,
    ) -> TcpPush {
        if let Some(k) = self.closing.take() {
            if self.remove(&k).is_some() {
                inc(&mut self.stats.streams_closed);
            }
        }
        self.sweep(ts_ns);
        let key = StreamKey { src, dst };
        if !self.streams.contains_key(&key) {
            if seg.payload.is_empty() {
                return TcpPush::NotRtps;
            }
            let Some((pos, framing)) = detect(seg.payload, self.limits.max_message) else {
                return TcpPush::NotRtps;
            };
            if framing == TcpFraming::Bare {
                inc(&mut self.stats.segments);
                add(&mut self.stats.bytes, seg.payload.len());
                inc(&mut self.stats.rtps_bare);
                return TcpPush::Bare;
            }
            while self.streams.len() >= self.limits.max_streams.max(1) {
                let Some(old) = self.oldest_except(&key) else {
                    break;
                };
                self.evict(&old, false);
            }
            inc(&mut self.stats.streams_opened);
            add(&mut self.stats.resync_skipped_bytes, pos);
            self.streams.insert(
                key,
                Stream {
                    framing,
                    next_seq: seg.seq.wrapping_add(pos as u32),
                    buf: Vec::new(),
                    start: 0,
                    consumed: 0,
                    synced: true,
                    arrivals: VecDeque::new(),
                    ahead: BTreeMap::new(),
                    ahead_bytes: 0,
                    hole_since_ns: None,
                    last_ts_ns: ts_ns,
                },
            );
        }
        let Some(stream) = self.streams.get_mut(&key) else {
            return TcpPush::NotRtps;
        };
        let before = stream.held();
        stream.drain_consumed();
        stream.last_ts_ns = ts_ns;
        if !seg.payload.is_empty() {
            inc(&mut self.stats.segments);
            insert_segment(stream, seg, ts_ns, frame, &self.limits, &mut self.stats);
        }
        let messages = frame_messages(stream, ts_ns, frame, &self.limits, &mut self.stats);
        let after = stream.held();
        self.bytes_held = self.bytes_held.saturating_add(after).saturating_sub(before);
        if seg.fin_or_rst() {
            self.closing = Some(key);
        }
        while self.bytes_held > self.limits.max_bytes {
            let Some(old) = self.oldest_except(&key) else {
                break;
            };
            self.evict(&old, false);
        }
        TcpPush::Stream { key, messages }
    }
}

/// Put a segment's bytes in order: appended, held ahead of a hole, or dropped as seen.
fn insert_segment(
    s: &mut Stream,
    seg: &TcpSegment<'_>,
    ts_ns: u64,
    frame: u64,
    limits: &TcpLimits,
    stats: &mut TcpStats,
) {
    let distance = seg.seq.wrapping_sub(s.next_seq) as i32;
    if distance <= 0 {
        let seen = distance.unsigned_abs() as usize;
        match seg.payload.get(seen..) {
            Some(new) if !new.is_empty() => {
                if seen > 0 {
                    inc(&mut stats.overlapping);
                }
                add(&mut stats.bytes, new.len());
                s.append(new, ts_ns, frame);
                take_ahead(s, stats);
            }
            _ => inc(&mut stats.retransmitted),
        }
    } else {
        let offset = s
            .end_offset()
            .saturating_add(distance.unsigned_abs().into());
        let fits = s.ahead_bytes.saturating_add(seg.payload.len()) <= limits.max_ahead_bytes;
        if s.ahead.contains_key(&offset) {
            inc(&mut stats.retransmitted);
        } else if fits {
            inc(&mut stats.out_of_order);
            s.ahead_bytes = s.ahead_bytes.saturating_add(seg.payload.len());
            s.ahead.insert(
                offset,
                Ahead {
                    data: seg.payload.to_vec(),
                    ts_ns,
                    frame,
                },
            );
        } else {
            inc(&mut stats.ahead_dropped);
        }
        let since = *s.hole_since_ns.get_or_insert(ts_ns);
        if !fits || ts_ns.saturating_sub(since) > limits.gap_timeout_ns {
            give_up_hole(s, ts_ns, stats);
        }
    }
}

/// Move segments that are no longer ahead of a hole into the stream.
fn take_ahead(s: &mut Stream, stats: &mut TcpStats) {
    loop {
        let end = s.end_offset();
        let Some(entry) = s.ahead.first_entry() else {
            break;
        };
        let offset = *entry.key();
        if offset > end {
            break;
        }
        let a = entry.remove();
        s.ahead_bytes = s.ahead_bytes.saturating_sub(a.data.len());
        let seen = usize::try_from(end.saturating_sub(offset)).unwrap_or(usize::MAX);
        match a.data.get(seen..) {
            Some(new) if !new.is_empty() => {
                add(&mut stats.bytes, new.len());
                s.append(new, a.ts_ns, a.frame);
            }
            _ => inc(&mut stats.retransmitted),
        }
    }
    if s.ahead.is_empty() {
        s.hole_since_ns = None;
    }
}

/// The hole before the first held segment will not be filled: skip it and look for
/// the framing again after it.
fn give_up_hole(s: &mut Stream, ts_ns: u64, stats: &mut TcpStats) {
    let Some((&offset, _)) = s.ahead.first_key_value() else {
        return;
    };
    let hole = offset.saturating_sub(s.end_offset());
    inc(&mut stats.gaps);
    stats.gap_bytes = stats.gap_bytes.saturating_add(hole);
    // The partial message before the hole can never complete.
    add(
        &mut stats.resync_skipped_bytes,
        s.buf.len().saturating_sub(s.consumed),
    );
    s.buf.clear();
    s.consumed = 0;
    s.arrivals.clear();
    s.start = offset;
    s.next_seq = s.next_seq.wrapping_add(hole as u32);
    s.synced = false;
    take_ahead(s, stats);
    if !s.ahead.is_empty() {
        // A further hole: its time starts now.
        s.hole_since_ns = Some(ts_ns);
    }
}

/// Frame the complete messages from the unconsumed bytes.
fn frame_messages(
    s: &mut Stream,
    ts_ns: u64,
    frame: u64,
    limits: &TcpLimits,
    stats: &mut TcpStats,
) -> Vec<TcpMessage> {
    let mut out = Vec::new();
    while let Some(rest) = s.buf.get(s.consumed..) {
        if !s.synced {
            let found = match s.framing {
                TcpFraming::Rtcp => find(rest, RTCP_MAGIC),
                // The length word sits just before the magic.
                TcpFraming::RtiTcp => rest.get(4..).and_then(|r| find(r, RTI_TCP_MAGIC)),
                TcpFraming::LengthPrefixed { .. } => rest.get(4..).and_then(|r| find(r, b"RTPS")),
                TcpFraming::Bare => None,
            };
            match found {
                Some(pos) => {
                    add(&mut stats.resync_skipped_bytes, pos);
                    s.consumed = s.consumed.saturating_add(pos);
                    s.synced = true;
                    continue;
                }
                None => {
                    // Keep the last bytes: a magic may straddle the next segment.
                    let keep = 7usize.min(rest.len());
                    let skip = rest.len().saturating_sub(keep);
                    add(&mut stats.resync_skipped_bytes, skip);
                    s.consumed = s.consumed.saturating_add(skip);
                    break;
                }
            }
        }
        // (framed length, header length, logical port)
        let parsed = match s.framing {
            TcpFraming::Rtcp => {
                if rest.len() < RTCP_HEADER_LEN {
                    break;
                }
                RtcpHeader::parse(rest)
                    .map(|h| (h.length as usize, RTCP_HEADER_LEN, Some(h.logical_port)))
                    .ok()
                    .filter(|(len, ..)| (RTCP_HEADER_LEN..=limits.max_message).contains(len))
            }
            TcpFraming::RtiTcp => match rti_tcp_frame(rest, limits.max_message) {
                RtiTcpFrame::Wait => break,
                RtiTcpFrame::Lost => None,
                RtiTcpFrame::Framed {
                    header_len,
                    framed_len,
                } => Some((framed_len, header_len, None)),
            },
            TcpFraming::LengthPrefixed { little_endian } => {
                let Ok(n) = Bytes::new(rest, Layer::TcpFraming, little_endian).u32(0) else {
                    break;
                };
                let n = n as usize;
                (RTPS_HEADER_LEN..=limits.max_message)
                    .contains(&n)
                    .then_some((n.saturating_add(4), 4, None))
            }
            TcpFraming::Bare => None,
        };
        let Some((framed_len, header_len, logical_port)) = parsed else {
            lose_sync(s, stats);
            continue;
        };
        let Some(framed) = rest.get(..framed_len) else {
            break; // wait for the rest of the message
        };
        let body = framed.get(header_len..).unwrap_or_default();
        let message_start = s.consumed.saturating_add(header_len);
        let first_offset = s.start.saturating_add(s.consumed as u64);
        let last_offset = first_offset.saturating_add(framed_len.saturating_sub(1) as u64);
        s.consumed = s.consumed.saturating_add(framed_len);
        if body.get(..4).is_some_and(is_rtps_magic) {
            let first = s.arrival_index(first_offset);
            let last = s.arrival_index(last_offset);
            let (ts_first_ns, frame_first) = s
                .arrivals
                .get(first)
                .map_or((ts_ns, frame), |a| (a.ts_ns, a.frame));
            // Complete when its last missing piece arrived: the latest segment it spans
            // (this one, unless the bytes behind a given-up hole had arrived before).
            let (ts_last_ns, frame_last) = s
                .arrivals
                .range(first..=last.max(first))
                .map(|a| (a.ts_ns, a.frame))
                .max()
                .unwrap_or((ts_ns, frame));
            inc(match s.framing {
                TcpFraming::Rtcp => &mut stats.rtps_rtcp,
                TcpFraming::RtiTcp => &mut stats.rtps_rti_tcp,
                _ => &mut stats.rtps_length_prefixed,
            });
            out.push(TcpMessage {
                framing: s.framing,
                logical_port,
                start: message_start,
                len: body.len(),
                framed_len,
                ts_first_ns,
                frame_first,
                ts_last_ns,
                frame_last,
                segments: u32::try_from(last.saturating_sub(first).saturating_add(1))
                    .unwrap_or(u32::MAX),
            });
        } else if s.framing == TcpFraming::Rtcp {
            match ControlHeader::parse(body) {
                Ok(c) => stats.count_control(c.kind),
                Err(_) => inc(&mut stats.rtcp_unknown_payload),
            }
        } else if s.framing == TcpFraming::RtiTcp {
            stats.count_rti_control(RtiControlKind::of_message(body));
        } else {
            // A length prefix that does not lead to RTPS: not a message boundary.
            s.consumed = s.consumed.saturating_sub(framed_len);
            lose_sync(s, stats);
        }
    }
    out
}

fn lose_sync(s: &mut Stream, stats: &mut TcpStats) {
    inc(&mut stats.resyncs);
    s.synced = false;
    // Past the magic that misled us.
    s.consumed = s.consumed.saturating_add(1).min(s.buf.len());
    add(&mut stats.resync_skipped_bytes, 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(port: u16) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, 1], port))
    }

    fn rtps(n: u8, body: usize) -> Vec<u8> {
        let mut m = b"RTPS\x02\x03\x01\x0f".to_vec();
        m.extend_from_slice(&[n; 12]);
        m.extend(std::iter::repeat_n(n, body));
        m
    }

    fn rtcp(payload: &[u8], port: u16) -> Vec<u8> {
        let mut m = b"RTCP".to_vec();
        m.extend_from_slice(&((payload.len() + RTCP_HEADER_LEN) as u32).to_le_bytes());
        m.extend_from_slice(&0u32.to_le_bytes());
        m.extend_from_slice(&port.to_le_bytes());
        m.extend_from_slice(payload);
        m
    }

    fn control(kind: u8) -> Vec<u8> {
        let mut c = vec![kind, 0x0e, 16, 0];
        c.extend_from_slice(&[0; 12]);
        rtcp(&c, 0)
    }

    fn seg(seq: u32, payload: &[u8]) -> TcpSegment<'_> {
        TcpSegment {
            src_port: 1,
            dst_port: 2,
            seq,
            flags: 0,
            payload,
        }
    }

    /// Push and return the RTPS messages' bytes and (ts_first, ts_last, segments).
    fn push(
        r: &mut TcpReassembly,
        seq: u32,
        data: &[u8],
        ts: u64,
    ) -> Vec<(Vec<u8>, u64, u64, u32)> {
        match r.push(a(1), a(2), &seg(seq, data), ts, ts) {
            TcpPush::Stream { key, messages } => messages
                .iter()
                .map(|m| {
                    let bytes = r.stream_bytes(&key)[m.start..m.start + m.len].to_vec();
                    (bytes, m.ts_first_ns, m.ts_last_ns, m.segments)
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn rtcp_header_and_control() {
        let m = control(0xD4);
        let h = RtcpHeader::parse(&m).unwrap();
        assert_eq!(h.length, 30);
        let c = ControlHeader::parse(&m[RTCP_HEADER_LEN..]).unwrap();
        assert_eq!(c.kind, ControlKind::KeepAliveRequest);
        assert!(RtcpHeader::parse(b"RTPS\0\0\0\0\0\0\0\0\0\0").is_err());
        assert!(matches!(
            RtcpHeader::parse(b"RTCP\x01"),
            Err(DissectError::Truncated { offset: 4, .. })
        ));
    }

    #[test]
    fn messages_split_and_coalesced_across_segments() {
        let m1 = rtcp(&rtps(1, 100), 7411);
        let m2 = rtcp(&rtps(2, 3000), 7411);
        let mut stream = control(0xD1);
        stream.extend_from_slice(&m1);
        stream.extend_from_slice(&m2);
        let mut r = TcpReassembly::default();
        // First segment: the control message, m1 and the start of m2.
        let cut = control(0xD1).len() + m1.len() + 40;
        let got = push(&mut r, 1000, &stream[..cut], 10);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, rtps(1, 100));
        let got = push(&mut r, 1000 + cut as u32, &stream[cut..cut + 1000], 20);
        assert!(got.is_empty());
        let got = push(&mut r, 1000 + cut as u32 + 1000, &stream[cut + 1000..], 30);
        assert_eq!(got, vec![(rtps(2, 3000), 10, 30, 3)]);
        let s = r.stats();
        assert_eq!((s.rtps_rtcp, s.control_bind), (2, 1));
        assert_eq!(s.retransmitted + s.gaps + s.resyncs, 0);
    }

    #[test]
    fn out_of_order_and_retransmission() {
        let m = rtcp(&rtps(3, 500), 1);
        let mut r = TcpReassembly::default();
        let (p1, p2, p3) = (&m[..100], &m[100..300], &m[300..]);
        assert!(push(&mut r, 0, p1, 1).is_empty());
        assert!(push(&mut r, 300, p3, 2).is_empty()); // ahead of the hole
        assert!(push(&mut r, 0, p1, 3).is_empty()); // retransmission
        let got = push(&mut r, 100, p2, 4);
        assert_eq!(got, vec![(rtps(3, 500), 1, 4, 3)]);
        let s = r.stats();
        assert_eq!((s.out_of_order, s.retransmitted, s.gaps), (1, 1, 0));
        // An overlapping segment brings only its new bytes.
        let m2 = rtcp(&rtps(4, 10), 1);
        let base = m.len() as u32;
        assert!(push(&mut r, base, &m2[..20], 5).is_empty());
        let got = push(&mut r, base + 10, &m2[10..], 6);
        assert_eq!(got, vec![(rtps(4, 10), 5, 6, 2)]);
        assert_eq!(r.stats().overlapping, 1);
    }

    #[test]
    fn gap_is_given_up_and_framing_found_again() {
        let m1 = rtcp(&rtps(1, 400), 1);
        let m2 = rtcp(&rtps(2, 50), 1);
        let mut all = m1.clone();
        all.extend_from_slice(&m2);
        let mut r = TcpReassembly::default();
        assert!(push(&mut r, 0, &all[..100], 0).is_empty());
        // Bytes 100..200 are never captured; the rest arrives.
        assert!(push(&mut r, 200, &all[200..], 1).is_empty());
        // Past the gap timeout the hole is given up: m1 is lost, m2 found by its magic.
        let later = 2_000_000_000;
        let got = push(&mut r, 5000, &[], later);
        assert!(got.is_empty(), "an empty segment does not trigger the hole");
        let tail = rtcp(&rtps(3, 5), 1);
        let seq = all.len() as u32 + 1000; // ahead again: the hole test runs
        let got = push(&mut r, seq, &tail, later);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, rtps(2, 50));
        let s = r.stats();
        assert_eq!(s.gaps, 1);
        assert_eq!(s.gap_bytes, 100);
        assert!(s.resync_skipped_bytes > 0);
    }

    #[test]
    fn idle_streams_are_evicted_and_capacity_bounds_streams() {
        let limits = TcpLimits {
            max_streams: 2,
            idle_timeout_ns: 5_000_000_000,
            ..TcpLimits::default()
        };
        let mut r = TcpReassembly::new(limits);
        let half = &rtcp(&rtps(1, 10), 1)[..20];
        for (i, port) in [10u16, 11, 12].iter().enumerate() {
            r.push(a(*port), a(2), &seg(0, half), i as u64, 0);
        }
        let s = r.stats();
        assert_eq!(
            (
                s.streams_opened,
                s.streams_evicted_capacity,
                s.streams_active
            ),
            (3, 1, 2)
        );
        assert_eq!(s.evicted_bytes, 20);
        r.push(a(13), a(2), &seg(0, half), 20_000_000_000, 0);
        let s = r.stats();
        assert_eq!((s.streams_evicted_idle, s.streams_active), (2, 1));
        assert_eq!(s.bytes_held, 20);
    }

    #[test]
    fn fin_closes_and_non_rtps_keeps_no_state() {
        let mut r = TcpReassembly::default();
        assert_eq!(
            r.push(a(1), a(2), &seg(0, b"GET / HTTP/1.1\r\n"), 0, 0),
            TcpPush::NotRtps
        );
        let m = rtcp(&rtps(1, 1), 1);
        let mut fin = seg(0, &m);
        fin.flags = TCP_FIN;
        assert!(
            matches!(r.push(a(1), a(2), &fin, 1, 1), TcpPush::Stream { ref messages, .. } if messages.len() == 1)
        );
        r.push(a(3), a(2), &seg(0, b"x"), 2, 2);
        let s = r.stats();
        assert_eq!((s.streams_closed, s.streams_active), (1, 0));
    }

    #[test]
    fn a_stream_picked_up_mid_message_starts_at_its_next_message() {
        let m1 = rtcp(&rtps(1, 40), 1);
        let m2 = rtcp(&rtps(2, 40), 1);
        let mut r = TcpReassembly::default();
        // The capture starts inside m1: no state until a segment starts a message.
        assert_eq!(
            r.push(a(1), a(2), &seg(100, &m1[30..]), 0, 0),
            TcpPush::NotRtps
        );
        let got = push(&mut r, 100 + (m1.len() - 30) as u32, &m2, 1);
        assert_eq!(got, vec![(rtps(2, 40), 1, 1, 1)]);
        assert_eq!(r.stats().streams_opened, 1);
    }

    /// An RTI TCP message: the 8-byte header (with `CRC2` and a CRC when `crc`), `body`.
    fn rti_tcp(body: &[u8], crc: bool) -> Vec<u8> {
        let control_bits = if body.starts_with(b"RTPS") {
            0x4000_0000
        } else {
            0
        };
        let mut m = (body.len() as u32 | control_bits).to_be_bytes().to_vec();
        m.extend_from_slice(RTI_TCP_MAGIC);
        if crc {
            m.extend_from_slice(b"CRC2");
            m.extend_from_slice(&0xdead_beefu32.to_be_bytes());
        }
        m.extend_from_slice(body);
        m
    }

    /// An RTI TCP control message of `kind` with one attribute (a locator port).
    fn rti_control(kind: u16) -> Vec<u8> {
        let mut c = kind.to_be_bytes().to_vec();
        c.extend_from_slice(&8u16.to_be_bytes());
        c.extend_from_slice(&RTI_CONTROL_COOKIE.to_be_bytes());
        c.extend_from_slice(&[7; 12]);
        c.extend_from_slice(&0x3D02u16.to_be_bytes());
        c.extend_from_slice(&4u16.to_be_bytes());
        c.extend_from_slice(&7411u32.to_be_bytes());
        rti_tcp(&c, false)
    }

    #[test]
    fn rti_tcp_messages_control_and_crc() {
        let (m1, m2) = (rtps(1, 40), rtps(2, 3000));
        let mut stream = rti_control(0x0C01);
        stream.extend(rti_control(0x0D01));
        stream.extend(rti_control(0x0C02));
        stream.extend(rti_tcp(&m1, false));
        stream.extend(rti_control(0x0C06));
        stream.extend(rti_tcp(&m2, true));
        stream.extend(rti_control(0x0C1F));
        stream.extend(rti_control(0x0C09));
        let mut r = TcpReassembly::default();
        let mut got = Vec::new();
        // Split across segments of 100 bytes: headers and messages straddle them.
        for (i, chunk) in stream.chunks(100).enumerate() {
            got.extend(push(&mut r, (i * 100) as u32, chunk, i as u64 + 1));
        }
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, m1);
        assert_eq!(got[1].0, m2);
        assert!(got[1].3 > 30, "segments of the large message: {}", got[1].3);
        let s = r.stats();
        assert_eq!(s.rtps_rti_tcp, 2);
        assert_eq!(
            (
                s.rti_control_bind,
                s.rti_control_logical_port,
                s.rti_control_liveliness,
                s.rti_control_finalize,
                s.rti_control_unknown
            ),
            (2, 1, 1, 1, 1)
        );
        assert_eq!(s.control_messages(), 6);
        assert_eq!((s.resyncs, s.messages_malformed), (0, 0));
        assert_eq!(s.rtps_messages(), 2);
    }

    #[test]
    fn rti_tcp_kinds_and_lengths() {
        assert_eq!(
            RtiControlKind::from_u16(0x0D14),
            RtiControlKind::ConnectionBind
        );
        assert_eq!(RtiControlKind::from_u16(0x0C15), RtiControlKind::SessionId);
        assert_eq!(
            RtiControlKind::from_u16(0x0D03),
            RtiControlKind::ClientLogicalPort
        );
        assert_eq!(
            RtiControlKind::from_u16(0x0E01),
            RtiControlKind::Unknown(0x0E01)
        );
        assert_eq!(
            RtiControlKind::of_message(&[0x0C, 0x06]),
            RtiControlKind::Unknown(0x0C06)
        );
        assert_eq!(RtiControlKind::of_message(&[]), RtiControlKind::Unknown(0));
        let m = rti_tcp(&rtps(1, 4), true);
        assert_eq!(rti_tcp_frame(&m[..11], 1 << 20), RtiTcpFrame::Wait);
        assert_eq!(
            rti_tcp_frame(&m, 1 << 20),
            RtiTcpFrame::Framed {
                header_len: 16,
                framed_len: m.len()
            }
        );
        assert_eq!(rti_tcp_frame(&m, 10), RtiTcpFrame::Lost);
        assert_eq!(
            rti_tcp_frame(b"\0\0\0\x10RTPS\0\0\0\0", 1 << 20),
            RtiTcpFrame::Lost
        );
    }

    #[test]
    fn rti_tcp_framing_is_found_again_after_a_gap() {
        let m = rtps(3, 100);
        let one = rti_tcp(&m, false);
        let mut r = TcpReassembly::default();
        assert_eq!(push(&mut r, 0, &one, 1).len(), 1);
        let n = one.len() as u32;
        // The second message's first 10 bytes never come; the third arrives whole.
        assert!(push(&mut r, n + 10, &one[10..], 2).is_empty());
        let got = push(&mut r, 2 * n, &one, 2_000_000_003);
        assert_eq!(got.len(), 1, "{:?}", r.stats());
        assert_eq!(got[0].0, m);
        let s = r.stats();
        assert_eq!((s.gaps, s.gap_bytes, s.rtps_rti_tcp), (1, 10, 2));
    }

    #[test]
    fn length_prefixed_and_bare() {
        let m = rtps(5, 30);
        let mut framed = (m.len() as u32).to_be_bytes().to_vec();
        framed.extend_from_slice(&m);
        framed.extend_from_slice(&framed.clone());
        let mut r = TcpReassembly::default();
        let got = push(&mut r, 0, &framed, 1);
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].0, m);
        assert_eq!(r.push(a(5), a(6), &seg(0, &m), 1, 1), TcpPush::Bare);
        let s = r.stats();
        assert_eq!((s.rtps_length_prefixed, s.rtps_bare), (2, 1));
    }

    #[test]
    fn tcp_header() {
        let mut h = vec![0x13, 0xec, 0x1c, 0xeb, 0, 0, 0, 5, 0, 0, 0, 0, 0x60, 0x18];
        h.extend_from_slice(&[0; 6]);
        h.extend_from_slice(&[0; 4]); // option
        h.extend_from_slice(b"RTCP");
        let t = parse_tcp(&h).unwrap();
        assert_eq!(
            (t.src_port, t.dst_port, t.seq, t.payload),
            (5100, 7403, 5, &b"RTCP"[..])
        );
        h[12] = 0x40;
        assert!(parse_tcp(&h).is_err());
        assert!(parse_tcp(&h[..10]).is_err());
    }
}
