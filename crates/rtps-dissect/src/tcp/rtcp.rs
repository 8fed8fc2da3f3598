//! Fast DDS' (eProsima) TCP transport: the 14-byte RTCP header before every message and
//! the RTCP control messages (bind connection, logical ports, keep alive).

use crate::bytes::Bytes;
use crate::error::{DissectError, Layer, Result};

pub(crate) const RTCP_MAGIC: &[u8; 4] = b"RTCP";
pub const RTCP_HEADER_LEN: usize = 14;
pub(crate) const CONTROL_HEADER_LEN: usize = 16;

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
    pub(crate) fn from_u8(v: u8) -> Self {
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
