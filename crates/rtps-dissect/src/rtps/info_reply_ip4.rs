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
    /// In the order the decoder reads them (an SN is read as two halves).
    pub const READS: &[(usize, usize)] = &[(ADDRESS, 4), (PORT, 4)];
}

const _: () = assert!(view::fits(field::READS, field::LEN));

/// An INFO_REPLY_IP4 body checked to hold its fields.
pub(super) struct View<'a>(view::Fixed<'a, { field::LEN }>);

impl<'a> View<'a> {
    #[inline(always)]
    pub(super) fn new_checked(body: &Bytes<'a>) -> Result<Self> {
        view::Fixed::new_checked(body, field::READS).map(Self)
    }
    pub(super) fn port(&self) -> u32 {
        self.0.u32(field::PORT)
    }
    pub(super) fn address(&self) -> [u8; 4] {
        self.0.array::<4>(field::ADDRESS)
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
