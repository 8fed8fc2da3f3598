//! RTI Connext's TCP transport: the 8-byte header (16 with a CRC) before every message
//! and its control messages, as Wireshark's packet-rtitcp.c reads them.

use crate::bytes::Bytes;
use crate::error::Layer;
use crate::rtps::is_rtps_magic;

use super::framing::Frame;

/// RTI TCP transport: the magic in bytes 4..8 of every message header.
pub(crate) const RTI_TCP_MAGIC: &[u8; 4] = &[0xDD, 0x54, 0xDD, 0x55];
pub(crate) const RTI_TCP_HEADER_LEN: usize = 8;
/// An RTI TCP header with a CRC: `CRC2` and the CRC after the first 8 bytes.
const RTI_TCP_CRC_MAGIC: &[u8; 4] = b"CRC2";
const RTI_TCP_CRC_LEN: usize = 8;
/// RTI TCP control messages carry this cookie after their kind and attribute length.
pub(super) const RTI_CONTROL_COOKIE: u32 = 0x2112_A442;

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
    pub(crate) fn from_u16(v: u16) -> Self {
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
pub(super) fn rti_tcp_frame(rest: &[u8], max_message: usize) -> Frame {
    let (Some(word), Some(magic)) = (rest.get(..4), rest.get(4..8)) else {
        return Frame::Wait;
    };
    if magic != RTI_TCP_MAGIC {
        return Frame::Lost;
    }
    let Some(after) = rest.get(RTI_TCP_HEADER_LEN..RTI_TCP_HEADER_LEN + 4) else {
        return Frame::Wait;
    };
    let header_len = if after == RTI_TCP_CRC_MAGIC {
        RTI_TCP_HEADER_LEN + RTI_TCP_CRC_LEN
    } else {
        RTI_TCP_HEADER_LEN
    };
    let Some(body_start) = rest.get(header_len..header_len.saturating_add(4)) else {
        return Frame::Wait;
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
        return Frame::Lost;
    }
    Frame::Message {
        header_len,
        framed_len: header_len.saturating_add(len),
        logical_port: None,
    }
}
