//! INFO_REPLY_IP4 (RTPS 8.3.7.12): where to reply, one IPv4 address and port.

use crate::bytes::Bytes;
use crate::error::Result;

use super::*;

/// Offsets from the end of the submessage header.
pub(super) mod field {
    pub const ADDRESS: usize = 0;
    pub const PORT: usize = 4;
    /// The fields above, all fixed.
    pub const LEN: usize = 8;
}

view::fixed_view! {
    /// An INFO_REPLY_IP4 body checked to hold its fields.
    View(field::LEN) {
        address: Ipv4 = field::ADDRESS,
        port: U32 = field::PORT,
    }
}

pub(super) const LAYOUT: Layout = Layout::OPAQUE;

pub(super) fn decode<'a>(b: &Bytes<'_>) -> Result<SubmessageBody<'a>> {
    let v = View::new_checked(b)?;
    Ok(SubmessageBody::InfoReplyIp4 {
        address: v.address(),
        port: v.port(),
    })
}
