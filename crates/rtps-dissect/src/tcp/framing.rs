//! How RTPS is framed on a TCP stream: which framing a stream uses, where a message's
//! header is found again after a hole, and where each framed message ends.

use crate::bytes::Bytes;
use crate::error::Layer;
use crate::rtps::is_rtps_magic;

use super::rtcp::{RtcpHeader, RTCP_HEADER_LEN, RTCP_MAGIC};
use super::rti::{rti_tcp_frame, RTI_TCP_MAGIC};
use super::RTPS_HEADER_LEN;

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
pub(super) fn detect(payload: &[u8], max_message: usize) -> Option<(usize, TcpFraming)> {
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

/// Where the framed message at the start of a stream's bytes ends.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Frame {
    /// Not enough bytes yet to tell.
    Wait,
    /// No header of the stream's framing here: the framing is lost.
    Lost,
    Message {
        header_len: usize,
        /// Header included.
        framed_len: usize,
        /// The RTCP header's logical port (Fast DDS).
        logical_port: Option<u16>,
    },
}

impl TcpFraming {
    /// Where in `rest` a message of this framing may start again after the framing was
    /// lost (the first magic it shows).
    pub(super) fn find_header(self, rest: &[u8]) -> Option<usize> {
        match self {
            TcpFraming::Rtcp => find(rest, RTCP_MAGIC),
            // The length word sits just before the magic.
            TcpFraming::RtiTcp => rest.get(4..).and_then(|r| find(r, RTI_TCP_MAGIC)),
            TcpFraming::LengthPrefixed { .. } => rest.get(4..).and_then(|r| find(r, b"RTPS")),
            TcpFraming::Bare => None,
        }
    }

    /// The message at the start of `rest`, from this framing's header.
    pub(super) fn frame(self, rest: &[u8], max_message: usize) -> Frame {
        match self {
            TcpFraming::Rtcp => {
                if rest.len() < RTCP_HEADER_LEN {
                    return Frame::Wait;
                }
                RtcpHeader::parse(rest)
                    .ok()
                    .map(|h| (h.length as usize, h.logical_port))
                    .filter(|(len, _)| (RTCP_HEADER_LEN..=max_message).contains(len))
                    .map_or(Frame::Lost, |(framed_len, port)| Frame::Message {
                        header_len: RTCP_HEADER_LEN,
                        framed_len,
                        logical_port: Some(port),
                    })
            }
            TcpFraming::RtiTcp => rti_tcp_frame(rest, max_message),
            TcpFraming::LengthPrefixed { little_endian } => {
                let Ok(n) = Bytes::new(rest, Layer::TcpFraming, little_endian).u32(0) else {
                    return Frame::Wait;
                };
                let n = n as usize;
                if (RTPS_HEADER_LEN..=max_message).contains(&n) {
                    Frame::Message {
                        header_len: 4,
                        framed_len: n.saturating_add(4),
                        logical_port: None,
                    }
                } else {
                    Frame::Lost
                }
            }
            TcpFraming::Bare => Frame::Lost,
        }
    }
}
