//! INFO_DST (RTPS 8.3.7.8): the participant the submessages after it are for.

use crate::bytes::Bytes;
use crate::error::Result;
use crate::types::GuidPrefix;

use super::*;

/// Offsets from the end of the submessage header.
pub(super) mod field {
    pub const GUID_PREFIX: usize = 0;
    /// The fields above, all fixed.
    pub const LEN: usize = 12;
}

view::fixed_view! {
    /// An INFO_DST body checked to hold its guidPrefix.
    View(field::LEN) {
        guid_prefix: Prefix = field::GUID_PREFIX,
    }
}

pub(super) const LAYOUT: Layout = Layout::OPAQUE;

/// INFO_DST's guidPrefix.
#[inline(always)]
pub(super) fn prefix(b: &Bytes<'_>) -> Result<GuidPrefix> {
    Ok(View::new_checked(b)?.guid_prefix())
}

pub(super) fn decode<'a>(b: &Bytes<'_>) -> Result<SubmessageBody<'a>> {
    Ok(SubmessageBody::InfoDst {
        guid_prefix: prefix(b)?,
    })
}
