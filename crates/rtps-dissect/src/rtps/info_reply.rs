//! INFO_REPLY (RTPS 8.3.7.11): where to reply; only the unicast locator count is read.

use crate::bytes::Bytes;
use crate::error::Result;

use super::*;

/// Offsets from the end of the submessage header.
pub(super) mod field {
    pub const UNICAST_LOCATOR_COUNT: usize = 0;
}

pub(super) const LAYOUT: Layout = Layout::OPAQUE;

pub(super) fn decode<'a>(b: &Bytes<'_>) -> Result<SubmessageBody<'a>> {
    Ok(SubmessageBody::InfoReply {
        unicast_locators: b.u32(field::UNICAST_LOCATOR_COUNT)?,
    })
}
