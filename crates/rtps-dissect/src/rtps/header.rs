//! The RTPS message header and the submessage ids.

use crate::bytes::Bytes;
use crate::error::{DissectError, Layer, Result};
use crate::types::{GuidPrefix, VendorId};

/// `RTPS`, and `RTPX` (used by some RTI tools).
pub fn is_rtps_magic(b: &[u8]) -> bool {
    matches!(b, b"RTPS" | b"RTPX")
}

/// The 20-byte RTPS message header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtpsHeader {
    pub magic: [u8; 4],
    pub version: (u8, u8),
    pub vendor: VendorId,
    pub guid_prefix: GuidPrefix,
}

impl RtpsHeader {
    pub fn parse(data: &[u8]) -> Result<Self> {
        let b = Bytes::big(data, Layer::RtpsHeader);
        let magic = b.array::<4>(0)?;
        if !is_rtps_magic(&magic) {
            return Err(DissectError::Invalid {
                layer: Layer::RtpsHeader,
                offset: 0,
                what: "magic",
                value: u64::from(u32::from_be_bytes(magic)),
            });
        }
        let version = (b.u8(4)?, b.u8(5)?);
        // Receivers ignore messages of a major version they do not know (RTPS 8.3.6.3);
        // only 1.x and 2.x exist.
        if !(1..=2).contains(&version.0) {
            return Err(DissectError::Invalid {
                layer: Layer::RtpsHeader,
                offset: 4,
                what: "protocol major version",
                value: u64::from(version.0),
            });
        }
        Ok(Self {
            magic,
            version,
            vendor: VendorId(b.array::<2>(6)?),
            guid_prefix: GuidPrefix(b.array::<12>(8)?),
        })
    }
}

/// Submessage ids of RTPS 2.5 (and the DDS-Security ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SubmessageKind {
    Pad,
    AckNack,
    Heartbeat,
    Gap,
    InfoTs,
    InfoSrc,
    InfoReplyIp4,
    InfoDst,
    InfoReply,
    NackFrag,
    HeartbeatFrag,
    Data,
    DataFrag,
    SecBody,
    SecPrefix,
    SecPostfix,
    SrtpsPrefix,
    SrtpsPostfix,
    /// RTI Connext 0x14: a DATA of a multichannel writer (session and writer SNs).
    DataSession,
    /// RTI Connext 0x18: a batch of samples of one writer.
    DataBatch,
    /// RTI Connext 0x19: the HEARTBEAT of a batching writer.
    HeartbeatBatch,
    /// 0x80–0xff: reserved by RTPS for vendors; the meaning depends on the sender's
    /// vendor id ([`VendorSubmessage`](super::VendorSubmessage)).
    VendorSpecific(u8),
    /// A standard-range id that no RTPS version defines.
    Unknown(u8),
}

impl SubmessageKind {
    #[inline]
    pub fn from_id(id: u8) -> Self {
        match id {
            0x01 => Self::Pad,
            0x06 => Self::AckNack,
            0x07 => Self::Heartbeat,
            0x08 => Self::Gap,
            0x09 => Self::InfoTs,
            0x0c => Self::InfoSrc,
            0x0d => Self::InfoReplyIp4,
            0x0e => Self::InfoDst,
            0x0f => Self::InfoReply,
            0x12 => Self::NackFrag,
            0x13 => Self::HeartbeatFrag,
            0x14 => Self::DataSession,
            0x15 => Self::Data,
            0x16 => Self::DataFrag,
            0x18 => Self::DataBatch,
            0x19 => Self::HeartbeatBatch,
            0x30 => Self::SecBody,
            0x31 => Self::SecPrefix,
            0x32 => Self::SecPostfix,
            0x33 => Self::SrtpsPrefix,
            0x34 => Self::SrtpsPostfix,
            0x80..=0xff => Self::VendorSpecific(id),
            other => Self::Unknown(other),
        }
    }

    /// The spec's name, as Wireshark shows it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Pad => "PAD",
            Self::AckNack => "ACKNACK",
            Self::Heartbeat => "HEARTBEAT",
            Self::Gap => "GAP",
            Self::InfoTs => "INFO_TS",
            Self::InfoSrc => "INFO_SRC",
            Self::InfoReplyIp4 => "INFO_REPLY_IP4",
            Self::InfoDst => "INFO_DST",
            Self::InfoReply => "INFO_REPLY",
            Self::NackFrag => "NACK_FRAG",
            Self::HeartbeatFrag => "HEARTBEAT_FRAG",
            Self::Data => "DATA",
            Self::DataFrag => "DATA_FRAG",
            Self::SecBody => "SEC_BODY",
            Self::SecPrefix => "SEC_PREFIX",
            Self::SecPostfix => "SEC_POSTFIX",
            Self::SrtpsPrefix => "SRTPS_PREFIX",
            Self::SrtpsPostfix => "SRTPS_POSTFIX",
            Self::DataSession => "DATA_SESSION",
            Self::DataBatch => "DATA_BATCH",
            Self::HeartbeatBatch => "HEARTBEAT_BATCH",
            Self::VendorSpecific(_) => "VENDOR_SPECIFIC",
            Self::Unknown(_) => "UNKNOWN",
        }
    }
}
