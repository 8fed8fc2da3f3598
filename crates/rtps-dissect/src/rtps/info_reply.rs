//! INFO_REPLY (RTPS 8.3.7.11): where to reply; only the unicast locator count is read.

use crate::bytes::Bytes;
use crate::error::Result;

use super::*;

/// Offsets from the end of the submessage header.
pub(super) mod field {
    pub const UNICAST_LOCATOR_COUNT: usize = 0;
    /// The fields read (the locators after the count are not).
    pub const LEN: usize = 4;
}

view::fixed_view! {
    /// An INFO_REPLY body checked to hold its unicast locator count.
    View(field::LEN) {
        unicast_locators: U32 = field::UNICAST_LOCATOR_COUNT,
    }
}

pub(super) const LAYOUT: Layout = Layout::OPAQUE;

pub(super) fn decode<'a>(b: &Bytes<'_>) -> Result<SubmessageBody<'a>> {
    Ok(SubmessageBody::InfoReply {
        unicast_locators: View::new_checked(b)?.unicast_locators(),
    })
}
