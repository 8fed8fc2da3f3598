//! Vendor-specific submessages (ids 0x80..=0xff, read by vendor id).

use crate::bytes::Bytes;
use crate::error::Result;
use crate::types::{Locator, Time, VendorId};

use super::*;

/// Fast DDS 0x80 statistics (`StatisticsSubmessageData`): offsets from the end of the
/// submessage header.
pub(super) mod fastdds_statistics {
    pub const LOCATOR_KIND: usize = 0;
    pub const LOCATOR_PORT: usize = 4;
    pub const LOCATOR_ADDRESS: usize = 8;
    pub const TS_SECONDS: usize = 24;
    pub const TS_FRACTION: usize = 28;
    pub const SEQUENCE: usize = 32;
    pub const BYTES: usize = 40;
    pub const BYTES_HIGH: usize = 48;
}

/// Their fields depend on the vendor: none is read without decoding.
pub(super) const LAYOUT: Layout = Layout::OPAQUE;

/// Vendor-specific submessages whose meaning we know, by (vendor id, submessage id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VendorSubmessage {
    /// eProsima Fast DDS 0x80 `FASTDDS_STATISTICS_NETWORK` (appended to every message
    /// when Fast DDS is built with statistics, as Debian and ROS 2 build it).
    FastDdsStatistics(FastDdsStatistics),
    /// RTI Connext 0x80: CRC of the message.
    RtiCrc,
    /// RTI Connext 0x81.
    RtiDataFragSession,
    /// RTI Connext 0x82: RTI WAN transport binding ping.
    RtiUdpWanBindingPing,
}

impl VendorSubmessage {
    pub fn name(&self) -> &'static str {
        match self {
            Self::FastDdsStatistics(_) => "FASTDDS_STATISTICS",
            Self::RtiCrc => "RTI_CRC",
            Self::RtiDataFragSession => "RTI_DATA_FRAG_SESSION",
            Self::RtiUdpWanBindingPing => "RTI_UDP_WAN_BINDING_PING",
        }
    }

    pub(super) fn parse(vendor: VendorId, id: u8, b: &Bytes<'_>) -> Result<Option<Self>> {
        Ok(match (vendor, id) {
            (VendorId::FAST_DDS, 0x80) => {
                use fastdds_statistics as f;
                Some(Self::FastDdsStatistics(FastDdsStatistics {
                    destination: Locator {
                        kind: b.i32(f::LOCATOR_KIND)?,
                        port: b.u32(f::LOCATOR_PORT)?,
                        address: b.array::<16>(f::LOCATOR_ADDRESS)?,
                    },
                    timestamp: Time {
                        seconds: b.i32(f::TS_SECONDS)?,
                        fraction: b.u32(f::TS_FRACTION)?,
                    },
                    sequence: b.u64(f::SEQUENCE)?,
                    bytes: b.u64(f::BYTES)?,
                    bytes_high: b.u64(f::BYTES_HIGH)?,
                }))
            }
            (VendorId::RTI_CONNEXT, 0x80) => Some(Self::RtiCrc),
            (VendorId::RTI_CONNEXT, 0x81) => Some(Self::RtiDataFragSession),
            (VendorId::RTI_CONNEXT, 0x82) => Some(Self::RtiUdpWanBindingPing),
            _ => None,
        })
    }
}

/// Fast DDS' network statistics submessage: what the sender had sent to `destination`
/// when it sent this message (its statistics module derives network latency and loss
/// from it on the receiving side).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastDdsStatistics {
    pub destination: Locator,
    /// Sender's clock when the message was sent.
    pub timestamp: Time,
    /// Messages sent to `destination` so far.
    pub sequence: u64,
    /// Bytes sent to `destination` so far (`bytes_high` counts wraps of `bytes`).
    pub bytes: u64,
    pub bytes_high: u64,
}
