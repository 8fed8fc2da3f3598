//! INFO_SRC (RTPS 8.3.7.10): the participant that sent the submessages after it.

use crate::bytes::Bytes;
use crate::error::Result;
use crate::types::{GuidPrefix, VendorId};

use super::*;

/// Offsets from the end of the submessage header.
pub(super) mod field {
    /// After 4 unused bytes.
    pub const VERSION_MAJOR: usize = 4;
    pub const VERSION_MINOR: usize = 5;
    pub const VENDOR: usize = 6;
    pub const GUID_PREFIX: usize = 8;
}

pub(super) const LAYOUT: Layout = Layout::OPAQUE;

pub(super) fn decode<'a>(b: &Bytes<'_>) -> Result<SubmessageBody<'a>> {
    use field as f;
    Ok(SubmessageBody::InfoSrc {
        version: (b.u8(f::VERSION_MAJOR)?, b.u8(f::VERSION_MINOR)?),
        vendor: VendorId(b.array::<2>(f::VENDOR)?),
        guid_prefix: GuidPrefix(b.array::<12>(f::GUID_PREFIX)?),
    })
}
