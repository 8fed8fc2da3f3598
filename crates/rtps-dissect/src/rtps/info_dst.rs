//! INFO_DST (RTPS 8.3.7.8): the participant the submessages after it are for.

use crate::bytes::Bytes;
use crate::error::Result;
use crate::types::GuidPrefix;

use super::*;

/// Offsets from the end of the submessage header.
pub(super) mod field {
    pub const GUID_PREFIX: usize = 0;
}

pub(super) const LAYOUT: Layout = Layout::OPAQUE;

/// INFO_DST's guidPrefix.
#[inline(always)]
pub(super) fn prefix(b: &Bytes<'_>) -> Result<GuidPrefix> {
    Ok(GuidPrefix(b.array::<12>(field::GUID_PREFIX)?))
}

pub(super) fn decode<'a>(b: &Bytes<'_>) -> Result<SubmessageBody<'a>> {
    Ok(SubmessageBody::InfoDst {
        guid_prefix: prefix(b)?,
    })
}
