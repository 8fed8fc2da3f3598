//! INFO_REPLY_IP4 (RTPS 8.3.7.12): where to reply, one IPv4 address and port.

use crate::bytes::Bytes;
use crate::error::Result;

use super::*;

/// Offsets from the end of the submessage header.
pub(super) mod field {
    pub const ADDRESS: usize = 0;
    pub const PORT: usize = 4;
}

pub(super) const LAYOUT: Layout = Layout::OPAQUE;

pub(super) fn decode<'a>(b: &Bytes<'_>) -> Result<SubmessageBody<'a>> {
    Ok(SubmessageBody::InfoReplyIp4 {
        address: b.array::<4>(field::ADDRESS)?,
        port: b.u32(field::PORT)?,
    })
}
