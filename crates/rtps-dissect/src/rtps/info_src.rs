//! INFO_SRC (RTPS 8.3.7.10): the participant that sent the submessages after it.

use crate::bytes::Bytes;
use crate::error::Result;

use super::*;

/// Offsets from the end of the submessage header.
pub(super) mod field {
    /// After 4 unused bytes.
    pub const VERSION_MAJOR: usize = 4;
    pub const VERSION_MINOR: usize = 5;
    pub const VENDOR: usize = 6;
    pub const GUID_PREFIX: usize = 8;
    /// The fields above, all fixed.
    pub const LEN: usize = 20;
}

view::fixed_view! {
    /// An INFO_SRC body checked to hold its fields.
    View(field::LEN) {
        version_major: U8 = field::VERSION_MAJOR,
        version_minor: U8 = field::VERSION_MINOR,
        vendor: Vendor = field::VENDOR,
        guid_prefix: Prefix = field::GUID_PREFIX,
    }
}

pub(super) const LAYOUT: Layout = Layout::OPAQUE;

pub(super) fn decode<'a>(b: &Bytes<'_>) -> Result<SubmessageBody<'a>> {
    let v = View::new_checked(b)?;
    Ok(SubmessageBody::InfoSrc {
        version: (v.version_major(), v.version_minor()),
        vendor: v.vendor(),
        guid_prefix: v.guid_prefix(),
    })
}
